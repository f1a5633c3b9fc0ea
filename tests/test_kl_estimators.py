"""The KL microscope (course.lib.learning.kl_estimators, python -m course.kl_estimators): every identity the
course teaches about k1, k2, k3 pinned exactly, on fixed and on random policies.

The references are computed independently here: the KLs by course.lib.learning.policy_gradient.kl_divergence,
their gradients by central finite differences of that function, never by the module under test.
"""

from __future__ import annotations

import json
import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from course.lib.learning import kl_estimators as kl
from course.lib.learning import policy_gradient as pg

LOGITS, REF = [1.0, 0.5, -0.5, -1.0], [0.0, 0.0, 0.0, 0.0]
THETA1, THETA2, R1, R2 = [0.5, -0.5], [[1.5, 0.0], [-0.5, 0.0]], [0.0, 0.0], [[0.0, 0.0], [0.0, 0.0]]
TOL = 1e-9
logits = st.lists(st.floats(-3.0, 3.0, allow_nan=False), min_size=2, max_size=5)


def finite_difference(f, theta, h=1e-5):  # type: ignore[no-untyped-def]
    out = []
    for j in range(len(theta)):
        up, down = list(theta), list(theta)
        up[j] += h
        down[j] -= h
        out.append((f(up) - f(down)) / (2 * h))
    return out


def fd_grads(theta, ref):  # type: ignore[no-untyped-def]
    rev = finite_difference(lambda t: pg.kl_divergence(pg.softmax(t), pg.softmax(ref)), theta)
    fwd = finite_difference(lambda t: pg.kl_divergence(pg.softmax(ref), pg.softmax(t)), theta)
    return rev, fwd


def row(table: kl.ExactTable, name: str, place: str) -> kl.Row:
    return next(r for r in table.rows if r.estimator == name and r.place == place)


def test_the_exact_kl_gradients_equal_finite_differences_of_the_kl_itself() -> None:
    pol = kl.categorical(LOGITS, REF)
    rev, fwd = fd_grads(LOGITS, REF)
    assert kl.max_abs_diff(kl.grad_kl_reverse(pol), rev) < 1e-8
    assert kl.max_abs_diff(kl.grad_kl_forward(pol), fwd) < 1e-8
    assert kl.kl_reverse(pol) == pytest.approx(pg.kl_divergence(pg.softmax(LOGITS), pg.softmax(REF)), abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(logits, st.randoms(use_true_random=False))
def test_on_a_categorical_policy_k1_and_k3_are_unbiased_values_and_k2_is_not(theta, rnd) -> None:
    ref = [rnd.uniform(-3, 3) for _ in theta]
    t = kl.exact_table(kl.categorical(theta, ref))
    for place in kl.PLACES:
        assert row(t, "k1", place).value == pytest.approx(t.kl_reverse, abs=TOL)
        assert row(t, "k3", place).value == pytest.approx(t.kl_reverse, abs=TOL)
    # k2 = 1/2 (log r)^2 is not KL in general; it is when log r is small (second order)
    if t.kl_reverse > 0.05:
        assert abs(row(t, "k2", "loss").value - t.kl_reverse) > 1e-6


@settings(max_examples=60, deadline=None)
@given(logits, st.randoms(use_true_random=False))
def test_on_a_categorical_policy_the_expected_gradients_are_zero_reverse_forward_and_reverse(theta, rnd) -> None:
    ref = [rnd.uniform(-3, 3) for _ in theta]
    t = kl.exact_table(kl.categorical(theta, ref))
    rev, fwd = fd_grads(theta, ref)
    assert kl.max_abs_diff(row(t, "k1", "loss").gradient, [0.0] * len(theta)) < TOL  # k1 in the loss: nothing
    assert kl.max_abs_diff(row(t, "k2", "loss").gradient, rev) < 1e-7  # k2 in the loss: reverse KL
    assert kl.max_abs_diff(row(t, "k3", "loss").gradient, fwd) < 1e-7  # k3 in the loss: FORWARD KL
    assert kl.max_abs_diff(row(t, "k1", "reward").gradient, rev) < 1e-7  # k1 in the reward: reverse KL
    assert kl.max_abs_diff(row(t, "k3-corrected", "loss").gradient, rev) < 1e-7  # TRL's default: reverse KL
    assert row(t, "k3-corrected", "loss").value == pytest.approx(t.kl_reverse, abs=TOL)


def test_the_stated_direction_of_every_estimator_is_the_one_computed() -> None:
    t = kl.exact_table(kl.categorical(LOGITS, REF))
    assert {(r.estimator, r.place): r.matches for r in t.rows} == kl.DIRECTIONS


def test_k3_corrected_is_trls_bias_corrected_kl_differentiated_by_torch() -> None:
    """TRL's formula (grpo_trainer.py): per_token_kl = (exp(ref - logp) - (ref - logp) - 1) * exp(logp - logp.detach());
    its derivative in log pi, by autograd, is the microscope's slope; its value is k3's."""
    torch = pytest.importorskip("torch")
    logp = torch.tensor([-0.3, -1.7, -4.0, -0.01], dtype=torch.float64, requires_grad=True)
    ref = torch.tensor([-1.2, -0.4, -0.05, -0.01], dtype=torch.float64)
    per_token_kl = (torch.exp(ref - logp) - (ref - logp) - 1) * torch.exp(logp - logp.detach())
    (grad,) = torch.autograd.grad(per_token_kl.sum(), logp)
    for j in range(4):
        log_r = float(ref[j] - logp.detach()[j])
        assert kl.estimator_slope("k3-corrected", log_r) == pytest.approx(float(grad[j]), abs=1e-12)
        assert kl.estimator_value("k3-corrected", log_r) == pytest.approx(float(per_token_kl.detach()[j]), abs=1e-12)
        assert kl.estimator_slope("k3-corrected", log_r) != pytest.approx(kl.estimator_slope("k3", log_r), abs=1e-3) \
            or log_r == 0.0


def test_k3_in_the_loss_is_not_the_reverse_kl_gradient_the_objective_names() -> None:
    t = kl.exact_table(kl.categorical(LOGITS, REF))
    assert row(t, "k3", "loss").matches == "grad KL(pi0||pi)"
    assert kl.max_abs_diff(row(t, "k3", "loss").gradient, t.grad_kl_reverse) > 0.05


def test_in_the_reward_k2_and_k3_give_neither_kl_gradient() -> None:
    t = kl.exact_table(kl.categorical(LOGITS, REF))
    assert row(t, "k2", "reward").matches == row(t, "k3", "reward").matches == "neither"


def test_at_pi_equal_to_pi0_every_estimate_and_every_expected_gradient_is_zero() -> None:
    t = kl.exact_table(kl.categorical([0.3, -0.2, 0.9], [0.3, -0.2, 0.9]))
    assert all(r.value == pytest.approx(0.0, abs=TOL) and r.matches == "0" for r in t.rows)


def test_on_the_two_step_mdp_per_token_k1_and_k3_sum_to_unbiased_values_of_the_sequence_kl() -> None:
    pol = kl.two_step(THETA1, THETA2, R1, R2)
    t = kl.exact_table(pol, per_token=True)
    by_paths = math.fsum(math.exp(o.logp) * (o.logp - o.logp_ref) for o in pol.outcomes)
    assert t.kl_reverse == pytest.approx(by_paths, abs=1e-12)
    assert row(t, "k1", "loss").value == pytest.approx(t.kl_reverse, abs=TOL)
    assert row(t, "k3", "loss").value == pytest.approx(t.kl_reverse, abs=TOL)
    assert row(t, "k1", "reward").matches == "grad KL(pi||pi0)"
    assert row(t, "k1", "loss").matches == "0"


def test_on_the_two_step_mdp_per_token_k2_in_the_loss_misses_how_step_one_changes_the_kl_to_come() -> None:
    t = kl.exact_table(kl.two_step(THETA1, THETA2, R1, R2), per_token=True)
    k2 = row(t, "k2", "loss")
    assert k2.matches == "neither"
    assert kl.max_abs_diff(k2.gradient[2:], t.grad_kl_reverse[2:]) < TOL  # step 2's parameters: right
    assert abs(k2.gradient[0] - t.grad_kl_reverse[0]) > 0.01  # step 1's: the future KL term is missing
    assert row(t, "k3", "loss").matches == "neither"


def test_on_the_two_step_mdp_the_estimator_on_the_whole_path_restores_the_one_token_identities() -> None:
    t = kl.exact_table(kl.two_step(THETA1, THETA2, R1, R2), per_token=False)
    assert [(r.estimator, r.place, r.matches) for r in t.rows[:5]] == [
        ("k1", "loss", "0"), ("k2", "loss", "grad KL(pi||pi0)"), ("k3", "loss", "grad KL(pi0||pi)"),
        ("k3-corrected", "loss", "grad KL(pi||pi0)"), ("k1", "reward", "grad KL(pi||pi0)")]


def test_on_the_two_step_mdp_per_token_k3_corrected_misses_step_ones_future_kl_like_k2() -> None:
    t = kl.exact_table(kl.two_step(THETA1, THETA2, R1, R2), per_token=True)
    assert row(t, "k3-corrected", "loss").gradient == row(t, "k2", "loss").gradient  # the same slope, -log r
    assert row(t, "k3-corrected", "loss").matches == "neither"


def test_the_slope_of_each_estimator_matches_a_finite_difference_in_log_pi() -> None:
    # (k3-corrected's slope comes from a ratio whose value is always 1: no finite difference of its value sees
    # it; the autograd test above checks it against TRL's formula)
    for name in ("k1", "k2", "k3"):
        for log_r in (-1.3, -0.1, 0.0, 0.7):
            h = 1e-6  # log r = log pi0 - log pi: raising log pi by h lowers log r by h
            fd = (kl.estimator_value(name, log_r - h) - kl.estimator_value(name, log_r + h)) / (2 * h)
            assert kl.estimator_slope(name, log_r) == pytest.approx(fd, abs=1e-6)


def test_k3s_variance_is_below_k1s_near_pi0_and_far_above_it_far_from_pi0() -> None:
    """pi = [.99, .01], pi0 = [.01, .99], computed here by hand: var k3 = 79.8, var k1 = 0.84."""
    pi, pi0 = [0.99, 0.01], [0.01, 0.99]

    def var(f):  # type: ignore[no-untyped-def]
        xs = [f(q / p) for p, q in zip(pi, pi0)]
        m = sum(p * x for p, x in zip(pi, xs))
        return sum(p * (x - m) ** 2 for p, x in zip(pi, xs))

    k1, k3 = var(lambda r: -math.log(r)), var(lambda r: r - 1 - math.log(r))
    assert round(k3, 1) == 79.8 and round(k1, 2) == 0.84
    far = kl.spread_table([math.log(99.0), 0.0], [0.0, math.log(99.0)], scales=(1.0,))[0]
    assert far.value_var[0] == pytest.approx(k1, rel=1e-9) and far.value_var[2] == pytest.approx(k3, rel=1e-9)
    near = kl.spread_table(LOGITS, REF, scales=(0.25, 1.0))
    assert all(r.value_var[2] < r.value_var[0] for r in near)


def test_k3_corrected_has_k3s_value_spread_and_k2s_gradient_spread() -> None:
    for r in kl.spread_table(LOGITS, REF):
        k1, k2, k3, k3c = r.value_var
        assert k3c == k3
        assert r.loss_grad_var[3] == pytest.approx(r.loss_grad_var[1], rel=1e-9)


def test_k3_is_never_negative_while_a_single_k1_can_be() -> None:
    assert all(kl.estimator_value("k3", x) >= 0 for x in (-5.0, -0.5, 0.0, 0.5, 5.0))
    assert kl.estimator_value("k1", 0.5) < 0


def test_monte_carlo_means_land_within_four_standard_errors_of_the_exact_expectations() -> None:
    pol = kl.categorical(LOGITS, REF)
    exact = {(r.estimator, r.place): r for r in kl.exact_table(pol).rows}
    for m in kl.monte_carlo(pol, [20000], seed=0):
        e = exact[(m.estimator, m.place)]
        assert abs(m.value_mean - e.value) < 4 * m.value_se
        assert m.grad_error < 4 * math.sqrt(m.grad_var / m.n) + 1e-12


def test_monte_carlo_is_the_same_for_the_same_seed_and_differs_for_another() -> None:
    pol = kl.categorical(LOGITS, REF)
    assert kl.monte_carlo(pol, [50], seed=1) == kl.monte_carlo(pol, [50], seed=1)
    assert kl.monte_carlo(pol, [50], seed=1) != kl.monte_carlo(pol, [50], seed=2)


def test_monte_carlo_standard_error_shrinks_as_one_over_root_n() -> None:
    pol = kl.categorical(LOGITS, REF)
    rows = {(m.estimator, m.place, m.n): m for m in kl.monte_carlo(pol, [100, 10000], seed=0)}
    small, big = rows[("k3", "loss", 100)], rows[("k3", "loss", 10000)]
    assert 5 < small.value_se / big.value_se < 20  # sqrt(100) = 10, up to the variance estimates' own noise


def test_an_unknown_estimator_is_a_course_error() -> None:
    from course.errors import CourseError

    with pytest.raises(CourseError, match="k4"):
        kl.estimator_value("k4", 0.0)


# ---------------------------------------------------------------------------
# The tool
# ---------------------------------------------------------------------------
def test_help_shows_a_worked_example(run_in_process, tmp_path) -> None:
    proc = run_in_process("course.kl_estimators", ["--help"], cwd=tmp_path)
    assert proc.returncode == 0 and "python -m course.kl_estimators --policy categorical" in proc.stdout


def test_the_tool_prints_which_gradient_each_estimator_follows(run_in_process, tmp_path) -> None:
    proc = run_in_process("course.kl_estimators", ["--policy", "categorical", "--samples", "10"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "k3 = (r - 1) - log r          in the loss" in proc.stdout and "grad KL(pi0||pi)" in proc.stdout
    line = next(x for x in proc.stdout.splitlines() if x.startswith("  k3-corrected = k3 * pi/sg(pi) in the loss"))
    assert line.endswith("grad KL(pi||pi0)  (value unbiased)")
    assert "exact per-sample variance as pi moves away from pi0" in proc.stdout
    assert list(tmp_path.iterdir()) == []  # prints only


def test_json_output_is_identical_for_the_same_seed(run_in_process, tmp_path) -> None:
    args = ["--json", "--samples", "10", "100", "--seed", "4"]
    a, b = (run_in_process("course.kl_estimators", args, cwd=tmp_path) for _ in range(2))
    assert a.returncode == 0 and a.stdout == b.stdout
    doc = json.loads(a.stdout)
    assert [p["policy"] for p in doc["policies"]] == ["categorical", "two-step MDP", "two-step MDP"]


def test_mismatched_logits_exit_2_with_one_line(run_in_process, tmp_path) -> None:
    proc = run_in_process("course.kl_estimators", ["--logits", "1", "2", "--ref-logits", "0"], cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "--ref-logits" in proc.stderr


def test_rng_is_never_the_global_one() -> None:
    state = random.getstate()
    kl.monte_carlo(kl.categorical(LOGITS, REF), [10], seed=0)
    assert random.getstate() == state
