"""Three training loops, each with one planted bug. Find it from the log.

Every loop here trains a softmax policy over a few candidate completions of a
course prompt (a bandit whose arms are whole completions), with rewards from
the strict verifier ``course.score``. Each runs in milliseconds, prints a log,
and finishes without an error. Each is wrong.

``--bug advantage``: group-baseline REINFORCE (GRPO-style)
    Every step draws 4 samples per prompt for two prompts; each sample's
    advantage is its reward minus the mean reward of its group. Look at the
    reward column and the |advantage| column side by side, and at what
    P(correct) does over the run. Ask: within one step, did the samples of one
    prompt get different rewards? If they did, what must the advantages be?

``--bug kl``: KL-regularised ascent, E[r] - beta * KL(pi || pi_ref), exact gradients
    The policy starts at the reference policy pi_ref. Each log row shows the
    policy *after* that step's update and the KL the loop recorded. Take any
    row's probabilities and compute KL(pi || pi_ref) yourself (pi_ref is printed
    at the top). Does it match the KL on that row? Look hard at step 0.

``--bug x_axis``: a learning curve logged every K steps
    The same deterministic training run, logged with ``--log-every 1`` and with
    ``--log-every 10``. A log's x-axis should not depend on how often you log.
    Run both and compare: when does the curve pass E[r] = 0.9, and where does
    it end? Which of the two runs tells the truth about the number of updates?

Run::

    python -m course.exercises.planted_bugs --bug advantage
    python -m course.exercises.planted_bugs --bug kl
    python -m course.exercises.planted_bugs --bug x_axis --log-every 10

Write down (1) the symptom, in the log's own numbers, (2) the line that causes
it, (3) a test that would have caught it. The corrected loops are the teacher's
(``teacher/planted_bugs_solutions.py`` runs them through ``cli`` below).
"""

from __future__ import annotations

import math
import random
import sys
from collections import defaultdict
from typing import Any, Sequence

from course.cli import float_in, int_in, make_parser, positive_int, seed
from course.cli import run as run_cli
from course.instrument.spec_v1 import score
from course.lib.learning.policy_gradient import (
    exact_gradient,
    expected_reward,
    grad_log_prob,
    kl_divergence,
    kl_objective_gradient,
    sample_action,
    softmax,
)

# ---------------------------------------------------------------------------
# The environment shared by all three: prompts, candidate completions (the
# arms), and their rewards from the course's own verifier.
# ---------------------------------------------------------------------------
PROMPTS: dict[str, tuple[int, list[str]]] = {
    # prompt id: (expected_answer, candidate completions); arm 0 is the correct one.
    "mul-17x19": (323, ["Final: 323", "Final: 324", "323", "Final:323"]),
    "sub-12-30": (-18, ["Final: -18", "Final: 18", "Final: \u221218", "The answer is -18"]),
}


def arm_rewards(prompt_id: str) -> list[float]:
    """The reward of each candidate completion of a prompt, from the strict verifier."""
    expected, arms = PROMPTS[prompt_id]
    return [score({"expected_answer": expected}, arm)["reward"] for arm in arms]


# The single-prompt bandit of the kl and x_axis exercises. pi_ref is a
# "base model" that prefers the chatty, badly formatted completions.
BANDIT_PROMPT = "mul-17x19"
REFERENCE_LOGITS = [0.0, 0.5, 1.5, 1.0]


# ---------------------------------------------------------------------------
# Exercise "advantage": group-baseline REINFORCE over two prompts.
# ---------------------------------------------------------------------------
def train_group_baseline(steps: int = 30, group_size: int = 4, lr: float = 1.0, seed: int = 0) -> list[dict[str, Any]]:
    """REINFORCE with a per-prompt group baseline; returns one log row per step."""
    rng = random.Random(seed)
    logits = {pid: [0.0] * len(PROMPTS[pid][1]) for pid in PROMPTS}
    rewards_of = {pid: arm_rewards(pid) for pid in PROMPTS}
    rows = []
    for step in range(steps):
        # 1. Rollouts: group_size samples per prompt from the current policy.
        samples: list[dict[str, Any]] = []
        for pid in PROMPTS:
            probs = softmax(logits[pid])
            for i in range(group_size):
                action = sample_action(probs, rng)
                samples.append(
                    {"id": f"{pid}#{i}", "prompt_id": pid, "action": action, "reward": rewards_of[pid][action]}
                )

        # 2. Baseline: the mean reward of the group a sample belongs to.
        groups: dict[str, list[float]] = defaultdict(list)
        for s in samples:
            groups[s["id"]].append(s["reward"])
        for s in samples:
            group = groups[s["id"]]
            s["advantage"] = s["reward"] - math.fsum(group) / len(group)

        # 3. Update: theta += lr * mean over the group of advantage * grad log pi(action).
        for s in samples:
            pid = s["prompt_id"]
            g = grad_log_prob(logits[pid], s["action"])
            logits[pid] = [t + lr * s["advantage"] * gk / group_size for t, gk in zip(logits[pid], g)]

        rows.append(group_row(step, samples, logits))
    return rows


def group_row(step: int, samples: list[dict[str, Any]], logits: dict[str, list[float]]) -> dict[str, Any]:
    return {
        "step": step,
        "rewards": {pid: [s["reward"] for s in samples if s["prompt_id"] == pid] for pid in PROMPTS},
        "mean_reward": math.fsum(s["reward"] for s in samples) / len(samples),
        "mean_abs_advantage": math.fsum(abs(s["advantage"]) for s in samples) / len(samples),
        "p_correct": {pid: softmax(logits[pid])[0] for pid in PROMPTS},
    }


# ---------------------------------------------------------------------------
# Exercise "kl": exact ascent on E[r] - beta KL(pi || pi_ref), logging the KL.
# ---------------------------------------------------------------------------
def train_kl(steps: int = 12, beta: float = 0.2, lr: float = 2.0) -> list[dict[str, Any]]:
    """Gradient ascent from pi_ref on the KL-regularised objective; one log row per step."""
    pi_ref = softmax(REFERENCE_LOGITS)
    rewards = arm_rewards(BANDIT_PROMPT)
    logits = list(REFERENCE_LOGITS)  # start exactly at the reference policy
    rows = []
    for step in range(steps):
        kl = kl_divergence(softmax(logits), pi_ref)
        grad = kl_objective_gradient(logits, pi_ref, rewards, beta)
        logits = [t + lr * g for t, g in zip(logits, grad)]
        probs = softmax(logits)
        reward = expected_reward(probs, rewards)
        rows.append(
            {"step": step, "probs": probs, "expected_reward": reward, "kl": kl, "objective": reward - beta * kl}
        )
    return rows


# ---------------------------------------------------------------------------
# Exercise "x_axis": the same run, logged every log_every steps.
# ---------------------------------------------------------------------------
def train_logged(steps: int = 60, log_every: int = 5, lr: float = 0.8) -> list[dict[str, Any]]:
    """Exact policy-gradient ascent on one prompt; a log row every log_every updates."""
    rewards = arm_rewards(BANDIT_PROMPT)
    logits = list(REFERENCE_LOGITS)
    log: list[dict[str, Any]] = []
    for step in range(1, steps + 1):
        logits = [t + lr * g for t, g in zip(logits, exact_gradient(logits, rewards))]
        if step % log_every == 0:
            log.append({"x": len(log) + 1, "expected_reward": expected_reward(softmax(logits), rewards)})
    return log


# ---------------------------------------------------------------------------
# Printing: the logs a student reads.
# ---------------------------------------------------------------------------
def format_group_log(rows: list[dict[str, Any]]) -> str:
    pids = list(PROMPTS)
    lines = [
        "group-baseline REINFORCE: 2 prompts x 4 samples per step; advantage = reward - group mean",
        "arms (arm 0 is correct): " + "; ".join(f"{pid}: {PROMPTS[pid][1]!r}" for pid in pids),
        "",
        f"{'step':>4}  {'rewards ' + pids[0]:<22}  {'rewards ' + pids[1]:<22}  {'mean r':>6}  {'|adv|':>6}  "
        f"{'P(correct) ' + pids[0]:>20}  {'P(correct) ' + pids[1]:>20}",
    ]
    for r in rows:
        rw = ["".join(str(int(x)) for x in r["rewards"][pid]) for pid in pids]
        lines.append(
            f"{r['step']:>4}  {rw[0]:<22}  {rw[1]:<22}  {r['mean_reward']:>6.3f}  {r['mean_abs_advantage']:>6.3f}  "
            f"{r['p_correct'][pids[0]]:>20.4f}  {r['p_correct'][pids[1]]:>20.4f}"
        )
    return "\n".join(lines)


def format_kl_log(rows: list[dict[str, Any]], beta: float) -> str:
    _, arms = PROMPTS[BANDIT_PROMPT]
    pi_ref = softmax(REFERENCE_LOGITS)
    lines = [
        f"KL-regularised ascent on E[r] - beta*KL(pi || pi_ref), beta = {beta}; pi starts at pi_ref",
        "arms:    " + "  ".join(f"{a!r}" for a in arms),
        "rewards: " + str(arm_rewards(BANDIT_PROMPT)),
        "pi_ref:  [" + ", ".join(f"{p:.4f}" for p in pi_ref) + "]",
        "",
        f"{'step':>4}  {'pi after the update':<36}  {'E[r]':>6}  {'KL':>8}  {'E[r]-beta*KL':>12}",
    ]
    for r in rows:
        probs = "[" + ", ".join(f"{p:.4f}" for p in r["probs"]) + "]"
        lines.append(f"{r['step']:>4}  {probs:<36}  {r['expected_reward']:>6.4f}  {r['kl']:>8.5f}  "
                     f"{r['objective']:>12.5f}")
    return "\n".join(lines)


def format_axis_log(rows: list[dict[str, Any]], steps: int, log_every: int) -> str:
    lines = [
        f"exact policy-gradient ascent, {steps} updates, logged every {log_every}",
        "",
        f"{'x':>5}  {'E[r]':>6}",
    ]
    for r in rows:
        bar = "#" * round(40 * r["expected_reward"])
        lines.append(f"{r['x']:>5}  {r['expected_reward']:>6.4f}  {bar}")
    crossed = next((r["x"] for r in rows if r["expected_reward"] >= 0.9), None)
    lines += [
        "",
        f"the curve first reaches E[r] >= 0.9 at x = {crossed}; "
        f"its last point is at x = {rows[-1]['x'] if rows else None}",
    ]
    return "\n".join(lines)


BUGS = ("advantage", "kl", "x_axis")


def run(
    bug: str, steps: int | None, seed: int, log_every: int, beta: float, impl: Any = None
) -> tuple[list[dict[str, Any]], str]:
    """Run one exercise with the loops of ``impl`` (default: this module's planted ones); return its
    rows and printed log. The teacher's corrected loops have the same names and signatures."""
    if impl is None:
        impl = sys.modules[__name__]
    if bug == "advantage":
        rows = impl.train_group_baseline(steps=steps or 30, seed=seed)
        return rows, format_group_log(rows)
    if bug == "kl":
        rows = impl.train_kl(steps=steps or 12, beta=beta)
        return rows, format_kl_log(rows, beta)
    n = steps or 60
    rows = impl.train_logged(steps=n, log_every=log_every)
    return rows, format_axis_log(rows, n, log_every)


def main(argv: Sequence[str] | None = None) -> int:
    return cli(
        argv,
        prog="python -m course.exercises.planted_bugs",
        description="Run a training loop with a planted bug and print its log. Find the bug from the log.",
        example="  python -m course.exercises.planted_bugs --bug advantage\n"
        "  python -m course.exercises.planted_bugs --bug x_axis --log-every 10",
    )


def cli(
    argv: Sequence[str] | None, *, prog: str, description: str, example: str, impl: Any = None, banner: str = ""
) -> int:
    """The exercise's command line, for the planted loops (``main``) or another module's loops of
    the same names (the teacher's corrected ones); ``banner`` heads the printed log."""
    return run_cli(lambda args_in: _main(args_in, prog, description, example, impl, banner), argv)


def _main(args_in: Sequence[str] | None, prog: str, description: str, example: str, impl: Any, banner: str) -> int:
    from course.errors import CourseError
    from course.lib.records.jsonl import dumps_line

    parser = make_parser(prog, description, example)
    parser.add_argument("--bug", required=True, choices=BUGS, help="which exercise")
    parser.add_argument("--steps", type=int_in(1, 100_000), default=None,
                        help="training steps, at most 100,000 (default per exercise)")
    parser.add_argument("--seed", type=seed, default=0, help="sampling seed (advantage exercise)")
    parser.add_argument("--log-every", type=positive_int, default=5, help="log every K updates (x_axis exercise)")
    parser.add_argument("--beta", type=float_in(1e-3, 1e3), default=0.2, help="KL weight in [1e-3, 1e3] (kl exercise)")
    parser.add_argument("--json", action="store_true", help="print the log rows as JSON lines")
    args = parser.parse_args(args_in)
    if args.steps is not None and args.steps < 1:
        raise CourseError("--steps must be at least 1")
    if args.log_every < 1:
        raise CourseError("--log-every must be at least 1")
    if args.beta <= 0:
        raise CourseError("--beta must be positive")
    rows, text = run(args.bug, args.steps, args.seed, args.log_every, args.beta, impl)
    if args.json:
        for row in rows:
            print(dumps_line(row))
    else:
        print(banner + text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
