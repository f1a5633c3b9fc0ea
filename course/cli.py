"""Shared plumbing for every ``python -m course.<tool>`` entry point.

Exit codes are the same everywhere:
  0  ok / ACCEPT
  1  REJECT, or a check that failed
  2  usage or input error (argparse errors, ``CourseError``, operating-system errors and an
     installed extra that cannot be imported)
  141  the output's reader went away (``| head -2`` closed stdout or stderr): the tool stopped
     there, as SIGPIPE stops any Unix tool, and never reports success for work it did not finish;
     every output is written whole or not at all (``course.lib.records.runs``, ``course.lib.records.temporaries``)

One ``main`` style for every tool: a module-level ``_main(argv)`` that parses and works, and::

    def main(argv: Sequence[str] | None = None) -> int:
        return run(_main, argv)

Numeric flags use the shared argument types below (``positive_int``, ``finite_float``,
``probability``, ``seed``, ...), so NaN, infinity and out-of-range values are refused by argparse,
with one line and exit 2, before any work starts. Every numeric flag has an upper bound too:
a count is at most ``MAX_COUNT`` unless its tool sets a tighter bound where memory or disk grows
with it (``int_in``), and a seed fits the 64-bit integer every RNG takes (``seed``).
Arguments that are not UTF-8 text are refused the same way (``run``).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import re
import sys
from fractions import Fraction
from typing import Any, Callable, Iterable, Iterator, Sequence, TypeVar

from course.errors import CourseError
from course.lib.visible import command, terminal_line, visible

T = TypeVar("T")
EXIT_OK = 0
EXIT_FAIL = 1
EXIT_USAGE = 2
# 128 + SIGPIPE: what a shell reports for any Unix tool whose output's reader went away (`| head -2`).
EXIT_PIPE_CLOSED = 141
# The largest count any flag takes unless its tool bounds it tighter (--steps 10**100 is a typo, not a plan).
MAX_COUNT = 10**9
MAX_SEED = 2**63 - 1  # torch.manual_seed and numpy take 64-bit seeds; JSON readers take int64


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
def _shown(text: str) -> str:
    """An argument as an error message shows it: quoted, and cut if long (a 5,000-digit number)."""
    return repr(text if len(text) <= 40 else text[:37] + "...")


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:  # also an integer beyond Python's digit limit: not a count or a seed of the course
        raise argparse.ArgumentTypeError(f"not an integer: {_shown(text)}") from None


def _finite(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {_shown(text)}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {_shown(text)}")
    return value


def positive_int(text: str) -> int:
    """An integer in [1, MAX_COUNT] (steps, samples, items)."""
    value = _int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    if value > MAX_COUNT:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_COUNT:,}, got {_shown(text)}")
    return value


def non_negative_int(text: str) -> int:
    """An integer in [0, MAX_COUNT] ('every K' with 0 = off, how many to show)."""
    value = _int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be at least 0, got {value}")
    if value > MAX_COUNT:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_COUNT:,}, got {_shown(text)}")
    return value


def seed(text: str) -> int:
    """A seed: an integer in [0, 2**63 - 1], what every random generator of the course accepts."""
    value = _int(text)
    if not 0 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"a seed is an integer between 0 and {MAX_SEED}, got {_shown(text)}")
    return value


def finite_float(text: str) -> float:
    """Any finite float (not NaN, not +-inf)."""
    return _finite(text)


def positive_float(text: str) -> float:
    """A finite float > 0."""
    value = _finite(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {_shown(text)}")
    return value


def non_negative_float(text: str) -> float:
    """A finite float >= 0 (temperatures, seconds)."""
    value = _finite(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {_shown(text)}")
    return value


def probability(text: str) -> float:
    """A finite float in [0, 1]."""
    return float_in(0.0, 1.0)(text)


def nucleus_mass(text: str) -> float:
    """A top-p (nucleus) mass: a finite float in (0, 1]; 1 keeps every token, and 0 would keep none."""
    return float_in(0.0, 1.0, low_open=True)(text)


TEMPERATURE_MIN = 1e-3  # below it logits / T overflow float32 (1e-300 rounds to 0: a division by zero)
TEMPERATURE_MAX = 100.0


def sampling_temperature(text: str) -> float:
    """A sampling temperature: 0 (greedy decoding) or a finite float in [TEMPERATURE_MIN, TEMPERATURE_MAX]."""
    value = _finite(text)
    if value != 0 and not TEMPERATURE_MIN <= value <= TEMPERATURE_MAX:
        raise argparse.ArgumentTypeError(f"must be 0 (greedy) or between {TEMPERATURE_MIN:g} and {TEMPERATURE_MAX:g}, "
                                         f"got {_shown(text)}")
    return value


def float_in(low: float, high: float, *, low_open: bool = False) -> Callable[[str], float]:
    """A finite float in [low, high] (or (low, high] with ``low_open``); the range is named in the error."""

    def parse(text: str) -> float:
        value = _finite(text)
        if not (low < value if low_open else low <= value) or not value <= high:
            shown = f"in ({low:g}, {high:g}]" if low_open else f"between {low:g} and {high:g}"
            raise argparse.ArgumentTypeError(f"must be {shown}, got {_shown(text)}")
        return value

    parse.__name__ = f"float in {'(' if low_open else '['}{low:g}, {high:g}]"
    return parse


def rate_difference(text: str) -> Fraction:
    """An exact pass-rate difference in [-1, 1] (``0.05`` is 5 points), kept as a Fraction."""
    exponent = re.search(r"[eE]([+-]?[0-9]+)\s*$", text)
    # Fraction("1e-10000000") builds a 10-million-digit integer (seconds of CPU); no pass-rate
    # difference needs an exponent beyond +-100, so such a text is refused before Fraction sees it.
    if len(text) > 100 or (exponent is not None and len(exponent.group(1).lstrip("+-").lstrip("0")) > 2):
        raise argparse.ArgumentTypeError(f"expected a number such as 0.05, got {_shown(text)}")
    try:
        value = Fraction(text.strip())
    except (ValueError, ZeroDivisionError):
        raise argparse.ArgumentTypeError(f"expected a number such as 0.05, got {_shown(text)}") from None
    if not -1 <= value <= 1:
        raise argparse.ArgumentTypeError(f"a pass-rate difference lies between -1 and 1, got {_shown(text)}")
    return value


def int_in(low: int, high: int) -> Callable[[str], int]:
    """An integer in the closed range [low, high]."""

    def parse(text: str) -> int:
        value = _int(text)
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be between {low:,} and {high:,}, got {_shown(text)}")
        return value

    parse.__name__ = f"integer in [{low}, {high}]"
    return parse


def check_work(flags: str, units: int, bound: int, unit: str, advice: str) -> None:
    """Refuse, before any work, a plan whose size (``units`` of ``unit``) is past the tool's ``bound``.

    Each flag's own range keeps one number sane; their product (rates x seeds x steps) can still
    ask for hours of CPU. The bound is the tool's, named with the flags that make it up, with the
    advice of what to lower.
    """
    if units > bound:
        raise CourseError(f"{flags}: {units:,} {unit} is past this tool's bound of {bound:,}; {advice}")


def with_progress(items: Iterable[T], total: int, label: str, *, over: int) -> Iterator[T]:
    """``items``, and when there are more than ``over`` of them (work of more than a few seconds), one
    line on stderr saying what runs, then a progress line on a terminal (``ProgressLine``)."""
    if total <= over:
        yield from items
        return
    from course.lib.policy.progress import ProgressLine

    info(f"{label}: {total:,} to go ...")
    line = ProgressLine(label, total)
    try:
        for done, item in enumerate(items, 1):
            yield item
            line.update(done)
    finally:
        line.clear()


def shard(text: str) -> Any:
    """``--shard K/N``: part K of N, K from 0 (``course.lib.evaluation.shards``: which items a part holds)."""
    from course.lib.evaluation.shards import parse_shard

    try:
        return parse_shard(text)
    except CourseError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


shard.__name__ = "K/N"


def run(main: Callable[[Sequence[str] | None], int], argv: Sequence[str] | None = None) -> int:
    """Call ``main(argv)``; turn a ``CourseError`` into one stderr line and exit code 2."""
    from course.lib.records.runs import committed, pending, release_pending

    held_before = pending()
    runs_before = len(committed())
    try:
        _refuse_undecodable(sys.argv[1:] if argv is None else argv)
        code = main(argv)
        new_runs = committed()[runs_before:]
        machine = "--json" in (sys.argv[1:] if argv is None else argv)  # stdout is one JSON document then
        if new_runs and not held_before and not machine:  # the outermost tool: name the page that shows its run
            _print_report_hint(new_runs[-1])
        _flush_stdout()  # a reader gone away or a full disk shows here, not in the interpreter's last flush
        return code
    except CourseError as exc:
        _say(f"error: {terminal_line(str(exc))}")  # one line, whatever path or value it quotes
        return EXIT_USAGE
    except OSError as exc:
        if isinstance(exc, BrokenPipeError):
            written = committed()[runs_before:]
            done = (
                f"; {visible(str(written[-1]))} was written whole before" if written
                else " (nothing is left half-written)"
            )
            return output_closed(f"interrupted: the output pipe closed{done}")
        # Read-only directory, disk full, name too long, a file where a directory should be:
        # the user's environment, not a bug of the tool. One line naming the path and the cause,
        # the user's path: a temporary of this process is named by what it stands for.
        from course.lib.records.temporaries import user_path

        where = f"{user_path(exc.filename)}: " if exc.filename is not None else ""
        _say(f"error: {terminal_line(f'{where}{exc.strerror or exc}')}")
        return EXIT_USAGE
    except ImportError as exc:
        # An extra that find_spec sees but that cannot be imported (a dependency of it missing):
        # one line like a missing extra (course.lib.extras). The project's own imports stay tracebacks.
        from course.lib.extras import broken

        problem = broken(exc)
        if problem is None:
            raise
        _say(f"error: {terminal_line(problem)}")
        return EXIT_USAGE
    except KeyboardInterrupt:
        _say("interrupted: nothing was written")
        return 130
    finally:
        # A run name this call reserved but never used: remove its temporary directory.
        release_pending(keep=held_before)


def _refuse_undecodable(args: Sequence[str]) -> None:
    """Every argument must be UTF-8 text: paths, names and prompts are recorded in UTF-8 files
    (manifests, rollouts), and bytes that are not UTF-8 (Python keeps them as lone surrogates)
    could only fail later, mid-run, as a traceback. One line, exit 2, before any work."""
    for i, arg in enumerate(args):
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            option, _, value = arg.partition("=") if arg.startswith("--") and "=" in arg else ("", "", arg)
            if not option and i > 0 and args[i - 1].startswith("-"):
                option = args[i - 1]
            try:
                shown = repr(os.fsencode(value))
            except UnicodeEncodeError:  # a surrogate no byte decodes to (a caller passed str directly)
                shown = ascii(value)
            where = f"{ascii(option)[1:-1]} " if option else ""
            raise CourseError(
                f"{where}{shown}: the argument holds bytes that are not UTF-8; the course records its "
                "arguments in UTF-8 files, so give names and text as UTF-8"
            )


def _print_report_hint(run_dir: Any) -> None:
    """Last line of every tool that wrote a run: the command that shows it as an HTML page."""
    from course.lib.records.runs import run_tool
    from course.lib.reporting.views import REPORTABLE_TOOLS

    if run_tool(run_dir) in REPORTABLE_TOOLS:
        print(f"View it: {command(['python', '-m', 'course.report', run_dir])}", flush=True)


def _flush_stdout() -> None:
    """Flush what the tool printed while its failure can still be reported: a closed pipe is
    ``output_closed``'s; any other error (stdout on a full disk, ``> /dev/full``) is named ``<stdout>``,
    since the system gives it no path."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, "<stdout>") from None


def _say(line: str) -> None:
    """The last line of a tool on stderr; stderr may itself be a pipe whose reader left (``2>&1 | head``)."""
    try:
        print(line, file=sys.stderr, flush=True)
    except OSError:
        _go_quiet()


def output_closed(message: str) -> int:
    """A closed output pipe (``python -m course.X 2>&1 | head -2``): the one rule of every tool.

    The tool stops where the write failed, as SIGPIPE stops any Unix tool: the exception has
    already unwound every temporary (a run or file being written is removed, never left half
    written), and the exit code is ``EXIT_PIPE_CLOSED``, never 0, since the work was cut short.
    ``message`` goes to stderr where it can still be read; then both streams point at devnull so
    the interpreter's final flush does not raise again.
    """
    _say(message)
    _go_quiet()
    return EXIT_PIPE_CLOSED


def _go_quiet() -> None:
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        try:
            os.dup2(devnull, stream.fileno())
        except (OSError, ValueError):
            pass
    os.close(devnull)


def stdin_text() -> str:
    """Standard input as UTF-8 text (a completion given as ``-``), read through the one capped reader.

    Bytes, not text mode: text mode would turn ``\\r\\n`` into ``\\n`` before scoring. At most
    ``course.lib.records.jsonl.MAX_READ`` bytes: ``/dev/zero`` on stdin stops there with one line, exit 2.
    """
    from course.lib.records.jsonl import read_stream

    try:
        return read_stream(sys.stdin.buffer, "<stdin>", "completion").decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CourseError(f"<stdin>: not valid UTF-8 ({exc.reason} at byte {exc.start})") from None


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


def add_run_options(parser: Any, outdir: str, *, plot: str | None = None,
                    force: str = "overwrite an existing run directory") -> None:
    """The flags of every tool that writes a run directory: ``--plot`` (when the tool draws one; ``plot`` is
    its help), ``--outdir`` and ``--force``, each with the tool's own help text."""
    if plot is not None:
        parser.add_argument("--plot", action="store_true", help=plot)
    parser.add_argument("--outdir", default=None, help=outdir)
    parser.add_argument("--force", action="store_true", help=force)


# ---------------------------------------------------------------------------
# Flags generated from a settings dataclass (Loop C's: course.lib.learning.rl_config)
# ---------------------------------------------------------------------------
def add_settings_flags(p: Any, preset: Any, *, after: dict[str, Callable[[Any], None]] | None = None) -> None:
    """One flag per field of the frozen dataclass ``preset``, in field order, from each field's metadata:
    ``help`` (a text whose ``{default}`` is the preset's value, or a function of it), ``bounds`` (low,
    high: ``int_in``/``float_in``; (1, None) is ``positive_int``), ``seed`` (the ``seed`` type), ``choices``,
    ``metavar``, and ``default_flag`` when the flag's default is not the preset's value. ``after[name](p)``
    adds a tool's own options right after the flag of the field ``name``."""
    for f in dataclasses.fields(preset):
        m, value = f.metadata, getattr(preset, f.name)
        text = m["help"](value) if callable(m["help"]) else m["help"].format(default=value)
        kwargs: dict[str, Any] = {"help": text,
                                  "default": value if m.get("default_flag", ...) is ... else m["default_flag"]}
        if m.get("choices") is not None:
            kwargs["choices"] = m["choices"]
        elif m.get("seed"):
            kwargs["type"] = seed
        elif m.get("bounds") is not None:
            kwargs["type"] = _bounded(type(value), *m["bounds"])
        if m.get("metavar") is not None:
            kwargs["metavar"] = m["metavar"]
        p.add_argument("--" + f.name.replace("_", "-"), **kwargs)
        if after and f.name in after:
            after[f.name](p)


def _bounded(kind: type, low: Any, high: Any) -> Callable[[str], Any]:
    """The shared argument type for a field's bounds."""
    if kind is float:
        return float_in(low, high)
    return positive_int if (low, high) == (1, None) else int_in(low, high)


def settings_from_args(preset: Any, args: Any) -> Any:
    """``preset`` with every field the parsed ``args`` hold (the same names): built, and so checked
    (its ``__post_init__`` raises ``CourseError``: one line, exit 2), once."""
    return dataclasses.replace(preset, **{f.name: getattr(args, f.name) for f in dataclasses.fields(preset)})


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.cli"))
