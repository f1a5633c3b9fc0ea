"""Properties of the scorer that must hold for every input (reward spec v1, rules 2, 4 and 10).

Hypothesis generates the inputs; the settings keep the whole file to a few seconds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import unicodedata
from pathlib import Path

import hypothesis_text as ht  # st.text() without hypothesis's slow first-run codec table
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from course.instrument import spec_v1 as score_module
from course.instrument.spec_v1 import ASCII_WHITESPACE, ERROR_CODES, MAX_DIGITS, SCORER_VERSION, score

ROOT = Path(__file__).resolve().parents[1]
REQUIRED = ("scorer_version", "error_code", "parsed", "extracted", "expected", "reason")
FAST = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"

# Any code point, surrogates included (st.text() leaves them out by default).
any_text = st.text(st.characters(exclude_categories=()), max_size=60)
# Text built from the pieces the diagnosis cares about, so that every branch is reached.
PIECES = ["Final", "final", ":", " ", "  ", "\t", "-", "+", "0", "3", "23", "323", ".", ",", "_", "'", "e", "/",
          "\n", "\r\n", "\x85", "\u2028", "\u00a0", "\u202f", "\u200b", "\ufeff", "\u00ad", "\uff1a", "\uff13",
          "\u0663", "\u00b2", "\u2212", "\u0456", "\u0430", "\uff26", "x", "Answer", "\U000e0041", "\ud800"]
near_miss_text = st.lists(st.sampled_from(PIECES), max_size=8).map("".join)
texts = st.one_of(any_text, near_miss_text, near_miss_text.map(lambda t: "Final: " + t))

json_like = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | ht.text(max_size=10),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(ht.text(max_size=5), inner, max_size=4),
    max_leaves=10,
)
non_text = st.one_of(json_like.filter(lambda v: not isinstance(v, str)), st.binary(max_size=20),
                     st.complex_numbers(),
                     st.from_type(type).flatmap(st.from_type).filter(lambda v: not isinstance(v, str)))
examples = st.one_of(
    st.builds(lambda v: {"expected_answer": v}, st.integers()),
    st.builds(lambda v: {"expected_answer": v}, json_like),
    json_like,
    st.just({}),
)


def assert_well_formed(result, completion=None):
    """The invariants every verdict satisfies."""
    assert set(result) == {"reward", "details"}
    d = result["details"]
    assert all(key in d for key in REQUIRED)
    assert d["scorer_version"] == SCORER_VERSION
    assert d["error_code"] in ERROR_CODES and d["error_code"] != "missing_completion"
    assert result["reward"] in (0.0, 1.0) and type(result["reward"]) is float
    assert (result["reward"] == 1.0) == (d["error_code"] == "ok")
    assert d["parsed"] == (d["extracted"] is not None) == (d["error_code"] in ("ok", "wrong_answer"))
    assert isinstance(d["reason"], str) and d["reason"]
    json.dumps(d, allow_nan=False)  # JSON-safe, always
    if "position" in d and isinstance(completion, str):
        assert d["char"].startswith(f"U+{ord(completion[d['position']]):04X} ")


@FAST
@given(example=examples, completion=texts)
def test_any_text_with_any_example_gets_a_well_formed_verdict(example, completion):
    assert_well_formed(score(example, completion), completion)


@FAST
@given(completion=texts)
def test_any_text_is_scored_without_raising(completion):
    assert_well_formed(score({"expected_answer": 323}, completion), completion)


@FAST
@given(completion=non_text)
def test_any_non_text_gets_not_a_string(completion):
    result = score({"expected_answer": 323}, completion)
    assert_well_formed(result)
    assert result["details"]["error_code"] == "not_a_string"


@FAST
@given(example=examples, completion=texts)
def test_scoring_twice_gives_equal_results(example, completion):
    assert score(example, completion) == score(example, completion)


@FAST
@given(n=st.integers(min_value=-(10**MAX_DIGITS - 1), max_value=10**MAX_DIGITS - 1) | st.integers())
def test_final_n_scores_one_for_every_integer_n(n):
    result = score({"expected_answer": n}, f"Final: {n}")
    assert result["reward"] == 1.0
    assert result["details"]["extracted"] == n


@FAST
@given(n=st.integers(), other=st.integers())
def test_a_different_well_formed_integer_is_a_wrong_answer(n, other):
    result = score({"expected_answer": n}, f"Final: {other}")
    assert result["reward"] == (1.0 if n == other else 0.0)
    assert result["details"]["error_code"] == ("ok" if n == other else "wrong_answer")


@FAST
@given(completion=texts, left=st.text(ASCII_WHITESPACE, max_size=5), right=st.text(ASCII_WHITESPACE, max_size=5))
def test_wrapping_in_ascii_whitespace_never_changes_the_verdict(completion, left, right):
    plain = score({"expected_answer": 323}, completion)["details"]
    wrapped = score({"expected_answer": 323}, left + completion + right)["details"]
    # Positions index the completion as given, so they move by len(left); reasons quote them.
    if "position" in plain:
        assert wrapped.pop("position") == plain.pop("position") + len(left)
        wrapped.pop("reason"), plain.pop("reason")
    assert wrapped == plain


@FAST
@given(n=st.integers(), data=st.data())
def test_a_line_break_inside_a_valid_completion_makes_it_multiple_lines(n, data):
    core = f"Final: {n}"
    cut = data.draw(st.integers(min_value=1, max_value=len(core) - 1))
    brk = data.draw(st.sampled_from(LINE_BREAKS))
    result = score({"expected_answer": n}, core[:cut] + brk + core[cut:])
    assert result["reward"] == 0.0
    assert result["details"]["error_code"] == "multiple_lines"
    assert result["details"]["position"] == cut


def test_results_are_identical_in_a_fresh_process_with_another_hash_seed():
    inputs = [
        ({"expected_answer": 323}, "Final: 323"),
        ({"expected_answer": 323}, "final:  \uff13\uff12\uff13"),
        ({"expected_answer": -7}, "\u00a0Final: \u22127"),
        ({"expected_answer": 323}, "Final: 1\nFinal: 2\u2028Final: 323"),
        ({"expected_answer": 10**40}, f"Final: {10**40 + 1}"),
        ({"expected_answer": "323"}, "Final: 323"),
        ({"expected_answer": 323}, "F\u0456nal: 3_23"),
        ({"expected_answer": 0}, "Final: -0"),
    ] + [({"expected_answer": 323}, json.loads(line)["completion"])
         for line in (ROOT / "data" / "golden" / "golden_exploits.jsonl").read_text(encoding="utf-8").splitlines()]
    here = json.dumps([score(e, c) for e, c in inputs], sort_keys=True)
    program = (
        "import json, sys\nfrom course.instrument.spec_v1 import score\n"
        "inputs = json.loads(sys.stdin.read())\n"
        "print(json.dumps([score(e, c) for e, c in inputs], sort_keys=True))\n"
    )
    env = dict(os.environ, PYTHONHASHSEED="12345")
    proc = subprocess.run([sys.executable, "-c", program], input=json.dumps(inputs), capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == here


# ---------------------------------------------------------------------------
# The fixed Unicode tables equal the Unicode 14 database they were taken from.
# ---------------------------------------------------------------------------
unicode14 = pytest.mark.skipif(unicodedata.unidata_version != "14.0.0",
                               reason="the tables in score.py are Unicode 14.0 (Python 3.11)")


ALL_CHARS = "".join(map(chr, range(sys.maxunicode + 1)))


def _category(name):
    return {ch for ch in ALL_CHARS if unicodedata.category(ch) == name}


@unicode14
def test_invisible_table_is_exactly_unicode_category_cf():
    table = {m.group() for pattern in (score_module._INVISIBLE_BMP, score_module._INVISIBLE_ASTRAL)
             for m in pattern.finditer(ALL_CHARS)}
    assert table == _category("Cf")


def test_find_invisible_returns_the_first_hit_across_both_tables():
    find = score_module._find_invisible
    assert find("ab\U000e0041c\u200b") == 2
    assert find("ab\u200bc\U000e0041") == 2
    assert find("\U0001F600\u00e9") == -1


@unicode14
def test_unicode_space_table_is_category_zs_without_the_ascii_space():
    assert set(score_module._UNICODE_SPACES) == _category("Zs") - {" "}


@unicode14
def test_other_digit_table_is_every_isdigit_character_except_ascii_digits():
    table = {m.group() for m in score_module._OTHER_DIGIT.finditer(ALL_CHARS)}
    assert table == {ch for ch in ALL_CHARS if ch.isdigit()} - set("0123456789")


def test_lookalike_tables_hold_no_ascii_character():
    for table in (score_module._MINUS_LOOKALIKES, score_module._COLON_LOOKALIKES, score_module._LETTER_LOOKALIKES):
        assert not any(ch.isascii() for ch in table)
    # ... and none of them is silently trimmed, invisible or a line break (those have their own codes).
    for ch in [*score_module._MINUS_LOOKALIKES, *score_module._COLON_LOOKALIKES, *score_module._LETTER_LOOKALIKES]:
        assert ch not in LINE_BREAKS and score_module._find_invisible(ch) == -1
