"""Reward spec v1: the rules of the strict ``Final: <int>`` verifier, and nothing else.

This module *is* the measurement instrument. It owns one contract that every
other part of the course uses::

    score(example, completion) -> Verdict   # {"reward": float, "details": dict}

It rewards (1.0) exactly one kind of completion: after removing leading and
trailing ASCII whitespace, a single line ``Final: <int>`` whose integer, written
in canonical base-10 ASCII, equals ``example["expected_answer"]``. Everything
else gets 0.0 and an ``error_code`` that says *why*. The normative rules, with an
example for each, are in ``docs/reward_spec_v1.md``; the tests in
``tests/test_score.py`` and the golden suites under ``data/golden/`` enforce them
(``python -m course.golden``).

Why it holds nothing else: the scorer fingerprint recorded in every run is the
sha256 of this file's bytes (``course.instrument.rubrics.scorer_fingerprint``).
Only code that decides a verdict lives here, so the fingerprint changes when a
rule could have changed and never because a help text or a command line did.
The command line is ``course/score.py``; the fingerprint function and the
rubric registry are ``course/instrument/rubrics.py``. This file imports the
standard library only (``tests/test_architecture.py`` checks it).

Properties the rest of the course relies on:
  * pure: no I/O, no randomness, no network; the completion is only ever read
    as text, never evaluated or executed;
  * total: no input raises (non-strings, malformed or hostile examples, 10 MB
    strings, integers with more digits than ``int()`` will parse);
  * linear time: one strip, one anchored regex, and on failure a diagnosis made
    of single scans; no pattern here can backtrack super-linearly;
  * explainable: ``details`` always carries ``scorer_version``, ``error_code``,
    ``parsed``, ``extracted``, ``expected`` and a one-sentence ``reason``.

Public names: ``score``, ``Verdict`` and its one builder ``verdict`` (the
hackable rubrics and the kata's draft scorer build theirs with it too),
``read_expected``/``shown_expected`` (rule 9, the example side),
``SCORER_VERSION``, ``ERROR_CODES``, ``MAX_DIGITS``, ``ASCII_WHITESPACE``,
``PREFIX``. Everything with a leading underscore is private to the rules.

How to read it: ``score`` is the whole happy path (about ten lines). When the
one regex does not match, ``_diagnose`` walks the rules in spec order and names
the first one broken; that part is long only because it explains itself.

Run it on one string::

    python -m course.score --expected 323 "Final: 323"
    python -m course.score --expected 323 "Final:323"      # prefix_spacing, reward 0
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any, Mapping, TypedDict

SCORER_VERSION = "strict-final-v1"

# ---------------------------------------------------------------------------
# The enumerated error codes. Every verdict carries exactly one of these.
# Listed in the order the rules are checked (first failure wins); lookalike_char,
# prefix_spacing and no_integer can also come up again later in the line.
# docs/reward_spec_v1.md has the same table; a test keeps the two equal.
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
    "lookalike_minus": "a minus-like sign that is not ASCII '-' (U+2212 and kin)",
    "non_ascii_digit": "digits from another script (fullwidth, Arabic-Indic, superscript, ...)",
    "plus_sign": "an explicit '+' sign",
    "digit_separator": "a separator inside the number ('_', ',', an apostrophe, or a space before a group of three digits)",
    "not_integer": "a decimal point, exponent or fraction: not an integer literal",
    "negative_zero": "'-0', which is not a canonical integer",
    "leading_zero": "a leading zero (only '0' itself may start with 0)",
    "trailing_text": "something after the integer (punctuation, units, words)",
    "integer_too_long": "more digits than the verifier will convert (see MAX_DIGITS)",
    "wrong_answer": "a well-formed answer with the wrong integer",
    "missing_completion": "no completion was supplied for this example (set by course.eval --allow-missing)",
}

# Rule 7. Python refuses int() on strings of more than 4300 digits by default
# (sys.get_int_max_str_digits); integers longer than this are out of scope.
MAX_DIGITS = 4300
_MAX_EXPECTED = 10**MAX_DIGITS  # |expected_answer| must be below this (at most MAX_DIGITS digits)
_MIN_EXPECTED = -_MAX_EXPECTED  # precomputed: negating a 4300-digit int on every call costs time
_MISSING = object()

# Rule 2: the only normalisation. These six ASCII characters are "whitespace":
# space, tab, LF, CR, VT, FF. NBSP and every other Unicode space are *not*
# trimmed: they are look-alikes and are reported as such.
ASCII_WHITESPACE = " \t\n\r\x0b\x0c"

PREFIX = "Final: "

# Above this length (characters) a multi-line completion is not split to count
# its lines: the verdict is the same, only n_lines/final_lines are left null.
_COUNT_LINES_UP_TO = 1_000_000

# Rule 4: everything str.splitlines() treats as a line boundary.
_LINE_BREAK = re.compile("[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")

# The happy path: one anchored pattern, no nested quantifiers, so matching is linear.
# '0', or an optional '-' then a non-zero digit then digits: this excludes '-0' and '007'.
# [0-9] (not \d) because \d would also match '３' and '٣'.
_CANONICAL = re.compile(r"Final: (0|-?[1-9][0-9]*)")
_CANONICAL_INT = re.compile(r"0|-?[1-9][0-9]*")
# The start of a number in ASCII: optional sign, then digits (possibly none).
_ASCII_NUMBER_HEAD = re.compile(r"[+-]?[0-9]*")
# What makes a number "not an integer": .5, e2, E-3, /4 right after the digits.
_NOT_INTEGER_TAIL = re.compile(r"\.[0-9]|[eE][+-]?[0-9]|/[0-9]")
# A space used as a thousands separator: exactly three digits follow (as in '10 000').
_GROUP_OF_THREE = re.compile(r"[0-9]{3}(?![0-9])")

# ---------------------------------------------------------------------------
# Fixed Unicode tables (Unicode 14.0, the database of Python 3.11). They are
# written out rather than asked of ``unicodedata`` so that a verdict does not
# shift when a newer Python knows more characters. The property tests check
# each table against ``unicodedata`` when it is version 14.0.0.
# ---------------------------------------------------------------------------
# Invisible "format" characters (category Cf): soft hyphen, zero-width space and
# joiners, bidi controls such as the right-to-left override, the BOM, tag characters.
# Two classes, below and above U+FFFF: `re` tests a class that mixes both range by
# range, which made a 10 MB scan over twice as slow (see _find_invisible).
_INVISIBLE_BMP = re.compile(
    "[\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f"
    "\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb]"
)
_INVISIBLE_ASTRAL = re.compile(
    "[\U000110bd\U000110cd\U00013430-\U00013438\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0001\U000e0020-\U000e007f]"
)
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
# Space separators other than the ASCII space (category Zs): NBSP, the en/em/thin
# spaces, the narrow NBSP, the ideographic space, ...
_UNICODE_SPACE_CHARS = (
    "\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000"
)
_UNICODE_SPACES = frozenset(_UNICODE_SPACE_CHARS)
_ANY_SPACE = ASCII_WHITESPACE + _UNICODE_SPACE_CHARS
# Every character other than ASCII 0-9 for which str.isdigit() is true: the decimal
# digits of other scripts (Arabic-Indic, Devanagari, fullwidth, mathematical bold, ...)
# plus superscript, subscript and circled digits. int() accepts the first kind.
_OTHER_DIGIT = re.compile(
    "[\u00b2\u00b3\u00b9\u0660-\u0669\u06f0-\u06f9\u07c0-\u07c9\u0966-\u096f\u09e6-\u09ef"
    "\u0a66-\u0a6f\u0ae6-\u0aef\u0b66-\u0b6f\u0be6-\u0bef\u0c66-\u0c6f\u0ce6-\u0cef\u0d66-\u0d6f"
    "\u0de6-\u0def\u0e50-\u0e59\u0ed0-\u0ed9\u0f20-\u0f29\u1040-\u1049\u1090-\u1099\u1369-\u1371"
    "\u17e0-\u17e9\u1810-\u1819\u1946-\u194f\u19d0-\u19da\u1a80-\u1a89\u1a90-\u1a99\u1b50-\u1b59"
    "\u1bb0-\u1bb9\u1c40-\u1c49\u1c50-\u1c59\u2070\u2074-\u2079\u2080-\u2089\u2460-\u2468"
    "\u2474-\u247c\u2488-\u2490\u24ea\u24f5-\u24fd\u24ff\u2776-\u277e\u2780-\u2788\u278a-\u2792"
    "\ua620-\ua629\ua8d0-\ua8d9\ua900-\ua909\ua9d0-\ua9d9\ua9f0-\ua9f9\uaa50-\uaa59\uabf0-\uabf9"
    "\uff10-\uff19\U000104a0-\U000104a9\U00010a40-\U00010a43\U00010d30-\U00010d39"
    "\U00010e60-\U00010e68\U00011052-\U0001105a\U00011066-\U0001106f\U000110f0-\U000110f9"
    "\U00011136-\U0001113f\U000111d0-\U000111d9\U000112f0-\U000112f9\U00011450-\U00011459"
    "\U000114d0-\U000114d9\U00011650-\U00011659\U000116c0-\U000116c9\U00011730-\U00011739"
    "\U000118e0-\U000118e9\U00011950-\U00011959\U00011c50-\U00011c59\U00011d50-\U00011d59"
    "\U00011da0-\U00011da9\U00016a60-\U00016a69\U00016ac0-\U00016ac9\U00016b50-\U00016b59"
    "\U0001d7ce-\U0001d7ff\U0001e140-\U0001e149\U0001e2f0-\U0001e2f9\U0001e950-\U0001e959"
    "\U0001f100-\U0001f10a\U0001fbf0-\U0001fbf9]"
)

# Hand-picked look-alikes (after Unicode's confusables list, UTS #39). Not
# exhaustive: a look-alike missing here still gets reward 0, under another code.
_MINUS_LOOKALIKES = frozenset(
    "\u2212\u2010\u2011\u2012\u2013\u2014\u2015\u02d7\u2796\ufe58\ufe63\uff0d\u207b\u208b\u2043"
)
_COLON_LOOKALIKES = frozenset(
    "\uff1a\u2236\ua789\u02d0\u02f8\ufe13\ufe55\u0589\u05c3\u16ec\u205a\ua4fd\u0903\u0a83\u0703\u0704"
)
# Letters that pass for the letters of 'Final' (Cyrillic, Greek, Armenian, ...).
# Fullwidth and mathematical letters need no entry: NFKC folds them to ASCII.
_LETTER_LOOKALIKES = {
    **dict.fromkeys("\u03dc", "F"),  # Greek digamma
    **dict.fromkeys("\u0456\u0131\u03b9\u0269\ua647\u13a5", "i"),  # Cyrillic i, dotless i, iota, ...
    **dict.fromkeys("\u0578\u057c", "n"),  # Armenian vo, ra
    **dict.fromkeys("\u0430\u0251\u03b1\u237a", "a"),  # Cyrillic a, Latin alpha, Greek alpha, APL alpha
    **dict.fromkeys("\u04cf\u0406\u0399\u01c0\u05c0\u05d5\u2223\u2d4f\u16c1", "l"),  # palochka, iotas, bars
}


# ---------------------------------------------------------------------------
# Small helpers.
# ---------------------------------------------------------------------------
# Control characters have no Unicode name; these are their standard aliases.
_CONTROL_NAMES = {
    "\t": "CHARACTER TABULATION",
    "\n": "LINE FEED",
    "\x0b": "LINE TABULATION",
    "\x0c": "FORM FEED",
    "\r": "CARRIAGE RETURN",
    "\x1c": "INFORMATION SEPARATOR FOUR",
    "\x1d": "INFORMATION SEPARATOR THREE",
    "\x1e": "INFORMATION SEPARATOR TWO",
    "\x85": "NEXT LINE",
}


def _char_name(ch: str) -> str:
    """'U+00A0 NO-BREAK SPACE', 'U+0009 CHARACTER TABULATION', 'U+0001 <unnamed, category Cc>'."""
    name = unicodedata.name(ch, "") or _CONTROL_NAMES.get(ch) or f"<unnamed, category {unicodedata.category(ch)}>"
    return f"U+{ord(ch):04X} {name}"


def _type_name(obj: Any) -> str:
    """The name of obj's class, read from the type itself so that no user code runs."""
    return type.__dict__["__name__"].__get__(type(obj))


def _preview(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


# int() and str() of an int refuse more than sys.get_int_max_str_digits() digits:
# 4300 by default, but a user may lower it (to 640 at least). Converting in
# chunks of 600 digits keeps the verdict the same whatever that setting is.
_CHUNK = 600
_SHORT = 10**40  # integers below this are written out in full in a reason


def _int_of(literal: str) -> int:
    """int(literal) for a canonical literal ('-'? digits) of at most MAX_DIGITS digits."""
    negative = literal[0] == "-"
    digits = literal[1:] if negative else literal
    value = 0
    for start in range(0, len(digits), _CHUNK):
        chunk = digits[start:start + _CHUNK]
        value = value * 10 ** len(chunk) + int(chunk)
    return -value if negative else value


def _short_int(n: int) -> str:
    """An integer for a sentence: in full when short, else its size (never a 4300-digit reason)."""
    if -_SHORT < n < _SHORT:
        return str(n)
    return f"a {len(_digits_text(n))}-digit integer"


def _digits_text(n: int) -> str:
    """str(abs(n)) in chunks, independent of the int/str digit limit."""
    n = abs(n)
    if n < 10**_CHUNK:
        return str(n)
    parts = []
    while n:
        n, low = divmod(n, 10**_CHUNK)
        parts.append(str(low).zfill(_CHUNK))
    return "".join(reversed(parts)).lstrip("0")


# ---------------------------------------------------------------------------
# The verdict: one shape for the strict scorer and every rubric.
# ---------------------------------------------------------------------------
class Verdict(TypedDict):
    """What every scorer and rubric returns: a reward and the evidence for it.

    A plain dict at run time (TypedDict costs nothing on the hot path); the
    type only names the shape. Build one with ``verdict``, never by hand.
    """

    reward: float
    details: dict[str, Any]


def verdict(
    code: str,
    reason: str,
    expected: Any,
    extracted: int | None = None,
    *,
    scorer_version: str = SCORER_VERSION,
    **extra: Any,
) -> Verdict:
    """Build a verdict. The reward is derived from the code, never set by hand.

    ``details`` always opens with the same six fields in the same order
    (results files are compared byte for byte); ``extra`` fields follow in the
    order given. A rubric other than strict passes its own ``scorer_version``.

    >>> verdict("ok", "Fine.", 323, 323)["reward"]
    1.0
    >>> list(verdict("wrong_answer", "No.", 323, 324, scorer_version="mine", note="x")["details"])
    ['scorer_version', 'error_code', 'parsed', 'extracted', 'expected', 'reason', 'note']
    """
    details = {
        "scorer_version": scorer_version,
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
def read_expected(example: Any) -> tuple[int | None, str | None]:
    """Return (expected, None) or (None, why the example is unusable)."""
    if type(example) is dict:  # fast path: every example read from JSONL is a plain dict
        expected = example.get("expected_answer", _MISSING)
        if type(expected) is int and _MIN_EXPECTED < expected < _MAX_EXPECTED:
            return expected, None
    try:
        if not isinstance(example, Mapping):
            return None, f"the example is a {_type_name(example)}, not a mapping"
        expected = example["expected_answer"]
    except KeyError:
        return None, "the example has no 'expected_answer' field"
    except Exception as exc:  # a hostile Mapping whose lookup raises
        return None, f"reading 'expected_answer' failed ({type(exc).__name__})"
    # bool is a subclass of int in Python, but True is not an answer; nor is 323.0 or "323".
    if type(expected) is not int:
        return None, f"'expected_answer' must be an integer, got {_type_name(expected)}"
    if not _MIN_EXPECTED < expected < _MAX_EXPECTED:
        return None, f"'expected_answer' has more than {MAX_DIGITS} digits"
    return expected, None


def shown_expected(example: Any) -> Any:
    """The raw expected_answer for details["expected"] of a bad example, always JSON-safe."""
    try:
        raw = example.get("expected_answer") if isinstance(example, Mapping) else None
        if raw is None or type(raw) in (bool, str, int):
            if type(raw) is int and not _MIN_EXPECTED < raw < _MAX_EXPECTED:
                return f"<int with more than {MAX_DIGITS} digits>"
            return _preview(raw) if type(raw) is str else raw
        if type(raw) is float and raw - raw == 0.0:  # finite: NaN and inf are not JSON
            return raw
        return _preview(repr(raw))
    except Exception:  # a hostile object whose get() or repr() raises
        return None


# ---------------------------------------------------------------------------
# The contract.
# ---------------------------------------------------------------------------
def score(example: Any, completion: Any) -> Verdict:
    """Score one completion against one example under reward spec v1.

    >>> score({"expected_answer": 323}, "Final: 323")["reward"]
    1.0
    >>> score({"expected_answer": 323}, "Final: 324")["details"]["error_code"]
    'wrong_answer'
    >>> score({"expected_answer": 323}, "Final:323")["details"]["error_code"]
    'prefix_spacing'
    >>> score({"expected_answer": -7}, "  Final: -7\\r\\n")["reward"]
    1.0
    >>> score({"expected_answer": 323}, "Final: \\uff13\\uff12\\uff13")["details"]["reason"]
    'U+FF13 FULLWIDTH DIGIT THREE is a digit from another script; only ASCII 0-9 count.'
    """
    # Rule 9 first: a broken example is a data bug, whatever the completion says.
    expected, problem = read_expected(example)
    if problem is not None:
        return verdict("bad_example", problem[0].upper() + problem[1:] + ".", shown_expected(example))

    # Rule 1: text only. type() cannot be fooled (isinstance() may run user code).
    if type(completion) is not str:
        if not issubclass(type(completion), str):
            return verdict(
                "not_a_string",
                f"The completion is a {_type_name(completion)}, not text.",
                expected,
                completion_type=_type_name(completion),
            )
        completion = str.__str__(completion)  # a plain-str copy: subclass methods never run

    # Rule 2: the only normalisation is trimming ASCII whitespace at both ends.
    text = completion.strip(ASCII_WHITESPACE)

    # Fast path: the overwhelmingly common well-formed case is one regex call.
    m = _CANONICAL.fullmatch(text)
    if m is not None:
        return _compare(m.group(1), expected)
    # Where `text` starts inside `completion`, so positions index the completion as given.
    offset = len(completion) - len(completion.lstrip(ASCII_WHITESPACE))
    return _diagnose(text, expected, offset)


def _compare(literal: str, expected: int) -> Verdict:
    """Rules 7 and 8: compare a canonical integer literal with the expected answer."""
    n_digits = len(literal) - (literal[0] == "-")
    if n_digits > MAX_DIGITS:
        return verdict(
            "integer_too_long",
            f"The answer has {n_digits} digits; integers over {MAX_DIGITS} digits are out of scope.",
            expected,
            n_digits=n_digits,
        )
    value = int(literal) if n_digits <= _CHUNK else _int_of(literal)
    if value == expected:
        return verdict("ok", "Exactly one line 'Final: <int>' with the expected integer.", expected, value)
    return verdict(
        "wrong_answer",
        f"Well-formed answer {_short_int(value)}, but the expected answer is {_short_int(expected)}.",
        expected,
        value,
    )


# ---------------------------------------------------------------------------
# Diagnosis: only runs when the fast path failed. Each step names the first
# rule broken, reading the trimmed line from left to right.
# ---------------------------------------------------------------------------
def _diagnose(text: str, expected: int, offset: int) -> Verdict:
    # Rule 3.
    if not text:
        return verdict("empty", "The completion is empty after trimming ASCII whitespace.", expected)

    # Rule 4: one line. Count the lines that would have passed on their own, to
    # expose answer laundering ("Final: 1\nFinal: 2\n..."). Counting is skipped for
    # huge texts so the cost stays one linear scan.
    brk = _LINE_BREAK.search(text)
    if brk is not None:
        char, position = _char_name(brk.group()), offset + brk.start()
        n_lines = final_lines = None
        counted = ""
        if len(text) <= _COUNT_LINES_UP_TO:
            lines = text.splitlines()
            if _LINE_BREAK.fullmatch(text[-1]):  # trimming keeps a final \x85 or U+2028; it still ends a line
                lines.append("")
            n_lines = len(lines)  # always: number of line boundaries + 1
            final_lines = sum(1 for line in lines if _CANONICAL.fullmatch(line.strip(ASCII_WHITESPACE)))
            counted = f" ({n_lines} lines, {final_lines} of them a valid 'Final:' line)"
        return verdict(
            "multiple_lines",
            f"Line boundary {char} at position {position}{counted}; exactly one line is allowed.",
            expected,
            n_lines=n_lines,
            final_lines=final_lines,
            char=char,
            position=position,
        )

    found = _preview(text)
    # Invisible characters anywhere: report the first, with its position.
    # Pure-ASCII text cannot hold one (str.isascii is O(1) in CPython).
    if not text.isascii():
        hidden = _find_invisible(text)
        if hidden >= 0:
            name = _char_name(text[hidden])
            return verdict(
                "invisible_char",
                f"Invisible character {name} at position {offset + hidden}.",
                expected,
                char=name,
                position=offset + hidden,
                found=found,
            )

    # Rule 5: the prefix, exactly 'Final: '.
    if not text.startswith(PREFIX):
        return _diagnose_prefix(text, expected, offset, found)

    # Rule 6: a canonical base-10 ASCII integer and nothing else.
    return _diagnose_integer(text, expected, offset, found)


def _find_invisible(text: str) -> int:
    """Index of the first invisible (Cf) character in text, or -1.

    Equivalent to one search with the union of the two classes, but each class
    alone compiles to a fast lookup; the astral one only runs where the text
    has a character above U+FFFF at all.
    """
    bmp = _INVISIBLE_BMP.search(text)
    end = bmp.start() if bmp is not None else len(text)
    astral = _ASTRAL.search(text, 0, end)
    if astral is not None:
        hit = _INVISIBLE_ASTRAL.search(text, astral.start(), end)
        if hit is not None:
            return hit.start()
    return end if bmp is not None else -1


def _lookalike(text: str, i: int, offset: int, found: str, what: str, expected: int) -> Verdict:
    """Verdict for a Unicode look-alike at text[i]."""
    name = _char_name(text[i])
    return verdict(
        "lookalike_char",
        f"{name} at position {offset + i} is a look-alike of {what}.",
        expected,
        char=name,
        position=offset + i,
        found=found,
    )


def _diagnose_prefix(text: str, expected: int, offset: int, found: str) -> Verdict:
    """Rule 5 failed: say how the line's start differs from 'Final: '."""
    # The word itself.
    if not text.startswith("Final"):
        if text[0] in _UNICODE_SPACES:
            return _lookalike(text, 0, offset, found, "a space (only ASCII whitespace is trimmed)", expected)
        if text[:5].isascii() and text[:5].lower() == "final":
            return verdict(
                "prefix_case",
                f"The line starts with {text[:5]!r}; it must be 'Final' with exactly that capitalisation.",
                expected,
                found=found,
            )
        head = text[:8]
        if not head.isascii():
            skeleton = "".join(_LETTER_LOOKALIKES.get(c, c) for c in unicodedata.normalize("NFKC", head))
            if skeleton.lower().startswith("final"):
                i = next(k for k, c in enumerate(head) if not c.isascii())
                return _lookalike(text, i, offset, found, "a letter of 'Final'", expected)
        return verdict("missing_prefix", "The line does not start with 'Final: '.", expected, found=found)

    # 'Final' is right; the colon?
    colon = text[5:6]
    if colon in _COLON_LOOKALIKES:
        return _lookalike(text, 5, offset, found, "the colon", expected)
    if colon == "":
        return verdict("missing_prefix", "The line is just 'Final'; it must be 'Final: <int>'.", expected, found=found)
    if colon != ":":
        rest = text[5:]
        gap = len(rest) - len(rest.lstrip(_ANY_SPACE))
        if gap and (rest[gap:gap + 1] == ":" or rest[gap:gap + 1] in _COLON_LOOKALIKES):
            return verdict(
                "prefix_spacing",
                "There must be no space between 'Final' and the colon.",
                expected,
                found=found,
            )
        return verdict(
            "missing_prefix",
            f"'Final' must be followed by ': '; here it is followed by {_preview(text[5:], 12)!r}.",
            expected,
            found=found,
        )

    # 'Final:' is right; exactly one ASCII space must follow.
    after = text[6:7]
    if after == "":
        return verdict("no_integer", "'Final:' is followed by nothing.", expected, found=found)
    if after in _UNICODE_SPACES:
        return _lookalike(text, 6, offset, found, "the ASCII space", expected)
    what = "the number is glued to the colon" if after in "-0123456789" else f"it is followed by {_char_name(after)}"
    return verdict(
        "prefix_spacing",
        f"'Final:' must be followed by exactly one ASCII space; here {what}.",
        expected,
        found=found,
    )


# A lenient parser would first drop separators and spaces: '1,000', "10'000", '10 000'.
_LENIENT_DROP = dict.fromkeys(map(ord, ",'" + _ANY_SPACE))


def _lenient_value(literal: str) -> int | None:
    """What a lenient parser would have read (int(), else an integral float()), or None.

    It tells a format slip (lenient_value == expected) from a wrong number.
    """
    if len(literal) > 64:  # long literals: never hand them to int()/float()
        return None
    cleaned = literal.translate(_LENIENT_DROP)
    try:
        return int(cleaned)  # accepts '0323', '+323', '3_23', '３２３'
    except ValueError:
        pass
    try:
        number = float(cleaned)  # accepts '323.0', '3.23e2'
    except ValueError:
        return None
    return int(number) if number.is_integer() else None


def _diagnose_integer(text: str, expected: int, offset: int, found: str) -> Verdict:
    """Rule 6 failed (the line starts with 'Final: '): say what is wrong with the number."""
    start = len(PREFIX)
    rest = text[start:]  # not empty: the trimmed text never ends with the space of 'Final: '

    first = rest[0]
    if first in ASCII_WHITESPACE:  # 'Final:  323' or 'Final: \t323'
        return verdict(
            "prefix_spacing",
            "More than one space between 'Final:' and the number; exactly one ASCII space is allowed.",
            expected,
            found=found,
        )
    if first in _UNICODE_SPACES:
        return _lookalike(text, start, offset, found, "a space (only ASCII whitespace is trimmed)", expected)
    if first in _MINUS_LOOKALIKES:
        name = _char_name(first)
        return verdict(
            "lookalike_minus",
            f"The sign is {name}, not the ASCII hyphen-minus '-'.",
            expected,
            char=name,
            position=offset + start,
            found=found,
            lenient_value=_lenient_value("-" + rest[1:]) if len(rest) <= 64 else None,
        )

    # Split into an ASCII number head ('[+-]?[0-9]*') and whatever follows it.
    head = _ASCII_NUMBER_HEAD.match(rest).group()  # always matches, possibly ''
    tail = rest[len(head):]
    digits = head.lstrip("+-")

    if _OTHER_DIGIT.match(tail):  # '３２３', '٣٢٣', '3²': a digit, but not ASCII
        name = _char_name(tail[0])
        return verdict(
            "non_ascii_digit",
            f"{name} is a digit from another script; only ASCII 0-9 count.",
            expected,
            char=name,
            position=offset + start + len(head),
            found=found,
            lenient_value=_lenient_value(rest),
        )
    if not digits:
        return verdict(
            "no_integer",
            f"'Final: ' is followed by {_preview(rest, 12)!r}, which does not start with an integer.",
            expected,
            found=found,
        )
    if head[0] == "+":
        return verdict(
            "plus_sign",
            "A '+' sign is not allowed; write the number bare.",
            expected,
            found=found,
            lenient_value=_lenient_value(head) if not tail else None,
        )

    sep = tail[:1]
    if (sep in ("_", ",", "'") and tail[1:2].isdigit() and tail[1:2].isascii()) or (
        (sep == " " or sep in _UNICODE_SPACES) and _GROUP_OF_THREE.match(tail, 1)
    ):
        return verdict(
            "digit_separator",
            f"{_char_name(sep)} inside the number; write the digits without separators.",
            expected,
            char=_char_name(sep),
            position=offset + start + len(head),
            found=found,
            lenient_value=_lenient_value(rest),
        )
    if _NOT_INTEGER_TAIL.match(tail):
        return verdict(
            "not_integer",
            "A decimal point, exponent or fraction: the answer must be an integer literal.",
            expected,
            found=found,
            lenient_value=_lenient_value(rest) if tail[0] != "/" else None,
        )
    if not _CANONICAL_INT.fullmatch(head):
        if head[0] == "-" and digits.strip("0") == "":
            return verdict(
                "negative_zero", "'-0' is not canonical; write 0.", expected, found=found, lenient_value=0
            )
        return verdict(
            "leading_zero",
            f"{_preview(head, 12)!r} has a leading zero; only 0 itself may start with 0.",
            expected,
            found=found,
            lenient_value=_lenient_value(head) if not tail else None,
        )
    if not tail:  # unreachable: a canonical literal alone would have matched the fast path
        return _compare(head, expected)  # pragma: no cover
    # A canonical integer with something after it.
    if not tail.strip(_ANY_SPACE):  # only spaces, and trimming left them: some are Unicode spaces
        i = start + len(head) + next(k for k, c in enumerate(tail) if c in _UNICODE_SPACES)
        return _lookalike(text, i, offset, found, "a space (only ASCII whitespace is trimmed)", expected)
    return verdict(
        "trailing_text",
        f"Text after the integer: {_preview(tail, 12)!r}. Nothing may follow the number.",
        expected,
        found=found,
        lenient_value=_lenient_value(head),
    )
