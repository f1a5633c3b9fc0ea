"""Policy-gradient maths for a softmax policy over a handful of actions, exactly.

This module owns the small formulas behind Loop C's microscopes
(``course.bandit_train``, ``course.toy_mdp``, ``course.kl_tradeoff_demo``), one
function per concept, standard library only, each with a worked example:

  * ``softmax`` / ``log_softmax``   logits theta -> probabilities pi(a)
  * ``grad_log_prob``               d log pi(a) / d theta = onehot(a) - pi
  * ``reinforce_estimate``          one-sample REINFORCE: (R - b) * grad log pi(a)
  * ``expected_reward``             J(theta) = sum_a pi(a) r(a), by enumeration
  * ``exact_gradient``              grad J(theta), by enumeration (the mean of the estimate)
  * ``estimate_variance``           per-parameter variance of the estimate, by enumeration
                                    (a constant baseline, or a random one drawn independently of a)
  * ``ema_baseline``                one step of the moving-average baseline b <- (1 - alpha) b + alpha R
  * ``ema_baseline_moments``        mean and variance of that baseline after t rewards of a fixed policy
  * ``running_mean_moments``        the same for the mean of the t earlier rewards
  * ``optimal_baseline``            the constant b that minimises that variance (not J in general)
  * ``kl_divergence``               KL(p || q) in nats
  * ``kl_regularised_optimum``      argmax_pi E_pi[r] - beta KL(pi || pi_ref) = pi_ref exp(r/beta) / Z
  * ``kl_objective`` / ``kl_objective_gradient``  that objective and its exact gradient in the logits
  * ``sample_action``               draw a ~ pi with an explicit ``random.Random``

"Exact" means computed by summing over every action, which is possible only
because the action set is tiny: a language model has ~10^5 tokens per step and
astronomically many completions, so real trainers only ever see the
one-sample estimate. Here we can put the estimate next to the truth.

Logs are natural logs (nats). Vectors are plain lists of floats, one entry per
action, in action order.

>>> pi = softmax([0.0, 0.0])
>>> pi
[0.5, 0.5]
>>> reinforce_estimate([0.0, 0.0], action=0, reward=1.0, baseline=0.0)
[0.5, -0.5]
"""

from __future__ import annotations

import math
import random
from typing import Sequence

from course.errors import CourseError

Vector = list[float]


# ---------------------------------------------------------------------------
# The policy: logits -> probabilities.
# ---------------------------------------------------------------------------
def softmax(logits: Sequence[float]) -> Vector:
    """pi(a) = exp(theta_a) / sum_b exp(theta_b); shifted by max(theta) so exp never overflows.

    Adding the same constant to every logit leaves pi unchanged, which is why the
    shift is free (and why only logit *differences* mean anything).

    >>> softmax([0.0, math.log(3.0)])
    [0.25, 0.75]
    >>> softmax([1000.0, 1000.0])
    [0.5, 0.5]
    """
    if not logits:
        raise CourseError("softmax needs at least one logit")
    top = max(logits)
    weights = [math.exp(x - top) for x in logits]
    total = math.fsum(weights)
    return [w / total for w in weights]


def log_softmax(logits: Sequence[float]) -> Vector:
    """log pi(a) = theta_a - logsumexp(theta), computed without forming pi (no log(0)).

    >>> [round(x, 6) for x in log_softmax([0.0, 0.0])]
    [-0.693147, -0.693147]
    >>> log_softmax([0.0, -800.0])[1]  # pi would underflow to 0.0; its log does not
    -800.0
    """
    if not logits:
        raise CourseError("log_softmax needs at least one logit")
    top = max(logits)
    log_z = top + math.log(math.fsum(math.exp(x - top) for x in logits))
    return [x - log_z for x in logits]


def grad_log_prob(logits: Sequence[float], action: int) -> Vector:
    """The score function: d log pi(action) / d theta_k = [k == action] - pi(k).

    Read it as a direction: raising the sampled action's logit by 1 - pi(a) and
    lowering every other logit by its own probability is the quickest way to make
    the sampled action more likely. Its entries always sum to 0.

    >>> grad_log_prob([0.0, 0.0, 0.0, 0.0], action=2)
    [-0.25, -0.25, 0.75, -0.25]
    """
    pi = softmax(logits)
    _check_action(action, len(pi))
    return [(1.0 if k == action else 0.0) - p for k, p in enumerate(pi)]


def reinforce_estimate(
    logits: Sequence[float], action: int, reward: float, baseline: float = 0.0
) -> Vector:
    """One-sample REINFORCE estimate of grad J: advantage * grad log pi(action).

    The advantage A = reward - baseline is the single scalar that decides the
    direction: A > 0 pushes the sampled action's probability up, A < 0 pushes it
    down, A = 0 leaves the policy unchanged. The update is theta += lr * estimate.

    >>> reinforce_estimate([0.0, 0.0], action=1, reward=0.0, baseline=0.5)
    [0.25, -0.25]
    """
    advantage = reward - baseline
    return [advantage * g for g in grad_log_prob(logits, action)]


# ---------------------------------------------------------------------------
# The objective and its exact gradient (possible only because the action set is tiny).
# ---------------------------------------------------------------------------
def expected_reward(probs: Sequence[float], rewards: Sequence[float]) -> float:
    """J = sum_a pi(a) r(a): the objective REINFORCE climbs, computed exactly.

    >>> expected_reward([0.25, 0.75], [1.0, 0.0])
    0.25
    """
    _check_same_length(probs, rewards, "probs", "rewards")
    return math.fsum(p * r for p, r in zip(probs, rewards))


def exact_gradient(logits: Sequence[float], rewards: Sequence[float]) -> Vector:
    """grad J(theta) = sum_a pi(a) r(a) grad log pi(a): the mean of ``reinforce_estimate``.

    Computed by enumerating every action (the log-derivative trick, with the
    expectation done exactly). It simplifies to pi_k (r_k - J): an action's logit
    rises exactly when its reward beats the current average.

    >>> exact_gradient([0.0, 0.0], [1.0, 0.0])
    [0.25, -0.25]
    """
    pi = softmax(logits)
    _check_same_length(pi, rewards, "logits", "rewards")
    grad = [0.0] * len(pi)
    for a, (p_a, r_a) in enumerate(zip(pi, rewards)):
        if r_a == 0.0:
            continue  # an action without reward adds exactly 0 to every entry: skip the work
        # grad log pi(a) = onehot(a) - pi, written out so pi is computed once per call.
        for k, p_k in enumerate(pi):
            grad[k] += p_a * r_a * ((1.0 if k == a else 0.0) - p_k)
    return grad


def estimate_variance(
    logits: Sequence[float], rewards: Sequence[float], baseline: float = 0.0, baseline_variance: float = 0.0
) -> Vector:
    """Per-parameter variance of the one-sample estimate (R - b) grad log pi(a), a ~ pi.

    The mean does not depend on a constant baseline b (because E[grad log pi] = 0);
    the variance does. This is the quantity ``--ablation`` measures by sampling.

    A baseline computed from *earlier* rewards (running mean, moving average) is itself
    random, but independent of the action being scored. With mean m and variance v it
    costs exactly what the constant m costs plus v * E[g_k^2], g = grad log pi(a):
    E[(R - b)^2 g^2] = E_a[((r_a - m)^2 + v) g^2]. Pass m as ``baseline``, v as
    ``baseline_variance``; the mean of the estimate is still the exact gradient.

    >>> estimate_variance([0.0, 0.0], [1.0, 0.0], baseline=0.0)
    [0.0625, 0.0625]
    >>> estimate_variance([0.0, 0.0], [1.0, 0.0], baseline=0.5)  # b = J: no noise left here
    [0.0, 0.0]
    >>> estimate_variance([0.0, 0.0], [1.0, 0.0], baseline=0.5, baseline_variance=0.04)  # a noisy b = J
    [0.01, 0.01]
    """
    if not baseline_variance >= 0.0:
        raise CourseError(f"baseline_variance must be >= 0, got {baseline_variance}")
    pi = softmax(logits)
    _check_same_length(pi, rewards, "logits", "rewards")
    mean = exact_gradient(logits, rewards)
    var = [0.0] * len(pi)
    for a, (p_a, r_a) in enumerate(zip(pi, rewards)):
        for k, p_k in enumerate(pi):
            g = (1.0 if k == a else 0.0) - p_k
            var[k] += p_a * (((r_a - baseline) * g - mean[k]) ** 2 + baseline_variance * g * g)
    return var


def ema_baseline(baseline: float, reward: float, alpha: float) -> float:
    """The exponential-moving-average baseline's update: b <- (1 - alpha) b + alpha R.

    Called AFTER b has been used for the advantage of the sample that earned R, so
    b never depends on the action it scores. alpha near 0: a long memory, slow to
    follow the policy; alpha = 1: b is the previous reward alone.

    >>> ema_baseline(0.0, 1.0, alpha=0.1)
    0.1
    >>> ema_baseline(0.1, 0.0, alpha=0.1)  # 0.9 * 0.1
    0.09000000000000001
    """
    _check_alpha(alpha)
    return (1.0 - alpha) * baseline + alpha * reward


def ema_baseline_moments(
    probs: Sequence[float], rewards: Sequence[float], alpha: float, t: int, initial: float = 0.0
) -> tuple[float, float]:
    """Mean and variance of the EMA baseline after t rewards drawn from a fixed policy.

    b_t = (1-alpha)^t b_0 + alpha sum_{j<t} (1-alpha)^(t-1-j) R_j with the R_j independent:
    mean J + (b_0 - J)(1-alpha)^t, variance alpha Var(R) (1 - (1-alpha)^(2t)) / (2 - alpha).
    As t grows the mean forgets b_0 and the variance settles at alpha/(2-alpha) Var(R):
    unlike the running mean, the moving average never stops being noisy.

    >>> ema_baseline_moments([0.5, 0.5], [1.0, 0.0], alpha=1.0, t=3)  # b = the previous reward
    (0.5, 0.25)
    >>> ema_baseline_moments([0.5, 0.5], [1.0, 0.0], alpha=0.5, t=0, initial=0.2)
    (0.2, 0.0)
    """
    _check_alpha(alpha)
    j = expected_reward(probs, rewards)
    var_r = reward_variance(probs, rewards)
    keep = (1.0 - alpha) ** t
    return j + (initial - j) * keep, alpha * var_r * (1.0 - keep * keep) / (2.0 - alpha)


def running_mean_moments(probs: Sequence[float], rewards: Sequence[float], t: int) -> tuple[float, float]:
    """Mean and variance of the running-mean baseline (mean of t earlier rewards; 0 when t = 0).

    >>> running_mean_moments([0.5, 0.5], [1.0, 0.0], t=4)
    (0.5, 0.0625)
    >>> running_mean_moments([0.5, 0.5], [1.0, 0.0], t=0)
    (0.0, 0.0)
    """
    if t == 0:
        return 0.0, 0.0
    return expected_reward(probs, rewards), reward_variance(probs, rewards) / t


def reward_variance(probs: Sequence[float], rewards: Sequence[float]) -> float:
    """Var(R) under the policy: sum_a pi(a) (r(a) - J)^2.

    >>> reward_variance([0.5, 0.5], [1.0, 0.0])
    0.25
    """
    j = expected_reward(probs, rewards)
    return math.fsum(p * (r - j) ** 2 for p, r in zip(probs, rewards))


def optimal_baseline(logits: Sequence[float], rewards: Sequence[float]) -> float:
    """The constant baseline that minimises the total variance of the one-sample estimate.

    The total variance is E[(r - b)^2 |g_a|^2] - |grad J|^2 with g_a = grad log pi(a),
    a parabola in b, lowest at b* = E[r |g_a|^2] / E[|g_a|^2]: the mean reward with each
    action weighted by how hard its sample pushes the logits. b = J (the usual choice)
    is b* only when every |g_a| is the same. When the rewarded action is already likely,
    its |g_a| is small, so b* sinks towards the failures' reward and b = J overshoots:
    a mean-reward baseline can then *add* variance (``course.bandit_train --ablation``).

    >>> optimal_baseline([0.0, 0.0], [1.0, 0.0])  # symmetric: b* = J = 0.5
    0.5
    >>> round(optimal_baseline([3.0, 0.0, 0.0], [1.0, 0.0, 0.0]), 4)  # J = 0.91, yet b* is near 0
    0.0663
    """
    pi = softmax(logits)
    _check_same_length(pi, rewards, "logits", "rewards")
    weights = []  # pi(a) |g_a|^2, with |g_a|^2 = (1 - pi_a)^2 + sum_{k != a} pi_k^2
    squares = math.fsum(p * p for p in pi)
    for p_a in pi:
        weights.append(p_a * (squares - p_a * p_a + (1.0 - p_a) ** 2))
    return math.fsum(w * r for w, r in zip(weights, rewards)) / math.fsum(weights)


# ---------------------------------------------------------------------------
# KL to a reference policy, and the regularised objective.
# ---------------------------------------------------------------------------
def kl_divergence(p: Sequence[float], q: Sequence[float]) -> float:
    """KL(p || q) = sum_a p(a) log(p(a) / q(a)) in nats; terms with p(a) = 0 count 0.

    It is >= 0, and 0 only when p == q. It is infinite when p puts mass where q
    puts none: the policy did something the reference never would.

    >>> kl_divergence([0.5, 0.5], [0.5, 0.5])
    0.0
    >>> round(kl_divergence([1.0, 0.0], [0.5, 0.5]), 6)  # log 2
    0.693147
    >>> kl_divergence([0.5, 0.5], [1.0, 0.0])
    inf
    """
    _check_same_length(p, q, "p", "q")
    terms = []
    for p_a, q_a in zip(p, q):
        if p_a == 0.0:
            continue
        if q_a == 0.0:
            return math.inf
        terms.append(p_a * math.log(p_a / q_a))
    return max(0.0, math.fsum(terms))  # clamp -1e-17 rounding noise: KL is never negative


def kl_regularised_optimum(
    pi_ref: Sequence[float], rewards: Sequence[float], beta: float
) -> Vector:
    """The maximiser of E_pi[r] - beta KL(pi || pi_ref): pi(a) proportional to pi_ref(a) exp(r(a) / beta).

    Large beta: the penalty dominates and pi stays at pi_ref. Small beta: the
    reward dominates and pi piles onto the best action(s), split in the ratio
    pi_ref gives them. Computed in log space, so beta = 1e-4 does not overflow.

    >>> kl_regularised_optimum([0.5, 0.5], [1.0, 0.0], beta=1.0) == softmax([1.0, 0.0])
    True
    >>> [round(x, 4) for x in kl_regularised_optimum([0.9, 0.1], [0.0, 1.0], beta=1e-3)]
    [0.0, 1.0]
    """
    _check_beta(beta)
    _check_same_length(pi_ref, rewards, "pi_ref", "rewards")
    return softmax([_log(q) + r / beta for q, r in zip(pi_ref, rewards)])


def kl_objective(
    logits: Sequence[float], pi_ref: Sequence[float], rewards: Sequence[float], beta: float
) -> float:
    """E_pi[r] - beta KL(pi || pi_ref) for pi = softmax(logits).

    >>> kl_objective([0.0, 0.0], [0.5, 0.5], [1.0, 0.0], beta=10.0)  # pi == pi_ref: no penalty
    0.5
    """
    pi = softmax(logits)
    return expected_reward(pi, rewards) - beta * kl_divergence(pi, pi_ref)


def kl_objective_gradient(
    logits: Sequence[float], pi_ref: Sequence[float], rewards: Sequence[float], beta: float
) -> Vector:
    """Exact gradient of ``kl_objective`` in the logits: pi_k (u_k - E_pi[u]).

    u(a) = r(a) - beta log(pi(a) / pi_ref(a)) is the reward minus the KL "cost" of
    the action; the gradient has the same shape as ``exact_gradient`` with u in
    place of r. It is zero exactly when u is the same for every action, which
    is the closed form pi proportional to pi_ref exp(r / beta).

    >>> kl_objective_gradient([0.0, 0.0], [0.5, 0.5], [1.0, 0.0], beta=1.0)
    [0.25, -0.25]
    """
    _check_beta(beta, allow_zero=True)
    log_pi = log_softmax(logits)
    _check_same_length(log_pi, pi_ref, "logits", "pi_ref")
    _check_same_length(log_pi, rewards, "logits", "rewards")
    pi = [math.exp(lp) for lp in log_pi]
    u = [r - beta * (lp - _log(q)) for r, lp, q in zip(rewards, log_pi, pi_ref)]
    mean_u = math.fsum(p * x for p, x in zip(pi, u))
    return [p * (x - mean_u) for p, x in zip(pi, u)]


# ---------------------------------------------------------------------------
# Sampling: the only randomness, always from a caller's random.Random.
# ---------------------------------------------------------------------------
def sample_action(probs: Sequence[float], rng: random.Random) -> int:
    """Draw an action index with probability probs[a], using one ``rng.random()`` call.

    Inverse-CDF sampling: walk the cumulative sum until it passes a uniform draw.
    One draw per sample keeps a seeded run's random stream easy to reason about.

    >>> sample_action([0.0, 1.0, 0.0], random.Random(0))
    1
    >>> rng = random.Random(0)
    >>> draws = [sample_action([0.25, 0.75], rng) for _ in range(10_000)]
    >>> draws.count(1) / len(draws)  # close to 0.75, and the same number on every run
    0.7532
    """
    u = rng.random()
    cumulative = 0.0
    last = 0
    for a, p in enumerate(probs):
        if p <= 0.0:
            continue
        cumulative += p
        last = a
        if u < cumulative:
            return a
    return last  # u landed in the rounding gap above sum(probs) ~ 1 - 1e-16


# ---------------------------------------------------------------------------
# Argument checks: bad input is a CourseError that says what was expected.
# ---------------------------------------------------------------------------
def _log(q: float) -> float:
    return math.log(q) if q > 0.0 else -math.inf


def _check_action(action: int, n: int) -> None:
    if not 0 <= action < n:
        raise CourseError(f"action must be an index in 0..{n - 1}, got {action}")


def _check_same_length(a: Sequence[float], b: Sequence[float], name_a: str, name_b: str) -> None:
    if len(a) != len(b):
        raise CourseError(f"{name_a} and {name_b} must have one entry per action ({len(a)} != {len(b)})")


def _check_alpha(alpha: float) -> None:
    if not 0.0 < alpha <= 1.0:
        raise CourseError(f"alpha must be in (0, 1], got {alpha}")


def _check_beta(beta: float, allow_zero: bool = False) -> None:
    if not (beta > 0.0 or (allow_zero and beta == 0.0)) or math.isinf(beta) or math.isnan(beta):
        raise CourseError(f"beta must be a positive finite number, got {beta}")


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.learning.policy_gradient"))
