"""The debugging kata as a student meets it: a reproducible pack, and a check of form that gives no label away."""

from __future__ import annotations

import json
from pathlib import Path

import hypothesis_text as ht  # st.text() without hypothesis's slow first-run codec table
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from course import kata
from course.errors import CourseError
from course.lib import bundled
from course.lib.reward_spec import kata_drafts, kata_labels

EXAMPLES = kata_labels.load_examples()
IDS = [ex.id for ex in EXAMPLES]
COURSE = Path(kata.__file__).resolve().parent


def test_pack_has_ten_examples_with_unique_ids():
    assert len(EXAMPLES) == 10 and len(set(IDS)) == 10


def test_student_pack_carries_no_label_or_answer_fields():
    for line in bundled.KATA_EXAMPLES.read_text(encoding="utf-8").splitlines():
        assert set(json.loads(line)) == {"id", "prompt", "expected_answer", "completion", "scorer", "reward", "details"}
    assert "label" not in bundled.KATA_EXAMPLES.read_text(encoding="utf-8")


@pytest.mark.parametrize("ex", EXAMPLES, ids=IDS)
def test_recorded_reward_and_details_reproduce_with_the_named_scorer(ex):
    again = kata_labels.rescore(ex)
    hint = "after a deliberate scorer change: python -m course.kata --rescore, then re-read the key"
    assert again["reward"] == ex.reward, hint
    assert again["details"] == ex.details, hint


def test_no_module_of_the_course_names_a_kata_key_file():
    # The key and its marking are the teacher's: nothing a student runs can read one.
    for path in COURSE.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert "answer_key" not in text and "kata_mark" not in text, path


@settings(max_examples=100, deadline=None)
@given(st.one_of(ht.text(max_size=40), st.none(), st.integers()), st.integers(-999, 999))
def test_draft_scorer_is_total_and_deterministic(completion, expected):
    first = kata_drafts.draft_score({"expected_answer": expected}, completion)
    assert first == kata_drafts.draft_score({"expected_answer": expected}, completion)
    assert (first["reward"] == 1.0) == (first["details"]["error_code"] == "ok")


def test_draft_scorer_survives_a_huge_integer():
    result = kata_drafts.draft_score({"expected_answer": 1}, "Final: " + "7" * 10_000)
    assert result["reward"] == 0.0 and result["details"]["error_code"] == "trailing_text"


# ---------------------------------------------------------------------------
# The CLI.
# ---------------------------------------------------------------------------
WHY = "The details show which rule fired. The spec says whether it should have."  # two sentences
FIX = "Compare with the strict scorer."


def _labels_file(tmp_path, labels: dict, *, short_form: bool = False) -> str:
    """A label file; a bare label becomes a complete entry (WHY, FIX), unless ``short_form``."""
    items = labels if short_form else {
        i: v if isinstance(v, dict) else {"label": v, "justification": WHY, "fix": FIX} for i, v in labels.items()
    }
    path = tmp_path / "labels.json"
    path.write_text(json.dumps({"items": items}), encoding="utf-8")
    return str(path)


def _check(tmp_path, capsys, labels: dict, *extra: str) -> tuple[int, str]:
    code = kata.main([*extra, "--check", _labels_file(tmp_path, labels)])
    return code, capsys.readouterr().out


def test_kata_help_shows_a_worked_example(run_in_process, tmp_path):
    out = run_in_process("course.kata", ["--help"], cwd=tmp_path)
    assert out.returncode == 0 and "--check my_labels.json" in out.stdout


def test_kata_show_prints_every_example_escaped_and_the_label_choices(capsys):
    assert kata.main([]) == 0
    out = capsys.readouterr().out
    for ex in EXAMPLES:
        assert f"{ex.id}  (scored with {ex.scorer})" in out
    assert '"Final: 214' in out and 'Final: 214\nFinal: 224' not in out  # the newline is escaped, not printed
    for label in kata_labels.LABELS:
        assert label in out


def test_kata_template_lists_every_id_with_a_blank_label(capsys):
    assert kata.main(["--template"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert list(data["items"]) == IDS
    assert all(item["label"] == "" for item in data["items"].values())
    assert set(data["choices"]) == set(kata_labels.LABELS)


def test_blank_template_names_every_item_as_unlabelled_and_exits_1(tmp_path, capsys):
    path = tmp_path / "blank.json"
    path.write_text(json.dumps(kata_labels.template(EXAMPLES)), encoding="utf-8")
    assert kata.main(["--check", str(path)]) == 1
    out = capsys.readouterr().out
    assert f"{IDS[0]}  no label yet; justification has 0 sentences (2-3 asked); no fix" in out
    assert "Complete and well formed: 0 of 10 items" in out


def test_a_complete_file_exits_0_whatever_its_labels_and_sends_it_to_the_teacher(tmp_path, capsys):
    code, out = _check(tmp_path, capsys, {i: "spec_ambiguity" for i in IDS})
    assert code == 0
    assert "Complete and well formed: 10 of 10 items" in out and "your teacher marks the labels" in out


def test_a_one_sentence_justification_is_named_and_is_not_complete(tmp_path, capsys):
    labels = {i: "model_failure" for i in IDS}
    labels[IDS[1]] = {"label": "model_failure", "justification": "The draft scorer drops the minus sign.",
                      "fix": FIX}
    code, out = _check(tmp_path, capsys, labels)
    assert code == 1
    assert f"{IDS[1]}  justification has 1 sentence (2-3 asked)" in out
    assert "Complete and well formed: 9 of 10 items" in out


def test_a_missing_fix_is_named_and_is_not_complete(tmp_path, capsys):
    labels = {i: "model_failure" for i in IDS}
    labels[IDS[2]] = {"label": "model_failure", "justification": WHY, "fix": "  "}
    code, out = _check(tmp_path, capsys, labels)
    assert code == 1 and f"{IDS[2]}  no fix" in out


def test_the_short_form_without_justifications_names_every_item(tmp_path, capsys):
    code = kata.main(["--check", _labels_file(tmp_path, {i: "model_failure" for i in IDS}, short_form=True)])
    out = capsys.readouterr().out
    assert code == 1 and all(f"{i}  justification has 0 sentences" in out for i in IDS)


@pytest.mark.parametrize(
    "text, sentences",
    [
        ("", 0),
        ("x", 0),
        ("Verifier bug.", 0),  # a label restated is not a reason
        ("The draft scorer drops the minus sign", 0),  # no full stop
        ("The draft scorer drops the minus sign.", 1),
        ("The draft drops the sign. Strict keeps it.", 2),
        ("5 / 2 is 2.5 exactly. Which way is a tie rounded?", 2),  # "2.5" ends no sentence
        ("It pays any text ending in the number (see last_number). Strict does not.", 2),
        ("... --- ... --- ... --- .", 0),  # no letters or digits: no words
    ],
)
def test_a_sentence_is_three_words_or_more_ending_with_a_full_stop_or_question_mark(text, sentences):
    assert kata_labels.count_sentences(text) == sentences


def _attack(tmp_path, capsys, pack: str, ids: list[str]) -> dict[str, set[str]]:
    """The key-recovery attack: start from one label everywhere, change one item's label at a time,
    and keep, per item, the labels whose check printed or exited differently from the start."""
    flag = [] if pack == "basic" else ["--pack", pack]
    start = {i: "model_failure" for i in ids}
    baseline = _check(tmp_path, capsys, start, *flag)
    stands_out: dict[str, set[str]] = {}
    for i in ids:
        for label in kata_labels.LABELS:
            if _check(tmp_path, capsys, {**start, i: label}, *flag) != baseline:
                stands_out.setdefault(i, set()).add(label)
    return stands_out


@pytest.mark.parametrize("pack", sorted(kata_labels.PACKS))
def test_changing_one_label_at_a_time_and_checking_again_recovers_nothing(tmp_path, capsys, pack):
    ids = [ex.id for ex in kata_labels.load_examples(kata_labels.PACKS[pack])]
    assert _attack(tmp_path, capsys, pack, ids) == {}


def test_help_offers_the_student_no_way_to_the_key(run_in_process, tmp_path):
    out = run_in_process("course.kata", ["--help"], cwd=tmp_path)
    assert out.returncode == 0
    assert "--reveal" not in out.stdout and "kata_mark" not in out.stdout and "print the key" not in out.stdout
    assert "--key" not in out.stdout


@pytest.mark.parametrize("flag", ["--reveal", "--key"])
def test_neither_reveal_nor_key_is_a_student_flag(capsys, flag):
    with pytest.raises(SystemExit) as exc:
        kata.main([flag, "x.json"])
    assert exc.value.code == 2


def test_no_example_carries_a_loophole_field_that_would_name_the_reward_hacks(capsys):
    assert all(not (set(ex.details) & kata_labels.HIDDEN_DETAILS) for ex in EXAMPLES)
    assert kata.main([]) == 0
    assert "loophole" not in capsys.readouterr().out


def test_the_listing_hides_a_loophole_field_even_in_a_hand_made_pack(tmp_path, capsys):
    record = json.loads(bundled.KATA_EXAMPLES.read_text(encoding="utf-8").splitlines()[1])
    record["details"]["loophole"] = "any 'Final:' line with the right number wins"
    path = tmp_path / "pack.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    assert kata.main(["--examples", str(path)]) == 0
    assert "loophole" not in capsys.readouterr().out


def test_show_handles_an_example_with_empty_details(tmp_path, capsys):
    record = json.loads(bundled.KATA_EXAMPLES.read_text(encoding="utf-8").splitlines()[0])
    record["details"] = {}
    path = tmp_path / "pack.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    assert kata.main(["--examples", str(path)]) == 0
    assert "details     {} (the scorer recorded no details)" in capsys.readouterr().out


@pytest.mark.parametrize("reward", ["1e400", "10" + "0" * 400, "-0.5", "2"])
def test_pack_with_a_reward_outside_0_to_1_is_refused_with_path_and_line(tmp_path, reward):
    line = bundled.KATA_EXAMPLES.read_text(encoding="utf-8").splitlines()[0]
    record = json.loads(line)
    path = tmp_path / "pack.jsonl"
    path.write_text(line.replace(f'"reward": {json.dumps(record["reward"])}', f'"reward": {reward}') + "\n",
                    encoding="utf-8")
    if reward == "1e400":  # the reader itself refuses infinity; either way path:1 is named
        with pytest.raises(CourseError, match=r"pack.jsonl:1"):
            kata_labels.load_examples(path)
        return
    with pytest.raises(CourseError, match=r"pack.jsonl:1: 'reward' must be a number between 0 and 1"):
        kata_labels.load_examples(path)


def test_check_rejects_invalid_json_with_path_and_line(tmp_path, capsys):
    path = tmp_path / "broken.json"
    path.write_text('{"items": {\n  "kata-01": "model_failure",\n}', encoding="utf-8")
    assert kata.main(["--check", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}:3:" in err and "not valid JSON" in err


def test_check_rejects_a_label_outside_the_fixed_set(tmp_path, capsys):
    labels = {i: "model_failure" for i in IDS}
    labels[IDS[0]] = "scorer_bug"
    assert kata.main(["--check", _labels_file(tmp_path, labels)]) == 2
    assert '"scorer_bug" is not one of' in capsys.readouterr().err


def test_check_rejects_a_file_missing_an_id(tmp_path, capsys):
    labels = {i: "model_failure" for i in IDS[1:]}
    assert kata.main(["--check", _labels_file(tmp_path, labels)]) == 2
    assert IDS[0] in capsys.readouterr().err


def test_check_rejects_an_unknown_id(tmp_path, capsys):
    labels = {i: "model_failure" for i in IDS}
    labels["kata-99"] = "model_failure"
    assert kata.main(["--check", _labels_file(tmp_path, labels)]) == 2
    assert "kata-99" in capsys.readouterr().err


def test_check_rejects_a_fix_that_is_not_text(tmp_path, capsys):
    labels = {i: "model_failure" for i in IDS}
    labels[IDS[0]] = {"label": "model_failure", "justification": WHY, "fix": 3}
    assert kata.main(["--check", _labels_file(tmp_path, labels)]) == 2
    assert "the fix must be a string" in capsys.readouterr().err


def test_check_on_a_missing_file_exits_2(tmp_path, capsys):
    assert kata.main(["--check", str(tmp_path / "nope.json")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_pack_with_a_bad_line_is_reported_with_path_and_line(tmp_path):
    lines = bundled.KATA_EXAMPLES.read_text(encoding="utf-8").splitlines()
    bad = json.loads(lines[1])
    del bad["scorer"]
    path = tmp_path / "pack.jsonl"
    path.write_text("\n".join([lines[0], json.dumps(bad)]) + "\n", encoding="utf-8")
    with pytest.raises(CourseError, match=r"pack.jsonl:2: missing field 'scorer'"):
        kata_labels.load_examples(path)


def test_rescore_leaves_an_up_to_date_pack_byte_identical(tmp_path, capsys):
    copy = tmp_path / "pack.jsonl"
    copy.write_bytes(bundled.KATA_EXAMPLES.read_bytes())
    assert kata.main(["--rescore", "--examples", str(copy)]) == 0
    assert copy.read_bytes() == bundled.KATA_EXAMPLES.read_bytes()
    assert "nothing written" in capsys.readouterr().out


def test_rescore_repairs_a_tampered_verdict(tmp_path):
    lines = bundled.KATA_EXAMPLES.read_text(encoding="utf-8").splitlines()
    tampered = json.loads(lines[0])
    tampered["reward"] = 1.0
    copy = tmp_path / "pack.jsonl"
    copy.write_text("\n".join([json.dumps(tampered)] + lines[1:]) + "\n", encoding="utf-8")
    assert kata.main(["--rescore", "--examples", str(copy)]) == 0
    assert copy.read_bytes() == bundled.KATA_EXAMPLES.read_bytes()
