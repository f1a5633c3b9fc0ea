"""The bandit of Loop C: one prompt, a few whole completions as actions, rewards from the scorer.

The course's task seen as a bandit. The prompt is the running example ("Compute
17 * 19 ...", expected 323); each *action* is a whole candidate completion, a
macro-action; its reward comes from the course's own instrument
(``course.instrument.spec_v1.score``), with the error code saying why. Shared by
``python -m course.bandit_train`` (REINFORCE on it) and ``python -m
course.kl_tradeoff_demo`` (the KL-regularised optimum over it).

It also owns what is computed on the bandit, with no printing: ``reinforce`` (the
REINFORCE loop, one ``BanditStep`` record per update, with a baseline that is none,
the running mean, an EMA or the exact b*), ``log_record`` (a step as a JSONL record)
and ``run_ablation`` (every baseline over many seeds: sampled and exact variances
of the gradient estimate). The maths of one step is in ``course.lib.learning.policy_gradient``.

>>> [(a.reward, a.error_code) for a in score_actions(EXAMPLE, DEFAULT_ACTIONS)][-2:]
[(0.0, 'wrong_answer'), (1.0, 'ok')]
"""

from __future__ import annotations

import math
import random
import statistics
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

from course.errors import CourseError
from course.instrument.spec_v1 import score
from course.lib.learning import policy_gradient as pg
from course.lib.reward_spec.problems import RUNNING_EXAMPLE

EXAMPLE: dict[str, Any] = {"prompt": RUNNING_EXAMPLE.prompt, "expected_answer": RUNNING_EXAMPLE.answer}

# Candidate completions a base model might plausibly produce for the running example,
# listed in the order such a model tends to prefer them (chatty and sloppy first; the KL
# demo's reference policy uses this ranking). Exactly one, the last, is what the strict
# verifier accepts; the others are the near-misses the course keeps meeting.
DEFAULT_ACTIONS: tuple[str, ...] = (
    "The answer is 323",  # missing_prefix: right number, chatty
    "323",  # missing_prefix: right number, bare
    "Final:323",  # prefix_spacing: glued colon
    "final: 323",  # prefix_case
    "Final: 324",  # wrong_answer: perfect format, wrong number
    "Final: 323",  # ok: the one completion that earns reward 1.0
)


@dataclass(frozen=True)
class ScoredAction:
    """One action of the bandit with the scorer's verdict on it."""

    index: int
    text: str
    reward: float
    error_code: str
    reason: str
    strict_reward: float = 0.0  # what reward spec v1 pays for it, whatever rubric trains the bandit
    strict_error_code: str = ""


def score_actions(example: dict[str, Any], actions: Sequence[str], scorer: Any = None) -> tuple[ScoredAction, ...]:
    """Score every candidate completion once: the bandit's reward table, with evidence.

    ``scorer`` is the rubric that pays the bandit (default: reward spec v1); every action also
    carries the strict verdict, so a run trained on a weak rubric can still be read against the goal.

    >>> [(a.reward, a.error_code) for a in score_actions(EXAMPLE, ["Final: 323", "323"])]
    [(1.0, 'ok'), (0.0, 'missing_prefix')]
    """
    if len(actions) < 2:
        raise CourseError(f"a bandit needs at least 2 actions, got {len(actions)}")
    seen: dict[str, int] = {}
    for i, text in enumerate(actions):
        if text in seen:
            raise CourseError(f"action {i} repeats action {seen[text]} ({text!r}); actions must be distinct")
        seen[text] = i
    scored = []
    for i, text in enumerate(actions):
        strict = score(example, text)
        verdict = strict if scorer is None else scorer(example, text)
        details = verdict["details"]
        scored.append(ScoredAction(i, text, verdict["reward"], details["error_code"], details["reason"],
                                   strict["reward"], strict["details"]["error_code"]))
    return tuple(scored)



# A second action set for the ablation: here most completions earn 1.0 (the scorer trims
# ASCII whitespace, so these variants all pass). Success is the common event, the
# opposite regime to DEFAULT_ACTIONS, and the one where subtracting a baseline matters most.
MOSTLY_REWARDED_ACTIONS: tuple[str, ...] = (
    "Final: 323",
    "Final: 323\n",
    " Final: 323",
    "Final: 323 ",
    "Final:323",
    "Final: 324",
)


# ---------------------------------------------------------------------------
# The algorithm: REINFORCE with an optional running-mean baseline.
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class BanditStep:
    """Everything that happened in one update, before and after."""

    step: int  # 1-based
    theta: tuple[float, ...]  # logits before the update
    probs: tuple[float, ...]  # pi_theta before the update
    expected_reward: float  # exact J(theta) before the update
    action: int  # index of the sampled action
    reward: float
    uses_baseline: bool
    baseline: float  # b used for this step (computed from earlier steps only)
    n_past: int  # how many earlier rewards b averages (0 without a baseline)
    advantage: float  # A = reward - baseline
    grad: tuple[float, ...]  # the one-sample estimate A * (onehot(a) - pi)
    exact_grad: tuple[float, ...]  # grad J(theta) by enumeration: what grad estimates on average
    theta_after: tuple[float, ...]
    probs_after: tuple[float, ...]
    expected_reward_after: float
    baseline_kind: str = "mean"  # none | mean | ema | optimal
    flipped: bool = False  # reward noise: the learner saw 1 - (the scorer's reward) on this step


BASELINES: tuple[str, ...] = ("none", "mean", "ema", "optimal")
BASELINE_NAMES = {
    "none": "none",
    "mean": "running_mean_of_earlier_rewards",
    "ema": "ema_of_earlier_rewards",
    "optimal": "optimal_constant_b_star_of_current_policy",
}
DEFAULT_ALPHA = 0.1
INITIAL_BASELINE = 0.0  # b before any reward has been seen, for the running mean and the EMA


def _checked_baseline(baseline: str, use_baseline: bool | None, reward_noise: float,
                      noise_rng: random.Random | None) -> str:
    """The baseline kind ``reinforce`` uses (``use_baseline`` is a boolean shorthand), its settings checked."""
    if use_baseline is not None:
        baseline = "mean" if use_baseline else "none"
    if baseline not in BASELINES:
        raise CourseError(f"baseline must be one of {', '.join(BASELINES)}, got {baseline!r}")
    if not 0.0 <= reward_noise <= 1.0:
        raise CourseError(f"reward noise must be a probability in [0, 1], got {reward_noise}")
    if reward_noise > 0 and noise_rng is None:
        raise CourseError("reward noise needs its own seeded random generator (noise_rng)")
    return baseline


def _baseline_value(baseline: str, reward_sum: float, n_past: int, ema: float, theta: Sequence[float],
                    rewards: Sequence[float]) -> float:
    """The baseline b of the next step.

    It is computed from EARLIER steps only, BEFORE this step's reward is seen. A baseline may depend
    on anything except the action being scored: then E[b * grad log pi(a)] = b * sum_a grad pi(a) = 0
    and the estimate stays an unbiased estimate of grad J. Folding the current reward in would make b
    depend on the sampled action, shrinking every advantage by n/(n+1) (and zeroing the very first
    one): a biased gradient. With no history yet, b = 0.
    """
    if baseline == "mean":
        return reward_sum / n_past if n_past > 0 else INITIAL_BASELINE
    if baseline == "ema":
        return ema
    if baseline == "optimal":
        return pg.optimal_baseline(theta, rewards)  # depends on theta only: still an unbiased estimate of grad J
    return 0.0


def reinforce(
    rewards: Sequence[float],
    *,
    steps: int,
    lr: float,
    use_baseline: bool | None = None,
    rng: random.Random,
    baseline: str = "mean",
    alpha: float = DEFAULT_ALPHA,
    reward_noise: float = 0.0,
    noise_rng: random.Random | None = None,
) -> Iterator[BanditStep]:
    """Run ``steps`` REINFORCE updates from theta = 0 and yield one ``BanditStep`` per update.

    ``reward_noise`` p: on each step, with probability p (drawn from ``noise_rng``, a generator of
    its own so that the noise never shifts which actions are sampled), the learner is handed
    1 - r instead of the scorer's reward r: a grader that is wrong a share p of the time. The
    step's ``reward`` is what the learner saw; J(theta) stays the exact expected reward under
    the scorer's true rewards, which is what the noise is measured against.

    ``baseline``: "none" (b = 0), "mean" (mean of earlier rewards), "ema" (b <- (1-alpha) b +
    alpha R, starting at 0) or "optimal" (the variance-optimal constant b* of the current
    policy, an oracle only a tiny action set allows). ``use_baseline`` (True = "mean",
    False = "none") is a boolean shorthand for it.
    """
    baseline = _checked_baseline(baseline, use_baseline, reward_noise, noise_rng)
    k = len(rewards)
    theta = [0.0] * k
    probs = pg.softmax(theta)
    j_before = pg.expected_reward(probs, rewards)
    reward_sum = 0.0
    ema = INITIAL_BASELINE
    for t in range(1, steps + 1):
        exact = pg.exact_gradient(theta, rewards)

        action = pg.sample_action(probs, rng)
        reward = rewards[action]
        # Reward noise: a flipped verdict. Expected over the flips, the learner sees
        # p + (1 - 2p) r(a) for action a: the same ordering of actions shrunk by (1 - 2p), so
        # the gradient's signal shrinks with it while its noise does not -- learning slows,
        # stops at p = 0.5 (every reward is a coin flip) and reverses beyond it.
        flipped = reward_noise > 0 and noise_rng is not None and noise_rng.random() < reward_noise
        if flipped:
            reward = 1.0 - reward

        n_past = t - 1
        b = _baseline_value(baseline, reward_sum, n_past, ema, theta, rewards)
        advantage = reward - b

        # REINFORCE: grad log pi(a) = onehot(a) - pi; the estimate scales it by A.
        # A > 0 raises the sampled action's logit relative to all others (more likely);
        # A < 0 lowers it (less likely). A negative lr flips both.
        # (+ 0.0 turns the -0.0 that 0 * negative gives into 0.0, so logs never show "-0.0".)
        grad = [advantage * ((1.0 if i == action else 0.0) - p) + 0.0 for i, p in enumerate(probs)]
        theta_after = [th + lr * g + 0.0 for th, g in zip(theta, grad)]
        probs_after = pg.softmax(theta_after)
        j_after = pg.expected_reward(probs_after, rewards)

        yield BanditStep(
            step=t,
            theta=tuple(theta),
            probs=tuple(probs),
            expected_reward=j_before,
            action=action,
            reward=reward,
            uses_baseline=baseline != "none",
            baseline=b,
            n_past=n_past if baseline in ("mean", "ema") else 0,
            advantage=advantage,
            grad=tuple(grad),
            exact_grad=tuple(exact),
            theta_after=tuple(theta_after),
            probs_after=tuple(probs_after),
            expected_reward_after=j_after,
            baseline_kind=baseline,
            flipped=flipped,
        )
        reward_sum += reward
        ema = pg.ema_baseline(ema, reward, alpha) if baseline == "ema" else ema  # AFTER its use above
        theta, probs, j_before = theta_after, probs_after, j_after  # J after this update is J before the next


def log_record(s: BanditStep, actions: Sequence[ScoredAction], *, noisy: bool = False) -> dict[str, Any]:
    """The JSONL line for one step (floats at full precision: the log is data, the story is prose).

    theta and probs are the policy *before* the update; the next line's theta is
    theta + lr * grad (the final theta and probs are in manifest.json). In a run with reward
    noise (``noisy``) ``reward`` is what the learner saw and two fields say what the scorer said.
    """
    noise = {"scorer_reward": actions[s.action].reward, "reward_flipped": s.flipped} if noisy else {}
    return {
        "step": s.step,
        "theta": list(s.theta),
        "probs": list(s.probs),
        "expected_reward": s.expected_reward,
        "action": s.action,
        "action_text": actions[s.action].text,
        "reward": s.reward,
        "error_code": actions[s.action].error_code,
        "baseline": s.baseline,
        "advantage": s.advantage,
        "grad": list(s.grad),
        "exact_grad": list(s.exact_grad),
        "expected_reward_after": s.expected_reward_after,
        **noise,
    }


# ---------------------------------------------------------------------------
# Reward noise: the same learner, a share of its rewards flipped, over many seeds.
# ---------------------------------------------------------------------------
def noise_seed(seed: int) -> random.Random:
    """The flips' own generator for a run of ``seed`` (a string seed: stable across processes and
    PYTHONHASHSEED, and different from the sampler's stream)."""
    return random.Random(f"reward-noise:{seed}")


def run_noise_sweep(
    rewards: Sequence[float],
    *,
    rates: Sequence[float],
    seeds: int,
    base_seed: int,
    steps: int,
    lr: float,
    baseline: str = "mean",
    alpha: float = DEFAULT_ALPHA,
    goal_rewards: Sequence[float] | None = None,
) -> list[dict[str, Any]]:
    """For each noise rate: the exact final J(theta) (under the true rewards) of ``seeds`` runs,
    summarised as its mean, its spread and the share of runs that end with the best action the
    most probable. Each seed samples the same actions' stream at every rate until the flips
    change the updates, so the rates differ by the noise and not by luck of the draw.

    ``goal_rewards``: when the bandit is paid by a weak rubric, the strict rewards of the same
    actions; each row then also has the mean final expected *strict* reward (the goal), and "the
    best action" is the goal's."""
    goal = rewards if goal_rewards is None else goal_rewards
    best = max(range(len(goal)), key=lambda i: (goal[i], -i))
    rows = []
    for rate in rates:
        finals: list[float] = []
        goal_finals: list[float] = []
        best_first = 0
        flipped = 0
        for s in range(base_seed, base_seed + seeds):
            last = None
            for last in reinforce(rewards, steps=steps, lr=lr, rng=random.Random(s), baseline=baseline, alpha=alpha,
                                  reward_noise=rate, noise_rng=noise_seed(s)):
                flipped += last.flipped
            if last is None:
                raise CourseError(f"steps must be at least 1, got {steps}")
            finals.append(last.expected_reward_after)
            goal_finals.append(pg.expected_reward(last.probs_after, goal))
            probs = last.probs_after
            best_first += probs[best] == max(probs)
        rows.append({
            "reward_noise": rate,
            "seeds": seeds,
            "steps": steps,
            "mean_final_expected_reward": math.fsum(finals) / len(finals),
            "sd_final_expected_reward": statistics.pstdev(finals),
            "min_final_expected_reward": min(finals),
            "max_final_expected_reward": max(finals),
            "share_best_action_most_likely": best_first / seeds,
            "share_of_rewards_flipped": flipped / (seeds * steps),
            **({"mean_final_strict_expected_reward": math.fsum(goal_finals) / len(goal_finals)}
               if goal_rewards is not None else {}),
        })
    return rows


# ---------------------------------------------------------------------------
# The ablation: many seeds, each baseline, measured (and computed exactly).
# ---------------------------------------------------------------------------

# Training steps are grouped by the exact J(theta) of the policy that produced them, because
# the baseline's effect on variance depends on how good the policy already is.
PHASES: tuple[tuple[str, float, float], ...] = (("J < 0.5", -math.inf, 0.5), ("J >= 0.5", 0.5, math.inf))


def _mean(xs: Sequence[float]) -> float:
    return math.fsum(xs) / len(xs) if xs else math.nan


def _per_param_variance(samples: Sequence[Sequence[float]]) -> list[float]:
    """Population variance of each coordinate over the samples."""
    k = len(samples[0])
    return [statistics.pvariance([s[i] for s in samples]) for i in range(k)]


# The ablation's settings: (key in ablation.json, baseline kind, column title).
SETTINGS: tuple[tuple[str, str, str], ...] = (
    ("no_baseline", "none", "none"),
    ("baseline", "mean", "running mean"),
    ("ema", "ema", "EMA"),
    ("optimal", "optimal", "b*"),
)


def _exact_variances(
    theta: Sequence[float], rewards: Sequence[float], alpha: float, *, warmup: int | None
) -> dict[str, float]:
    """Exact variance (averaged over parameters) of each setting's estimate at the fixed policy theta.

    warmup = None: each baseline at its limit (running mean -> b = J exactly; the EMA keeps a
    stationary spread alpha/(2-alpha) Var(R) around J). warmup = N: the average over the first
    N samples of a stream from this policy, b starting at 0, which is what the sampled row
    measures (the running mean at sample t has variance Var(R)/t; the EMA's mean climbs from 0).
    """
    probs = pg.softmax(theta)
    j = pg.expected_reward(probs, rewards)
    b_star = pg.optimal_baseline(theta, rewards)
    out = {
        "no_baseline": _mean(pg.estimate_variance(theta, rewards, 0.0)),
        "optimal": _mean(pg.estimate_variance(theta, rewards, b_star)),
    }
    if warmup is None:
        out["baseline"] = _mean(pg.estimate_variance(theta, rewards, j))
        _, v = pg.ema_baseline_moments(probs, rewards, alpha, t=10**6, initial=INITIAL_BASELINE)
        out["ema"] = _mean(pg.estimate_variance(theta, rewards, j, v))
        return out
    for key, moments in (
        ("baseline", lambda t: pg.running_mean_moments(probs, rewards, t)),
        ("ema", lambda t: pg.ema_baseline_moments(probs, rewards, alpha, t, initial=INITIAL_BASELINE)),
    ):
        per_t = []
        for t in range(warmup):
            m, v = moments(t)
            per_t.append(_mean(pg.estimate_variance(theta, rewards, m, v)))
        out[key] = _mean(per_t)
    return out


def _fixed_policy_estimates(rewards: Sequence[float], kind: str, seeds: Sequence[int], steps: int, alpha: float,
                            scores0: Sequence[Sequence[float]], b_star0: float) -> list[list[float]]:
    """``steps`` one-sample estimates per seed at theta = 0 (nothing updated), each baseline computed from that
    stream's earlier rewards, exactly as in training (``scores0``: grad log pi(a) at theta = 0)."""
    probs0 = pg.softmax([0.0] * len(rewards))
    estimates: list[list[float]] = []
    for seed in seeds:
        rng = random.Random(seed)
        total = 0.0
        ema = INITIAL_BASELINE
        for t in range(steps):
            a = pg.sample_action(probs0, rng)
            if kind == "mean":
                b = total / t if t > 0 else INITIAL_BASELINE  # earlier rewards only, as in training
            elif kind == "ema":
                b = ema
            elif kind == "optimal":
                b = b_star0
            else:
                b = 0.0
            advantage = rewards[a] - b
            estimates.append([advantage * g for g in scores0[a]])  # A grad log pi(a) = pg.reinforce_estimate(...)
            total += rewards[a]
            ema = pg.ema_baseline(ema, rewards[a], alpha)
    return estimates


def _training_noise(rewards: Sequence[float], kind: str, seeds: Sequence[int], steps: int, lr: float, alpha: float,
                    ) -> tuple[list[float], dict[str, list[float]], list[float], list[list[float]],
                               list[tuple[float, ...]]]:
    """Train on each seed: every step's squared distance from the exact gradient (all, and by phase), the
    final expected rewards, the curves of J, and the policy each run ends in."""
    end_thetas: list[tuple[float, ...]] = []
    sq_err: list[float] = []
    by_phase: dict[str, list[float]] = {label: [] for label, _, _ in PHASES}
    finals: list[float] = []
    curves: list[list[float]] = []
    for seed in seeds:
        curve = []
        for s in reinforce(rewards, steps=steps, lr=lr, rng=random.Random(seed), baseline=kind, alpha=alpha):
            err = _mean([(g - e) ** 2 for g, e in zip(s.grad, s.exact_grad)])
            sq_err.append(err)
            for label, lo, hi in PHASES:
                if lo <= s.expected_reward < hi:
                    by_phase[label].append(err)
            curve.append(s.expected_reward)
            last = s
        curve.append(last.expected_reward_after)
        finals.append(last.expected_reward_after)
        curves.append(curve)
        if kind == "none":
            end_thetas.append(last.theta_after)
    return sq_err, by_phase, finals, curves, end_thetas


def _at_end_policies(end_thetas: Sequence[Sequence[float]], rewards: Sequence[float], alpha: float,
                     ) -> dict[str, list[float]]:
    """Exact variances, J and b* at each policy a no-baseline run ended in."""
    at_end: dict[str, list[float]] = {"b0": [], "bJ": [], "bstar": [], "ema": [], "J": [], "optimal_baseline": []}
    for theta in end_thetas:
        exact = _exact_variances(theta, rewards, alpha, warmup=None)
        at_end["b0"].append(exact["no_baseline"])
        at_end["bJ"].append(exact["baseline"])
        at_end["ema"].append(exact["ema"])
        at_end["bstar"].append(exact["optimal"])
        at_end["J"].append(pg.expected_reward(pg.softmax(theta), rewards))
        at_end["optimal_baseline"].append(pg.optimal_baseline(theta, rewards))
    return at_end


def _setting_summary(kind: str, estimates: list[list[float]], exact0: Sequence[float], sq_err: list[float],
                     by_phase: dict[str, list[float]], finals: list[float], curves: list[list[float]],
                     ) -> dict[str, Any]:
    """One baseline's row of the ablation: its estimates at the fixed policy, its noise over training, where J ends."""
    k, steps = len(exact0), len(curves[0]) - 1
    mean_est = [_mean([e[i] for e in estimates]) for i in range(k)]
    var_fixed = _per_param_variance(estimates)
    return {
        "baseline": BASELINE_NAMES[kind],
        "fixed_policy_mean_estimate": mean_est,
        "fixed_policy_max_abs_bias": max(abs(m - e) for m, e in zip(mean_est, exact0)),
        "fixed_policy_variance_per_param": var_fixed,
        "fixed_policy_variance": _mean(var_fixed),
        "training_variance": _mean(sq_err),
        "training_variance_by_phase": {
            label: {"variance": _mean(v) if v else None, "n_steps": len(v)} for label, v in by_phase.items()
        },
        "final_expected_reward_mean": _mean(finals),
        "final_expected_reward_sd": statistics.stdev(finals),
        "final_expected_reward_min": min(finals),
        "final_expected_reward_max": max(finals),
        "mean_curve": [_mean([c[t] for c in curves]) for t in range(steps + 1)],
        "sd_curve": [statistics.pstdev([c[t] for c in curves]) for t in range(steps + 1)],
    }


def run_ablation(
    rewards: Sequence[float], *, seeds: int, base_seed: int, steps: int, lr: float, alpha: float = DEFAULT_ALPHA
) -> dict[str, Any]:
    """Train with each baseline (none, running mean, EMA(alpha), b*) on seeds base_seed .. base_seed+seeds-1.

    Variance is measured per parameter, then averaged over parameters:
      * exactly, by enumeration, at theta = 0: each baseline at its limit, and averaged over
        the first ``steps`` samples of a stream (the baseline warming up from 0);
      * at a fixed policy (theta = 0, nothing is updated): ``steps`` one-sample estimates per
        seed, each baseline computed from that stream's earlier rewards, exactly as in
        training; their pooled variance (it should match the warm-up exact row), and their
        mean next to the exact gradient;
      * exactly at the policies where the no-baseline runs end;
      * over training: the mean squared distance between each step's estimate and the exact
        gradient at that step's theta (the estimator's noise at the policies actually
        visited), overall and split by the phase of training (J below / above 0.5).
    Plus the exact expected reward at the end of training, mean and sd over seeds.
    The same seed drives every setting (common random numbers: a paired comparison).
    """
    if seeds < 2:
        raise CourseError(f"--seeds must be at least 2 to measure a spread, got {seeds}")
    k = len(rewards)
    theta0 = [0.0] * k
    probs0 = pg.softmax(theta0)
    exact0 = pg.exact_gradient(theta0, rewards)
    # grad log pi(a) at theta0: the fixed policy's samples reuse them
    scores0 = [pg.grad_log_prob(theta0, a) for a in range(k)]
    j0 = pg.expected_reward(probs0, rewards)
    b_star0 = pg.optimal_baseline(theta0, rewards)
    out: dict[str, Any] = {
        "seeds": list(range(base_seed, base_seed + seeds)),
        "steps": steps,
        "lr": lr,
        "ema_alpha": alpha,
        "initial_baseline": INITIAL_BASELINE,
        "fixed_policy": {
            "theta": theta0,
            "expected_reward": j0,
            "reward_variance": pg.reward_variance(probs0, rewards),
            "exact_gradient": exact0,
            "exact_variance_b0_per_param": pg.estimate_variance(theta0, rewards, 0.0),
            "exact_variance_bJ_per_param": pg.estimate_variance(theta0, rewards, j0),
            "optimal_baseline": b_star0,
        },
        "settings": {},
    }
    fixed = out["fixed_policy"]
    fixed["exact_variance_b0"] = _mean(fixed["exact_variance_b0_per_param"])
    fixed["exact_variance_bJ"] = _mean(fixed["exact_variance_bJ_per_param"])
    fixed["exact_variance_bstar"] = _mean(pg.estimate_variance(theta0, rewards, b_star0))
    fixed["exact_variance_settled"] = _exact_variances(theta0, rewards, alpha, warmup=None)
    fixed["exact_variance_warmup"] = _exact_variances(theta0, rewards, alpha, warmup=steps)
    end_thetas: list[tuple[float, ...]] = []  # where each no-baseline run ends: a trained policy
    for name, kind, _ in SETTINGS:
        # 1. Fixed policy: sample, never update.
        estimates = _fixed_policy_estimates(rewards, kind, out["seeds"], steps, alpha, scores0, b_star0)

        # 2. Training: the estimator's noise around the exact gradient, and where training ends.
        sq_err, by_phase, finals, curves, ends = _training_noise(rewards, kind, out["seeds"], steps, lr, alpha)
        if kind == "none":
            end_thetas.extend(ends)
        out["settings"][name] = _setting_summary(kind, estimates, exact0, sq_err, by_phase, finals, curves)
    # 3. Exact variances at the trained policies: is it the running mean's lag, or b = J itself?
    at_end = _at_end_policies(end_thetas, rewards, alpha)
    out["end_policies"] = {
        "what": "the policies the no-baseline runs end in, one per seed; exact variances averaged over them",
        "expected_reward_mean": _mean(at_end["J"]),
        "optimal_baseline_mean": _mean(at_end["optimal_baseline"]),
        "exact_variance_b0": _mean(at_end["b0"]),
        "exact_variance_bJ": _mean(at_end["bJ"]),
        "exact_variance_ema": _mean(at_end["ema"]),
        "exact_variance_bstar": _mean(at_end["bstar"]),
    }
    return out


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.learning.bandit"))
