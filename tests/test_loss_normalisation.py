"""The normalisation microscope (course.lib.learning.loss_normalisation, python -m course.loss_normalisation):
each token's weight under every divisor and reward scaling, by hand."""

from __future__ import annotations

import json
import math

import pytest

from course.errors import CourseError
from course.lib.learning import loss_normalisation as ln


def test_advantages_without_scaling_are_the_reward_minus_the_group_mean() -> None:
    assert ln.advantages([1, 0, 0, 0, 1, 1, 1, 0], group=4, scale="none") == [0.75, -0.25, -0.25, -0.25,
                                                                              0.25, 0.25, 0.25, -0.75]


def test_group_scaling_divides_by_the_sample_std_plus_the_epsilon() -> None:
    std = math.sqrt((0.75**2 + 3 * 0.25**2) / 3)  # divides by G - 1, as TRL's nanstd
    got = ln.advantages([1, 0, 0, 0], group=4, scale="group")
    assert got == pytest.approx([0.75 / (std + 1e-4)] + [-0.25 / (std + 1e-4)] * 3, abs=1e-12)


def test_group_scaling_makes_a_lone_success_as_loud_as_a_lone_failure() -> None:
    hard = ln.advantages([1, 0, 0, 0], group=4, scale="group")
    easy = ln.advantages([1, 1, 1, 0], group=4, scale="group")
    assert hard[0] == pytest.approx(-easy[3], abs=1e-12)


def test_a_group_whose_rewards_are_all_equal_gives_zero_under_every_choice() -> None:
    for scale in ln.SCALES:
        for norm in ln.NORMS:
            assert ln.token_weights([0.5] * 4, [3, 9, 1, 4], group=4, norm=norm, scale=scale) == [0.0] * 4


def test_seq_mean_gives_every_completion_the_same_total_push_whatever_its_length() -> None:
    rows = ln.weights_table([1, 0, 0, 0], [5, 5, 40, 5], group=4, scale="none")
    assert [r.total["seq-mean"] for r in rows] == pytest.approx([0.75 / 4, -0.25 / 4, -0.25 / 4, -0.25 / 4])
    # so the 40-token wrong answer's tokens are each pushed down 8 times less than a 5-token one's
    assert rows[2].per_token["seq-mean"] * 8 == pytest.approx(rows[1].per_token["seq-mean"])


def test_constant_and_token_mean_weigh_every_token_of_a_completion_alike_whatever_its_length() -> None:
    rows = ln.weights_table([1, 0, 0, 0], [5, 5, 40, 5], group=4, scale="none")
    assert rows[1].per_token["constant"] == rows[2].per_token["constant"] == -0.25 / 4
    assert rows[1].per_token["token-mean"] == rows[2].per_token["token-mean"] == -0.25 / 55
    assert rows[2].total["constant"] == 8 * rows[1].total["constant"]


def test_mismatched_or_ungroupable_inputs_are_course_errors() -> None:
    with pytest.raises(CourseError, match="lengths"):
        ln.token_weights([1, 0], [3], group=2, norm="constant", scale="none")
    with pytest.raises(CourseError, match="groups of 3"):
        ln.advantages([1, 0, 0, 0], group=3, scale="none")
    with pytest.raises(CourseError, match="per-token"):
        ln.divisors([1, 2], "per-token")


def test_help_shows_a_worked_example(run_in_process, tmp_path) -> None:
    proc = run_in_process("course.loss_normalisation", ["--help"], cwd=tmp_path)
    assert proc.returncode == 0 and "--rewards 1 0 0 0 --lengths 5 5 40 5" in proc.stdout


def test_the_tool_prints_one_table_per_reward_scaling(run_in_process, tmp_path) -> None:
    proc = run_in_process("course.loss_normalisation",
                          ["--rewards", "1", "0", "--lengths", "4", "12", "--group-size", "2"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "scale-rewards none" in proc.stdout and "scale-rewards group" in proc.stdout
    assert "+0.06250" in proc.stdout  # seq-mean: A 0.5 / (B 2 x length 4)


def test_json_is_the_library_table(run_in_process, tmp_path) -> None:
    proc = run_in_process("course.loss_normalisation", ["--json"], cwd=tmp_path)
    doc = json.loads(proc.stdout)
    rows = doc["tables"]["none"]
    assert [r["advantage"] for r in rows[:4]] == [0.75, -0.25, -0.25, -0.25]


def test_mismatched_flags_exit_2_with_one_line(run_in_process, tmp_path) -> None:
    proc = run_in_process("course.loss_normalisation", ["--rewards", "1", "0", "1", "--lengths", "4", "5"],
                          cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == "" and proc.stderr.count("\n") == 1 and "--lengths" in proc.stderr
