"""pass@k estimators: unbiasedness pinned exactly over the binomial (fractions), the plug-in's bias direction,
the simulator against the exact moments, and the tool (course.passk_estimators)."""

from __future__ import annotations

import json
import math
from fractions import Fraction

import pytest

from course.lib.selection.passk_estimators import exact_moments, plug_in, simulate, table, truth
from course.lib.stats import pass_at_k


def _binomial_expectation(n: int, p: Fraction, value) -> Fraction:  # type: ignore[no-untyped-def]
    return sum((math.comb(n, c) * p**c * (1 - p) ** (n - c) * value(c) for c in range(n + 1)), Fraction(0))


def _unbiased_exact(n: int, c: int, k: int) -> Fraction:
    return 1 - Fraction(math.comb(n - c, k), math.comb(n, k))


CASES = [(n, k, p) for n in (1, 2, 5, 10, 20) for k in range(1, n + 1)
         for p in (Fraction(1, 20), Fraction(1, 3), Fraction(7, 10))]


@pytest.mark.parametrize("n,k,p", CASES)
def test_the_unbiased_estimator_has_expectation_exactly_pass_at_k(n, k, p):  # type: ignore[no-untyped-def]
    assert _binomial_expectation(n, p, lambda c: _unbiased_exact(n, c, k)) == 1 - (1 - p) ** k


def test_stats_pass_at_k_is_the_float_nearest_the_exact_unbiased_estimate():
    for n in (1, 5, 20, 50):
        for k in range(1, n + 1):
            for c in range(n + 1):
                assert pass_at_k(n, c, k) == float(_unbiased_exact(n, c, k))


@pytest.mark.parametrize("n,k,p", [case for case in CASES if case[1] >= 2])
def test_the_plug_in_is_biased_low_for_k_of_two_or_more(n, k, p):  # type: ignore[no-untyped-def]
    expectation = _binomial_expectation(n, p, lambda c: 1 - (1 - Fraction(c, n)) ** k)
    assert expectation < 1 - (1 - p) ** k


def test_the_plug_in_is_unbiased_for_k_of_one():
    p = Fraction(3, 10)
    assert _binomial_expectation(7, p, lambda c: 1 - (1 - Fraction(c, 7))) == p


def test_the_library_exact_moments_agree_with_the_fraction_sums():
    n, k, p = 10, 5, 0.2
    m = exact_moments(n, k, p)
    exact_plug = float(_binomial_expectation(n, Fraction(1, 5), lambda c: 1 - (1 - Fraction(c, n)) ** k))
    assert m["plug_in"].mean == pytest.approx(exact_plug, abs=1e-13)
    assert m["unbiased"].mean == pytest.approx(truth(p, k), abs=1e-13)
    assert m["first_k"].variance == pytest.approx(truth(p, k) * (1 - truth(p, k)), abs=1e-15)


def test_the_simulated_moments_agree_with_the_exact_ones_within_monte_carlo_error():
    reps = 20000
    mc = simulate(10, [2, 5], 0.2, reps=reps, seed=3)
    for k in (2, 5):
        exact = exact_moments(10, k, 0.2)
        for name, moments in mc[k].items():
            se = math.sqrt(exact[name].variance / reps)
            assert abs(moments.mean - exact[name].mean) < 4 * se, (k, name)
            assert moments.variance == pytest.approx(exact[name].variance, rel=0.05), (k, name)


def test_first_k_spread_does_not_shrink_with_n_while_the_unbiased_one_does():
    sd = {n: {e: math.sqrt(v.variance) for e, v in exact_moments(n, 2, 0.2).items()} for n in (5, 50)}
    assert sd[5]["first_k"] == pytest.approx(sd[50]["first_k"])
    assert sd[50]["unbiased"] < sd[5]["unbiased"] / 2


def test_plug_in_is_one_minus_the_observed_failure_rate_to_the_k():
    assert plug_in(4, 1, 2) == 1 - 0.75**2


def test_the_table_is_the_same_for_the_same_seed_and_skips_k_above_n():
    a = table([2, 5], [1, 5], [0.2], reps=50, seed=9)
    assert a == table([2, 5], [1, 5], [0.2], reps=50, seed=9)
    assert [(r["n"], r["k"]) for r in a] == [(2, 1), (5, 1), (5, 5)]


def test_the_tool_prints_the_table_and_its_json_is_deterministic(run_in_process, tmp_path):  # type: ignore[no-untyped-def]
    proc = run_in_process("course.passk_estimators", ["--n", "5", "--k", "2", "--p", "0.2", "--reps", "200"],
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "plug-in" in proc.stdout and "unbiased (Chen et al.)" in proc.stdout
    args = ["--n", "5", "10", "--k", "2", "--reps", "300", "--seed", "4", "--json"]
    first = run_in_process("course.passk_estimators", args, cwd=tmp_path)
    again = run_in_process("course.passk_estimators", args, cwd=tmp_path)
    assert first.stdout == again.stdout
    rows = json.loads(first.stdout)["rows"]
    assert all(r["plug_in"]["bias_exact"] < 0 for r in rows)


def test_the_tool_draws_its_plot_where_matplotlib_is_installed(run_in_process, tmp_path):  # type: ignore[no-untyped-def]
    pytest.importorskip("matplotlib")
    out = tmp_path / "passk.png"
    proc = run_in_process("course.passk_estimators",
                          ["--n", "5", "10", "--k", "2", "--reps", "100", "--plot", str(out)], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    again = run_in_process("course.passk_estimators", ["--n", "5", "--k", "2", "--reps", "100", "--plot", str(out)],
                           cwd=tmp_path)
    assert again.returncode == 2 and "already exists" in again.stderr
