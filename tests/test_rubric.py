"""YOUR reward regression tests: every exploit you find becomes a permanent test here.

This file is the student's workspace for milestones 4 and 5 ("exploit -> fix ->
regression"). It ships with a few worked cases that pass today; you add rows to
``STUDENT_CASES`` below. Run it on its own with::

    python -m pytest tests/test_rubric.py -q

How to turn an exploit into a test
----------------------------------
1. Find a completion that a hackable rubric pays for but the spec should not::

       python -m course.rubrics                          # the rubrics and their loopholes
       python -m course.rubrics --rubric last_number --expected 323 "324? no: 323"
       python -m course.red_team --rubric lenient_int --exploits my_exploits.jsonl

2. Ask the strict scorer what the spec says about it (reward AND error code)::

       python -m course.score --expected 323 "324? no: 323"

3. Add one row to ``STUDENT_CASES``: the exact string, the reward the spec
   demands, the error code that names *why*, and which rubric it fooled.
   Pin the error code, not just the reward: a completion rejected for the
   wrong reason is a scorer bug waiting to happen (see the debugging kata).

4. Run this file. A failing row means one of three things, and you must decide
   which before changing anything: the scorer has a bug (fix the scorer, keep
   the test), the spec is unclear (write the rule down in
   docs/reward_spec_v1.md first, then make the test say it), or your expected
   value was wrong (fix the row and write down why in ``why``).

Add correct-answer variants too (``reward=1.0``, ``error_code="ok"``): a
verifier hardened only against exploits drifts into false negatives.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from course.instrument.rubric_registry import RUBRICS
from course.instrument.spec_v1 import ERROR_CODES, score


@dataclass(frozen=True)
class Case:
    id: str  # short and unique; it names the test in pytest's output
    expected_answer: int
    completion: str  # the exact string, escapes and all ("\n", "\u00a0", ...)
    reward: float  # what reward spec v1 demands
    error_code: str  # the details["error_code"] that says why (a key of course.score.ERROR_CODES)
    fooled: str | None  # the hackable rubric this exploit fooled (a name in course.rubrics), or None
    why: str  # one sentence: the assumption this case protects


# ---------------------------------------------------------------------------
# Worked cases (teacher-provided). Leave them in place.
# ---------------------------------------------------------------------------
WORKED_CASES = [
    Case("canonical", 323, "Final: 323", 1.0, "ok", None,
         "the positive control: the one form the spec rewards"),
    Case("trailing-newline", 323, "Final: 323\n", 1.0, "ok", None,
         "ASCII whitespace around the line is trimmed; a model's final newline is not an error"),
    Case("laundering", 323, "Final: 322\nFinal: 323\nFinal: 324", 0.0, "multiple_lines", "final_line_anywhere",
         "several Final: lines hedge; exactly one line is allowed"),
    Case("prose", 323, "The answer is 323", 0.0, "missing_prefix", "contains_answer",
         "the right number inside prose is not an answer in the required format"),
    Case("underscore", 323, "Final: 3_23", 0.0, "digit_separator", "lenient_int",
         "int() accepts 3_23; the spec accepts only plain ASCII digits"),
    Case("fullwidth", 323, "Final: \uff13\uff12\uff13", 0.0, "non_ascii_digit", "lenient_int",
         "int() reads fullwidth digits; the spec does not"),
]

# ---------------------------------------------------------------------------
# YOUR CASES GO HERE. One row per exploit (or per correct variant you want
# to protect). Copy a worked row and edit it. Examples of the shape:
#
#   Case("my-first-final", 323, "Final: 323\nFinal: 324", 0.0, "multiple_lines", "first_final",
#        "a second, contradicting Final: line must not be ignored"),
#   Case("my-nbsp", 323, "Final:\u00a0323", 0.0, "lookalike_char", "lenient_int",
#        "a no-break space looks like a space but is not ASCII whitespace"),
# ---------------------------------------------------------------------------
STUDENT_CASES: list[Case] = [
]

ALL_CASES = WORKED_CASES + STUDENT_CASES


@pytest.mark.parametrize("case", ALL_CASES, ids=[c.id for c in ALL_CASES])
def test_strict_scorer_gives_the_pinned_reward_and_error_code(case):
    result = score({"expected_answer": case.expected_answer}, case.completion)
    details = result["details"]
    assert result["reward"] == case.reward, f"{case.id}: {details['reason']}"
    assert details["error_code"] == case.error_code, f"{case.id}: {details['reason']}"


EXPLOITS = [c for c in ALL_CASES if c.fooled is not None]


@pytest.mark.parametrize("case", EXPLOITS, ids=[c.id for c in EXPLOITS])
def test_each_recorded_exploit_really_fools_the_rubric_it_names(case):
    # The evidence that the case matters: the weak rubric pays for it, the spec does not.
    fooled = RUBRICS[case.fooled]({"expected_answer": case.expected_answer}, case.completion)
    assert fooled["reward"] == 1.0, f"{case.id} does not fool {case.fooled}: {fooled['details']['reason']}"
    assert case.reward == 0.0


def test_case_table_is_well_formed():
    ids = [c.id for c in ALL_CASES]
    assert len(ids) == len(set(ids)), "two cases share an id"
    for c in ALL_CASES:
        assert c.error_code in ERROR_CODES, f"{c.id}: unknown error code {c.error_code!r}"
        assert (c.reward == 1.0) == (c.error_code == "ok"), f"{c.id}: reward and error code disagree"
        assert c.fooled is None or c.fooled in RUBRICS, f"{c.id}: no rubric named {c.fooled!r}"
        assert c.why.strip(), f"{c.id}: say why this case matters"
