"""How a GRPO-style loss divides its sum: each token's effective weight, exactly, for every choice.

The policy-gradient part of Loop C's loss is a weighted sum of the log-probabilities of
the sampled tokens: d loss / d log pi(token t of completion i) = -w_it, and on-policy w_it
is the only thing the update sees of the reward. Two independent choices set w_it:

1. The ADVANTAGE of completion i (one number for all its tokens), from its group of G
   completions of the same prompt:
     scale "none"  (the course's default, Dr. GRPO)   A_i = r_i - mean(group)
     scale "group" (GRPO, TRL's default)              A_i = (r_i - mean(group)) / (std(group) + 1e-4)
   std is the sample standard deviation (divides by G - 1), as TRL computes it. Dividing
   by it up-weights groups that are nearly unanimous (very easy or very hard prompts): a
   single success among eight is pushed as hard as a four-four split.
2. The DIVISOR that turns the sum over tokens into a loss (B completions, L_i tokens each):
     "constant"   (the course's default, Dr. GRPO-like)  w_it = A_i / B
     "seq-mean"   (GRPO)                                 w_it = A_i / (B * L_i)
     "token-mean" (DAPO; TRL's "bnpo", and "dapo" on one process)   w_it = A_i / sum_j L_j
   Under "seq-mean" a completion's tokens share its advantage: a long wrong answer is
   penalised less per token than a short one, so wrong answers drift longer (the length
   bias the Dr. GRPO paper names); a long right answer is rewarded less per token too.
   "token-mean" and "constant" give every token of a completion the same weight whatever
   its length; they differ by a factor (sum_j L_j) / B that changes from batch to batch
   under "token-mean" and never under "constant". TRL's "dr_grpo" divides by
   B * max_completion_length: the course's "constant" times a fixed 1/max_tokens.

The KL term in the loss (when it is there) is divided by the same divisor: per token,
loss_it = -A_i log pi_it + beta k_it, then the sum over tokens is divided.

This module owns the arithmetic on plain numbers (standard library, no printing):
``advantages``, ``token_weights`` and ``weights_table``. The loop's torch version is
``course.lib.learning.rl_objective.policy_loss``; tests check that its gradient per token is
this module's weight. ``python -m course.loss_normalisation`` prints the table.

>>> advantages([1.0, 0.0, 0.0, 0.0], group=4, scale="none")
[0.75, -0.25, -0.25, -0.25]
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from course.errors import CourseError

NORMS: tuple[str, ...] = ("constant", "seq-mean", "token-mean")
SCALES: tuple[str, ...] = ("none", "group")
STD_EPS = 1e-4  # added to the group's std before dividing (TRL's constant): a zero-std group stays at 0
NORM_NAMES: dict[str, str] = {
    "constant": "constant divisor B (course default; Dr. GRPO up to 1/max_tokens)",
    "seq-mean": "mean over each completion's tokens, then over completions (GRPO)",
    "token-mean": "mean over all tokens of the batch (DAPO)",
}


def advantages(rewards: Sequence[float], *, group: int, scale: str) -> list[float]:
    """A_i for rewards in prompt-major order (``group`` consecutive completions per prompt).

    >>> [round(a, 4) for a in advantages([1.0, 0.0, 0.0, 0.0], group=4, scale="group")]
    [1.4997, -0.4999, -0.4999, -0.4999]
    >>> advantages([1.0, 1.0], group=2, scale="group")   # all equal: no signal, whatever the scale
    [0.0, 0.0]
    """
    if scale not in SCALES:
        raise CourseError(f"unknown reward scaling {scale!r}: choose one of {', '.join(SCALES)}")
    if group < 2 or len(rewards) % group:
        raise CourseError(f"{len(rewards)} rewards do not split into groups of {group} (at least 2 each)")
    out: list[float] = []
    for start in range(0, len(rewards), group):
        g = list(rewards[start:start + group])
        mean = math.fsum(g) / group
        centred = [r - mean for r in g]
        if scale == "group":
            std = math.sqrt(math.fsum(c * c for c in centred) / (group - 1))
            centred = [c / (std + STD_EPS) for c in centred]
        out.extend(c + 0.0 for c in centred)
    return out


def divisors(lengths: Sequence[int], norm: str) -> list[float]:
    """What each completion's token sum is divided by (so w_it = A_i / divisor_i).

    >>> divisors([2, 6], "constant"), divisors([2, 6], "seq-mean"), divisors([2, 6], "token-mean")
    ([2.0, 2.0], [4.0, 12.0], [8.0, 8.0])
    """
    b = float(len(lengths))
    if norm == "constant":
        return [b] * len(lengths)
    if norm == "seq-mean":
        return [b * max(n, 1) for n in lengths]  # (an empty completion divides by 1: nothing to weigh)
    if norm == "token-mean":
        return [float(max(sum(lengths), 1))] * len(lengths)
    raise CourseError(f"unknown loss normalisation {norm!r}: choose one of {', '.join(NORMS)}")


def token_weights(
    rewards: Sequence[float], lengths: Sequence[int], *, group: int, norm: str, scale: str
) -> list[float]:
    """w_i: the weight of each token of completion i (all its tokens share it): A_i / divisor_i.

    >>> token_weights([1.0, 0.0], [2, 6], group=2, norm="seq-mean", scale="none")
    [0.125, -0.041666666666666664]
    """
    if len(rewards) != len(lengths):
        raise CourseError(f"{len(rewards)} rewards but {len(lengths)} lengths")
    if any(n < 0 for n in lengths):
        raise CourseError("a completion's length cannot be negative")
    return [a / d + 0.0 for a, d in zip(advantages(rewards, group=group, scale=scale), divisors(lengths, norm))]


@dataclass(frozen=True)
class Completion:
    """One completion's row of the table: its advantage and its per-token and total weight under every norm."""

    index: int
    group: int
    length: int
    reward: float
    advantage: float
    per_token: dict[str, float]  # norm -> w_i
    total: dict[str, float]  # norm -> L_i * w_i: the push on the whole completion's log-probability


def weights_table(rewards: Sequence[float], lengths: Sequence[int], *, group: int, scale: str) -> list[Completion]:
    """Every completion under every normalisation, for one reward scaling.

    >>> rows = weights_table([1.0, 0.0, 1.0, 0.0], [4, 12, 4, 4], group=2, scale="none")
    >>> [r.total["seq-mean"] for r in rows[:2]], [r.total["token-mean"] for r in rows[:2]]
    ([0.125, -0.125], [0.0833..., -0.25])
    """
    adv = advantages(rewards, group=group, scale=scale)
    per = {norm: token_weights(rewards, lengths, group=group, norm=norm, scale=scale) for norm in NORMS}
    return [Completion(i, i // group, lengths[i], float(rewards[i]), adv[i], {n: per[n][i] for n in NORMS},
                       {n: per[n][i] * lengths[i] + 0.0 for n in NORMS}) for i in range(len(rewards))]


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.learning.loss_normalisation"))
