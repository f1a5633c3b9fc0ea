"""The measurement instrument: the strict ``Final: <int>`` verifier (reward spec v1).

This module owns one contract that every other tool in the course uses::

    score(example, completion) -> {"reward": float, "details": dict}

It rewards (1.0) exactly one kind of completion: after removing leading and
trailing ASCII whitespace, a single line ``Final: <int>`` whose integer, written
in canonical base-10 ASCII, equals ``example["expected_answer"]``. Everything
else gets 0.0 and an ``error_code`` that says *why*. The normative rules, with an
example for each, are in ``docs/reward_spec_v1.md``; the tests in
``tests/test_score.py`` and the golden suites under ``data/golden/`` enforce them.

Properties the rest of the course relies on:
  * pure: no I/O, no randomness, no network; the completion is only ever read
    as text, never evaluated or executed;
  * total: no input raises (non-strings, malformed examples, 10 MB strings,
    integers with more digits than ``int()`` will parse);
  * linear time: one strip, one anchored regex, and on failure a bounded
    diagnosis; no pattern here can backtrack super-linearly;
  * explainable: ``details`` always carries ``scorer_version``, ``error_code``,
    ``parsed``, ``extracted``, ``expected`` and a one-sentence ``reason``.

Run it on one string::

    python -m course.score --expected 323 "Final: 323"
    python -m course.score --expected 323 "Final:323"      # prefix_spacing, reward 0
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from pathlib import Path
from typing import Any, Mapping

SCORER_VERSION = "strict-final-v1"

# ---------------------------------------------------------------------------
# The enumerated error codes. Every verdict carries exactly one of these.
# Order follows the order in which the rules are checked (first failure wins).
# ---------------------------------------------------------------------------
ERROR_CODES: dict[str, str] = {
    "ok": "exactly one line 'Final: <int>' with the expected integer",
    "bad_example": "the example has no usable integer expected_answer (a data bug, not a model failure)",
    "not_a_string": "the completion is not text (None, bytes, a number, ...)",
    "empty": "nothing left after trimming ASCII whitespace",
    "multiple_lines": "a line boundary inside the trimmed completion",
    "invisible_char": "an invisible or formatting character (zero-width space, BOM, soft hyphen, ...)",
    "lookalike_char": "a Unicode look-alike of a character the format needs (colon, space, letters)",
    "prefix_case": "'Final' spelled with other capitalisation",
    "prefix_spacing": "not exactly one ASCII space between 'Final:' and the number",
    "missing_prefix": "the line does not start with 'Final: '",
    "no_integer": "nothing that starts like an integer after 'Final: '",
    "non_ascii_digit": "digits from another script (fullwidth, Arabic-Indic, superscript, ...)",
    "lookalike_minus": "a minus-like sign that is not ASCII '-' (U+2212 and kin)",
    "plus_sign": "an explicit '+' sign",
    "leading_zero": "a leading zero (only '0' itself may start with 0)",
    "negative_zero": "'-0', which is not a canonical integer",
    "digit_separator": "'_' or ',' inside the number",
    "not_integer": "a decimal point or exponent: not an integer literal",
    "trailing_text": "something after the integer (punctuation, units, words)",
    "integer_too_long": "more digits than the verifier will convert (see MAX_DIGITS)",
    "wrong_answer": "a well-formed answer with the wrong integer",
    "missing_completion": "no completion was supplied for this example (set by course.eval --allow-missing)",
}

# Python refuses int() on strings of more than 4300 digits by default; we never ask it to.
MAX_DIGITS = 4300
_MAX_EXPECTED = 10**MAX_DIGITS
_MISSING = object()

# Rule 2: the only normalisation. These six ASCII characters are "whitespace";
# NBSP, U+2028 and every other Unicode space are *not* trimmed: they are
# look-alikes and are reported as such.
ASCII_WHITESPACE = " \t\n\r\x0b\x0c"

PREFIX = "Final: "

# Above this length (characters) a multi-line completion is not split to count its lines.
_COUNT_LINES_UP_TO = 1_000_000

# Everything str.splitlines() treats as a line boundary (rule 4).
_LINE_BREAK = re.compile("[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")

# The happy path: one anchored pattern, no nested quantifiers, so matching is linear.
# '0', or an optional '-' then a non-zero digit then digits: this excludes '-0' and '007'.
_CANONICAL = re.compile(r"Final: (0|-?[1-9][0-9]*)", re.ASCII)
_CANONICAL_INT = re.compile(r"0|-?[1-9][0-9]*", re.ASCII)
_EXPONENT = re.compile(r"[eE][+-]?[0-9]", re.ASCII)
_ASCII_NUMBER_HEAD = re.compile(r"[+-]?[0-9]+", re.ASCII)

# Invisible "format" characters (Unicode category Cf, as of Unicode 14): zero-width
# space and joiners, bidi controls, the BOM, the soft hyphen, tag characters.
# A fixed table rather than unicodedata, so verdicts do not shift with the Python version.
_INVISIBLE = re.compile(
    "[\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f"
    "\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd"
    "\U00013430-\U00013438\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f]"
)
# Space separators other than the ASCII space (Unicode category Zs): NBSP, thin space, ideographic space...
_UNICODE_SPACES = frozenset("\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000")
# A digit that is not ASCII 0-9: any Unicode decimal digit (\d without re.ASCII) or a
# superscript/subscript/circled digit, which int() rejects but a reader sees as a number.
_FOREIGN_DIGIT = re.compile(
    "(?![0-9])\\d|[\u00b2\u00b3\u00b9\u2070\u2074-\u2079\u2080-\u2089\u2460-\u2473\u24ea-\u24ff\u2776-\u2793]"
)

_MINUS_LOOKALIKES = frozenset(
    "\u2212\u2010\u2011\u2012\u2013\u2014\u2015\u02d7\u2796\ufe58\ufe63\uff0d"
)
_COLON_LOOKALIKES = frozenset("\uff1a\u2236\ua789\u02d0\u02f8\ufe13\ufe55\u0589\u05c3\u16ec")


def _char_name(ch: str) -> str:
    return f"U+{ord(ch):04X} {unicodedata.name(ch, 'UNNAMED')}"


def _preview(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def _verdict(
    code: str,
    reason: str,
    expected: Any,
    extracted: int | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """Build the result dict. The reward is derived from the code, never set by hand."""
    details = {
        "scorer_version": SCORER_VERSION,
        "error_code": code,
        "parsed": extracted is not None,
        "extracted": extracted,
        "expected": expected,
        "reason": reason,
    }
    if extra:
        details.update(extra)
    return {"reward": 1.0 if code == "ok" else 0.0, "details": details}


# ---------------------------------------------------------------------------
# The example side (rule 9): the scorer must survive bad data as well as bad completions.
# ---------------------------------------------------------------------------
def _read_expected(example: Any) -> tuple[int | None, str | None]:
    """Return (expected, None) or (None, why the example is unusable)."""
    if type(example) is dict:  # fast path: every example read from JSONL is a plain dict
        expected = example.get("expected_answer", _MISSING)
        if type(expected) is int and -_MAX_EXPECTED < expected < _MAX_EXPECTED:
            return expected, None
    if not isinstance(example, Mapping):
        return None, f"the example is a {type(example).__name__}, not a mapping"
    try:
        expected = example["expected_answer"]
    except KeyError:
        return None, "the example has no 'expected_answer' field"
    except Exception as exc:  # a hostile Mapping whose lookup raises
        return None, f"reading 'expected_answer' failed ({type(exc).__name__})"
    # bool is a subclass of int in Python; True is not an answer.
    if type(expected) is not int:
        return None, (
            f"'expected_answer' must be an integer, got {type(expected).__name__}"
        )
    if not -_MAX_EXPECTED < expected < _MAX_EXPECTED:
        return None, "'expected_answer' is too large for this verifier"
    return expected, None


def _shown_expected(example: Any) -> Any:
    """The raw expected_answer, if it can be shown in JSON as it is; else its repr (short)."""
    try:
        raw = example.get("expected_answer") if isinstance(example, Mapping) else None
    except Exception:
        return None
    if raw is None or isinstance(raw, (bool, str, float)):
        return raw if not isinstance(raw, str) else _preview(raw)
    if type(raw) is int and -_MAX_EXPECTED < raw < _MAX_EXPECTED:
        return raw
    try:
        return _preview(repr(raw))
    except Exception:
        return None


# ---------------------------------------------------------------------------
# The contract.
# ---------------------------------------------------------------------------
def score(example: Any, completion: Any) -> dict[str, Any]:
    """Score one completion against one example under reward spec v1.

    >>> score({"expected_answer": 323}, "Final: 323")["reward"]
    1.0
    >>> score({"expected_answer": 323}, "Final: 324")["details"]["error_code"]
    'wrong_answer'
    >>> score({"expected_answer": 323}, "Final:323")["details"]["error_code"]
    'prefix_spacing'
    >>> score({"expected_answer": -7}, "  Final: -7\\n")["reward"]
    1.0
    """
    expected, problem = _read_expected(example)
    if problem is not None:
        return _verdict("bad_example", problem[0].upper() + problem[1:] + ".", _shown_expected(example))

    # Rule 1: text only.
    if not isinstance(completion, str):
        return _verdict(
            "not_a_string",
            f"The completion is a {type(completion).__name__}, not text.",
            expected,
        )

    # Rule 2: the only normalisation is trimming ASCII whitespace at both ends.
    text = completion.strip(ASCII_WHITESPACE)

    # Fast path: the overwhelmingly common well-formed case is one regex call.
    m = _CANONICAL.fullmatch(text)
    if m is not None:
        return _compare(m.group(1), expected)
    return _diagnose(text, expected)


def _compare(digits: str, expected: int) -> dict[str, Any]:
    """Rules 7 and 8: compare a canonical integer literal with the expected answer."""
    n_digits = len(digits) - (digits[0] == "-") if len(digits) > MAX_DIGITS else 0
    if n_digits > MAX_DIGITS:
        return _verdict(
            "integer_too_long",
            f"The answer has {n_digits} digits; integers over {MAX_DIGITS} digits are out of scope.",
            expected,
            n_digits=n_digits,
        )
    value = int(digits)
    if value == expected:
        return _verdict("ok", "Exactly one line 'Final: <int>' with the expected integer.", expected, value)
    return _verdict(
        "wrong_answer",
        f"Well-formed answer {value}, but the expected answer is {expected}.",
        expected,
        value,
    )


def _diagnose(text: str, expected: int) -> dict[str, Any]:
    """Name the first rule the trimmed completion breaks. Only runs on failures."""
    # Rule 3.
    if not text:
        return _verdict("empty", "The completion is empty after trimming whitespace.", expected)

    # Rule 4: one line. Count the lines that would have passed on their own, to
    # expose answer laundering ("Final: 1\nFinal: 2\n..."). Counting is skipped for
    # huge texts so the cost stays one linear regex scan.
    if _LINE_BREAK.search(text) is not None:
        if len(text) > _COUNT_LINES_UP_TO:
            return _verdict(
                "multiple_lines",
                "The completion spans more than one line; exactly one line is allowed.",
                expected,
                n_lines=None,
                final_lines=None,
            )
        lines = text.splitlines()
        final_lines = sum(1 for line in lines if _CANONICAL.fullmatch(line.strip(ASCII_WHITESPACE)))
        return _verdict(
            "multiple_lines",
            f"The completion has {len(lines)} lines ({final_lines} of them a valid 'Final:' line); "
            "exactly one line is allowed.",
            expected,
            n_lines=len(lines),
            final_lines=final_lines,
        )

    # Invisible characters anywhere: report the first, with its position.
    # Pure-ASCII text cannot hold one (str.isascii is O(1) in CPython).
    if not text.isascii():
        hidden = _INVISIBLE.search(text)
        if hidden is not None:
            ch = hidden.group()
            return _verdict(
                "invisible_char",
                f"Invisible character {_char_name(ch)} at position {hidden.start()}.",
                expected,
                char=_char_name(ch),
                position=hidden.start(),
            )

    # Rule 5: the prefix, exactly 'Final: '.
    if not text.startswith(PREFIX):
        return _diagnose_prefix(text, expected)

    # Rule 6: a canonical base-10 ASCII integer and nothing else.
    return _diagnose_integer(text[len(PREFIX):], expected)


def _diagnose_prefix(text: str, expected: int) -> dict[str, Any]:
    head = text[:16]
    if text.startswith("Final:"):
        after = text[6:7]
        if after == "":
            return _verdict("no_integer", "'Final:' is followed by nothing.", expected)
        if after in ASCII_WHITESPACE:  # a tab, or the second of two spaces
            return _verdict(
                "prefix_spacing",
                "After 'Final:' there must be exactly one ASCII space, then the number.",
                expected,
                found=_preview(text),
            )
        if after in _UNICODE_SPACES:
            return _verdict(
                "lookalike_char",
                f"After 'Final:' comes {_char_name(after)}, a look-alike of the ASCII space.",
                expected,
                char=_char_name(after),
                position=6,
            )
        return _verdict(
            "prefix_spacing",
            "'Final:' must be followed by one ASCII space; here the number is glued to the colon.",
            expected,
            found=_preview(text),
        )
    if text.startswith("Final"):
        nxt = text[5:6]
        if nxt in _COLON_LOOKALIKES:
            return _verdict(
                "lookalike_char",
                f"'Final' is followed by {_char_name(nxt)}, a look-alike of the ASCII colon.",
                expected,
                char=_char_name(nxt),
                position=5,
            )
        if nxt and nxt in ASCII_WHITESPACE and text[5:].lstrip(ASCII_WHITESPACE)[:1] == ":":
            return _verdict(
                "prefix_spacing",
                "There must be no space between 'Final' and the colon.",
                expected,
                found=_preview(text),
            )
    if text[0] in _UNICODE_SPACES:
        return _verdict(
            "lookalike_char",
            f"The completion starts with {_char_name(text[0])}; only ASCII whitespace is trimmed.",
            expected,
            char=_char_name(text[0]),
            position=0,
        )
    folded = unicodedata.normalize("NFKC", head)
    if folded.startswith("Final") and not head.startswith("Final"):
        return _verdict(
            "lookalike_char",
            "The prefix uses Unicode look-alike letters instead of ASCII 'Final'.",
            expected,
            found=_preview(text),
        )
    if folded[:5].lower() == "final":
        return _verdict(
            "prefix_case",
            f"The prefix is '{_preview(text, 6)}'; it must be 'Final' with exactly that capitalisation.",
            expected,
            found=_preview(text),
        )
    return _verdict(
        "missing_prefix",
        "The line does not start with 'Final: '.",
        expected,
        found=_preview(text),
    )


def _lenient_value(literal: str) -> int | None:
    """What a lenient parser (Python's int()) would have read: shows a format slip vs a wrong number."""
    if len(literal) > 64:
        return None
    try:
        return int(literal.replace(",", ""))
    except ValueError:
        return None


def _diagnose_integer(rest: str, expected: int) -> dict[str, Any]:
    found = _preview(rest)
    if not rest:
        return _verdict("no_integer", "Nothing follows 'Final: '.", expected)
    if rest[0] in ASCII_WHITESPACE:
        return _verdict(
            "prefix_spacing",
            "More than one space between 'Final:' and the number; exactly one ASCII space is allowed.",
            expected,
            found=found,
        )
    if rest[0] in _UNICODE_SPACES:
        return _verdict(
            "lookalike_char",
            f"{_char_name(rest[0])} after 'Final: ', a look-alike of the ASCII space.",
            expected,
            char=_char_name(rest[0]),
            position=len(PREFIX),
        )

    if not rest.isascii():
        first = rest[0]
        if first in _MINUS_LOOKALIKES:
            return _verdict(
                "lookalike_minus",
                f"The sign is {_char_name(first)}, not the ASCII hyphen-minus '-'.",
                expected,
                char=_char_name(first),
                found=found,
                lenient_value=_lenient_value("-" + rest[1:].strip(ASCII_WHITESPACE)),
            )
        foreign = _FOREIGN_DIGIT.search(rest)
        if foreign is not None:
            ch = foreign.group()
            return _verdict(
                "non_ascii_digit",
                f"{_char_name(ch)} is a digit from another script; only ASCII 0-9 count.",
                expected,
                char=_char_name(ch),
                position=len(PREFIX) + foreign.start(),
                found=found,
                lenient_value=_lenient_value(rest),
            )

    head = _ASCII_NUMBER_HEAD.match(rest)
    if head is None:
        return _verdict(
            "no_integer",
            f"'Final: ' is followed by '{_preview(rest, 12)}', which does not start with an integer.",
            expected,
            found=found,
        )
    literal = head.group(0)
    tail = rest[head.end():]
    if literal.startswith("+"):
        return _verdict(
            "plus_sign", "A '+' sign is not allowed; write the number bare.", expected,
            found=found, lenient_value=_lenient_value(literal) if not tail else None,
        )
    if tail[:1] in ("_", ",") and tail[1:2].isdigit():
        return _verdict(
            "digit_separator",
            f"'{tail[0]}' inside the number; write the digits without separators.",
            expected,
            found=found,
            lenient_value=_lenient_value(rest) if rest.replace(",", "").replace("_", "").lstrip("-").isdigit() else None,
        )
    if (tail[:1] == "." and tail[1:2].isdigit()) or _EXPONENT.match(tail):
        return _verdict(
            "not_integer",
            "A decimal point or exponent: the answer must be an integer literal.",
            expected,
            found=found,
        )
    if not _CANONICAL_INT.fullmatch(literal):
        if literal in ("-0",) or literal.lstrip("-").strip("0") == "" and literal.startswith("-"):
            return _verdict("negative_zero", "'-0' is not canonical; write 0.", expected, found=found)
        return _verdict(
            "leading_zero",
            f"'{_preview(literal, 12)}' has a leading zero; only 0 itself may start with 0.",
            expected,
            found=found,
            lenient_value=_lenient_value(literal) if not tail else None,
        )
    if tail and tail[0] in _UNICODE_SPACES and not tail.strip():
        return _verdict(
            "lookalike_char",
            f"{_char_name(tail[0])} after the number; only ASCII whitespace is trimmed.",
            expected,
            char=_char_name(tail[0]),
            found=found,
        )
    if tail:
        return _verdict(
            "trailing_text",
            f"Text after the integer: '{_preview(tail, 12)}'. Nothing may follow the number.",
            expected,
            found=found,
            lenient_value=_lenient_value(literal),
        )
    # Unreachable: a canonical literal with no tail would have matched the fast path.
    return _compare(literal, expected)  # pragma: no cover


# ---------------------------------------------------------------------------
# Provenance: which instrument produced a run.
# ---------------------------------------------------------------------------
def scorer_fingerprint() -> str:
    """sha256 of this file's bytes: two runs with equal fingerprints used the same scorer code."""
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()


def main(argv: list[str] | None = None) -> int:
    import json
    import sys

    from course.cli import make_parser, run

    def _main(args_in):  # type: ignore[no-untyped-def]
        parser = make_parser(
            "python -m course.score",
            "Score one completion with the strict verifier and print reward and details as JSON.",
            '  python -m course.score --expected 323 "Final: 323"\n'
            '  python -m course.score --expected 323 "Final:323"   # reward 0.0, error_code prefix_spacing\n'
            '  printf "Final: -4\\n" | python -m course.score --expected -4 -   # read the completion from stdin',
        )
        parser.add_argument("--expected", type=int, required=True, help="the example's expected_answer")
        parser.add_argument("completion", help="the completion text, or - to read it from stdin")
        parser.add_argument("--version", action="version", version=f"{SCORER_VERSION} {scorer_fingerprint()[:12]}")
        args = parser.parse_args(args_in)
        completion = sys.stdin.read() if args.completion == "-" else args.completion
        result = score({"expected_answer": args.expected}, completion)
        print(json.dumps(result, ensure_ascii=False, indent=2))
        return 0 if result["reward"] == 1.0 else 1

    return run(_main, argv)


if __name__ == "__main__":
    raise SystemExit(main())
