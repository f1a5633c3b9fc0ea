"""Several samples per item, several seeds, and the planning model: course.lib.stats checked by seeded simulation.

Each claim of the planning model (``lift_variance``, ``lift_power``, ``items_for_power``) is checked by
simulating exactly the model it states: items with bounded random difficulties of the stated variance
and correlation, m Bernoulli samples per item, a shift per training seed.
"""

from __future__ import annotations

import math
import random
import statistics

import pytest

from course.errors import CourseError
from course.lib.stats import (
    between_seed_interval,
    clustered_interval,
    clustered_standard_error,
    design_effect,
    intra_class_correlation,
    items_for_power,
    lift_power,
    lift_variance,
    paired_sign_flip,
    wilson_interval,
)

SQRT3 = math.sqrt(3.0)


def _unit_noise(rng: random.Random) -> float:
    """Mean 0, variance 1, bounded by sqrt(3): a uniform draw, so rates stay inside [0, 1] below."""
    return SQRT3 * (2.0 * rng.random() - 1.0)


def _simulate_lift(rng: random.Random, *, pb, pc, items, m, seeds, rho, kappa, seed_sd):  # type: ignore[no-untyped-def]
    tb, tc = math.sqrt(rho * pb * (1 - pb)), math.sqrt(rho * pc * (1 - pc))
    shifts = [seed_sd * _unit_noise(rng) for _ in range(seeds)]
    total = 0.0
    for _ in range(items):
        z, w = _unit_noise(rng), _unit_noise(rng)
        qb = pb + tb * z
        qc = pc + tc * (kappa * z + math.sqrt(1 - kappa * kappa) * w)
        base = sum(rng.random() < qb for _ in range(m)) / m
        cand = sum(rng.random() < qc + u for u in shifts for _ in range(m)) / (m * seeds)
        total += cand - base
    return total / items


MODEL = dict(pb=0.4, pc=0.5, rho=0.1, kappa=0.5, seed_sd=0.02)  # every rate stays inside (0, 1)


def test_the_lift_variance_formula_matches_a_seeded_simulation_of_its_model():
    rng = random.Random(1)
    items, m, seeds = 40, 4, 2
    draws = [_simulate_lift(rng, items=items, m=m, seeds=seeds, **MODEL) for _ in range(3000)]
    predicted = lift_variance(0.4, 0.5, items=items, samples=m, seeds=seeds, icc=0.1, item_correlation=0.5,
                              seed_sd=0.02)
    assert statistics.variance(draws) == pytest.approx(predicted, rel=0.08)
    assert statistics.fmean(draws) == pytest.approx(0.1, abs=0.005)


def test_items_for_power_gives_the_stated_power_in_simulation():
    rng = random.Random(2)
    m, seeds = 2, 1
    n = items_for_power(0.4, 0.1, power=0.8, samples=m, seeds=seeds, icc=0.1, item_correlation=0.5, seed_sd=0.02)
    assert n is not None
    sd = math.sqrt(lift_variance(0.4, 0.5, items=n, samples=m, seeds=seeds, icc=0.1, item_correlation=0.5,
                                 seed_sd=0.02))
    detected = sum(abs(_simulate_lift(rng, items=n, m=m, seeds=seeds, **MODEL)) / sd > 1.959963984540054
                   for _ in range(1500))
    assert detected / 1500 == pytest.approx(0.8, abs=0.035)
    assert lift_power(0.4, 0.1, items=n - 1, samples=m, seeds=seeds, icc=0.1, item_correlation=0.5, seed_sd=0.02) < 0.8


def test_more_samples_per_item_help_less_as_the_items_agree_more():
    def needed(m, rho):  # type: ignore[no-untyped-def]
        return items_for_power(0.3, 0.1, samples=m, icc=rho, item_correlation=0.0)

    assert needed(8, 0.0) * 8 == pytest.approx(needed(1, 0.0), rel=0.02)  # independent samples: 8x fewer items
    assert needed(8, 1.0) == needed(1, 1.0)  # all-or-nothing items: extra samples buy nothing


def test_seed_variance_beyond_what_the_lift_allows_needs_more_seeds_not_more_items():
    kwargs = dict(samples=8, icc=0.2, item_correlation=0.8, seed_sd=0.05)
    assert items_for_power(0.3, 0.1, seeds=1, **kwargs) is None
    assert items_for_power(0.3, 0.1, seeds=4, **kwargs) is not None


def test_the_design_effect_is_one_plus_m_minus_one_rho():
    assert design_effect(1, 0.7) == 1.0
    assert design_effect(5, 0.25) == 2.0


def test_the_clustered_interval_covers_the_true_rate_where_the_independent_wilson_does_not():
    rng = random.Random(3)
    hits_clustered = hits_wilson = 0
    reps, items, m, p = 600, 30, 8, 0.3
    for _ in range(reps):
        # Beta(0.6, 1.4): mean 0.3, rho = 1 / (0.6 + 1.4 + 1) = 1/3
        rates = [rng.betavariate(0.6, 1.4) for _ in range(items)]
        passed = [sum(rng.random() < q for _ in range(m)) for q in rates]
        lo, hi = clustered_interval(passed, [m] * items)
        hits_clustered += lo <= p <= hi
        lo, hi = wilson_interval(sum(passed), items * m)
        hits_wilson += lo <= p <= hi
    assert hits_clustered / reps >= 0.92
    assert hits_wilson / reps < 0.85  # 240 samples treated as independent: far too narrow


def test_the_clustered_interval_with_one_sample_per_item_is_wilsons():
    assert clustered_interval([1] * 7 + [0] * 13, [1] * 20) == wilson_interval(7, 20)


def test_the_clustered_interval_refuses_a_count_above_its_samples():
    with pytest.raises(CourseError, match="3 passes of 2 samples"):
        clustered_interval([3], [2])


def test_the_intra_class_correlation_recovers_the_simulated_rho():
    rng = random.Random(4)
    rates = [rng.betavariate(0.6, 1.4) for _ in range(2000)]  # rho = 1/3
    passed = [sum(rng.random() < q for _ in range(8)) for q in rates]
    assert intra_class_correlation(passed, [8] * 2000) == pytest.approx(1 / 3, abs=0.03)


def test_the_sign_flip_test_holds_its_level_under_no_difference():
    rng = random.Random(5)
    rejections = 0
    for trial in range(200):
        a = [sum(rng.random() < 0.4 for _ in range(4)) / 4 for _ in range(30)]
        b = [sum(rng.random() < 0.4 for _ in range(4)) / 4 for _ in range(30)]
        rejections += paired_sign_flip(a, b, seed=trial, n_resamples=400) < 0.05
    assert rejections / 200 <= 0.09


def test_the_between_seed_interval_is_the_t_interval():
    lo, hi = between_seed_interval([1.0, 3.0])
    assert (lo, hi) == pytest.approx((2.0 - 12.7062047 * math.sqrt(2) / math.sqrt(2), 2.0 + 12.7062047), rel=1e-6)


def test_one_seed_has_no_between_seed_spread():
    with pytest.raises(CourseError, match="at least 2 seeds"):
        between_seed_interval([0.1])


CLUSTERED_CASES = [([8, 0] * 25, [8] * 50), ([3, 5, 0, 8, 2], [8, 8, 8, 8, 8]), ([1, 2, 0, 4], [2, 4, 3, 4])]


@pytest.mark.parametrize("passed, samples", CLUSTERED_CASES)
def test_the_clustered_standard_error_is_inspects_without_its_finite_cluster_correction(passed, samples):  # type: ignore[no-untyped-def]
    """inspect_ai's own clustered stderr metric on the same samples (one cluster per item)."""
    pytest.importorskip("inspect_ai", reason="the inspect extra is not installed")
    from inspect_ai.scorer import SampleScore, Score, stderr

    scores = [SampleScore(score=Score(value=float(j < k)), sample_id=f"{i}-{j}", sample_metadata={"item": i})
              for i, (k, m) in enumerate(zip(passed, samples)) for j in range(m)]
    theirs = stderr(cluster="item")(scores)
    c = len(samples)
    assert clustered_standard_error(passed, samples, finite_cluster_correction=True) == pytest.approx(theirs, rel=1e-12)
    assert clustered_standard_error(passed, samples) == pytest.approx(theirs * math.sqrt((c - 1) / c), rel=1e-12)


@pytest.mark.parametrize("passed, samples", CLUSTERED_CASES)
def test_the_clustered_interval_is_wilsons_at_the_size_its_standard_error_implies(passed, samples):  # type: ignore[no-untyped-def]
    """Effective n = p(1-p) / se^2 (no more than the samples): the interval uses the uncorrected se."""
    p = sum(passed) / sum(samples)
    n_eff = min(sum(samples), p * (1 - p) / clustered_standard_error(passed, samples) ** 2)
    z = 1.959963984540054
    centre, half = (p + z * z / (2 * n_eff)) / (1 + z * z / n_eff), \
        z * math.sqrt(p * (1 - p) / n_eff + z * z / (4 * n_eff**2)) / (1 + z * z / n_eff)
    lo, hi = clustered_interval(passed, samples)
    assert lo == pytest.approx(centre - half, abs=1e-12) and hi == pytest.approx(centre + half, abs=1e-12)
