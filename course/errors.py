"""The one error type for bad input, and the one door through which another project's reader reports it.

Library code raises ``CourseError`` with a message that says what was expected
(for files: ``path:line: what is wrong``). Each CLI catches it once, prints the
message on stderr and exits with code 2. A failure of a single *item* (a
completion that does not parse, a sample the endpoint refused) is never an
exception: it is a field in that item's record.

``foreign_reader(path, what)`` wraps every call that hands a user's file to a
third-party reader (pyarrow, datasets, inspect_ai, torch): those raise their own
exception types for a damaged file (``ArrowInvalid``, pickle errors, validation
errors ...), which no CLI could list in advance, so whatever they raise becomes
one ``CourseError``: ``path: not a readable <what> (<type>: <first line>)``.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator


class CourseError(ValueError):
    """Bad input: a malformed file, a missing argument, an unusable run directory."""


_CAUSE_LIMIT = 200  # characters of the library's own message kept (some quote the whole file)


def describe(exc: BaseException) -> str:
    """``Type: first line of the message``, cut to a readable length.

    >>> describe(ValueError("bad footer\\nat offset 12"))
    'ValueError: bad footer'
    """
    lines = str(exc).strip().splitlines()
    first = lines[0] if lines else ""
    if len(first) > _CAUSE_LIMIT:
        first = first[:_CAUSE_LIMIT] + "…"
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


@contextmanager
def foreign_reader(path: object, what: str) -> Iterator[None]:
    """Run another project's reader on ``path``; whatever it raises becomes one ``CourseError`` line.

    Only the library call goes inside the block, so a bug in the course's own code
    still shows its traceback. A ``CourseError`` passes unchanged; ``MemoryError``
    and ``KeyboardInterrupt`` are not the file's fault and pass too.

    >>> try:
    ...     with foreign_reader("x.parquet", "parquet file"):
    ...         raise OSError("Parquet magic bytes not found in footer")
    ... except CourseError as exc:
    ...     print(exc)
    x.parquet: not a readable parquet file (OSError: Parquet magic bytes not found in footer)
    """
    try:
        yield
    except (CourseError, MemoryError):
        raise
    except Exception as exc:  # noqa: BLE001 - the point: any type the library chose to raise
        raise CourseError(f"{path}: not a readable {what} ({describe(exc)})") from None
