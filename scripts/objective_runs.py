"""The objective's switches on the tiny LM: one short training run per choice, side by side.

    python scripts/objective_runs.py                                  # every choice, seed 0, 40 steps
    python scripts/objective_runs.py --only kl --steps 20 --plot runs/objective.png
    python scripts/objective_runs.py --json
    python scripts/objective_runs.py --steps 30 --threads 1 --prompts-per-step 4 --eval-every 30 --slice-items 50 \\
        --eval-samples 1

One ``python -m course.tinylm.rl`` run (no holdout step) per choice of the loop's objective, all
else equal (seed, problems, samples' seeds, beta, lr): the KL estimator and where it goes
(``--kl-estimator``, ``--kl-in``) and how the loss is normalised (``--loss-norm``,
``--scale-rewards``). Printed per run, from its rl_log.jsonl and summary.json:

  * the drift from pi0: KL per token (k3 estimate, logged whatever the choice) at four points of the run;
  * the learning: mean training reward of the last 10 steps, strict pass on the fixed dev slice start -> end;
  * the length of wrong answers (tokens of the samples the strict scorer rejects), first 10 -> last 10 steps;
  * the zero-signal accounting: the share of samples with a non-zero advantage over the run.

A printer of figures, not a test and not a timing benchmark (eleven training runs take tens of minutes). ``--plot``
also draws the drift curves (KL per token by step) and the wrong answers' length by step, one line per run.
docs/objective.md quotes its output.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent

KL_CHOICES = [
    ("k3 in the loss (default)", []),
    ("k1 in the loss", ["--kl-estimator", "k1"]),
    ("k2 in the loss", ["--kl-estimator", "k2"]),
    ("k1 in the reward", ["--kl-in", "reward"]),
    ("k3 in the reward", ["--kl-in", "reward", "--kl-estimator", "k3"]),
    ("no KL (beta 0)", ["--beta", "0"]),
]
NORM_CHOICES = [
    ("constant, no std (default)", []),
    ("seq-mean (GRPO)", ["--loss-norm", "seq-mean"]),
    ("token-mean (DAPO)", ["--loss-norm", "token-mean"]),
    ("constant, / group std", ["--scale-rewards", "group"]),
    ("seq-mean, / group std (GRPO as published)", ["--loss-norm", "seq-mean", "--scale-rewards", "group"]),
]


def run_one(label: str, extra: list[str], args: argparse.Namespace, where: Path) -> dict[str, Any]:
    out = where / "".join(c if c.isalnum() else "_" for c in label)
    cmd = [sys.executable, "-m", "course.tinylm.rl", "--seed", str(args.seed), "--steps", str(args.steps),
           "--beta", str(args.beta), "--threads", str(args.threads), "--no-holdout", "--outdir", str(out),
           *args.passthrough, *extra]
    if "--beta" in extra:  # the choice's own beta wins
        cmd = cmd[:cmd.index("--beta")] + cmd[cmd.index("--beta") + 2:]
    t0 = time.time()
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{label}: exit {proc.returncode}\n{proc.stderr[-2000:]}")
    steps = [json.loads(line) for line in (out / "rl_log.jsonl").read_text().splitlines()]
    steps = [r for r in steps if "reward" in r]
    summary = json.loads((out / "summary.json").read_text())
    n = len(steps)
    marks = sorted({max(1, n // 4), max(1, n // 2), max(1, 3 * n // 4), n})

    def mean(xs: list[float]) -> float | None:
        xs = [x for x in xs if x is not None]
        return sum(xs) / len(xs) if xs else None

    z = summary["zero_signal"]
    return {
        "choice": label, "flags": " ".join(extra) or "(defaults)",
        "kl_k3_per_token_at": {m: steps[m - 1]["kl_k3_per_token"] for m in marks},
        "reward_last10": round(mean([r["reward"] for r in steps[-10:]]) or 0.0, 4),
        "slice_strict_pass": [round(summary["first_eval"]["slice_strict_pass"], 4),
                              round(summary["last_eval"]["slice_strict_pass"], 4)],
        "mean_tokens_wrong": [round(v, 2) if v is not None else None
                              for v in (mean([r["mean_tokens_wrong"] for r in steps[:10]]),
                                        mean([r["mean_tokens_wrong"] for r in steps[-10:]]))],
        "pg_sample_share": round(z["pg_samples"] / z["samples"], 4),
        "seconds": round(time.time() - t0, 1),
        "curve": [(r["step"], r["kl_k3_per_token"], r["mean_tokens_wrong"]) for r in steps],
    }


def table(rows: list[dict[str, Any]]) -> list[str]:
    marks = list(rows[0]["kl_k3_per_token_at"])
    head = ("| choice | flags | KL/token (k3) at step " + ", ".join(map(str, marks)) +
            " | reward, last 10 steps | strict pass, dev slice (start -> end) "
            "| wrong answers' tokens (first 10 -> last 10 steps) | samples with signal |")
    lines = [head, "|---|---|---|---:|---|---|---:|"]
    for r in rows:
        kl = ", ".join(f"{v:.4f}" for v in r["kl_k3_per_token_at"].values())
        w = " -> ".join("-" if v is None else f"{v:.1f}" for v in r["mean_tokens_wrong"])
        lines.append(f"| {r['choice']} | `{r['flags']}` | {kl} | {r['reward_last10']:.3f} | "
                     f"{r['slice_strict_pass'][0]:.3f} -> {r['slice_strict_pass'][1]:.3f} | {w} | "
                     f"{r['pg_sample_share']:.0%} |")
    return lines


def plot(path: Path, groups: dict[str, list[dict[str, Any]]], args: argparse.Namespace) -> None:
    sys.path.insert(0, str(REPO))
    from course.lib.reporting.plotting import plot_to

    def draw(plt):  # type: ignore[no-untyped-def]
        fig, axes = plt.subplots(len(groups), 2, figsize=(11, 3.6 * len(groups)), squeeze=False)
        for row, (name, rows) in zip(axes, groups.items()):
            for r in rows:
                xs = [c[0] for c in r["curve"]]
                row[0].plot(xs, [c[1] for c in r["curve"]], label=r["choice"])
                row[1].plot(xs, [c[2] if c[2] is not None else float("nan") for c in r["curve"]],
                            label=r["choice"], alpha=0.8)
            row[0].set_title(f"{name}: drift from pi0, KL per token (k3 estimate)", fontsize=9)
            row[1].set_title(f"{name}: mean tokens of the wrong answers", fontsize=9)
            for ax in row:
                ax.set_xlabel("step")
                ax.legend(fontsize=7)
        fig.suptitle(f"course.tinylm.rl, seed {args.seed}, beta {args.beta}, {args.steps} steps per run "
                     f"{' '.join(args.passthrough)}", fontsize=9)
        fig.tight_layout()
        return fig

    plot_to(path, draw)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", choices=("kl", "norm", "all"), default="all")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--beta", type=float, default=0.05)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--plot", type=Path, default=None, help="also draw the curves into this PNG")
    p.add_argument("--json", action="store_true")
    args, passthrough = p.parse_known_args()
    args.passthrough = passthrough  # any other flag goes to every run (e.g. --prompts-per-step 4 --eval-every 30)
    groups: dict[str, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, choices in (("KL estimator and place", KL_CHOICES), ("loss normalisation", NORM_CHOICES)):
            if args.only != "all" and args.only != ("kl" if choices is KL_CHOICES else "norm"):
                continue
            rows = []
            for label, extra in choices:
                print(f"running: {label} ...", file=sys.stderr, flush=True)
                rows.append(run_one(label, extra, args, Path(tmp)))
            groups[name] = rows
    if args.json:
        print(json.dumps({k: [{kk: vv for kk, vv in r.items() if kk != "curve"} for r in v] for k, v in groups.items()},
                         indent=2))
    else:
        print(f"course.tinylm.rl, seed {args.seed}, beta {args.beta} (unless the choice sets it), "
              f"{args.steps} steps per run, no holdout"
              + (f", {' '.join(passthrough)}" if passthrough else ""))
        for name, rows in groups.items():
            print(f"\n{name}:\n")
            print("\n".join(table(rows)))
            print("\nwall seconds per run: " + ", ".join(f"{r['choice']} {r['seconds']:.0f}" for r in rows))
    if args.plot:
        plot(args.plot, groups, args)
        print(f"\nwrote {args.plot}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
