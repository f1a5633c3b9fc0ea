"""Reward spec v1, rule by rule (docs/reward_spec_v1.md). Every test checks the reward AND details."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

from course.instrument.rubric_registry import scorer_fingerprint
from course.instrument.spec_v1 import (
    ASCII_WHITESPACE,
    ERROR_CODES,
    MAX_DIGITS,
    SCORER_VERSION,
    score,
)
from course.score import main

ROOT = Path(__file__).resolve().parents[1]
EX = {"id": "t-1", "prompt": "What is 17 * 19? Output exactly one line: Final: <int>", "expected_answer": 323}
REQUIRED = {"scorer_version", "error_code", "parsed", "extracted", "expected", "reason"}


def verdict(completion, example=EX):
    result = score(example, completion)
    assert set(result) == {"reward", "details"}
    assert REQUIRED <= set(result["details"])
    return result["reward"], result["details"]


# ---------------------------------------------------------------------------
# Rule 1: text only.
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("completion, type_name", [(None, "NoneType"), (b"Final: 323", "bytes"), (323, "int"),
                                                   (323.0, "float"), (["Final: 323"], "list")])
def test_non_text_completion_gets_zero_and_not_a_string(completion, type_name):
    reward, d = verdict(completion)
    assert reward == 0.0
    assert d["error_code"] == "not_a_string"
    assert d["completion_type"] == type_name
    assert d["expected"] == 323


def test_str_subclass_is_scored_as_plain_text_without_running_its_methods():
    class Hostile(str):
        def strip(self, *args):
            raise RuntimeError("strip must not be called")

        def startswith(self, *args):
            raise RuntimeError("startswith must not be called")

    reward, d = verdict(Hostile("Final: 323"))
    assert reward == 1.0
    assert d["extracted"] == 323


def test_object_whose_class_attribute_raises_is_not_a_string_and_does_not_raise():
    class Meta(type):
        @property
        def __name__(cls):
            raise RuntimeError("boom")

    class Sneaky(metaclass=Meta):
        @property
        def __class__(self):
            raise RuntimeError("boom")

    reward, d = verdict(Sneaky())
    assert reward == 0.0
    assert d["error_code"] == "not_a_string"
    assert d["completion_type"] == "Sneaky"


# ---------------------------------------------------------------------------
# Rule 2: the only normalisation is trimming the six ASCII whitespace characters.
# ---------------------------------------------------------------------------
def test_the_trimmed_set_is_exactly_the_six_ascii_whitespace_characters():
    assert sorted(ASCII_WHITESPACE) == sorted(" \t\n\r\x0b\x0c")
    reward, d = verdict(ASCII_WHITESPACE + "Final: 323" + ASCII_WHITESPACE)
    assert reward == 1.0
    assert d["error_code"] == "ok"


@pytest.mark.parametrize("ws", list(ASCII_WHITESPACE) + ["\r\n", "\n\n  "])
def test_each_ascii_whitespace_at_the_ends_is_trimmed(ws):
    reward, d = verdict(ws + "Final: 323" + ws)
    assert reward == 1.0
    assert d["extracted"] == 323


def test_leading_nbsp_is_not_trimmed_and_is_a_lookalike_at_position_zero():
    reward, d = verdict("\u00a0Final: 323")
    assert reward == 0.0
    assert d["error_code"] == "lookalike_char"
    assert d["char"] == "U+00A0 NO-BREAK SPACE"
    assert d["position"] == 0


def test_trailing_nbsp_after_ascii_space_is_a_lookalike():
    reward, d = verdict("Final: 323 \u00a0\n")
    assert reward == 0.0
    assert d["error_code"] == "lookalike_char"
    assert d["position"] == 11


def test_positions_index_the_completion_as_given_before_trimming():
    completion = "\n\n  Final: 3\u200b23\n"
    reward, d = verdict(completion)
    assert reward == 0.0
    assert d["error_code"] == "invisible_char"
    assert completion[d["position"]] == "\u200b"


# ---------------------------------------------------------------------------
# Rule 3: empty.
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("completion", ["", " ", "\n\t\r\n \x0b\x0c"])
def test_empty_or_whitespace_only_gets_zero_and_empty(completion):
    reward, d = verdict(completion)
    assert reward == 0.0
    assert d["error_code"] == "empty"
    assert d["parsed"] is False


# ---------------------------------------------------------------------------
# Rule 4: exactly one line.
# ---------------------------------------------------------------------------
LINE_BREAKS = ["\n", "\r", "\r\n", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]


@pytest.mark.parametrize("brk", LINE_BREAKS)
def test_every_splitlines_boundary_inside_gives_multiple_lines(brk):
    reward, d = verdict("Final: 3" + brk + "23")
    assert reward == 0.0
    assert d["error_code"] == "multiple_lines"
    assert d["position"] == 8
    assert d["n_lines"] == 2


def test_answer_laundering_counts_the_valid_final_lines():
    reward, d = verdict("Final: 322\nFinal: 323\nFinal: 324")
    assert reward == 0.0
    assert d["error_code"] == "multiple_lines"
    assert (d["n_lines"], d["final_lines"]) == (3, 3)
    assert d["char"] == "U+000A LINE FEED"


def test_reasoning_before_the_final_line_is_multiple_lines():
    reward, d = verdict("17 * 19 = 323\nFinal: 323")
    assert reward == 0.0
    assert (d["error_code"], d["final_lines"]) == ("multiple_lines", 1)


@pytest.mark.parametrize("brk", ["\x85", "\u2028", "\u2029", "\x1c"])
def test_a_final_line_boundary_that_is_not_trimmed_still_ends_a_line(brk):
    reward, d = verdict("Final: 323" + brk)
    assert reward == 0.0
    assert d["error_code"] == "multiple_lines"
    assert (d["n_lines"], d["final_lines"], d["position"]) == (2, 1, 10)


# ---------------------------------------------------------------------------
# Rule 5: the prefix 'Final: ', and invisible characters anywhere.
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("completion", ["final: 323", "FINAL: 323", "fINAL: 323"])
def test_other_capitalisation_gets_prefix_case(completion):
    reward, d = verdict(completion)
    assert reward == 0.0
    assert d["error_code"] == "prefix_case"
    assert d["found"] == completion


@pytest.mark.parametrize("completion", ["Final:323", "Final:  323", "Final:\t323", "Final: \t323", "Final : 323",
                                        "Final:-5"])
def test_not_exactly_one_ascii_space_after_the_colon_gets_prefix_spacing(completion):
    reward, d = verdict(completion)
    assert reward == 0.0
    assert d["error_code"] == "prefix_spacing"
    assert d["parsed"] is False


@pytest.mark.parametrize("completion", ["Answer: 323", "The answer is 323", "323", "Final 323", "Final",
                                        "Final answer: 323", "Finally: 323", "**Final: 323**"])
def test_a_line_not_starting_with_final_colon_gets_missing_prefix(completion):
    reward, d = verdict(completion)
    assert reward == 0.0
    assert d["error_code"] == "missing_prefix"
    assert d["extracted"] is None


@pytest.mark.parametrize("completion, char", [
    ("Final\uff1a 323", "U+FF1A FULLWIDTH COLON"),
    ("Final\u2236 323", "U+2236 RATIO"),
    ("Final:\u00a0323", "U+00A0 NO-BREAK SPACE"),
    ("Final:\u2009323", "U+2009 THIN SPACE"),
    ("Final: \u3000323", "U+3000 IDEOGRAPHIC SPACE"),
    ("F\u0456nal: 323", "U+0456 CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I"),
    ("Fin\u0430l: 323", "U+0430 CYRILLIC SMALL LETTER A"),
    ("\uff26inal: 323", "U+FF26 FULLWIDTH LATIN CAPITAL LETTER F"),
])
def test_unicode_lookalike_colon_space_or_letter_gets_lookalike_char(completion, char):
    reward, d = verdict(completion)
    assert reward == 0.0
    assert d["error_code"] == "lookalike_char"
    assert d["char"] == char
    assert d["char"].startswith(f"U+{ord(completion[d['position']]):04X} ")


@pytest.mark.parametrize("completion, char", [
    ("Final: 3\u200b23", "U+200B ZERO WIDTH SPACE"),
    ("\ufeffFinal: 323", "U+FEFF ZERO WIDTH NO-BREAK SPACE"),
    ("Final: 32\u00ad3", "U+00AD SOFT HYPHEN"),
    ("Final: \u202e323", "U+202E RIGHT-TO-LEFT OVERRIDE"),
    ("Final: 323\U000e0041", "U+E0041 TAG LATIN CAPITAL LETTER A"),
])
def test_invisible_character_anywhere_gets_invisible_char_with_its_position(completion, char):
    reward, d = verdict(completion)
    assert reward == 0.0
    assert d["error_code"] == "invisible_char"
    assert d["char"] == char
    assert completion[d["position"]] == chr(int(char[2:].split()[0], 16))


def test_final_colon_with_nothing_after_it_gets_no_integer():
    reward, d = verdict("Final:\n")
    assert reward == 0.0
    assert d["error_code"] == "no_integer"
    assert d["found"] == "Final:"


# ---------------------------------------------------------------------------
# Rule 6: the integer is canonical base-10 ASCII.
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("completion, code, lenient", [
    ("Final: \uff13\uff12\uff13", "non_ascii_digit", 323),
    ("Final: \u0663\u0662\u0663", "non_ascii_digit", 323),
    ("Final: \u00b3\u00b2\u00b3", "non_ascii_digit", None),
    ("Final: 3\uff123", "non_ascii_digit", 323),
    ("Final: +323", "plus_sign", 323),
    ("Final: 0323", "leading_zero", 323),
    ("Final: 3_23", "digit_separator", 323),
    ("Final: 3,23", "digit_separator", 323),
    ("Final: 323.0", "not_integer", 323),
    ("Final: 3.23e2", "not_integer", 323),
    ("Final: 323e0", "not_integer", 323),
    ("Final: 646/2", "not_integer", None),
    ("Final: 323.", "trailing_text", 323),
    ("Final: 323 apples", "trailing_text", 323),
])
def test_near_miss_numbers_get_their_own_code_and_the_lenient_reading(completion, code, lenient):
    reward, d = verdict(completion)
    assert reward == 0.0
    assert d["error_code"] == code
    assert d["lenient_value"] == lenient
    assert d["parsed"] is False


@pytest.mark.parametrize("sign", ["\u2212", "\u2013", "\u2014", "\u2010", "\uff0d", "\ufe63"])
def test_minus_lookalikes_get_lookalike_minus(sign):
    reward, d = verdict("Final: " + sign + "323", {"expected_answer": -323})
    assert reward == 0.0
    assert d["error_code"] == "lookalike_minus"
    assert d["lenient_value"] == -323
    assert d["position"] == 7


@pytest.mark.parametrize("completion", ["Final: -0", "Final: -00"])
def test_negative_zero_gets_negative_zero(completion):
    reward, d = verdict(completion, {"expected_answer": 0})
    assert reward == 0.0
    assert d["error_code"] == "negative_zero"
    assert d["lenient_value"] == 0


def test_zero_written_twice_gets_leading_zero():
    reward, d = verdict("Final: 00", {"expected_answer": 0})
    assert reward == 0.0
    assert d["error_code"] == "leading_zero"


@pytest.mark.parametrize("completion", ["Final: 10 000", "Final: 10\u202f000", "Final: 10'000"])
def test_space_or_apostrophe_before_a_group_of_three_is_a_digit_separator(completion):
    reward, d = verdict(completion, {"expected_answer": 10000})
    assert reward == 0.0
    assert d["error_code"] == "digit_separator"
    assert d["lenient_value"] == 10000


def test_negative_decimal_is_not_integer_rather_than_negative_zero():
    reward, d = verdict("Final: -0.5", {"expected_answer": 0})
    assert reward == 0.0
    assert d["error_code"] == "not_integer"


@pytest.mark.parametrize("completion", ["Final: three", "Final: $323", "Final: -", "Final: **323**"])
def test_no_digit_after_the_prefix_gets_no_integer(completion):
    reward, d = verdict(completion)
    assert reward == 0.0
    assert d["error_code"] == "no_integer"
    assert "lenient_value" not in d


def test_python_int_accepts_what_the_spec_rejects():
    # The reason the scorer never uses int() to decide the format.
    assert int("\uff13\uff12\uff13") == int("3_23") == int(" 323 ") == int("+323") == 323
    for completion in ("Final: \uff13\uff12\uff13", "Final: 3_23", "Final: +323"):
        assert verdict(completion)[0] == 0.0


# ---------------------------------------------------------------------------
# Rule 7: integers of any length, without calling int() beyond MAX_DIGITS.
# ---------------------------------------------------------------------------
def test_five_thousand_digit_integer_gets_integer_too_long():
    reward, d = verdict("Final: " + "7" * 5000)
    assert reward == 0.0
    assert d["error_code"] == "integer_too_long"
    assert d["n_digits"] == 5000


def test_negative_integer_one_digit_over_the_limit_gets_integer_too_long():
    reward, d = verdict("Final: -" + "7" * (MAX_DIGITS + 1))
    assert reward == 0.0
    assert d["n_digits"] == MAX_DIGITS + 1


@pytest.mark.parametrize("n", [10**MAX_DIGITS - 1, -(10**MAX_DIGITS - 1), 10**30, -(2**63) - 1],
                         ids=["4300-nines", "minus-4300-nines", "1e30", "below-int64"])
def test_long_integers_within_max_digits_are_compared_exactly(n):
    reward, d = verdict(f"Final: {n}", {"expected_answer": n})
    assert reward == 1.0
    assert d["extracted"] == n
    neighbour = n - 1 if n > 0 else n + 1  # one step towards zero: still within MAX_DIGITS
    reward, d = verdict(f"Final: {neighbour}", {"expected_answer": n})
    assert (reward, d["error_code"]) == (0.0, "wrong_answer")
    assert len(d["reason"]) < 200  # a 4300-digit number is described, not printed


def test_verdict_does_not_depend_on_a_lowered_int_digit_limit():
    n = 10**MAX_DIGITS - 1
    completion = f"Final: {n}"
    old = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(640)
    try:
        reward, d = verdict(completion, {"expected_answer": n})
        reward_wrong, d_wrong = verdict(completion, {"expected_answer": n - 1})
    finally:
        sys.set_int_max_str_digits(old)
    assert (reward, d["extracted"] == n) == (1.0, True)
    assert (reward_wrong, d_wrong["error_code"]) == (0.0, "wrong_answer")


def test_expected_answer_over_max_digits_is_a_bad_example():
    reward, d = verdict("Final: 1", {"expected_answer": 10**MAX_DIGITS})
    assert reward == 0.0
    assert d["error_code"] == "bad_example"
    assert d["expected"] == f"<int with more than {MAX_DIGITS} digits>"


# ---------------------------------------------------------------------------
# Rule 8: the comparison.
# ---------------------------------------------------------------------------
def test_correct_answer_gets_one_and_ok_with_the_integer_extracted():
    reward, d = verdict("Final: 323")
    assert reward == 1.0
    assert d == {"scorer_version": SCORER_VERSION, "error_code": "ok", "parsed": True, "extracted": 323,
                 "expected": 323, "reason": d["reason"]}


def test_wrong_number_gets_zero_and_wrong_answer_code():
    reward, d = verdict("Final: 324")
    assert reward == 0.0
    assert (d["error_code"], d["parsed"], d["extracted"], d["expected"]) == ("wrong_answer", True, 324, 323)
    assert "324" in d["reason"] and "323" in d["reason"]


@pytest.mark.parametrize("n", [0, -7, 100, -1000000])
def test_zero_and_negative_answers_are_rewarded(n):
    reward, d = verdict(f"Final: {n}", {"expected_answer": n})
    assert reward == 1.0
    assert d["extracted"] == n


# ---------------------------------------------------------------------------
# Rule 9: malformed examples.
# ---------------------------------------------------------------------------
class _HostileMapping(Mapping):
    def __getitem__(self, key):
        raise RuntimeError("no")

    def __iter__(self):
        raise RuntimeError("no")

    def __len__(self):
        return 1


@pytest.mark.parametrize("example, shown", [
    ({}, None),
    ({"expected_answer": "323"}, "323"),
    ({"expected_answer": True}, True),
    ({"expected_answer": 323.0}, 323.0),
    ({"expected_answer": None}, None),
    ({"expected_answer": float("nan")}, "nan"),
    ({"expected_answer": [323]}, "[323]"),
    (None, None),
    ([("expected_answer", 323)], None),
    ("323", None),
    (_HostileMapping(), None),
])
def test_malformed_example_gets_zero_and_bad_example_never_an_exception(example, shown):
    reward, d = verdict("Final: 323", example)
    assert reward == 0.0
    assert d["error_code"] == "bad_example"
    assert d["expected"] == shown
    json.dumps(d, allow_nan=False)  # what eval writes must stay valid JSON


def test_bad_example_is_reported_before_a_non_text_completion():
    reward, d = verdict(None, {"expected_answer": "323"})
    assert reward == 0.0
    assert d["error_code"] == "bad_example"


def test_example_keys_other_than_expected_answer_are_ignored():
    reward, d = verdict("Final: 5", {"expected_answer": 5, "id": None, "prompt": 42, "extra": object()})
    assert reward == 1.0
    assert d["expected"] == 5


# ---------------------------------------------------------------------------
# Rule 10 and size: huge completions stay linear and total.
# ---------------------------------------------------------------------------
TEN_MB = 10_000_000


@pytest.mark.parametrize("completion, code", [
    ("Final: " + "7" * TEN_MB, "integer_too_long"),
    (("Let me think about this step by step.\n" * (TEN_MB // 38)) + "Final: 323", "multiple_lines"),
    ("\u00e9" * TEN_MB, "missing_prefix"),
    ("Final: 323" + " x" * (TEN_MB // 2), "trailing_text"),
    (" " * TEN_MB + "Final: 323" + "\n" * TEN_MB, "ok"),
])
def test_ten_megabyte_completion_is_scored_without_error(completion, code):
    reward, d = verdict(completion)
    assert d["error_code"] == code
    assert reward == (1.0 if code == "ok" else 0.0)
    assert len(d.get("found", "")) <= 43


def test_multi_megabyte_multiline_completion_skips_line_counting():
    reward, d = verdict("a\n" * 1_000_000)
    assert reward == 0.0
    assert (d["error_code"], d["n_lines"], d["final_lines"], d["position"]) == ("multiple_lines", None, None, 1)


# ---------------------------------------------------------------------------
# The enumerated codes, the spec document and provenance.
# ---------------------------------------------------------------------------
def _doc_error_table() -> list[tuple[str, str]]:
    text = (ROOT / "docs" / "reward_spec_v1.md").read_text(encoding="utf-8")
    section = text.split("\n## Error codes\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `([a-z_]+)` \| (.+?) \|$", section, flags=re.M)


def test_spec_document_error_table_matches_error_codes_exactly():
    assert _doc_error_table() == list(ERROR_CODES.items())


def test_golden_exploits_cover_every_code_a_completion_string_can_get():
    lines = (ROOT / "data" / "golden" / "golden_exploits.jsonl").read_text(encoding="utf-8").splitlines()
    listed = {json.loads(line)["expected_error_code"] for line in lines}
    not_expressible = {"ok", "bad_example", "not_a_string", "missing_completion"}
    assert listed == set(ERROR_CODES) - not_expressible


def test_scorer_version_names_spec_v1():
    reward, d = verdict("Final: 323")
    assert SCORER_VERSION == "strict-final-v1" == d["scorer_version"]
    assert reward == 1.0


def test_fingerprint_is_the_sha256_of_spec_v1_py():
    source = ROOT / "course" / "instrument" / "spec_v1.py"
    assert scorer_fingerprint() == hashlib.sha256(source.read_bytes()).hexdigest()
    assert re.fullmatch(r"[0-9a-f]{64}", scorer_fingerprint())


# The bytes of spec_v1.py are the fingerprint every manifest records and the gate compares: a
# re-wrap, a renamed module in a docstring or a lint fix there makes every earlier run incomparable.
# Change this value only together with the spec (docs/reward_spec_v1.md, "Versioning").
PINNED_SCORER_FINGERPRINT = "52e355d1438e6e1c7dee6a89ed1bcfeeceead0ab8447d69e42a79c594c369037"


def test_the_scorer_fingerprint_is_pinned_so_an_edit_of_spec_v1_cannot_pass_unnoticed():
    assert scorer_fingerprint() == PINNED_SCORER_FINGERPRINT


def test_editing_a_rule_changes_the_fingerprint(tmp_path):
    # The instrument is the rules: one character of one rule is a different instrument.
    spec = (ROOT / "course" / "instrument" / "spec_v1.py").read_text(encoding="utf-8")
    rule = "MAX_DIGITS = 4300\n"
    assert spec.count(rule) == 1
    edited = tmp_path / "spec_v1.py"
    edited.write_text(spec.replace(rule, "MAX_DIGITS = 4301\n"), encoding="utf-8")
    assert scorer_fingerprint(edited) != scorer_fingerprint()


def test_an_unedited_copy_of_the_rules_has_the_same_fingerprint(tmp_path):
    copy = tmp_path / "spec_v1.py"
    copy.write_bytes((ROOT / "course" / "instrument" / "spec_v1.py").read_bytes())
    assert scorer_fingerprint(copy) == scorer_fingerprint()


def test_editing_a_cli_help_text_leaves_the_fingerprint_unchanged(tmp_path):
    # A copy of the package whose course/score.py has another help text: the tool
    # itself (--version) must still report the fingerprint of the untouched rules.
    shutil.copytree(ROOT / "course", tmp_path / "course", ignore=shutil.ignore_patterns("__pycache__"))
    tool = tmp_path / "course" / "score.py"
    text = tool.read_text(encoding="utf-8")
    help_text = "the example's expected_answer"
    assert text.count(help_text) == 1
    tool.write_text(text.replace(help_text, "the integer the completion must state"), encoding="utf-8")
    code = ("import course.score as tool\nfrom course.instrument.rubric_registry import scorer_fingerprint\n"
            "print(tool.__file__)\nprint(scorer_fingerprint())\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(tmp_path)}, timeout=60)
    assert proc.returncode == 0, proc.stderr
    used, fingerprint = proc.stdout.split()
    assert Path(used) == tool  # the edited copy was imported, not the repository's tool
    assert fingerprint == scorer_fingerprint()


# ---------------------------------------------------------------------------
# The CLI.
# ---------------------------------------------------------------------------
def test_cli_help_shows_a_worked_example(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert 'python -m course.score --expected 323 "Final: 323"' in out


def test_cli_prints_json_with_reward_one_and_exits_zero():
    proc = subprocess.run([sys.executable, "-m", "course.score", "--expected", "323", "Final: 323"],
                          capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["reward"] == 1.0
    assert result["details"]["error_code"] == "ok"


def test_cli_exits_one_on_reward_zero_and_explains(capsys):
    assert main(["--expected", "323", "Final:323"]) == 1
    result = json.loads(capsys.readouterr().out)
    assert (result["reward"], result["details"]["error_code"]) == (0.0, "prefix_spacing")


def test_cli_exits_two_on_bad_usage(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--expected", "abc", "Final: 323"])
    assert exc.value.code == 2
    assert "invalid int value" in capsys.readouterr().err


def test_cli_reads_stdin_as_bytes_so_crlf_inside_is_kept():
    proc = subprocess.run([sys.executable, "-m", "course.score", "--expected", "323", "-"],
                          input=b"Final: 3\r\n23\r\n", capture_output=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 1
    details = json.loads(proc.stdout)["details"]
    assert (details["error_code"], details["char"]) == ("multiple_lines", "U+000D CARRIAGE RETURN")


def test_cli_rejects_stdin_that_is_not_utf8_with_exit_two():
    proc = subprocess.run([sys.executable, "-m", "course.score", "--expected", "323", "-"],
                          input=b"Final: 3\xff23", capture_output=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 2
    assert proc.stdout == b""
    assert b"not valid UTF-8" in proc.stderr


def test_the_cli_example_in_the_spec_document_is_what_the_cli_prints(capsys):
    text = (ROOT / "docs" / "reward_spec_v1.md").read_text(encoding="utf-8")
    block = text.split('$ python -m course.score --expected 323 "Final:323"\n', 1)[1].split("```", 1)[0]
    assert main(["--expected", "323", "Final:323"]) == 1
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads(block)
    assert printed["details"]["error_code"] == "prefix_spacing"
