"""The real LLM's recipe, chosen on dev: one run per candidate, never a holdout sample, and the no-signal figures.

    python scripts/recipe_dev_runs.py                       # every candidate, seed 0 (hours on a loaded 2-core machine)
    python scripts/recipe_dev_runs.py --only base ds4       # some of them
    python scripts/recipe_dev_runs.py --only ds4_s40 --slice-items 100 --eval-samples 4 --threads 2
    python scripts/recipe_dev_runs.py --existing base=runs/dev_base \\
        ds4=runs/dev_ds4   # print the table of runs made already

Each candidate is ``course.llm.rl`` with ``--no-holdout`` (the holdout is never sampled while choosing)
and the recipe's other settings; the table says, per candidate: the RFT pool (problems kept), the
share of groups without a signal (all rewards equal) among those DRAWN (the policy's own share) and
among those TRAINED on, at the first step and over the steps run, the samples that carried a gradient,
the fixed dev slice's strict pass (math_dev, 48 items x 2) after the warm start and at the end, and the
seconds of RL. ``--existing`` reads the rl_log.jsonl of runs made by these commands (a run directory
whose log stopped early, e.g. a run still going, is read as far as it goes and says how many steps).
It is a script, not a test or a benchmark: its figures are dev figures for docs/llm.md.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

BASE = ["--template", "fewshot", "--warm-start", "rft", "--rft-problems", "256", "--rft-samples", "8", "--steps", "20",
        "--prompts-per-step", "8", "--group-size", "8", "--lr", "5e-4", "--beta", "0.05", "--max-tokens", "16",
        "--eval-every", "10", "--slice-items", "48", "--eval-samples", "2", "--no-holdout", "--threads", "1"]
CANDIDATES: dict[str, tuple[str, list[str]]] = {
    "base": ("the recipe before (issue 32's starting point)", []),
    "ds4": ("dynamic sampling, up to 4 draws per step", ["--dynamic-sampling", "4"]),
    "ds4_s40": ("dynamic sampling 4, 40 steps (the time the faster sampler saves; the dev slice every 10 steps)",
                ["--dynamic-sampling", "4", "--steps", "40"]),
    "g16": ("larger groups: 4 problems x 16 samples (the same 64 rows)",
            ["--prompts-per-step", "4", "--group-size", "16"]),
    # Issue 43: the run in less time means fewer completions for the same lift. Each of these costs about half
    # of ds4_s40's RL sampling and training: half the updates at twice the step size, or the same number of
    # updates on half-size batches; pool128 also halves the warm start's pool.
    "s20_lr1e3": ("dynamic sampling 4, 20 steps at lr 1e-3 (half the updates, twice the step)",
                  ["--dynamic-sampling", "4", "--steps", "20", "--lr", "1e-3"]),
    "p4_s40_lr1e3": ("dynamic sampling 4, 40 steps of 4 problems x 8 at lr 1e-3 (half-size batches)",
                     ["--dynamic-sampling", "4", "--steps", "40", "--prompts-per-step", "4", "--lr", "1e-3"]),
    "s40_lr1e3": ("dynamic sampling 4, 40 steps at lr 1e-3 (the recipe's cost, twice its step size)",
                  ["--dynamic-sampling", "4", "--steps", "40", "--lr", "1e-3"]),
    "ds3_s40": ("dynamic sampling 3, 40 steps (a quarter less sampling per step than ds4_s40)",
                ["--dynamic-sampling", "3", "--steps", "40"]),
    "s20_lr2e3": ("dynamic sampling 4, 20 steps at lr 2e-3",
                  ["--dynamic-sampling", "4", "--steps", "20", "--lr", "2e-3"]),
    "pool128_p4_s40_lr1e3": ("p4_s40_lr1e3 after a warm start from half the pool (128 problems x 8)",
                             ["--dynamic-sampling", "4", "--steps", "40", "--prompts-per-step", "4", "--lr", "1e-3",
                              "--rft-problems", "128"]),
    # The recipe's steps in bfloat16 products (course.llm.precision): the same compute, each product 2-3x faster
    # on a CPU with bfloat16 instructions; another policy's numbers, so it is chosen on dev like any setting.
    "bf16_ds4_s40": ("ds4_s40 with --precision bfloat16 (the same steps, the blocks' products in bfloat16)",
                     ["--dynamic-sampling", "4", "--steps", "40", "--precision", "bfloat16"]),
}


def read_log(run: Path) -> list[dict]:
    path = run / "rl_log.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def row(name: str, run: Path) -> str:
    log = read_log(run)
    steps = [r for r in log if r["step"] > 0]
    evals = [r["eval"] for r in log if "eval" in r]
    summary = json.loads((run / "summary.json").read_text(encoding="utf-8")) if (run / "summary.json").exists() else {}
    warm = summary.get("warm_start") or {}

    def drawn(r: dict) -> float:
        return r.get("dynamic_sampling", {}).get("no_signal_groups_drawn", r["no_signal_groups"])

    def mean(xs: list[float]) -> str:
        return f"{100 * sum(xs) / len(xs):.0f}%" if xs else "—"

    first = steps[0] if steps else None
    pool = f"{warm['problems_kept']}/{warm['problems']}" if warm else "—"
    return (f"| {name} | {len(steps)} | {pool} | "
            f"{mean([drawn(first)]) if first else '—'} → {mean([first['no_signal_groups']]) if first else '—'} | "
            f"{mean([drawn(r) for r in steps])} → {mean([r['no_signal_groups'] for r in steps])} | "
            f"{sum(r['pg_samples'] for r in steps)} | "
            + " → ".join(f"{e['slice_strict_pass']:.3f}" for e in evals)
            + f" (steps {', '.join(str(e['step']) for e in evals)}; {evals[0]['slice_n']} samples each) |"
            if evals else f"| {name} | {len(steps)} | {pool} | — | — | — | — |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", nargs="+", choices=sorted(CANDIDATES), default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--existing", nargs="+", default=None, metavar="NAME=RUN")
    # The dev slice's size and the thread count (later flags override BASE's): the slice of 48 items x 2 is
    # cheap but moves by several points between evaluations; all 100 dev items x 4 tells steps apart better.
    ap.add_argument("--slice-items", type=int, default=48)
    ap.add_argument("--eval-samples", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--keep", default=None, metavar="DIR",
                    help="keep the run directories under DIR (DIR/<candidate>) instead of a temporary folder")
    args = ap.parse_args(argv)
    overrides = ["--slice-items", str(args.slice_items), "--eval-samples", str(args.eval_samples),
                 "--threads", str(args.threads)]
    with tempfile.TemporaryDirectory() as tmp:
        if args.keep:
            tmp = args.keep
        if args.existing:
            runs = {k: Path(v) for k, v in (e.split("=", 1) for e in args.existing)}
        else:
            runs = {}
            for name in args.only or CANDIDATES:
                out = Path(tmp) / name
                cmd = [sys.executable, "-m", "course.llm.rl", *BASE, *overrides, *CANDIDATES[name][1],
                       "--seed", str(args.seed), "--outdir", str(out)]
                print("python -m course.llm.rl " + " ".join(cmd[3:]), file=sys.stderr)
                subprocess.run(cmd, cwd=ROOT, check=True)
                runs[name] = out
        print("| candidate | RL steps | RFT pool kept | no-signal groups at step 1: drawn → trained "
              "| mean over the steps: drawn → trained "
              "| samples with signal | dev slice strict pass: after the warm start, then at each evaluation |")
        print("|---|---:|---|---|---|---:|---|")
        for name, run in runs.items():
            print(row(name, run))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
