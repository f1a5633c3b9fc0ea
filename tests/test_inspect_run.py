"""course.inspect_run: categories with counts and shares, examples with visible characters."""

from __future__ import annotations

from pathlib import Path

import pytest

import course.eval as ev
import course.inspect_run as ins
from course.lib.jsonl import dumps_line

SAMPLING = {"seed": 1, "temperature": 0.8}
ITEMS = [
    ("t-1", 5, "Final: 5"),
    ("t-2", -4, "Final: \u22124"),
    ("t-3", 12, "Work: 6+6\nFinal: 12"),
    ("t-4", 7, "Final: 8"),
    ("t-5", 9, "Final: 10"),
    ("t-6", 3, "Final:\u00a03"),
]


@pytest.fixture
def run_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    dataset, completions = tmp_path / "toy_dev.jsonl", tmp_path / "toy_rollouts.jsonl"
    dataset.write_text("".join(dumps_line({"id": i, "prompt": f"Prompt for {i}", "expected_answer": e}) + "\n" for i, e, _ in ITEMS))
    completions.write_text("".join(dumps_line({"id": i, "completion": c, "policy": "toy", "sampling": SAMPLING}) + "\n" for i, _, c in ITEMS))
    assert ev.main(["--dataset", str(dataset), "--completions", str(completions), "--outdir", "runs/r"]) == 0
    return tmp_path / "runs/r"


def inspect_out(capsys, *args: str) -> str:
    capsys.readouterr()
    assert ins.main(list(args)) == 0
    return capsys.readouterr().out


def test_top_categories_are_listed_with_counts_and_shares_largest_first(run_dir: Path, capsys) -> None:
    out = inspect_out(capsys, "--run", str(run_dir), "--top-k", "2", "--show", "0")
    rows = [line.split()[:3] for line in out.splitlines() if line.startswith("  ")]
    assert rows == [["wrong_answer", "2", "33.3%"], ["ok", "1", "16.7%"]]


def test_only_fails_leaves_out_the_ok_category(run_dir: Path, capsys) -> None:
    out = inspect_out(capsys, "--run", str(run_dir), "--only-fails", "--top-k", "10", "--show", "0")
    codes = [line.split()[0] for line in out.splitlines() if line.startswith("  ")]
    assert "ok" not in codes and codes[0] == "wrong_answer" and len(codes) == 4
    assert "5 of 6 items failed" in out


def test_examples_show_prompt_expected_extracted_and_reason(run_dir: Path, capsys) -> None:
    out = inspect_out(capsys, "--run", str(run_dir), "--code", "wrong_answer", "--show", "1")
    assert "-- t-4" in out and "-- t-5" not in out  # --show 1: the first item in dataset order
    assert "prompt:     Prompt for t-4" in out
    assert "expected:   7" in out and "extracted:  8" in out
    assert "Well-formed answer 8, but the expected answer is 7." in out


def test_a_unicode_minus_is_shown_as_an_escape_and_named(run_dir: Path, capsys) -> None:
    out = inspect_out(capsys, "--run", str(run_dir), "--code", "lookalike_minus")
    assert "completion: ⟦Final: ⟨U+2212⟩4⟧" in out
    assert "characters: ⟨U+2212⟩ MINUS SIGN" in out


def test_a_newline_is_shown_as_an_escape_and_the_lines_stay_readable(run_dir: Path, capsys) -> None:
    out = inspect_out(capsys, "--run", str(run_dir), "--code", "multiple_lines")
    assert "completion: ⟦Work: 6+6⟨\\n⟩\n" in out
    assert "Final: 12⟧" in out


def test_a_no_break_space_is_shown_as_an_escape(run_dir: Path, capsys) -> None:
    out = inspect_out(capsys, "--run", str(run_dir), "--code", "lookalike_char")
    assert "⟦Final:⟨U+00A0⟩3⟧" in out and "NO-BREAK SPACE" in out


def test_prompts_are_not_shown_when_the_dataset_changed_since_the_run(run_dir: Path, tmp_path: Path, capsys) -> None:
    dataset = tmp_path / "toy_dev.jsonl"
    dataset.write_text(dataset.read_text().replace("Prompt for", "Changed"))
    out = inspect_out(capsys, "--run", str(run_dir), "--code", "wrong_answer")
    assert "has changed since the run" in out and "prompt:" not in out and "Changed" not in out


def test_an_unknown_code_is_a_usage_error_listing_the_codes_present(run_dir: Path, capsys) -> None:
    assert ins.main(["--run", str(run_dir), "--code", "no_such_code"]) == 2
    assert "codes in this run: wrong_answer, ok" in capsys.readouterr().err


def test_a_known_code_absent_from_the_run_says_so(run_dir: Path, capsys) -> None:
    out = inspect_out(capsys, "--run", str(run_dir), "--code", "leading_zero")
    assert "No item has error code leading_zero." in out


def test_a_missing_run_directory_exits_2(tmp_path: Path, capsys) -> None:
    assert ins.main(["--run", str(tmp_path / "nope")]) == 2
    assert "no such run directory" in capsys.readouterr().err


def test_a_directory_without_manifest_is_not_a_run(tmp_path: Path, capsys) -> None:
    (tmp_path / "half").mkdir()
    assert ins.main(["--run", str(tmp_path / "half")]) == 2
    assert "is not a finished run directory" in capsys.readouterr().err


def test_results_edited_after_the_run_trigger_a_warning(run_dir: Path, capsys) -> None:
    results = run_dir / "results.jsonl"
    results.write_text(results.read_text().replace('"reward": 0.0', '"reward": 1.0', 1))
    capsys.readouterr()
    assert ins.main(["--run", str(run_dir), "--show", "0"]) == 0
    assert "does not match the sha256 in its manifest" in capsys.readouterr().err


def test_help_shows_a_worked_example(capsys) -> None:
    with pytest.raises(SystemExit) as info:
        ins.main(["--help"])
    assert info.value.code == 0
    assert "python -m course.inspect_run --run runs/demo_eval_clean --only-fails" in capsys.readouterr().out


def test_the_module_runs_as_python_dash_m(run_dir: Path) -> None:
    import subprocess
    import sys

    from course.lib.manifest import PROJECT_ROOT

    proc = subprocess.run(
        [sys.executable, "-m", "course.inspect_run", "--run", str(run_dir), "--only-fails", "--top-k", "5", "--show", "2"],
        cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 0 and "⟨U+2212⟩" in proc.stdout
