"""The kata's draft verifiers: two earlier implementations of the ``Final: <int>`` check.

Some examples of the kata packs were scored with these drafts (their ``scorer`` is
``draft_v0`` or ``draft_v1``); reading a draft next to the rules in
``docs/reward_spec_v1.md`` is how a student tells a verifier bug from a model
failure. They are part of the packs, so they stay byte-stable: ``tests/test_kata.py``
re-scores every example with its named scorer. ``course.lib.reward_spec.kata_labels`` registers
them beside the course's rubrics; ``python -m course.kata`` shows the packs.
"""

from __future__ import annotations

import re
from typing import Any

from course.instrument.spec_v1 import (
    ASCII_WHITESPACE,
    MAX_DIGITS,
    Verdict,
    read_expected,
    shown_expected,
    verdict,
)

# ---------------------------------------------------------------------------
# The draft verifier: an earlier, shorter implementation of the Final: <int> check.
# Part of the pack (some examples were scored with it), so it stays byte-stable.
# ---------------------------------------------------------------------------
DRAFT_VERSION = "draft-final-v0"
_DRAFT_PREFIX = "Final: "
_DRAFT_INT = re.compile("[0-9]{1,%d}" % MAX_DIGITS, re.ASCII)


def _draft_verdict(code: str, reason: str, expected: Any, extracted: int | None = None, **extra: Any) -> Verdict:
    return verdict(code, reason, expected, extracted, scorer_version=DRAFT_VERSION, **extra)


def draft_score(example: Any, completion: Any) -> Verdict:
    """A draft of the ``Final: <int>`` verifier, written before reward spec v1 was final.

    Same contract and same details fields as ``course.score.score``; a compact
    implementation (trim, check the prefix, read the digits, compare). Read it
    next to the rules in ``docs/reward_spec_v1.md`` when an example's
    ``scorer`` is ``draft_v0``.

    >>> draft_score({"expected_answer": 323}, "Final: 323")["reward"]
    1.0
    >>> draft_score({"expected_answer": 323}, "The answer is 323")["details"]["error_code"]
    'missing_prefix'
    """
    expected, problem = read_expected(example)
    if problem is not None:
        return _draft_verdict("bad_example", problem[0].upper() + problem[1:] + ".", shown_expected(example))
    if not isinstance(completion, str):
        return _draft_verdict("not_a_string", f"The completion is a {type(completion).__name__}, not text.", expected)
    text = completion.strip(" ")
    if not text:
        return _draft_verdict("empty", "The completion is empty after trimming.", expected)
    if not text.startswith(_DRAFT_PREFIX):
        return _draft_verdict("missing_prefix", "The line does not start with 'Final: '.", expected, found=text[:40])
    rest = text[len(_DRAFT_PREFIX):]
    m = _DRAFT_INT.match(rest)
    if m is None:
        return _draft_verdict(
            "no_integer", "'Final: ' is not followed by an integer.", expected, found=rest[:40]
        )
    value = int(m.group())
    if m.end() != len(rest):
        return _draft_verdict(
            "trailing_text", "Something follows the integer.", expected, value, found=rest[:40]
        )
    if value != expected:
        return _draft_verdict("wrong_answer", f"Read {value}, but the expected answer is {expected}.", expected, value)
    return _draft_verdict("ok", f"Read {value}, the expected answer.", expected, value)


# ---------------------------------------------------------------------------
# The second draft: the hard pack's verifier, a rewrite of draft v0 for the run
# logger, which stored every parsed answer in a signed 64-bit column.
# Part of the hard pack (data/kata/kata_hard.jsonl), so it stays byte-stable.
# ---------------------------------------------------------------------------
DRAFT_V1_VERSION = "draft-final-v1"
_DRAFT_V1_LINE = re.compile(r"Final: -?(0|[1-9][0-9]*)", re.ASCII)
_INT64_SPAN = 2**64


def _as_int64(value: int) -> int:
    """The value a signed 64-bit column holds after storing ``value`` (two's complement)."""
    return (value + _INT64_SPAN // 2) % _INT64_SPAN - _INT64_SPAN // 2


def _draft_v1_verdict(code: str, reason: str, expected: Any, extracted: int | None = None, **extra: Any) -> Verdict:
    return verdict(code, reason, expected, extracted, scorer_version=DRAFT_V1_VERSION, **extra)


def draft_v1_score(example: Any, completion: Any) -> Verdict:
    """The second draft of the ``Final: <int>`` verifier (the hard pack's ``draft_v1``).

    Same contract and same details fields as ``course.score.score``. It trims
    ASCII whitespace at both ends, requires one line, matches the prefix and a
    canonical integer with one regex, and keeps the number as the run logger's
    64-bit column stores it. Read it next to the rules in
    ``docs/reward_spec_v1.md`` when an example's ``scorer`` is ``draft_v1``.

    >>> draft_v1_score({"expected_answer": 323}, "Final: 323\\n")["reward"]
    1.0
    >>> draft_v1_score({"expected_answer": 323}, "Final: 0323")["details"]["error_code"]
    'trailing_text'
    """
    expected, problem = read_expected(example)
    if problem is not None:
        return _draft_v1_verdict("bad_example", problem[0].upper() + problem[1:] + ".", shown_expected(example))
    if not isinstance(completion, str):
        return _draft_v1_verdict(
            "not_a_string", f"The completion is a {type(completion).__name__}, not text.", expected
        )
    text = completion.strip(ASCII_WHITESPACE)
    if not text:
        return _draft_v1_verdict("empty", "The completion is empty after trimming.", expected)
    if "\n" in text or "\r" in text:
        return _draft_v1_verdict("multiple_lines", "More than one line.", expected, found=text[:40])
    if not text.startswith(_DRAFT_PREFIX):
        return _draft_v1_verdict("missing_prefix", "The line does not start with 'Final: '.", expected, found=text[:40])
    m = _DRAFT_V1_LINE.match(text)
    if m is None:
        return _draft_v1_verdict(
            "no_integer", "'Final: ' is not followed by an integer.", expected, found=text[len(_DRAFT_PREFIX):][:40]
        )
    if m.end() != len(text):
        return _draft_v1_verdict(
            "trailing_text", "Something follows the integer.", expected, found=text[len(_DRAFT_PREFIX):][:40]
        )
    if len(m.group(1)) > MAX_DIGITS:
        return _draft_v1_verdict("integer_too_long", f"More than {MAX_DIGITS} digits.", expected)
    value = _as_int64(int(m.group(1)))
    if value != expected:
        return _draft_v1_verdict("wrong_answer", f"Read {value}, but the expected answer "
                                                 f"is {expected}.", expected, value)
    return _draft_v1_verdict("ok", f"Read {value}, the expected answer.", expected, value)


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.reward_spec.kata_drafts"))
