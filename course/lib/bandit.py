"""The bandit of Loop C: one prompt, a few whole completions as actions, rewards from the scorer.

The course's task seen as a bandit. The prompt is the running example ("Compute
17 * 19 ...", expected 323); each *action* is a whole candidate completion, a
macro-action; its reward comes from the course's own instrument
(``course.instrument.spec_v1.score``), with the error code saying why. Shared by
``python -m course.bandit_train`` (REINFORCE on it) and ``python -m
course.kl_tradeoff_demo`` (the KL-regularised optimum over it).

>>> [(a.reward, a.error_code) for a in score_actions(EXAMPLE, DEFAULT_ACTIONS)][-2:]
[(0.0, 'wrong_answer'), (1.0, 'ok')]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from course.errors import CourseError
from course.instrument.spec_v1 import score
from course.lib.problems import RUNNING_EXAMPLE

EXAMPLE: dict[str, Any] = {"prompt": RUNNING_EXAMPLE.prompt, "expected_answer": RUNNING_EXAMPLE.answer}

# Candidate completions a base model might plausibly produce for the running example,
# listed in the order such a model tends to prefer them (chatty and sloppy first; the KL
# demo's reference policy uses this ranking). Exactly one, the last, is what the strict
# verifier accepts; the others are the near-misses the course keeps meeting.
DEFAULT_ACTIONS: tuple[str, ...] = (
    "The answer is 323",  # missing_prefix: right number, chatty
    "323",  # missing_prefix: right number, bare
    "Final:323",  # prefix_spacing: glued colon
    "final: 323",  # prefix_case
    "Final: 324",  # wrong_answer: perfect format, wrong number
    "Final: 323",  # ok: the one completion that earns reward 1.0
)


@dataclass(frozen=True)
class ScoredAction:
    """One action of the bandit with the scorer's verdict on it."""

    index: int
    text: str
    reward: float
    error_code: str
    reason: str


def score_actions(example: dict[str, Any], actions: Sequence[str]) -> tuple[ScoredAction, ...]:
    """Score every candidate completion once: the bandit's reward table, with evidence.

    >>> [(a.reward, a.error_code) for a in score_actions(EXAMPLE, ["Final: 323", "323"])]
    [(1.0, 'ok'), (0.0, 'missing_prefix')]
    """
    if len(actions) < 2:
        raise CourseError(f"a bandit needs at least 2 actions, got {len(actions)}")
    seen: dict[str, int] = {}
    for i, text in enumerate(actions):
        if text in seen:
            raise CourseError(f"action {i} repeats action {seen[text]} ({text!r}); actions must be distinct")
        seen[text] = i
    scored = []
    for i, text in enumerate(actions):
        verdict = score(example, text)
        details = verdict["details"]
        scored.append(ScoredAction(i, text, verdict["reward"], details["error_code"], details["reason"]))
    return tuple(scored)



# A second action set for the ablation: here most completions earn 1.0 (the scorer trims
# ASCII whitespace, so these variants all pass). Success is the common event, the
# opposite regime to DEFAULT_ACTIONS, and the one where subtracting a baseline matters most.
MOSTLY_REWARDED_ACTIONS: tuple[str, ...] = (
    "Final: 323",
    "Final: 323\n",
    " Final: 323",
    "Final: 323 ",
    "Final:323",
    "Final: 324",
)


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.bandit"))
