"""Benchmark: how fast the Loop C microscopes run (targets: 10,000 bandit steps < 1 s; each demo in seconds).

Prints one line per measurement; nothing is asserted (performance is measured, not tested).

    python benchmarks/bench_bandit.py
    python benchmarks/bench_bandit.py --repeat 5

Measured:
  * the REINFORCE loop alone (``course.bandit_train.reinforce``: sample, score lookup, exact J
    and exact gradient, update) for 10,000 steps, best of --repeat runs;
  * each demo as a student runs it, in a fresh interpreter (``python -m ...``), into a
    temporary run directory: wall time including Python start-up and imports.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a clone without installing
from record import Recorder, add_arguments  # noqa: E402

from course.bandit_train import DEFAULT_ACTIONS, EXAMPLE, reinforce, score_actions  # noqa: E402

DEMOS: list[tuple[str, list[str]]] = [
    (
        "bandit demo (30 steps --slow)",
        ["course.bandit_train", "--steps", "30", "--seed", "0", "--lr", "0.5", "--baseline", "--slow"],
    ),
    (
        "bandit demo, lr -0.5",
        ["course.bandit_train", "--steps", "30", "--seed", "0", "--lr", "-0.5", "--baseline", "--slow"],
    ),
    ("bandit 10,000 steps (log + story)", ["course.bandit_train", "--steps", "10000"]),
    (
        "bandit ablation (200 seeds x 100 steps x 2 regimes)",
        ["course.bandit_train", "--ablation", "--seeds", "200", "--steps", "100"],
    ),
    ("toy_mdp (300 episodes)", ["course.toy_mdp"]),
    ("kl_tradeoff_demo (11 betas)", ["course.kl_tradeoff_demo"]),
    ("kl_tradeoff_demo --plot", ["course.kl_tradeoff_demo", "--plot"]),
    ("token_inspect (5 defaults)", ["course.token_inspect"]),
]


def bench_loop(steps: int, repeat: int) -> float:
    rewards = [a.reward for a in score_actions(EXAMPLE, DEFAULT_ACTIONS)]
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in reinforce(rewards, steps=steps, lr=0.5, use_baseline=True, rng=random.Random(0)):
            pass
        best = min(best, time.perf_counter() - start)
    return best


def bench_demo(module_args: list[str], outdir: Path) -> float:
    # token_inspect writes no run directory; every other demo gets a fresh one.
    extra = [] if module_args[0] == "course.token_inspect" else ["--outdir", str(outdir)]
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", *module_args, *extra], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description="Time the bandit loop and each Loop C demo.")
    parser.add_argument("--repeat", type=int, default=3, help="runs of the in-process loop; the best is reported")
    parser.add_argument("--steps", type=int, default=10_000, help="bandit steps for the loop benchmark")
    add_arguments(parser)
    args = parser.parse_args()
    rec = Recorder.from_args("bench_bandit", args)

    t = bench_loop(args.steps, args.repeat)
    print(
        f"{'REINFORCE loop, ' + format(args.steps, ',') + ' steps (in-process, best of ' + str(args.repeat) + ')':<72}"
        f" {t:7.3f} s   ({t / args.steps * 1e6:.1f} us/step; target < 1 s)"
    )
    rec.figure(
        "loop_seconds",
        t,
        "s",
        f"REINFORCE loop, {args.steps:,} steps in process (best of {args.repeat}; target under 1 s)",
        digits=3,
    )
    with tempfile.TemporaryDirectory() as tmp:
        for i, (label, module_args) in enumerate(DEMOS):
            t = bench_demo(module_args, Path(tmp) / f"run_{i}")
            print(f"{label + ' (python -m, wall)':<72} {t:7.3f} s")
            rec.figure(f"demo_{i}_seconds", t, "s", f"{label}: `python -m {' '.join(module_args)}`, wall", digits=2)
    rec.save()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
