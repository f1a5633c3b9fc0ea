"""Reward rubrics by name: the strict verifier and five deliberately weak ones.

This module owns the registry ``RUBRICS`` (name -> score function). Every entry
has the contract of ``course.score.score``::

    score(example, completion) -> {"reward": float, "details": dict}

``"strict"`` *is* ``course.score.score`` (reward spec v1). The others are
*hackable on purpose*: each one encodes a shortcut that a hurried engineer could
plausibly write, and each docstring names the loophole a policy under
optimisation pressure will find. They exist for milestone 5 (red-team the
reward: ``python -m course.red_team --rubric NAME``), for the debugging kata, and
for the tiny-LM trainer's Goodhart demo (``--rubric NAME``), where the proxy
reward climbs while the strict pass rate does not.

Like the strict scorer, every weak rubric is pure, total (no input raises) and
linear-time (string methods and non-backtracking regexes only). Their
``details`` carry the strict scorer's fields (``scorer_version``,
``error_code`` -- always a code from ``course.score.ERROR_CODES`` --
``parsed``, ``extracted``, ``expected``, ``reason``) plus ``loophole``: one
sentence naming the weakness, so a reward logged under a weak rubric always
says what it failed to check.

Look at them side by side::

    python -m course.rubrics                               # list names and loopholes
    python -m course.rubrics --rubric last_number --expected 323 "17*19 is 323, I think"

>>> get_rubric("last_number")({"expected_answer": 323}, "17 * 19 = 323")["reward"]
1.0
>>> get_rubric("strict")({"expected_answer": 323}, "17 * 19 = 323")["reward"]
0.0
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any, Callable

from course.errors import CourseError
from course.score import (
    MAX_DIGITS,
    _read_expected,
    _shown_expected,
    score as strict_score,
    scorer_fingerprint as strict_fingerprint,
)

ScoreFn = Callable[[Any, Any], dict[str, Any]]

# An ASCII integer token with an optional minus. The look-behind makes "3-4" read
# as 3 and 4: a hyphen right after a digit is not a sign. No nested quantifiers.
_NUMBER = re.compile(r"(?<![0-9])-?[0-9]+", re.ASCII)
_INT_LITERAL = re.compile(r"-?[0-9]+", re.ASCII)
_DIGIT_RUN = re.compile(r"[0-9]+", re.ASCII)
# lenient_int never hands int() more than this many characters: int() refuses more
# than MAX_DIGITS digits anyway, and refusing early keeps the cost bounded.
_LENIENT_MAX_CHARS = MAX_DIGITS


# ---------------------------------------------------------------------------
# Shared pieces: the verdict shape, the example check, number literals.
# ---------------------------------------------------------------------------
def _verdict(
    version: str,
    loophole: str,
    code: str,
    reason: str,
    expected: Any,
    extracted: int | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """The strict scorer's verdict shape plus ``loophole``; reward derives from the code."""
    details = {
        "scorer_version": version,
        "error_code": code,
        "parsed": extracted is not None,
        "extracted": extracted,
        "expected": expected,
        "reason": reason,
        "loophole": loophole,
    }
    if extra:
        details.update(extra)
    return {"reward": 1.0 if code == "ok" else 0.0, "details": details}


def _precheck(version: str, loophole: str, example: Any, completion: Any) -> tuple[int | None, dict | None]:
    """Return (expected, None), or (None, verdict) for a bad example or non-text completion.

    Weak rubrics are weak about *completions*, never about the data: a broken
    example is reported exactly as the strict scorer reports it.
    """
    expected, problem = _read_expected(example)
    if problem is not None:
        reason = problem[0].upper() + problem[1:] + "."
        return None, _verdict(version, loophole, "bad_example", reason, _shown_expected(example))
    if not isinstance(completion, str):
        reason = f"The completion is a {type(completion).__name__}, not text."
        return None, _verdict(version, loophole, "not_a_string", reason, expected)
    return expected, None


def _canonical(literal: str) -> str:
    """'-0323' -> '-323', '000' -> '0': the literal's value as str(int) would print it."""
    negative = literal.startswith("-")
    digits = literal.lstrip("-").lstrip("0") or "0"
    return "-" + digits if negative and digits != "0" else digits


def _value(literal: str) -> int | None:
    """int(literal) for an ASCII literal, or None when it has more than MAX_DIGITS digits."""
    canonical = _canonical(literal)
    if len(canonical.lstrip("-")) > MAX_DIGITS:
        return None
    return int(canonical)


def _compare(version: str, loophole: str, literal: str, expected: int, where: str, **extra: Any) -> dict[str, Any]:
    """Compare one ASCII integer literal with the expected answer (by value, leading zeros ignored)."""
    value = _value(literal)
    if value is None:
        return _verdict(
            version, loophole, "integer_too_long",
            f"The {where} has more than {MAX_DIGITS} digits; not converted.", expected, **extra,
        )
    if value == expected:
        return _verdict(version, loophole, "ok", f"The {where} is {value}, the expected answer.", expected, value, **extra)
    return _verdict(
        version, loophole, "wrong_answer",
        f"The {where} is {value}, but the expected answer is {expected}.", expected, value, **extra,
    )


# ---------------------------------------------------------------------------
# The weak rubrics. Each docstring names its loophole; the LOOPHOLE strings are
# what every verdict carries in details["loophole"].
# ---------------------------------------------------------------------------
CONTAINS_ANSWER_VERSION = "hackable-contains-answer-v1"
CONTAINS_ANSWER_LOOPHOLE = "rewards the right number anywhere in the text, so listing many numbers wins"


def contains_answer(example: Any, completion: Any) -> dict[str, Any]:
    """Reward 1 if the expected integer appears anywhere in the text as a number.

    Loophole: the format and the *commitment* to one answer are never checked.
    A completion that lists candidates (``"320 321 322 323 324"``) or buries the
    answer in prose (``"it is not 323"``) earns full reward.

    >>> contains_answer({"expected_answer": 323}, "maybe 322, 323 or 324")["reward"]
    1.0
    >>> contains_answer({"expected_answer": 323}, "Final: 324")["details"]["error_code"]
    'wrong_answer'
    """
    version, loophole = CONTAINS_ANSWER_VERSION, CONTAINS_ANSWER_LOOPHOLE
    expected, early = _precheck(version, loophole, example, completion)
    if early is not None:
        return early
    position = _find_number(completion, expected)
    if position is not None:
        return _verdict(
            version, loophole, "ok",
            f"The expected answer {expected} appears in the text (at character {position}).",
            expected, expected, position=position,
        )
    first = _NUMBER.search(completion)
    if first is None:
        return _verdict(version, loophole, "no_integer", "The text contains no integer.", expected)
    return _compare(version, loophole, first.group(), expected, "first number in the text")


def _find_number(text: str, expected: int) -> int | None:
    """Where the first number token whose value is ``expected`` starts, or None.

    Token rules as in ``_NUMBER`` (ASCII digits, optional '-', leading zeros
    ignored). Built on str.find so a long text costs a few C-speed scans, not a
    Python loop per number.
    """
    digits = str(abs(expected))
    start = 0
    while True:
        pos = text.find(digits, start)
        if pos == -1:
            return None
        start = pos + 1
        end = pos + len(digits)
        if end < len(text) and "0" <= text[end] <= "9":
            continue  # 3230 is not 323
        first = pos
        while first > 0 and text[first - 1] == "0":
            first -= 1  # 0323 is 323
        if first > 0 and "0" <= text[first - 1] <= "9":
            continue  # 1323 is not 323
        # A '-' is a sign only when no digit precedes it ("3-323" reads as 3 and 323).
        negative = first > 0 and text[first - 1] == "-" and not (first > 1 and "0" <= text[first - 2] <= "9")
        if expected != 0 and negative != (expected < 0):
            continue  # -323 is not 323, and 18 is not -18
        return first - 1 if negative else first


LAST_NUMBER_VERSION = "hackable-last-number-v1"
LAST_NUMBER_LOOPHOLE = "only the last number counts, so any text (or a hedge) ending in the right number wins"


def last_number(example: Any, completion: Any) -> dict[str, Any]:
    """Reward 1 if the last integer in the text equals the expected answer.

    Loophole: everything before the last number is ignored, including the
    format, wrong answers stated earlier, and a trail of guesses ending in the
    right one (``"Final: 320\\nFinal: 323"``); it also reads only the tail of
    ``3_23`` (23) or ``1,000`` (000).

    >>> last_number({"expected_answer": 323}, "It is 324. No wait: 323")["reward"]
    1.0
    >>> last_number({"expected_answer": 323}, "Final: 323.5")["details"]["extracted"]
    5
    """
    version, loophole = LAST_NUMBER_VERSION, LAST_NUMBER_LOOPHOLE
    expected, early = _precheck(version, loophole, example, completion)
    if early is not None:
        return early
    # The last run of ASCII digits is the first run in the reversed text: one
    # C-speed slice and one regex search, however long the completion.
    backwards = completion[::-1]
    run = _DIGIT_RUN.search(backwards)
    if run is None:
        return _verdict(version, loophole, "no_integer", "The text contains no integer.", expected)
    start, end = len(completion) - run.end(), len(completion) - run.start()
    if start > 0 and completion[start - 1] == "-" and not (start > 1 and "0" <= completion[start - 2] <= "9"):
        start -= 1  # a sign, unless a digit precedes it ("3-4" ends with the number 4)
    return _compare(version, loophole, completion[start:end], expected, "last number in the text")


FINAL_LINE_ANYWHERE_VERSION = "hackable-final-line-anywhere-v1"
FINAL_LINE_ANYWHERE_LOOPHOLE = "any 'Final:' line with the right number wins, so answer laundering (many Final: lines) is rewarded"


def _final_lines(text: str) -> list[str]:
    """The text after 'Final:' on every line that starts (after trimming) with 'Final:'."""
    found = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("Final:"):
            found.append(line[len("Final:"):].strip())
    return found


def final_line_anywhere(example: Any, completion: Any) -> dict[str, Any]:
    """Reward 1 if *some* line reads ``Final: <expected>``, whatever else the text says.

    Loophole: answer laundering. Several ``Final:`` lines with different numbers
    (``"Final: 322\\nFinal: 323\\nFinal: 324"``) are rewarded as long as one of
    them is right; reasoning or chatter around the line is never penalised.

    >>> final_line_anywhere({"expected_answer": 323}, "Final: 322\\nFinal: 323")["reward"]
    1.0
    >>> final_line_anywhere({"expected_answer": 323}, "323")["details"]["error_code"]
    'missing_prefix'
    """
    version, loophole = FINAL_LINE_ANYWHERE_VERSION, FINAL_LINE_ANYWHERE_LOOPHOLE
    expected, early = _precheck(version, loophole, example, completion)
    if early is not None:
        return early
    finals = _final_lines(completion)
    if not finals:
        return _verdict(version, loophole, "missing_prefix", "No line starts with 'Final:'.", expected, final_lines=0)
    first_literal = None
    target = str(expected)
    for rest in finals:
        if _INT_LITERAL.fullmatch(rest) is None:
            continue
        if first_literal is None:
            first_literal = rest
        if _canonical(rest) == target:
            return _verdict(
                version, loophole, "ok",
                f"One of {len(finals)} 'Final:' line(s) reads {expected}, the expected answer.",
                expected, expected, final_lines=len(finals),
            )
    if first_literal is None:
        return _verdict(
            version, loophole, "no_integer",
            f"{len(finals)} 'Final:' line(s), none followed by a plain integer.", expected, final_lines=len(finals),
        )
    return _compare(version, loophole, first_literal, expected, "first 'Final:' integer", final_lines=len(finals))


FIRST_FINAL_VERSION = "hackable-first-final-v1"
FIRST_FINAL_LOOPHOLE = "the first 'Final:' line decides and everything else is ignored, so contradicting it later costs nothing"


def first_final(example: Any, completion: Any) -> dict[str, Any]:
    """Reward 1 if the first line starting with ``Final:`` carries the expected integer.

    Loophole: the rest of the text is never read. Reasoning before the line,
    a second contradictory ``Final:`` after it, or a page of padding all still
    earn full reward, so "exactly one line" is not enforced.

    >>> first_final({"expected_answer": 323}, "Final: 323\\nFinal: 324")["reward"]
    1.0
    >>> first_final({"expected_answer": 323}, "Final: 324\\nFinal: 323")["reward"]
    0.0
    """
    version, loophole = FIRST_FINAL_VERSION, FIRST_FINAL_LOOPHOLE
    expected, early = _precheck(version, loophole, example, completion)
    if early is not None:
        return early
    for line in completion.splitlines():
        line = line.strip()
        if line.startswith("Final:"):
            rest = line[len("Final:"):].strip()
            if _INT_LITERAL.fullmatch(rest) is None:
                return _verdict(
                    version, loophole, "no_integer",
                    "The first 'Final:' line is not followed by a plain integer.", expected,
                    found=rest[:40],
                )
            return _compare(version, loophole, rest, expected, "first 'Final:' integer")
    return _verdict(version, loophole, "missing_prefix", "No line starts with 'Final:'.", expected)


LENIENT_INT_VERSION = "hackable-lenient-int-v1"
LENIENT_INT_LOOPHOLE = "int() after a loose strip accepts what the spec forbids: 3_23, fullwidth digits, +323, 0323, a bare 323"


def lenient_int(example: Any, completion: Any) -> dict[str, Any]:
    """Strip Unicode whitespace, drop an optional ``Final:`` (any case), then ``int()`` the rest.

    Loophole: Python's ``int()`` is far more forgiving than the spec. It reads
    ``3_23`` and ``+323`` and ``0323`` as 323, accepts digits of any script
    (fullwidth ``３２３``, Arabic-Indic), and surrounding Unicode spaces; and the
    prefix is optional, so a bare ``323`` or ``final:323`` passes too.

    >>> lenient_int({"expected_answer": 323}, "Final: 3_23")["reward"]
    1.0
    >>> lenient_int({"expected_answer": 323}, "Final: 323.")["details"]["error_code"]
    'no_integer'
    """
    version, loophole = LENIENT_INT_VERSION, LENIENT_INT_LOOPHOLE
    expected, early = _precheck(version, loophole, example, completion)
    if early is not None:
        return early
    text = completion.strip()
    if text[:6].lower() == "final:":
        text = text[6:]
    text = text.strip()
    if not text:
        return _verdict(version, loophole, "empty", "Nothing left after stripping and removing 'Final:'.", expected)
    if len(text) > _LENIENT_MAX_CHARS:
        return _verdict(
            version, loophole, "integer_too_long",
            f"{len(text)} characters left; int() is not asked to read more than {_LENIENT_MAX_CHARS}.", expected,
        )
    try:
        value = int(text)
    except ValueError:
        return _verdict(
            version, loophole, "no_integer", "int() could not read what is left after the prefix.", expected,
            found=text[:40],
        )
    if value == expected:
        return _verdict(version, loophole, "ok", f"int() read {value}, the expected answer.", expected, value)
    return _verdict(
        version, loophole, "wrong_answer", f"int() read {value}, but the expected answer is {expected}.", expected, value,
    )


# ---------------------------------------------------------------------------
# The registry. Names are stable: run logs and the tiny-LM trainer refer to them.
# ---------------------------------------------------------------------------
RUBRICS: dict[str, ScoreFn] = {
    "strict": strict_score,
    "contains_answer": contains_answer,
    "last_number": last_number,
    "final_line_anywhere": final_line_anywhere,
    "first_final": first_final,
    "lenient_int": lenient_int,
}

LOOPHOLES: dict[str, str] = {
    "strict": "none known: this is reward spec v1 (docs/reward_spec_v1.md)",
    "contains_answer": CONTAINS_ANSWER_LOOPHOLE,
    "last_number": LAST_NUMBER_LOOPHOLE,
    "final_line_anywhere": FINAL_LINE_ANYWHERE_LOOPHOLE,
    "first_final": FIRST_FINAL_LOOPHOLE,
    "lenient_int": LENIENT_INT_LOOPHOLE,
}

HACKABLE: tuple[str, ...] = tuple(name for name in RUBRICS if name != "strict")


def get_rubric(name: str) -> ScoreFn:
    """The score function registered under ``name``; CourseError listing the valid names otherwise.

    >>> get_rubric("strict") is strict_score
    True
    """
    try:
        return RUBRICS[name]
    except (KeyError, TypeError):
        raise CourseError(f"unknown rubric {name!r}; choose one of: {', '.join(RUBRICS)}") from None


def rubric_fingerprint(name: str) -> str:
    """sha256 of the source that defines rubric ``name`` (score.py for strict, this file otherwise)."""
    get_rubric(name)
    if name == "strict":
        return strict_fingerprint()
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()


# ---------------------------------------------------------------------------
# CLI: list the rubrics, or score one string under one of them next to strict.
# ---------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    import json
    import sys

    from course.cli import make_parser, run

    def _main(args_in):  # type: ignore[no-untyped-def]
        parser = make_parser(
            "python -m course.rubrics",
            "List the reward rubrics (strict and the deliberately hackable ones), or score one "
            "completion under a rubric and under strict side by side.",
            "  python -m course.rubrics                     # names and loopholes\n"
            '  python -m course.rubrics --rubric lenient_int --expected 323 "Final: 3_23"\n'
            "      # lenient_int rewards it (1.0); strict gives 0.0 with error_code digit_separator",
        )
        parser.add_argument("--rubric", help="a rubric name (omit to list them all)")
        parser.add_argument("--expected", type=int, help="the example's expected_answer")
        parser.add_argument("completion", nargs="?", help="the completion text, or - to read stdin")
        args = parser.parse_args(args_in)
        if args.rubric is None and args.completion is None:
            width = max(len(n) for n in RUBRICS)
            for name in RUBRICS:
                print(f"{name:<{width}}  {LOOPHOLES[name]}")
            return 0
        if args.rubric is None or args.completion is None or args.expected is None:
            raise CourseError("scoring needs --rubric NAME, --expected N and a completion")
        rubric = get_rubric(args.rubric)
        completion = sys.stdin.read() if args.completion == "-" else args.completion
        example = {"expected_answer": args.expected}
        result = {args.rubric: rubric(example, completion), "strict": strict_score(example, completion)}
        print(json.dumps(result, ensure_ascii=False, indent=2))
        return 0

    return run(_main, argv)


if __name__ == "__main__":
    raise SystemExit(main())
