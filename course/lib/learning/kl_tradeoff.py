"""The KL trade-off's maths: the closed-form optimum of E_pi[r] - beta * KL(pi || pi_ref) for each beta,
checked by gradient ascent on the logits (``python -m course.kl_tradeoff_demo`` prints and writes it).

Pure functions of their arguments (standard library only); the formulas are in
``course.lib.learning.policy_gradient``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from course.lib.learning import policy_gradient as pg


# ---------------------------------------------------------------------------
# Gradient ascent on the logits (the closed form lives in course.lib.learning.policy_gradient).
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Ascent:
    """Where gradient ascent on E_pi[r] - beta KL(pi || pi_ref) stopped."""

    probs: tuple[float, ...]
    steps: int
    converged: bool  # max |gradient| fell below the tolerance
    objective: float


def gradient_ascent(
    pi_ref: Sequence[float],
    rewards: Sequence[float],
    beta: float,
    *,
    max_steps: int = 5000,
    tol: float = 1e-12,
) -> Ascent:
    """Climb the KL-regularised objective from theta = log pi_ref using its exact gradient.

    The step size adapts: it doubles while the objective keeps rising by at least a
    small fraction of what the gradient promises (Armijo's rule) and halves when it
    does not, but never drops below 1 / (range(r) + beta), a step small enough to be
    safe on this objective. Why adapt: for small beta the optimum sits far out in
    logit space (the best logit leads by about 1/beta), where softmax gradients are
    tiny; a fixed step would take millions of iterations to get there. Plain gradient
    ascent stays slow along directions only the KL term pins down (two actions with the
    same reward at small beta); ``converged`` says whether it got there, and the report
    flags any row that did not.

    >>> a = gradient_ascent([0.5, 0.5], [1.0, 0.0], beta=1.0)
    >>> a.converged, [round(p, 6) for p in a.probs]
    (True, [0.731059, 0.268941])
    """
    theta = [math.log(q) for q in pi_ref]
    objective = pg.kl_objective(theta, pi_ref, rewards, beta)
    safe = 1.0 / ((max(rewards) - min(rewards)) + beta)
    lr = safe
    for step in range(max_steps):
        grad = pg.kl_objective_gradient(theta, pi_ref, rewards, beta)
        if max(abs(g) for g in grad) < tol:
            return Ascent(tuple(pg.softmax(theta)), step, True, objective)
        promised = math.fsum(g * g for g in grad)
        lr *= 2.0
        while True:
            candidate = [t + lr * g for t, g in zip(theta, grad)]
            value = pg.kl_objective(candidate, pi_ref, rewards, beta)
            if lr <= safe or value >= objective + 1e-4 * lr * promised:
                break
            lr = max(lr / 2.0, safe)
        theta, objective = candidate, value
    return Ascent(tuple(pg.softmax(theta)), max_steps, False, objective)


# ---------------------------------------------------------------------------
# The sweep.
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class BetaRow:
    beta: float
    probs: tuple[float, ...]  # the closed-form optimum
    expected_reward: float
    kl: float
    objective: float
    ascent: Ascent
    max_abs_diff: float  # |gradient ascent - closed form|, worst action


def sweep(pi_ref: Sequence[float], rewards: Sequence[float], betas: Sequence[float]) -> list[BetaRow]:
    """One row per beta: the optimum, its reward and KL, and the gradient-ascent cross-check."""
    rows = []
    for beta in betas:
        probs = pg.kl_regularised_optimum(pi_ref, rewards, beta)
        ascent = gradient_ascent(pi_ref, rewards, beta)
        e_r = pg.expected_reward(probs, rewards)
        kl = pg.kl_divergence(probs, pi_ref)
        rows.append(
            BetaRow(
                beta=beta,
                probs=tuple(probs),
                expected_reward=e_r,
                kl=kl,
                objective=e_r - beta * kl,
                ascent=ascent,
                max_abs_diff=max(abs(a - b) for a, b in zip(ascent.probs, probs)),
            )
        )
    return rows


def top_actions(probs: Sequence[float], k: int = 3) -> list[int]:
    """Indices of the k most probable actions (ties broken by action order).

    >>> top_actions([0.1, 0.5, 0.1, 0.3], k=3)
    [1, 3, 0]
    """
    return sorted(range(len(probs)), key=lambda i: (-probs[i], i))[:k]
