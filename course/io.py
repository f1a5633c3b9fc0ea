"""Reading and writing the course's files: one place for every JSON and JSONL byte.

Writers are canonical so that equal data gives equal bytes (the determinism rule):
keys sorted, UTF-8 without escaping, ``\n`` line ends, floats as Python's repr.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterable


def dumps_line(record: Any) -> str:
    """One canonical JSON line (no trailing newline)."""
    return json.dumps(record, ensure_ascii=False, sort_keys=True, separators=(", ", ": "))


def write_json(path: str | os.PathLike[str], obj: Any) -> None:
    """Pretty, canonical JSON with a final newline."""
    Path(path).write_text(json.dumps(obj, ensure_ascii=False, sort_keys=True, indent=2) + "\n", encoding="utf-8")


def write_jsonl(path: str | os.PathLike[str], records: Iterable[Any]) -> int:
    """Write records one per line; return how many were written."""
    n = 0
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for record in records:
            f.write(dumps_line(record))
            f.write("\n")
            n += 1
    return n
