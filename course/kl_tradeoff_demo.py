"""The KL trade-off, exactly: how far a policy moves from its reference for how much reward.

A categorical policy over the bandit's actions (the candidate completions of
the running example, ``course.bandit_train.DEFAULT_ACTIONS``), rewards from
``course.score``, and a reference policy ``PI_REF`` that plays the pretrained
"base model": it prefers the chatty and sloppy formats and gives the one
completion the verifier accepts only 8%. For each penalty strength beta the
demo finds the policy that maximises

    E_pi[r] - beta * KL(pi || pi_ref)

twice, independently:
  * the closed form   pi(a) = pi_ref(a) exp(r(a) / beta) / Z   (``policy_gradient.kl_regularised_optimum``)
  * gradient ascent on the logits with the exact gradient (K is small), started at pi_ref,
and reports how closely they agree, the expected reward, the KL, and the top-3
actions. Small beta: reward wins, the policy piles onto "Final: 323" and drifts
far from the reference (large KL). Large beta: the penalty wins, the policy stays
the base model (KL -> 0). In LLM training the reference is the SFT model and the
KL term is what keeps "improve the reward" from becoming "drift into text the
reference would never write".

Run it (finishes in well under a second)::

    python -m course.kl_tradeoff_demo
    python -m course.kl_tradeoff_demo --betas 0.01 0.1 1 10 --plot --outdir runs/kl_demo

Writes kl_tradeoff.csv (one row per beta; columns documented in ``CSV_COLUMNS_DOC``),
manifest.json (actions, pi_ref and rewards as lists in action order, the column
legend) and, with ``--plot``, kl_tradeoff.png into the run directory
(default runs/kl_tradeoff_NNN).
"""

from __future__ import annotations

import csv
import io
import math
from typing import Any, Sequence

from course.cli import add_run_options, float_in, make_parser, optional_view, run
from course.errors import CourseError
from course.instrument.rubric_registry import scorer_fingerprint
from course.instrument.spec_v1 import SCORER_VERSION
from course.lib.learning import policy_gradient as pg
from course.lib.learning.bandit import DEFAULT_ACTIONS, EXAMPLE, score_actions
from course.lib.learning.kl_tradeoff import BetaRow, sweep, top_actions
from course.lib.learning.narration import quote
from course.lib.records.manifest import environment
from course.lib.records.runs import atomic_run_dir, resolve_outdir, write_json
from course.lib.visible import visible

# beta in [1e-3, 1e3]: r/beta stays below 1e3 (rewards are 0/1), far from exp/float overflow;
# 1e-320 made r/beta infinite and the whole CSV NaN.
BETA_RANGE = float_in(1e-3, 1e3)
MAX_BETAS = 100  # a row of the table and a point of the plot each; each costs a gradient ascent

# The "base model": probabilities in DEFAULT_ACTIONS order, most preferred first. It writes
# the right number most of the time but rarely in the exact format the verifier accepts.
PI_REF: tuple[float, ...] = (0.30, 0.25, 0.15, 0.12, 0.10, 0.08)

# 1-2-5 steps from "reward is everything" to "stay the base model".
DEFAULT_BETAS: tuple[float, ...] = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 100.0)

CSV_COLUMNS_DOC = (
    "beta: KL penalty strength; expected_reward: E_pi[r] under the closed-form optimum; "
    "kl: KL(pi || pi_ref) in nats; p_<i>: probability of action i (legend in manifest.json "
    "'columns'); objective: E_pi[r] - beta*KL; ga_steps: gradient-ascent iterations; "
    "ga_max_abs_diff: max over actions of |pi_gradient_ascent - pi_closed_form|"
)


def csv_text(rows: Sequence[BetaRow], n_actions: int) -> str:
    """kl_tradeoff.csv: floats written with repr, so the file is exact and byte-stable."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(
        ["beta", "expected_reward", "kl", *[f"p_{i}" for i in range(n_actions)], "objective", "ga_steps",
         "ga_max_abs_diff"]
    )
    for r in rows:
        writer.writerow(
            [repr(r.beta), repr(r.expected_reward), repr(r.kl), *[repr(p) for p in r.probs], repr(r.objective),
             r.ascent.steps, repr(r.max_abs_diff)]
        )
    return out.getvalue()


def report(
    rows: Sequence[BetaRow], actions: Sequence[str], pi_ref: Sequence[float], rewards: Sequence[float]
) -> list[str]:
    width = max(len(quote(a)) for a in actions)
    lines = [
        f"Prompt {EXAMPLE['prompt']!r} (expected {EXAMPLE['expected_answer']}); "
        f"maximise E_pi[r] - beta * KL(pi || pi_ref) over {len(actions)} actions:",
        f"  {'col':<4} {'action':<{width}}  {'r':>3}  {'pi_ref':>6}",
    ]
    for i, (a, r, q) in enumerate(zip(actions, rewards, pi_ref)):
        lines.append(f"  p_{i:<2} {quote(a):<{width}}  {r:>3g}  {q:>6.3f}")
    ref_reward = pg.expected_reward(pi_ref, rewards)
    lines += [
        "",
        f"  {'beta':>7}  {'E[r]':>6}  {'KL':>7}  {'E[r]-beta*KL':>12}  {'GA steps':>8}  {'max|GA-closed|':>14}  "
        "top-3 actions (prob)",
        f"  {'inf':>7}  {ref_reward:>6.4f}  {0.0:>7.4f}  {ref_reward:>12.4f}  {'-':>8}  {'-':>14}  "
        + _top3(pi_ref, actions)
        + "   <- pi_ref itself",
    ]
    for row in sorted(rows, key=lambda row: -row.beta):
        flag = "" if row.ascent.converged else " (not converged)"
        lines.append(
            f"  {row.beta:>7g}  {row.expected_reward:>6.4f}  {_kl(row.kl):>7}  {row.objective:>12.4f}  "
            f"{row.ascent.steps:>8}  {row.max_abs_diff:>14.1e}  {_top3(row.probs, actions)}{flag}"
        )
    worst = max(r.max_abs_diff for r in rows)
    best = max(rewards)
    ceiling = -math.log(math.fsum(q for q, r in zip(pi_ref, rewards) if r == best))
    lines += [
        "",
        "closed form pi_ref*exp(r/beta)/Z vs gradient ascent on the logits: "
        f"max |difference| {worst:.1e} over all betas",
        "smaller beta -> more reward, more KL (further from the base model); larger beta -> pi stays pi_ref, KL -> 0",
        f"as beta -> 0 the KL tops out at -log pi_ref(best actions) = {ceiling:.4f} nats: the price of putting all",
        "mass on completions the base model gave only " + f"{math.exp(-ceiling):.0%}" + " of its probability",
    ]
    return lines


def _kl(kl: float) -> str:
    return f"{kl:.4f}" if kl >= 1e-3 or kl == 0.0 else f"{kl:.1e}"


def _top3(probs: Sequence[float], actions: Sequence[str]) -> str:
    return ", ".join(f"{quote(actions[i])} {probs[i]:.3f}" for i in top_actions(probs))


def _draw(rows: Sequence[BetaRow], pi_ref: Sequence[float], rewards: Sequence[float]):
    from course.lib.learning import demo_plots

    return lambda plt: demo_plots.kl_tradeoff(
        plt,
        [r.beta for r in rows],
        [r.expected_reward for r in rows],
        [r.kl for r in rows],
        pg.expected_reward(pi_ref, rewards),
    )


# ---------------------------------------------------------------------------
# The command line.
# ---------------------------------------------------------------------------
def build_parser():
    parser = make_parser(
        "python -m course.kl_tradeoff_demo",
        "For each KL penalty beta, the policy maximising E[r] - beta*KL(pi || pi_ref) over the candidate "
        "completions of the running example, by closed form and by gradient ascent, with its reward and KL.",
        "  python -m course.kl_tradeoff_demo\n"
        "  python -m course.kl_tradeoff_demo --betas 0.01 0.1 1 10 --plot --outdir runs/kl_demo",
    )
    parser.add_argument(
        "--betas",
        type=BETA_RANGE,
        nargs="+",
        metavar="BETA",
        help=f"penalty strengths in [1e-3, 1e3], at most {MAX_BETAS} (default "
        + " ".join(f"{b:g}" for b in DEFAULT_BETAS) + ")",
    )
    add_run_options(
        parser,
        "run directory (default runs/kl_tradeoff_NNN)",
        plot="also write kl_tradeoff.png (the plot extra; without it the run is written, without the picture)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    return run(_main, argv)


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    if args.plot:  # a missing plot extra leaves out the picture only (rule 2 of course.lib.extras)
        args.plot = optional_view("plot", "--plot", "writing the run without the picture")
    betas = list(DEFAULT_BETAS if args.betas is None else args.betas)
    if len(betas) > MAX_BETAS:
        raise CourseError(f"--betas: {len(betas):,} values; at most {MAX_BETAS} (a row and a point each)")
    for b in betas:
        if not (b > 0 and math.isfinite(b)):
            raise CourseError(f"--betas must be positive finite numbers, got {b}")
    if len(set(betas)) != len(betas):
        raise CourseError("--betas must not repeat a value")
    scored = score_actions(EXAMPLE, DEFAULT_ACTIONS)
    actions = [a.text for a in scored]
    rewards = [a.reward for a in scored]
    pi_ref = list(PI_REF)
    final = resolve_outdir(args.outdir, force=args.force, prefix="kl_tradeoff", tool="course.kl_tradeoff_demo")
    rows = sweep(pi_ref, rewards, betas)
    lines = report(rows, actions, pi_ref, rewards)
    with atomic_run_dir(final, force=args.force, prefix="kl_tradeoff") as tmp:
        (tmp / "kl_tradeoff.csv").write_text(csv_text(rows, len(actions)), encoding="utf-8")
        if args.plot:
            from course.lib.reporting.plotting import plot_to

            plot_to(tmp / "kl_tradeoff.png", _draw(rows, pi_ref, rewards))
        manifest: dict[str, Any] = {
            **environment("course.kl_tradeoff_demo", argv),
            "example": EXAMPLE,
            "actions": actions,
            "pi_ref": pi_ref,
            "rewards": rewards,
            "error_codes": [a.error_code for a in scored],
            "scorer_version": SCORER_VERSION,
            "scorer_fingerprint": scorer_fingerprint(),
            "betas": betas,
            "columns": {f"p_{i}": a for i, a in enumerate(actions)},
            "columns_doc": CSV_COLUMNS_DOC,
            "gradient_ascent": {
                "init": "theta = log pi_ref",
                "tolerance": "max |gradient| < 1e-12",
                "max_steps": 5000,
                "all_converged": all(r.ascent.converged for r in rows),
                "max_abs_diff": max(r.max_abs_diff for r in rows),
            },
            "files": ["kl_tradeoff.csv", "manifest.json"] + (["kl_tradeoff.png"] if args.plot else []),
            "plot": "kl_tradeoff.png" if args.plot else None,
        }
        write_json(tmp / "manifest.json", manifest)
    print("\n".join(lines))
    print(f"wrote {visible(str(final))}/ (manifest.json, kl_tradeoff.csv"
          + (", kl_tradeoff.png" if args.plot else "") + ")")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
