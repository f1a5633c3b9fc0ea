"""Planted-bug exercises: the corrected loop passes each check; the planted one shows the symptom.

Every check here is about what the *log* says (the symptom a student can see),
never about how the loop is written.
"""

from __future__ import annotations

import importlib.util
import math
import subprocess
import sys
from pathlib import Path

import pytest

from course.exercises import planted_bugs
from course.lib.learning.policy_gradient import kl_divergence, softmax

# The corrected loops are the teacher's (teacher/planted_bugs_solutions.py), loaded from their file.
_SPEC = importlib.util.spec_from_file_location(
    "teacher_planted_bugs_solutions", Path(__file__).resolve().parent.parent / "teacher" / "planted_bugs_solutions.py"
)
solutions = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(solutions)

BUGGY, FIXED = planted_bugs, solutions


# ---------------------------------------------------------------------------
# Check: an advantage is nonzero exactly when a group's rewards disagree.
# ---------------------------------------------------------------------------
def _mixed(row: dict) -> bool:
    return any(len(set(rewards)) > 1 for rewards in row["rewards"].values())


def test_fixed_group_baseline_gives_nonzero_advantage_exactly_on_steps_with_mixed_rewards():
    rows = FIXED.train_group_baseline(seed=0)
    assert any(_mixed(r) for r in rows)
    for r in rows:
        assert (r["mean_abs_advantage"] > 0) == _mixed(r)


def test_fixed_group_baseline_learns_the_correct_completion_for_both_prompts():
    final = FIXED.train_group_baseline(seed=0)[-1]["p_correct"]
    assert all(p > 0.85 for p in final.values())


def test_planted_group_baseline_shows_zero_advantage_despite_mixed_rewards():
    rows = BUGGY.train_group_baseline(seed=0)
    assert any(_mixed(r) for r in rows)  # there *was* a learning signal to use
    assert all(r["mean_abs_advantage"] == 0.0 for r in rows)


def test_planted_group_baseline_never_moves_the_policy():
    rows = BUGGY.train_group_baseline(seed=0)
    assert all(p == 0.25 for r in rows for p in r["p_correct"].values())


# ---------------------------------------------------------------------------
# Check: the KL on a log row is the KL of the policy on that same row.
# ---------------------------------------------------------------------------
PI_REF = softmax(planted_bugs.REFERENCE_LOGITS)


def test_fixed_kl_log_matches_the_kl_of_the_logged_policy_on_every_row():
    for r in FIXED.train_kl():
        assert math.isclose(r["kl"], kl_divergence(r["probs"], PI_REF), rel_tol=1e-12, abs_tol=1e-15)


def test_planted_kl_log_reports_zero_at_step_0_although_the_policy_already_moved():
    first = BUGGY.train_kl()[0]
    assert first["kl"] == 0.0
    assert kl_divergence(first["probs"], PI_REF) > 1e-3


def test_planted_kl_log_lags_the_logged_policy_by_one_step():
    rows = BUGGY.train_kl()
    for before, row in zip(rows, rows[1:]):
        assert math.isclose(row["kl"], kl_divergence(before["probs"], PI_REF), rel_tol=1e-12)
        assert not math.isclose(row["kl"], kl_divergence(row["probs"], PI_REF), rel_tol=1e-3)


def test_both_kl_loops_train_the_same_policy():
    # The bug is in the measurement only: the learning is identical.
    assert [r["probs"] for r in BUGGY.train_kl()] == [r["probs"] for r in FIXED.train_kl()]


# ---------------------------------------------------------------------------
# Check: logging less often must not change where the curve's points sit.
# ---------------------------------------------------------------------------
def _curve(impl, log_every: int) -> dict[int, float]:
    return {r["x"]: r["expected_reward"] for r in impl.train_logged(steps=60, log_every=log_every)}


def test_fixed_sparse_log_is_a_subset_of_the_dense_log():
    dense, sparse = _curve(FIXED, 1), _curve(FIXED, 10)
    assert sparse and all(dense[x] == value for x, value in sparse.items())
    assert max(sparse) == max(dense) == 60


def test_planted_sparse_log_disagrees_with_the_dense_log_at_the_same_x():
    dense, sparse = _curve(BUGGY, 1), _curve(BUGGY, 10)
    assert any(dense[x] != value for x, value in sparse.items())
    assert max(sparse) == 6  # 60 updates drawn as 6 steps


def test_planted_x_axis_bug_is_invisible_when_logging_every_step():
    # Why it survives in real code: at the default log_every=1 both versions agree.
    assert _curve(BUGGY, 1) == _curve(FIXED, 1)


# ---------------------------------------------------------------------------
# The CLI.
# ---------------------------------------------------------------------------
def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "course.exercises.planted_bugs", *args], capture_output=True, text=True
    )


def test_planted_bugs_help_shows_a_worked_example():
    out = _cli("--help")
    assert out.returncode == 0 and "example:" in out.stdout and "--bug advantage" in out.stdout


@pytest.mark.parametrize("bug,header", [("advantage", "|adv|"), ("kl", "E[r]-beta*KL"), ("x_axis", "first reaches")])
def test_each_exercise_runs_and_prints_its_log(capsys, bug, header):
    assert planted_bugs.main(["--bug", bug]) == 0
    assert header in capsys.readouterr().out


def test_the_help_does_not_advertise_the_corrected_loops():
    out = _cli("--help")
    assert "--fixed" not in out.stdout and "solution" not in out.stdout


def test_same_seed_prints_the_same_log():
    assert _cli("--bug", "advantage", "--seed", "3").stdout == _cli("--bug", "advantage", "--seed", "3").stdout


@pytest.mark.parametrize("args", [["--bug", "x_axis", "--log-every", "0"], ["--bug", "kl", "--beta", "0"]])
def test_bad_argument_values_exit_2(args):
    assert _exit_code(planted_bugs.main, args) == 2


def test_unknown_bug_name_exits_2_listing_the_exercises():
    out = _cli("--bug", "nope")
    assert out.returncode == 2 and "advantage" in out.stderr


def _exit_code(main, argv) -> int:  # type: ignore[no-untyped-def]
    """A tool's exit code whether argparse refused the flag (SystemExit) or main returned it."""
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code)
