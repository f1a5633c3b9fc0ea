"""Benchmark: how close is ``course.eval`` to the minimal loop, and does its memory stay flat?

    python benchmarks/bench_eval.py                      # 100,000 and 1,000,000 lines
    python benchmarks/bench_eval.py --sizes 10000 100000 # quicker

For each size N it writes a synthetic dataset of N items and a matching
rollout file (in a temporary directory, deleted afterwards), then runs the
whole pipeline — read and validate both files, score, write results.jsonl,
summary.json, summary.md and the manifest — in a fresh child process, and
reports wall time, lines per second and the child's peak resident memory
(``course.lib.records.manifest.peak_rss_kib``: the child's own VmHWM). "Flat" means peak memory grows only
by the duplicate-id check, an 8-byte digest per dataset id in a table at most
half full (16 to 32 bytes per id, ~17 MB at a million ids); everything else is
one line at a time.

The completions are a realistic mix (about 30 % correct; wrong answers, format
slips, Unicode look-alikes, multi-line reasoning) so the scorer's failure
diagnosis is exercised, not only its fast path.

The reference is the *minimal* loop: read a completion line, ``json.loads``,
``score``, ``dumps_line``, write — no dataset, no checks, no summary. The
target (issue #11) is course.eval within 1.3x of it; the line after each
size says whether this run met it (CPU time, the fairer figure on a shared
machine). The same minimal loop is also timed with msgspec (a typed Struct) and
orjson when they are installed, for the record.

The reader's two paths (issue #26). With orjson installed (the ``fast`` extra)
``course.lib.records.jsonl`` reads each line with orjson first and keeps its answer only
where it is certainly the standard library's (see ``_fast_object``); the core
alone reads with the standard library's ``json``. When orjson is installed,
``course.eval`` is therefore run both ways in interleaved pairs (``--pairs``,
medians of the per-pair ratios), and the two runs' results.jsonl and
summary.json are compared byte for byte. Before that, the reader alone, in
process: microseconds per line of ``parse_line`` on both paths, of
``orjson.loads`` by itself, and of the fast path's exact repeated-key check.

Shuffled completions (skipped with ``--no-shuffled``) switch course.eval to its
indexed mode; its time and peak memory are printed, beside the same run with
the items held in memory as before issue #26 (the indexed mode's exact fallback,
forced), and its outputs are compared with the aligned run's.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from record import CHILD_PRELUDE, Recorder, add_arguments  # noqa: E402

TARGET_RATIO = 1.3  # course.eval within 1.3x of the minimal read-parse-score-write loop (issue #11)
SAMPLING = {"max_tokens": 32, "seed": 0, "temperature": 0.8, "top_p": 0.95}


def _completion(rng: random.Random, answer: int) -> str:
    roll = rng.random()
    if roll < 0.30:
        return f"Final: {answer}"
    if roll < 0.62:
        return f"Final: {answer + rng.choice((-10, -1, 1, 2, 100))}"
    if roll < 0.70:
        return f"Let me compute step by step.\nFinal: {answer}"
    if roll < 0.76:
        return f"Final:{answer}"
    if roll < 0.82:
        return f"Final: {answer}."
    if roll < 0.86:
        return f"final: {answer}"
    if roll < 0.90:
        return f"The answer is {answer}"
    if roll < 0.93:
        return f"Final: \u2212{abs(answer)}"
    if roll < 0.96:
        return "Final: " + str(answer).translate(str.maketrans("0123456789", "０１２３４５６７８９"))
    if roll < 0.98:
        return f"Final: {answer:,}"
    return ""


def make_files(directory: Path, n: int, seed: int = 0) -> tuple[Path, Path]:
    """Write an n-item dataset and its rollouts (dataset order), as the course's tools would."""
    rng = random.Random(seed)
    sampling = json.dumps(SAMPLING, sort_keys=True, separators=(", ", ": "))
    dataset, completions = directory / "bench_dev.jsonl", directory / "bench_rollouts.jsonl"
    with (open(dataset, "w", encoding="utf-8", newline="\n") as d,
          open(completions, "w", encoding="utf-8", newline="\n") as c):
        for i in range(1, n + 1):
            a, b = rng.randint(-999, 9999), rng.randint(1, 999)
            answer = a + b
            ident = f"bench-{i:07d}"
            prompt = f"Compute {a} + {b}. Output exactly one line: Final: <int>"
            d.write(f'{{"expected_answer": {answer}, "id": "{ident}", "prompt": "{prompt}"}}\n')
            text = json.dumps(_completion(rng, answer), ensure_ascii=False)
            c.write(f'{{"completion": {text}, "id": "{ident}", "policy": "bench-policy", "sampling": {sampling}}}\n')
    return dataset, completions


CHILD = CHILD_PRELUDE + r"""
import json, resource, sys, time
from pathlib import Path
rss_before = peak_rss_kib()
mode = sys.argv[4]
if mode == "minimal-msgspec":
    import msgspec

    class Rollout(msgspec.Struct):  # typed decode: the fields the loop uses
        id: str
        completion: str | None
    loads = msgspec.json.Decoder(Rollout).decode
elif mode == "minimal-orjson":
    import orjson
    loads = orjson.loads
else:
    loads = json.loads
from course.lib.records.jsonl import dumps_line
from course.instrument.spec_v1 import score
t0, cpu0 = time.perf_counter(), time.process_time()
if mode.startswith("minimal"):
    # The minimal loop: read a completion line, parse it, score it, write its results line.
    # No dataset, no checks, no summary: the floor any course.eval could approach.
    typed = mode == "minimal-msgspec"
    n = passed = 0
    with open(sys.argv[2], "rb") as f, open(sys.argv[3] + ".jsonl", "w", encoding="utf-8") as out:
        for raw in f:
            r = loads(raw)
            ident, text = (r.id, r.completion) if typed else (r["id"], r["completion"])
            s = score({"expected_answer": 5}, text)
            out.write(dumps_line({"id": ident, "completion": text, "expected": 5,
                                  "reward": s["reward"], "details": s["details"]}) + "\n")
            n += 1
else:
    from course.lib.records import jsonl
    from course.lib.evaluation.pipeline import evaluate
    jsonl.use_fast_decoder(mode != "eval-stdlib")  # "eval": orjson first when installed
    if mode == "eval-in-memory":  # the indexed mode as it was before #26: every item held in memory
        from course.lib.evaluation import pipeline
        def _collide(*args):
            raise pipeline._DigestsCollide
        pipeline._score_by_offsets = _collide
    run_dir, manifest, summary = evaluate(Path(sys.argv[1]), Path(sys.argv[2]), outdir=sys.argv[3], argv=[])
    n, passed = summary["n"], summary["passed"]
print(json.dumps({"n": n, "passed": passed, "seconds": time.perf_counter() - t0,
                  "cpu_seconds": time.process_time() - cpu0, "rss_before_kib": rss_before,
                  "peak_rss_kib": peak_rss_kib()}))
"""


def measure(dataset: Path, completions: Path, outdir: Path, mode: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(dataset), str(completions), str(outdir), mode],
        cwd=ROOT, capture_output=True, text=True, check=True,
    )
    return json.loads(out.stdout)


def _row(label: str, n: int, r: dict, note: str = "") -> str:
    return (
        f"{n:>10,} {label:>16} {r['seconds']:>7.2f} {n / r['seconds']:>9,.0f} "
        f"{r['cpu_seconds']:>7.2f} {n / r['cpu_seconds']:>9,.0f} {r['peak_rss_kib'] / 1024:>8.1f}MB{note}"
    )


def reader_per_line(dataset: Path, completions: Path, limit: int = 200_000) -> dict[str, float]:
    """Microseconds per line, in this process (best of 3 passes over the first ``limit`` lines of each
    file): ``parse_line`` on the standard library's path and on the fast path, ``orjson.loads`` by itself,
    and the fast path's repeated-key check (``dumps`` + two colon counts) by itself."""
    import time

    import orjson

    from course.lib.records import jsonl

    lines: list[bytes] = []
    for path in (completions, dataset):
        with open(path, "rb") as f:
            lines += [line for _, line in zip(range(limit), f)]
    values = [orjson.loads(line) for line in lines]
    dumps = orjson.dumps

    def best(loop) -> float:  # type: ignore[no-untyped-def]
        times = []
        for _ in range(3):
            t0 = time.process_time()
            loop()
            times.append(time.process_time() - t0)
        return 1e6 * min(times) / len(lines)

    def parse_all() -> None:
        for line in lines:
            jsonl.parse_line(line, "x", 2)

    out = {}
    try:
        jsonl.use_fast_decoder(False)
        out["stdlib"] = best(parse_all)
        jsonl.use_fast_decoder(True)
        out["fast"] = best(parse_all)
    finally:
        jsonl.use_fast_decoder(True)
    def loads_all() -> None:
        loads = orjson.loads
        for line in lines:
            loads(line)

    def check_all() -> None:
        for line, value in zip(lines, values):
            line.count(b":") != dumps(value).count(b":")  # noqa: B015 - timed, not used

    out["loads"] = best(loads_all)
    out["dup_check"] = best(check_all)
    return out


READER_CHILD = """
import json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from bench_eval import reader_per_line
print(json.dumps(reader_per_line(Path(sys.argv[2]), Path(sys.argv[3]))))
"""


SHUFFLE_CHILD = """
import random, sys
with open(sys.argv[1], "rb") as f:
    lines = f.readlines()
random.Random(0).shuffle(lines)
with open(sys.argv[2], "wb") as f:
    f.writelines(lines)
"""


def _shuffle(src: Path, dst: Path) -> None:
    """The same lines in a seeded random order. In a child process: on Linux a child starts with its
    parent's peak memory as its own, so the benchmark itself must never hold a file."""
    subprocess.run([sys.executable, "-c", SHUFFLE_CHILD, str(src), str(dst)], check=True)


def _available(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--pairs", type=int, default=2,
                    help="interleaved pairs of course.eval with and without orjson (default 2)")
    ap.add_argument("--no-shuffled", action="store_true", help="skip the shuffled-completions (indexed mode) run")
    ap.add_argument("--decoders", nargs="*", choices=["msgspec", "orjson"], default=["msgspec", "orjson"],
                    help="also time the minimal loop with these decoders, when installed (for the record)")
    add_arguments(ap)
    args = ap.parse_args()
    rec = Recorder.from_args("bench_eval", args)
    decoders = [d for d in args.decoders if _available(d)]

    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, load average {os.getloadavg()[0]:.2f} at start; "
          "each run is one process on one core")
    print("'wall' is elapsed time; 'cpu' is the process's own CPU time, the fairer figure on a busy machine.")
    print(f"{'lines':>10} {'pipeline':>16} {'wall s':>7} {'lines/s':>9} {'cpu s':>7} {'lines/s':>9} {'peak RSS':>10}")
    verdict = ""
    fast = _available("orjson")
    with tempfile.TemporaryDirectory(prefix="bench_eval_") as tmp:
        if fast:
            dataset, completions = make_files(Path(tmp), 100_000)
            # In a child process: the lines it holds must not count in the next children's peak memory.
            r = json.loads(subprocess.run([sys.executable, "-c", READER_CHILD, str(Path(__file__).resolve().parent),
                                           str(dataset), str(completions)],
                                          cwd=ROOT, capture_output=True, text=True, check=True).stdout)
            print(f"the reader per line (in process, CPU): standard library {r['stdlib']:.2f} us, "
                  f"fast path {r['fast']:.2f} us "
                  f"({r['stdlib'] / r['fast']:.2f}x); orjson.loads alone {r['loads']:.2f} us, the repeated-key check "
                  f"{r['dup_check']:.2f} us")
            rec.figure("reader_stdlib_us_per_line", r["stdlib"], "µs",
                       "`parse_line`, standard library only, per line (CPU)", digits=2)
            rec.figure("reader_fast_us_per_line", r["fast"], "µs",
                       "`parse_line`, orjson first (the fast extra), per line (CPU)", digits=2)
            rec.figure("reader_dup_check_us_per_line", r["dup_check"], "µs",
                       "of which the exact repeated-key check, per line (CPU)", digits=2)
        for n in args.sizes:
            dataset, completions = make_files(Path(tmp), n)
            size_mb = (dataset.stat().st_size + completions.stat().st_size) / 1e6
            r = measure(dataset, completions, Path(tmp) / f"run_{n}", "eval")
            assert r["n"] == n
            print(_row("course.eval", n, r, f"   (inputs {size_mb:.0f} MB, pass rate {r['passed'] / n:.1%}"
                                           f"{', orjson first' if fast else ''})"))
            if fast:
                both = {"eval": [r], "eval-stdlib": []}
                for k in range(args.pairs):
                    for mode in (("eval-stdlib", "eval") if k % 2 == 0 else ("eval", "eval-stdlib")):
                        if mode == "eval" and k == 0:
                            continue  # the run above is pair 0's
                        both[mode].append(measure(dataset, completions, Path(tmp) / f"run_{n}_{mode}_{k}", mode))
                same = all((Path(tmp) / f"run_{n}" / name).read_bytes()
                           == (Path(tmp) / f"run_{n}_eval-stdlib_0" / name).read_bytes()
                           for name in ("results.jsonl", "summary.json"))
                s = statistics.median(x["seconds"] for x in both["eval-stdlib"])
                wall = statistics.median(a["seconds"] / b["seconds"] for a, b in zip(both["eval-stdlib"], both["eval"]))
                cpu = statistics.median(a["cpu_seconds"] / b["cpu_seconds"]
                                        for a, b in zip(both["eval-stdlib"], both["eval"]))
                print(_row("eval, json only", n, both["eval-stdlib"][0],
                           f"   (standard library only: {wall:.2f}x wall, {cpu:.2f}x cpu "
                           f"the fast path's time, median of {args.pairs} interleaved pairs; outputs "
                           f"{'byte-identical' if same else 'DIFFERENT'})"))
                rec.figure(f"eval_{n}_stdlib_over_fast_cpu", cpu, "×",
                           f"`course.eval`, {n:,} lines: standard library only / orjson first (CPU)", digits=2)
                rec.figure(f"eval_{n}_stdlib_seconds", s, "s",
                           f"`course.eval`, {n:,} lines, standard library only: wall time", digits=2)
            if not args.no_shuffled:
                shuffled = Path(tmp) / "shuffled.jsonl"
                _shuffle(completions, shuffled)
                old = measure(dataset, shuffled, Path(tmp) / f"run_{n}_shuffled_old", "eval-in-memory")
                x = measure(dataset, shuffled, Path(tmp) / f"run_{n}_shuffled", "eval")
                same = all((Path(tmp) / f"run_{n}_shuffled" / name).read_bytes()
                           == (Path(tmp) / f"run_{n}" / name).read_bytes()
                           for name in ("results.jsonl", "summary.json"))
                print(_row("eval, shuffled", n, x, f"   (completions in another order: the indexed mode; outputs "
                                                    f"{'byte-identical to the aligned run' if same else 'DIFFERENT'})"))
                print(_row("  before #26", n, old, "   (the same, every item held in memory, as before issue #26)"))
                rec.figure(f"eval_{n}_shuffled_in_memory_peak_rss_mb", old["peak_rss_kib"] / 1024, "MB",
                           f"`course.eval`, {n:,} lines, shuffled, items held in memory (before #26): peak memory",
                           digits=1)
                rec.figure(f"eval_{n}_shuffled_peak_rss_mb", x["peak_rss_kib"] / 1024, "MB",
                           f"`course.eval`, {n:,} lines, shuffled completions: peak memory", digits=1)
                rec.figure(f"eval_{n}_shuffled_seconds", x["seconds"], "s",
                           f"`course.eval`, {n:,} lines, shuffled completions: wall time", digits=2)
                shuffled.unlink()
            m = measure(dataset, completions, Path(tmp) / f"minimal_{n}", "minimal")
            print(_row("minimal json", n, m, "   (read + json.loads + score + dumps_line; completions only)"))
            rec.figure(f"eval_{n}_seconds", r["seconds"], "s", f"`course.eval`, {n:,} lines: wall time", digits=2)
            rec.figure(f"eval_{n}_lines_per_s", round(n / r["seconds"], -2), "lines/s",
                       f"`course.eval`, {n:,} lines: throughput (wall)")
            rec.figure(f"eval_{n}_peak_rss_mb", r["peak_rss_kib"] / 1024, "MB",
                       f"`course.eval`, {n:,} lines: peak memory", digits=1)
            for decoder in decoders:
                d = measure(dataset, completions, Path(tmp) / f"minimal_{decoder}_{n}", f"minimal-{decoder}")
                print(_row(f"minimal {decoder}", n, d, "   (the same loop, for the record)"))
                rec.figure(f"minimal_{decoder}_{n}_lines_per_s", round(n / d["seconds"], -2), "lines/s",
                           f"the minimal loop with {decoder}, {n:,} lines (for the record)")
            ratio, ratio_cpu = r["seconds"] / m["seconds"], r["cpu_seconds"] / m["cpu_seconds"]
            verdict = (f"course.eval / minimal loop at {n:,} lines: {ratio:.2f}x wall, {ratio_cpu:.2f}x cpu "
                       f"(target <= {TARGET_RATIO}x): {'met' if ratio_cpu <= TARGET_RATIO else 'NOT met'}")
            print(verdict)
            rec.figure(f"ratio_{n}_wall", ratio, "×",
                       f"`course.eval` / minimal loop, {n:,} lines: wall time", digits=2)
            rec.figure(f"ratio_{n}_cpu", ratio_cpu, "×",
                       f"`course.eval` / minimal loop, {n:,} lines: CPU time", digits=2)
    if verdict:
        rec.remark(f"Target: `course.eval` within {TARGET_RATIO}x of the minimal loop's CPU time. {verdict}.")
    print(f"load average {os.getloadavg()[0]:.2f} at end. Memory grows only by the duplicate-id check "
          "(an 8-byte digest per dataset id, 16-32 bytes per id with the table's free slots); "
          "the rest of the pipeline holds one line at a time.")
    rec.save()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
