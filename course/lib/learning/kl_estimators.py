"""KL estimators under the microscope: k1, k2, k3 as a value, as a loss term and as a reward term, exactly.

Loop C pulls the policy pi back towards its reference pi0 with a KL penalty it can only
*estimate*: it sees the sampled tokens y ~ pi, not the whole distributions. With the
ratio r = pi0(y) / pi(y) the three estimators of Schulman (2020, "Approximating KL
divergence") are

    k1 = -log r                 k2 = 1/2 (log r)^2                k3 = (r - 1) - log r

and a fourth, TRL's default (``GRPOConfig.use_bias_correction_kl=True``): k3 multiplied by
the importance ratio rho = pi(y) / sg(pi(y)), sg a stop-gradient, so rho's value is 1 but
its gradient is rho * grad log pi ("k3-corrected"; off-policy TRL divides by pi_old instead).

Two different questions get two different answers, and the course keeps them apart:

* VALUE: is E_pi[k] = KL(pi || pi0)? k1, k3 and k3-corrected (the same value) yes:
  unbiased estimates, k3 never negative; k2 no (biased). k3's variance is below k1's only
  while pi is near pi0: far from it r = pi0/pi is unbounded and k3's variance can be many
  times k1's (``spread_table`` computes both exactly across a range of distances).
* GRADIENT: what does the penalty push the policy towards? That depends on WHERE the
  estimator goes.
    - in the LOSS (added to the loss and differentiated through log pi, the sampled y held
      fixed: no score-function term), the expected gradient is
        k1: 0 (pi cannot change its expected log-probability: E_pi[grad log pi] = 0)
        k2: grad KL(pi || pi0)   the reverse KL, the one the objective names
        k3: grad KL(pi0 || pi)   the FORWARD KL: a different objective
        k3-corrected: grad KL(pi || pi0)   the reverse KL again (its slope is k2's, -log r)
    - in the REWARD (subtracted from the reward, gradient by REINFORCE: k * grad log pi),
        k1: grad KL(pi || pi0)   the reverse KL
        (k2, k3 and k3-corrected there give neither KL's gradient; the tool prints what they give.)

On one token (a categorical policy) every statement above is an identity. On a sequence
of tokens (the two-step MDP of ``course.lib.learning.two_step``), an estimator summed over
tokens keeps its value properties (the chain rule of KL) and k1-in-the-reward stays the
exact reverse-KL gradient, but k2, k3 and k3-corrected per token in the loss see only each step's own
KL: they miss how an early choice changes which later-step KL the policy will pay for.
The same estimator applied once to the whole sequence (log r summed over its tokens)
restores the one-token identities. This module computes all of it by enumeration.

It owns the maths (pure, standard library, no printing): ``Token``/``Outcome`` (an
enumerable policy: every outcome with its probability and, per token, log pi, log pi0 and
grad log pi), ``categorical`` and ``two_step`` (the two policies), ``exact_table`` (the
exact expected value and gradient of every estimator in every place, beside both KLs and
their gradients), ``monte_carlo`` (the same from n seeded samples, with variances) and
``spread_table`` (each estimator's exact variance as pi moves away from pi0).
``python -m course.kl_estimators`` prints the tables.

>>> [round(estimator_value(k, math.log(0.5)), 6) for k in ESTIMATORS]   # r = 1/2
[0.693147, 0.240227, 0.193147, 0.193147]
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Sequence

from course.errors import CourseError
from course.lib.learning import policy_gradient as pg

ESTIMATORS: tuple[str, ...] = ("k1", "k2", "k3", "k3-corrected")
PLACES: tuple[str, ...] = ("loss", "reward")
FORMULAS: dict[str, str] = {
    "k1": "-log r",
    "k2": "1/2 (log r)^2",
    "k3": "(r - 1) - log r",
    "k3-corrected": "k3 * pi/sg(pi)",  # sg: stop-gradient, so the ratio's value is 1 (TRL's default)
}
# Which KL each estimator's gradient follows in expectation on one token, in each place (what
# ``exact_table`` finds by computation; the tests check it against finite differences of the KLs).
DIRECTIONS: dict[tuple[str, str], str] = {
    ("k1", "loss"): "0", ("k2", "loss"): "grad KL(pi||pi0)", ("k3", "loss"): "grad KL(pi0||pi)",
    ("k3-corrected", "loss"): "grad KL(pi||pi0)",
    ("k1", "reward"): "grad KL(pi||pi0)", ("k2", "reward"): "neither", ("k3", "reward"): "neither",
    ("k3-corrected", "reward"): "neither",
}

Vector = list[float]


# ---------------------------------------------------------------------------
# One token: the estimator's value and its slope in log pi
# ---------------------------------------------------------------------------
def estimator_value(name: str, log_r: float) -> float:
    """The estimate from one sample, log_r = log pi0(y) - log pi(y).

    >>> estimator_value("k3", 0.0), estimator_value("k1", 0.0)   # pi == pi0 at y: every estimate is 0
    (0.0, 0.0)
    """
    if name == "k1":
        return -log_r + 0.0  # (no -0.0)
    if name == "k2":
        return 0.5 * log_r * log_r
    if name in ("k3", "k3-corrected"):  # the corrected one is k3 times a ratio whose value is 1
        return math.expm1(log_r) - log_r  # (r - 1) - log r, with expm1 so r near 1 keeps its digits
    raise CourseError(f"unknown KL estimator {name!r}: choose one of {', '.join(ESTIMATORS)}")


def estimator_slope(name: str, log_r: float) -> float:
    """d k / d log pi(y), the sample y held fixed: what the loss's backward pass multiplies grad log pi by.

    log r = log pi0 - log pi, so d log r / d log pi = -1:
      k1 = -log r            -> +1
      k2 = 1/2 (log r)^2     -> -log r   (= log pi/pi0)
      k3 = r - 1 - log r     -> 1 - r
      k3-corrected = k3 * rho, rho = pi/sg(pi) (value 1, d rho / d log pi = rho = 1), by the product rule
                             -> (1 - r) + k3 = -log r: k2's slope, so the reverse KL's gradient in the loss

    >>> estimator_slope("k1", 0.3), estimator_slope("k2", 0.3), round(estimator_slope("k3", math.log(2.0)), 12)
    (1.0, -0.3, -1.0)
    >>> round(estimator_slope("k3-corrected", math.log(2.0)), 12) == round(-math.log(2.0), 12)
    True
    """
    if name == "k1":
        return 1.0
    if name == "k2":
        return -log_r + 0.0  # (no -0.0)
    if name == "k3":
        return -math.expm1(log_r)
    if name == "k3-corrected":
        return estimator_slope("k3", log_r) + estimator_value("k3", log_r)  # k3' * rho + k3 * rho', rho = 1
    raise CourseError(f"unknown KL estimator {name!r}: choose one of {', '.join(ESTIMATORS)}")


# ---------------------------------------------------------------------------
# An enumerable policy: every outcome, its probability, its tokens
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Token:
    """One generated token of an outcome: its log-probabilities and the score function of the policy."""

    logp: float  # log pi(token | prefix)
    logp_ref: float  # log pi0(token | prefix)
    grad_logp: tuple[float, ...]  # d log pi(token | prefix) / d theta, one entry per parameter


@dataclass(frozen=True)
class Outcome:
    """One complete sample (a token of the categorical policy; a path a1, a2 of the two-step MDP)."""

    label: str
    tokens: tuple[Token, ...]

    @property
    def logp(self) -> float:
        return math.fsum(t.logp for t in self.tokens)

    @property
    def logp_ref(self) -> float:
        return math.fsum(t.logp_ref for t in self.tokens)

    @property
    def grad_logp(self) -> Vector:
        return _vsum([list(t.grad_logp) for t in self.tokens], len(self.tokens[0].grad_logp))


@dataclass(frozen=True)
class Enumerated:
    """A policy small enough to list: its parameters' names and every outcome."""

    name: str
    parameters: tuple[str, ...]
    outcomes: tuple[Outcome, ...]


def categorical(logits: Sequence[float], ref_logits: Sequence[float]) -> Enumerated:
    """pi = softmax(logits) over len(logits) tokens, pi0 = softmax(ref_logits); one token per sample.

    >>> pol = categorical([0.0, 0.0], [0.0, 0.0])
    >>> [o.label for o in pol.outcomes], pol.outcomes[0].tokens[0].grad_logp
    (['y=0', 'y=1'], (0.5, -0.5))
    """
    if len(logits) != len(ref_logits) or len(logits) < 2:
        raise CourseError(f"the policy and the reference need the same number (>= 2) of logits, got {len(logits)} and "
                          f"{len(ref_logits)}")
    lp, lq = pg.log_softmax(logits), pg.log_softmax(ref_logits)
    outcomes = tuple(
        Outcome(f"y={k}", (Token(lp[k], lq[k], tuple(pg.grad_log_prob(logits, k))),)) for k in range(len(logits))
    )
    return Enumerated("categorical", tuple(f"theta[{k}]" for k in range(len(logits))), outcomes)


def two_step(theta1: Sequence[float], theta2: Sequence[Sequence[float]], ref1: Sequence[float],
             ref2: Sequence[Sequence[float]]) -> Enumerated:
    """The two-step MDP's policy (``course.lib.learning.two_step``): a1 ~ softmax(theta1), then
    a2 ~ softmax(theta2[a1]); pi0 the same with ref1, ref2. Six parameters, four paths of two tokens.

    >>> pol = two_step([0.0, 0.0], [[0.0, 0.0], [0.0, 0.0]], [0.0, 0.0], [[0.0, 0.0], [0.0, 0.0]])
    >>> [o.label for o in pol.outcomes], pol.outcomes[1].grad_logp
    (['a1=0,a2=0', 'a1=0,a2=1', 'a1=1,a2=0', 'a1=1,a2=1'], [0.5, -0.5, -0.5, 0.5, 0.0, 0.0])
    """
    params = ("theta1[0]", "theta1[1]", "theta2[0][0]", "theta2[0][1]", "theta2[1][0]", "theta2[1][1]")
    outcomes = []
    for a1 in range(2):
        g1 = pg.grad_log_prob(theta1, a1) + [0.0] * 4
        t1 = Token(pg.log_softmax(theta1)[a1], pg.log_softmax(ref1)[a1], tuple(g1))
        for a2 in range(2):
            g2 = [0.0] * 6
            g2[2 + 2 * a1: 4 + 2 * a1] = pg.grad_log_prob(theta2[a1], a2)  # only the row of the state a1 led to
            t2 = Token(pg.log_softmax(theta2[a1])[a2], pg.log_softmax(ref2[a1])[a2], tuple(g2))
            outcomes.append(Outcome(f"a1={a1},a2={a2}", (t1, t2)))
    return Enumerated("two-step MDP", params, tuple(outcomes))


# ---------------------------------------------------------------------------
# What one sample contributes: the value, and the gradient of the penalty for each place
# ---------------------------------------------------------------------------
def sample_value(name: str, outcome: Outcome, *, per_token: bool = True) -> float:
    """The estimate from one sample: summed over its tokens (``per_token``, what the course's loop
    does), or applied once to the whole sequence's log r."""
    if per_token:
        return math.fsum(estimator_value(name, t.logp_ref - t.logp) for t in outcome.tokens)
    return estimator_value(name, outcome.logp_ref - outcome.logp)


def sample_gradient(name: str, place: str, outcome: Outcome, *, per_token: bool = True) -> Vector:
    """The gradient of the penalty that one sample contributes (the direction the loss descends).

    loss:   the estimate is a term of the loss, differentiated through log pi with the sample
            held fixed:  sum_t slope(log r_t) * grad log pi_t  (per token) or
            slope(log r) * grad log pi(y) (per sequence).
    reward: the estimate is subtracted from the reward and REINFORCE differentiates it:
            k(y) * grad log pi(y) (the whole sequence's score function, as the reward is the sequence's).
    """
    n = len(outcome.tokens[0].grad_logp)
    if place == "loss":
        if per_token:
            return _vsum([_scale(estimator_slope(name, t.logp_ref - t.logp), t.grad_logp) for t in outcome.tokens], n)
        return _scale(estimator_slope(name, outcome.logp_ref - outcome.logp), outcome.grad_logp)
    if place == "reward":
        return _scale(sample_value(name, outcome, per_token=per_token), outcome.grad_logp)
    raise CourseError(f"unknown place {place!r} for the KL estimate: choose loss or reward")


# ---------------------------------------------------------------------------
# Exact: the two KLs, their gradients, and every estimator's expectation
# ---------------------------------------------------------------------------
def probabilities(pol: Enumerated) -> tuple[Vector, Vector]:
    """pi(outcome) and pi0(outcome) for every outcome, in order."""
    return [math.exp(o.logp) for o in pol.outcomes], [math.exp(o.logp_ref) for o in pol.outcomes]


def kl_reverse(pol: Enumerated) -> float:
    """KL(pi || pi0) = sum_y pi(y) log(pi(y) / pi0(y)): what the objective E[r] - beta KL names."""
    p, _ = probabilities(pol)
    return math.fsum(pi * (o.logp - o.logp_ref) for pi, o in zip(p, pol.outcomes))


def kl_forward(pol: Enumerated) -> float:
    """KL(pi0 || pi) = sum_y pi0(y) log(pi0(y) / pi(y)): the other direction (mass-covering)."""
    _, q = probabilities(pol)
    return math.fsum(qi * (o.logp_ref - o.logp) for qi, o in zip(q, pol.outcomes))


def grad_kl_reverse(pol: Enumerated) -> Vector:
    """grad KL(pi || pi0) = sum_y pi(y) log(pi/pi0)(y) grad log pi(y), exactly (the term
    sum_y pi grad log(pi/pi0) = sum_y grad pi = 0 drops out)."""
    p, _ = probabilities(pol)
    return _vsum(
        [_scale(pi * (o.logp - o.logp_ref), o.grad_logp) for pi, o in zip(p, pol.outcomes)], len(pol.parameters)
    )


def grad_kl_forward(pol: Enumerated) -> Vector:
    """grad KL(pi0 || pi) = -sum_y pi0(y) grad log pi(y), exactly (pi0 does not move)."""
    _, q = probabilities(pol)
    return _vsum([_scale(-qi, o.grad_logp) for qi, o in zip(q, pol.outcomes)], len(pol.parameters))


@dataclass(frozen=True)
class Row:
    """One estimator in one place: its exact expected value and expected gradient."""

    estimator: str
    place: str  # "loss" or "reward"
    per_token: bool
    value: float  # E_pi[k]
    gradient: tuple[float, ...]  # E_pi[the sample's gradient of the penalty]
    matches: str  # which exact gradient it equals: "0", "grad KL(pi||pi0)", "grad KL(pi0||pi)" or "neither"


@dataclass(frozen=True)
class ExactTable:
    """Everything exact about one enumerable policy."""

    policy: str
    parameters: tuple[str, ...]
    kl_reverse: float
    kl_forward: float
    grad_kl_reverse: tuple[float, ...]
    grad_kl_forward: tuple[float, ...]
    rows: tuple[Row, ...]


def expectation(pol: Enumerated, f) -> Vector:
    """sum_y pi(y) f(y) for a vector-valued f, by enumeration."""
    p, _ = probabilities(pol)
    return _vsum([_scale(pi, f(o)) for pi, o in zip(p, pol.outcomes)], len(f(pol.outcomes[0])))


def exact_table(pol: Enumerated, *, per_token: bool = True, tol: float = 1e-9) -> ExactTable:
    """The exact expected value and gradient of k1, k2, k3 in the loss and in the reward.

    ``matches`` is computed, never assumed: the row's gradient is compared with 0 and with each KL's
    exact gradient (largest absolute difference below ``tol``).

    >>> t = exact_table(categorical([1.0, 0.0, -1.0], [0.0, 0.0, 0.0]))
    >>> [(r.estimator, r.place, r.matches) for r in t.rows]  # doctest: +NORMALIZE_WHITESPACE
    [('k1', 'loss', '0'), ('k2', 'loss', 'grad KL(pi||pi0)'), ('k3', 'loss', 'grad KL(pi0||pi)'),
     ('k3-corrected', 'loss', 'grad KL(pi||pi0)'), ('k1', 'reward', 'grad KL(pi||pi0)'), ('k2', 'reward', 'neither'),
     ('k3', 'reward', 'neither'), ('k3-corrected', 'reward', 'neither')]
    """
    rev, fwd = grad_kl_reverse(pol), grad_kl_forward(pol)
    rows = []
    for place in PLACES:
        for name in ESTIMATORS:
            value = expectation(pol, lambda o: [sample_value(name, o, per_token=per_token)])[0]
            grad = expectation(pol, lambda o: sample_gradient(name, place, o, per_token=per_token))
            rows.append(Row(name, place, per_token, value, tuple(grad), _which(grad, rev, fwd, tol)))
    return ExactTable(pol.name, pol.parameters, kl_reverse(pol), kl_forward(pol), tuple(rev), tuple(fwd), tuple(rows))


def _which(grad: Sequence[float], rev: Sequence[float], fwd: Sequence[float], tol: float) -> str:
    if max_abs_diff(grad, [0.0] * len(grad)) < tol:
        return "0"
    if max_abs_diff(grad, rev) < tol:
        return "grad KL(pi||pi0)"
    if max_abs_diff(grad, fwd) < tol:
        return "grad KL(pi0||pi)"
    return "neither"


def max_abs_diff(a: Sequence[float], b: Sequence[float]) -> float:
    """The largest |a_i - b_i|: how far apart two gradients are, in the worst coordinate."""
    return max(abs(x - y) for x, y in zip(a, b))


# ---------------------------------------------------------------------------
# Spread: each estimator's exact variance as pi moves away from pi0
# ---------------------------------------------------------------------------
SPREAD_SCALES: tuple[float, ...] = (0.25, 0.5, 1.0, 2.0, 4.0)
MAX_LOGIT_SPAN = 50.0  # beyond it a probability is below e^-50 and every estimate is a rounding error


@dataclass(frozen=True)
class SpreadRow:
    """Every estimator's exact per-sample variance under pi at one distance from pi0 (one token)."""

    scale: float  # pi = softmax(ref + scale * (logits - ref)): 0 would be pi0, 1 the policy given
    kl_reverse: float
    value_var: tuple[float, ...]  # Var_pi[k(y)], in ESTIMATORS order
    loss_grad_var: tuple[float, ...]  # trace of Cov_pi[k's gradient in the loss from one sample], same order


def variance(pol: Enumerated, f) -> float:
    """The trace of Cov_pi[f(y)] for a vector-valued f, exactly (two passes: the mean, then the squares)."""
    p, _ = probabilities(pol)
    mean = expectation(pol, f)
    return math.fsum(pi * math.fsum((x - m) ** 2 for x, m in zip(f(o), mean)) for pi, o in zip(p, pol.outcomes))


def spread_table(logits: Sequence[float], ref_logits: Sequence[float],
                 scales: Sequence[float] = SPREAD_SCALES) -> list[SpreadRow]:
    """Exact variances of every estimator on the categorical policies between pi0 and beyond ``logits``.

    Scales whose logits would span more than MAX_LOGIT_SPAN are left out. Near pi0 k3's value
    varies less than k1's; far from it r = pi0/pi is unbounded on the tokens pi rarely draws, and
    k3's variance overtakes k1's (on two tokens, pi = [.99, .01] and pi0 = [.01, .99]: 79.8 against 0.84).

    >>> rows = spread_table([1.0, 0.0], [0.0, 0.0], scales=(0.5, 8.0))
    >>> [r.value_var[2] < r.value_var[0] for r in rows]   # k3 below k1 near pi0, above it far away
    [True, False]
    """
    rows = []
    for t in scales:
        theta = [q + t * (x - q) for x, q in zip(logits, ref_logits)]
        if max(theta) - min(theta) > MAX_LOGIT_SPAN:
            continue
        pol = categorical(theta, ref_logits)
        rows.append(SpreadRow(
            t, kl_reverse(pol),
            tuple(variance(pol, lambda o, k=k: [sample_value(k, o)]) for k in ESTIMATORS),
            tuple(variance(pol, lambda o, k=k: sample_gradient(k, "loss", o)) for k in ESTIMATORS),
        ))
    return rows


# ---------------------------------------------------------------------------
# Monte Carlo: what n samples from pi say, and how much they scatter
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class MCRow:
    """One estimator in one place from n samples (the same draws for every row: common random numbers)."""

    estimator: str
    place: str
    n: int
    value_mean: float
    value_var: float  # per-sample variance of the estimate (sample variance, n - 1)
    value_se: float  # sqrt(value_var / n): the standard error of value_mean
    grad_error: float  # largest |mean sampled gradient - exact expected gradient| over the parameters
    grad_var: float  # per-sample variance of the gradient, summed over parameters (trace of the covariance)
    grad_se: float  # sqrt(grad_var / n)


def draw(pol: Enumerated, n: int, rng: random.Random) -> list[Outcome]:
    """n outcomes sampled from pi with ``rng`` (seeded by the caller)."""
    p, _ = probabilities(pol)
    return [pol.outcomes[pg.sample_action(p, rng)] for _ in range(n)]


def monte_carlo(pol: Enumerated, sizes: Sequence[int], seed: int, *, per_token: bool = True) -> list[MCRow]:
    """For each n in ``sizes``: n fresh samples from pi (stream seeded by ``seed`` and n), every
    estimator in every place on those same samples, against the exact expectations.

    >>> rows = monte_carlo(categorical([1.0, 0.0], [0.0, 0.0]), [4000], seed=0)
    >>> [r.value_var < s.value_var for r, s in zip(rows[2:3], rows[0:1])]   # k3's spread below k1's
    [True]
    """
    exact = exact_table(pol, per_token=per_token)
    out = []
    for n in sizes:
        if n < 2:
            raise CourseError(f"a Monte-Carlo sample size must be at least 2 (a variance needs two draws), got {n}")
        samples = draw(pol, n, random.Random(f"kl-estimators:{seed}:{n}"))
        for row in exact.rows:
            values = [sample_value(row.estimator, o, per_token=per_token) for o in samples]
            grads = [sample_gradient(row.estimator, row.place, o, per_token=per_token) for o in samples]
            v_mean, v_var = _mean_var(values)
            g_stats = [_mean_var([g[j] for g in grads]) for j in range(len(pol.parameters))]
            g_mean = [m for m, _ in g_stats]
            g_var = math.fsum(v for _, v in g_stats)
            out.append(MCRow(row.estimator, row.place, n, v_mean, v_var, math.sqrt(v_var / n),
                             max_abs_diff(g_mean, row.gradient), g_var, math.sqrt(g_var / n)))
    return out


def _mean_var(xs: Sequence[float]) -> tuple[float, float]:
    m = math.fsum(xs) / len(xs)
    return m, math.fsum((x - m) ** 2 for x in xs) / (len(xs) - 1)


def _scale(c: float, v: Sequence[float]) -> Vector:
    return [c * x + 0.0 for x in v]  # + 0.0: no -0.0 in printed tables


def _vsum(vs: Sequence[Sequence[float]], n: int) -> Vector:
    return [math.fsum(v[j] for v in vs) + 0.0 for j in range(n)]


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.learning.kl_estimators"))
