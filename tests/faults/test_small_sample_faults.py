"""The gate's small-sample statistics: faults once seen, each pinned so it cannot come back.

With 5 items changed (of 100, 8 samples each) the sign-flip p-value was a Monte-Carlo 0.0635 where the
exact one is 2/2^5 = 0.0625, and the percentile-bootstrap interval shown beside it (+1.0 to +10.0 points)
excluded 0 while p > 0.05: the screen said "significant" and "not significant" at once.
"""

from __future__ import annotations

from course.lib.stats import paired_bootstrap, sign_flip_test

BASE = [0.0] * 5 + [0.5] * 95
CAND = [1.0] * 5 + [0.5] * 95


def test_five_changed_items_get_the_exact_sign_flip_p_value() -> None:
    t = sign_flip_test(BASE, CAND, seed=0)
    assert t.exact and t.discordant == 5 and t.p_value == 2 / 2**5


def test_the_interval_beside_the_p_value_does_not_call_five_changed_items_significant() -> None:
    t = sign_flip_test(BASE, CAND, seed=0)
    assert t.p_value >= 0.05 and t.low <= 0.0 <= t.high
    lo, _ = paired_bootstrap(BASE, CAND, seed=0)  # the interval the gate showed before: it disagrees
    assert lo > 0.0
