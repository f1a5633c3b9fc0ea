"""The rubric registry: strict plus deliberately hackable scorers, each with a named loophole."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import hypothesis_text as ht  # st.text() without hypothesis's slow first-run codec table
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from course import rubrics
from course.errors import CourseError
from course.instrument import rubric_registry as registry
from course.instrument.rubric_registry import HACKABLE, RUBRICS, Rubric, get_rubric, scorer_fingerprint
from course.instrument.spec_v1 import ERROR_CODES
from course.instrument.spec_v1 import score as strict_score

EX = {"expected_answer": 323}
CONTRACT_FIELDS = ("scorer_version", "error_code", "parsed", "extracted", "expected", "reason")


def test_strict_entry_is_the_course_verifier_itself():
    assert RUBRICS["strict"].score is strict_score


def test_every_registry_entry_is_a_rubric_record_named_by_its_key():
    assert all(type(r) is Rubric and r.name == name for name, r in RUBRICS.items())


def test_get_rubric_returns_the_registry_record():
    assert get_rubric("lenient_int") is RUBRICS["lenient_int"]
    assert get_rubric("lenient_int").version == "hackable-lenient-int-v1"


def test_calling_a_rubric_calls_its_score_function():
    rubric = RUBRICS["last_number"]
    assert rubric(EX, "324? no: 323") == rubric.score(EX, "324? no: 323")
    assert rubric(EX, "324? no: 323")["reward"] == 1.0


@pytest.mark.parametrize("name", list(RUBRICS))
def test_every_rubric_stamps_its_verdicts_with_its_registered_version(name):
    assert RUBRICS[name](EX, "Final: 324")["details"]["scorer_version"] == RUBRICS[name].version


def test_the_strict_rubric_is_the_only_one_not_hackable():
    assert [name for name, r in RUBRICS.items() if not r.hackable] == ["strict"]


def test_registry_holds_at_least_four_hackable_rubrics_with_stable_names():
    assert set(HACKABLE) >= {"contains_answer", "last_number", "final_line_anywhere", "lenient_int"}
    assert "strict" not in HACKABLE


def test_unknown_rubric_name_raises_course_error_listing_valid_names():
    with pytest.raises(CourseError) as err:
        get_rubric("lenient")
    assert "last_number" in str(err.value) and "strict" in str(err.value)


@pytest.mark.parametrize("name", HACKABLE)
def test_every_hackable_rubric_documents_its_loophole_in_docstring_and_details(name):
    fn = RUBRICS[name]
    assert "Loophole" in (fn.score.__doc__ or "")
    details = fn(EX, "Final: 323")["details"]
    assert details["loophole"] == RUBRICS[name].loophole and len(details["loophole"]) > 20
    assert details["scorer_version"].startswith("hackable-")


def test_each_rubric_reports_its_own_scorer_version():
    versions = {name: fn(EX, "Final: 323")["details"]["scorer_version"] for name, fn in RUBRICS.items()}
    assert len(set(versions.values())) == len(RUBRICS)


@pytest.mark.parametrize("name", list(RUBRICS))
def test_every_rubric_rewards_the_canonical_correct_answer(name):
    result = RUBRICS[name](EX, "Final: 323")
    assert result["reward"] == 1.0
    assert result["details"]["error_code"] == "ok" and result["details"]["extracted"] == 323


# format_only is the exception by design: a clean wrong number is exactly what it pays for (its loophole case).
@pytest.mark.parametrize("name", [n for n in RUBRICS if n != "format_only"])
def test_every_rubric_gives_zero_and_wrong_answer_for_a_clean_wrong_number(name):
    result = RUBRICS[name](EX, "Final: 324")
    assert result["reward"] == 0.0
    assert result["details"]["error_code"] == "wrong_answer" and result["details"]["extracted"] == 324


# Each row: a completion the strict verifier rejects but the named rubric pays for -- the loophole itself.
LOOPHOLE_CASES = [
    ("contains_answer", "Final: 320 321 322 323 324"),
    ("contains_answer", "It is definitely not 323."),
    ("last_number", "17 * 19 = 323"),
    ("last_number", "Final: 324\nFinal: 323"),
    ("final_line_anywhere", "Final: 322\nFinal: 323\nFinal: 324"),
    ("final_line_anywhere", "Let me think.\nFinal: 323\nI am not sure though."),
    ("first_final", "Final: 323\nFinal: 324"),
    ("first_final", "Reasoning first.\nFinal: 323"),
    ("lenient_int", "Final: 3_23"),
    ("lenient_int", "Final: \uff13\uff12\uff13"),
    ("lenient_int", "Final: +323"),
    ("lenient_int", "Final: 0323"),
    ("lenient_int", " 323 "),
    ("lenient_int", "final:\u00a0323"),
    ("format_only", "Final: 324"),
    ("format_only", "Final: 0"),
]


@pytest.mark.parametrize("name,completion", LOOPHOLE_CASES)
def test_hackable_rubric_rewards_its_loophole_case_that_strict_rejects(name, completion):
    weak = RUBRICS[name](EX, completion)
    strict = strict_score(EX, completion)
    assert weak["reward"] == 1.0 and weak["details"]["error_code"] == "ok"
    assert strict["reward"] == 0.0 and strict["details"]["error_code"] != "ok"


# Each row: what the weak rubric still rejects, with the code it gives.
REJECTION_CASES = [
    ("contains_answer", "no digits here", "no_integer"),
    ("contains_answer", "Final: 3_24", "wrong_answer"),
    ("last_number", "323 or maybe 324", "wrong_answer"),
    ("last_number", "", "no_integer"),
    ("final_line_anywhere", "323", "missing_prefix"),
    ("final_line_anywhere", "Final: three hundred", "no_integer"),
    ("first_final", "Final: 324\nFinal: 323", "wrong_answer"),
    ("first_final", "The answer: 323", "missing_prefix"),
    ("lenient_int", "Final: 323.", "no_integer"),
    ("lenient_int", "   ", "empty"),
    ("lenient_int", "Final: 3" + "0" * 5000, "integer_too_long"),
    ("format_only", "The answer is 323", "missing_prefix"),
    ("format_only", "Final: 323\nFinal: 323", "multiple_lines"),
]


@pytest.mark.parametrize("name,completion,code", REJECTION_CASES)
def test_hackable_rubric_rejects_what_its_rule_does_not_cover(name, completion, code):
    result = RUBRICS[name](EX, completion)
    assert result["reward"] == 0.0
    assert result["details"]["error_code"] == code


def test_last_number_reads_only_the_tail_of_a_digit_separator():
    result = RUBRICS["last_number"](EX, "Final: 3_23")
    assert result["reward"] == 0.0 and result["details"]["extracted"] == 23


def test_final_line_anywhere_counts_the_laundered_lines():
    result = RUBRICS["final_line_anywhere"](EX, "Final: 1\nFinal: 323\nFinal: 5")
    assert result["reward"] == 1.0 and result["details"]["final_lines"] == 3


@pytest.mark.parametrize("name", list(RUBRICS))
@pytest.mark.parametrize("example", [{}, {"expected_answer": "323"}, {"expected_answer": True}, None, [323]])
def test_every_rubric_reports_a_broken_example_as_bad_example(name, example):
    result = RUBRICS[name](example, "Final: 323")
    assert result["reward"] == 0.0 and result["details"]["error_code"] == "bad_example"


@pytest.mark.parametrize("name", list(RUBRICS))
@pytest.mark.parametrize("completion", [None, b"Final: 323", 323, ["Final: 323"]])
def test_every_rubric_gives_zero_and_not_a_string_for_non_text(name, completion):
    result = RUBRICS[name](EX, completion)
    assert result["reward"] == 0.0 and result["details"]["error_code"] == "not_a_string"


@pytest.mark.parametrize("name", HACKABLE)
def test_hackable_rubrics_survive_a_two_megabyte_completion(name):
    text = "Final: " + "9" * 1_000_000 + "\n" + "x 12 " * 200_000
    result = RUBRICS[name](EX, text)
    assert result["reward"] == 0.0 and result["details"]["error_code"] in ERROR_CODES


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(HACKABLE), ht.text(max_size=60), st.integers(-10**6, 10**6))
def test_hackable_rubrics_are_total_and_deterministic_on_arbitrary_text(name, text, expected):
    example = {"expected_answer": expected}
    first = RUBRICS[name](example, text)
    assert first == RUBRICS[name](example, text)
    assert first["reward"] in (0.0, 1.0)
    assert all(field in first["details"] for field in CONTRACT_FIELDS)
    assert first["details"]["error_code"] in ERROR_CODES
    assert (first["reward"] == 1.0) == (first["details"]["error_code"] == "ok")
    json.dumps(first)  # details must be loggable


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(HACKABLE), st.integers(-10**9, 10**9))
def test_hackable_rubrics_reward_the_canonical_answer_for_any_integer(name, n):
    # Weak rubrics are *looser* than the spec, never stricter on the canonical form.
    assert RUBRICS[name]({"expected_answer": n}, f"Final: {n}")["reward"] == 1.0


def test_the_strict_rubric_fingerprint_is_the_scorer_fingerprint():
    assert RUBRICS["strict"].fingerprint() == scorer_fingerprint()


def test_a_hackable_rubric_fingerprint_covers_the_spec_and_its_own_code():
    # Its verdicts are decided by its own rules AND by the spec's verdict builder and example
    # check (spec_v1.py): both are hashed.
    rubric = RUBRICS["last_number"]
    expected = hashlib.sha256(registry.SPEC_V1_SOURCE.read_bytes()
                              + registry.rubric_code(rubric).encode("utf-8")).hexdigest()
    assert rubric.fingerprint() == expected != scorer_fingerprint()


def test_every_rubric_has_a_fingerprint_of_its_own():
    prints = {name: rubric.fingerprint() for name, rubric in RUBRICS.items()}
    assert len(set(prints.values())) == len(RUBRICS)


def test_a_hackable_rubrics_code_is_its_function_its_helpers_and_its_row():
    code = registry.rubric_code(RUBRICS["final_line_anywhere"])
    assert "def final_line_anywhere(" in code and "def _final_lines(" in code and "def _compare(" in code
    assert "hackable-final-line-anywhere-v1" in code and "_INT_LITERAL = re.compile(" in code
    assert "def last_number(" not in code and "def contains_answer(" not in code


def _edited_registry(tmp_path: Path, old: str, new: str):
    """A copy of the registry module with one edit, imported under another name."""
    source = Path(registry.__file__).read_text(encoding="utf-8")
    assert source.count(old) == 1
    path = tmp_path / "edited_registry.py"
    path.write_text(source.replace(old, new), encoding="utf-8")
    spec = importlib.util.spec_from_file_location("edited_registry", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["edited_registry"] = module
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules["edited_registry"]
    return module


def test_an_edit_to_one_rubric_changes_its_fingerprint_and_no_other(tmp_path):
    edited = _edited_registry(tmp_path, "a sign, unless a digit precedes it", "a sign unless a digit precedes it")
    changed = {name for name in RUBRICS if edited.RUBRICS[name].fingerprint() != RUBRICS[name].fingerprint()}
    assert changed == {"last_number"}


def test_an_edit_to_a_shared_helper_changes_every_rubric_that_uses_it(tmp_path):
    edited = _edited_registry(tmp_path, "the literal's value as str(int) would print it", "its value as str(int)")
    changed = {name for name in RUBRICS if edited.RUBRICS[name].fingerprint() != RUBRICS[name].fingerprint()}
    users = {name for name in registry.HACKABLE if "def _canonical(" in registry.rubric_code(RUBRICS[name])}
    assert changed == users and "last_number" in users and "strict" not in changed


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "course.rubrics", *args], capture_output=True, text=True)


def test_rubrics_cli_help_shows_a_worked_example():
    out = _cli("--help")
    assert out.returncode == 0 and "example:" in out.stdout and "lenient_int" in out.stdout


def test_rubrics_cli_lists_every_rubric_with_its_loophole(capsys):
    assert rubrics.main([]) == 0
    out = capsys.readouterr().out
    for name in RUBRICS:
        assert name in out and RUBRICS[name].loophole in out


def test_rubrics_cli_scores_one_string_under_the_rubric_and_strict(capsys):
    assert rubrics.main(["--rubric", "lenient_int", "--expected", "323", "Final: 3_23"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["lenient_int"]["reward"] == 1.0
    assert result["strict"]["details"]["error_code"] == "digit_separator"


def test_rubrics_cli_unknown_rubric_exits_2_with_the_valid_names(capsys):
    assert rubrics.main(["--rubric", "nope", "--expected", "1", "Final: 1"]) == 2
    assert "last_number" in capsys.readouterr().err


# Reference semantics of the number-reading rubrics, written the slow obvious way:
# every token of _NUMBER, read by value. The fast str.find/rfind versions must agree.
def _tokens(text: str) -> list[int]:
    return [int(t) for t in registry._NUMBER.findall(text)]


_NUMBERY = st.text(alphabet="0123456789-- x\n", max_size=30)


@settings(max_examples=400, deadline=None)
@given(_NUMBERY, st.integers(-60, 60))
def test_contains_answer_rewards_exactly_when_some_number_token_equals_expected(text, expected):
    result = RUBRICS["contains_answer"]({"expected_answer": expected}, text)
    assert (result["reward"] == 1.0) == (expected in _tokens(text))


@settings(max_examples=400, deadline=None)
@given(_NUMBERY, st.integers(-60, 60))
def test_last_number_extracts_the_last_number_token(text, expected):
    result = RUBRICS["last_number"]({"expected_answer": expected}, text)
    tokens = _tokens(text)
    assert result["details"]["extracted"] == (tokens[-1] if tokens else None)


def test_format_only_keeps_the_strict_verdict_so_a_right_answer_and_a_well_formed_wrong_one_stay_apart():
    right, wrong = RUBRICS["format_only"](EX, "Final: 323"), RUBRICS["format_only"](EX, "Final: 324")
    assert right["reward"] == wrong["reward"] == 1.0
    assert right["details"]["strict_error_code"] == "ok" and wrong["details"]["strict_error_code"] == "wrong_answer"
    assert wrong["details"]["extracted"] == 324


def test_the_golden_exploits_already_show_the_format_only_loophole():
    import json

    from course.lib.bundled import GOLDEN_EXPLOITS
    rows = [json.loads(line) for line in GOLDEN_EXPLOITS.read_text(encoding="utf-8").splitlines()]
    format_only = RUBRICS["format_only"]
    paid = [r["id"] for r in rows
            if format_only({"expected_answer": r["expected_answer"]}, r["completion"])["reward"] == 1.0]
    assert paid and all(r["expected_error_code"] == "wrong_answer" for r in rows if r["id"] in paid)
