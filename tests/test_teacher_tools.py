"""The teacher's tools under ``teacher/``: marking a kata file against the key, and the corrected
planted-bug loops. The student's tools never print a key; these do, run from the checkout."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from course.exercises import planted_bugs
from course.lib.reward_spec import kata_labels

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = kata_labels.load_examples()
KEY = kata_labels.load_key()
IDS = [ex.id for ex in EXAMPLES]
WHY = "The details show which rule fired, and the spec says whether it should have."


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"teacher_{name}", REPO / "teacher" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


kata_mark = _load("kata_mark")


def _labels_file(tmp_path: Path, labels: dict[str, str]) -> str:
    path = tmp_path / "labels.json"
    items = {i: {"label": v, "justification": WHY, "fix": ""} for i, v in labels.items()}
    path.write_text(json.dumps({"items": items}), encoding="utf-8")
    return str(path)


def test_marking_shows_the_keys_label_why_and_fix_under_a_miss(tmp_path, capsys):
    labels = {i: KEY[i].label for i in IDS}
    wrong_id = next(i for i in IDS if KEY[i].label == "verifier_bug")
    labels[wrong_id] = "model_failure"
    assert kata_mark.main([_labels_file(tmp_path, labels)]) == 1
    out = capsys.readouterr().out
    assert f"{wrong_id}  WRONG  student: model_failure\n        key: verifier_bug" in out
    assert KEY[wrong_id].justification in out and KEY[wrong_id].fix in out
    assert "Score: 9/10 (1 wrong, 0 blank)" in out


def test_marking_the_keys_own_labels_is_full_marks(tmp_path, capsys):
    assert kata_mark.main([_labels_file(tmp_path, {i: KEY[i].label for i in IDS})]) == 0
    assert "Score: 10/10" in capsys.readouterr().out


def test_without_a_file_the_tool_prints_every_key_entry_in_pack_order(capsys):
    assert kata_mark.main([]) == 0
    out = capsys.readouterr().out
    assert [line.split()[0] for line in out.splitlines() if line.startswith("kata-")] == IDS
    assert all(KEY[i].justification in out and KEY[i].fix in out for i in IDS)


def test_the_hard_packs_key_is_printed_with_pack_hard(capsys):
    assert kata_mark.main(["--pack", "hard"]) == 0
    assert "hard-01  " in capsys.readouterr().out


@pytest.mark.parametrize("script", ["kata_mark.py", "planted_bugs_solutions.py"])
def test_each_teacher_tool_runs_as_a_script_from_any_directory_and_its_help_ends_with_an_example(script, tmp_path):
    proc = subprocess.run([sys.executable, str(REPO / "teacher" / script), "--help"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "example:" in proc.stdout and f"python teacher/{script}" in proc.stdout


def test_a_bad_label_file_is_one_line_and_exit_2(tmp_path, capsys):
    path = tmp_path / "bad.json"
    path.write_text("{", encoding="utf-8")
    assert kata_mark.main([str(path)]) == 2
    err = capsys.readouterr().err
    assert "bad.json" in err and "Traceback" not in err


def test_the_corrected_kl_loop_runs_through_the_teachers_script(tmp_path):
    proc = subprocess.run([sys.executable, str(REPO / "teacher" / "planted_bugs_solutions.py"), "--bug", "kl",
                           "--json"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert rows[0]["kl"] > 0.0 and len(rows) == 12  # the planted loop logs 0.0 at step 0


def test_the_students_planted_bugs_tool_has_no_way_to_the_solutions(capsys):
    with pytest.raises(SystemExit) as exc:
        planted_bugs.main(["--bug", "kl", "--fixed"])
    assert exc.value.code == 2
    assert not (REPO / "course" / "exercises" / "solutions.py").exists()
