"""The golden suites pass, and `python -m course.golden` reports failures and bad files honestly."""

from __future__ import annotations

import json
import operator
import re
import subprocess
import sys
from pathlib import Path

import pytest

from course.golden import main
from course.lib.bundled import GOLDEN_CORRECT, GOLDEN_EXPLOITS
from course.lib.reward_spec.exploit_suites import check_case, load_suite

ROOT = Path(__file__).resolve().parents[1]


def _write(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


PROMPT = "Compute 17 * 19. Output exactly one line: Final: <int>"


def _exploit(**fields):
    record = {"id": "e-1", "prompt": PROMPT, "expected_answer": 323, "completion": "Final: 3_23",
              "expected_error_code": "digit_separator", "note": "underscore separator"}
    record.update(fields)
    return record


def test_bundled_suites_are_found_next_to_the_package_not_the_cwd():
    assert GOLDEN_CORRECT == ROOT / "data" / "golden" / "golden_correct.jsonl"
    assert GOLDEN_EXPLOITS.is_file()


def test_every_golden_correct_case_scores_one():
    cases = load_suite(GOLDEN_CORRECT, "correct")
    assert len(cases) >= 12
    failing = [(c.id, o.error_code) for c in cases if not (o := check_case(c)).passed]
    assert failing == []


def test_every_golden_exploit_is_rejected_with_its_listed_code():
    cases = load_suite(GOLDEN_EXPLOITS, "exploits")
    assert len(cases) >= 30
    failing = [(c.id, c.expected_error_code, o.reward, o.error_code) for c in cases if not (o := check_case(c)).passed]
    assert failing == []


def test_golden_cli_passes_on_bundled_suites_from_another_directory(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "course.golden"], capture_output=True, text=True,
                          cwd=tmp_path, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    n_correct = len(GOLDEN_CORRECT.read_text(encoding="utf-8").splitlines())
    n_exploits = len(GOLDEN_EXPLOITS.read_text(encoding="utf-8").splitlines())
    assert proc.stdout.strip() == (
        f"golden: {n_correct}/{n_correct} correct rewarded, "
        f"{n_exploits}/{n_exploits} exploits rejected with the listed code"
    )


def test_a_deliberately_wrong_exploit_line_makes_the_cli_exit_one_with_a_table(tmp_path, capsys):
    exploits = _write(tmp_path / "exploits.jsonl", [
        _exploit(),
        _exploit(id="e-2", completion="Final: 0323", expected_error_code="trailing_text", note="wrong code listed"),
        _exploit(id="e-3", completion="Final: 323", expected_error_code="missing_prefix", note="actually correct"),
    ])
    assert main(["--exploits", str(exploits)]) == 1
    out = capsys.readouterr().out
    assert "e-2" in out and "leading_zero" in out and "reward 0.0 (trailing_text)" in out
    assert "e-3" in out and "1.0" in out
    assert "e-1 " not in out  # passing cases are not listed
    assert out.strip().endswith("1/3 exploits rejected with the listed code")


def test_a_correct_case_that_scores_zero_is_reported(tmp_path, capsys):
    correct = _write(tmp_path / "correct.jsonl",
                     [{"id": "c-1", "prompt": PROMPT, "expected_answer": 323, "completion": "Final: 324",
                       "note": "not correct"}])
    assert main(["--correct", str(correct), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is False
    assert report["correct"] == {"n": 1, "passed": 0}
    assert [(f["id"], f["error_code"]) for f in report["failures"]] == [("c-1", "wrong_answer")]


def test_json_report_on_bundled_suites_is_ok_and_names_the_scorer(capsys):
    assert main(["--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is True and report["failures"] == []
    assert report["scorer_version"] == "strict-final-v1"
    assert len(report["scorer_fingerprint"]) == 64


@pytest.mark.parametrize("record, message", [
    (_exploit(expected_error_code="no_such_code"), "is not a code in course.score.ERROR_CODES"),
    (_exploit(expected_error_code="ok"), "cannot expect 'ok'"),
    (_exploit(expected_answer=True), "'expected_answer' must be an integer, got bool"),
    (_exploit(completion=None), "'completion' must be a string"),
    (_exploit(notes="typo"), "unknown field 'notes'"),
    ({"id": "e-1", "prompt": PROMPT, "expected_answer": 323, "completion": "x", "note": "n"},
     "missing field 'expected_error_code'"),
    ({k: v for k, v in _exploit().items() if k != "prompt"}, "missing field 'prompt'"),
    (_exploit(prompt="  "), "'prompt' must be a non-empty string"),
    (_exploit(prompt=323), "'prompt' must be a non-empty string"),
])
def test_malformed_exploit_file_exits_two_with_path_and_line(tmp_path, capsys, record, message):
    path = _write(tmp_path / "bad.jsonl", [_exploit(id="e-0"), record])
    assert main(["--exploits", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}:2: " in err and message in err


def test_duplicate_id_exits_two_naming_the_first_line(tmp_path, capsys):
    path = _write(tmp_path / "dup.jsonl", [_exploit(), _exploit()])
    assert main(["--exploits", str(path)]) == 2
    assert f"{path}:2: duplicate id 'e-1' (first on line 1)" in capsys.readouterr().err


def test_missing_file_exits_two(tmp_path, capsys):
    assert main(["--correct", str(tmp_path / "nope.jsonl")]) == 2
    assert "nope.jsonl" in capsys.readouterr().err


def test_golden_help_shows_a_worked_example(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "python -m course.golden" in out and "exploits rejected with the listed code" in out


# ---------------------------------------------------------------------------
# Prompts: every golden line says which question its completion answers.
# ---------------------------------------------------------------------------
# The bundled prompts follow one parseable pattern, so their arithmetic can be
# recomputed here with int() and operator (never eval): the answer of the prompt
# must be the line's expected_answer, or the case would pin a verdict for the
# wrong question.
_PROMPT = re.compile(r"Compute ([0-9]+) ([-+*]) ([0-9]+)\. Output exactly one line: Final: <int>")
_OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul}


def _answer_of(prompt: str) -> int:
    m = _PROMPT.fullmatch(prompt)
    assert m is not None, ("prompt does not follow 'Compute A op B. Output exactly one line: Final: <int>': "
                           f"{prompt[:80]!r}")
    return _OPS[m.group(2)](int(m.group(1)), int(m.group(3)))


@pytest.mark.parametrize("path", [GOLDEN_CORRECT, GOLDEN_EXPLOITS], ids=["correct", "exploits"])
def test_every_golden_prompt_computes_the_lines_expected_answer(path):
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    wrong = [(r["id"], r["prompt"][:60], r["expected_answer"]) for r in lines
             if _answer_of(r["prompt"]) != r["expected_answer"]]
    assert lines and wrong == []


def test_the_prompt_check_catches_a_prompt_whose_answer_differs():
    assert _answer_of("Compute 17 * 19. Output exactly one line: Final: <int>") == 323
    assert _answer_of("Compute 17 - 340. Output exactly one line: Final: <int>") == -323
    with pytest.raises(AssertionError):
        _answer_of("What is 17 * 19?")


def test_the_323_cases_ask_the_courses_running_example():
    from course.lib.reward_spec.problems import RUNNING_EXAMPLE

    cases = load_suite(GOLDEN_CORRECT, "correct") + load_suite(GOLDEN_EXPLOITS, "exploits")
    assert {c.prompt for c in cases if c.expected_answer == 323} == {RUNNING_EXAMPLE.prompt}


def test_verbose_lists_every_case_with_its_prompt_and_keeps_the_summary_line(capsys):
    assert main(["--verbose"]) == 0
    out = capsys.readouterr().out
    n = len(load_suite(GOLDEN_CORRECT, "correct")) + len(load_suite(GOLDEN_EXPLOITS, "exploits"))
    assert out.count("  pass  expected reward") == n and "FAIL" not in out
    assert "  prompt      Compute 17 * 19. Output exactly one line: Final: <int>" in out
    assert '  completion  "Final: 322⟨\\n⟩Final: 323"' in out  # the line break is shown as an escape
    assert out.rstrip().endswith(f"golden: 18/18 correct rewarded, {n - 18}/{n - 18} exploits rejected "
                                 "with the listed code")


def test_verbose_cuts_a_4300_digit_case_in_the_middle(capsys):
    main(["--verbose"])
    block = capsys.readouterr().out.split("correct-010")[1].split("\n\n")[0]
    assert "characters cut" in block and max(len(line) for line in block.splitlines()) < 200


def test_json_failures_and_verbose_cases_carry_the_prompt(tmp_path, capsys):
    correct = _write(tmp_path / "correct.jsonl",
                     [{"id": "c-1", "prompt": PROMPT, "expected_answer": 323, "completion": "Final: 324",
                       "note": "not correct"}])
    assert main(["--correct", str(correct), "--json", "--verbose"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert [f["prompt"] for f in report["failures"]] == [PROMPT]
    assert len(report["cases"]) == 1 + len(load_suite(GOLDEN_EXPLOITS, "exploits"))
    assert all(c["prompt"] for c in report["cases"])


def test_json_without_verbose_has_no_case_list(capsys):
    main(["--json"])
    assert "cases" not in json.loads(capsys.readouterr().out)
