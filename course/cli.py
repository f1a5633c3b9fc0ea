"""Shared plumbing for every ``python -m course.<tool>`` entry point.

Exit codes are the same everywhere:
  0  ok / ACCEPT
  1  REJECT, or a check that failed
  2  usage or input error (argparse errors, ``CourseError`` and operating-system errors)

One ``main`` style for every tool: a module-level ``_main(argv)`` that parses and works, and::

    def main(argv: Sequence[str] | None = None) -> int:
        return run(_main, argv)

Numeric flags use the shared argument types below (``positive_int``, ``finite_float``,
``probability``, ...), so NaN, infinity and out-of-range values are refused by argparse,
with one line and exit 2, before any work starts.
"""

from __future__ import annotations

import argparse
import math
from fractions import Fraction
import os
import sys
from typing import Any, Callable, Sequence

from course.errors import CourseError
from course.lib.visible import command, terminal_line

EXIT_OK = 0
EXIT_FAIL = 1
EXIT_USAGE = 2


def make_parser(prog: str, description: str, example: str) -> argparse.ArgumentParser:
    """An argparse parser whose ``--help`` ends with a worked example.

    Abbreviations are off (``allow_abbrev=False``): ``--step`` for ``--steps`` is an error,
    not a silent guess.
    """
    return argparse.ArgumentParser(
        prog=prog,
        description=description,
        epilog="example:\n" + example,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )


# ===========================================================================
# Shared argument types: a bad number is a usage error before any work starts
# ===========================================================================
def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None


def _finite(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return value


def positive_int(text: str) -> int:
    """An integer >= 1 (steps, samples, threads)."""
    value = _int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def non_negative_int(text: str) -> int:
    """An integer >= 0 (seeds, 'every K' with 0 = off)."""
    value = _int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be at least 0, got {value}")
    return value


def finite_float(text: str) -> float:
    """Any finite float (not NaN, not +-inf)."""
    return _finite(text)


def positive_float(text: str) -> float:
    """A finite float > 0."""
    value = _finite(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text!r}")
    return value


def non_negative_float(text: str) -> float:
    """A finite float >= 0 (temperatures, seconds)."""
    value = _finite(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text!r}")
    return value


def probability(text: str) -> float:
    """A finite float in [0, 1]."""
    return float_in(0.0, 1.0)(text)


def float_in(low: float, high: float, *, low_open: bool = False) -> Callable[[str], float]:
    """A finite float in [low, high] (or (low, high] with ``low_open``); the range is named in the error."""

    def parse(text: str) -> float:
        value = _finite(text)
        if not (low < value if low_open else low <= value) or not value <= high:
            shown = f"in ({low:g}, {high:g}]" if low_open else f"between {low:g} and {high:g}"
            raise argparse.ArgumentTypeError(f"must be {shown}, got {text!r}")
        return value

    parse.__name__ = f"float in {'(' if low_open else '['}{low:g}, {high:g}]"
    return parse


def rate_difference(text: str) -> Fraction:
    """An exact pass-rate difference in [-1, 1] (``0.05`` is 5 points), kept as a Fraction."""
    try:
        value = Fraction(text.strip())
    except (ValueError, ZeroDivisionError):
        raise argparse.ArgumentTypeError(f"expected a number such as 0.05, got {text!r}") from None
    if not -1 <= value <= 1:
        raise argparse.ArgumentTypeError(f"a pass-rate difference lies between -1 and 1, got {text}")
    return value


def int_in(low: int, high: int) -> Callable[[str], int]:
    """An integer in the closed range [low, high]."""

    def parse(text: str) -> int:
        value = _int(text)
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be between {low} and {high}, got {value}")
        return value

    parse.__name__ = f"integer in [{low}, {high}]"
    return parse


def run(main: Callable[[Sequence[str] | None], int], argv: Sequence[str] | None = None) -> int:
    """Call ``main(argv)``; turn a ``CourseError`` into one stderr line and exit code 2."""
    from course.lib.runs import committed, pending, release_pending

    held_before = pending()
    runs_before = len(committed())
    try:
        code = main(argv)
        new_runs = committed()[runs_before:]
        machine = "--json" in (sys.argv[1:] if argv is None else argv)  # stdout is one JSON document then
        if new_runs and not held_before and not machine:  # the outermost tool: name the page that shows its run
            _print_report_hint(new_runs[-1])
        return code
    except CourseError as exc:
        print(f"error: {terminal_line(str(exc))}", file=sys.stderr)  # one line, whatever path or value it quotes
        return EXIT_USAGE
    except OSError as exc:
        if isinstance(exc, BrokenPipeError):
            return _broken_pipe()
        # Read-only directory, disk full, name too long, a file where a directory should be:
        # the user's environment, not a bug of the tool. One line naming the path and the cause.
        where = f"{exc.filename}: " if exc.filename is not None else ""
        print(f"error: {terminal_line(f'{where}{exc.strerror or exc}')}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted: nothing was written", file=sys.stderr)
        return 130
    finally:
        # A run name this call reserved but never used: remove its temporary directory.
        release_pending(keep=held_before)


def _print_report_hint(run_dir: Any) -> None:
    """Last line of every tool that wrote a run: the command that shows it as an HTML page."""
    from course.lib.report_html import REPORTABLE_TOOLS
    from course.lib.runs import run_tool

    if run_tool(run_dir) in REPORTABLE_TOOLS:
        print(f"View it: {command(['python', '-m', 'course.report', run_dir])}", flush=True)


def _broken_pipe() -> int:
    # `python -m course.X | head` closed our stdout early: not an error of the tool.
    # Point stdout at devnull so the interpreter's final flush does not raise again.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return EXIT_OK


def info(message: str) -> None:
    """Progress and diagnostics go to stderr so stdout stays for results (one line each: ``terminal_line``)."""
    print(terminal_line(message), file=sys.stderr, flush=True)


def optional_view(extra: str, for_what: str, instead: str) -> bool:
    """Rule 2 of ``course.lib.extras``: may the tool draw a view that needs ``extra``?

    True when the extra is installed. Otherwise one line on stderr says what needs it, how to
    install it and what the tool does ``instead``, and the answer is False: the tool carries on
    without that view (the data it writes does not depend on it) and exits as usual.
    """
    from course.lib.extras import unavailable

    problem = unavailable(extra, for_what)
    if problem is not None:
        info(f"{problem}; {instead}")
    return problem is None


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.cli"))
