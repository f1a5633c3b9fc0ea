"""pass@k estimators side by side: the plug-in, the first k samples and the unbiased estimator, by n and k.

    python -m course.passk_estimators
    python -m course.passk_estimators --n 5 10 20 50 --k 1 2 5 10 --p 0.05 0.2 --reps 20000 --seed 0 --plot passk.png

For an item whose samples pass with probability p, each estimator's bias (its mean minus the true
pass@k, 1 - (1 - p)^k) and standard deviation, from a seeded Monte-Carlo simulation of n samples
drawn ``--reps`` times, beside the exact values summed over the binomial distribution. The maths is
``course.lib.selection.passk_estimators`` (the unbiased estimator is ``course.lib.stats.pass_at_k``).
Nothing is written but the optional plot; ``--json`` prints every number.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from course.cli import EXIT_OK, check_work, float_in, info, int_in, make_parser, optional_view, run, seed
from course.lib.policy.progress import ProgressLine
from course.lib.records.jsonl import refuse_existing
from course.lib.selection.passk_estimators import ESTIMATORS, table
from course.lib.visible import dumps_safe, visible

EXAMPLE = """\
  python -m course.passk_estimators                        # n 5 10 20 50, k 1 2 5 10, p 0.05 0.2, 5,000 draws
  python -m course.passk_estimators --n 10 --k 1 5 10 --p 0.1 --reps 20000 --json
  python -m course.passk_estimators --plot passk.png       # bias and sd against n (the plot extra)"""

LABELS = {"plug_in": "plug-in 1-(1-c/n)^k", "first_k": "first k samples", "unbiased": "unbiased (Chen et al.)"}


def _points(x: float) -> float:
    """A fraction in points, a rounding residue (1e-17) shown as 0 rather than -0.00."""
    return 0.0 if abs(x) < 5e-5 else 100 * x


# Each simulated rep draws n samples and computes every estimator for every k <= n (first_k and the
# unbiased one cost about k each): the work of a table, bounded so that 1,000 n's x 1,000 k's x a
# million reps (days) is refused before it starts. 40 million is some seconds of one core.
MAX_WORK_UNITS = 40_000_000
PROGRESS_UNITS = 5_000_000


def work_units(ns: Sequence[int], ks: Sequence[int], ps: Sequence[float], reps: int) -> int:
    """What ``table`` costs: per rep and cell, n draws plus about 2k + 3 per estimated k."""
    return reps * len(ps) * sum(n + sum(2 * k + 3 for k in ks if k <= n) for n in ns)


def _table(ns: Sequence[int], ks: Sequence[int], ps: Sequence[float], reps: int, seed_value: int, *,
           long: bool) -> list[dict[str, Any]]:
    """``table``, a cell at a time (each cell has its own seed: the same rows), with a progress line when long."""
    if not long:
        return table(ns, ks, ps, reps=reps, seed=seed_value)
    cells = [(p, n) for p in ps for n in ns]
    info(f"passk_estimators: {len(cells)} cells x {reps:,} reps ...")
    progress = ProgressLine("passk_estimators: cells", total=len(cells))
    rows: list[dict[str, Any]] = []
    for done, (p, n) in enumerate(cells, 1):
        rows += table([n], ks, [p], reps=reps, seed=seed_value)
        progress.update(done)
    progress.clear()
    return rows


def render(rows: list[dict[str, Any]], reps: int, seed_value: int) -> list[str]:
    lines = [
        f"pass@k estimators, {reps:,} simulated draws of n samples per cell (seed {seed_value}); "
        "bias = mean estimate - true pass@k, in points; sd in points",
        "",
        f"{'p':>5} {'n':>4} {'k':>3} {'pass@k':>7} | " + " | ".join(f"{LABELS[e]:^23}" for e in ESTIMATORS),
        f"{'':>5} {'':>4} {'':>3} {'':>7} | " + " | ".join(f"{'bias (exact)':>15} {'sd':>7}" for _ in ESTIMATORS),
    ]
    for r in rows:
        cells = []
        for e in ESTIMATORS:
            x = r[e]
            cells.append(f"{_points(x['bias_mc']):+6.2f} ({_points(x['bias_exact']):+6.2f}) {100 * x['sd_mc']:7.2f}")
        lines.append(f"{r['p']:>5g} {r['n']:>4} {r['k']:>3} {100 * r['pass_at_k']:>6.1f}% | " + " | ".join(cells))
    lines += [
        "",
        "The plug-in is biased low for k >= 2 (Jensen: (1-x)^k is convex), most when k is close to n; first-k",
        "is unbiased but its sd does not shrink with n (it uses k of the n samples); the unbiased estimator",
        "averages first-k over every k-subset: no bias, and the smallest sd of any unbiased estimator (the",
        "plug-in's sd is sometimes smaller still: it buys that with its bias). Exact values (in brackets) sum",
        "over the binomial distribution of the passes; the simulated ones differ from them by Monte-Carlo noise.",
    ]
    return lines


def _draw(rows: list[dict[str, Any]]) -> Any:
    def draw(plt: Any) -> Any:
        cases = sorted({(r["p"], r["k"]) for r in rows if r["k"] > 1})
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
        styles = {"plug_in": "-", "first_k": ":", "unbiased": "--"}
        for p, k in cases:
            chosen = [r for r in rows if r["p"] == p and r["k"] == k]
            ns = [r["n"] for r in chosen]
            for e in ESTIMATORS:
                label = f"{LABELS[e]}, p={p:g}, k={k}"
                axes[0].plot(ns, [100 * r[e]["bias_exact"] for r in chosen], styles[e], marker="o", label=label)
                axes[1].plot(ns, [100 * r[e]["sd_exact"] for r in chosen], styles[e], marker="o", label=label)
        axes[0].axhline(0.0, color="grey", linewidth=0.8)
        axes[0].set(xlabel="n samples per item", ylabel="bias (points)", title="Bias: plug-in is low, the others are 0")
        axes[1].set(xlabel="n samples per item", ylabel="sd (points)", title="Spread: first-k does not shrink with n")
        ns_all = sorted({r["n"] for r in rows})
        for ax in axes:
            ax.set_xscale("log")
            ax.set_xticks(ns_all, [str(n) for n in ns_all])
            ax.minorticks_off()
        axes[1].legend(fontsize=6, loc="upper right")
        fig.tight_layout()
        return fig

    return draw


def _main(argv: Sequence[str] | None) -> int:
    parser = make_parser(
        "python -m course.passk_estimators",
        "Simulate three pass@k estimators on the same samples (plug-in, first k, unbiased) and print each one's "
        "bias and standard deviation by n and k, beside the exact values summed over the binomial.",
        EXAMPLE,
    )
    parser.add_argument("--n", type=int_in(1, 1000), nargs="+", default=[5, 10, 20, 50],
                        help="samples per item (default 5 10 20 50)")
    parser.add_argument("--k", type=int_in(1, 1000), nargs="+", default=[1, 2, 5, 10],
                        help="the k of pass@k (default 1 2 5 10; k > n is skipped)")
    parser.add_argument("--p", type=float_in(0.0, 1.0), nargs="+", default=[0.05, 0.2],
                        help="per-sample pass probability (default 0.05 0.2)")
    parser.add_argument("--reps", type=int_in(2, 1_000_000), default=5000,
                        help="simulated draws per cell (default 5000)")
    parser.add_argument("--seed", type=seed, default=0, help="seed of the simulation (default 0)")
    parser.add_argument("--plot", metavar="PNG", help="also draw bias and sd against n (the plot extra)")
    parser.add_argument("--force", action="store_true", help="let --plot replace an existing file")
    parser.add_argument("--json", action="store_true", help="print every number (exact and simulated) as JSON")
    args = parser.parse_args(argv)
    if args.plot:
        refuse_existing(args.plot, args.force)  # before any work
        if not optional_view("plot", "--plot", "printing the table without the picture"):
            args.plot = None
    ns, ks, ps = sorted(set(args.n)), sorted(set(args.k)), sorted(set(args.p))
    work = work_units(ns, ks, ps, args.reps)
    check_work("--reps x --n x --k x --p", work, MAX_WORK_UNITS, "simulated samples and estimates",
               "fewer --reps or smaller --n (the guide's table is 20,000 reps of n 5 10 20 50 at two p's)")
    rows = _table(ns, ks, ps, args.reps, args.seed, long=work > PROGRESS_UNITS)
    if args.json:
        print(dumps_safe({"reps": args.reps, "seed": args.seed, "rows": rows}, sort_keys=True, indent=2))
    else:
        print("\n".join(render(rows, args.reps, args.seed)))
    if args.plot and rows:
        from course.lib.records.temporaries import atomic_file
        from course.lib.reporting.plotting import plot_to

        with atomic_file(Path(args.plot)) as tmp:
            plot_to(tmp, _draw(rows))
        info(f"wrote {visible(args.plot)}")
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    return run(_main, argv)


if __name__ == "__main__":
    raise SystemExit(main())
