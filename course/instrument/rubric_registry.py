"""Reward rubrics by name: one registry holding the strict verifier and six deliberately weak ones.

This module owns ``RUBRICS``, the one table of rubrics: each entry is a
``Rubric(name, score, version, loophole)`` record, and every ``score`` has the
contract of ``course.instrument.spec_v1.score``::

    score(example, completion) -> Verdict   # {"reward": float, "details": dict}

``"strict"`` *is* reward spec v1 (``spec_v1.score``). The others are *hackable
on purpose*: each one encodes a shortcut that a hurried engineer could
plausibly write, and each docstring names the loophole a policy under
optimisation pressure will find. They exist for milestone 5 (red-team the
reward: ``python -m course.red_team --rubric NAME``), for the debugging kata, and
for the tiny-LM trainer's Goodhart demo (``--rubric NAME``), where the proxy
reward climbs while the strict pass rate does not.

Like the strict scorer, every weak rubric is pure, total (no input raises) and
linear-time (string methods and non-backtracking regexes only). They build
their verdicts with the spec's own builder (``spec_v1.verdict``), so their
``details`` carry the strict scorer's fields (``scorer_version``,
``error_code`` -- always a code from ``spec_v1.ERROR_CODES`` -- ``parsed``,
``extracted``, ``expected``, ``reason``) plus ``loophole``: one sentence naming
the weakness, so a reward logged under a weak rubric always says what it failed
to check.

Provenance lives here too, outside the rules it measures: ``scorer_fingerprint``
is the sha256 of ``spec_v1.py`` (what every run's manifest records), and
``Rubric.fingerprint`` covers the files that decide that rubric's verdicts.

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
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Mapping

from course.errors import CourseError
from course.instrument import spec_v1
from course.instrument.spec_v1 import MAX_DIGITS, SCORER_VERSION, Verdict, read_expected, shown_expected, verdict

ScoreFn = Callable[[Any, Any], Verdict]

# The files whose bytes decide verdicts. spec_v1.py holds the rules of the strict
# scorer and the verdict builder every rubric uses; this file holds the weak rules.
SPEC_V1_SOURCE = Path(spec_v1.__file__)
RUBRICS_SOURCE = Path(__file__)


# ---------------------------------------------------------------------------
# Provenance: which instrument produced a run.
# ---------------------------------------------------------------------------
def fingerprint_files(paths: tuple[Path, ...]) -> str:
    """sha256 of the files' bytes, read in the order given (one file: its plain sha256)."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(Path(path).read_bytes())
    return digest.hexdigest()


def scorer_fingerprint(path: Path | str | None = None) -> str:
    """sha256 of ``spec_v1.py``'s bytes (or of ``path``): the code that decides a strict verdict.

    Two runs with equal fingerprints used the same rules. The command line
    (``course/score.py``) is deliberately outside it: a help text is not a rule.
    ``path`` exists so a test can fingerprint an edited copy without touching the repo.
    """
    return fingerprint_files((SPEC_V1_SOURCE if path is None else Path(path),))


# ---------------------------------------------------------------------------
# The record: one row per rubric, everything about it in one place.
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Rubric:
    """A named reward rubric: its score function, version, loophole and source files.

    Calling a ``Rubric`` calls its score function, so a rubric can be used
    wherever a ``score(example, completion)`` function is expected.
    """

    name: str
    score: ScoreFn
    version: str  # what its verdicts carry in details["scorer_version"]
    loophole: str  # one sentence; what its verdicts carry in details["loophole"] (strict: none)
    sources: tuple[Path, ...] = (SPEC_V1_SOURCE, RUBRICS_SOURCE)  # files that decide its verdicts

    @property
    def hackable(self) -> bool:
        """True for every rubric but the strict verifier."""
        return self.name != "strict"

    def fingerprint(self) -> str:
        """sha256 of the rubric's source files: equal fingerprints, same rubric code.

        strict: exactly ``scorer_fingerprint()`` (spec_v1.py). A weak rubric:
        spec_v1.py (its verdict builder and example check) then this file.
        """
        return fingerprint_files(self.sources)

    def __call__(self, example: Any, completion: Any) -> Verdict:
        return self.score(example, completion)


# An ASCII integer token with an optional minus. The look-behind makes "3-4" read
# as 3 and 4: a hyphen right after a digit is not a sign. No nested quantifiers.
_NUMBER = re.compile(r"(?<![0-9])-?[0-9]+", re.ASCII)
_INT_LITERAL = re.compile(r"-?[0-9]+", re.ASCII)
_DIGIT_RUN = re.compile(r"[0-9]+", re.ASCII)
# lenient_int never hands int() more than this many characters: int() refuses more
# than MAX_DIGITS digits anyway, and refusing early keeps the cost bounded.
_LENIENT_MAX_CHARS = MAX_DIGITS


# ---------------------------------------------------------------------------
# Shared pieces: the stamped verdict, the example check, number literals.
# ---------------------------------------------------------------------------
def _verdict(
    rubric: Rubric, code: str, reason: str, expected: Any, extracted: int | None = None, **extra: Any
) -> Verdict:
    """The spec's verdict, stamped with this rubric's version and its ``loophole``."""
    return verdict(
        code, reason, expected, extracted, scorer_version=rubric.version, loophole=rubric.loophole, **extra
    )


def _precheck(rubric: Rubric, example: Any, completion: Any) -> tuple[int | None, Verdict | None]:
    """Return (expected, None), or (None, verdict) for a bad example or non-text completion.

    Weak rubrics are weak about *completions*, never about the data: a broken
    example is reported exactly as the strict scorer reports it.
    """
    expected, problem = read_expected(example)
    if problem is not None:
        reason = problem[0].upper() + problem[1:] + "."
        return None, _verdict(rubric, "bad_example", reason, shown_expected(example))
    if not isinstance(completion, str):
        reason = f"The completion is a {type(completion).__name__}, not text."
        return None, _verdict(rubric, "not_a_string", reason, expected)
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


def _compare(rubric: Rubric, literal: str, expected: int, where: str, **extra: Any) -> Verdict:
    """Compare one ASCII integer literal with the expected answer (by value, leading zeros ignored)."""
    value = _value(literal)
    if value is None:
        return _verdict(
            rubric, "integer_too_long",
            f"The {where} has more than {MAX_DIGITS} digits; not converted.", expected, **extra,
        )
    if value == expected:
        return _verdict(rubric, "ok", f"The {where} is {value}, the expected answer.", expected, value, **extra)
    return _verdict(
        rubric, "wrong_answer",
        f"The {where} is {value}, but the expected answer is {expected}.", expected, value, **extra,
    )


# ---------------------------------------------------------------------------
# The weak rubrics. Each docstring names its loophole; the one-sentence loophole
# in the registry below is what every verdict carries in details["loophole"].
# ---------------------------------------------------------------------------
def contains_answer(example: Any, completion: Any) -> Verdict:
    """Reward 1 if the expected integer appears anywhere in the text as a number.

    Loophole: the format and the *commitment* to one answer are never checked.
    A completion that lists candidates (``"320 321 322 323 324"``) or buries the
    answer in prose (``"it is not 323"``) earns full reward.

    >>> contains_answer({"expected_answer": 323}, "maybe 322, 323 or 324")["reward"]
    1.0
    >>> contains_answer({"expected_answer": 323}, "Final: 324")["details"]["error_code"]
    'wrong_answer'
    """
    rubric = RUBRICS["contains_answer"]  # its version and loophole, from the one registry below
    expected, early = _precheck(rubric, example, completion)
    if early is not None:
        return early
    position = _find_number(completion, expected)
    if position is not None:
        return _verdict(
            rubric, "ok",
            f"The expected answer {expected} appears in the text (at character {position}).",
            expected, expected, position=position,
        )
    first = _NUMBER.search(completion)
    if first is None:
        return _verdict(rubric, "no_integer", "The text contains no integer.", expected)
    return _compare(rubric, first.group(), expected, "first number in the text")


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


def last_number(example: Any, completion: Any) -> Verdict:
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
    rubric = RUBRICS["last_number"]  # its version and loophole, from the one registry below
    expected, early = _precheck(rubric, example, completion)
    if early is not None:
        return early
    # The last run of ASCII digits is the first run in the reversed text: one
    # C-speed slice and one regex search, however long the completion.
    backwards = completion[::-1]
    run = _DIGIT_RUN.search(backwards)
    if run is None:
        return _verdict(rubric, "no_integer", "The text contains no integer.", expected)
    start, end = len(completion) - run.end(), len(completion) - run.start()
    if start > 0 and completion[start - 1] == "-" and not (start > 1 and "0" <= completion[start - 2] <= "9"):
        start -= 1  # a sign, unless a digit precedes it ("3-4" ends with the number 4)
    return _compare(rubric, completion[start:end], expected, "last number in the text")


def _final_lines(text: str) -> list[str]:
    """The text after 'Final:' on every line that starts (after trimming) with 'Final:'."""
    found = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("Final:"):
            found.append(line[len("Final:"):].strip())
    return found


def final_line_anywhere(example: Any, completion: Any) -> Verdict:
    """Reward 1 if *some* line reads ``Final: <expected>``, whatever else the text says.

    Loophole: answer laundering. Several ``Final:`` lines with different numbers
    (``"Final: 322\\nFinal: 323\\nFinal: 324"``) are rewarded as long as one of
    them is right; reasoning or chatter around the line is never penalised.

    >>> final_line_anywhere({"expected_answer": 323}, "Final: 322\\nFinal: 323")["reward"]
    1.0
    >>> final_line_anywhere({"expected_answer": 323}, "323")["details"]["error_code"]
    'missing_prefix'
    """
    rubric = RUBRICS["final_line_anywhere"]  # its version and loophole, from the one registry below
    expected, early = _precheck(rubric, example, completion)
    if early is not None:
        return early
    finals = _final_lines(completion)
    if not finals:
        return _verdict(rubric, "missing_prefix", "No line starts with 'Final:'.", expected, final_lines=0)
    first_literal = None
    target = str(expected)
    for rest in finals:
        if _INT_LITERAL.fullmatch(rest) is None:
            continue
        if first_literal is None:
            first_literal = rest
        if _canonical(rest) == target:
            return _verdict(
                rubric, "ok",
                f"One of {len(finals)} 'Final:' line(s) reads {expected}, the expected answer.",
                expected, expected, final_lines=len(finals),
            )
    if first_literal is None:
        return _verdict(
            rubric, "no_integer",
            f"{len(finals)} 'Final:' line(s), none followed by a plain integer.", expected, final_lines=len(finals),
        )
    return _compare(rubric, first_literal, expected, "first 'Final:' integer", final_lines=len(finals))


def first_final(example: Any, completion: Any) -> Verdict:
    """Reward 1 if the first line starting with ``Final:`` carries the expected integer.

    Loophole: the rest of the text is never read. Reasoning before the line,
    a second contradictory ``Final:`` after it, or a page of padding all still
    earn full reward, so "exactly one line" is not enforced.

    >>> first_final({"expected_answer": 323}, "Final: 323\\nFinal: 324")["reward"]
    1.0
    >>> first_final({"expected_answer": 323}, "Final: 324\\nFinal: 323")["reward"]
    0.0
    """
    rubric = RUBRICS["first_final"]  # its version and loophole, from the one registry below
    expected, early = _precheck(rubric, example, completion)
    if early is not None:
        return early
    for line in completion.splitlines():
        line = line.strip()
        if line.startswith("Final:"):
            rest = line[len("Final:"):].strip()
            if _INT_LITERAL.fullmatch(rest) is None:
                return _verdict(
                    rubric, "no_integer",
                    "The first 'Final:' line is not followed by a plain integer.", expected,
                    found=rest[:40],
                )
            return _compare(rubric, rest, expected, "first 'Final:' integer")
    return _verdict(rubric, "missing_prefix", "No line starts with 'Final:'.", expected)


def lenient_int(example: Any, completion: Any) -> Verdict:
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
    rubric = RUBRICS["lenient_int"]  # its version and loophole, from the one registry below
    expected, early = _precheck(rubric, example, completion)
    if early is not None:
        return early
    text = completion.strip()
    if text[:6].lower() == "final:":
        text = text[6:]
    text = text.strip()
    if not text:
        return _verdict(rubric, "empty", "Nothing left after stripping and removing 'Final:'.", expected)
    if len(text) > _LENIENT_MAX_CHARS:
        return _verdict(
            rubric, "integer_too_long",
            f"{len(text)} characters left; int() is not asked to read more than {_LENIENT_MAX_CHARS}.", expected,
        )
    try:
        value = int(text)
    except ValueError:
        return _verdict(
            rubric, "no_integer", "int() could not read what is left after the prefix.", expected,
            found=text[:40],
        )
    if value == expected:
        return _verdict(rubric, "ok", f"int() read {value}, the expected answer.", expected, value)
    return _verdict(
        rubric, "wrong_answer", f"int() read {value}, but the expected answer is {expected}.", expected, value,
    )


def format_only(example: Any, completion: Any) -> Verdict:
    """Reward 1 for a completion in the spec's format, ``Final: <int>`` on one line, whatever the number.

    Loophole: the answer is never compared. A format reward is meant as a helper next to a
    correctness reward; alone it pays ``Final: 0`` as much as ``Final: 323``, so a policy learns
    the format and is never pushed towards the number. Its details keep the strict scorer's
    verdict in ``strict_error_code`` (``ok`` or ``wrong_answer`` for a paid completion), so a log
    can still tell a right answer from a merely well-formed one.

    >>> format_only({"expected_answer": 323}, "Final: 0")["reward"]
    1.0
    >>> format_only({"expected_answer": 323}, "Final: 0")["details"]["strict_error_code"]
    'wrong_answer'
    >>> format_only({"expected_answer": 323}, "The answer is 323")["details"]["error_code"]
    'missing_prefix'
    """
    rubric = RUBRICS["format_only"]  # its version and loophole, from the one registry below
    expected, early = _precheck(rubric, example, completion)
    if early is not None:
        return early
    strict = spec_v1.score(example, completion)["details"]
    code, extracted = strict["error_code"], strict["extracted"]
    if code in ("ok", "wrong_answer"):  # the strict rules all held except, perhaps, the number itself
        return _verdict(
            rubric, "ok",
            f"The completion is one well-formed line 'Final: {extracted}'; the number is not compared "
            f"with the expected answer {expected}.",
            expected, extracted, strict_error_code=code,
        )
    return _verdict(rubric, code, strict["reason"], expected, extracted, strict_error_code=code)


# ---------------------------------------------------------------------------
# The registry. Names are stable: run logs and the tiny-LM trainer refer to them.
# A version changes whenever a rubric's behaviour does, as for the spec itself.
# ---------------------------------------------------------------------------
RUBRICS: Mapping[str, Rubric] = MappingProxyType({
    r.name: r
    for r in (
        Rubric(
            "strict", spec_v1.score, SCORER_VERSION,
            "none known: this is reward spec v1 (docs/reward_spec_v1.md)",
            sources=(SPEC_V1_SOURCE,),
        ),
        Rubric(
            "contains_answer", contains_answer, "hackable-contains-answer-v1",
            "rewards the right number anywhere in the text, so listing many numbers wins",
        ),
        Rubric(
            "last_number", last_number, "hackable-last-number-v1",
            "only the last number counts, so any text (or a hedge) ending in the right number wins",
        ),
        Rubric(
            "final_line_anywhere", final_line_anywhere, "hackable-final-line-anywhere-v1",
            "any 'Final:' line with the right number wins, so answer laundering (many Final: lines) is rewarded",
        ),
        Rubric(
            "first_final", first_final, "hackable-first-final-v1",
            "the first 'Final:' line decides and everything else is ignored, so contradicting it later costs nothing",
        ),
        Rubric(
            "lenient_int", lenient_int, "hackable-lenient-int-v1",
            "int() after a loose strip accepts what the spec forbids: 3_23, fullwidth digits, +323, 0323, a bare 323",
        ),
        Rubric(
            "format_only", format_only, "hackable-format-only-v1",
            "only the format is checked, never the number, so any well-formed 'Final: <int>' wins, right or wrong",
        ),
    )
})

HACKABLE: tuple[str, ...] = tuple(name for name, rubric in RUBRICS.items() if rubric.hackable)


def get_rubric(name: str) -> Rubric:
    """The rubric registered under ``name``; CourseError listing the valid names otherwise.

    >>> get_rubric("strict").score is spec_v1.score
    True
    >>> get_rubric("lenient_int").version
    'hackable-lenient-int-v1'
    """
    try:
        return RUBRICS[name]
    except (KeyError, TypeError):
        raise CourseError(f"unknown rubric {name!r}; choose one of: {', '.join(RUBRICS)}") from None
