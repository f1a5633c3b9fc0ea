"""course.kl_tradeoff_demo: gradient ascent reaches the closed form; the trade-off has the right ends."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest

from course import kl_tradeoff_demo as kd
from course.lib.learning import kl_tradeoff as kt
from course.lib.learning import policy_gradient as pg
from course.lib.learning.bandit import DEFAULT_ACTIONS

REWARDS = [0.0, 0.0, 0.0, 0.0, 0.0, 1.0]  # the strict scorer's verdicts on DEFAULT_ACTIONS


def test_help_shows_a_worked_example(run_in_process, tmp_path: Path) -> None:
    proc = run_in_process("course.kl_tradeoff_demo", ["--help"], cwd=tmp_path)
    assert proc.returncode == 0
    assert "--betas 0.01 0.1 1 10" in proc.stdout


def test_reference_policy_is_a_distribution_over_the_bandit_actions() -> None:
    assert len(kd.PI_REF) == len(DEFAULT_ACTIONS) and math.fsum(kd.PI_REF) == pytest.approx(1.0)
    # The "base model" prefers the sloppy formats: the accepted completion is its least likely.
    assert min(range(len(kd.PI_REF)), key=kd.PI_REF.__getitem__) == DEFAULT_ACTIONS.index("Final: 323")


@pytest.mark.parametrize("beta", kd.DEFAULT_BETAS)
def test_gradient_ascent_reaches_the_closed_form(beta: float) -> None:
    ascent = kt.gradient_ascent(kd.PI_REF, REWARDS, beta)
    closed = pg.kl_regularised_optimum(kd.PI_REF, REWARDS, beta)
    assert ascent.converged
    assert max(abs(a - b) for a, b in zip(ascent.probs, closed)) < 1e-9


@pytest.mark.parametrize("beta", [0.3, 3.0])
def test_gradient_ascent_agrees_on_graded_rewards_with_ties(beta: float) -> None:
    ref, rewards = [0.1, 0.2, 0.3, 0.4], [1.0, 0.5, 1.0, 0.0]
    ascent = kt.gradient_ascent(ref, rewards, beta)
    closed = pg.kl_regularised_optimum(ref, rewards, beta)
    assert ascent.converged and max(abs(a - b) for a, b in zip(ascent.probs, closed)) < 1e-9


def test_gradient_ascent_says_when_it_has_not_converged() -> None:
    # Two equally rewarded actions at small beta: only the weak KL term fixes their ratio, a
    # direction plain gradient ascent crawls along. It must report that, not pretend.
    ref, rewards = [0.1, 0.2, 0.3, 0.4], [1.0, 0.5, 1.0, 0.0]
    ascent = kt.gradient_ascent(ref, rewards, 0.03, max_steps=2000)
    closed = pg.kl_regularised_optimum(ref, rewards, 0.03)
    assert not ascent.converged and ascent.steps == 2000
    assert 1e-9 < max(abs(a - b) for a, b in zip(ascent.probs, closed)) < 1e-3


def test_kl_vanishes_as_beta_grows() -> None:
    rows = kt.sweep(kd.PI_REF, REWARDS, [1.0, 100.0, 1e5])
    assert rows[0].kl > rows[1].kl > rows[2].kl and rows[2].kl < 1e-9


def test_the_policy_piles_onto_the_rewarded_completion_as_beta_shrinks() -> None:
    (row,) = kt.sweep(kd.PI_REF, REWARDS, [0.005])
    assert row.probs[DEFAULT_ACTIONS.index("Final: 323")] > 1 - 1e-12
    assert row.expected_reward == pytest.approx(1.0)
    assert row.kl == pytest.approx(-math.log(kd.PI_REF[-1]))  # all mass moved onto an 8% action


def test_reward_and_kl_both_fall_as_the_penalty_grows() -> None:
    rows = kt.sweep(kd.PI_REF, REWARDS, sorted(kd.DEFAULT_BETAS))
    assert all(a.expected_reward >= b.expected_reward for a, b in zip(rows, rows[1:]))
    assert all(a.kl >= b.kl for a, b in zip(rows, rows[1:]))


def test_cli_writes_the_csv_and_a_manifest_with_lists_in_action_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "kl"
    assert kd.main(["--betas", "0.01", "0.1", "1", "10", "--outdir", str(run)]) == 0
    with open(run / "kl_tradeoff.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0])[:3] == ["beta", "expected_reward", "kl"]
    assert [k for k in rows[0] if k.startswith("p_")] == [f"p_{i}" for i in range(len(DEFAULT_ACTIONS))]
    assert [float(r["beta"]) for r in rows] == [0.01, 0.1, 1.0, 10.0]
    assert all(math.fsum(float(r[f"p_{i}"]) for i in range(6)) == pytest.approx(1.0) for r in rows)
    assert all(float(r["ga_max_abs_diff"]) < 1e-9 for r in rows)
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["actions"] == list(DEFAULT_ACTIONS)
    assert manifest["pi_ref"] == list(kd.PI_REF) and manifest["rewards"] == REWARDS
    assert manifest["columns"]["p_5"] == "Final: 323"
    out = capsys.readouterr().out
    assert "top-3" in out and "max |difference|" in out


def test_the_csv_is_byte_identical_across_runs(tmp_path: Path) -> None:
    for name in ("a", "b"):
        kd.main(["--outdir", str(tmp_path / name)])
    assert (tmp_path / "a" / "kl_tradeoff.csv").read_bytes() == (tmp_path / "b" / "kl_tradeoff.csv").read_bytes()


@pytest.mark.parametrize("betas", [["0"], ["-1"], ["inf"], ["1", "1"]])
def test_bad_betas_are_usage_errors_and_write_nothing(tmp_path: Path, betas: list[str]) -> None:
    assert _exit_code(kd.main, ["--betas", *betas, "--outdir", str(tmp_path / "r")]) == 2
    assert not (tmp_path / "r").exists()


def _exit_code(main, argv) -> int:  # type: ignore[no-untyped-def]
    """A tool's exit code whether argparse refused the flag (SystemExit) or main returned it."""
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code)
