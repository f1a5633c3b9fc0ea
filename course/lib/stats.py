# Over 600 lines because the course's statistics sit together, each function short.
"""The statistics every course tool uses, in one pure, standard-library module.

One public function per concept, each with a doctested example; bad arguments
raise ``CourseError`` (never a silent NaN):

  * ``wilson_interval(successes, n)``      how sure is one pass rate?
  * ``mcnemar_exact(b, c)``                 are two paired pass rates different, or is it noise?
  * ``paired_difference_interval(...)``     a 95 % interval for that paired difference (Newcombe)
  * ``paired_bootstrap(a, b, seed=...)``    the same question answered by resampling, seeded
  * ``pass_at_k(n, c, k)``                  chance that at least one of k samples passes (unbiased)
  * ``pass_hat_k(n, c, k)``                 chance that all k samples pass (reliability)
  * ``plug_in_pass_at_k(n, c, k)``          the plug-in 1 - (1 - c/n)^k, biased low (for comparison only)

Several samples per item (they share the item, so they are not independent draws):

  * ``clustered_interval(passed, samples)``  pass@1 over items x samples, items as the unit of sampling
  * ``clustered_standard_error(...)``        its standard error (inspect_ai's, with or without C/(C-1))
  * ``intra_class_correlation(passed, samples)``  how much samples of one item agree (rho)
  * ``design_effect(m, icc)``                how many times wider the variance is: 1 + (m - 1) rho
  * ``sign_flip_test(a, b, seed=...)``       are two runs' per-item pass rates different? (paired over items,
                                            exact for few discordant items) and the interval that agrees
  * ``paired_sign_flip(a, b, seed=...)``     its p-value alone
  * ``between_seed_interval(values)``        a t interval for the mean of one figure over training seeds
  * ``lift_variance(...)``, ``lift_power(...)``, ``items_for_power(...)``
                                            how many items, samples and seeds a lift of X points needs

Nothing here reads files or keeps state; ``course.eval``, ``course.gate`` and
``course.selection_demo`` call these functions and print what they return.
Check a value by hand with e.g. ``python -c "from course.lib.stats import *; print(wilson_interval(23, 100))"``.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from fractions import Fraction
from statistics import NormalDist
from typing import Sequence

from course.errors import CourseError

__all__ = [
    "wilson_interval",
    "mcnemar_exact",
    "paired_difference_interval",
    "paired_bootstrap",
    "pass_at_k",
    "pass_hat_k",
    "plug_in_pass_at_k",
    "clustered_interval",
    "clustered_standard_error",
    "intra_class_correlation",
    "design_effect",
    "sign_flip_test",
    "SignFlip",
    "paired_sign_flip",
    "between_seed_interval",
    "lift_variance",
    "lift_power",
    "items_for_power",
]


# ---------------------------------------------------------------------------
# Argument checks: one message style for every function.
# ---------------------------------------------------------------------------
def _count(name: str, value: object) -> int:
    # bool is a subclass of int; True is not a count.
    if type(value) is not int or value < 0:
        raise CourseError(f"{name} must be a non-negative integer, got {value!r}")
    return value


def _z(confidence: float) -> float:
    """Two-sided normal quantile: 1.959963984540054 for 95 %."""
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0.0 < confidence < 1.0:
        raise CourseError(f"confidence must be a number strictly between 0 and 1, got {confidence!r}")
    return NormalDist().inv_cdf(0.5 + confidence / 2.0)


# ---------------------------------------------------------------------------
# One pass rate.
# ---------------------------------------------------------------------------
def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion ``successes / n``.

    Unlike the textbook ``p ± z·sqrt(p(1-p)/n)`` it never leaves [0, 1] and
    does not collapse to a point at 0 or n passes, which is exactly where small
    evaluation sets live (Wilson 1927; Brown, Cai & DasGupta 2001).

    >>> lo, hi = wilson_interval(23, 100)
    >>> f"{lo:.4f} {hi:.4f}"
    '0.1584 0.3215'
    >>> wilson_interval(0, 10)[0], wilson_interval(10, 10)[1]
    (0.0, 1.0)
    """
    _count("successes", successes)
    _count("n", n)
    if n == 0:
        raise CourseError("n must be at least 1: a pass rate over zero items is undefined")
    if successes > n:
        raise CourseError(f"successes ({successes}) cannot exceed n ({n})")
    return _wilson(successes / n, n, _z(confidence))


def _wilson(p: float, n: float, z: float) -> tuple[float, float]:
    """Wilson's interval for a rate ``p`` measured with (effective) sample size ``n``, which may be fractional."""
    z2n = z * z / n
    centre = (p + z2n / 2.0) / (1.0 + z2n)
    half = z * math.sqrt(p * (1.0 - p) / n + z2n / (4.0 * n)) / (1.0 + z2n)
    # At 0 or n passes one end is exactly 0 or 1; say so instead of printing 1e-17.
    lo = 0.0 if p == 0.0 else max(0.0, centre - half)
    hi = 1.0 if p == 1.0 else min(1.0, centre + half)
    return lo, hi


# ---------------------------------------------------------------------------
# Two runs on the same items (paired outcomes).
#
# Cross-tabulate the items:            candidate pass   candidate fail
#                     baseline pass        both              b
#                     baseline fail          c             neither
# Only the discordant items (b and c) carry information about a difference.
# ---------------------------------------------------------------------------
def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts ``b`` and ``c``.

    Under "no difference" each discordant item is a fair coin flip, so
    ``min(b, c)`` follows Binomial(b + c, 1/2); the p-value doubles its lower
    tail (capped at 1). With no discordant items there is no evidence: p = 1.

    >>> mcnemar_exact(0, 6)     # 2 * (1/2)**6
    0.03125
    >>> mcnemar_exact(3, 3), mcnemar_exact(0, 0)
    (1.0, 1.0)
    """
    _count("b", b)
    _count("c", c)
    m, k = b + c, min(b, c)
    if m == 0:
        return 1.0
    if m <= 10_000:
        # Exact integer arithmetic: sum C(m, i) for i <= k, built term by term.
        term, tail = 1, 1
        for i in range(k):
            term = term * (m - i) // (i + 1)
            tail += term
        return min(1.0, 2 * tail / 2**m)
    # Very large tables: the same sum in log space (float precision is plenty here).
    logs = [math.lgamma(m + 1) - math.lgamma(i + 1) - math.lgamma(m - i + 1) for i in range(k + 1)]
    top = max(logs)
    log_tail = top + math.log(math.fsum(math.exp(x - top) for x in logs)) - m * math.log(2.0)
    return min(1.0, 2.0 * math.exp(log_tail))


def paired_difference_interval(
    both: int, b: int, c: int, neither: int, confidence: float = 0.95
) -> tuple[float, float]:
    """Interval for (candidate pass rate − baseline pass rate) on paired items.

    Newcombe's (1998) method 10: combine the Wilson intervals of the two pass
    rates, corrected for their correlation over the shared items. Arguments are
    the four cells of the paired table: ``both`` pass, ``b`` baseline-only,
    ``c`` candidate-only, ``neither``. The point estimate is ``(c - b) / n``.

    >>> lo, hi = paired_difference_interval(36, 2, 12, 0)   # Newcombe (1998), first example
    >>> f"{lo:.4f} {hi:.4f}"
    '0.0569 0.3404'
    >>> lo, hi = paired_difference_interval(53, 0, 0, 1)    # no discordant items: centred on 0
    >>> f"{lo:.4f} {hi:.4f}"
    '-0.0729 0.0729'
    """
    for name, value in (("both", both), ("b", b), ("c", c), ("neither", neither)):
        _count(name, value)
    n = both + b + c + neither
    if n == 0:
        raise CourseError("the paired table is empty: no shared items to compare")
    base_pass, cand_pass = both + b, both + c
    p_base, p_cand = base_pass / n, cand_pass / n
    l_base, u_base = wilson_interval(base_pass, n, confidence)
    l_cand, u_cand = wilson_interval(cand_pass, n, confidence)
    # phi: the correlation between the two outcomes, with Newcombe's continuity
    # correction (a small positive association counts as none).
    margins = base_pass * (n - base_pass) * cand_pass * (n - cand_pass)
    phi = 0.0
    if margins > 0:
        cross = both * neither - b * c
        if cross > n / 2:
            phi = (cross - n / 2) / math.sqrt(margins)
        elif cross < 0:
            phi = cross / math.sqrt(margins)
    diff = p_cand - p_base
    d_cand_lo, d_cand_hi = p_cand - l_cand, u_cand - p_cand
    d_base_lo, d_base_hi = p_base - l_base, u_base - p_base
    lo = diff - math.sqrt(max(0.0, d_cand_lo**2 - 2 * phi * d_cand_lo * d_base_hi + d_base_hi**2))
    hi = diff + math.sqrt(max(0.0, d_cand_hi**2 - 2 * phi * d_cand_hi * d_base_lo + d_base_lo**2))
    return max(-1.0, lo), min(1.0, hi)


def paired_bootstrap(
    a: Sequence[float],
    b: Sequence[float],
    *,
    seed: int,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
) -> tuple[float, float]:
    """Percentile bootstrap interval for mean(b) − mean(a) over paired items.

    Items are resampled with replacement *as pairs* (the same item for both
    runs), ``n_resamples`` times, from ``random.Random(seed)``: the same
    arguments always give the same interval.

    >>> paired_bootstrap([1, 1, 0, 0], [1, 1, 0, 0], seed=0, n_resamples=200)
    (0.0, 0.0)
    >>> lo, hi = paired_bootstrap([0] * 10, [1] * 5 + [0] * 5, seed=0, n_resamples=2000)
    >>> 0.0 < lo < 0.5 < hi <= 1.0
    True
    """
    if len(a) != len(b):
        raise CourseError(f"paired samples need equal lengths, got {len(a)} and {len(b)}")
    if len(a) == 0:
        raise CourseError("paired_bootstrap needs at least one pair")
    if type(seed) is not int:
        raise CourseError(f"seed must be an integer, got {seed!r}")
    if type(n_resamples) is not int or n_resamples < 1:
        raise CourseError(f"n_resamples must be a positive integer, got {n_resamples!r}")
    _z(confidence)  # validates confidence
    diffs = [float(y) - float(x) for x, y in zip(a, b)]
    n = len(diffs)
    rng = random.Random(seed)
    means = sorted(math.fsum(rng.choices(diffs, k=n)) / n for _ in range(n_resamples))
    tail = (1.0 - confidence) / 2.0
    # Nearest-rank percentiles: both ends are resampled means, never interpolated.
    lo_i = min(n_resamples - 1, max(0, math.ceil(tail * n_resamples) - 1))
    hi_i = min(n_resamples - 1, max(0, math.ceil((1.0 - tail) * n_resamples) - 1))
    return means[lo_i], means[hi_i]


# ---------------------------------------------------------------------------
# Many samples per item (selection, Loop B).
# ---------------------------------------------------------------------------
# Up to this many samples per item, pass@k and pass^k are computed with exact
# integer binomials (C(1000, 500) has 300 digits: microseconds), so the result is
# the float nearest the exact value; beyond it, a float product.
EXACT_N_MAX = 1000


def _nck_args(n: int, c: int, k: int) -> None:
    _count("n", n)
    _count("c", c)
    _count("k", k)
    if n == 0:
        raise CourseError("n must be at least 1 sample")
    if c > n:
        raise CourseError(f"c ({c}) cannot exceed n ({n})")
    if not 1 <= k <= n:
        raise CourseError(f"k must be between 1 and n ({n}), got {k}")


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from ``n`` samples of which ``c`` passed (Chen et al. 2021).

    The estimate of "at least one of k fresh samples passes" is
    ``1 − C(n−c, k) / C(n, k)``. For n up to ``EXACT_N_MAX`` (1000) it is
    computed with exact integers, ``(C(n, k) − C(n−c, k)) / C(n, k)``, and
    Python's int division rounds that ratio once: the float nearest the exact
    value (the float product below, ``1 − Π (1 − k/i)``, loses up to ~1e-14
    relative when pass@k is small, by cancellation). Beyond that, the product
    form, which never forms a huge binomial.
    When fewer than k samples fail, every k-subset contains a pass: exactly 1.

    >>> pass_at_k(8, 1, 1), pass_at_k(8, 1, 8), pass_at_k(8, 0, 4)
    (0.125, 1.0, 0.0)
    >>> round(pass_at_k(8, 2, 4), 6)       # 1 - C(6,4)/C(8,4) = 1 - 15/70
    0.785714
    """
    _nck_args(n, c, k)
    if n - c < k:
        return 1.0
    if n <= EXACT_N_MAX:
        total = math.comb(n, k)
        return (total - math.comb(n - c, k)) / total
    fail_all = 1.0
    for i in range(n - c + 1, n + 1):
        fail_all *= 1.0 - k / i
    return 1.0 - fail_all


def plug_in_pass_at_k(n: int, c: int, k: int) -> float:
    """The plug-in pass@k, ``1 - (1 - c/n)^k``: the observed pass rate put into the formula for pass@k.

    Biased *low* for k >= 2 (``(1 - x)^k`` is convex, so by Jensen's inequality its expectation
    is at least ``(1 - p)^k``); ``course.passk_estimators`` shows by how much. Kept to be compared
    with ``pass_at_k``, never to be reported as pass@k.

    >>> round(plug_in_pass_at_k(10, 2, 1), 6), round(plug_in_pass_at_k(10, 2, 5), 6), round(pass_at_k(10, 2, 5), 6)
    (0.2, 0.67232, 0.777778)
    """
    _nck_args(n, c, k)
    return 1.0 - (1.0 - c / n) ** k


def pass_hat_k(n: int, c: int, k: int) -> float:
    """pass^k: chance that *all* k samples drawn without replacement pass, ``C(c, k) / C(n, k)``.

    A reliability figure: it falls as k grows, while pass@k rises.

    >>> pass_hat_k(8, 8, 3), pass_hat_k(8, 2, 3)
    (1.0, 0.0)
    >>> round(pass_hat_k(8, 4, 2), 6)      # C(4,2)/C(8,2) = 6/28
    0.214286
    """
    _nck_args(n, c, k)
    if c < k:
        return 0.0
    if n <= EXACT_N_MAX:  # exact integers, one rounding (see pass_at_k)
        return math.comb(c, k) / math.comb(n, k)
    all_pass = 1.0
    for i in range(k):
        all_pass *= (c - i) / (n - i)
    return all_pass


# ---------------------------------------------------------------------------
# Several samples per item: the item is the unit of sampling.
#
# With m samples of each of N items, the N*m outcomes are not independent: an
# easy item passes most of its samples, a hard one few. The test set is a sample
# of N items, so the uncertainty of a pass rate comes from which items were drawn
# as much as from which samples: treating N*m outcomes as independent (a Wilson
# interval over 400 samples of 50 items) makes the interval too narrow.
# ---------------------------------------------------------------------------
def _item_counts(passed: Sequence[int], samples: Sequence[int]) -> tuple[int, int]:
    if len(passed) != len(samples):
        raise CourseError(f"passed and samples need one entry per item, got {len(passed)} and {len(samples)}")
    if not passed:
        raise CourseError("no items: a pass rate over zero items is undefined")
    for i, (k, m) in enumerate(zip(passed, samples)):
        _count(f"passed[{i}]", k)
        _count(f"samples[{i}]", m)
        if m == 0 or k > m:
            raise CourseError(f"item {i}: {k} passes of {m} samples is not a count of samples")
    return sum(passed), sum(samples)


def clustered_interval(
    passed: Sequence[int], samples: Sequence[int], confidence: float = 0.95
) -> tuple[float, float]:
    """Interval for pass@1 = sum(passed) / sum(samples) when each item contributed several samples.

    ``passed[i]`` of ``samples[i]`` samples of item i passed. The variance of the
    ratio is estimated with items as the unit (the cluster-robust "sandwich"
    estimate, ``sum((k_i - p*m_i)**2) / (sum m_i)**2``); divided by the variance
    independent samples would have, ``p(1-p) / sum(m_i)``, it is the observed
    design effect. The interval is Wilson's with the effective sample size
    ``sum(m_i) / design effect`` (never more than the samples: a design effect
    below 1 counts as 1). With one sample per item it is exactly
    ``wilson_interval``; when every sample passed, or none did, the variance
    says nothing and the items are the sample size (the widest case: each
    item's samples all agree).

    The variance is inspect_ai's clustered standard error squared
    (``inspect_ai.scorer._metrics.std._clustered_stderr``) WITHOUT its
    finite-cluster correction C / (C - 1), C the number of items: the standard
    error is inspect's times sqrt((C - 1) / C) (0.995 at 100 items, 0.990 at
    50). Not applied, on purpose: it keeps the one-sample case exactly Wilson's
    (whose variance p(1-p)/n has no n / (n - 1) either), and at the item counts
    the course measures it moves an interval's half-width by half a percent or
    less; ``clustered_standard_error`` computes both.

    >>> lo, hi = clustered_interval([8, 0] * 25, [8] * 50)   # 200/400, but all-or-nothing per item
    >>> f"{lo:.3f} {hi:.3f}"
    '0.366 0.634'
    >>> lo, hi = wilson_interval(200, 400)                   # as if 400 independent samples: too narrow
    >>> f"{lo:.3f} {hi:.3f}"
    '0.451 0.549'
    >>> clustered_interval([1, 0, 1], [1, 1, 1]) == wilson_interval(2, 3)
    True
    """
    k_total, m_total = _item_counts(passed, samples)
    z = _z(confidence)
    if all(m == 1 for m in samples):
        return wilson_interval(k_total, m_total, confidence)
    p = k_total / m_total
    if p in (0.0, 1.0):
        return _wilson(p, len(samples), z)
    residuals = math.fsum((k - p * m) ** 2 for k, m in zip(passed, samples))
    deff = max(1.0, residuals / (m_total * p * (1.0 - p)))
    return _wilson(p, m_total / deff, z)


def clustered_standard_error(
    passed: Sequence[int], samples: Sequence[int], *, finite_cluster_correction: bool = False
) -> float:
    """The item-clustered standard error of pass@1: sqrt(sum((k_i - p*m_i)**2)) / sum(m_i).

    The variance ``clustered_interval`` uses; with ``finite_cluster_correction`` it is multiplied by
    C / (C - 1) (C items), which is inspect_ai's clustered ``stderr``.

    >>> round(clustered_standard_error([8, 0] * 25, [8] * 50), 6)
    0.070711
    >>> round(clustered_standard_error([8, 0] * 25, [8] * 50, finite_cluster_correction=True), 6)
    0.071429
    """
    k_total, m_total = _item_counts(passed, samples)
    p = k_total / m_total
    variance = math.fsum((k - p * m) ** 2 for k, m in zip(passed, samples)) / m_total**2
    if finite_cluster_correction:
        if len(samples) < 2:
            raise CourseError("the finite-cluster correction C / (C - 1) needs at least 2 items")
        variance *= len(samples) / (len(samples) - 1)
    return math.sqrt(variance)


def intra_class_correlation(passed: Sequence[int], samples: Sequence[int]) -> float:
    """rho: the share of the outcomes' variance that lies between items (ANOVA estimator, clamped to [0, 1]).

    0: an item's samples agree no more than samples of different items (all
    items equally hard); 1: every item is all-pass or all-fail. Needs at least
    two items, the same number m >= 2 of samples for each, and not every sample
    with one outcome (then rho is undefined).

    >>> intra_class_correlation([8, 0] * 25, [8] * 50)
    1.0
    >>> round(intra_class_correlation([4, 4, 3, 5], [8] * 4), 3)   # rates near 1/2 everywhere: no item effect
    0.0
    """
    k_total, m_total = _item_counts(passed, samples)
    m, n = samples[0], len(samples)
    if n < 2 or m < 2 or any(x != m for x in samples):
        raise CourseError("intra_class_correlation needs at least 2 items with the same number (>= 2) of samples each")
    p = k_total / m_total
    between = m * math.fsum((k / m - p) ** 2 for k in passed) / (n - 1)
    within = math.fsum(k * (1.0 - k / m) for k in passed) / (n * (m - 1))
    if between + (m - 1) * within == 0.0:
        raise CourseError("rho is undefined when every sample has the same outcome")
    return min(1.0, max(0.0, (between - within) / (between + (m - 1) * within)))


def design_effect(m: int, icc: float) -> float:
    """How many times larger the variance of a pass rate is with m samples per item than with m*N independent ones.

    ``1 + (m - 1) * icc`` (Kish 1965): the effective number of samples is
    ``N * m / design_effect``; with icc = 1 more samples per item add nothing.

    >>> design_effect(8, 0.0), design_effect(8, 1.0), design_effect(8, 0.3)
    (1.0, 8.0, 3.1)
    """
    _count("m", m)
    if m == 0:
        raise CourseError("m must be at least 1 sample per item")
    _unit("icc", icc)
    return 1.0 + (m - 1) * icc


def _unit(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        raise CourseError(f"{name} must be a number between 0 and 1, got {value!r}")
    return float(value)


# Up to this many items whose paired values differ, the sign-flip test enumerates all 2^k sign
# patterns (as the distribution of their sums, built item by item: at most 2^16 = 65,536 sums), so
# its p-value is exact; that is never more work than the 10,000 random flips of k >= 17 values
# it replaces. Beyond it, the p-value is Monte Carlo (standard error about 0.002 at p = 0.05).
EXACT_SIGN_FLIP_MAX = 16
# Per-item values are read as the nearest fraction with a denominator up to this: a pass rate of up
# to 1000 samples is then exactly k/m, so equal sums tie exactly in the enumeration.
_DENOMINATOR_MAX = 1_000_000


@dataclass(frozen=True)
class SignFlip:
    """A paired sign-flip test over items and the interval that agrees with it (``sign_flip_test``)."""

    p_value: float
    low: float  # the interval for mean(b) - mean(a): it excludes 0 exactly when p_value < 1 - confidence
    high: float
    exact: bool  # True: every sign pattern enumerated; False: Monte Carlo
    discordant: int  # k, the items whose values differ (only they carry information)


def sign_flip_test(
    a: Sequence[float], b: Sequence[float], *, seed: int, n_resamples: int = 10_000, confidence: float = 0.95
) -> SignFlip:
    """Two-sided sign-flip test of "no difference" between paired per-item values, with its interval.

    Under "the two runs are alike" each item's difference ``d_i = b_i - a_i`` is as likely to have
    either sign; the p-value is the share of sign patterns whose sum is at least as far from 0 as
    the observed one. With k <= EXACT_SIGN_FLIP_MAX discordant items every one of the 2^k patterns
    counts (exact); beyond, ``n_resamples`` random patterns from ``random.Random(seed)`` and the
    observed one, ``(1 + hits) / (1 + n_resamples)``. With 0/1 outcomes it is McNemar's exact test.

    The interval is ``mean(d) +- c / n`` over the n items, c the largest |sum| of the test's null
    distribution still reached with probability >= 1 - confidence: the changes the test, with the
    null's spread, would not reject. So it excludes 0 exactly when p < 1 - confidence (a bootstrap
    interval need not: with 5 discordant items it can exclude 0 while p = 0.0625).

    >>> t = sign_flip_test([0] * 5 + [1] * 15, [1] * 20, seed=0)   # 5 items up, none down: 2/2^5
    >>> t.p_value, t.exact, t.low, t.high
    (0.0625, True, 0.0, 0.5)
    >>> sign_flip_test([0.5, 0.25], [0.5, 0.25], seed=0)
    SignFlip(p_value=1.0, low=0.0, high=0.0, exact=True, discordant=0)
    """
    if len(a) != len(b) or not a:
        raise CourseError(f"paired values need equal, non-zero lengths, got {len(a)} and {len(b)}")
    if type(seed) is not int:
        raise CourseError(f"seed must be an integer, got {seed!r}")
    if type(n_resamples) is not int or n_resamples < 1:
        raise CourseError(f"n_resamples must be a positive integer, got {n_resamples!r}")
    _z(confidence)  # validates confidence
    alpha = round(1.0 - confidence, 12)  # (1 - 0.95 is 0.050000000000000044 in floats)
    n = len(a)
    if sum(y != x for x, y in zip(a, b)) <= EXACT_SIGN_FLIP_MAX:
        return _exact_sign_flip(a, b, alpha)
    diffs = [float(y) - float(x) for x, y in zip(a, b) if y != x]
    observed_sum = math.fsum(diffs)
    observed = abs(observed_sum)
    rng = random.Random(seed)
    sums = [observed]
    for _ in range(n_resamples):
        sums.append(abs(math.fsum(d if rng.random() < 0.5 else -d for d in diffs)))
    sums.sort(reverse=True)
    # ties count as "as far" (within 1e-12): the test stays conservative
    hits = sum(x >= observed - 1e-12 for x in sums)  # (the observed one included)
    p = hits / (1 + n_resamples)
    # the largest |sum| whose tail holds at least alpha of the draws (the smallest's holds all of them)
    crit = next(x for x in sums if _at_least(sums, x) >= alpha * (1 + n_resamples))
    return SignFlip(p, (observed_sum - crit) / n, (observed_sum + crit) / n, False, len(diffs))


def _at_least(sorted_desc: Sequence[float], t: float) -> int:
    """How many of the values (sorted largest first) are >= t - 1e-12."""
    lo, hi = 0, len(sorted_desc)
    while lo < hi:
        mid = (lo + hi) // 2
        if sorted_desc[mid] >= t - 1e-12:
            lo = mid + 1
        else:
            hi = mid
    return lo


def _exact_sign_flip(a: Sequence[float], b: Sequence[float], alpha: float) -> SignFlip:
    """Every sign pattern of the discordant items, as the exact distribution of their sum (in integer
    units of 1/L, L the common denominator of the values, so that equal sums tie exactly)."""
    pairs = [(_fraction(x), _fraction(y)) for x, y in zip(a, b) if y != x]
    unit = math.lcm(*(f.denominator for pair in pairs for f in pair)) if pairs else 1
    diffs = [int((y - x) * unit) for x, y in pairs]
    counts: dict[int, int] = {0: 1}  # sum -> how many sign patterns give it
    for d in diffs:
        step: dict[int, int] = {}
        for total, ways in counts.items():
            step[total + d] = step.get(total + d, 0) + ways
            step[total - d] = step.get(total - d, 0) + ways
        counts = step
    by_size: dict[int, int] = {}
    for total, ways in counts.items():
        by_size[abs(total)] = by_size.get(abs(total), 0) + ways
    tails: dict[int, int] = {}  # |s| -> patterns with |sum| >= |s|
    running = 0
    for size in sorted(by_size, reverse=True):
        running += by_size[size]
        tails[size] = running
    patterns = 2 ** len(diffs)
    observed = sum(diffs)
    p = Fraction(tails[abs(observed)], patterns)
    crit = max(size for size, tail in tails.items() if tail >= alpha * patterns)  # |sum| = 0 always qualifies
    n = len(a) * unit
    return SignFlip(float(p), float(Fraction(observed - crit, n)), float(Fraction(observed + crit, n)), True,
                    len(diffs))


def _fraction(x: float) -> Fraction:
    return Fraction(x).limit_denominator(_DENOMINATOR_MAX)


def paired_sign_flip(
    a: Sequence[float], b: Sequence[float], *, seed: int, n_resamples: int = 10_000
) -> float:
    """The p-value of ``sign_flip_test`` alone (exact for up to EXACT_SIGN_FLIP_MAX discordant items).

    Items are the unit: use it on per-item pass rates of multi-sample runs.

    >>> paired_sign_flip([0] * 10, [1] * 10, seed=0)   # exact: 2 of the 2^10 patterns
    0.001953125
    >>> paired_sign_flip([0.5, 0.25], [0.5, 0.25], seed=0)
    1.0
    """
    return sign_flip_test(a, b, seed=seed, n_resamples=n_resamples).p_value


# ---------------------------------------------------------------------------
# Several training seeds: the run itself is random.
# ---------------------------------------------------------------------------
def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the regularised incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 500):
        for numerator in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                          -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def _t_upper_tail(t: float, df: int) -> float:
    """P(T > t) for Student's t with df degrees of freedom, t >= 0: I_{df/(df+t^2)}(df/2, 1/2) / 2."""
    x, a, b = df / (df + t * t), df / 2.0, 0.5
    if x <= 0.0:
        return 0.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        ibeta = front * _beta_fraction(a, b, x) / a
    else:
        ibeta = 1.0 - front * _beta_fraction(b, a, 1.0 - x) / b
    return ibeta / 2.0


def _t_quantile(q: float, df: int) -> float:
    """The q quantile of Student's t distribution (q > 1/2), by bisection on its exact tail.

    >>> [round(_t_quantile(0.975, df), 3) for df in (1, 2, 4, 30)]
    [12.706, 4.303, 2.776, 2.042]
    """
    if not 0.5 < q < 1.0:
        raise CourseError(f"q must be strictly between 0.5 and 1, got {q!r}")
    _count("df", df)
    lo, hi = 0.0, 1.0
    while _t_upper_tail(hi, df) > 1.0 - q:
        hi *= 2.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        lo, hi = (mid, hi) if _t_upper_tail(mid, df) > 1.0 - q else (lo, mid)
    return (lo + hi) / 2.0


def between_seed_interval(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """A t interval for the mean of one figure measured once per training seed.

    ``mean ± t(df = S-1) · stdev / sqrt(S)``: the spread *between* seeds (the
    run's own randomness: initialisation, sampling, batch order) is the noise a
    claim "this recipe lifts pass@1 by X" must beat; a single seed's interval
    over items cannot show it. With 2 or 3 seeds t is large (12.7, 4.3): few
    seeds buy a wide interval, honestly.

    >>> lo, hi = between_seed_interval([0.062, 0.120, 0.110])    # the RL recipe's three seeds
    >>> f"{lo:+.3f} {hi:+.3f}"
    '+0.020 +0.174'
    """
    if len(values) < 2:
        raise CourseError(f"between-seed spread needs at least 2 seeds, got {len(values)}")
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise CourseError(f"seed values must be finite numbers, got {v!r}")
    _z(confidence)
    import statistics

    mean, sd = statistics.fmean(values), statistics.stdev(values)
    half = _t_quantile(0.5 + confidence / 2.0, len(values) - 1) * sd / math.sqrt(len(values))
    return mean - half, mean + half


# ---------------------------------------------------------------------------
# Planning: how many items, samples per item and seeds does a lift of X need?
#
# The model (docs/loops.md, "How many items, samples and seeds"): item i has a
# true pass rate under the baseline p_b,i (mean p_b) and under the candidate
# p_c,i (mean p_c = p_b + lift). Items differ in difficulty: Var(p_b,i) =
# rho * p_b(1-p_b) (rho = the intra-class correlation), likewise for p_c,i, and the
# two rates of one item are correlated by kappa (a hard item stays fairly hard).
# The baseline is sampled m times per item; the candidate is trained with S seeds,
# each sampled m times per item, and each seed shifts all items alike by u_s
# with Var(u_s) = seed_sd^2. The lift estimate D = mean over items of
# (candidate rate averaged over seeds - baseline rate), paired over items.
# ---------------------------------------------------------------------------
def _rate(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 < value < 1.0:
        raise CourseError(f"{name} must be a pass rate strictly between 0 and 1, got {value!r}")
    return float(value)


def lift_variance(
    p_base: float, p_cand: float, *, items: int, samples: int, seeds: int = 1,
    icc: float, item_correlation: float, seed_sd: float = 0.0,
) -> float:
    """Var(D) for the paired lift estimate D under the planning model above.

    ``(V_b + V_c - 2 C) / items + seed_sd**2 / seeds``, where
    ``V_b = p_b(1-p_b) · design_effect(m, rho) / m`` (one item's baseline rate from m samples),
    ``V_c = p_c(1-p_c) · design_effect(m·S, rho) / (m·S)`` (its candidate rate, m samples from each of S seeds),
    ``C = kappa · rho · sqrt(p_b(1-p_b) p_c(1-p_c))`` (what pairing the items removes).

    >>> round(lift_variance(0.5, 0.5, items=100, samples=1, icc=0.0, item_correlation=0.0), 6)   # two coins per item
    0.005
    >>> round(lift_variance(0.5, 0.5, items=100, samples=1, icc=1.0, item_correlation=1.0), 6)   # outcomes identical
    0.0
    """
    pb, pc = _rate("p_base", p_base), _rate("p_cand", p_cand)
    for name, value in (("items", items), ("samples", samples), ("seeds", seeds)):
        if _count(name, value) == 0:
            raise CourseError(f"{name} must be at least 1")
    rho, kappa = _unit("icc", icc), _unit("item_correlation", item_correlation)
    if isinstance(seed_sd, bool) or not isinstance(seed_sd, (int, float)) or not 0.0 <= seed_sd < 1.0:
        raise CourseError(f"seed_sd must be a number in [0, 1), got {seed_sd!r}")
    vb, vc = pb * (1.0 - pb), pc * (1.0 - pc)
    v_base = vb * design_effect(samples, rho) / samples
    v_cand = vc * design_effect(samples * seeds, rho) / (samples * seeds)
    shared = kappa * rho * math.sqrt(vb * vc)
    return max(0.0, v_base + v_cand - 2.0 * shared) / items + seed_sd**2 / seeds


def lift_power(
    p_base: float, lift: float, *, items: int, samples: int, seeds: int = 1, icc: float,
    item_correlation: float, seed_sd: float = 0.0, alpha: float = 0.05,
) -> float:
    """Chance that a two-sided test at level alpha detects a true lift (normal approximation).

    ``Phi(|lift|/sd - z) + Phi(-|lift|/sd - z)``, sd = sqrt(lift_variance), z = the 1 - alpha/2 quantile.

    >>> round(lift_power(0.3, 0.1, items=100, samples=1, icc=0.0, item_correlation=0.0), 3)
    0.32
    >>> round(lift_power(0.3, 0.1, items=100, samples=8, icc=0.2, item_correlation=0.8), 3)
    0.978
    """
    z = _z(1.0 - alpha)
    sd = math.sqrt(lift_variance(p_base, p_base + lift, items=items, samples=samples, seeds=seeds, icc=icc,
                                 item_correlation=item_correlation, seed_sd=seed_sd))
    if sd == 0.0:
        return 1.0 if lift else alpha
    phi = NormalDist().cdf
    return phi(abs(lift) / sd - z) + phi(-abs(lift) / sd - z)


def items_for_power(
    p_base: float, lift: float, *, power: float = 0.8, samples: int, seeds: int = 1, icc: float,
    item_correlation: float, seed_sd: float = 0.0, alpha: float = 0.05,
) -> int | None:
    """The fewest items for which ``lift_power`` reaches ``power``; None when no number of items can.

    More items shrink only the item part of the variance; the seed part,
    ``seed_sd**2 / seeds``, stays, so when it alone exceeds what the lift allows
    (``(lift / (z_alpha + z_power))**2``) only more seeds help.

    >>> items_for_power(0.3, 0.1, samples=1, icc=0.0, item_correlation=0.0)
    354
    >>> items_for_power(0.3, 0.1, samples=8, icc=0.2, item_correlation=0.8)
    50
    >>> items_for_power(0.3, 0.1, samples=8, icc=0.2, item_correlation=0.8, seed_sd=0.05) is None
    True
    """
    if isinstance(power, bool) or not isinstance(power, (int, float)) or not alpha < power < 1.0:
        raise CourseError(f"power must be a number between alpha ({alpha}) and 1, got {power!r}")
    if isinstance(lift, bool) or not isinstance(lift, (int, float)) or lift == 0 or not 0.0 < p_base + lift < 1.0:
        raise CourseError(f"lift must be non-zero and keep the candidate's rate inside (0, 1), got {lift!r}")
    z_a, z_b = _z(1.0 - alpha), NormalDist().inv_cdf(power)
    allowed = (lift / (z_a + z_b)) ** 2
    per_item = lift_variance(p_base, p_base + lift, items=1, samples=samples, seeds=seeds, icc=icc,
                             item_correlation=item_correlation, seed_sd=0.0)
    room = allowed - seed_sd**2 / seeds
    if room <= 0.0:
        return None
    n = max(1, math.ceil(per_item / room))  # the one-sided approximation; then the exact two-sided power decides

    def enough(items: int) -> bool:
        return lift_power(p_base, lift, items=items, samples=samples, seeds=seeds, icc=icc,
                          item_correlation=item_correlation, seed_sd=seed_sd, alpha=alpha) >= power

    # Power grows with the items: bisect between a count that falls short and one that suffices, so a
    # tiny lift (1e17 items) costs a hundred evaluations, not a walk of one item at a time.
    low, high = 0, n
    for _ in range(64):
        if enough(high):
            break
        low, high = high, 2 * high
    else:
        return None  # no count of items within 2**64 times the approximation: rounding has the last word
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if enough(middle) else (middle, high)
    return high


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.stats"))
