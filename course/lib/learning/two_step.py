"""The two-step decision of Loop C: a reward only at the end, its exact values, and REINFORCE on it.

A trajectory is two choices, a1 then a2, each 0 or 1; R(a1, a2) is paid only after
both. The policy is tabular softmax: theta1 for step 1, theta2[a1] for step 2. This
module owns what is computed (no printing): the exact action values Q(a1), the
expected return J and its gradient by enumeration, the deterministic return of every
path, and ``reinforce`` (one ``Episode`` record per update) with ``log_record`` (an
episode as a JSONL record). ``python -m course.toy_mdp`` tells the story of a run.

>>> expected_return([0.0, 0.0], [[0.0, 0.0], [0.0, 0.0]], DEFAULT_REWARDS)
0.55
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

from course.lib.learning import policy_gradient as pg

DEFAULT_REWARDS: tuple[tuple[float, float], tuple[float, float]] = ((0.6, 0.6), (1.0, 0.0))

Table = Sequence[Sequence[float]]


# ---------------------------------------------------------------------------
# Exact quantities: the MDP is small enough to enumerate every trajectory.
# ---------------------------------------------------------------------------
def action_values(theta2: Table, rewards: Table) -> list[float]:
    """Q(a1) = sum_a2 pi2(a2 | a1) R(a1, a2): what the first action is worth under the current step 2.

    >>> action_values([[0.0, 0.0], [0.0, 0.0]], DEFAULT_REWARDS)
    [0.6, 0.5]
    """
    return [pg.expected_reward(pg.softmax(theta2[a1]), rewards[a1]) for a1 in range(2)]


def expected_return(theta1: Sequence[float], theta2: Table, rewards: Table) -> float:
    """J = sum over the 4 trajectories of pi1(a1) pi2(a2 | a1) R(a1, a2).

    >>> expected_return([0.0, 0.0], [[0.0, 0.0], [0.0, 0.0]], DEFAULT_REWARDS)
    0.55
    """
    return pg.expected_reward(pg.softmax(theta1), action_values(theta2, rewards))


def exact_gradients(
    theta1: Sequence[float], theta2: Table, rewards: Table
) -> tuple[list[float], list[list[float]]]:
    """grad J by enumeration: step 1 sees Q(a1); step 2's row a1 is weighted by how often a1 happens.

    d J / d theta1      = pi1_k (Q_k - J)                   (a bandit over first actions, rewards Q)
    d J / d theta2[a1]  = pi1(a1) * pi2_k(.|a1) (R(a1,k) - Q(a1))

    >>> g1, g2 = exact_gradients([0.0, 0.0], [[0.0, 0.0], [0.0, 0.0]], DEFAULT_REWARDS)
    >>> [round(g, 6) for g in g1], g2   # step 1 leans to the safe a1 = 0 while step 2 is still random
    ([0.025, -0.025], [[0.0, 0.0], [0.125, -0.125]])
    """
    pi1 = pg.softmax(theta1)
    g1 = pg.exact_gradient(theta1, action_values(theta2, rewards))
    g2 = [[pi1[a1] * g + 0.0 for g in pg.exact_gradient(theta2[a1], rewards[a1])] for a1 in range(2)]
    return g1, g2


def deterministic_returns(rewards: Table) -> list[dict[str, Any]]:
    """The return of every deterministic policy, one row per path (a1, a2).

    A deterministic policy picks a1, a2 after a1 = 0, and a2 after a1 = 1: 8 policies.
    The choice at the branch not taken never matters, so they have only 4 distinct
    returns, one per path; a row stands for the 2 policies that follow that path.

    >>> [(r["a1"], r["a2"], r["return"]) for r in deterministic_returns(DEFAULT_REWARDS)]
    [(0, 0, 0.6), (0, 1, 0.6), (1, 0, 1.0), (1, 1, 0.0)]
    """
    return [{"a1": a1, "a2": a2, "return": float(rewards[a1][a2])} for a1 in range(2) for a2 in range(2)]


# ---------------------------------------------------------------------------
# The algorithm: REINFORCE on whole trajectories.
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Episode:
    """One trajectory and the update it caused."""

    episode: int  # 1-based
    theta1: tuple[float, float]
    theta2: tuple[tuple[float, float], tuple[float, float]]
    pi1: tuple[float, float]
    pi2: tuple[tuple[float, float], tuple[float, float]]
    q: tuple[float, float]  # exact Q(a1) before the update
    expected_return: float  # exact J before the update
    a1: int
    a2: int
    ret: float  # G: the reward at the end (the only reward)
    uses_baseline: bool
    baseline: float  # mean of earlier returns (0 without history or without a baseline)
    n_past: int
    advantage: float
    grad1: tuple[float, float]  # the estimate for theta1
    grad2: tuple[tuple[float, float], tuple[float, float]]  # the estimate for theta2 (unvisited row is 0)
    exact_grad1: tuple[float, float]
    exact_grad2: tuple[tuple[float, float], tuple[float, float]]
    theta1_after: tuple[float, float]
    theta2_after: tuple[tuple[float, float], tuple[float, float]]
    expected_return_after: float


def reinforce(
    rewards: Table, *, steps: int, lr: float, use_baseline: bool, rng: random.Random
) -> Iterator[Episode]:
    """Run ``steps`` episodes from uniform logits and yield one ``Episode`` per update."""
    theta1 = [0.0, 0.0]
    theta2 = [[0.0, 0.0], [0.0, 0.0]]
    total = 0.0
    for t in range(1, steps + 1):
        pi1 = pg.softmax(theta1)
        pi2 = [pg.softmax(row) for row in theta2]
        q = action_values(theta2, rewards)
        j = pg.expected_reward(pi1, q)
        eg1, eg2 = exact_gradients(theta1, theta2, rewards)

        # Roll out: two draws from the same seeded stream, step 1 first.
        a1 = pg.sample_action(pi1, rng)
        a2 = pg.sample_action(pi2[a1], rng)
        ret = float(rewards[a1][a2])  # reward 0 after step 1, R(a1, a2) after step 2: G = R

        # Baseline from earlier episodes only (see course.bandit_train for why not this one).
        n_past = t - 1 if use_baseline else 0
        baseline = total / n_past if n_past else 0.0
        advantage = ret - baseline

        # grad log pi(trajectory) = grad log pi1(a1) + grad log pi2(a2 | a1): both steps get the
        # same A. The other step-2 row is not in the trajectory's log-prob: its gradient is 0.
        g1 = [advantage * ((1.0 if k == a1 else 0.0) - p) + 0.0 for k, p in enumerate(pi1)]
        g2 = [[0.0, 0.0], [0.0, 0.0]]
        g2[a1] = [advantage * ((1.0 if k == a2 else 0.0) - p) + 0.0 for k, p in enumerate(pi2[a1])]
        theta1_after = [th + lr * g + 0.0 for th, g in zip(theta1, g1)]
        theta2_after = [[th + lr * g + 0.0 for th, g in zip(row, grow)] for row, grow in zip(theta2, g2)]

        yield Episode(
            episode=t,
            theta1=_pair(theta1),
            theta2=(_pair(theta2[0]), _pair(theta2[1])),
            pi1=_pair(pi1),
            pi2=(_pair(pi2[0]), _pair(pi2[1])),
            q=_pair(q),
            expected_return=j,
            a1=a1,
            a2=a2,
            ret=ret,
            uses_baseline=use_baseline,
            baseline=baseline,
            n_past=n_past,
            advantage=advantage,
            grad1=_pair(g1),
            grad2=(_pair(g2[0]), _pair(g2[1])),
            exact_grad1=_pair(eg1),
            exact_grad2=(_pair(eg2[0]), _pair(eg2[1])),
            theta1_after=_pair(theta1_after),
            theta2_after=(_pair(theta2_after[0]), _pair(theta2_after[1])),
            expected_return_after=expected_return(theta1_after, theta2_after, rewards),
        )
        total += ret
        theta1, theta2 = theta1_after, theta2_after


def _pair(xs: Sequence[float]) -> tuple[float, float]:
    return (xs[0], xs[1])


def log_record(e: Episode) -> dict[str, Any]:
    """The JSONL line for one episode; theta/pi/q are before the update."""
    return {
        "episode": e.episode,
        "theta1": list(e.theta1),
        "theta2": [list(r) for r in e.theta2],
        "pi1": list(e.pi1),
        "pi2": [list(r) for r in e.pi2],
        "q": list(e.q),
        "expected_return": e.expected_return,
        "a1": e.a1,
        "a2": e.a2,
        "return": e.ret,
        "baseline": e.baseline,
        "advantage": e.advantage,
        "grad1": list(e.grad1),
        "grad2": [list(r) for r in e.grad2],
        "exact_grad1": list(e.exact_grad1),
        "exact_grad2": [list(r) for r in e.exact_grad2],
        "expected_return_after": e.expected_return_after,
    }


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.learning.two_step"))
