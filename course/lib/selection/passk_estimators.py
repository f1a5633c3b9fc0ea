"""pass@k three ways, side by side: the plug-in, the first k samples, and the unbiased estimator.

``course.passk_estimators`` prints what this computes. One item whose samples pass with probability
p; n samples drawn, c of them passed; the quantity wanted is pass@k = 1 - (1 - p)^k, the chance that
at least one of k fresh samples passes. Three estimates from the same n samples:

  * plug-in    ``1 - (1 - c/n)^k`` (``course.lib.stats.plug_in_pass_at_k``): put the observed rate into the
               formula. Biased *low* for k >= 2: ``(1 - x)^k`` is convex, so by Jensen's inequality
               E[(1 - p̂)^k] >= (1 - p)^k.
  * first-k    1 if any of the first k samples passed: unbiased (it *is* one draw of the event),
               but it throws away n - k samples, so its variance is q(1 - q), q = pass@k, whatever n.
  * unbiased   ``1 - C(n-c, k) / C(n, k)`` (Chen et al. 2021; ``course.lib.stats.pass_at_k``): the
               average of first-k over every k-subset of the n samples, so unbiased with the least
               variance of all unbiased estimators built from c (Rao-Blackwell).

``exact_moments`` sums over the binomial distribution of c (no randomness); ``simulate`` draws
samples from ``random.Random(seed)`` and measures all three on the same draws.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Callable, Sequence

from course.errors import CourseError
from course.lib.stats import pass_at_k
from course.lib.stats import plug_in_pass_at_k as plug_in

ESTIMATORS = ("plug_in", "first_k", "unbiased")


def truth(p: float, k: int) -> float:
    """pass@k of an item whose samples pass with probability p: ``1 - (1 - p)^k``."""
    return 1.0 - (1.0 - p) ** k


@dataclass(frozen=True)
class Moments:
    mean: float
    variance: float

    def bias(self, target: float) -> float:
        return self.mean - target


def _binomial_moments(n: int, p: float, value: Callable[[int], float]) -> Moments:
    weights = [math.comb(n, c) * p**c * (1.0 - p) ** (n - c) for c in range(n + 1)]
    mean = math.fsum(w * value(c) for c, w in enumerate(weights))
    second = math.fsum(w * value(c) ** 2 for c, w in enumerate(weights))
    return Moments(mean, max(0.0, second - mean * mean))


def exact_moments(n: int, k: int, p: float) -> dict[str, Moments]:
    """Mean and variance of each estimator, summed exactly over c ~ Binomial(n, p) (first-k: Bernoulli(pass@k)).

    >>> m = exact_moments(10, 5, 0.2)
    >>> round(m["unbiased"].bias(truth(0.2, 5)), 12), m["plug_in"].bias(truth(0.2, 5)) < 0
    (0.0, True)
    """
    _check(n, k, p)
    q = truth(p, k)
    return {
        "plug_in": _binomial_moments(n, p, lambda c: plug_in(n, c, k)),
        "first_k": Moments(q, q * (1.0 - q)),
        "unbiased": _binomial_moments(n, p, lambda c: pass_at_k(n, c, k)),
    }


def simulate(n: int, ks: Sequence[int], p: float, *, reps: int, seed: int) -> dict[int, dict[str, Moments]]:
    """Monte-Carlo mean and variance of each estimator for each k, all from the same ``reps`` draws of n samples."""
    for k in ks:
        _check(n, k, p)
    if type(reps) is not int or reps < 2:
        raise CourseError(f"reps must be an integer >= 2, got {reps!r}")
    rng = random.Random(seed)
    values: dict[int, dict[str, list[float]]] = {k: {e: [] for e in ESTIMATORS} for k in ks}
    for _ in range(reps):
        outcomes = [rng.random() < p for _ in range(n)]
        c = sum(outcomes)
        for k in ks:
            v = values[k]
            v["plug_in"].append(plug_in(n, c, k))
            v["first_k"].append(1.0 if any(outcomes[:k]) else 0.0)
            v["unbiased"].append(pass_at_k(n, c, k))
    out: dict[int, dict[str, Moments]] = {}
    for k, by_estimator in values.items():
        out[k] = {}
        for name, xs in by_estimator.items():
            mean = math.fsum(xs) / reps
            out[k][name] = Moments(mean, math.fsum((x - mean) ** 2 for x in xs) / (reps - 1))
    return out


def table(
    ns: Sequence[int], ks: Sequence[int], ps: Sequence[float], *, reps: int, seed: int
) -> list[dict[str, object]]:
    """One row per (p, n, k <= n): the truth, and per estimator the exact and the simulated bias and sd."""
    rows: list[dict[str, object]] = []
    for p in ps:
        for n in ns:
            usable = [k for k in ks if k <= n]
            if not usable:
                continue
            # One seed per (p, n) cell, derived from the run's seed: a cell's numbers do not change
            # when other cells are added to the table.
            cell_seed = seed * 1_000_003 + n * 1_009 + round(p * 1_000_000)
            mc = simulate(n, usable, p, reps=reps, seed=cell_seed)
            for k in usable:
                exact, target = exact_moments(n, k, p), truth(p, k)
                row: dict[str, object] = {"p": p, "n": n, "k": k, "pass_at_k": target}
                for e in ESTIMATORS:
                    row[e] = {"bias_exact": exact[e].bias(target), "sd_exact": math.sqrt(exact[e].variance),
                              "bias_mc": mc[k][e].bias(target), "sd_mc": math.sqrt(mc[k][e].variance),
                              "bias_mc_se": math.sqrt(mc[k][e].variance / reps)}
                rows.append(row)
    return rows


def _check(n: int, k: int, p: float) -> None:
    if type(n) is not int or type(k) is not int or not 1 <= k <= n:
        raise CourseError(f"need integers 1 <= k <= n, got n={n!r}, k={k!r}")
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
        raise CourseError(f"p must be a probability, got {p!r}")


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.selection.passk_estimators"))
