"""The KL microscope: what k1, k2 and k3 estimate, and what they push the policy towards, exactly.

Loop C's KL penalty is an estimate from the sampled tokens. Which estimator, and
whether it sits in the LOSS or in the REWARD, decides which gradient the policy
follows; its value alone does not. On two policies small enough to enumerate (a
categorical softmax policy over a few tokens, and the two-step MDP of
``course.toy_mdp``) this tool prints, exactly:

  * KL(pi || pi0) and KL(pi0 || pi), and their gradients on the logits;
  * for k1, k2, k3 and k3-corrected (k3 times pi/sg(pi), TRL's default) in the loss
    and in the reward: the expected value and the expected gradient, and which exact
    gradient that is (0, the reverse KL's, the forward KL's, or neither: compared,
    not assumed);
  * the same from n samples of pi (seeded; the same draws for every row), with the
    per-sample variance and the standard error, at several n;
  * for the categorical policy, each estimator's exact variance (its value's, and its
    gradient's in the loss) as pi moves from near pi0 to far from it.

The maths is ``course.lib.learning.kl_estimators`` (its docstring has the identities);
the guide's reading is docs/objective.md. Prints only; writes nothing.

    python -m course.kl_estimators
    python -m course.kl_estimators --policy categorical --logits 2 0 -1 --samples 100 10000 --seed 3
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, Callable, Sequence

from course.cli import EXIT_OK, check_work, finite_float, info, int_in, make_parser, run, seed
from course.errors import CourseError
from course.lib.learning import kl_estimators as kl
from course.lib.policy.progress import ProgressLine
from course.lib.visible import dumps_safe

DEFAULT_LOGITS: tuple[float, ...] = (1.0, 0.5, -0.5, -1.0)  # the policy after some training
DEFAULT_REF_LOGITS: tuple[float, ...] = (0.0, 0.0, 0.0, 0.0)  # pi0: uniform
# The two-step MDP's policy: step 2 moved a lot after a1 = 0 and little after a1 = 1, so the KL
# paid at step 2 depends on a1: the case where a per-token penalty misses a term.
MDP_THETA1: tuple[float, float] = (0.5, -0.5)
MDP_THETA2: tuple[tuple[float, float], tuple[float, float]] = ((1.5, 0.0), (-0.5, 0.0))
MDP_REF = ((0.0, 0.0), ((0.0, 0.0), (0.0, 0.0)))
DEFAULT_SAMPLES: tuple[int, ...] = (10, 100, 1000)
SAMPLE_SIZE = int_in(2, 1_000_000)
LOGIT = finite_float
# The policies are enumerated: every table prints one column per logit, and the exact part costs the
# square of their number (20,000 logits ran for minutes). A hundred tokens is past any table one reads.
MAX_LOGITS = 100
MAX_SIZES = 10  # Monte-Carlo sample sizes: rows of the table
# Work, in units of one outcome's gradient component for one sample (about 5 microseconds here): a
# categorical sample costs len(logits) + 4 of them, a two-step sample 16 (both of its blocks).
TWO_STEP_UNITS = 16
MAX_WORK_UNITS = 2_000_000  # about 10 s of one idle core; 50,000 samples of the default policies is 1,200,000
PROGRESS_UNITS = 300_000  # past this (a few seconds) a progress line says how far the draws got


def policies(choice: str, logits: Sequence[float], ref_logits: Sequence[float]) -> list[tuple[kl.Enumerated, bool]]:
    """The enumerable policies to show, each with per_token (True: k summed over tokens, the loop's way)."""
    out: list[tuple[kl.Enumerated, bool]] = []
    if choice in ("categorical", "both"):
        out.append((kl.categorical(logits, ref_logits), True))
    if choice in ("two-step", "both"):
        mdp = kl.two_step(MDP_THETA1, MDP_THETA2, MDP_REF[0], MDP_REF[1])
        out += [(mdp, True), (mdp, False)]
    return out


def work_units(choice: str, n_logits: int, sizes: Sequence[int]) -> int:
    """What the Monte-Carlo part costs, in ``MAX_WORK_UNITS``' units."""
    per_sample = (n_logits + 4 if choice in ("categorical", "both") else 0) + (
        TWO_STEP_UNITS if choice in ("two-step", "both") else 0)
    return per_sample * sum(sizes)


def analyse(pol: kl.Enumerated, per_token: bool, sizes: Sequence[int], seed_: int,
            drawn: Callable[[int], None] | None = None) -> dict[str, Any]:
    """One policy's exact table and Monte-Carlo rows, as plain data (what --json prints); ``drawn(n)``
    is told after each sample size."""
    exact = kl.exact_table(pol, per_token=per_token)
    mc = []
    for n in sizes:  # one size at a time (each has its own seeded stream: the same rows as all at once)
        mc += kl.monte_carlo(pol, [n], seed_, per_token=per_token)
        if drawn is not None:
            drawn(n)
    return {"policy": pol.name, "per_token": per_token, "parameters": list(pol.parameters),
            "outcomes": [o.label for o in pol.outcomes],
            "pi": kl.probabilities(pol)[0], "pi0": kl.probabilities(pol)[1],
            "exact": asdict(exact), "monte_carlo": [asdict(r) for r in mc]}


def _vec(v: Sequence[float]) -> str:
    # round first, then add 0.0: a tiny negative rounds to -0.0, which would print as -0.0000
    return "[" + " ".join(f"{round(x, 4) + 0.0:+.4f}" for x in v) + "]"


def render(block: dict[str, Any], seed_: int) -> list[str]:
    """The human tables for one policy."""
    ex = block["exact"]
    how = (
        "per token, summed over the path (the loop's way)" if block["per_token"]
        else "once on the whole path (log r summed first)"
    )
    title = block["policy"] + ("" if block["policy"] == "categorical" else f": the estimator applied {how}")
    lines = [title, "=" * len(title),
             "outcomes " + "  ".join(
                 f"{o} pi {p:.3f} pi0 {q:.3f}" for o, p, q in zip(block["outcomes"], block["pi"], block["pi0"])
             ),
             f"parameters: {' '.join(block['parameters'])}",
             f"KL(pi||pi0) = {ex['kl_reverse']:.5f}   KL(pi0||pi) = {ex['kl_forward']:.5f}",
             f"  grad KL(pi||pi0)  {_vec(ex['grad_kl_reverse'])}   (reverse: what E[r] - beta KL(pi||pi0) names)",
             f"  grad KL(pi0||pi)  {_vec(ex['grad_kl_forward'])}   (forward)",
             "",
             "exact expectations under pi     E[k]     E[gradient of the penalty]            equals"]
    for r in ex["rows"]:
        bias = (
            "unbiased" if abs(r["value"] - ex["kl_reverse"]) < 1e-9
            else f"biased {r['value'] - ex['kl_reverse']:+.5f}"
        )
        named = f"{r['estimator']} = {kl.FORMULAS[r['estimator']]}"
        lines.append(f"  {named:<29} in the {r['place']:<6} {r['value']:.5f}  "
                     f"{_vec(r['gradient'])}  {r['matches']}  (value {bias})")
    lines += ["", f"Monte Carlo: n samples of pi (seed {seed_}; the same draws for every row of an n)",
              "  estimator     place        n   mean k +- s.e.      var(k)   max|grad - E grad|  grad s.e.  var(grad)"]
    for m in block["monte_carlo"]:
        lines.append(f"  {m['estimator']:<12}  {m['place']:<6} {m['n']:>7}   "
                     f"{m['value_mean']:.4f} +- {m['value_se']:.4f}   "
                     f"{m['value_var']:8.4f}   {m['grad_error']:18.4f}  {m['grad_se']:9.4f}  {m['grad_var']:9.4f}")
    return lines


def render_spread(rows: Sequence[dict[str, Any]]) -> list[str]:
    """The exact variance of every estimator at each distance from pi0 (categorical policy)."""
    names = kl.ESTIMATORS
    values = [n for n in names if n != "k3-corrected"]  # (its value is k3's)
    title = "categorical: exact per-sample variance as pi moves away from pi0, pi = softmax(ref + s (logits - ref))"
    lines = [title, "=" * len(title),
             f"  {'':>5} {'':>11}  {'var(k), the value':<{12 * len(values)}}  var(gradient in the loss), trace",
             f"  {'s':>5} {'KL(pi||pi0)':>11}  " + "".join(f"{n:>12}" for n in values) + "  "
             + "".join(f"{n:>13}" for n in names)]
    for r in rows:
        var = dict(zip(names, r["value_var"]))
        lines.append(f"  {r['scale']:>5g} {r['kl_reverse']:>11.4f}  " + "".join(f"{var[n]:>12.4g}" for n in values)
                     + "  " + "".join(f"{v:>13.4g}" for v in r["loss_grad_var"]))
    lines.append("  (k3-corrected's value is k3's; k3's value varies less than k1's only near pi0)")
    return lines


def build_parser():
    p = make_parser(
        "python -m course.kl_estimators",
        "k1, k2, k3 as KL estimates, in the loss and in the reward: their exact expected values and gradients "
        "beside grad KL(pi||pi0) and grad KL(pi0||pi), on a categorical policy and the two-step MDP, "
        "then Monte-Carlo estimates with their variance.",
        "  python -m course.kl_estimators\n"
        "  python -m course.kl_estimators --policy categorical --logits 2 0 -1 --ref-logits 0 0 0 "
        "--samples 100 10000 --seed 3",
    )
    p.add_argument("--policy", choices=("categorical", "two-step", "both"), default="both",
                   help="which enumerable policy (default both)")
    p.add_argument("--logits", type=LOGIT, nargs="+", default=list(DEFAULT_LOGITS), metavar="X",
                   help="the categorical policy's logits (default " + " ".join(f"{x:g}" for x in DEFAULT_LOGITS) + ")")
    p.add_argument("--ref-logits", type=LOGIT, nargs="+", default=None, metavar="X",
                   help="pi0's logits, as many as --logits (default all 0: uniform)")
    p.add_argument("--samples", type=SAMPLE_SIZE, nargs="+", default=list(DEFAULT_SAMPLES), metavar="N",
                   help="Monte-Carlo sample sizes, 2 to 1,000,000 (default "
                        + " ".join(map(str, DEFAULT_SAMPLES)) + ")")
    p.add_argument("--seed", type=seed, default=0, help="seed of the Monte-Carlo draws (default 0)")
    p.add_argument("--json", action="store_true", help="print the numbers as JSON")
    return p


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    ref = args.ref_logits if args.ref_logits is not None else [0.0] * len(args.logits)
    if len(ref) != len(args.logits) or len(args.logits) < 2:
        raise CourseError(
            "--logits and --ref-logits need the same number (at least 2) of values, "
            f"got {len(args.logits)} and {len(ref)}"
        )
    if len(args.logits) > MAX_LOGITS:
        raise CourseError(f"--logits: {len(args.logits):,} values; the microscope enumerates the policy and prints "
                          f"a column per token, so it takes at most {MAX_LOGITS}")
    if len(args.samples) > MAX_SIZES:
        raise CourseError(f"--samples: {len(args.samples):,} sizes; at most {MAX_SIZES} (one table row each)")
    check_work("--samples x --logits x --policy", work_units(args.policy, len(args.logits), args.samples),
               MAX_WORK_UNITS, "sample-gradient steps",
               "the standard error already shrinks as 1/sqrt(n) between 100 and 100,000 samples: use smaller "
               "--samples, fewer --logits or one --policy")
    if max(args.logits) - min(args.logits) > 50 or max(ref) - min(ref) > 50:
        raise CourseError(
            "--logits and --ref-logits must span at most 50 "
            "(a probability below e^-50 makes every estimate a rounding error)"
        )
    chosen = policies(args.policy, args.logits, ref)
    work = work_units(args.policy, len(args.logits), args.samples)
    progress, done = None, [0]
    if work > PROGRESS_UNITS:
        total = len(chosen) * sum(args.samples)
        info(f"kl_estimators: drawing {total:,} samples ({work:,} sample-gradient steps, some seconds) ...")
        progress = ProgressLine("kl_estimators: samples drawn", total=total)
        progress.update(0)

    def drawn(n: int) -> None:
        done[0] += n
        if progress is not None:
            progress.update(done[0])

    blocks = [analyse(pol, per_token, args.samples, args.seed, drawn) for pol, per_token in chosen]
    if progress is not None:
        progress.clear()
    spread = [asdict(r) for r in kl.spread_table(args.logits, ref)] if args.policy != "two-step" else []
    if args.json:
        print(dumps_safe({"seed": args.seed, "samples": args.samples, "formulas": kl.FORMULAS, "policies": blocks,
                          "spread": spread}, sort_keys=True, indent=2))
    else:
        out: list[str] = []
        for b in blocks:
            out += render(b, args.seed) + [""]
            if b["policy"] == "categorical" and spread:
                out += render_spread(spread) + [""]
        print("\n".join(out).rstrip())
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    return run(_main, argv)


if __name__ == "__main__":
    raise SystemExit(main())
