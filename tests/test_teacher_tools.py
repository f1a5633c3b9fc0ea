"""The teacher's tools under ``teacher/``: marking a kata file against the key, and the corrected
planted-bug loops. The student's tools never print a key; these do, run from the checkout."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from kata_keys import REPO, kata_mark, load_key

from course.exercises import planted_bugs
from course.instrument.spec_v1 import score as strict_score
from course.lib.reward_spec import kata_labels

PACKS = sorted(kata_labels.PACKS)
EXAMPLES = {pack: kata_labels.load_examples(kata_labels.PACKS[pack]) for pack in PACKS}
KEYS = {pack: load_key(pack) for pack in PACKS}
KEY = KEYS["basic"]
IDS = [ex.id for ex in EXAMPLES["basic"]]
WHY = "The details show which rule fired. The spec says whether it should have."
FIX = "Compare with the strict scorer."


def _labels_file(tmp_path: Path, labels: dict[str, str]) -> str:
    path = tmp_path / "labels.json"
    items = {i: {"label": v, "justification": WHY, "fix": FIX} for i, v in labels.items()}
    path.write_text(json.dumps({"items": items}), encoding="utf-8")
    return str(path)


def _strict_reward(ex: kata_labels.KataExample) -> float:
    return strict_score({"expected_answer": ex.expected_answer}, ex.completion)["reward"]


# ---------------------------------------------------------------------------
# The keys against their packs.
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("pack", PACKS)
def test_each_key_covers_exactly_its_packs_ids(pack):
    assert sorted(KEYS[pack]) == sorted(ex.id for ex in EXAMPLES[pack])


@pytest.mark.parametrize("pack", PACKS)
def test_each_key_has_four_model_failures_and_two_of_each_other_kind(pack):
    assert Counter(entry.label for entry in KEYS[pack].values()) == {
        "model_failure": 4, "verifier_bug": 2, "spec_ambiguity": 2, "reward_hack": 2,
    }


@pytest.mark.parametrize("pack", PACKS)
def test_every_key_entry_passes_the_students_own_form_check(pack):
    answers = {i: kata_labels.Answer(e.label, e.justification, e.fix) for i, e in KEYS[pack].items()}
    assert kata_labels.complete(kata_labels.check_form(answers, list(KEYS[pack])))


@pytest.mark.parametrize("pack", PACKS)
def test_the_key_blames_the_scorer_exactly_where_its_reward_differs_from_the_spec(pack):
    # The label set's own definitions: model_failure and spec_ambiguity keep a reward the spec
    # would give; verifier_bug and reward_hack are rewards the spec would not give.
    for ex in EXAMPLES[pack]:
        blames_scorer = KEYS[pack][ex.id].label in ("verifier_bug", "reward_hack")
        assert blames_scorer == (ex.reward != _strict_reward(ex)), ex.id


FIELDS = {
    "scorer": lambda ex: ex.scorer,
    "reward": lambda ex: ex.reward,
    "error_code": lambda ex: ex.details.get("error_code"),
    "parsed": lambda ex: ex.details.get("parsed"),
    "details fields": lambda ex: tuple(sorted(ex.details)),
    "strict reward": _strict_reward,
}


@pytest.mark.parametrize("field", sorted(FIELDS))
@pytest.mark.parametrize("pack", PACKS)
def test_no_single_field_tells_one_label_from_the_others(pack, field):
    # For every label, some value of the field is shared with an item of another label: no rule
    # "this field says X, so the label is L" sorts the pack.
    value = FIELDS[field]
    for label in kata_labels.LABELS:
        inside = {value(ex) for ex in EXAMPLES[pack] if KEYS[pack][ex.id].label == label}
        outside = {value(ex) for ex in EXAMPLES[pack] if KEYS[pack][ex.id].label != label}
        assert inside & outside, f"{pack}: {field} separates {label}: {inside} vs {outside}"


@pytest.mark.parametrize("pack", PACKS)
def test_a_full_reward_from_a_hackable_rubric_is_not_only_a_reward_hack(pack):
    paid = {KEYS[pack][ex.id].label for ex in EXAMPLES[pack] if ex.reward == 1.0}
    hackable = {KEYS[pack][ex.id].label for ex in EXAMPLES[pack] if ex.scorer in kata_labels.RUBRICS
                and ex.scorer != "strict"}
    assert len(paid) >= 2 and len(hackable) >= 2


# ---------------------------------------------------------------------------
# Marking.
# ---------------------------------------------------------------------------
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


def test_a_right_label_without_a_fix_is_marked_right_but_incomplete(tmp_path, capsys):
    path = tmp_path / "labels.json"
    items = {i: {"label": KEY[i].label, "justification": WHY, "fix": FIX} for i in IDS}
    items[IDS[0]]["fix"] = ""
    path.write_text(json.dumps({"items": items}), encoding="utf-8")
    assert kata_mark.main([str(path)]) == 1
    out = capsys.readouterr().out
    assert f"{IDS[0]}  right  (no fix)" in out and "Score: 10/10" in out and f"for 1: {IDS[0]}." in out


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
