"""course.red_team: hackable rubrics vs strict on the golden exploit suite and on student exploits."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from course import red_team
from course.errors import CourseError
from course.instrument.rubric_registry import HACKABLE, RUBRICS
from course.lib.bundled import GOLDEN_EXPLOITS
from course.lib.reward_spec import exploit_suites

GOLDEN = exploit_suites.load_exploits(GOLDEN_EXPLOITS, "golden", require_code=True)


def _write(tmp_path, records, name="mine.jsonl") -> str:
    path = tmp_path / name
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return str(path)


STUDENT = [
    {"id": "s-1", "expected_answer": 323, "completion": "Final: 3_23", "expected_error_code": "digit_separator"},
    {"id": "s-2", "expected_answer": 323, "completion": "I think 324. Actually 323"},
]


# ---------------------------------------------------------------------------
# The golden suite: the point of the exercise.
# ---------------------------------------------------------------------------
def test_golden_suite_is_large_enough_to_red_team_with():
    assert len(GOLDEN) >= 30


def test_strict_rewards_none_of_the_golden_exploits():
    rows = exploit_suites.red_team(GOLDEN, "strict")
    assert [r.exploit.id for r in rows if r.strict["reward"] > 0] == []


@pytest.mark.parametrize("name", HACKABLE)
def test_each_hackable_rubric_rewards_at_least_one_golden_exploit_that_strict_rejects(name):
    rows = exploit_suites.red_team(GOLDEN, name)
    hacked = [r for r in rows if r.hacked]
    assert hacked, f"{name} rewards no golden exploit: its loophole is not represented in the suite"
    assert all(r.rubric["details"]["error_code"] == "ok" for r in hacked)


def test_golden_suite_lists_the_error_code_strict_actually_gives():
    rows = exploit_suites.red_team(GOLDEN, "strict")
    assert [r.exploit.id for r in rows if r.code_mismatch] == []


def test_cli_on_golden_exits_0_and_prints_the_side_by_side_summary(capsys):
    assert red_team.main(["--rubric", "last_number"]) == 0
    out = capsys.readouterr().out
    summary = exploit_suites.summarise(exploit_suites.red_team(GOLDEN, "last_number"), "last_number")
    n = len(GOLDEN)
    assert (f"hackable rubric 'last_number' rewards {summary['rubric_rewarded']}/{n} exploits; "
            f"strict rewards 0/{n}") in out
    assert "HACKED" in out


def test_cli_json_output_matches_the_table_counts(capsys):
    assert red_team.main(["--rubric", "lenient_int", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["n"] == len(GOLDEN) and data["strict_rewarded"] == 0
    assert data["rubric_rewarded"] == sum(row["rubric_reward"] > 0 for row in data["rows"])
    assert data["hacked_ids"] == [row["id"] for row in data["rows"] if row["hacked"]]


def test_cli_output_is_identical_across_runs():
    cmd = [sys.executable, "-m", "course.red_team", "--rubric", "contains_answer", "--json"]
    first = subprocess.run(cmd, capture_output=True)
    second = subprocess.run(cmd, capture_output=True)
    assert first.returncode == 0 and first.stdout == second.stdout


def test_cli_help_shows_a_worked_example(run_in_process, tmp_path):
    out = run_in_process("course.red_team", ["--help"], cwd=tmp_path)
    assert out.returncode == 0 and "example:" in out.stdout and "--rubric last_number" in out.stdout


def test_cli_list_names_every_rubric(capsys):
    assert red_team.main(["--list"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in RUBRICS)


# ---------------------------------------------------------------------------
# Student exploit files.
# ---------------------------------------------------------------------------
def test_student_exploits_are_scored_after_the_golden_suite_with_their_own_counts(tmp_path, capsys):
    path = _write(tmp_path, STUDENT)
    assert red_team.main(["--rubric", "last_number", "--exploits", path]) == 0
    out = capsys.readouterr().out
    assert f"{path}: 'last_number' rewards 1/2; strict rewards 0/2" in out
    assert "s-2" in out and '"I think 324. Actually 323"' in out


def test_student_exploit_without_expected_code_is_accepted(tmp_path):
    exploits = exploit_suites.load_exploits(_write(tmp_path, STUDENT), "mine")
    assert exploits[1].expected_error_code is None


def test_an_exploit_strict_rewards_makes_the_run_exit_1_and_names_it(tmp_path, capsys):
    path = _write(tmp_path, [{"id": "oops", "expected_answer": 323, "completion": "Final: 323"}])
    assert red_team.main(["--rubric", "last_number", "--no-golden", "--exploits", path]) == 1
    out = capsys.readouterr().out
    assert "strict rewards 1/1" in out and "SPEC BUG" in out and "oops" in out


def test_a_weak_rubric_rewarding_exploits_does_not_fail_the_run(tmp_path, capsys):
    path = _write(tmp_path, STUDENT)
    assert red_team.main(["--rubric", "contains_answer", "--no-golden", "--exploits", path]) == 0
    assert "rewards 1/2 exploits; strict rewards 0/2" in capsys.readouterr().out


def test_a_listed_code_that_strict_does_not_give_is_noted(tmp_path, capsys):
    path = _write(tmp_path, [{"id": "c", "expected_answer": 323, "completion": "Final: 3_23",
                              "expected_error_code": "plus_sign"}])
    assert red_team.main(["--rubric", "strict", "--no-golden", "--exploits", path]) == 0
    assert "another error_code than listed: c" in capsys.readouterr().out


def test_invisible_characters_are_shown_escaped_in_the_table(tmp_path, capsys):
    path = _write(tmp_path, [{"id": "z", "expected_answer": 323, "completion": "Final: \u200b323"}])
    red_team.main(["--rubric", "strict", "--no-golden", "--exploits", path])
    line = next(li for li in capsys.readouterr().out.splitlines() if "  z  " in li)
    assert "\u200b" not in line and "200b" in line.lower()  # escaped, so the student can see it


# ---------------------------------------------------------------------------
# Bad input: exit 2 with path:line.
# ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "line,message",
    [
        ('{"id": "a", "expected_answer": 323}', "missing field 'completion'"),
        ('{"id": "a", "expected_answer": "323", "completion": "x"}', "'expected_answer' must be an integer"),
        ('{"id": "a", "expected_answer": 323, "completion": "x", "expected_error_code": "nope"}', "not a code"),
        ('{"id": "a", "expected_answer": 323, "completion": "x", "expected_error_code": "ok"}', "cannot expect 'ok'"),
        ('{"id": "a", "expected_answer": 323, "completion": "x", "expected": 1}', "unknown field 'expected'"),
        ('{"id": "a", "expected_answer": 323, "completion": 323}', "'completion' must be a string"),
        ('["a"]', "expected a JSON object"),
        ("{not json", "invalid JSON"),
    ],
)
def test_malformed_exploit_line_exits_2_with_path_and_line(tmp_path, capsys, line, message):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": "ok-1", "expected_answer": 1, "completion": "1"}\n' + line + "\n", encoding="utf-8")
    assert red_team.main(["--rubric", "strict", "--no-golden", "--exploits", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}:2:" in err and message in err


def test_duplicate_exploit_id_is_rejected_with_both_lines(tmp_path):
    path = _write(tmp_path, [STUDENT[0], STUDENT[0]])
    with pytest.raises(CourseError, match=r":2: duplicate id 's-1' \(first on line 1\)"):
        exploit_suites.load_exploits(path, "mine")


def test_unknown_rubric_exits_2_before_reading_files(capsys):
    assert red_team.main(["--rubric", "nope", "--exploits", "/does/not/exist"]) == 2
    assert "unknown rubric 'nope'" in capsys.readouterr().err


def test_missing_rubric_exits_2(capsys):
    assert red_team.main([]) == 2
    assert "--rubric is required" in capsys.readouterr().err


def test_no_golden_without_exploits_exits_2(capsys):
    assert red_team.main(["--rubric", "strict", "--no-golden"]) == 2
    assert "nothing to score" in capsys.readouterr().err


def test_golden_file_missing_its_expected_code_is_rejected(tmp_path, capsys):
    path = _write(tmp_path, [STUDENT[1]], "golden.jsonl")
    assert red_team.main(["--rubric", "strict", "--golden", path]) == 2
    assert "missing field 'expected_error_code'" in capsys.readouterr().err
