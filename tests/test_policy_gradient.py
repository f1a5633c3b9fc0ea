"""The policy-gradient maths is tested against independent computations, not trusted.

Finite differences check every analytic gradient; many seeded samples check that
the one-sample REINFORCE estimate is centred on the exact gradient (with and
without a baseline); the KL closed form is checked as a stationary point and a
maximum of its objective, and at both ends of the beta range.
"""

from __future__ import annotations

import math
import random
import statistics

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from course.errors import CourseError
from course.lib.learning import policy_gradient as pg

LOGITS = [0.3, -1.2, 0.8, 0.0, 2.1]
REWARDS = [0.0, 1.0, 0.0, 0.5, 0.0]
H = 1e-6


def _finite_difference(f, x, h=H):  # type: ignore[no-untyped-def]
    """Central differences of a scalar function of a vector."""
    grad = []
    for k in range(len(x)):
        up = list(x)
        down = list(x)
        up[k] += h
        down[k] -= h
        grad.append((f(up) - f(down)) / (2 * h))
    return grad


def _close(a, b, tol):  # type: ignore[no-untyped-def]
    return max(abs(x - y) for x, y in zip(a, b)) < tol


# ---------------------------------------------------------------------------
# softmax
# ---------------------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(min_value=-50, max_value=50), min_size=1, max_size=8),
       st.floats(min_value=-100, max_value=100))
def test_softmax_is_a_distribution_unchanged_by_adding_a_constant(logits, shift):  # type: ignore[no-untyped-def]
    pi = pg.softmax(logits)
    assert abs(math.fsum(pi) - 1.0) < 1e-12 and all(p >= 0 for p in pi)
    assert _close(pi, pg.softmax([x + shift for x in logits]), 1e-9)


def test_softmax_of_huge_logits_does_not_overflow() -> None:
    assert pg.softmax([1000.0, 999.0]) == pytest.approx([1 / (1 + math.exp(-1)), 1 / (1 + math.e)])


def test_log_softmax_equals_the_log_of_softmax() -> None:
    assert _close(pg.log_softmax(LOGITS), [math.log(p) for p in pg.softmax(LOGITS)], 1e-12)


def test_empty_logits_are_a_course_error() -> None:
    with pytest.raises(CourseError, match="at least one logit"):
        pg.softmax([])


# ---------------------------------------------------------------------------
# grad log pi
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("action", range(len(LOGITS)))
def test_grad_log_prob_matches_finite_differences(action: int) -> None:
    numeric = _finite_difference(lambda th: pg.log_softmax(th)[action], LOGITS)
    assert _close(pg.grad_log_prob(LOGITS, action), numeric, 1e-7)


def test_grad_log_prob_is_onehot_minus_probs_and_sums_to_zero() -> None:
    pi = pg.softmax(LOGITS)
    g = pg.grad_log_prob(LOGITS, 2)
    assert g == [(1.0 if k == 2 else 0.0) - p for k, p in enumerate(pi)]
    assert abs(math.fsum(g)) < 1e-12


def test_an_action_outside_the_policy_is_a_course_error() -> None:
    with pytest.raises(CourseError, match="action must be an index"):
        pg.grad_log_prob(LOGITS, len(LOGITS))


# ---------------------------------------------------------------------------
# J and its exact gradient
# ---------------------------------------------------------------------------
def test_exact_gradient_matches_finite_differences_of_expected_reward() -> None:
    numeric = _finite_difference(lambda th: pg.expected_reward(pg.softmax(th), REWARDS), LOGITS)
    assert _close(pg.exact_gradient(LOGITS, REWARDS), numeric, 1e-7)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.floats(-30, 30), min_size=1, max_size=6).flatmap(
        lambda logits: st.tuples(st.just(logits), st.lists(st.sampled_from([0.0, -0.0, 1.0, -1.0, 0.5, 2.0]),
                                                           min_size=len(logits), max_size=len(logits)))
    )
)
def test_exact_gradient_skipping_zero_rewards_is_bit_identical_to_the_full_enumeration(case) -> None:
    logits, rewards = case
    pi = pg.softmax(logits)
    full = [0.0] * len(pi)
    for a, (p_a, r_a) in enumerate(zip(pi, rewards)):  # every action, zero rewards included
        for k, p_k in enumerate(pi):
            full[k] += p_a * r_a * ((1.0 if k == a else 0.0) - p_k)
    got = pg.exact_gradient(logits, rewards)
    assert [x.hex() for x in got] == [x.hex() for x in full]  # same bits, signs of zero included


def test_exact_gradient_is_prob_times_reward_minus_average() -> None:
    pi = pg.softmax(LOGITS)
    j = pg.expected_reward(pi, REWARDS)
    assert _close(pg.exact_gradient(LOGITS, REWARDS), [p * (r - j) for p, r in zip(pi, REWARDS)], 1e-14)


def _sampled_mean_and_se(baseline_rule, n=20_000, seed=11):  # type: ignore[no-untyped-def]
    """Mean and standard error of n one-sample estimates at the fixed policy LOGITS."""
    rng = random.Random(seed)
    pi = pg.softmax(LOGITS)
    samples = []
    total, count = 0.0, 0  # the sum and number of earlier rewards
    for _ in range(n):
        a = pg.sample_action(pi, rng)
        b = baseline_rule(total, count)
        samples.append(pg.reinforce_estimate(LOGITS, a, REWARDS[a], b))
        total, count = total + REWARDS[a], count + 1
    cols = list(zip(*samples))
    return [statistics.fmean(c) for c in cols], [statistics.stdev(c) / math.sqrt(n) for c in cols]


def _within_5_se(mean, se, target):  # type: ignore[no-untyped-def]
    return all(abs(m - t) <= 5 * s + 1e-12 for m, s, t in zip(mean, se, target))


def test_average_reinforce_estimate_without_baseline_matches_the_exact_gradient() -> None:
    mean, se = _sampled_mean_and_se(lambda total, count: 0.0)
    assert _within_5_se(mean, se, pg.exact_gradient(LOGITS, REWARDS))


def test_average_reinforce_estimate_with_a_constant_baseline_matches_the_exact_gradient() -> None:
    mean, se = _sampled_mean_and_se(lambda total, count: 0.7)
    assert _within_5_se(mean, se, pg.exact_gradient(LOGITS, REWARDS))


def test_running_mean_of_earlier_rewards_keeps_the_estimate_centred() -> None:
    mean, se = _sampled_mean_and_se(lambda total, count: total / count if count else 0.0)
    assert _within_5_se(mean, se, pg.exact_gradient(LOGITS, REWARDS))


def test_a_baseline_that_includes_the_current_reward_biases_the_estimate() -> None:
    # Why course.bandit_train computes b BEFORE seeing the reward: with the current reward folded
    # in, b depends on the sampled action and the mean shrinks (here over streams of 4 samples,
    # by a factor 1 - 1/(t+1) at step t), far outside the sampling error.
    rng = random.Random(5)
    pi = pg.softmax(LOGITS)
    samples = []
    for _ in range(5000):
        hist: list[float] = []
        for _ in range(4):
            a = pg.sample_action(pi, rng)
            hist.append(REWARDS[a])
            samples.append(pg.reinforce_estimate(LOGITS, a, REWARDS[a], statistics.fmean(hist)))
    cols = list(zip(*samples))
    mean = [statistics.fmean(c) for c in cols]
    se = [statistics.stdev(c) / math.sqrt(len(c)) for c in cols]
    exact = pg.exact_gradient(LOGITS, REWARDS)
    assert not _within_5_se(mean, se, exact)


def test_estimate_variance_matches_the_sampled_variance() -> None:
    rng = random.Random(3)
    pi = pg.softmax(LOGITS)
    samples = []
    for _ in range(40_000):
        a = pg.sample_action(pi, rng)
        samples.append(pg.reinforce_estimate(LOGITS, a, REWARDS[a], 0.2))
    sampled = [statistics.pvariance(c) for c in zip(*samples)]
    exact = pg.estimate_variance(LOGITS, REWARDS, 0.2)
    assert all(abs(s - e) <= 0.05 * e + 1e-6 for s, e in zip(sampled, exact))


def test_baseline_changes_the_variance_but_not_the_exact_mean() -> None:
    # estimate_variance subtracts the same exact_gradient whatever b is; the variances differ.
    j = pg.expected_reward(pg.softmax([0.0] * 6), [0, 0, 0, 0, 0, 1.0])
    v0 = pg.estimate_variance([0.0] * 6, [0, 0, 0, 0, 0, 1.0], 0.0)
    vj = pg.estimate_variance([0.0] * 6, [0, 0, 0, 0, 0, 1.0], j)
    assert statistics.fmean(vj) < statistics.fmean(v0)


# ---------------------------------------------------------------------------
# KL and the regularised optimum
# ---------------------------------------------------------------------------
REF = [0.4, 0.3, 0.2, 0.1]
R4 = [0.0, 0.2, 1.0, 1.0]


def test_kl_is_zero_for_equal_distributions_and_positive_otherwise() -> None:
    assert pg.kl_divergence(REF, REF) == 0.0
    assert pg.kl_divergence([0.25] * 4, REF) > 0.0


def test_kl_is_infinite_where_the_reference_has_no_mass() -> None:
    assert pg.kl_divergence([0.5, 0.5], [1.0, 0.0]) == math.inf


def test_kl_objective_gradient_matches_finite_differences() -> None:
    theta = [0.2, -0.4, 1.0, 0.1]
    numeric = _finite_difference(lambda th: pg.kl_objective(th, REF, R4, 0.3), theta)
    assert _close(pg.kl_objective_gradient(theta, REF, R4, 0.3), numeric, 1e-7)


@pytest.mark.parametrize("beta", [0.05, 0.5, 5.0])
def test_closed_form_optimum_is_a_stationary_point_of_the_objective(beta: float) -> None:
    pi = pg.kl_regularised_optimum(REF, R4, beta)
    grad = pg.kl_objective_gradient([math.log(p) for p in pi], REF, R4, beta)
    assert max(abs(g) for g in grad) < 1e-12


def test_closed_form_optimum_beats_every_nearby_policy() -> None:
    pi = pg.kl_regularised_optimum(REF, R4, 0.5)
    theta = [math.log(p) for p in pi]
    best = pg.kl_objective(theta, REF, R4, 0.5)
    rng = random.Random(0)
    for _ in range(200):
        nearby = [t + rng.uniform(-0.3, 0.3) for t in theta]
        assert pg.kl_objective(nearby, REF, R4, 0.5) <= best + 1e-15


def test_large_beta_keeps_the_reference_policy() -> None:
    pi = pg.kl_regularised_optimum(REF, R4, 1e4)
    assert pg.kl_divergence(pi, REF) < 1e-8


def test_small_beta_puts_all_mass_on_the_best_actions_split_like_the_reference() -> None:
    pi = pg.kl_regularised_optimum(REF, R4, 1e-3)
    assert pi[2] + pi[3] > 1 - 1e-12
    assert pi[2] / pi[3] == pytest.approx(REF[2] / REF[3])


@pytest.mark.parametrize("beta", [0.0, -1.0, math.inf, math.nan])
def test_beta_must_be_positive_and_finite(beta: float) -> None:
    with pytest.raises(CourseError, match="beta must be a positive finite number"):
        pg.kl_regularised_optimum(REF, R4, beta)


def test_mismatched_lengths_are_a_course_error() -> None:
    with pytest.raises(CourseError, match="one entry per action"):
        pg.expected_reward([0.5, 0.5], [1.0])


# ---------------------------------------------------------------------------
# sampling
# ---------------------------------------------------------------------------
def test_sample_action_frequencies_match_the_probabilities() -> None:
    probs = [0.1, 0.0, 0.6, 0.3]
    rng = random.Random(1)
    n = 30_000
    counts = [0] * 4
    for _ in range(n):
        counts[pg.sample_action(probs, rng)] += 1
    assert counts[1] == 0
    for c, p in zip(counts, probs):
        assert abs(c / n - p) <= 5 * math.sqrt(p * (1 - p) / n) + 1e-12


def test_sample_action_is_reproducible_from_the_seed() -> None:
    draw = lambda seed: [pg.sample_action([0.2, 0.3, 0.5], r) for r in [random.Random(seed)] for _ in range(50)]  # noqa: E731
    assert draw(9) == draw(9) and draw(9) != draw(10)


# --- the variance-optimal baseline -----------------------------------------------------------
@given(
    st.lists(st.floats(-4, 4), min_size=2, max_size=6),
    st.lists(st.sampled_from([0.0, 1.0, 0.5, -1.0]), min_size=6, max_size=6),
    st.floats(-2, 2),
)
@settings(max_examples=200, deadline=None)
def test_no_constant_baseline_gives_less_variance_than_the_optimal_one(logits, rewards, other) -> None:
    rewards = rewards[: len(logits)]
    best = sum(pg.estimate_variance(logits, rewards, pg.optimal_baseline(logits, rewards)))
    assert best <= sum(pg.estimate_variance(logits, rewards, other)) + 1e-12


def test_the_optimal_baseline_is_j_when_every_action_pushes_equally_hard() -> None:
    # At the uniform policy every |grad log pi(a)| is the same, so b* is the plain mean reward.
    assert pg.optimal_baseline([0.0] * 5, REWARDS) == pytest.approx(pg.expected_reward(pg.softmax([0.0] * 5), REWARDS))


def test_once_the_rewarded_action_is_likely_b_equal_j_adds_variance_and_b_star_does_not() -> None:
    logits, rewards = [4.0, 0.0, 0.0], [1.0, 0.0, 0.0]
    j = pg.expected_reward(pg.softmax(logits), rewards)
    b_star = pg.optimal_baseline(logits, rewards)
    assert j > 0.9 and b_star < 0.1
    v0, v_j, v_star = (sum(pg.estimate_variance(logits, rewards, b)) for b in (0.0, j, b_star))
    assert v_j > 10 * v0 and v_star <= v0


def test_a_random_baseline_costs_its_mean_plus_its_variance_times_e_g_squared_by_enumeration() -> None:
    # b is 0.2 or 0.9 with probability 0.5 each, independent of a: enumerate the pairs (a, b).
    theta, rewards = [0.3, -0.2, 0.0], [1.0, 0.0, 0.5]
    pi = pg.softmax(theta)
    mean = pg.exact_gradient(theta, rewards)
    brute = [0.0, 0.0, 0.0]
    for b in (0.2, 0.9):
        for a, p in enumerate(pi):
            est = pg.reinforce_estimate(theta, a, rewards[a], b)
            for k in range(3):
                brute[k] += 0.5 * p * (est[k] - mean[k]) ** 2
    got = pg.estimate_variance(theta, rewards, baseline=0.55, baseline_variance=0.35**2)
    assert got == pytest.approx(brute, abs=1e-12)


def test_ema_baseline_moments_match_an_enumeration_of_every_reward_sequence() -> None:
    import itertools

    probs, rewards, alpha, t = [0.3, 0.7], [1.0, 0.0], 0.4, 3
    values, weights = [], []
    for seq in itertools.product(range(2), repeat=t):
        b, w = 0.25, 1.0  # a nonzero start, to check it is forgotten at the right rate
        for a in seq:
            b = pg.ema_baseline(b, rewards[a], alpha)
            w *= probs[a]
        values.append(b)
        weights.append(w)
    m = sum(w * v for w, v in zip(weights, values))
    v = sum(w * (x - m) ** 2 for w, x in zip(weights, values))
    assert pg.ema_baseline_moments(probs, rewards, alpha, t, initial=0.25) == pytest.approx((m, v), abs=1e-12)
