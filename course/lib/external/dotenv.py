"""A tiny ``.env`` reader: where an API key may live when it is not in the environment.

``course.rollout_sample`` looks its key up in the real environment first and only
then in a ``.env`` file in the current directory; a real environment variable is
never overridden (an empty one counts as unset: no endpoint accepts an empty key).
Nothing here touches ``os.environ``: the functions return values and the caller
decides. The format is the common subset every dotenv tool agrees on::

    # a comment
    GROQ_API_KEY=gsk_...            # a comment after an unquoted value
    export OTHER_KEY="quoted value"  # 'export ' is allowed and ignored
    SINGLE='no # comment here'

Error messages give ``path:line`` but never the line itself: a malformed line
may be a key pasted without its ``NAME=``.

>>> parse_dotenv('# key\\nexport A="x y"\\nB=2 # two\\n\\nC=\\'#3\\'\\n')
{'A': 'x y', 'B': '2', 'C': '#3'}
>>> lookup("A", environ={"A": "from-env"}, dotenv={"A": "from-file"})
('from-env', 'environment')
>>> lookup("A", environ={"A": ""}, dotenv={"A": "from-file"})
('from-file', '.env')
>>> lookup("A", environ={}, dotenv={}) is None
True
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Mapping

from course.errors import CourseError
from course.lib.records.jsonl import read_input

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def parse_dotenv(text: str, path: str = ".env") -> dict[str, str]:
    """``KEY=VALUE`` lines -> dict. Later lines win, as in a shell script.

    Raises ``CourseError`` (``path:line: ...``, without the line's text) for a line
    that is neither blank, a comment, nor ``[export ]NAME=VALUE``.
    """
    values: dict[str, str] = {}
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[len("export "):].lstrip()
        name, sep, value = line.partition("=")
        name = name.strip()
        if not sep or not _NAME.match(name):
            raise CourseError(
                f"{path}:{lineno}: expected NAME=VALUE (line not shown: it may hold a secret)"
            )
        values[name] = _unquote(value.strip(), path, lineno)
    return values


def _unquote(value: str, path: str, lineno: int) -> str:
    """Strip matching quotes; for an unquoted value drop a ``  # comment`` tail."""
    if value[:1] in ("'", '"'):
        quote = value[0]
        end = value.find(quote, 1)
        if end == -1:
            raise CourseError(f"{path}:{lineno}: unterminated {quote} quote")
        return value[1:end]
    # '#' starts a comment only after whitespace, so 'abc#def' stays one value.
    m = re.search(r"\s#", value)
    return value[: m.start()].rstrip() if m else value


def read_dotenv(path: str | os.PathLike[str] = ".env") -> dict[str, str]:
    """The values in ``path``, or ``{}`` when the file does not exist."""
    p = Path(path)
    if not p.is_file():
        return {}
    try:  # the one opener (regular file, capped): a .env swapped for a FIFO is refused, never waited on
        text = read_input(p, "a .env file").decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CourseError(f"{path}: not UTF-8 text ({exc.reason})") from None
    return parse_dotenv(text, str(path))


def lookup(
    name: str, environ: Mapping[str, str], dotenv: Mapping[str, str]
) -> tuple[str, str] | None:
    """``(value, source)`` for ``name``: the environment first, then the ``.env`` values.

    ``source`` is ``"environment"`` or ``".env"`` (safe to print; the value is not).
    """
    value = environ.get(name, "")
    if value:
        return value, "environment"
    value = dotenv.get(name, "")
    if value:
        return value, ".env"
    return None


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.external.dotenv"))
