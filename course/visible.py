"""Make invisible and look-alike characters visible, so a student can see why "Final: 7" scored 0.

A completion that looks right on screen may hold a tab, a no-break space, a
zero-width space, a fullwidth digit or a Unicode minus sign; the scorer rejects
each of them (reward spec v1), and a plain ``print`` hides all of them. This
module rewrites text so that every such character is shown as an escape.

The notation (unambiguous: the opening bracket ⟨ itself is always escaped, so
every ⟨ in the output starts an escape):

  * printable ASCII (space to ~) is shown as it is;
  * ``⟨\\n⟩`` newline, ``⟨\\r⟩`` carriage return, ``⟨\\t⟩`` tab;
  * ``⟨U+XXXX⟩`` any other character: ASCII control characters and every
    non-ASCII character (NBSP ⟨U+00A0⟩, zero-width space ⟨U+200B⟩, minus sign
    ⟨U+2212⟩, fullwidth digit three ⟨U+FF13⟩, a Cyrillic "а" ⟨U+0430⟩ ...).

``legend(text)`` names each escaped character once, for a key under the text.
Used by ``course.inspect_run`` and ``summary.md``; try it with::

    python -c "from course.visible import visible; print(visible('Final:\\u00a0\\u22127\\n'))"
"""

from __future__ import annotations

import unicodedata

__all__ = ["visible", "legend"]

_NAMED = {"\n": "⟨\\n⟩", "\r": "⟨\\r⟩", "\t": "⟨\\t⟩"}


def _escape(ch: str) -> str:
    named = _NAMED.get(ch)
    if named is not None:
        return named
    return f"⟨U+{ord(ch):04X}⟩"


def _plain(ch: str) -> bool:
    return " " <= ch <= "~"


def visible(text: str, *, break_lines: bool = False, limit: int | None = None) -> str:
    """Return ``text`` with every character outside printable ASCII escaped.

    ``break_lines=True`` keeps a real line break after each ``⟨\\n⟩`` so long
    multi-line completions stay readable; ``limit`` cuts the input after that
    many characters and says how many were left out.

    >>> visible("Final: 7")
    'Final: 7'
    >>> visible("Final:\\u00a0\\u22127\\n")
    'Final:⟨U+00A0⟩⟨U+2212⟩7⟨\\\\n⟩'
    >>> visible("\\u200b\\uff13\\t⟨")
    '⟨U+200B⟩⟨U+FF13⟩⟨\\\\t⟩⟨U+27E8⟩'
    """
    if not isinstance(text, str):
        return f"<not text: {type(text).__name__}>"
    cut = limit is not None and len(text) > limit
    body = text[:limit] if cut else text
    if body.isascii() and body.isprintable():
        out = body  # the common case: nothing to escape
    else:
        parts = []
        for ch in body:
            if _plain(ch):
                parts.append(ch)
            else:
                parts.append(_escape(ch))
                if break_lines and ch == "\n":
                    parts.append("\n")
        out = "".join(parts)
    if cut:
        out += f"… [{len(text) - len(body)} more characters]"
    return out


def legend(text: str) -> list[str]:
    """One line per distinct escaped character, in order of first appearance.

    >>> legend("Final: \\u22127\\u00a0")
    ['⟨U+2212⟩ MINUS SIGN', '⟨U+00A0⟩ NO-BREAK SPACE']
    >>> legend("Final: 7\\n")
    []
    """
    if not isinstance(text, str):
        return []
    seen: dict[str, None] = {}  # a dict keeps first-appearance order (never iterate a set)
    for ch in text:
        if not _plain(ch) and ch not in _NAMED and ch not in seen:
            seen[ch] = None
    return [f"{_escape(ch)} {unicodedata.name(ch, _control_name(ch))}" for ch in seen]


def _control_name(ch: str) -> str:
    return "CONTROL CHARACTER" if unicodedata.category(ch) == "Cc" else "UNNAMED CHARACTER"
