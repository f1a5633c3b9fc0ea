# Over 600 lines because one tool holds the M3 lessons' modes (train, ablation, noise sweep, story).
"""Loop C in slow motion: REINFORCE on a softmax policy over a few completions of one prompt.

The course's task seen as a bandit. The prompt is the running example
("Compute 17 * 19. Output exactly one line: Final: <int>", expected 323); each
*action* is a whole candidate completion ("Final: 323", "Final: 324", "323",
...), a macro-action; its reward comes from the course's own instrument,
``course.score.score``. The policy is a softmax over one logit per action,
starting uniform (theta = 0). Each step:

    sample a ~ pi_theta          (one draw from a seeded random.Random)
    R = score(example, a)        (1.0 or 0.0, with an error code saying why)
    b = mean of earlier rewards  (the baseline; 0 before the first reward; or, with
                                  --baseline ema, b <- (1-alpha) b + alpha R after each step)
    A = R - b                    (the advantage: better or worse than usual?)
    theta += lr * A * (onehot(a) - pi)     (REINFORCE: A times grad log pi(a))

Because there are only a handful of actions, the script also prints the exact
expected reward J(theta) = sum_a pi(a) R(a) before every update, so the noisy
one-sample learning signal can be read next to the quantity it climbs.

Run it (the instructor's live demo, then the "unlearning" perturbation)::

    python -m course.bandit_train --steps 30 --seed 0 --lr 0.5 --baseline --slow --outdir runs/demo_bandit_slow
    python -m course.bandit_train --steps 30 --seed 0 --lr -0.5 --baseline --slow --outdir runs/demo_bandit_negative
    python -m course.bandit_train --steps 500 --summary-every 50 --plot
    python -m course.bandit_train --steps 30 --baseline ema --alpha 0.1   # moving-average baseline
    python -m course.bandit_train --ablation --seeds 200        # none, mean, EMA, b*: exact and measured
    python -m course.bandit_train --steps 30 --reward-noise 0.3 --slow   # 30% of the rewards flipped
    python -m course.bandit_train --noise-sweep 0 0.1 0.2 0.3 0.4 0.5 --seeds 200 --steps 100

A run directory gets manifest.json, bandit_log.jsonl (one record per step),
bandit_story.txt (the same story ``--slow`` prints) and, with ``--plot``,
learning_curve.png. The ablation writes manifest.json, ablation.json and
ablation.txt (and ablation.png with ``--plot``); the noise sweep writes manifest.json,
noise_sweep.json and noise_sweep.txt.

Reward noise (``--reward-noise P``) is Milestone 3's lesson on why noisy rewards break training:
on each step, with probability P, the learner is handed the flipped verdict (1 - r). The flips
come from a generator of their own, seeded from ``--seed``, so the actions sampled are the same
as without noise until a flipped update changes the policy. ``--noise-sweep`` runs the same
learner at several rates over ``--seeds`` seeds and prints the exact final J(theta), measured
under the scorer's true rewards.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
from typing import Any, Sequence

from course.cli import (
    add_run_options,
    check_work,
    float_in,
    info,
    int_in,
    make_parser,
    non_negative_int,
    optional_view,
    run,
    seed,
    with_progress,
)
from course.errors import CourseError
from course.instrument.rubric_registry import get_rubric, scorer_fingerprint
from course.instrument.spec_v1 import SCORER_VERSION
from course.lib.learning.bandit import (  # the bandit, REINFORCE on it and the ablation's measurements: library code
    BASELINE_NAMES,
    BASELINES,
    DEFAULT_ACTIONS,
    DEFAULT_ALPHA,
    EXAMPLE,
    INITIAL_BASELINE,
    MOSTLY_REWARDED_ACTIONS,
    SETTINGS,
    BanditStep,
    ScoredAction,
    log_record,
    noise_seed,
    reinforce,
    run_ablation,
    run_noise_sweep,
    score_actions,
)
from course.lib.learning.bandit_story import (  # what the demo says: the story, --predict, the ablation's tables
    ABLATION_NOTE,
    NOISE_NOTE,
    PREDICT_AT,
    ablation_plot_rows,
    ablation_table,
    final_table,
    noise_table,
    parse_prediction,
    prediction_score,
    prediction_truth,
    short_baseline,
    story_header,
    story_step,
    summary_line,
)
from course.lib.learning.narration import wrap
from course.lib.records.jsonl import dumps_line
from course.lib.records.manifest import environment
from course.lib.records.runs import atomic_run_dir, resolve_outdir, write_json
from course.lib.visible import visible

# Learning rates beyond +-100 teach nothing the demo needs and let logits grow without bound.
LR_RANGE = float_in(-100.0, 100.0)
# Every step is kept for the story and the curve (~2 KB each, measured): 100,000 steps is ~230 MB.
STEPS_RANGE = int_in(1, 100_000)


def ALPHA_RANGE(text: str) -> float:  # noqa: N802 (an argparse type, named like the others)
    """The EMA baseline's weight alpha, in (0, 1]: 0 would never move b."""
    value = float_in(0.0, 1.0)(text)
    if value == 0.0:
        raise argparse.ArgumentTypeError("must be > 0 (alpha = 0 never moves the baseline), got 0")
    return value


# ---------------------------------------------------------------------------
# --predict: the student commits to a prediction before the update is shown.
# ---------------------------------------------------------------------------
def _ask_prediction(n_actions: int, step: int) -> list[str]:
    """Read one prediction from the terminal, asking again until it is well formed."""
    prompt = f"  predict: for actions 0..{n_actions - 1}, will each probability go up, down or stay? (u/d/s each) > "
    while True:
        try:
            text = input(prompt)
        except EOFError:
            raise CourseError(f"--predict: input ended before step {step} was answered; nothing was written") from None
        guess = parse_prediction(text, n_actions)
        if guess is not None:
            return guess
        print(f"  please type {n_actions} letters, one per action, each u, d or s (e.g. {'u' + 'd' * (n_actions - 1)})")


# ---------------------------------------------------------------------------
# Plots (optional).
# ---------------------------------------------------------------------------
def _draw_learning_curve(records: Sequence[BanditStep], title: str):
    from course.lib.learning import demo_plots

    running = []
    total = 0.0
    for s in records:
        total += s.reward
        running.append(total / s.step)
    return lambda plt: demo_plots.bandit_learning_curve(
        plt,
        [s.step for s in records],
        [s.expected_reward for s in records],
        running,
        [s.baseline for s in records],
        title,
    )


def _draw_ablation(scenarios: Sequence[dict[str, Any]]):
    from course.lib.learning import demo_plots

    panels = [
        (
            f"{sc['name']}: {len(sc['result']['seeds'])} seeds x {sc['result']['steps']} steps, "
            f"lr {sc['result']['lr']:g}",
            ablation_plot_rows(sc["result"]),
        )
        for sc in scenarios
    ]
    alpha = scenarios[0]["result"]["ema_alpha"]
    baselines = ["none", "running mean", f"EMA alpha={alpha:g}", "b*"]
    return lambda plt: demo_plots.ablation_variances(plt, panels, baselines)


# ---------------------------------------------------------------------------
# The command line.
# ---------------------------------------------------------------------------
STORY_STEPS_DEFAULT = 500


def build_parser():
    parser = make_parser(
        "python -m course.bandit_train",
        "REINFORCE on a softmax policy over candidate completions of one prompt, rewarded by the strict "
        "scorer. Prints and logs every update as a story; --ablation measures what the baseline does.",
        "  python -m course.bandit_train --steps 30 --seed 0 --lr 0.5 --baseline --slow "
        "--outdir runs/demo_bandit_slow\n"
        "  python -m course.bandit_train --steps 30 --seed 0 --lr -0.5 --baseline --slow "
        "--outdir runs/demo_bandit_negative\n"
        "  python -m course.bandit_train --steps 1000 --summary-every 100 --plot\n"
        "  python -m course.bandit_train --steps 30 --baseline ema --alpha 0.1\n"
        "  python -m course.bandit_train --ablation --seeds 200 --steps 100\n"
        "  python -m course.bandit_train --steps 30 --reward-noise 0.3 --slow\n"
        "  python -m course.bandit_train --noise-sweep 0 0.1 0.2 0.3 0.4 0.5 --seeds 200 --steps 100",
    )
    _add_update_options(parser)
    _add_story_options(parser)
    _add_experiment_options(parser)
    add_run_options(
        parser,
        "run directory (default runs/bandit_NNN or runs/bandit_ablation_NNN)",
        plot="also write a PNG (the plot extra; without it the run is written, without the picture)",
    )
    return parser




def _add_update_options(parser: argparse.ArgumentParser) -> None:
    """How the policy is updated: steps, seed, learning rate, baseline."""
    parser.add_argument(
        "--steps",
        type=STEPS_RANGE,
        default=100,
        help="number of updates, at most 100,000 (default 100)",
    )
    parser.add_argument("--seed", type=seed, default=0, help="seed of the sampler; same seed, same run (default 0)")
    parser.add_argument(
        "--lr",
        type=LR_RANGE,
        default=0.5,
        help="learning rate in [-100, 100]; negative = the unlearning demo (default 0.5)",
    )
    parser.add_argument(
        "--baseline",
        nargs="?",
        const="mean",
        default="mean",
        choices=BASELINES,
        help="what to subtract from the reward: mean = running mean of earlier rewards (the default, also plain "
        "--baseline), ema = moving average b <- (1-alpha) b + alpha R, optimal = the exact b* of the current "
        "policy, none = nothing",
    )
    parser.add_argument(
        "--no-baseline",
        dest="baseline",
        action="store_const",
        const="none",
        help="same as --baseline none (A = reward)",
    )
    parser.add_argument(
        "--alpha",
        type=ALPHA_RANGE,
        default=DEFAULT_ALPHA,
        help=f"weight of the newest reward in the ema baseline, in (0, 1] (default {DEFAULT_ALPHA:g}); "
        "the ablation's EMA column uses it too",
    )


def _add_story_options(parser: argparse.ArgumentParser) -> None:
    """What is told, and what pays the bandit: the story's detail, the actions, the rubric."""
    parser.add_argument("--slow", action="store_true", help="print the full story of every step")
    parser.add_argument(
        "--predict",
        action="store_true",
        help="with --slow, on a terminal: before each update, predict for every action whether its probability "
        "goes up (u), down (d) or stays (s); the truth and a running score follow",
    )
    parser.add_argument(
        "--summary-every",
        type=non_negative_int,
        default=0,
        metavar="K",
        help="fast mode: one line every K steps",
    )
    parser.add_argument(
        "--story-steps",
        type=non_negative_int,
        default=STORY_STEPS_DEFAULT,
        metavar="N",
        help="tell the first N steps in full in the story; later steps get one line each "
        f"(default {STORY_STEPS_DEFAULT})",
    )
    parser.add_argument(
        "--action",
        action="append",
        metavar="TEXT",
        help="a candidate completion (repeat for each); replaces the default actions",
    )
    parser.add_argument(
        "--rubric",
        default="strict",
        help="the rubric that pays the bandit: strict (reward spec v1, the default) or a hackable one from "
        "course.rubrics, e.g. format_only; the strict verdicts are shown beside it",
    )


def _add_experiment_options(parser: argparse.ArgumentParser) -> None:
    """The experiments over many seeds: reward noise, the noise sweep, the ablation."""
    parser.add_argument(
        "--reward-noise",
        type=float_in(0.0, 1.0),
        default=0.0,
        metavar="P",
        help="flip each reward (1 - r) with probability P in [0, 1], from a generator seeded by --seed: "
        "a grader that is wrong a share P of the time (default 0)",
    )
    parser.add_argument(
        "--noise-sweep",
        type=float_in(0.0, 1.0),
        nargs="+",
        metavar="P",
        help="run --seeds seeds at each reward-noise rate and tabulate the exact final J(theta)",
    )
    parser.add_argument("--ablation", action="store_true", help="run many seeds with and without the baseline")
    parser.add_argument(
        "--seeds",
        type=int_in(1, 10_000),
        default=200,
        help="ablation and noise sweep: number of seeds, from --seed upward, at most 10,000 (default 200)",
    )


def _check_args(args) -> None:
    if args.steps < 1:
        raise CourseError(f"--steps must be at least 1, got {args.steps}")
    if args.summary_every < 0:
        raise CourseError(f"--summary-every must be >= 0, got {args.summary_every}")
    if args.story_steps < 0:
        raise CourseError(f"--story-steps must be >= 0, got {args.story_steps}")
    if not math.isfinite(args.lr):
        raise CourseError(f"--lr must be a finite number, got {args.lr}")
    if args.noise_sweep and (args.ablation or args.slow or args.reward_noise):
        raise CourseError(
            "--noise-sweep runs its own rates over many seeds; it does not go with --ablation, --slow or --reward-noise"
        )
    if args.reward_noise and args.ablation:
        raise CourseError(
            "--reward-noise does not go with --ablation (the ablation measures the baseline on clean rewards)"
        )
    _check_size(args)


# The many-seed modes train seeds x steps times per rate (noise sweep) or per baseline and regime
# (ablation: 4 baselines, 2 regimes without --action). Each flag is bounded alone, but their product
# is the work: 1,001 rates x 10,000 seeds x 100 steps is hours. A million updates is some seconds
# (the M3 lesson's sweep is 120,000, the ablation 160,000).
MAX_UPDATES = 1_000_000
MAX_RATES = 101  # --noise-sweep: every rate from 0 to 1 in steps of 0.01 is a table of 101 rows
PROGRESS_UPDATES = 200_000  # past this, the sweep says how far it got after each rate
PROGRESS_STEPS = 20_000  # a single run past this (some seconds) has a progress line, unless --slow tells every step


def _check_size(args) -> None:
    if args.noise_sweep:
        rates = len(dict.fromkeys(args.noise_sweep))
        if rates > MAX_RATES:
            raise CourseError(f"--noise-sweep: {rates:,} rates; at most {MAX_RATES} (a row each: 0 to 1 by 0.01)")
        check_work("--noise-sweep x --seeds x --steps", rates * args.seeds * args.steps, MAX_UPDATES, "updates",
                   "fewer rates, seeds or steps (the M3 lesson's sweep is 6 x 200 x 100)")
    if args.ablation:
        regimes = 1 if args.action else 2
        check_work("--ablation --seeds x --steps", regimes * len(BASELINE_NAMES) * args.seeds * args.steps,
                   MAX_UPDATES, "updates", "fewer seeds or steps (the guide's ablation is 200 x 100)")


def _manifest(argv, args, actions, extra: dict[str, Any]) -> dict[str, Any]:
    return {
        **environment("course.bandit_train", argv),
        "example": EXAMPLE,
        "actions": [a.text for a in actions],
        "rewards": [a.reward for a in actions],
        "error_codes": [a.error_code for a in actions],
        "scorer_version": SCORER_VERSION,
        "scorer_fingerprint": scorer_fingerprint(),
        **({"rubric": args.rubric, "rubric_version": get_rubric(args.rubric).version,
            "rubric_fingerprint": get_rubric(args.rubric).fingerprint(),
            "strict_rewards": [a.strict_reward for a in actions]} if args.rubric != "strict" else {}),
        "seed": args.seed,
        "lr": args.lr,
        "steps": args.steps,
        "baseline": BASELINE_NAMES[args.baseline],
        **(
            {"reward_noise": args.reward_noise, "reward_noise_seed": f"reward-noise:{args.seed}"}
            if args.reward_noise
            else {}
        ),
        **(
            {"ema_alpha": args.alpha, "initial_baseline": INITIAL_BASELINE}
            if args.baseline == "ema" or extra.get("mode") == "ablation"
            else {}
        ),
        "initial_theta": [0.0] * len(actions),
        **extra,
    }


def _check_predict(args: argparse.Namespace) -> None:
    """--predict asks a person a question before each single update: a terminal, and no ablation."""
    if args.ablation:
        raise CourseError("--predict asks about single updates; it does not go with --ablation")
    if not sys.stdin.isatty():
        raise CourseError(
            "--predict asks you a question before each update, so it needs a terminal; stdin is not one "
            "(run it in a terminal, without a pipe or redirect)"
        )


def _header(args: argparse.Namespace, actions: Sequence[ScoredAction]) -> list[str]:
    """The story's opening lines: the actions, the settings, and the reward noise when there is any."""
    header = story_header(
        actions, steps=args.steps, lr=args.lr, seed=args.seed, baseline=args.baseline, alpha=args.alpha
    )
    if args.reward_noise:
        header[-1:-1] = [
            f"reward noise: each reward is flipped (1 - r) with probability {args.reward_noise:g}, "
            "from its own generator "
            "(seed 'reward-noise:{args.seed}'); J(theta) is measured under the scorer's true rewards".replace(
                "{args.seed}", str(args.seed)
            )
        ]
    return header


def _tell_step(s: BanditStep, args: argparse.Namespace, actions: Sequence[ScoredAction], score: list[int]) -> list[str]:
    """One update's lines for the story, printed as the mode asks (--predict asks first and counts in ``score``)."""
    if s.step <= args.story_steps:
        chunk = story_step(s, actions, lr=args.lr, steps=args.steps)
    else:
        chunk = [summary_line(s, actions, steps=args.steps)]
    if args.predict and s.step <= args.story_steps:
        # Ask before the answer is shown: the lines up to the advantage, then the question.
        print("\n".join(chunk[:PREDICT_AT]), flush=True)
        guess = _ask_prediction(len(actions), s.step)
        print("\n".join(chunk[PREDICT_AT:-1]), flush=True)
        right = prediction_score(guess, prediction_truth(s))
        score[0] += right
        score[1] += len(actions)
        print(
            f"  your prediction {' '.join(guess)} -> {right}/{len(actions)} right "
            f"(running score {score[0]}/{score[1]})\n",
            flush=True,
        )
    elif args.slow:
        print("\n".join(chunk), flush=True)
    elif args.summary_every and (s.step % args.summary_every == 0 or s.step == args.steps):
        print(summary_line(s, actions, steps=args.steps), flush=True)
    return chunk


def _run_fields(args: argparse.Namespace, records: Sequence[BanditStep], score: list[int]) -> dict[str, Any]:
    """The manifest's fields of a single run: its files, its result, the prediction score."""
    last = records[-1]
    return {
        "files": ["bandit_log.jsonl", "bandit_story.txt", "manifest.json"]
        + (["learning_curve.png"] if args.plot else []),
        "plot": "learning_curve.png" if args.plot else None,
        "result": {
            "initial_expected_reward": records[0].expected_reward,
            "final_expected_reward": last.expected_reward_after,
            "final_theta": list(last.theta_after),
            "final_probs": list(last.probs_after),
            "mean_sampled_reward": math.fsum(s.reward for s in records) / len(records),
            **({"rewards_flipped": sum(s.flipped for s in records)} if args.reward_noise else {}),
        },
        **({"prediction_score": {"right": score[0], "asked": score[1]}} if args.predict else {}),
    }


def main(argv: Sequence[str] | None = None) -> int:
    return run(_main, argv)


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    _check_args(args)
    if args.plot:  # a missing plot extra leaves out the picture only (rule 2 of course.lib.extras)
        args.plot = optional_view("plot", "--plot", "writing the run without the picture")
    if args.predict:
        _check_predict(args)
        args.slow = True
    rubric = get_rubric(args.rubric)  # an unknown name: exit 2 before any work
    actions = score_actions(EXAMPLE, args.action if args.action else DEFAULT_ACTIONS,
                            None if args.rubric == "strict" else rubric)
    rewards = [a.reward for a in actions]
    if args.ablation:
        return _ablation_main(argv, args, actions)
    if args.noise_sweep:
        return _noise_sweep_main(argv, args, actions)

    final = resolve_outdir(args.outdir, force=args.force, prefix="bandit", tool="course.bandit_train")
    header = _header(args, actions)
    story: list[str] = list(header)
    if args.slow:
        print("\n".join(header), flush=True)
    records: list[BanditStep] = []
    score = [0, 0]  # --predict: right answers, questions asked
    with atomic_run_dir(final, force=args.force, prefix="bandit") as tmp:
        with open(tmp / "bandit_log.jsonl", "w", encoding="utf-8", newline="\n") as log:
            steps = reinforce(
                rewards, steps=args.steps, lr=args.lr, rng=random.Random(args.seed), baseline=args.baseline,
                alpha=args.alpha,
                reward_noise=args.reward_noise, noise_rng=noise_seed(args.seed) if args.reward_noise else None,
            )
            for s in with_progress(steps, args.steps, "bandit_train: steps",
                                   over=args.steps if args.slow else PROGRESS_STEPS):
                records.append(s)
                log.write(dumps_line(log_record(s, actions, noisy=bool(args.reward_noise))) + "\n")
                story.extend(_tell_step(s, args, actions, score))
        tail = ["", "Final policy:", *final_table(records[0], records[-1], actions)]
        story.extend(tail)
        (tmp / "bandit_story.txt").write_text("\n".join(story) + "\n", encoding="utf-8")
        if args.plot:
            from course.lib.reporting.plotting import plot_to

            title = f"bandit: lr {args.lr:g}, baseline {short_baseline(args.baseline, args.alpha)}, seed {args.seed}"
            plot_to(tmp / "learning_curve.png", _draw_learning_curve(records, title))
        write_json(
            tmp / "manifest.json",
            _manifest(
                argv,
                args,
                actions,
                _run_fields(args, records, score),
            ),
        )
    # With --slow, stdout up to here is byte for byte bandit_story.txt.
    print("\n".join(tail))
    if args.predict:
        print(f"prediction score: {score[0]}/{score[1]} right"
              + (f" ({100 * score[0] / score[1]:.0f}%)" if score[1] else ""))
    print(f"wrote {visible(str(final))}/ (manifest.json, bandit_log.jsonl, bandit_story.txt"
          + (", learning_curve.png" if args.plot else "") + ")")
    return 0


def _noise_sweep_main(argv, args, actions) -> int:
    final = resolve_outdir(args.outdir, force=args.force, prefix="bandit_noise")
    rates = list(dict.fromkeys(args.noise_sweep))  # each rate once, in the order given
    info(f"noise sweep: {len(rates)} rates x {args.seeds} seeds x {args.steps} steps ...")
    weak = args.rubric != "strict"
    long = len(rates) * args.seeds * args.steps > PROGRESS_UPDATES
    rows = []
    for done, rate in enumerate(rates, 1):  # one rate at a time: each is its own seeds' runs, the same rows
        rows += run_noise_sweep(
            [a.reward for a in actions], rates=[rate], seeds=args.seeds, base_seed=args.seed, steps=args.steps,
            lr=args.lr, baseline=args.baseline, alpha=args.alpha,
            goal_rewards=[a.strict_reward for a in actions] if weak else None,
        )
        if long:
            info(f"noise sweep: rate {rate:g} done ({done}/{len(rates)})")
    table = noise_table(actions, rows, lr=args.lr, baseline=args.baseline, alpha=args.alpha) + [""] + wrap(NOISE_NOTE)
    with atomic_run_dir(final, force=args.force, prefix="bandit_noise") as tmp:
        write_json(tmp / "noise_sweep.json", {"rows": rows, "note": NOISE_NOTE})
        (tmp / "noise_sweep.txt").write_text("\n".join(table) + "\n", encoding="utf-8")
        write_json(
            tmp / "manifest.json",
            _manifest(argv, args, actions, {
                "mode": "noise_sweep",
                "reward_noise_rates": rates,
                "seeds": list(range(args.seed, args.seed + args.seeds)),
                "reward_noise_seed": "reward-noise:<seed>",
                "files": ["manifest.json", "noise_sweep.json", "noise_sweep.txt"],
            }),
        )
    print("\n".join(table))
    print(f"wrote {visible(str(final))}/ (manifest.json, noise_sweep.json, noise_sweep.txt)")
    return 0


def _ablation_main(argv, args, actions) -> int:
    final = resolve_outdir(args.outdir, force=args.force, prefix="bandit_ablation", tool="course.bandit_train")
    # Without --action, both regimes are measured: rare success (the demo's actions) and common success.
    named = [("chosen actions" if args.action else "default actions (rare success)", actions)]
    if not args.action:
        named.append(("mostly rewarded actions (common success)", score_actions(EXAMPLE, MOSTLY_REWARDED_ACTIONS)))
    scenarios = []
    table: list[str] = []
    for name, acts in named:
        info(f"ablation [{name}]: {args.seeds} seeds x {args.steps} steps, each baseline (none, mean, EMA, b*) ...")
        result = run_ablation(
            [a.reward for a in acts],
            seeds=args.seeds,
            base_seed=args.seed,
            steps=args.steps,
            lr=args.lr,
            alpha=args.alpha,
        )
        scenarios.append(
            {
                "name": name,
                "actions": [a.text for a in acts],
                "rewards": [a.reward for a in acts],
                "error_codes": [a.error_code for a in acts],
                "result": result,
            }
        )
        table += ablation_table(name, acts, result) + [""]
    table += wrap(ABLATION_NOTE)
    with atomic_run_dir(final, force=args.force, prefix="bandit_ablation") as tmp:
        write_json(tmp / "ablation.json", {"scenarios": scenarios, "note": ABLATION_NOTE})
        (tmp / "ablation.txt").write_text("\n".join(table) + "\n", encoding="utf-8")
        if args.plot:
            from course.lib.reporting.plotting import plot_to

            plot_to(tmp / "ablation.png", _draw_ablation(scenarios))
        write_json(
            tmp / "manifest.json",
            _manifest(
                argv,
                args,
                actions,
                {
                    "mode": "ablation",
                    "seeds": list(range(args.seed, args.seed + args.seeds)),
                    "baseline": "all: " + ", ".join(BASELINE_NAMES[kind] for _, kind, _ in SETTINGS),
                    "scenarios": [s["name"] for s in scenarios],
                    "plot": "ablation.png" if args.plot else None,
                },
            ),
        )
    print("\n".join(table))
    print(
        f"wrote {visible(str(final))}/ (manifest.json, ablation.json, ablation.txt"
        + (", ablation.png" if args.plot else "")
        + ")"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
