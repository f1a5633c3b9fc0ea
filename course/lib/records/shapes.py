"""The shape of a nested JSON value, declared once and checked in one pass: what a reader may rely on.

``course.lib.records.formats`` declares the top-level fields of each JSONL line with ``Field``;
a run's summary, its logs and the parts of its manifest a view draws from are nested
(``holdout.gate.min_delta``, ``breakdown[3].count``), so they are declared here as a
``Shape`` and checked with ``check(value, shape, where)``. The first value that does not
fit raises one ``CourseError`` naming it by its path::

    runs/x/summary.json: field 'breakdown[0].count' must be a count, an integer >= 0, got a string ("30")

The vocabulary: ``INT``, ``COUNT``, ``NUMBER`` (finite, within a float's range),
``PROBABILITY``, ``TEXT``, ``BOOL``, ``ANY``; ``number_in(low, high)``; ``array(of, ...)``;
``mapping(of)`` (an object with any keys); ``obj(required, optional, rule=...)``;
``nullable(shape)``. A ``rule`` is a function of the already-checked value returning a
problem (``"passed is more than n"``) or None: the one place for a constraint between
fields. Types are JSON's: a boolean is never a number (``type(v) is int``).

Extra keys are allowed and ignored, as in ``course.lib.records.formats``: a reader promises
only what it reads. Nothing here does I/O; nothing here prints.

>>> summary = obj({"n": COUNT, "passed": COUNT})
>>> check({"n": 3, "passed": 1}, summary, "s.json")
>>> try:
...     check({"n": 3, "passed": "1"}, summary, "s.json")
... except CourseError as exc:
...     print(exc)
s.json: field 'passed' must be a count, an integer >= 0, got a string ("1")
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from course.errors import CourseError
from course.lib.records.jsonl import json_kind

__all__ = [
    "Shape", "check", "obj", "array", "mapping", "nullable", "number_in", "value_at",
    "ANY", "INT", "COUNT", "NUMBER", "PROBABILITY", "TEXT", "BOOL",
]

# A number a view may do float arithmetic on: finite, and an int that float() can hold.
_FLOAT_RANGE = 2.0**1023


def value_excerpt(value: Any, limit: int = 40) -> str:
    """`` (the value)`` cut to ``limit`` characters, for an error message; nothing for an object, array or null."""
    if type(value) in (dict, list) or value is None:
        return ""
    if type(value) is int and abs(value) >= 10**limit:
        return f" ({len(str(abs(value)))} digits)"
    text = json.dumps(value, ensure_ascii=False)
    return f" ({text[:limit]}{'...' if len(text) > limit else ''})"


@dataclass(frozen=True)
class Shape:
    """What one JSON value must be. Build shapes with the functions below, not by hand."""

    noun: str  # "a count (an integer >= 0)": the words of the error
    accepts: Callable[[Any], bool]  # the value's own kind and range (not its contents)
    fields: tuple[tuple[str, "Shape", bool], ...] = ()  # objects: (name, shape, required)
    each: "Shape | None" = None  # arrays: every item; mappings: every value
    rule: Callable[[Any], str | None] | None = None  # a constraint between the checked parts
    size: tuple[int, int | None] = field(default=(0, None))  # arrays: allowed lengths


def value_at(value: Any, key: str, absent: Any = None) -> Any:
    """The value at a dotted path of nested objects (``"selection.n"``), or ``absent`` where the path
    does not reach (a missing key, or a part that is not an object).

    >>> value_at({"selection": {"n": 4}}, "selection.n"), value_at({"selection": 4}, "selection.n")
    (4, None)
    """
    for part in key.split("."):
        if not isinstance(value, dict) or part not in value:
            return absent
        value = value[part]
    return value


def _is_number(v: Any) -> bool:
    t = type(v)
    return (t is float and math.isfinite(v)) or (t is int and -_FLOAT_RANGE < v < _FLOAT_RANGE)


ANY = Shape("any JSON value", lambda v: True)
INT = Shape("an integer", lambda v: type(v) is int and -_FLOAT_RANGE < v < _FLOAT_RANGE)
COUNT = Shape("a count, an integer >= 0", lambda v: type(v) is int and 0 <= v < 2**53)
NUMBER = Shape("a finite number", _is_number)
TEXT = Shape("a string", lambda v: type(v) is str)
BOOL = Shape("a boolean", lambda v: type(v) is bool)


def number_in(low: float, high: float) -> Shape:
    """A finite number in [low, high]."""
    return Shape(f"a number between {low:g} and {high:g}", lambda v: _is_number(v) and low <= v <= high)


PROBABILITY = number_in(0.0, 1.0)


def nullable(shape: Shape) -> Shape:
    """``shape`` or null."""
    return Shape(f"{shape.noun} or null", lambda v: v is None or shape.accepts(v), shape.fields, shape.each,
                 shape.rule, shape.size)


def array(of: Shape = ANY, *, min_items: int = 0, max_items: int | None = None,
          rule: Callable[[Any], str | None] | None = None) -> Shape:
    """A JSON array whose every item is ``of``, with ``min_items``..``max_items`` items."""
    if max_items == min_items:
        noun = f"an array of {min_items} items"
    elif min_items:
        noun = f"an array of at least {min_items} item{'s' if min_items > 1 else ''}"
    else:
        noun = "an array"
    return Shape(noun, lambda v: type(v) is list, each=of, rule=rule, size=(min_items, max_items))


def mapping(of: Shape = ANY) -> Shape:
    """A JSON object with any keys, every value ``of``."""
    return Shape("an object", lambda v: type(v) is dict, each=of)


def obj(required: Mapping[str, Shape] | None = None, optional: Mapping[str, Shape] | None = None,
        *, rule: Callable[[Any], str | None] | None = None) -> Shape:
    """A JSON object: the ``required`` keys must be there, the ``optional`` ones may be; others are ignored."""
    fields = tuple((k, s, True) for k, s in (required or {}).items()) + tuple(
        (k, s, False) for k, s in (optional or {}).items())
    return Shape("an object", lambda v: type(v) is dict, fields=fields, rule=rule)


def check(value: Any, shape: Shape, where: str) -> None:
    """Raise ``CourseError`` ``where: field 'a.b[2]' ...`` at the first part of ``value`` that does not fit
    ``shape``."""
    _check(value, shape, where, "")


def _at(path: str) -> str:
    return f"field '{path}'" if path else "the document"


def _check(value: Any, shape: Shape, where: str, path: str) -> None:
    if not shape.accepts(value):
        raise CourseError(f"{where}: {_at(path)} must be {shape.noun}, got {json_kind(value)}{value_excerpt(value)}")
    if value is None:
        return  # nullable(): nothing inside to check
    low, high = shape.size
    if type(value) is list and (len(value) < low or (high is not None and len(value) > high)):
        raise CourseError(f"{where}: {_at(path)} must be {shape.noun}, got {len(value)}")
    for name, inner, required in shape.fields:
        if name in value:
            _check(value[name], inner, where, f"{path}.{name}" if path else name)
        elif required:
            raise CourseError(f"{where}: missing field '{path + '.' if path else ''}{name}' ({inner.noun})")
    if shape.each is not None and shape.each is not ANY:
        items = enumerate(value) if type(value) is list else value.items()
        for key, item in items:
            _check(item, shape.each, where,
                   f"{path}[{key}]" if type(value) is list else (f"{path}.{key}" if path else str(key)))
    if shape.rule is not None:
        problem = shape.rule(value)
        if problem is not None:
            raise CourseError(f"{where}: {(_at(path) + ': ') if path else ''}{problem}")


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.records.shapes"))
