"""Shared plumbing for every ``python -m course.<tool>`` entry point.

Exit codes are the same everywhere:
  0  ok / ACCEPT
  1  REJECT, or a check that failed
  2  usage or input error (argparse errors and ``CourseError``)
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Callable, Sequence

from course.errors import CourseError

EXIT_OK = 0
EXIT_FAIL = 1
EXIT_USAGE = 2


def make_parser(prog: str, description: str, example: str) -> argparse.ArgumentParser:
    """An argparse parser whose ``--help`` ends with a worked example."""
    return argparse.ArgumentParser(
        prog=prog,
        description=description,
        epilog="example:\n" + example,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def run(main: Callable[[Sequence[str] | None], int], argv: Sequence[str] | None = None) -> int:
    """Call ``main(argv)``; turn a ``CourseError`` into one stderr line and exit code 2."""
    try:
        return main(argv)
    except CourseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted: nothing was written", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `python -m course.X | head` closed our stdout early: not an error of the tool.
        # Point stdout at devnull so the interpreter's final flush does not raise again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK


def info(message: str) -> None:
    """Progress and diagnostics go to stderr so stdout stays for results."""
    print(message, file=sys.stderr, flush=True)
