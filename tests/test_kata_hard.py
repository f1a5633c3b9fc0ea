"""The hard kata pack (Milestones 4-5): its shape, its reproducible verdicts, its draft scorer, --pack hard (no key)."""

from __future__ import annotations

import json
import subprocess
import sys

import hypothesis_text as ht  # st.text() without hypothesis's slow first-run codec table
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from course import kata
from course.instrument.spec_v1 import score as strict_score
from course.lib import bundled
from course.lib.reward_spec import kata_drafts, kata_labels

EXAMPLES = kata_labels.load_examples(bundled.KATA_HARD_EXAMPLES)
IDS = [ex.id for ex in EXAMPLES]
BASIC_IDS = [ex.id for ex in kata_labels.load_examples()]


def _strict(ex: kata_labels.KataExample) -> dict:
    return strict_score({"expected_answer": ex.expected_answer}, ex.completion)


WHY = "The details show which rule fired. The spec says whether it should have."  # two sentences
FIX = "Compare with the strict scorer."


def _labels_file(tmp_path, labels: dict, *, short_form: bool = False) -> str:
    """A label file; a bare label becomes a full entry justified by WHY, unless ``short_form``."""
    items = labels if short_form else {
        i: v if isinstance(v, dict) else {"label": v, "justification": WHY, "fix": FIX} for i, v in labels.items()
    }
    path = tmp_path / "labels.json"
    path.write_text(json.dumps({"items": items}), encoding="utf-8")
    return str(path)


# ---------------------------------------------------------------------------
# The pack.
# ---------------------------------------------------------------------------
def test_hard_pack_has_ten_examples_with_ids_unique_and_distinct_from_the_basic_pack():
    assert len(EXAMPLES) == 10 and len(set(IDS)) == 10
    assert not set(IDS) & set(BASIC_IDS)


def test_hard_pack_carries_no_label_field():
    text = bundled.KATA_HARD_EXAMPLES.read_text(encoding="utf-8")
    for line in text.splitlines():
        assert set(json.loads(line)) == {"id", "prompt", "expected_answer", "completion", "scorer", "reward", "details"}
    assert '"label"' not in text


@pytest.mark.parametrize("ex", EXAMPLES, ids=IDS)
def test_hard_recorded_reward_and_details_reproduce_with_the_named_scorer(ex):
    again = kata_labels.rescore(ex)
    hint = "after a deliberate scorer change: python -m course.kata --pack hard --rescore, then re-read the key"
    assert again["reward"] == ex.reward, hint
    assert again["details"] == ex.details, hint


def test_hard_pack_uses_look_alike_characters_the_strict_scorer_names():
    codes = {_strict(ex)["details"]["error_code"] for ex in EXAMPLES}
    assert {"lookalike_minus", "lookalike_char", "non_ascii_digit"} <= codes
    assert any("\u0456" in ex.completion for ex in EXAMPLES)  # Cyrillic i in 'Final'


# ---------------------------------------------------------------------------
# draft_v1: its verdicts pinned, so the pack stays reproducible.
# ---------------------------------------------------------------------------
@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**63 - 1))
def test_draft_v1_rewards_every_canonical_answer_from_0_to_int64_max(n):
    result = kata_drafts.draft_v1_score({"expected_answer": n}, f"Final: {n}")
    assert result["reward"] == 1.0 and result["details"]["extracted"] == n


@settings(max_examples=100, deadline=None)
@given(st.integers(-(2**63 - 1), -1))
def test_draft_v1_verdict_on_a_negative_answer_is_pinned(n):
    result = kata_drafts.draft_v1_score({"expected_answer": n}, f"Final: {n}")
    assert result["reward"] == 0.0 and result["details"]["extracted"] == -n


@settings(max_examples=100, deadline=None)
@given(st.integers(2**63, 2**64 - 1))
def test_draft_v1_verdict_just_above_int64_max_is_pinned(n):
    result = kata_drafts.draft_v1_score({"expected_answer": n}, f"Final: {n}")
    assert result["reward"] == 0.0 and result["details"]["extracted"] == n - 2**64


@settings(max_examples=100, deadline=None)
@given(st.one_of(ht.text(max_size=40), st.none(), st.integers()), st.integers(-(2**70), 2**70))
def test_draft_v1_is_total_and_deterministic(completion, expected):
    first = kata_drafts.draft_v1_score({"expected_answer": expected}, completion)
    assert first == kata_drafts.draft_v1_score({"expected_answer": expected}, completion)
    assert (first["reward"] == 1.0) == (first["details"]["error_code"] == "ok")


def test_draft_v1_survives_a_huge_integer():
    result = kata_drafts.draft_v1_score({"expected_answer": 1}, "Final: " + "7" * 10_000)
    assert result["reward"] == 0.0 and result["details"]["error_code"] == "integer_too_long"


# ---------------------------------------------------------------------------
# The CLI with --pack hard.
# ---------------------------------------------------------------------------
def test_pack_hard_lists_every_hard_example_escaped_and_names_draft_v1(capsys):
    assert kata.main(["--pack", "hard"]) == 0
    out = capsys.readouterr().out
    for ex in EXAMPLES:
        assert f"{ex.id}  (scored with {ex.scorer})" in out
    assert '"Final: \u27e8U+2212\u27e945"' in out  # the look-alike minus is shown, not hidden
    assert "read draft_v1_score in course/lib/reward_spec/kata_drafts.py" in out
    # its own file name: following the listing must not overwrite the first kata's my_labels.json
    assert "python -m course.kata --pack hard --check my_hard_labels.json" in out
    assert "--template > my_hard_labels.json" in out


def test_pack_hard_template_lists_the_hard_ids_and_the_pack_flag(capsys):
    assert kata.main(["--pack", "hard", "--template"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert list(data["items"]) == IDS
    assert "--pack hard --check" in data["how_to"]


def test_a_complete_hard_label_file_exits_0_in_a_fresh_process(tmp_path):
    labels = _labels_file(tmp_path, {i: "verifier_bug" for i in IDS})
    proc = subprocess.run([sys.executable, "-m", "course.kata", "--check", labels, "--pack", "hard"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Complete and well formed: 10 of 10 items" in proc.stdout and "my_hard_labels.json" in proc.stdout


def test_a_basic_label_file_is_refused_by_the_hard_pack(tmp_path, capsys):
    labels = {i: "model_failure" for i in BASIC_IDS}
    assert kata.main(["--pack", "hard", "--check", _labels_file(tmp_path, labels)]) == 2
    assert "no such kata example" in capsys.readouterr().err


def test_an_unknown_pack_name_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exc:
        kata.main(["--pack", "expert"])
    assert exc.value.code == 2
    assert "invalid choice: 'expert'" in capsys.readouterr().err


def test_rescore_leaves_the_hard_pack_byte_identical(tmp_path, capsys):
    copy = tmp_path / "hard.jsonl"
    copy.write_bytes(bundled.KATA_HARD_EXAMPLES.read_bytes())
    assert kata.main(["--pack", "hard", "--rescore", "--examples", str(copy)]) == 0
    assert copy.read_bytes() == bundled.KATA_HARD_EXAMPLES.read_bytes()
    assert "nothing written" in capsys.readouterr().out


def test_kata_help_mentions_the_hard_pack(run_in_process, tmp_path):
    out = run_in_process("course.kata", ["--help"], cwd=tmp_path)
    assert out.returncode == 0 and "--pack hard" in out.stdout


def test_the_hard_packs_check_sends_the_student_back_to_the_hard_pack(tmp_path, capsys):
    labels = {i: "model_failure" for i in IDS}
    labels[IDS[3]] = {"label": "model_failure", "justification": "", "fix": FIX}
    assert kata.main(["--pack", "hard", "--check", _labels_file(tmp_path, labels)]) == 1
    out = capsys.readouterr().out
    assert "again: python -m course.kata --pack hard\n" in out and "again: python -m course.kata\n" not in out
