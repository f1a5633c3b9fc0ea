"""The gate's paired test over items (course.lib.stats.sign_flip_test): its p-value exact where it
enumerates, and its interval in agreement with it on every small case.

The references are independent: the p-value by listing every sign pattern with itertools.product, and
McNemar's exact test for 0/1 values.
"""

from __future__ import annotations

import itertools
import math
import random
from fractions import Fraction

import pytest

from course.lib.stats import EXACT_SIGN_FLIP_MAX, mcnemar_exact, paired_bootstrap, sign_flip_test

ALPHA = 0.05
RATES = [Fraction(k, 4) for k in range(5)]  # per-item pass rates of 4 samples


def brute_force_p(a, b) -> Fraction:  # type: ignore[no-untyped-def]
    diffs = [Fraction(y) - Fraction(x) for x, y in zip(a, b) if x != y]
    observed = abs(sum(diffs))
    hits = sum(abs(sum(s * d for s, d in zip(signs, diffs))) >= observed
               for signs in itertools.product((1, -1), repeat=len(diffs)))
    return Fraction(hits, 2 ** len(diffs))


def excludes_zero(t) -> bool:  # type: ignore[no-untyped-def]
    return t.low > 0.0 or t.high < 0.0


def small_cases():  # type: ignore[no-untyped-def]
    """Every pair of 0/1 outcomes on up to 7 items, and 400 seeded pairs of 4-sample rates on 2 to 12 items."""
    for n in range(1, 8):
        for a in itertools.product((0, 1), repeat=n):
            for b in itertools.product((0, 1), repeat=n):
                yield list(a), list(b)
    rng = random.Random(44)
    for _ in range(400):
        n = rng.randint(2, 12)
        a = [rng.choice(RATES) for _ in range(n)]
        yield [float(x) for x in a], [float(min(RATES[-1], max(RATES[0], x + rng.choice(RATES[:3]) -
                                                               Fraction(1, 4)))) for x in a]


def test_on_every_small_case_the_interval_excludes_zero_exactly_when_p_is_below_alpha() -> None:
    disagreements, significant = [], 0
    for a, b in small_cases():
        t = sign_flip_test(a, b, seed=0, confidence=1 - ALPHA)
        significant += t.p_value < ALPHA
        if excludes_zero(t) != (t.p_value < ALPHA):
            disagreements.append((a, b, t))
    assert disagreements == []
    assert significant > 20  # (the grid has significant cases, not only p >= alpha ones)


def test_the_percentile_bootstrap_disagrees_with_the_test_on_the_same_grid() -> None:
    """What the agreement above replaces: the bootstrap's interval excludes 0 on cases the test does not reject."""
    cases = [(a, b) for a, b in small_cases() if len(a) <= 6 and a != b][:400]
    bad = sum((lambda lo, hi: lo > 0 or hi < 0)(*paired_bootstrap(a, b, seed=0, n_resamples=2000))
              != (sign_flip_test(a, b, seed=0).p_value < ALPHA) for a, b in cases)
    assert bad > 0


def test_the_exact_p_value_is_the_share_of_all_sign_patterns() -> None:
    rng = random.Random(7)
    for _ in range(60):
        n = rng.randint(1, 10)
        a = [float(rng.choice(RATES)) for _ in range(n)]
        b = [float(rng.choice(RATES)) for _ in range(n)]
        t = sign_flip_test(a, b, seed=0)
        assert t.exact and t.p_value == float(brute_force_p(a, b))


def test_on_zero_one_outcomes_the_exact_p_value_is_mcnemars() -> None:
    for b_count in range(EXACT_SIGN_FLIP_MAX + 1):
        for c_count in range(EXACT_SIGN_FLIP_MAX + 1 - b_count):
            base = [1] * b_count + [0] * c_count + [1, 0]
            cand = [0] * b_count + [1] * c_count + [1, 0]
            assert sign_flip_test(base, cand, seed=0).p_value == pytest.approx(mcnemar_exact(b_count, c_count),
                                                                               abs=1e-15)


def test_beyond_the_exact_range_the_p_value_is_monte_carlo_and_still_agrees_with_its_interval() -> None:
    rng = random.Random(3)
    for shift in (0, 1, 2, 3, 4, 6):
        a = [float(rng.choice(RATES)) for _ in range(40)]
        b = [min(1.0, x + rng.choice([-0.25, 0.0, 0.25, 0.25 * (shift > 2)]) + 0.25 * (i < shift))
             for i, x in enumerate(a)]
        t = sign_flip_test(a, b, seed=0, n_resamples=2000)
        assert not t.exact and t.discordant > EXACT_SIGN_FLIP_MAX
        assert excludes_zero(t) == (t.p_value < ALPHA)


def test_an_exact_p_value_needs_no_seed() -> None:
    a, b = [0.0, 0.25, 0.5, 1.0, 0.75], [0.5, 0.5, 0.25, 1.0, 1.0]
    assert sign_flip_test(a, b, seed=0) == sign_flip_test(a, b, seed=99)


def test_the_interval_is_centred_on_the_mean_difference() -> None:
    a, b = [0.0, 0.25, 0.5, 0.5, 0.0, 0.75], [0.5, 0.5, 0.5, 0.25, 0.75, 1.0]
    t = sign_flip_test(a, b, seed=0)
    mean = math.fsum(y - x for x, y in zip(a, b)) / len(a)
    assert (t.low + t.high) / 2 == pytest.approx(mean, abs=1e-15) and t.low < mean < t.high
