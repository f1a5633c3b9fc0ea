"""SPOILERS: the corrected versions of the loops in ``planted_bugs.py``.

Open this file only after you have named each bug from its log and pointed at
the line responsible. Each function has the same signature and log format as
its broken twin, so ``python -m course.exercises.planted_bugs --bug NAME --fixed``
prints the same columns and the two logs can be compared row by row.
The comment marked ``FIX`` in each function is the only change.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from typing import Any

from course.exercises.planted_bugs import (
    BANDIT_PROMPT,
    PROMPTS,
    REFERENCE_LOGITS,
    group_row,
    arm_rewards,
)
from course.lib.learning.policy_gradient import (
    exact_gradient,
    expected_reward,
    grad_log_prob,
    kl_divergence,
    kl_objective_gradient,
    sample_action,
    softmax,
)


def train_group_baseline(steps: int = 30, group_size: int = 4, lr: float = 1.0, seed: int = 0) -> list[dict[str, Any]]:
    """REINFORCE with a per-prompt group baseline; returns one log row per step."""
    rng = random.Random(seed)
    logits = {pid: [0.0] * len(PROMPTS[pid][1]) for pid in PROMPTS}
    rewards_of = {pid: arm_rewards(pid) for pid in PROMPTS}
    rows = []
    for step in range(steps):
        samples = []
        for pid in PROMPTS:
            probs = softmax(logits[pid])
            for i in range(group_size):
                action = sample_action(probs, rng)
                samples.append(
                    {"id": f"{pid}#{i}", "prompt_id": pid, "action": action, "reward": rewards_of[pid][action]}
                )

        # FIX: a group is all samples of one *prompt*. Keyed by the sample id
        # ("prompt#i"), every group held one sample, its mean was that sample's
        # own reward, and every advantage was exactly 0: no learning signal.
        groups: dict[str, list[float]] = defaultdict(list)
        for s in samples:
            groups[s["prompt_id"]].append(s["reward"])
        for s in samples:
            group = groups[s["prompt_id"]]
            s["advantage"] = s["reward"] - math.fsum(group) / len(group)

        for s in samples:
            pid = s["prompt_id"]
            g = grad_log_prob(logits[pid], s["action"])
            logits[pid] = [t + lr * s["advantage"] * gk / group_size for t, gk in zip(logits[pid], g)]

        rows.append(group_row(step, samples, logits))
    return rows


def train_kl(steps: int = 12, beta: float = 0.2, lr: float = 2.0) -> list[dict[str, Any]]:
    """Gradient ascent from pi_ref on the KL-regularised objective; one log row per step."""
    pi_ref = softmax(REFERENCE_LOGITS)
    rewards = arm_rewards(BANDIT_PROMPT)
    logits = list(REFERENCE_LOGITS)
    rows = []
    for step in range(steps):
        grad = kl_objective_gradient(logits, pi_ref, rewards, beta)
        logits = [t + lr * g for t, g in zip(logits, grad)]
        probs = softmax(logits)
        reward = expected_reward(probs, rewards)
        # FIX: measure the KL of the policy this row describes, *after* the update.
        # Measured before it, the KL lagged one step (step 0 always showed 0.0)
        # and E[r] and KL on one row came from two different policies.
        kl = kl_divergence(probs, pi_ref)
        rows.append(
            {"step": step, "probs": probs, "expected_reward": reward, "kl": kl, "objective": reward - beta * kl}
        )
    return rows


def train_logged(steps: int = 60, log_every: int = 5, lr: float = 0.8) -> list[dict[str, Any]]:
    """Exact policy-gradient ascent on one prompt; a log row every log_every updates."""
    rewards = arm_rewards(BANDIT_PROMPT)
    logits = list(REFERENCE_LOGITS)
    log: list[dict[str, Any]] = []
    for step in range(1, steps + 1):
        logits = [t + lr * g for t, g in zip(logits, exact_gradient(logits, rewards))]
        if step % log_every == 0:
            # FIX: the x-axis is the number of updates so far, not the number of
            # log rows. len(log) + 1 equals the step only when log_every == 1.
            log.append({"x": step, "expected_reward": expected_reward(softmax(logits), rewards)})
    return log


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.exercises.solutions"))
