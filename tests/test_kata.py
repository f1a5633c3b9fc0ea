"""The debugging kata: a reproducible pack, a separate key, and a label check with honest exit codes."""

from __future__ import annotations

import json
from collections import Counter

import hypothesis_text as ht  # st.text() without hypothesis's slow first-run codec table
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from course import kata
from course.errors import CourseError
from course.instrument.spec_v1 import score as strict_score
from course.lib import bundled
from course.lib.reward_spec import kata_drafts, kata_labels

EXAMPLES = kata_labels.load_examples()
KEY = kata_labels.load_key()
IDS = [ex.id for ex in EXAMPLES]
BY_LABEL = {label: [ex for ex in EXAMPLES if KEY[ex.id].label == label] for label in kata_labels.LABELS}


def _strict(ex: kata_labels.KataExample) -> dict:
    return strict_score({"expected_answer": ex.expected_answer}, ex.completion)


def test_pack_has_ten_examples_with_unique_ids():
    assert len(EXAMPLES) == 10 and len(set(IDS)) == 10


def test_key_covers_exactly_the_pack_ids():
    assert sorted(KEY) == sorted(IDS)


def test_key_has_four_model_failures_and_two_of_each_other_kind():
    assert Counter(KEY[i].label for i in IDS) == {
        "model_failure": 4, "verifier_bug": 2, "spec_ambiguity": 2, "reward_hack": 2,
    }


def test_every_key_entry_has_a_justification_and_a_fix():
    for entry in KEY.values():
        assert entry.justification.count(".") >= 2 and len(entry.fix) > 20


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


def test_verifier_bug_examples_are_correct_under_the_spec_but_scored_zero_by_the_draft():
    for ex in BY_LABEL["verifier_bug"]:
        assert ex.scorer == "draft_v0" and ex.reward == 0.0
        assert _strict(ex)["reward"] == 1.0 and _strict(ex)["details"]["error_code"] == "ok"


def test_reward_hack_examples_are_paid_by_a_hackable_rubric_and_rejected_by_strict():
    for ex in BY_LABEL["reward_hack"]:
        assert ex.scorer not in ("strict", "draft_v0") and ex.reward == 1.0
        assert _strict(ex)["reward"] == 0.0


def test_model_failure_examples_get_zero_under_both_the_recorded_scorer_and_strict():
    for ex in BY_LABEL["model_failure"]:
        assert ex.reward == 0.0 and _strict(ex)["reward"] == 0.0


def test_spec_ambiguity_examples_are_well_formed_answers_that_differ_from_expected():
    for ex in BY_LABEL["spec_ambiguity"]:
        assert _strict(ex)["details"]["error_code"] == "wrong_answer"


def test_the_draft_scorer_is_used_for_honest_verdicts_too_so_its_name_is_no_giveaway():
    draft_labels = {KEY[ex.id].label for ex in EXAMPLES if ex.scorer == "draft_v0"}
    assert draft_labels >= {"verifier_bug", "model_failure"}


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
WHY = "The details show which rule fired, and the spec says whether it should have."  # a sentence


def _labels_file(tmp_path, labels: dict, *, short_form: bool = False) -> str:
    """A label file; a bare label becomes a full entry justified by WHY, unless ``short_form``."""
    items = labels if short_form else {
        i: v if isinstance(v, dict) else {"label": v, "justification": WHY, "fix": ""} for i, v in labels.items()
    }
    path = tmp_path / "labels.json"
    path.write_text(json.dumps({"items": items}), encoding="utf-8")
    return str(path)


def test_kata_help_shows_a_worked_example(run_in_process, tmp_path):
    out = run_in_process("course.kata", ["--help"], cwd=tmp_path)
    assert out.returncode == 0 and "--check my_labels.json" in out.stdout


def test_kata_show_prints_every_example_escaped_and_the_label_choices(capsys):
    assert kata.main([]) == 0
    out = capsys.readouterr().out
    for ex in EXAMPLES:
        assert f"{ex.id}  (scored with {ex.scorer})" in out
    assert '"Final: 92' in out and '"Final: 92\n' not in out  # the newline is escaped, not printed
    for label in kata_labels.LABELS:
        assert label in out


def test_kata_template_lists_every_id_with_a_blank_label(capsys):
    assert kata.main(["--template"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert list(data["items"]) == IDS
    assert all(item["label"] == "" for item in data["items"].values())
    assert set(data["choices"]) == set(kata_labels.LABELS)


def test_blank_template_checks_as_zero_of_ten_with_exit_1(tmp_path, capsys):
    path = tmp_path / "blank.json"
    path.write_text(json.dumps(kata_labels.template(EXAMPLES)), encoding="utf-8")
    assert kata.main(["--check", str(path)]) == 1
    assert "Score: 0/10" in capsys.readouterr().out


def test_check_with_the_keys_labels_scores_ten_of_ten_and_exits_0(tmp_path, capsys):
    labels = {i: {"label": KEY[i].label, "justification": WHY, "fix": ""} for i in IDS}
    assert kata.main(["--check", _labels_file(tmp_path, labels)]) == 0
    out = capsys.readouterr().out
    assert "Score: 10/10" in out and "WRONG" not in out and "shorter than a sentence" not in out


def test_a_right_label_with_a_one_character_justification_is_flagged_and_is_not_full_marks(tmp_path, capsys):
    labels = {i: {"label": KEY[i].label, "justification": WHY, "fix": ""} for i in IDS}
    labels[IDS[1]]["justification"] = "x"
    assert kata.main(["--check", _labels_file(tmp_path, labels)]) == 1
    out = capsys.readouterr().out
    assert f"{IDS[1]}  labelled  (justification shorter than a sentence)" in out
    assert "Score: 10/10 (10 labelled, 0 blank)" in out  # the labels are still all right ...
    assert f"Justification shorter than a sentence (at least 6 words, ending with . ! or ?) for 1: {IDS[1]}." in out


def test_the_short_form_without_justifications_flags_every_labelled_example(tmp_path, capsys):
    labels = {i: KEY[i].label for i in IDS}  # id -> label, no justification at all
    assert kata.main(["--check", _labels_file(tmp_path, labels, short_form=True)]) == 1
    assert "for 10: " in capsys.readouterr().out


def test_a_blank_label_is_counted_blank_not_flagged_for_its_justification(tmp_path, capsys):
    path = tmp_path / "blank.json"
    path.write_text(json.dumps(kata_labels.template(EXAMPLES)), encoding="utf-8")
    assert kata.main(["--check", str(path)]) == 1
    assert "shorter than a sentence" not in capsys.readouterr().out


@pytest.mark.parametrize(
    "text, sentence",
    [
        ("", False),
        ("x", False),
        ("Verifier bug.", False),  # a label restated is not a reason
        ("The draft scorer drops the minus sign", False),  # six words, no full stop
        ("The draft scorer drops the minus sign.", True),
        ("  Is the expected answer itself right here?  ", True),
        ("It pays any text ending in the number (see last_number).", True),
        ("... --- ... --- ... --- .", False),  # no letters or digits: no words
    ],
)
def test_a_sentence_is_six_words_ending_with_a_full_stop_or_question_mark(text, sentence):
    assert kata_labels.is_a_sentence(text) is sentence


def test_check_gives_the_score_without_naming_the_wrong_item_or_the_key_and_exits_1(tmp_path, capsys):
    labels = {i: KEY[i].label for i in IDS}
    wrong_id = BY_LABEL["verifier_bug"][0].id
    labels[wrong_id] = "model_failure"
    assert kata.main(["--check", _labels_file(tmp_path, labels)]) == 1
    out = capsys.readouterr().out
    assert "Score: 9/10 (10 labelled, 0 blank)" in out
    assert wrong_id not in out and "WRONG" not in out and " right" not in out
    assert "verifier_bug" not in out and KEY[wrong_id].justification not in out


def test_two_label_files_that_differ_in_one_wrong_item_print_the_same_check(tmp_path, capsys):
    # Which item is wrong cannot be read off the output: moving the mistake changes nothing printed.
    outputs = []
    for wrong_id in (BY_LABEL["verifier_bug"][0].id, BY_LABEL["model_failure"][0].id):
        labels = {i: KEY[i].label for i in IDS}
        labels[wrong_id] = "spec_ambiguity"
        assert kata.main(["--check", _labels_file(tmp_path, labels)]) == 1
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1]


def test_help_offers_the_student_no_way_to_the_key(run_in_process, tmp_path):
    out = run_in_process("course.kata", ["--help"], cwd=tmp_path)
    assert out.returncode == 0
    assert "--reveal" not in out.stdout and "kata_mark" not in out.stdout and "print the key" not in out.stdout


def test_reveal_is_not_a_student_flag(capsys):
    with pytest.raises(SystemExit) as exc:
        kata.main(["--reveal"])
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
    labels = {i: KEY[i].label for i in IDS}
    labels[IDS[0]] = "scorer_bug"
    assert kata.main(["--check", _labels_file(tmp_path, labels)]) == 2
    assert '"scorer_bug" is not one of' in capsys.readouterr().err


def test_check_rejects_a_file_missing_an_id(tmp_path, capsys):
    labels = {i: KEY[i].label for i in IDS[1:]}
    assert kata.main(["--check", _labels_file(tmp_path, labels)]) == 2
    assert IDS[0] in capsys.readouterr().err


def test_check_rejects_an_unknown_id(tmp_path, capsys):
    labels = {i: KEY[i].label for i in IDS}
    labels["kata-99"] = "model_failure"
    assert kata.main(["--check", _labels_file(tmp_path, labels)]) == 2
    assert "kata-99" in capsys.readouterr().err


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
