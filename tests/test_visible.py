"""course.lib.visible: every invisible or look-alike character becomes an unambiguous escape."""

from __future__ import annotations

import json
import unicodedata

import hypothesis_text as ht  # st.text() without hypothesis's slow first-run codec table
from hypothesis import given
from hypothesis import strategies as st

from course.lib.visible import dumps_safe, legend, visible


def test_plain_ascii_is_shown_unchanged() -> None:
    assert visible("Final: -42") == "Final: -42"


def test_newline_tab_and_carriage_return_get_named_escapes() -> None:
    assert visible("a\nb\tc\rd") == "a⟨\\n⟩b⟨\\t⟩c⟨\\r⟩d"


def test_nbsp_and_zero_width_space_are_escaped_by_code_point() -> None:
    assert visible("Final:\u00a07\u200b") == "Final:⟨U+00A0⟩7⟨U+200B⟩"


def test_unicode_minus_and_fullwidth_digits_are_escaped() -> None:
    assert visible("Final: \u2212\uff14\uff12") == "Final: ⟨U+2212⟩⟨U+FF14⟩⟨U+FF12⟩"


def test_a_cyrillic_lookalike_letter_is_escaped() -> None:
    assert visible("Fin\u0430l: 1") == "Fin⟨U+0430⟩l: 1"


def test_ascii_control_characters_are_escaped() -> None:
    assert visible("\x00\x1b\x7f") == "⟨U+0000⟩⟨U+001B⟩⟨U+007F⟩"


def test_a_literal_opening_bracket_is_itself_escaped_so_escapes_are_unambiguous() -> None:
    assert visible("⟨U+2212⟩") == "⟨U+27E8⟩U+2212⟨U+27E9⟩"


def test_break_lines_keeps_a_real_line_break_after_each_newline_escape() -> None:
    assert visible("a\nb", break_lines=True) == "a⟨\\n⟩\nb"


def test_limit_cuts_long_text_and_says_how_much_was_left_out() -> None:
    assert visible("x" * 10, limit=4) == "xxxx… [6 more characters]"


def test_non_text_is_described_not_crashed_on() -> None:
    assert visible(None) == "<not text: NoneType>"  # type: ignore[arg-type]


def test_legend_names_each_escaped_character_once_in_order_of_appearance() -> None:
    assert legend("\u2212\u00a0\u2212 ok\n") == ["⟨U+2212⟩ MINUS SIGN", "⟨U+00A0⟩ NO-BREAK SPACE"]


@given(ht.text())
def test_visible_output_is_printable_ascii_apart_from_the_escape_brackets(text: str) -> None:
    shown = visible(text).replace("⟨", "").replace("⟩", "")
    assert all(" " <= ch <= "~" for ch in shown)


@given(ht.text())
def test_visible_is_injective_so_different_texts_never_look_the_same(text: str) -> None:
    # Decode the notation back and get the original text: no information is lost.
    import re

    def undo(match: re.Match) -> str:
        body = match.group(1)
        return {"\\n": "\n", "\\t": "\t", "\\r": "\r"}.get(body) or chr(int(body[2:], 16))

    assert re.sub(r"⟨([^⟩]*)⟩", undo, visible(text)) == text


def test_legend_names_a_lone_surrogate_as_not_a_character() -> None:
    assert legend("a\udc00") == ["⟨U+DC00⟩ LONE SURROGATE (not a character)"]


_TERMINAL_UNSAFE = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}


@given(st.recursive(st.none() | st.booleans() | st.integers() | ht.text(),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(ht.text(), inner, max_size=3),
                    max_leaves=6))
def test_dumps_safe_decodes_to_the_same_value_and_holds_no_unsafe_character(value) -> None:
    text = dumps_safe(value, indent=2)
    assert json.loads(text) == value
    assert not [ch for ch in text if ch != "\n" and unicodedata.category(ch) in _TERMINAL_UNSAFE]
    text.encode("utf-8")  # never raises: a lone surrogate is written as an escape


def test_dumps_safe_keeps_readable_non_ascii_so_ordinary_output_is_unchanged() -> None:
    value = {"visible": "Final:␠⟨U+2212⟩323", "text": "Final: \u2212323 caf\u00e9"}
    assert dumps_safe(value, indent=2) == json.dumps(value, ensure_ascii=False, indent=2)
