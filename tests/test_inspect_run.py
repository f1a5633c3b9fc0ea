"""course.inspect_run: categories with counts and shares, examples with visible characters."""

from __future__ import annotations

from pathlib import Path

import pytest

import course.eval as ev
import course.inspect_run as ins
from course.lib.records.jsonl import dumps_line

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
    dataset.write_text("".join(dumps_line({"id": i, "prompt": f"Prompt for {i}", "expected_answer": e}) + "\n"
                               for i, e, _ in ITEMS))
    completions.write_text("".join(dumps_line({"id": i, "completion": c, "policy": "toy", "sampling": SAMPLING}) + "\n"
                                   for i, _, c in ITEMS))
    assert ev.main(["--dataset", str(dataset), "--completions", str(completions), "--outdir", "runs/r"]) == 0
    return tmp_path / "runs/r"


def inspect_out(capsys, *args: str) -> str:
    """stdout, with the temporary directory holding the run replaced by <tmp>.

    pytest names that directory freely (/tmp/pytest-of-u/pytest-5/test_x0), and a run
    id or a code is a short string ("t-5"): no assertion may depend on the path.
    """
    capsys.readouterr()
    assert ins.main(list(args)) == 0
    out = capsys.readouterr().out
    if "--run" in args:
        root = Path(args[list(args).index("--run") + 1]).parent.parent  # tmp_path/runs/r -> tmp_path
        out = out.replace(str(root), "<tmp>")
    return out


def example_ids(out: str) -> list[str]:
    """The ids of the examples shown, in order (each example starts with a line '-- ID  (reward R)')."""
    return [line.split()[1] for line in out.splitlines() if line.startswith("-- ")]


def listed_codes(out: str) -> list[str]:
    """The codes of the category rows, in order (each row is indented by exactly two spaces)."""
    return [line.split()[0] for line in out.splitlines() if line.startswith("  ") and not line.startswith("   ")]


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
    assert example_ids(out) == ["t-4"]  # --show 1: the first item in dataset order
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

    from course.lib.records.manifest import PROJECT_ROOT

    proc = subprocess.run(
        [sys.executable, "-m", "course.inspect_run", "--run", str(run_dir), "--only-fails", "--top-k", "5",
         "--show", "2"],
        cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 0 and "⟨U+2212⟩" in proc.stdout


def test_no_assertion_here_depends_on_the_temporary_directory_name(tmp_path: Path, monkeypatch, capsys) -> None:
    # pytest-5, pytest-12, ...: a run directory whose path holds "t-5" and "-- t-5" must change nothing
    base = tmp_path / "pytest-5" / "-- t-5"
    base.mkdir(parents=True)
    dataset, completions = base / "toy_dev.jsonl", base / "toy_rollouts.jsonl"
    dataset.write_text("".join(dumps_line({"id": i, "prompt": f"Prompt for {i}", "expected_answer": e}) + "\n"
                               for i, e, _ in ITEMS))
    completions.write_text("".join(dumps_line({"id": i, "completion": c, "policy": "toy", "sampling": SAMPLING}) + "\n"
                                   for i, _, c in ITEMS))
    monkeypatch.chdir(base)
    assert ev.main(["--dataset", str(dataset), "--completions", str(completions),
                    "--outdir", str(base / "runs/r")]) == 0
    out = inspect_out(capsys, "--run", str(base / "runs/r"), "--code", "wrong_answer", "--show", "1")
    assert example_ids(out) == ["t-4"] and "<tmp>" in out


# --- top K / bottom K / passes (#13 item 13) -------------------------------------------------------
# The toy run: wrong_answer 2, then ok, lookalike_minus, multiple_lines, lookalike_char 1 each.
def test_bottom_k_lists_the_least_frequent_codes_first(run_dir: Path, capsys) -> None:
    out = inspect_out(capsys, "--run", str(run_dir), "--bottom-k", "2", "--show", "0")
    assert "Bottom 2 outcome categories, least frequent first" in out
    # ties (one item each) follow the order in which the scorer checks its rules ('ok' first)
    assert listed_codes(out) == ["ok", "multiple_lines"]
    assert "Top " not in out  # --bottom-k alone: only the bottom


def test_top_k_and_bottom_k_together_do_not_list_a_code_twice(run_dir: Path, capsys) -> None:
    out = inspect_out(capsys, "--run", str(run_dir), "--only-fails", "--top-k", "2", "--bottom-k", "5", "--show", "0")
    codes = listed_codes(out)
    assert codes[:2] == ["wrong_answer", "multiple_lines"]
    assert sorted(codes[2:]) == ["lookalike_char", "lookalike_minus"] and len(set(codes)) == len(codes)
    assert "not already listed above" in out


def test_bottom_k_shows_examples_of_the_rare_codes(run_dir: Path, capsys) -> None:
    out = inspect_out(capsys, "--run", str(run_dir), "--only-fails", "--top-k", "0", "--bottom-k", "1", "--show", "1")
    assert example_ids(out) == ["t-3"]  # multiple_lines: the rarest failure, earliest in rule order


def test_only_passes_shows_the_ok_items_and_nothing_else(run_dir: Path, capsys) -> None:
    out = inspect_out(capsys, "--run", str(run_dir), "--only-passes", "--show", "5")
    assert listed_codes(out) == ["ok"] and "Passes ('ok'): 1 of 6 items" in out
    assert example_ids(out) == ["t-1"]


def test_only_passes_and_only_fails_exclude_each_other(run_dir: Path, capsys) -> None:
    with pytest.raises(SystemExit) as info:
        ins.main(["--run", str(run_dir), "--only-passes", "--only-fails"])
    assert info.value.code == 2


def test_help_defines_top_and_bottom_as_most_and_least_frequent(capsys) -> None:
    with pytest.raises(SystemExit):
        ins.main(["--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "'Top K' = the K MOST frequent codes" in out and "'bottom K' = the K LEAST frequent codes" in out


def test_the_header_names_the_rubric_that_scored_the_run(tmp_path: Path, run_dir: Path, capsys) -> None:
    assert "rubric strict, scorer strict-final-v1" in inspect_out(capsys, "--run", str(run_dir), "--show", "0")
    assert ev.main(["--dataset", "toy_dev.jsonl", "--completions", "toy_rollouts.jsonl", "--rubric", "last_number",
                    "--outdir", "runs/last"]) == 0
    out = inspect_out(capsys, "--run", str(tmp_path / "runs/last"), "--show", "0")
    assert "rubric last_number, scorer hackable-last-number-v1" in out


# --- runs of another kind (#16 item 6): exit 2, one line, what to inspect instead ---------------------
def _other_run(root: Path, tool: str, files=(), subs=()) -> Path:
    import json

    root.mkdir(parents=True)
    (root / "manifest.json").write_text(json.dumps({"tool": tool, "written_by": "rl-foundations-llm"}))
    for name in files:
        (root / name).write_text("x\n")
    for name, sub_tool in subs:
        (root / name).mkdir()
        (root / name / "manifest.json").write_text(json.dumps({"tool": sub_tool}))
    return root


def inspect_error(capsys, path: Path) -> str:
    capsys.readouterr()
    assert ins.main(["--run", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1  # one line
    return err


def test_a_tinylm_rl_run_points_at_its_holdout_evaluations(tmp_path: Path, capsys) -> None:
    rl = _other_run(tmp_path / "rl", "course.tinylm.rl", files=("rl_log.jsonl", "summary.json"),
                    subs=(("eval_final_holdout", "course.eval"), ("eval_pi0_holdout", "course.eval")))
    err = inspect_error(capsys, rl)
    assert "a course.tinylm.rl run (a tiny LM trained by RL)" in err
    assert f"(also {rl / 'eval_pi0_holdout'}): python -m course.inspect_run --run {rl / 'eval_final_holdout'};" in err


def test_a_bandit_run_names_its_kind_and_its_files(tmp_path: Path, capsys) -> None:
    bandit = _other_run(tmp_path / "bandit", "course.bandit_train", files=("bandit_log.jsonl", "bandit_story.txt"))
    err = inspect_error(capsys, bandit)
    assert "a course.bandit_train run (a bandit trained by REINFORCE)" in err
    assert f"read its files: {bandit / 'bandit_log.jsonl'}, {bandit / 'bandit_story.txt'}" in err
    assert f"view it: python -m course.report {bandit}" in err


def test_a_sweep_says_its_sub_runs_are_tinylm_runs(tmp_path: Path, capsys) -> None:
    sweep = _other_run(tmp_path / "sweep", "course.tinylm.sweep", files=("sweep.md",),
                       subs=(("beta_0", "course.tinylm.rl"), ("beta_0.1", "course.tinylm.rl")))
    err = inspect_error(capsys, sweep)
    assert "a course.tinylm.sweep run" in err and "are course.tinylm.rl runs" in err and "sweep.md" in err


def test_a_folder_of_runs_names_a_run_to_inspect(run_dir: Path, capsys) -> None:
    err = inspect_error(capsys, run_dir.parent)
    assert f"not a run directory but a folder of runs; inspect one: python -m course.inspect_run --run {run_dir}" in err


def test_a_real_bandit_run_is_refused_with_a_pointer(tmp_path: Path, monkeypatch, capsys) -> None:
    import course.bandit_train as bandit_train

    monkeypatch.chdir(tmp_path)
    assert bandit_train.main(["--steps", "5", "--seed", "0", "--outdir", "runs/b"]) == 0
    err = inspect_error(capsys, Path("runs/b"))
    assert err.startswith("error: runs/b: a course.bandit_train run") and "bandit_log.jsonl" in err
