"""course.lib.stats against exact arithmetic (fractions, math.comb) and published values."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from course.errors import CourseError
from course.lib.stats import (
    mcnemar_exact,
    paired_bootstrap,
    paired_difference_interval,
    pass_at_k,
    pass_hat_k,
    wilson_interval,
)

Z95 = 1.959963984540054


def exact_wilson(s: int, n: int) -> tuple[float, float]:
    """Wilson bounds as the two roots of (p̂ - p)^2 = z^2 p(1 - p)/n, solved independently."""
    p_hat = s / n
    a = 1 + Z95**2 / n
    b = -(2 * p_hat + Z95**2 / n)
    c = p_hat**2
    disc = math.sqrt(b * b - 4 * a * c)
    return (-b - disc) / (2 * a), (-b + disc) / (2 * a)


# --- Wilson -------------------------------------------------------------------
def test_wilson_interval_for_23_of_100_matches_the_quadratic_roots() -> None:
    lo, hi = wilson_interval(23, 100)
    elo, ehi = exact_wilson(23, 100)
    assert lo == pytest.approx(elo, abs=1e-12) and hi == pytest.approx(ehi, abs=1e-12)
    assert (round(lo, 4), round(hi, 4)) == (0.1584, 0.3215)


@given(st.integers(1, 500).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_wilson_interval_agrees_with_the_quadratic_and_contains_the_estimate(sn: tuple[int, int]) -> None:
    s, n = sn
    lo, hi = wilson_interval(s, n)
    elo, ehi = exact_wilson(s, n)
    assert 0.0 <= lo <= s / n <= hi <= 1.0
    assert lo == pytest.approx(max(0.0, elo), abs=1e-9) and hi == pytest.approx(min(1.0, ehi), abs=1e-9)


def test_wilson_interval_at_zero_passes_starts_exactly_at_zero_and_is_not_a_point() -> None:
    lo, hi = wilson_interval(0, 20)
    assert lo == 0.0 and hi == pytest.approx(exact_wilson(0, 20)[1])
    assert hi > 0.1


def test_wilson_interval_at_all_passes_ends_exactly_at_one() -> None:
    lo, hi = wilson_interval(20, 20)
    assert hi == 1.0 and lo == pytest.approx(exact_wilson(20, 20)[0])


def test_wilson_interval_for_a_single_item_is_wide() -> None:
    assert wilson_interval(1, 1) == (pytest.approx(0.2065, abs=1e-4), 1.0)
    assert wilson_interval(0, 1) == (0.0, pytest.approx(0.7935, abs=1e-4))


@pytest.mark.parametrize("args", [(1, 0), (5, 4), (-1, 3), (True, 3), (1.0, 3), (1, 3, 1.5)])
def test_wilson_interval_rejects_impossible_arguments(args: tuple) -> None:
    with pytest.raises(CourseError):
        wilson_interval(*args)


# --- McNemar ------------------------------------------------------------------
def exact_mcnemar(b: int, c: int) -> Fraction:
    m = b + c
    tail = sum(math.comb(m, i) for i in range(min(b, c) + 1))
    return min(Fraction(1), Fraction(2 * tail, 2**m))


@pytest.mark.parametrize("b,c", [(0, 1), (0, 6), (1, 9), (2, 12), (5, 5), (7, 3), (40, 61), (300, 250)])
def test_mcnemar_exact_equals_the_doubled_binomial_tail(b: int, c: int) -> None:
    assert mcnemar_exact(b, c) == pytest.approx(float(exact_mcnemar(b, c)), rel=1e-12)


def test_mcnemar_with_no_discordant_pairs_has_p_one() -> None:
    assert mcnemar_exact(0, 0) == 1.0


def test_mcnemar_is_symmetric_in_b_and_c() -> None:
    assert mcnemar_exact(3, 11) == mcnemar_exact(11, 3)


def test_mcnemar_on_huge_tables_uses_log_space_and_still_agrees() -> None:
    b, c = 5_000, 5_150  # 10,150 discordant pairs: past the exact-integer branch
    m, term, tail = b + c, 1, 1
    for i in range(b):  # exact tail sum of C(m, i), by the recurrence C(m, i+1) = C(m, i)(m-i)/(i+1)
        term = term * (m - i) // (i + 1)
        tail += term
    p = mcnemar_exact(b, c)
    assert 0.0 < p < 1.0
    assert p == pytest.approx(float(Fraction(2 * tail, 2**m)), rel=1e-9)


# --- Paired difference interval (Newcombe 1998, method 10) ------------------------
@pytest.mark.parametrize(
    "cells,expected",
    [
        # (both, baseline-only b, candidate-only c, neither) -> the paper's published bounds
        ((36, 2, 12, 0), (0.0569, 0.3404)),
        ((18, 2, 12, 18), (0.0562, 0.3290)),
        ((53, 0, 0, 1), (-0.0729, 0.0729)),
        ((0, 0, 30, 0), (0.8395, 1.0)),
    ],
)
def test_paired_difference_interval_reproduces_newcombes_published_examples(cells, expected) -> None:
    lo, hi = paired_difference_interval(*cells)
    assert (round(lo, 4), round(hi, 4)) == expected


def test_paired_difference_interval_is_antisymmetric_when_runs_are_swapped() -> None:
    lo, hi = paired_difference_interval(40, 7, 15, 38)
    slo, shi = paired_difference_interval(40, 15, 7, 38)
    assert (lo, hi) == (pytest.approx(-shi), pytest.approx(-slo))


def test_paired_difference_interval_of_an_empty_table_is_an_error() -> None:
    with pytest.raises(CourseError):
        paired_difference_interval(0, 0, 0, 0)


# --- Paired bootstrap ------------------------------------------------------------
def test_paired_bootstrap_is_reproducible_from_its_seed() -> None:
    a = [1, 0, 0, 1, 0, 1, 0, 0, 0, 1] * 3
    b = [1, 1, 0, 1, 0, 1, 1, 0, 1, 1] * 3
    assert paired_bootstrap(a, b, seed=7, n_resamples=500) == paired_bootstrap(a, b, seed=7, n_resamples=500)


def test_paired_bootstrap_interval_brackets_the_observed_difference() -> None:
    a = [1, 0, 0, 1, 0, 1, 0, 0, 0, 1] * 3
    b = [1, 1, 0, 1, 0, 1, 1, 0, 1, 1] * 3
    lo, hi = paired_bootstrap(a, b, seed=0, n_resamples=2000)
    assert lo < 0.3 < hi and lo > 0.0  # observed difference 9/30; every resample has c >= b here


def test_paired_bootstrap_without_discordant_pairs_is_a_point_at_zero() -> None:
    assert paired_bootstrap([1, 0, 1], [1, 0, 1], seed=1, n_resamples=100) == (0.0, 0.0)


def test_paired_bootstrap_rejects_unequal_lengths() -> None:
    with pytest.raises(CourseError):
        paired_bootstrap([1, 0], [1], seed=0, n_resamples=10)


# --- pass@k and pass^k -------------------------------------------------------------
def exact_pass_at_k(n: int, c: int, k: int) -> Fraction:
    return 1 - Fraction(math.comb(n - c, k), math.comb(n, k))


def exact_pass_hat_k(n: int, c: int, k: int) -> Fraction:
    return Fraction(math.comb(c, k), math.comb(n, k))


@given(st.integers(1, 300).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n), st.integers(1, n))))
@settings(max_examples=300)
def test_pass_at_k_matches_the_exact_binomial_ratio(nck: tuple[int, int, int]) -> None:
    n, c, k = nck
    assert pass_at_k(n, c, k) == pytest.approx(float(exact_pass_at_k(n, c, k)), rel=1e-9, abs=1e-12)


@given(st.integers(1, 300).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n), st.integers(1, n))))
@settings(max_examples=300)
def test_pass_hat_k_matches_the_exact_binomial_ratio(nck: tuple[int, int, int]) -> None:
    n, c, k = nck
    assert pass_hat_k(n, c, k) == pytest.approx(float(exact_pass_hat_k(n, c, k)), rel=1e-9, abs=1e-300)


@given(st.integers(1, 400).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n), st.integers(1, n))))
@settings(max_examples=300)
def test_pass_at_k_and_pass_hat_k_are_the_float_nearest_the_exact_fraction(nck: tuple[int, int, int]) -> None:
    # "Exact to floating-point precision": equality with the correctly rounded fraction, no tolerance.
    n, c, k = nck
    assert pass_at_k(n, c, k) == float(exact_pass_at_k(n, c, k))
    assert pass_hat_k(n, c, k) == float(exact_pass_hat_k(n, c, k))


def test_pass_at_k_is_correctly_rounded_where_the_float_product_cancels() -> None:
    # n=190, c=3, k=1: 3/190. The float product 1 - (1-1/188)(1-1/189)(1-1/190) is off by 46 ulps.
    assert pass_at_k(190, 3, 1) == 3 / 190


def test_pass_at_k_with_no_passing_sample_is_zero() -> None:
    assert pass_at_k(8, 0, 1) == 0.0 and pass_at_k(8, 0, 8) == 0.0


def test_pass_at_k_with_every_sample_passing_is_one() -> None:
    assert pass_at_k(8, 8, 1) == 1.0


def test_pass_at_k_is_exactly_one_when_k_exceeds_the_failures() -> None:
    assert pass_at_k(8, 3, 6) == 1.0  # only 5 failures: any 6 samples include a pass


def test_pass_at_1_is_the_fraction_of_passing_samples() -> None:
    assert pass_at_k(8, 3, 1) == pytest.approx(3 / 8)


def test_pass_at_k_for_a_single_sample_is_that_sample() -> None:
    assert (pass_at_k(1, 0, 1), pass_at_k(1, 1, 1)) == (0.0, 1.0)


def test_pass_hat_k_is_zero_when_fewer_than_k_samples_pass() -> None:
    assert pass_hat_k(8, 2, 3) == 0.0


def test_pass_at_k_is_stable_where_the_binomials_overflow_floats() -> None:
    # C(2000, 1000) does not fit in a float; the product form never forms it.
    value = pass_at_k(2000, 3, 1000)
    assert value == pytest.approx(float(exact_pass_at_k(2000, 3, 1000)), rel=1e-12)


@pytest.mark.parametrize("args", [(0, 0, 1), (4, 5, 1), (4, 2, 0), (4, 2, 5), (4, True, 1), (4.0, 2, 1)])
def test_pass_at_k_rejects_impossible_arguments(args: tuple) -> None:
    with pytest.raises(CourseError):
        pass_at_k(*args)
    with pytest.raises(CourseError):
        pass_hat_k(*args)
