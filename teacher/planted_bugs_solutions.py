"""The teacher's solutions: the corrected versions of the loops in ``course/exercises/planted_bugs.py``.

Each function has the same signature and log format as its broken twin, so the corrected log can
be compared with the planted one row by row; the comment marked ``FIX`` in each function is the
only change. The student's tool runs only the broken loops; this file runs the corrected ones,
from the top of the checkout::

    python teacher/planted_bugs_solutions.py --bug advantage
    python teacher/planted_bugs_solutions.py --bug kl --json

Show a corrected log only after every student has named the symptom and the line
(``teacher/planted_bugs_key.md``).
"""

from __future__ import annotations

import math
import random
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any, Sequence

if __name__ == "__main__":  # run as a script from a checkout: the course package is one folder up
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from course.exercises import planted_bugs
from course.exercises.planted_bugs import (
    BANDIT_PROMPT,
    PROMPTS,
    REFERENCE_LOGITS,
    arm_rewards,
    group_row,
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
        samples: list[dict[str, Any]] = []
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


def main(argv: Sequence[str] | None = None) -> int:
    """The planted-bugs tool's command line, running these corrected loops."""
    return planted_bugs.cli(
        argv,
        impl=sys.modules[__name__],
        prog="python teacher/planted_bugs_solutions.py",
        description="(teacher) Run the corrected version of a planted-bug loop and print its log, "
        "to compare with the planted one row by row.",
        example="  python teacher/planted_bugs_solutions.py --bug advantage\n"
        "  python teacher/planted_bugs_solutions.py --bug x_axis --log-every 10",
        banner="[corrected loop]\n",
    )


if __name__ == "__main__":
    raise SystemExit(main())
