"""`python -m course`: list the tools, grouped by loop, one line each."""

from __future__ import annotations

from typing import Sequence

from course.cli import run
from course.lib.toolbox import listing


def _main(argv: Sequence[str] | None) -> int:
    print(listing("course."))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run(_main, argv)  # the tools' rules, a closed output pipe included (`python -m course | head -3`)


if __name__ == "__main__":
    raise SystemExit(main())
