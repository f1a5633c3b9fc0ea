"""The beta sweep: how far does the policy drift from pi0 for how much reward?

Runs ``course.tinylm.rl`` once per KL weight beta (same seed, same prompts, same
everything else; no holdout evaluation, to keep the sweep short) and tabulates
the end of each run: training reward, strict pass rate on the fixed dev slice,
and KL to pi0 (k1 and k3 per token, k1 per sample). Small beta buys reward with
drift; large beta keeps the policy near pi0 and leaves reward on the table.
Each run's directory is kept inside the sweep's (``beta_0.1/rl_log.jsonl`` ...).

Run it (one rl run's training time per beta: about 2 minutes for these four on 2 idle cores)::

    python -m course.tinylm.sweep --betas 0 0.02 0.1 0.5 --steps 60 --seed 0 --outdir runs/beta_sweep

Writes manifest.json, sweep.csv, sweep.md (the table below) and sweep.png (reward against KL).
"""

from __future__ import annotations

import argparse
import csv
import time
from pathlib import Path
from typing import Any, Sequence

from course.cli import add_run_options, float_in, info, int_in, make_parser, run, seed
from course.errors import CourseError
from course.instrument.rubric_registry import get_rubric
from course.lib.extras import require
from course.lib.learning.rl_config import MAX_STEPS, MAX_THREADS, TINYLM
from course.lib.records.manifest import environment
from course.lib.records.runs import atomic_run_dir, resolve_outdir, write_manifest
from course.lib.reporting.plotting import plot_to
from course.lib.visible import visible
from course.tinylm import rl  # its settings, training loop (rl.train) and run writer (rl.write_run), not its main

MAX_BETAS = 16  # a curve of 16 points shows the trade-off; each point is a training run of minutes

def main(argv: Sequence[str] | None = None) -> int:
    return run(_main, argv)


def build_parser() -> argparse.ArgumentParser:
    p = make_parser(
        "python -m course.tinylm.sweep",
        "Train the tiny LM once per KL weight beta and tabulate final reward against KL to pi0.",
        "  python -m course.tinylm.sweep --betas 0 0.02 0.1 0.5 --steps 60 --seed 0 --outdir runs/beta_sweep",
    )
    p.add_argument("--betas", type=float_in(0.0, 100.0), nargs="+", default=[0.0, 0.02, 0.1, 0.5],
                   help="KL weights to try (default 0 0.02 0.1 0.5)")
    p.add_argument("--steps", type=int_in(1, MAX_STEPS), default=TINYLM.steps,
                   help=f"steps per run (default {TINYLM.steps})")
    p.add_argument("--seed", type=seed, default=0, help="seed shared by every run (default 0)")
    p.add_argument("--rubric", default="strict", help="training rubric (default strict)")
    add_run_options(p, "sweep directory (default: the next free runs/sweep_NNN)",
                    force="overwrite an existing sweep directory")
    p.add_argument("--threads", type=int_in(1, MAX_THREADS), default=TINYLM.threads,
                   help=f"PyTorch threads (default {TINYLM.threads})")
    p.epilog = (p.epilog or "") + (
        "\nAny other option (e.g. --lr 1e-4 --group-size 4) is passed to every course.tinylm.rl run.")
    return p


def _main(argv: Sequence[str] | None) -> int:
    args, passthrough = build_parser().parse_known_args(argv)
    require("lm", "the tiny LM")  # the one rule for a missing extra: one line, exit 2, before any work
    if any(b < 0 for b in args.betas):
        raise CourseError("every beta must be >= 0")
    if len(set(args.betas)) != len(args.betas):
        raise CourseError("--betas lists a value twice")
    if len(args.betas) > MAX_BETAS:  # each beta is a whole training run
        raise CourseError(f"--betas: {len(args.betas)} values; a sweep trains one tiny LM per beta, "
                          f"at most {MAX_BETAS}")
    get_rubric(args.rubric)
    given = rl.build_parser().parse_args(passthrough)  # the runs' own --init/--pi0: never inside the sweep it replaces
    final = resolve_outdir(args.outdir, force=args.force, prefix="sweep", tool="course.tinylm.sweep",
                           inputs=(given.init, given.pi0))
    with atomic_run_dir(final, force=args.force, prefix="sweep") as tmp:
        rows = [run_beta(beta, args, passthrough, tmp, final, argv) for beta in args.betas]
        written = write_outputs(tmp, rows, args)
        # Last, as in every run: the manifest makes the sweep recognisably a run (--force may replace it).
        write_manifest(tmp, {
            **environment("course.tinylm.sweep", argv),
            "settings": {"betas": args.betas, "steps": args.steps, "seed": args.seed, "rubric": args.rubric,
                         "threads": args.threads, "passthrough": list(passthrough)},
            "runs": [r["run"] for r in rows],
        })
    print((final / "sweep.md").read_text(encoding="utf-8"), end="")
    print(f"Wrote {visible(str(final))}/ ({', '.join(written)}, one rl run per beta)")  # only files that exist
    return 0


def run_beta(beta: float, args: Any, passthrough: list[str], tmp: Path, final: Path,
             argv: Sequence[str] | None) -> dict[str, Any]:
    """One course.tinylm.rl run (no holdout) with this beta, in ``tmp``/beta_<beta>; its row of the table."""
    run_args = rl.build_parser().parse_args(
        ["--rubric", args.rubric, "--seed", str(args.seed), "--beta", str(beta), "--steps", str(args.steps),
         "--threads", str(args.threads), "--no-holdout", *passthrough]
    )
    s = rl.settings(run_args)
    sub = tmp / f"beta_{beta:g}"
    sub.mkdir()
    info(f"=== beta {beta:g} ===")
    t0 = time.time()
    trained = rl.train(s, run_args, sub, label=f"beta {beta:g}: rl step")
    summary = rl.write_run(s, run_args, sub, final / sub.name, trained, argv, t0)
    t, e = summary["final_train"], summary["last_eval"]
    return {
        "beta": beta,
        "reward_last5": t["reward"],
        "slice_strict_pass_end": round(e["slice_strict_pass"], 4),
        "slice_strict_pass_start": round(summary["first_eval"]["slice_strict_pass"], 4),
        "kl_k1_per_token": t["kl_k1_per_token"],
        "kl_k3_per_token": t["kl_k3_per_token"],
        "kl_k1_per_sample": t["kl_k1_per_sample"],
        "entropy_per_token": t["entropy_per_token"],
        "run": sub.name,
    }


def write_outputs(out: Path, rows: list[dict[str, Any]], args: Any) -> list[str]:
    """sweep.csv, sweep.md and sweep.png in ``out``; returns the names of the files written."""
    cols = list(rows[0])
    with open(out / "sweep.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=cols, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    md = [
        f"# beta sweep: rubric {args.rubric}, seed {args.seed}, {args.steps} steps per run",
        "",
        "Reward and KL are means over each run's last 5 training steps; strict pass is on the fixed dev slice.",
        "",
        "| beta | reward (last 5 steps) | strict pass, dev slice (start -> end) | KL/token k1 | KL/token k3 "
        "| KL/sample k1 | entropy/token |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        md.append(
            f"| {r['beta']:g} | {r['reward_last5']:.3f} "
            f"| {r['slice_strict_pass_start']:.3f} -> {r['slice_strict_pass_end']:.3f} "
            f"| {r['kl_k1_per_token']:.4f} | {r['kl_k3_per_token']:.4f} | {r['kl_k1_per_sample']:.3f} "
            f"| {r['entropy_per_token']:.3f} |"
        )
    (out / "sweep.md").write_text("\n".join(md) + "\n", encoding="utf-8")

    def draw(plt: Any) -> Any:
        fig, ax = plt.subplots(figsize=(6.5, 4.5))
        kl = [r["kl_k1_per_sample"] for r in rows]
        ax.plot(kl, [r["reward_last5"] for r in rows], "o-", color="tab:orange",
                label=f"training reward ({args.rubric}), mean of the last 5 steps")
        ax.plot(kl, [r["slice_strict_pass_end"] for r in rows], "s--", color="tab:blue",
                label="strict pass rate on the fixed dev slice, end of run")
        for r in rows:
            ax.annotate(f"beta={r['beta']:g}", (r["kl_k1_per_sample"], r["reward_last5"]), fontsize=8,
                        xytext=(4, 4), textcoords="offset points")
        ax.set_xlabel("KL(pi || pi0) per completion, k1 estimate (nats)")
        ax.set_ylabel("mean reward / pass rate (0-1)")
        ax.set_ylim(0, 1)  # rates start at 0: a short axis would exaggerate small differences
        ax.set_title(f"Reward bought with drift from pi0: one run per beta (seed {args.seed}, {args.steps} steps)",
                     fontsize=10)
        ax.legend(fontsize=8, loc="lower right")
        fig.tight_layout()
        return fig

    return ["sweep.csv", "sweep.md"] + (["sweep.png"] if plot_to(out / "sweep.png", draw) else [])


if __name__ == "__main__":
    raise SystemExit(main())
