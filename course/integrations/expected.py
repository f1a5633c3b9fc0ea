"""The expected answer as the training and evaluation libraries pass it, read once for every bridge.

The instrument (``course.instrument.spec_v1``, rule 9) takes ``expected_answer`` as a Python
``int`` and nothing else: ``"323"``, ``323.0`` and ``True`` are ``bad_example``. That rule is
right for the course's own files, whose reader makes every answer an ``int``. The libraries
the bridges serve encode the same integer their own way:

  * inspect_ai: a ``Target`` is always a sequence of strings (``Target("323")``);
  * verl: ``reward_model.ground_truth`` is whatever the parquet held, usually a string, and a
    numpy integer when the column was written as one;
  * TRL: every dataset column, repeated once per completion, as ``datasets`` returns it: an
    ``int`` for an integer column, a ``str`` for a text column, a numpy integer from a
    numpy-backed dataset.

Scoring those with the instrument directly gave ``bad_example`` -- reward 0 for every sample,
silently. ``library_answer`` converts exactly the encodings of an integer and refuses the rest:

  * an ``int`` (not ``bool``) or any integer type that implements ``__index__`` (numpy's ``int64``,
    ``uint8``, ...; numpy's ``bool_`` does not);
  * a pyarrow scalar (what iterating an Arrow column gives: Ray Data, ``datasets``), read as the
    Python value it holds (``pa.scalar(323)``, ``pa.scalar("323")``; a null is no answer);
  * a string of ASCII digits with an optional ``-``, ASCII whitespace around it ignored
    (``" 323\\n"``; ``"007"`` is 7: a stored answer is a value, not a formatted completion).

Anything else (``"3.5"``, ``"1,000"``, ``1.0``, ``numpy.float64(323.0)`` -- a pandas integer column
with a missing value becomes floats --, ``None``, ``True``) is not an integer answer, and an
integer of more than ``MAX_DIGITS`` digits is outside what the verifier compares (rule 7): both
come back as ``(None, why)``. What a bridge does with ``why`` depends on its library (see each
bridge): it never turns it into a silent 0.

>>> library_answer("323"), library_answer(" -7\\n"), library_answer(323)
((323, None), (-7, None), (323, None))
>>> library_answer("3.5")
(None, "the expected answer '3.5' is not an integer (digits with an optional '-')")
>>> library_answer(True)
(None, 'the expected answer True is a bool, not an integer')
"""

from __future__ import annotations

import operator
import re
from typing import Any

from course.instrument.spec_v1 import MAX_DIGITS

_INTEGER_TEXT = re.compile(r"-?[0-9]+")
_ASCII_WHITESPACE = " \t\n\r\x0b\x0c"
_LIMIT = 10**MAX_DIGITS  # |answer| must be below this (rule 7), computed once
_CHUNK = 600  # int() refuses over sys.get_int_max_str_digits() digits (640 at least): convert in chunks


def library_answer(value: Any) -> tuple[int | None, str | None]:
    """``(the integer, None)`` when ``value`` encodes one the verifier can compare, else ``(None, why)``."""
    if isinstance(value, bool):  # an int subclass, but True is not an answer (numpy's bool_ fails index() below)
        return None, f"the expected answer {value!r} is a bool, not an integer"
    if isinstance(value, str):
        return _from_text(value)
    if isinstance(value, (bytes, bytearray)):
        return None, "the expected answer is bytes, not an integer or its text"
    if type(value).__module__.startswith("pyarrow") and callable(getattr(value, "as_py", None)):
        return _from_arrow(value)
    try:
        number = operator.index(value)  # int and every integer type (numpy int64, ...); never a float
    except TypeError:
        return None, f"the expected answer {_preview(value)} is a {type(value).__name__}, not an integer"
    except Exception as exc:  # noqa: BLE001 - a hostile __index__: a data problem, named
        return None, f"the expected answer could not be read as an integer ({type(exc).__name__})"
    if not -_LIMIT < number < _LIMIT:
        return None, f"the expected answer has more than {MAX_DIGITS} digits, more than the verifier compares"
    return number, None


def integer_answers(values: Any, where: str, why: str) -> list[int]:
    """Every value of an answer column read as an integer, or ``ValueError`` naming the first row that is not.

    One reading for every bridge that takes a whole column (TRL's reward function, ``score_batch``):
    a batch with one unusable answer is refused, never scored 0 row by row. ``where`` names the column
    (``"strict_reward: expected_answer"``); ``why`` ends the message in the caller's terms.
    """
    answers = []
    for row, value in enumerate(values):
        answer, problem = library_answer(value)
        if problem is not None:
            raise ValueError(f"{where}[{row}]: {problem}; {why}")
        answers.append(answer)
    # library_answer gives an int whenever it reports no problem (checked above)
    return answers  # type: ignore[return-value]


def _from_arrow(value: Any) -> tuple[int | None, str | None]:
    """A pyarrow scalar (what iterating an Arrow column gives): read as the Python value it holds, so
    ``pa.scalar("323")`` is the text ``"323"`` and ``pa.scalar(323)`` the integer; a null is no answer."""
    try:
        held = value.as_py()
    except Exception as exc:  # noqa: BLE001 - an Arrow type with no Python value: a data problem, named
        return None, f"the expected answer (an Arrow {type(value).__name__}) has no Python value ({type(exc).__name__})"
    if held is None:
        return None, "the expected answer is null (a missing value in an Arrow column)"
    if type(held).__module__.startswith("pyarrow"):
        return None, f"the expected answer is an Arrow {type(value).__name__}, not an integer"
    return library_answer(held)


def _from_text(text: str) -> tuple[int | None, str | None]:
    stripped = text.strip(_ASCII_WHITESPACE)
    if not _INTEGER_TEXT.fullmatch(stripped):
        return None, f"the expected answer {_preview(text)} is not an integer (digits with an optional '-')"
    digits = stripped.lstrip("-").lstrip("0") or "0"
    if len(digits) > MAX_DIGITS:
        return None, (f"the expected answer has {len(digits)} digits, more than the {MAX_DIGITS} "
                      f"the verifier compares")
    value = 0
    for start in range(0, len(digits), _CHUNK):
        chunk = digits[start:start + _CHUNK]
        value = value * 10 ** len(chunk) + int(chunk)
    return (-value if stripped.startswith("-") else value), None


def _preview(value: Any, limit: int = 40) -> str:
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - a hostile __repr__
        return f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[:limit] + "..."


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.integrations.expected"))
