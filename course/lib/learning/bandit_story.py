"""What the bandit demo says: the step-by-step story (--slow, bandit_story.txt), the --predict check,
the ablation's and the reward-noise sweep's tables (``python -m course.bandit_train`` prints them; the bandit
is ``bandit``).

Pure functions of the run's records: strings in, strings out (standard library only).
"""

from __future__ import annotations

import math
from typing import Any, Sequence

from course.instrument.spec_v1 import SCORER_VERSION
from course.lib.learning.bandit import (
    DEFAULT_ALPHA,
    EXAMPLE,
    INITIAL_BASELINE,
    PHASES,
    SETTINGS,
    BanditStep,
    ScoredAction,
)
from course.lib.learning.narration import arrow, quote

# ---------------------------------------------------------------------------
# The story: what --slow prints and bandit_story.txt holds.
# ---------------------------------------------------------------------------
ADVANTAGE_SIGN = (
    "How to read the advantage A = reward - baseline: A > 0 means the sampled completion did "
    "better than the policy's recent average, so the update makes it MORE likely; A < 0 means "
    "worse, so it becomes LESS likely; A = 0 teaches nothing. (A negative lr flips every direction.)"
)


def describe_baseline(kind: str, alpha: float = DEFAULT_ALPHA) -> str:
    """The baseline in words, as the story header and the ablation table name it."""
    return {
        "none": "none (b = 0)",
        "mean": "running mean of the rewards of earlier steps (0 before the first)",
        "ema": f"moving average b <- (1 - {alpha:g}) b + {alpha:g} R, updated after each step's advantage "
        f"(b = {INITIAL_BASELINE:g} before the first)",
        "optimal": "the variance-optimal constant b* of the current policy (an oracle: only a tiny action "
                   "set allows it)",
    }[kind]


def story_header(
    actions: Sequence[ScoredAction],
    *,
    steps: int,
    lr: float,
    use_baseline: bool | None = None,
    seed: int,
    baseline: str = "mean",
    alpha: float = DEFAULT_ALPHA,
) -> list[str]:
    width = max(len(quote(a.text)) for a in actions)
    lines = [
        f"REINFORCE on one prompt: {EXAMPLE['prompt']!r} (expected {EXAMPLE['expected_answer']})",
        f"{len(actions)} actions = whole candidate completions; rewards from the strict scorer {SCORER_VERSION}:",
    ]
    weak = any(
        a.strict_error_code and (a.strict_error_code != a.error_code or a.strict_reward != a.reward) for a in actions
    )
    if weak:
        lines[-1] = (
            f"{len(actions)} actions = whole candidate completions; rewards from a HACKABLE rubric, "
            "strict verdict beside:"
        )
    for a in actions:
        strict = f"   (strict: {a.strict_reward:.1f} {a.strict_error_code})" if weak else ""
        lines.append(f"  [{a.index}] {quote(a.text):<{width}}  reward {a.reward:.1f}  {a.error_code}{strict}")
    if use_baseline is not None:
        baseline = "mean" if use_baseline else "none"
    base = describe_baseline(baseline, alpha)
    lines += [
        f"policy: softmax over one logit per action, theta = 0 (uniform); lr {lr:g}; baseline: {base}; "
        f"seed {seed}; {steps} steps",
        "update: theta += lr * A * (onehot(sampled) - probs)      [REINFORCE: A times grad log pi(sampled)]",
        ADVANTAGE_SIGN,
        "",
    ]
    return lines


def story_step(s: BanditStep, actions: Sequence[ScoredAction], *, lr: float, steps: int) -> list[str]:
    """A few lines a student can annotate: what was sampled, how it scored, what moved and why."""
    a = actions[s.action]
    if not s.uses_baseline:
        why_b = "--no-baseline: b is always 0, so A is the raw reward"
    elif s.baseline_kind == "optimal":
        why_b = "b* of the policy before this update"
    elif s.n_past == 0:
        why_b = "no earlier rewards yet"
    elif s.baseline_kind == "ema":
        why_b = f"moving average of the {s.n_past} earlier reward{'s' if s.n_past > 1 else ''}, newest weighted most"
    else:
        why_b = f"mean of the {s.n_past} earlier reward{'s' if s.n_past > 1 else ''}"
    if s.advantage > 0:
        meaning = "> 0: better than the baseline -> reinforce it"
    elif s.advantage < 0:
        meaning = "< 0: worse than the baseline -> suppress it"
    else:
        meaning = "= 0: no better, no worse -> no learning signal"
    push = lr * s.advantage
    if push > 0:
        direction = (
            f"lr*A = {push:+.4f} > 0: the sampled action's probability goes UP, "
            "the other actions lose that mass between them"
        )
    elif push < 0:
        flipped = " (the negative lr flips the step)" if lr < 0 else ""
        direction = (
            f"lr*A = {push:+.4f} < 0{flipped}: the sampled action's probability goes DOWN, "
            "the other actions gain that mass between them"
        )
    else:
        direction = "lr*A = 0: theta does not move"

    width = max(len(quote(x.text)) for x in actions)
    lines = [
        f"step {s.step}/{steps}   J(theta) = {s.expected_reward:.4f}  (exact expected reward before the update)",
        f"  sampled [{a.index}] {quote(a.text)} -> reward {s.reward:.1f} ({a.error_code})"
        + (f"  FLIPPED by reward noise: the scorer gave {a.reward:.1f}" if s.flipped else ""),
        f"  baseline b = {s.baseline:.4f} ({why_b})",
        f"  advantage A = {s.reward:.1f} - {s.baseline:.4f} = {s.advantage:+.4f}  {meaning}",
        f"  {direction}",
        f"    {'#':>2}  {'action':<{width}}  {'theta':>8} {'prob':>6} | {'lr*A*grad':>9} | {'theta new':>9} "
        f"{'prob new':>8}",
    ]
    for i, x in enumerate(actions):
        delta = lr * s.grad[i] + 0.0
        mark = "*" if i == s.action else " "
        move = arrow(s.probs_after[i] - s.probs[i])
        lines.append(
            f"  {mark} {i:>2}  {quote(x.text):<{width}}  {s.theta[i]:>+8.4f} {s.probs[i]:>6.4f} | {delta:>+9.4f} | "
            f"{s.theta_after[i]:>+9.4f} {s.probs_after[i]:>8.4f} {move}"
        )
    lines.append(
        f"  J(theta) after: {s.expected_reward_after:.4f} ({s.expected_reward_after - s.expected_reward:+.4f})"
    )
    lines.append("")
    return lines


def summary_line(s: BanditStep, actions: Sequence[ScoredAction], *, steps: int) -> str:
    """One line per step for fast mode (--summary-every K) and for long stories."""
    best = max(range(len(actions)), key=lambda i: (actions[i].reward, -i))
    return (
        f"step {s.step:>{len(str(steps))}}/{steps}  J {s.expected_reward:.4f} -> {s.expected_reward_after:.4f}  "
        f"sampled [{s.action}] r={s.reward:.1f}{' (flipped)' if s.flipped else ''} b={s.baseline:.3f} "
        f"A={s.advantage:+.3f}  "
        f"p[{best}] {quote(actions[best].text)} = {s.probs_after[best]:.4f}"
    )


def final_table(first: BanditStep, last: BanditStep, actions: Sequence[ScoredAction]) -> list[str]:
    width = max(len(quote(a.text)) for a in actions)
    lines = [f"    {'#':>2}  {'action':<{width}}  reward  p start  p final  theta final"]
    for i, a in enumerate(actions):
        lines.append(
            f"    {i:>2}  {quote(a.text):<{width}}  {a.reward:>6.1f}  {first.probs[i]:>7.4f}  "
            f"{last.probs_after[i]:>7.4f}"
            f"  {last.theta_after[i]:>+11.4f}"
        )
    lines.append(
        f"exact expected reward J(theta): {first.expected_reward:.4f} at the start -> "
        f"{last.expected_reward_after:.4f} after {last.step} steps"
    )
    if any(a.strict_error_code and a.strict_reward != a.reward for a in actions):
        # trained on a weak rubric: the goal, measured on the same policy
        strict = [a.strict_reward for a in actions]
        start = math.fsum(p * r for p, r in zip(first.probs, strict))
        end = math.fsum(p * r for p, r in zip(last.probs_after, strict))
        lines.append(f"exact expected STRICT reward (the goal): {start:.4f} at the start -> {end:.4f} after "
                     f"{last.step} steps")
    return lines


# ---------------------------------------------------------------------------
# --predict: the student commits to a prediction before the update is shown (the tool asks).
# ---------------------------------------------------------------------------
PREDICT_AT = 4  # story_step lines shown before the question: step, sample, baseline, advantage
ANSWERS = {"u": "up", "d": "down", "s": "same"}


def prediction_truth(s: BanditStep) -> list[str]:
    """For each action, 'u', 'd' or 's': did its probability go up, down or stay in this update?"""
    return [arrow(after - before)[0] for before, after in zip(s.probs, s.probs_after)]


def prediction_score(guess: Sequence[str], truth: Sequence[str]) -> int:
    """How many actions the prediction got right.

    >>> prediction_score(["u", "d", "s"], ["u", "d", "d"])
    2
    """
    return sum(1 for g, t in zip(guess, truth) if g == t)


def parse_prediction(text: str, n_actions: int) -> list[str] | None:
    """One letter per action (u = up, d = down, s = same), spaces allowed; None when malformed.

    >>> parse_prediction("u d d", 3)
    ['u', 'd', 'd']
    >>> parse_prediction("udx", 3) is None
    True
    """
    letters = [c for c in text.strip().lower() if not c.isspace()]
    if len(letters) != n_actions or any(c not in ANSWERS for c in letters):
        return None
    return letters


def ablation_table(name: str, actions: Sequence[ScoredAction], result: dict[str, Any]) -> list[str]:
    """The ablation of one action set as a small plain-text table, one column per baseline."""
    n = len(result["seeds"])
    fixed = result["fixed_policy"]
    settings = result["settings"]
    end = result["end_policies"]
    alpha = result["ema_alpha"]
    rewarded = sum(1 for a in actions if a.reward > 0)

    def training(key: str, label: str | None = None) -> list[float | None]:
        if label is None:
            return [settings[name]["training_variance"] for name, _, _ in SETTINGS]
        return [settings[name]["training_variance_by_phase"][label]["variance"] for name, _, _ in SETTINGS]

    settled, warm = fixed["exact_variance_settled"], fixed["exact_variance_warmup"]
    lines = [
        f"== {name}: {rewarded} of {len(actions)} actions rewarded; {n} seeds ({result['seeds'][0]}.."
        f"{result['seeds'][-1]}) x {result['steps']} steps, lr {result['lr']:g}",
        "  actions: " + ", ".join(f"{quote(a.text)}={a.reward:g}" for a in actions),
        "  baselines: none (b = 0); running mean of earlier rewards; EMA b <- (1 - a) b + a R with "
        f"a = {alpha:g}, b = {result['initial_baseline']:g} at first; b* = the variance-optimal constant of the "
        "current policy",
        "  variance of the one-sample estimate (per parameter, averaged over parameters);",
        "  (ratio) = none / that baseline: above 1, the baseline reduced the noise",
        f"    {'':<64} {'none':>9} {'running mean':>17} {f'EMA a={alpha:g}':>17} {'b*':>17}",
        _row4(
            f"exact at theta = 0, settled (b = J = {fixed['expected_reward']:.3f}; EMA spread)",
            [settled[key] for key, _, _ in SETTINGS],
        ),
        _row4(f"exact at theta = 0, first {result['steps']} samples (b from 0)", [warm[key] for key, _, _ in SETTINGS]),
        _row4(
            "sampled at theta = 0 (never updated)",
            [settings[key]["fixed_policy_variance"] for key, _, _ in SETTINGS],
        ),
        _row4(
            f"exact where training ends (settled, mean J {end['expected_reward_mean']:.3f})",
            [
                end["exact_variance_b0"],
                end["exact_variance_bJ"],
                end["exact_variance_ema"],
                end["exact_variance_bstar"],
            ],
        ),
        _row4("during training, all steps", training("all")),
    ]
    for label, _, _ in PHASES:
        counts = "/".join(str(settings[key]["training_variance_by_phase"][label]["n_steps"]) for key, _, _ in SETTINGS)
        lines.append(_row4(f"during training, steps with {label} (n = {counts})", training("phase", label)))
    lines += [
        "  the variance-optimal constant b* = E[r |grad log pi|^2] / E[|grad log pi|^2] (exact):",
        f"    at theta = 0:         b* = {fixed['optimal_baseline']:.3f} (J = {fixed['expected_reward']:.3f}), "
        f"variance {fixed['exact_variance_bstar']:.6f}",
        f"    where training ends:  mean b* = {end['optimal_baseline_mean']:.3f} "
        f"(mean J = {end['expected_reward_mean']:.3f}), variance {end['exact_variance_bstar']:.6f}",
        "  mean of the estimate at theta = 0 vs the exact gradient (a baseline must not move it):",
        "    max |mean - exact|: "
        + ", ".join(f"{title} {settings[key]['fixed_policy_max_abs_bias']:.5f}" for key, _, title in SETTINGS)
        + f" (over {n * result['steps']} samples each)",
        "  exact expected reward J(theta) after training, mean +- sd over seeds:",
        "    "
        + "   ".join(
            f"{title} {settings[key]['final_expected_reward_mean']:.4f} +- "
            f"{settings[key]['final_expected_reward_sd']:.4f}"
            for key, _, title in SETTINGS
        ),
    ]
    return lines


ABLATION_NOTE = (
    "A baseline never moves the mean of the estimate; whether it shrinks the variance depends on "
    "whether subtracting it makes the large gradients small. With rare success the rewards are "
    "already near 0 where grad log pi is large (the failures), so b = 0 is close to ideal and the "
    "mean-reward baseline helps little or even hurts; with common success the baseline removes a "
    "push that every rewarded sample would otherwise give its own action. The exact rows show that "
    "this is not the running mean's lag: even b = J exactly adds variance once the rewarded action is "
    "likely, because the variance-optimal b* weights each reward by |grad log pi|^2, which is small "
    "for the action the policy already prefers. The EMA forgets old rewards, so it follows a moving "
    "policy faster than the running mean, but it never stops being noisy: at a fixed policy its "
    "spread settles at alpha/(2-alpha) Var(R), which the exact rows add in. The final expected reward "
    "is a separate question: less variance per parameter need not mean faster learning, because part "
    "of the noise only moves probability between equally rewarded actions, which J does not notice."
)


def _row4(label: str, values: Sequence[float | None]) -> str:
    """A row of the ablation table: the no-baseline variance, then each baseline's with its ratio."""
    none = values[0]
    cells = [f"{'-' if none is None else f'{none:.6f}':>9}"]
    for v in values[1:]:
        if v is None:
            cells.append(f"{'-':>17}")
        elif none is None:
            cells.append(f"{v:>9.6f}{'':>8}")
        else:
            ratio = f"({none / v:.2f})" if v > 0 else "(inf)"
            cells.append(f"{v:>9.6f} {ratio:>7}")
    return f"    {label:<64} " + " ".join(cells)


def ablation_plot_rows(result: dict[str, Any]) -> dict[str, dict[str, float | None]]:
    """The variance rows of the ablation table, keyed by row then by baseline column title."""
    alpha = result["ema_alpha"]
    titles = {key: (f"EMA alpha={alpha:g}" if key == "ema" else title) for key, _, title in SETTINGS}
    fixed, settings, end = result["fixed_policy"], result["settings"], result["end_policies"]
    end_by_key = {
        "no_baseline": end["exact_variance_b0"],
        "baseline": end["exact_variance_bJ"],
        "ema": end["exact_variance_ema"],
        "optimal": end["exact_variance_bstar"],
    }
    rows: dict[str, dict[str, float | None]] = {
        "exact\ntheta = 0\n(settled)": {titles[k]: fixed["exact_variance_settled"][k] for k in titles},
        "sampled\ntheta = 0": {titles[k]: settings[k]["fixed_policy_variance"] for k in titles},
        "exact where\ntraining\nends": {titles[k]: end_by_key[k] for k in titles},
        "training\nall steps": {titles[k]: settings[k]["training_variance"] for k in titles},
    }
    for label, _, _ in PHASES:
        rows[f"training\n{label}"] = {
            titles[k]: settings[k]["training_variance_by_phase"][label]["variance"] for k in titles
        }
    return rows


# ---------------------------------------------------------------------------
# The reward-noise sweep's table (--noise-sweep)
# ---------------------------------------------------------------------------
def short_baseline(kind: str, alpha: float) -> str:
    """The baseline in a few words, for a plot's title and the sweep's header."""
    return {"none": "off", "mean": "running mean", "ema": f"EMA alpha {alpha:g}", "optimal": "b*"}[kind]


NOISE_NOTE = (
    "Reading it: a flipped reward is a grader that is wrong. Averaged over the flips the learner is paid "
    "p + (1 - 2p) r for an action whose true reward is r, so the ordering of the actions survives but the "
    "signal shrinks by (1 - 2p) while the sampling noise does not: the same number of steps buys less "
    "learning, at p = 0.5 every reward is a coin flip and J only wanders, and beyond 0.5 the learner is "
    "paid for the wrong answer. J(theta) is exact, under the scorer's true rewards."
)


def noise_table(
    actions: Sequence[ScoredAction], rows: Sequence[dict[str, Any]], *, lr: float, baseline: str, alpha: float
) -> list[str]:
    """The sweep's table: one row per noise rate."""
    first = rows[0]
    weak = "mean_final_strict_expected_reward" in first
    goal = [a.strict_reward if weak else a.reward for a in actions]
    best = max(range(len(actions)), key=lambda i: (goal[i], -i))
    start = math.fsum(a.reward for a in actions) / len(actions)
    lines = [
        f"Reward noise: {first['seeds']} seeds x {first['steps']} steps per rate, lr {lr:g}, baseline "
        f"{short_baseline(baseline, alpha)}; J(theta) starts at {start:.4f} (uniform policy)",
        f"{'noise P':>8}  {'rewards flipped':>15}  {'final J mean':>12}  {'sd':>6}  {'min':>6}  {'max':>6}  "
        + (f"{'strict J mean':>13}  " if weak else "")
        + f"{'runs ending on [' + str(best) + '] ' + quote(actions[best].text):>30}",
    ]
    if weak:
        lines[0] += f"; J is the trained rubric's, strict J the goal's (it starts at {math.fsum(goal) / len(goal):.4f})"
    for r in rows:
        lines.append(
            f"{r['reward_noise']:>8.2f}  {100 * r['share_of_rewards_flipped']:>14.1f}%  "
            f"{r['mean_final_expected_reward']:>12.4f}  "
            f"{r['sd_final_expected_reward']:>6.3f}  {r['min_final_expected_reward']:>6.3f}  "
            f"{r['max_final_expected_reward']:>6.3f}  "
            + (f"{r['mean_final_strict_expected_reward']:>13.4f}  " if weak else "")
            + f"{100 * r['share_best_action_most_likely']:>29.1f}%"
        )
    return lines
