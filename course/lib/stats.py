"""The statistics every course tool uses, in one pure, standard-library module.

One public function per concept, each with a doctested example; bad arguments
raise ``CourseError`` (never a silent NaN):

  * ``wilson_interval(successes, n)``      how sure is one pass rate?
  * ``mcnemar_exact(b, c)``                 are two paired pass rates different, or is it noise?
  * ``paired_difference_interval(...)``     a 95 % interval for that paired difference (Newcombe)
  * ``paired_bootstrap(a, b, seed=...)``    the same question answered by resampling, seeded
  * ``pass_at_k(n, c, k)``                  chance that at least one of k samples passes (unbiased)
  * ``pass_hat_k(n, c, k)``                 chance that all k samples pass (reliability)

Nothing here reads files or keeps state; ``course.eval``, ``course.gate`` and
``course.selection_demo`` call these functions and print what they return.
Check a value by hand with e.g. ``python -c "from course.lib.stats import *; print(wilson_interval(23, 100))"``.
"""

from __future__ import annotations

import math
import random
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
    z = _z(confidence)
    p = successes / n
    z2n = z * z / n
    centre = (p + z2n / 2.0) / (1.0 + z2n)
    half = z * math.sqrt(p * (1.0 - p) / n + z2n / (4.0 * n)) / (1.0 + z2n)
    # At 0 or n passes one end is exactly 0 or 1; say so instead of printing 1e-17.
    lo = 0.0 if successes == 0 else max(0.0, centre - half)
    hi = 1.0 if successes == n else min(1.0, centre + half)
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


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.stats"))
