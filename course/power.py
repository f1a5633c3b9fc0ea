"""How many items, samples per item and training seeds does a lift of X points need? A planning calculator.

    python -m course.power --baseline-rate 0.05 --lift 0.10 --icc 0.3 --item-correlation 0.5 --seed-sd 0.03

The model it plans with (``course.lib.stats``: ``lift_variance``, ``lift_power``, ``items_for_power``;
docs/loops.md, "How many items, samples and seeds"): items differ in difficulty (their pass rates vary,
with intra-class correlation rho, so m samples of one item are worth ``m / (1 + (m-1) rho)`` independent
ones: the design effect); the baseline and the candidate are measured on the same items (paired: an item's
two rates are correlated by kappa, which removes part of the variance); the candidate is trained with S
seeds, each shifting every item alike by a random amount of standard deviation ``--seed-sd``. The lift
estimate is the mean over items of (candidate rate - baseline rate); the test is two-sided at ``--alpha``.

``--from-run DIR`` reads the baseline rate and rho from a multi-sample ``course.eval`` run (a selection pack
scored whole). Nothing is written; ``--json`` prints the table for a script.
"""

from __future__ import annotations

from typing import Any, Sequence

from course.cli import EXIT_OK, check_work, float_in, int_in, make_parser, run
from course.errors import CourseError
from course.lib.evaluation.summary import percent, points
from course.lib.stats import design_effect, intra_class_correlation, items_for_power, lift_variance
from course.lib.visible import dumps_safe, visible

EXAMPLE = """\
  python -m course.power --baseline-rate 0.05 --lift 0.10 --icc 0.3 --item-correlation 0.5 --seed-sd 0.03
      # the real LLM's holdout: pi0 passes 5 %; which (samples per item, seeds) detect +10 points 80 % of the time?
  python -m course.power --from-run runs/holdout_pi0_x8 --lift 0.10 --samples 1 8 16 --seeds 1 3 5"""

UNIT = float_in(0.0, 1.0)
RATE = float_in(0.0, 1.0, low_open=True)
# A plan needing more items than this is no plan: no benchmark of the course's kind holds ten million
# distinct items, so such a row says the lift is undetectable in practice rather than printing a count.
MAX_ITEMS = 10_000_000
MAX_ROWS = 1_000  # (samples per item, seeds) pairs in one table: each a bisection, and a line to read


def plan(p_base: float, lift: float, *, power: float, alpha: float, samples: Sequence[int], seeds: Sequence[int],
         icc: float, item_correlation: float, seed_sd: float) -> dict[str, Any]:
    """The table: for each (samples per item, seeds), the design effect and the fewest items for the power."""
    rows = []
    for s in seeds:
        for m in samples:
            n = items_for_power(p_base, lift, power=power, samples=m, seeds=s, icc=icc,
                                item_correlation=item_correlation, seed_sd=seed_sd, alpha=alpha)
            why = "seed noise" if n is None else ("more items than any benchmark" if n > MAX_ITEMS else None)
            n = None if why else n
            sd = None if n is None else lift_variance(
                p_base, p_base + lift, items=n, samples=m, seeds=s, icc=icc, item_correlation=item_correlation,
                seed_sd=seed_sd) ** 0.5
            rows.append({"samples_per_item": m, "seeds": s, "design_effect": design_effect(m, icc), "items": n,
                         "completions": None if n is None else n * m * (1 + s), "lift_sd": sd, "undetectable": why})
    return {"baseline_rate": p_base, "lift": lift, "power": power, "alpha": alpha, "icc": icc,
            "item_correlation": item_correlation, "seed_sd": seed_sd, "rows": rows}


def render(table: dict[str, Any], source: str | None) -> list[str]:
    t = table
    lines = [
        f"Detecting a lift of {points(t['lift'], signed=True)} points "
        f"over a baseline pass rate of {percent(t['baseline_rate'])} "
        f"with power {t['power']:.2f} (two-sided alpha {t['alpha']:g})",
        f"Model: rho (intra-class correlation) = {t['icc']:.3g}, kappa (item correlation between the runs) = "
        f"{t['item_correlation']:g}, seed sd = {points(t['seed_sd'])} points"
        + (f"  [from {source}]" if source else ""),
        "  Var(lift) = (V_b + V_c - 2 C) / items + seed_sd^2 / seeds, with V = p(1-p) (1 + (m-1) rho) / m per run",
        "  (the candidate's m is samples x seeds) and C = kappa rho sqrt(p_b(1-p_b) p_c(1-p_c))",
        "",
        f"{'samples/item':>12}  {'seeds':>5}  {'design effect':>13}  {'items needed':>12}  {'completions':>11}  "
        f"{'sd of lift':>10}",
    ]
    for r in t["rows"]:
        if r["items"] is None:
            why = ("(seed noise alone exceeds what the lift allows: add seeds)" if r["undetectable"] == "seed noise"
                   else f"(more than {MAX_ITEMS:,} items: undetectable in practice)")
            lines.append(f"{r['samples_per_item']:>12}  {r['seeds']:>5}  {r['design_effect']:>13.2f}  "
                         f"{'none':>12}  {'-':>11}  {'-':>10}   {why}")
        else:
            lines.append(f"{r['samples_per_item']:>12}  {r['seeds']:>5}  {r['design_effect']:>13.2f}  "
                         f"{r['items']:>12,}  "
                         f"{r['completions']:>11,}  {100 * r['lift_sd']:>9.1f}p")
    lines.append("")
    if all(r["items"] is None for r in t["rows"]):
        lines.append(f"A lift of {100 * t['lift']:+.3g} points is undetectable with any of these designs (at most "
                     f"{MAX_ITEMS:,} items): plan for a larger lift, or more seeds where seed noise is the limit.")
    lines.append("completions = items x samples x (1 baseline + seeds candidates). "
                 "More samples per item help until the")
    lines.append("design effect approaches m (items all-or-nothing); then only more items help, and only more seeds")
    lines.append("beat seed noise.")
    return lines


def _from_run(path: str) -> tuple[float, float]:
    """A multi-sample course.eval run's pass rate and rho."""
    from course.lib.evaluation.locked_room import load_outcomes

    o = load_outcomes(path)
    if o.samples_per_item < 2:
        raise CourseError(f"{visible(path)}: one sample per item; rho needs several (course.eval on a selection pack)")
    passed = [k for k, _ in o.counts_by_id.values()]
    samples = [m for _, m in o.counts_by_id.values()]
    rate = o.passed / o.n
    if not 0.0 < rate < 1.0:
        raise CourseError(
            f"{visible(path)}: pass rate {rate:g}; plan from a run whose rate is strictly between 0 and 1"
        )
    return rate, intra_class_correlation(passed, samples)


def _main(argv: Sequence[str] | None) -> int:
    parser = make_parser(
        "python -m course.power",
        "Plan a measurement: the fewest items needed to detect a pass-rate lift with a given power, for several "
        "numbers of samples per item and training seeds, under a stated model of item difficulty and seed noise.",
        EXAMPLE,
    )
    parser.add_argument("--baseline-rate", type=RATE, help="the baseline's pass@1 (0.05 = 5 %%); or --from-run")
    parser.add_argument("--from-run", metavar="DIR",
                        help="read the baseline rate and rho from a multi-sample course.eval run")
    parser.add_argument("--lift", type=float_in(-1.0, 1.0), required=True,
                        help="the lift to detect, as a fraction (0.10 = 10 points)")
    parser.add_argument("--power", type=float_in(0.0, 1.0, low_open=True), default=0.8,
                        help="wanted power (default 0.8)")
    parser.add_argument("--alpha", type=float_in(0.0, 0.5, low_open=True), default=0.05,
                        help="test level, two-sided (default 0.05)")
    parser.add_argument("--samples", type=int_in(1, 10_000), nargs="+", default=[1, 4, 8, 16],
                        help="samples per item to tabulate (default 1 4 8 16)")
    parser.add_argument("--seeds", type=int_in(1, 1_000), nargs="+", default=[1, 3],
                        help="training seeds to tabulate (default 1 3)")
    parser.add_argument("--icc", type=UNIT,
                        help="rho, the intra-class correlation of one item's samples (default 0.3; or --from-run)")
    parser.add_argument("--item-correlation", type=UNIT, default=0.5,
                        help="kappa, how correlated an item's rates are under the two policies (default 0.5)")
    parser.add_argument("--seed-sd", type=float_in(0.0, 0.99), default=0.0,
                        help="sd of the lift between training seeds, as a fraction (default 0: one fixed model)")
    parser.add_argument("--json", action="store_true", help="print the table as JSON")
    args = parser.parse_args(argv)
    if args.from_run is not None:
        if args.baseline_rate is not None or args.icc is not None:
            raise CourseError("--from-run reads --baseline-rate and --icc from the run; pass one or the other")
        p_base, icc = _from_run(args.from_run)
    else:
        if args.baseline_rate is None:
            raise CourseError("pass --baseline-rate (or --from-run DIR)")
        p_base, icc = args.baseline_rate, 0.3 if args.icc is None else args.icc
    if not 0.0 < p_base + args.lift < 1.0 or args.lift == 0:
        raise CourseError(f"--lift {args.lift:g} must be non-zero and keep the candidate's rate inside (0, 1)")
    if not args.alpha < args.power:
        raise CourseError(f"--power {args.power:g} must exceed --alpha {args.alpha:g}")
    check_work("--samples x --seeds", len(set(args.samples)) * len(set(args.seeds)), MAX_ROWS, "table rows",
               "tabulate fewer values (the plan is read row by row)")
    table = plan(p_base, args.lift, power=args.power, alpha=args.alpha, samples=sorted(set(args.samples)),
                 seeds=sorted(set(args.seeds)), icc=icc, item_correlation=args.item_correlation, seed_sd=args.seed_sd)
    if args.json:
        print(dumps_safe(table, sort_keys=True, indent=2))
    else:
        print("\n".join(render(table, visible(args.from_run) if args.from_run else None)))
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    return run(_main, argv)


if __name__ == "__main__":
    raise SystemExit(main())
