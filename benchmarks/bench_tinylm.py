"""Benchmark: the tiny LM's Loop C target, measured. Wall time, peak memory, holdout pass@1 before/after.

    python benchmarks/bench_tinylm.py                       # the default strict run (seed 0)
    python benchmarks/bench_tinylm.py --seed 1 --keep runs/bench_rl_seed1
    python benchmarks/bench_tinylm.py --repeat              # also rerun and compare rl_log.jsonl bytes

What it does: runs ``python -m course.tinylm.rl --rubric strict --seed S --outdir DIR``
with its defaults, in a fresh child process (so the child's own peak RSS is
measured, via ``resource.getrusage`` inside the child), then reads the run's
summary.json and prints:

  * wall time of the whole run (training + pi0/final holdout sampling + course.eval + course.gate)
  * peak resident memory of the child
  * math_holdout pass@1 of pi0 and of the final policy (8 samples per item, Wilson 95 %)
    and the lift with its paired-bootstrap interval; the course.eval single-sample rates; the gate verdict
  * sampling throughput of pi0 (completions per second on math_dev, n = 8)

Targets (issue 7): lift >= 15 points, wall time < 5 minutes on 2 cores, peak RSS < 2 GB.
The machine may be shared: the numbers are what this run saw, printed with the
thread count and the load average at the start.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from record import Recorder, add_arguments  # noqa: E402

CHILD = """
import resource, sys
from course.tinylm.rl import main
code = main(sys.argv[1:])
print(f"MAXRSS_KB {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}", file=sys.stderr)
raise SystemExit(code)
"""


def run_rl(outdir: Path, seed: int, extra: list[str]) -> tuple[float, float, str]:
    t0 = time.time()
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, "--rubric", "strict", "--seed", str(seed), "--outdir", str(outdir), *extra],
        cwd=ROOT, capture_output=True, text=True,
    )
    wall = time.time() - t0
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        raise SystemExit(f"rl run failed with exit code {proc.returncode}")
    rss_kb = next(int(line.split()[1]) for line in proc.stderr.splitlines() if line.startswith("MAXRSS_KB"))
    return wall, rss_kb / 1024, proc.stderr


def sampling_throughput() -> float:
    code = (
        "import time, torch\n"
        "from course.tinylm import PI0_PATH\n"
        "from course.tinylm.model import load_checkpoint\n"
        "from course.tinylm.policy import sample_items, set_threads\n"
        "from course.tinylm.sft_data import DEFAULT_DATASETS, read_items\n"
        "set_threads(2); m, _ = load_checkpoint(PI0_PATH)\n"
        "items = [(it['id'], it['prompt']) for it in read_items(DEFAULT_DATASETS[0])]\n"
        "t = time.time(); sample_items(m, items, n=8, seed=0); print(len(items) * 8 / (time.time() - t))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--keep", default=None, help="keep the run directory here (default: a temp dir, deleted)")
    ap.add_argument("--repeat", action="store_true", help="run twice and compare rl_log.jsonl bytes (reproducibility)")
    add_arguments(ap)
    args, extra = ap.parse_known_args()
    rec = Recorder.from_args("bench_tinylm", args)

    load = os.getloadavg()
    print(f"machine: {os.cpu_count()} CPUs, load average at start {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    with tempfile.TemporaryDirectory() as tmp:
        outdir = Path(args.keep) if args.keep else Path(tmp) / "rl_bench"
        wall, rss_mb, _ = run_rl(outdir, args.seed, extra)
        summary = json.loads((outdir / "summary.json").read_text(encoding="utf-8"))
        h = summary["holdout"]
        print(f"rl --rubric strict --seed {args.seed} (defaults): wall {wall:.1f}s (training {summary['train_seconds']:.1f}s), "
              f"peak RSS {rss_mb:.0f} MB")
        run = f"`course.tinylm.rl --rubric strict --seed {args.seed}`"
        rec.figure("wall_seconds", wall, "s", f"{run}: wall time of the whole run (training, holdout sampling, eval, gate)", digits=1)
        rec.figure("train_seconds", summary["train_seconds"], "s", f"{run}: of which training", digits=1)
        rec.figure("peak_rss_mb", rss_mb, "MB", f"{run}: peak memory", digits=0)
        for tag in ("pi0", "final"):
            x = h[tag]
            print(f"  holdout {tag:5s} {x['policy']}: pass@1 {x['pass_at_1']:.3f} (Wilson 95% {x['pass_at_1_wilson95'][0]:.3f}-"
                  f"{x['pass_at_1_wilson95'][1]:.3f}, {x['samples']} samples); course.eval {x['eval_passed']}/{x['eval_n']}")
        lo, hi = h["lift_paired_bootstrap95"]
        rec.remark(f"Holdout strict pass@1 (8 samples per item): pi0 {100 * h['pi0']['pass_at_1']:.1f}% → final "
                   f"{100 * h['final']['pass_at_1']:.1f}%, lift {100 * h['lift_pass_at_1']:+.1f} points (paired bootstrap 95% "
                   f"{100 * lo:+.1f} to {100 * hi:+.1f}); gate {h['gate'].get('verdict')}.")
        print(f"  lift {100 * h['lift_pass_at_1']:+.1f} points (paired bootstrap 95% {100 * lo:+.1f} to {100 * hi:+.1f}); "
              f"gate {h['gate'].get('verdict')}")
        t = summary["final_train"]
        print(f"  KL to pi0 at the end: {t['kl_k1_per_token']:.4f}/token (k1), {t['kl_k3_per_token']:.4f}/token (k3), "
              f"{t['kl_k1_per_sample']:.3f}/completion")
        ok = h["lift_pass_at_1"] >= 0.15 and wall < 300 and rss_mb < 2048
        print(f"  targets (lift >= 15 points, < 300 s, < 2048 MB): {'MET' if ok else 'NOT MET'}")
        if args.repeat:
            outdir2 = Path(tmp) / "rl_bench_repeat"
            run_rl(outdir2, args.seed, extra)
            same = (outdir / "rl_log.jsonl").read_bytes() == (outdir2 / "rl_log.jsonl").read_bytes()
            same_w = (outdir / "final.pt").read_bytes() == (outdir2 / "final.pt").read_bytes()
            print(f"  rerun with the same seed: rl_log.jsonl {'IDENTICAL' if same else 'DIFFERENT'}, "
                  f"final.pt {'IDENTICAL' if same_w else 'DIFFERENT'}")
    throughput = sampling_throughput()
    print(f"pi0 sampling throughput: {throughput:.0f} completions/s (math_dev, n=8, 2 threads)")
    rec.figure("pi0_completions_per_s", throughput, "completions/s", "pi0 sampling throughput (math_dev, 8 per prompt, 2 threads)", digits=0)
    rec.save()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
