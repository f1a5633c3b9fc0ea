"""Tests for course.lib.reward_spec.problems: the generator behind the datasets and the tiny LM's training set.

Answers are checked two independent ways: from the structured ``operands`` with
Python's own operators, and (for the bare arithmetic kinds) by reading the
numbers back out of the prompt text.
"""

from __future__ import annotations

import operator
import random
import re

import hypothesis_text as ht  # st.text() without hypothesis's slow first-run codec table
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from course.errors import CourseError
from course.lib.reward_spec.problems import (
    FORMAT_INSTRUCTION,
    KINDS,
    MAX_PROMPT_CHARS,
    RUNNING_EXAMPLE,
    Problem,
    make_problem,
)

OPS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul}
SYMBOLS = {"+": operator.add, "-": operator.sub, "*": operator.mul}
COMPUTE = re.compile(r"Compute (-?\d+) ([-+*]) (-?\d+)\. " + re.escape(FORMAT_INSTRUCTION))


def draw(seed: str, n: int, kind: str | None = None) -> list[Problem]:
    rng = random.Random(seed)
    return [make_problem(rng, kind) for _ in range(n)]


MANY = draw("tests", 3000)


def test_every_answer_equals_the_operation_applied_to_its_operands():
    for p in MANY:
        a, b = p.operands
        assert p.answer == OPS[p.kind.removeprefix("word_")](a, b), p


def test_arithmetic_prompts_compute_to_the_answer_when_read_back_from_the_text():
    arithmetic = [p for p in MANY if p.kind in OPS]
    assert len(arithmetic) > 1000
    for p in arithmetic:
        m = COMPUTE.fullmatch(p.prompt)
        assert m is not None, p.prompt
        assert SYMBOLS[m.group(2)](int(m.group(1)), int(m.group(3))) == p.answer


def test_word_problems_mention_both_operands_in_the_prompt():
    for p in MANY:
        if p.kind.startswith("word_"):
            numbers = [int(x) for x in re.findall(r"-?\d+", p.prompt)]
            assert all(x in numbers for x in p.operands), p.prompt


def test_every_prompt_ends_with_the_format_instruction():
    assert all(p.prompt.endswith(" " + FORMAT_INSTRUCTION) for p in MANY)
    assert FORMAT_INSTRUCTION == "Output exactly one line: Final: <int>"


def test_prompts_stay_under_140_characters():
    assert max(len(p.prompt) for p in MANY) < MAX_PROMPT_CHARS == 140


def test_same_seed_gives_the_same_problems():
    assert draw("fixed", 50) == draw("fixed", 50)


def test_different_seeds_give_different_problems():
    assert draw("one", 50) != draw("two", 50)


def test_every_kind_is_reachable_when_the_rng_picks_the_kind():
    assert sorted({p.kind for p in draw("kinds", 200)}) == sorted(KINDS)


@pytest.mark.parametrize("kind", KINDS)
def test_a_requested_kind_is_the_kind_returned(kind):
    assert {p.kind for p in draw(f"kind:{kind}", 30, kind)} == {kind}


@pytest.mark.parametrize("kind", ["sub", "word_sub", "word_add"])
def test_negative_answers_occur_where_they_are_natural(kind):
    assert any(p.answer < 0 for p in draw(f"neg:{kind}", 200, kind))


def test_counting_stories_never_go_below_zero():
    # Nobody gives away more apples than they have, and no bus ends with -3 passengers.
    counting = [p for p in MANY if "gives away" in p.prompt or "get off" in p.prompt]
    assert counting and all(p.answer >= 0 for p in counting)


def test_some_items_are_big_enough_for_thousands_separators():
    assert any(abs(p.answer) >= 1000 for p in MANY)


def test_operands_stay_small_for_most_items():
    small = sum(abs(a) < 100 and abs(b) < 100 for a, b in (p.operands for p in MANY))
    assert small / len(MANY) > 0.9


def test_the_running_example_is_17_times_19():
    assert RUNNING_EXAMPLE.answer == 17 * 19 == 323
    assert RUNNING_EXAMPLE.prompt == "Compute 17 * 19. Output exactly one line: Final: <int>"
    assert COMPUTE.fullmatch(RUNNING_EXAMPLE.prompt) is not None


def test_an_unknown_kind_is_a_course_error_naming_the_kinds():
    with pytest.raises(CourseError, match="word_mul"):
        make_problem(random.Random(0), "div")


def test_problems_are_frozen_records():
    with pytest.raises(AttributeError):
        RUNNING_EXAMPLE.answer = 0  # type: ignore[misc]


@settings(max_examples=200, deadline=None)
@given(seed=ht.text(max_size=20), kind=st.sampled_from((None,) + KINDS))
def test_any_seed_gives_a_well_formed_problem_and_the_same_one_twice(seed, kind):
    p = make_problem(random.Random(seed), kind)
    assert p == make_problem(random.Random(seed), kind)
    assert p.kind in KINDS and (kind is None or p.kind == kind)
    assert p.prompt.endswith(FORMAT_INSTRUCTION) and len(p.prompt) < MAX_PROMPT_CHARS
    assert "\n" not in p.prompt
    assert type(p.answer) is int
    assert p.answer == OPS[p.kind.removeprefix("word_")](*p.operands)
