"""course.toy_mdp: the delayed reward credits the first action, exactly and on average."""

from __future__ import annotations

import json
import math
import random
import statistics
from pathlib import Path

import pytest

from course import toy_mdp as mdp
from course.lib.learning import two_step

THETA1 = [0.4, -0.3]
THETA2 = [[0.2, 0.9], [-0.5, 0.1]]


def _log(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "toy_mdp_log.jsonl").read_text(encoding="utf-8").splitlines()]


def test_help_shows_a_worked_example(run_in_process, tmp_path: Path) -> None:
    proc = run_in_process("course.toy_mdp", ["--help"], cwd=tmp_path)
    assert proc.returncode == 0
    assert "python -m course.toy_mdp --steps" in proc.stdout and "--rewards" in proc.stdout


def test_smoke_run_writes_log_story_and_manifest(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "mdp"
    assert mdp.main(["--steps", "20", "--slow", "--outdir", str(run)]) == 0
    assert sorted(p.name for p in run.iterdir()) == ["manifest.json", "toy_mdp_log.jsonl", "toy_mdp_log.txt"]
    assert len(_log(run)) == 20
    story = (run / "toy_mdp_log.txt").read_text(encoding="utf-8")
    assert "Why the first action gets credit" in story and "learned policy" in story
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["rewards"] == [[0.6, 0.6], [1.0, 0.0]] and manifest["seed"] == 0
    assert "episode 20/20" in capsys.readouterr().out


def test_exact_gradients_match_finite_differences_of_the_expected_return() -> None:
    h = 1e-6
    g1, g2 = two_step.exact_gradients(THETA1, THETA2, two_step.DEFAULT_REWARDS)
    for k in range(2):
        up, down = list(THETA1), list(THETA1)
        up[k] += h
        down[k] -= h
        numeric = (two_step.expected_return(up, THETA2, two_step.DEFAULT_REWARDS)
                   - two_step.expected_return(down, THETA2, two_step.DEFAULT_REWARDS)) / (2 * h)
        assert g1[k] == pytest.approx(numeric, abs=1e-8)
    for row in range(2):
        for k in range(2):
            up = [list(r) for r in THETA2]
            down = [list(r) for r in THETA2]
            up[row][k] += h
            down[row][k] -= h
            numeric = (two_step.expected_return(THETA1, up, two_step.DEFAULT_REWARDS)
                       - two_step.expected_return(THETA1, down, two_step.DEFAULT_REWARDS)) / (2 * h)
            assert g2[row][k] == pytest.approx(numeric, abs=1e-8)


@pytest.mark.parametrize("use_baseline", [False, True])
def test_average_trajectory_gradient_matches_the_exact_gradient(use_baseline: bool) -> None:
    # lr = 0 freezes the policy at the uniform start, so every episode's update is one sample
    # of the estimator at the same theta; their mean must be the exact gradient.
    n = 4000
    episodes = list(two_step.reinforce(two_step.DEFAULT_REWARDS, steps=n, lr=0.0, use_baseline=use_baseline,
                                       rng=random.Random(4)))
    samples = [list(e.grad1) + list(e.grad2[0]) + list(e.grad2[1]) for e in episodes]
    g1, g2 = two_step.exact_gradients([0.0, 0.0], [[0.0, 0.0], [0.0, 0.0]], two_step.DEFAULT_REWARDS)
    assert g1[0] > 0  # at the start the safe first action looks better: step 2 is still random
    for col, exact in zip(zip(*samples), g1 + g2[0] + g2[1]):
        se = statistics.stdev(col) / math.sqrt(n) if any(col) else 0.0
        assert abs(statistics.fmean(col) - exact) <= 5 * se + 1e-12


def test_the_first_action_is_updated_by_the_final_reward(tmp_path: Path) -> None:
    mdp.main(["--steps", "30", "--outdir", str(tmp_path / "r")])
    moved = [r for r in _log(tmp_path / "r") if r["advantage"] != 0.0]
    assert moved
    for r in moved:
        # Same advantage on both steps: grad1 = A * (onehot(a1) - pi1).
        expected = [r["advantage"] * ((1.0 if k == r["a1"] else 0.0) - p) for k, p in enumerate(r["pi1"])]
        assert r["grad1"] == pytest.approx(expected, abs=1e-15) and r["grad1"] != [0.0, 0.0]


def test_the_branch_not_taken_is_never_updated(tmp_path: Path) -> None:
    mdp.main(["--steps", "30", "--outdir", str(tmp_path / "r")])
    for r in _log(tmp_path / "r"):
        assert r["grad2"][1 - r["a1"]] == [0.0, 0.0]


def test_deterministic_returns_cover_the_four_paths() -> None:
    rows = two_step.deterministic_returns(((0.0, 0.2), (1.0, 0.3)))
    assert [(r["a1"], r["a2"], r["return"]) for r in rows] == [(0, 0, 0.0), (0, 1, 0.2), (1, 0, 1.0), (1, 1, 0.3)]


def test_the_default_run_learns_the_path_that_pays_most(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mdp.main(["--outdir", str(tmp_path / "r")])
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["result"]["final_expected_return"] > 0.95  # the safe branch is worth only 0.6
    assert manifest["result"]["final_pi1"][1] > 0.95 and manifest["result"]["final_pi2"][1][0] > 0.95
    out = capsys.readouterr().out
    assert "always a1 = 1, then a2 = 0:  1.0000  <- best" in out


def test_same_seed_gives_byte_identical_logs(tmp_path: Path) -> None:
    for name in ("a", "b"):
        mdp.main(["--steps", "50", "--seed", "3", "--outdir", str(tmp_path / name)])
    assert (tmp_path / "a" / "toy_mdp_log.jsonl").read_bytes() == (tmp_path / "b" / "toy_mdp_log.jsonl").read_bytes()


def test_a_custom_reward_table_is_used(tmp_path: Path) -> None:
    mdp.main(["--steps", "5", "--rewards", "0", "0", "1", "0", "--outdir", str(tmp_path / "r")])
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["rewards"] == [[0.0, 0.0], [1.0, 0.0]]


def test_zero_steps_is_a_usage_error(tmp_path: Path) -> None:
    assert _exit_code(mdp.main, ["--steps", "0", "--outdir", str(tmp_path / "r")]) == 2
    assert not (tmp_path / "r").exists()


def _exit_code(main, argv) -> int:  # type: ignore[no-untyped-def]
    """A tool's exit code whether argparse refused the flag (SystemExit) or main returned it."""
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code)
