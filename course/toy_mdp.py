"""Credit assignment in miniature: a two-step decision with the reward only at the end.

A trajectory is two choices, a1 then a2, each 0 or 1; nothing is paid until both
are made, then R(a1, a2) from a 2x2 table. The default table::

                a2 = 0   a2 = 1
    a1 = 0       0.6      0.6      the safe branch: 0.6 whatever comes next
    a1 = 1       1.0      0.0      the branch that pays 1.0, but only if step 2 is right

The policy is tabular softmax: two logits for step 1, and two logits for step 2
*per first action* (step 2 sees what happened at step 1, as a language model sees
its own prefix). Training is REINFORCE on whole trajectories::

    log pi(trajectory) = log pi1(a1) + log pi2(a2 | a1)
    theta += lr * (G - b) * grad log pi(trajectory)

so the one scalar A = G - b multiplies the gradients of *both* steps: the first
action is credited with a reward that arrived only after the second. This is what
happens to every token of a completion that ``course.score`` rewards once at the end.

The table also teaches the harder half of credit assignment: under the uniform
start, a1 = 1 is worth only 0.5 on average (step 2 still picks the wrong a2 half
the time), less than the safe 0.6. The first step's credit depends on how good
the later steps are; watch Q(a1 = 1) climb in the log as step 2 learns.

Run it::

    python -m course.toy_mdp --steps 300 --seed 0 --lr 0.5
    python -m course.toy_mdp --steps 20 --slow           # the story of every episode
    python -m course.toy_mdp --rewards 0 0 1 0           # only the path (1, 0) pays

Writes toy_mdp_log.jsonl (one record per episode), toy_mdp_log.txt (the story)
and manifest.json into the run directory (default runs/toy_mdp_NNN); with
``--plot``, toy_mdp.png too.
"""

from __future__ import annotations

import argparse
import math
import random
from typing import Sequence

from course.cli import (
    add_run_options,
    float_in,
    int_in,
    make_parser,
    non_negative_int,
    optional_view,
    run,
    seed,
    with_progress,
)
from course.errors import CourseError
from course.lib.learning import policy_gradient as pg
from course.lib.learning.narration import vector, wrap
from course.lib.learning.two_step import (  # the MDP, its exact values and REINFORCE on it: library code
    DEFAULT_REWARDS,
    Episode,
    Table,
    deterministic_returns,
    log_record,
    reinforce,
)
from course.lib.records.jsonl import dumps_line
from course.lib.records.manifest import environment
from course.lib.records.runs import atomic_run_dir, resolve_outdir, write_json
from course.lib.visible import visible

# Documented ranges: sums and baselines of rewards up to 1e6 stay far from float overflow
# (1e308 rewards made the running mean inf and the log NaN).
LR_RANGE = float_in(-100.0, 100.0)
# Every episode is kept for the story and the log (~5 KB each, measured): 100,000 episodes is ~530 MB.
STEPS_RANGE = int_in(1, 100_000)
PROGRESS_STEPS = 20_000  # past this (some seconds) a progress line, unless --slow tells every episode
REWARD_RANGE = float_in(-1e6, 1e6)


# ---------------------------------------------------------------------------
# The story.
# ---------------------------------------------------------------------------
WHY_CREDIT = (
    "Why the first action gets credit: no reward arrives after step 1, but the update uses "
    "log pi(trajectory) = log pi1(a1) + log pi2(a2 | a1), and the single advantage A = G - b "
    "multiplies the gradient of both terms. So a1 is pushed up or down by a reward that came "
    "later, exactly as every token of a completion shares the one reward the scorer gives at the end."
)


def story_header(rewards: Table, *, steps: int, lr: float, use_baseline: bool, seed: int) -> list[str]:
    base = "running mean of earlier returns (0 before the first)" if use_baseline else "none (b = 0)"
    return [
        "Two-step decision, reward only at the end. Reward table R(a1, a2):",
        "             a2 = 0   a2 = 1",
        f"    a1 = 0   {rewards[0][0]:>6.2f}   {rewards[0][1]:>6.2f}",
        f"    a1 = 1   {rewards[1][0]:>6.2f}   {rewards[1][1]:>6.2f}",
        "policy: tabular softmax, theta1 (2 logits) for step 1 and theta2[a1] (2 logits per first action) "
        "for step 2, all 0 (uniform)",
        f"REINFORCE on whole trajectories: lr {lr:g}; baseline: {base}; seed {seed}; {steps} episodes",
        *wrap(WHY_CREDIT),
        "Q(a1) below is the exact value of a first action under the current step-2 policy.",
        "",
    ]


def story_episode(e: Episode, *, lr: float, steps: int) -> list[str]:
    if not e.uses_baseline:
        why_b = "--no-baseline"
    elif e.n_past == 0:
        why_b = "no earlier returns yet"
    else:
        why_b = f"mean of the {e.n_past} earlier return{'s' if e.n_past > 1 else ''}"
    if e.advantage > 0:
        meaning = "> 0: this trajectory beat the baseline -> make BOTH of its actions more likely"
    elif e.advantage < 0:
        meaning = "< 0: this trajectory fell short -> make BOTH of its actions less likely"
    else:
        meaning = "= 0: no learning signal"
    if lr < 0 and e.advantage != 0:
        meaning += " (the negative lr flips it)"
    other = 1 - e.a1
    return [
        f"episode {e.episode}/{steps}   J(theta) = {e.expected_return:.4f}   "
        f"Q(a1=0) = {e.q[0]:.4f}  Q(a1=1) = {e.q[1]:.4f}",
        f"  step 1: pi1 = [{e.pi1[0]:.3f}, {e.pi1[1]:.3f}] -> a1 = {e.a1}   (reward so far: 0)",
        f"  step 2: pi2(.|a1={e.a1}) = [{e.pi2[e.a1][0]:.3f}, {e.pi2[e.a1][1]:.3f}] -> a2 = {e.a2}   "
        f"-> reward at the end R({e.a1},{e.a2}) = {e.ret:g}",
        f"  return G = {e.ret:g}; baseline b = {e.baseline:.4f} ({why_b}); A = {e.advantage:+.4f} {meaning}",
        f"    theta1        {vector(e.theta1)} + lr*A*(onehot(a1) - pi1)        = {vector(e.theta1_after)}",
        f"    theta2[a1={e.a1}]  {vector(e.theta2[e.a1])} + lr*A*(onehot(a2) - pi2(.|a1)) = "
        f"{vector(e.theta2_after[e.a1])}",
        f"    theta2[a1={other}]  {vector(e.theta2[other])} unchanged: that branch is not in this trajectory",
        f"  J(theta) after: {e.expected_return_after:.4f} ({e.expected_return_after - e.expected_return:+.4f})",
        "",
    ]


def summary_line(e: Episode, *, steps: int) -> str:
    return (
        f"episode {e.episode:>{len(str(steps))}}/{steps}  J {e.expected_return:.4f} -> {e.expected_return_after:.4f}  "
        f"path ({e.a1},{e.a2}) G={e.ret:g} b={e.baseline:.3f} A={e.advantage:+.3f}  "
        f"Q = [{e.q[0]:.3f}, {e.q[1]:.3f}]"
    )


def final_report(first: Episode, last: Episode, rewards: Table) -> list[str]:
    theta1, theta2 = last.theta1_after, last.theta2_after
    pi1 = pg.softmax(theta1)
    pi2 = [pg.softmax(r) for r in theta2]
    j = last.expected_return_after
    best = max(r["return"] for r in deterministic_returns(rewards))
    lines = [
        "Exact expected return of every deterministic policy (one row per path; the branch not taken",
        "does not matter, so the 8 deterministic policies have these 4 returns):",
    ]
    for r in deterministic_returns(rewards):
        mark = "  <- best" if r["return"] == best else ""
        lines.append(f"    always a1 = {r['a1']}, then a2 = {r['a2']}:  {r['return']:.4f}{mark}")
    prob_best = math.fsum(
        pi1[r["a1"]] * pi2[r["a1"]][r["a2"]] for r in deterministic_returns(rewards) if r["return"] == best
    )
    lines += [
        f"    learned policy:                {j:.4f}   (uniform start: {first.expected_return:.4f})",
        f"learned pi1 = [{pi1[0]:.4f}, {pi1[1]:.4f}]   pi2(.|a1=0) = [{pi2[0][0]:.4f}, {pi2[0][1]:.4f}]   "
        f"pi2(.|a1=1) = [{pi2[1][0]:.4f}, {pi2[1][1]:.4f}]",
        f"probability of following a best path: {prob_best:.4f}",
    ]
    return lines


def _draw(episodes: Sequence[Episode], title: str):
    """The figure of a run: exact returns and the policy's probabilities, before each update."""
    from course.lib.learning import demo_plots

    probabilities = {
        "P(a1 = 1)": [e.pi1[1] for e in episodes],
        "P(a2 = 1 | a1 = 0)": [e.pi2[0][1] for e in episodes],
        "P(a2 = 1 | a1 = 1)": [e.pi2[1][1] for e in episodes],
    }
    return lambda plt: demo_plots.toy_mdp_curves(
        plt,
        [e.episode for e in episodes],
        [e.expected_return for e in episodes],
        [e.q for e in episodes],
        probabilities,
        title,
    )


# ---------------------------------------------------------------------------
# The command line.
# ---------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    parser = make_parser(
        "python -m course.toy_mdp",
        "REINFORCE on a two-step decision whose only reward comes at the end: watch the first action "
        "get credit for it. Prints exact expected returns beside the learned policy's.",
        "  python -m course.toy_mdp --steps 300 --seed 0 --lr 0.5\n"
        "  python -m course.toy_mdp --steps 20 --slow --outdir runs/toy_mdp_slow\n"
        "  python -m course.toy_mdp --rewards 0 0 1 0     # R(0,0) R(0,1) R(1,0) R(1,1): only (1,0) pays\n"
        "  python -m course.toy_mdp --steps 300 --plot --outdir runs/toy_mdp_plot",
    )
    parser.add_argument(
        "--steps",
        type=STEPS_RANGE,
        default=300,
        help="number of episodes (updates), at most 100,000 (default 300)",
    )
    parser.add_argument("--seed", type=seed, default=0, help="seed of the sampler (default 0)")
    parser.add_argument(
        "--lr",
        type=LR_RANGE,
        default=0.5,
        help="learning rate in [-100, 100], may be negative (default 0.5)",
    )
    parser.add_argument(
        "--baseline",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="subtract the running mean of earlier returns (default on)",
    )
    parser.add_argument(
        "--rewards",
        type=REWARD_RANGE,
        nargs=4,
        metavar=("R00", "R01", "R10", "R11"),
        help="the reward table R(a1, a2) row by row, each in [-1e6, 1e6] (default 0.6 0.6 1 0)",
    )
    parser.add_argument("--slow", action="store_true", help="print the story of every episode")
    parser.add_argument(
        "--summary-every",
        type=non_negative_int,
        default=0,
        metavar="K",
        help="one line every K episodes",
    )
    add_run_options(
        parser,
        "run directory (default runs/toy_mdp_NNN)",
        plot="also write toy_mdp.png: returns and probabilities per episode "
        "(the plot extra; without it the run is written, without the picture)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    return run(_main, argv)


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    if args.plot:  # a missing plot extra leaves out the picture only (rule 2 of course.lib.extras)
        args.plot = optional_view("plot", "--plot", "writing the run without the picture")
    if args.steps < 1:
        raise CourseError(f"--steps must be at least 1, got {args.steps}")
    if args.summary_every < 0:
        raise CourseError(f"--summary-every must be >= 0, got {args.summary_every}")
    if not math.isfinite(args.lr):
        raise CourseError(f"--lr must be a finite number, got {args.lr}")
    if args.rewards is not None and not all(math.isfinite(r) for r in args.rewards):
        raise CourseError(f"--rewards must be 4 finite numbers, got {args.rewards}")
    rewards = (
        DEFAULT_REWARDS
        if args.rewards is None
        else ((args.rewards[0], args.rewards[1]), (args.rewards[2], args.rewards[3]))
    )
    final = resolve_outdir(args.outdir, force=args.force, prefix="toy_mdp", tool="course.toy_mdp")
    header = story_header(rewards, steps=args.steps, lr=args.lr, use_baseline=args.baseline, seed=args.seed)
    story = list(header)
    print("\n".join(header), flush=True)
    episodes: list[Episode] = []
    with atomic_run_dir(final, force=args.force, prefix="toy_mdp") as tmp:
        with open(tmp / "toy_mdp_log.jsonl", "w", encoding="utf-8", newline="\n") as log:
            episodes_run = reinforce(
                rewards, steps=args.steps, lr=args.lr, use_baseline=args.baseline, rng=random.Random(args.seed)
            )
            for e in with_progress(episodes_run, args.steps, "toy_mdp: episodes",
                                   over=args.steps if args.slow else PROGRESS_STEPS):
                episodes.append(e)
                log.write(dumps_line(log_record(e)) + "\n")
                chunk = story_episode(e, lr=args.lr, steps=args.steps)
                story.extend(chunk)
                if args.slow:
                    print("\n".join(chunk), flush=True)
                elif args.summary_every and (e.episode % args.summary_every == 0 or e.episode == args.steps):
                    print(summary_line(e, steps=args.steps), flush=True)
        report = final_report(episodes[0], episodes[-1], rewards)
        story += ["", *report]
        (tmp / "toy_mdp_log.txt").write_text("\n".join(story) + "\n", encoding="utf-8")
        if args.plot:
            from course.lib.reporting.plotting import plot_to

            title = f"two-step MDP: lr {args.lr:g}, baseline {'on' if args.baseline else 'off'}, seed {args.seed}"
            plot_to(tmp / "toy_mdp.png", _draw(episodes, title))
        last = episodes[-1]
        write_json(
            tmp / "manifest.json",
            {
                **environment("course.toy_mdp", argv),
                "rewards": [list(r) for r in rewards],
                "seed": args.seed,
                "lr": args.lr,
                "steps": args.steps,
                "baseline": "running_mean_of_earlier_returns" if args.baseline else "none",
                "files": ["manifest.json", "toy_mdp_log.jsonl", "toy_mdp_log.txt"]
                + (["toy_mdp.png"] if args.plot else []),
                "plot": "toy_mdp.png" if args.plot else None,
                "deterministic_returns": deterministic_returns(rewards),
                "result": {
                    "initial_expected_return": episodes[0].expected_return,
                    "final_expected_return": last.expected_return_after,
                    "final_theta1": list(last.theta1_after),
                    "final_theta2": [list(r) for r in last.theta2_after],
                    "final_pi1": pg.softmax(last.theta1_after),
                    "final_pi2": [pg.softmax(r) for r in last.theta2_after],
                },
            },
        )
    print("\n".join(report))
    print(f"wrote {visible(str(final))}/ (manifest.json, toy_mdp_log.jsonl, toy_mdp_log.txt"
          + (", toy_mdp.png" if args.plot else "") + ")")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
