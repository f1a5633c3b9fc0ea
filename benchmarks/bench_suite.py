"""Benchmark: how long the test suite takes, run exactly as the README says (``python -m pytest``).

    python benchmarks/bench_suite.py             # three runs; the median, the first and the spread
    python benchmarks/bench_suite.py --runs 5
    python benchmarks/bench_suite.py --record    # also write benchmarks/results/bench_suite.json

Each run is ``python -m pytest`` from the repository root in a fresh process (the default
options of pyproject.toml: every core via pytest-xdist, the slow tests left out), timed from
process start to exit. The first run is shown apart: it pays for one-time caches (bytecode,
hypothesis's) that a fresh clone does not have yet. The pass and skip counts come from pytest's
own summary line; which tests skip depends on the extras installed, listed with the figures, and
why each was skipped comes from the suite's own skip summary (tests/conftest.py): the skips for a
missing extra (or a library that lives in a venv of its own) are counted apart from the others,
whose reasons are recorded. Nothing is asserted: a failing suite is reported, and not recorded.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from record import ROOT, Recorder, add_arguments  # noqa: E402

sys.path.insert(0, str(ROOT))
from course.lib.extras import EXTRAS, missing  # noqa: E402

_COUNT = re.compile(r"(\d+) (passed|failed|skipped|deselected|errors?|xfailed|xpassed)")


_GROUP = re.compile(r"^  (\d+)  (.+?):?$")
_OTHER = re.compile(r"^       (\d+)  (.+)$")


def run_suite() -> tuple[float, dict[str, int], int, list[str]]:
    """One ``python -m pytest``: (wall seconds, counts from its summary line, exit code, its skip summary)."""
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "pytest"], cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - start
    lines = proc.stdout.strip().splitlines()
    summary = lines[-1] if lines else ""
    counts = {kind.rstrip("s") if kind.startswith("error") else kind: int(n) for n, kind in _COUNT.findall(summary)}
    skips = [line for line in lines if _GROUP.match(line) or _OTHER.match(line)]
    return wall, counts, proc.returncode, skips


def skip_groups(lines: list[str]) -> tuple[dict[str, int], list[str]]:
    """The suite's skip summary read back: {group: count}, and the reasons of the skips that are not an extra.

    >>> skip_groups(["  5  extra trl", "  1  own venv", "  2  not an extra:", "       2  needs root"])
    ({'extra trl': 5, 'own venv': 1, 'not an extra': 2}, ['needs root (2)'])
    """
    groups: dict[str, int] = {}
    others: list[str] = []
    for line in lines:
        other = _OTHER.match(line)
        if other:
            others.append(f"{other.group(2)} ({other.group(1)})")
            continue
        found = _GROUP.match(line)
        if found:
            groups[found.group(2)] = int(found.group(1))
    return groups, others


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="how many times to run the suite (default 3)")
    add_arguments(parser)
    args = parser.parse_args(argv)
    rec = Recorder.from_args("bench_suite", args, argv)
    installed = [name for name in EXTRAS if not missing(name)]
    print(f"python -m pytest, {args.runs} runs from {ROOT}; extras installed: {', '.join(installed) or 'none'}")
    walls: list[float] = []
    counts: dict[str, int] = {}
    skips: list[str] = []
    for i in range(args.runs):
        wall, counts, code, skips = run_suite()
        shown = ", ".join(f"{n} {k}" for k, n in counts.items())
        print(f"  run {i + 1}: {wall:6.1f} s  ({shown}; exit {code})", flush=True)
        if code != 0:
            print("the suite failed: nothing recorded (fix the suite first)", file=sys.stderr)
            return 1
        walls.append(wall)
    median = statistics.median(walls)
    print(f"median {median:.1f} s over {len(walls)} runs (first {walls[0]:.1f} s, fastest {min(walls):.1f} s, "
          f"slowest {max(walls):.1f} s)")
    rec.figure("median_seconds", median, "s", f"`python -m pytest`, median of {len(walls)} runs", digits=1)
    rec.figure("first_run_seconds", walls[0], "s", "the first of those runs (one-time caches not yet warm)", digits=1)
    rec.figure("fastest_seconds", min(walls), "s", "fastest run", digits=1)
    rec.figure("slowest_seconds", max(walls), "s", "slowest run", digits=1)
    rec.figure("passed", counts.get("passed", 0), "", "tests passed")
    groups, others = skip_groups(skips)
    for name, n in groups.items():
        print(f"  skipped: {n} {name}")
    for reason in others:
        print(f"    {reason}")
    other = groups.get("not an extra", 0)
    rec.figure("skipped", counts.get("skipped", 0), "", "tests skipped")
    rec.figure("skipped_missing_extra", counts.get("skipped", 0) - other, "",
               "of which their extra (or a library kept in a venv of its own) is not installed")
    rec.figure("skipped_other", other, "", "of which for another reason (listed below)")
    rec.remark(f"Extras installed: {', '.join(installed) or 'none'}. "
               "The slow tests (`python -m pytest -m slow`) are not included.")
    if groups:
        rec.remark("Skipped, by what they need: " + "; ".join(f"{name} {n}" for name, n in groups.items()) + ".")
    if others:
        rec.remark("Skipped for another reason: " + "; ".join(others) + ".")
    rec.save()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
