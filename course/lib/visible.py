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
``dumps_safe(obj)`` is the JSON counterpart for ``--json`` output: the JSON text
of ``json.dumps(obj, ensure_ascii=False)`` with every character a terminal would
act on (controls, bidi overrides, other format characters, line separators) or
could not encode at all (a lone surrogate) written as a ``\\uXXXX`` escape, so
printing it never reorders, hides or crashes; a machine decodes the same value.

Every tool prints what it read from a hand-editable file (a manifest's split,
policy or seeds, a result id, a label) and every path or name the user typed
through ``visible``, never raw: the file or the name may hold an RLO, an ESC
sequence or a NUL that would rewrite the terminal. Two more, for whole lines:

  * ``command(argv)`` is a follow-up command a tool suggests (``View it: ...``,
    ``next: ...``): each argument shell-quoted (``shlex``) so that pasting the
    line runs exactly that command; readable characters stay as they are
    (a path with an é still pastes), and an argument holding a character a
    terminal would act on is shown in this notation (it could not be pasted
    anyway, and must not reach the terminal raw);
  * ``terminal_line(message)`` is the last guard ``course.cli`` puts on every
    ``error:`` and progress line: a line break or a character a terminal would
    act on becomes an escape, so a message is one line whatever it quotes.

Used by ``course.inspect_run``, ``course.gate``, ``course.kata``,
``course.token_inspect``, ``course.report``, every tool's ``Wrote``/``next``
lines and ``summary.md`` (``markdown_value``: each value one escaped code span); try it with::

    python -c "from course.lib.visible import visible; print(visible('Final:\\u00a0\\u22127\\n'))"
"""

from __future__ import annotations

import json
import os
import re
import shlex
import unicodedata
from typing import Any, Iterable

__all__ = ["visible", "legend", "dumps_safe", "command", "terminal_line", "code_span", "markdown_value"]

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
    category = unicodedata.category(ch)
    if category == "Cc":
        return "CONTROL CHARACTER"
    if category == "Cs":
        # A lone surrogate: half of a UTF-16 pair, not a character; UTF-8 cannot encode it.
        return "LONE SURROGATE (not a character)"
    return "UNNAMED CHARACTER"


# Categories a terminal acts on or cannot show: controls (Cc), format characters
# such as the bidi overrides and zero-width joiners (Cf), lone surrogates (Cs),
# private use (Co), unassigned code points (Cn), line/paragraph separators (Zl, Zp).
_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
_NOT_ASCII_OR_DEL = re.compile("[^\x00-\x7e]")


def _json_escape(match: re.Match[str]) -> str:
    ch = match.group()
    if unicodedata.category(ch) not in _UNSAFE_CATEGORIES:
        return ch
    code = ord(ch)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000  # outside the BMP: JSON spells it as a UTF-16 surrogate pair
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def dumps_safe(obj: Any, **kwargs: Any) -> str:
    """``json.dumps(obj, ensure_ascii=False, **kwargs)``, safe to print on any terminal.

    Readable characters (⟨, ␠, −, é) stay as they are, so ordinary output is
    unchanged; every unsafe one becomes ``\\uXXXX``. JSON writes non-ASCII only
    inside strings, so the escapes decode back to exactly the same value.

    >>> print(dumps_safe({"split": "dev\\u202e", "seed": "\\udc00", "note": "⟨ok⟩"}))
    {"split": "dev\\u202e", "seed": "\\udc00", "note": "⟨ok⟩"}
    >>> json.loads(dumps_safe(["\\x1b[2J\\x7f\\U000e0001"])) == ["\\x1b[2J\\x7f\\U000e0001"]
    True
    """
    return _NOT_ASCII_OR_DEL.sub(_json_escape, json.dumps(obj, ensure_ascii=False, **kwargs))


_TERMINAL_ACTS_ON = re.compile("[^\x20-\x7e]")  # candidates: every character outside printable ASCII


def _unsafe_to_escape(match: re.Match[str]) -> str:
    ch = match.group()
    return _escape(ch) if unicodedata.category(ch) in _UNSAFE_CATEGORIES else ch


def terminal_line(message: str) -> str:
    """``message`` safe to print as ONE line: line breaks, controls, bidi overrides and other
    characters a terminal acts on (``_UNSAFE_CATEGORIES``) in ``visible``'s notation; readable
    text (é, −, …, and escapes ``visible`` already wrote) unchanged.

    >>> terminal_line("runs/x\\x1b[31m\\nred\\u202e: no such file; caf\\u00e9 \\u2026")
    'runs/x⟨U+001B⟩[31m⟨\\\\n⟩red⟨U+202E⟩: no such file; café …'
    """
    return _TERMINAL_ACTS_ON.sub(_unsafe_to_escape, message)


def command(argv: Iterable[str | os.PathLike[str]]) -> str:
    """A command a tool suggests, shell-quoted so that pasting it runs exactly ``argv``.

    Each argument goes through ``shlex.quote`` (spaces, quotes, ``$`` and ``;`` are
    harmless); readable non-ASCII stays readable. An argument holding a character a
    terminal would act on cannot be pasted at all; it is shown escaped as
    ``terminal_line`` shows it, so the line still splits into the same arguments.

    >>> print(command(["python", "-m", "course.report", "runs/my run's \\"best\\""]))
    python -m course.report 'runs/my run'"'"'s "best"'
    >>> print(command(["python", "-m", "course.report", "runs/caf\\u00e9"]))
    python -m course.report 'runs/café'
    >>> print(command(["python", "-m", "course.report", "runs/\\x1b[2J\\u202e"]))
    python -m course.report 'runs/⟨U+001B⟩[2J⟨U+202E⟩'
    """
    return " ".join(shlex.quote(terminal_line(os.fspath(arg))) for arg in argv)


def code_span(text: str) -> str:
    """A Markdown code span holding ``text`` that a backtick inside it cannot close early.

    >>> code_span("x"), code_span("a`b")
    ('`x`', '`` a`b ``')
    """
    run, longest = 0, 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    fence = "`" * (longest + 1)
    return f"{fence} {text} {fence}" if longest else f"`{text}`"


def markdown_value(text: str) -> str:
    """A value read from a user's file or typed by the user (a path, a policy, a template name, an id),
    as a file the project writes for humans shows it (``summary.md``): one code span, escaped as
    ``terminal_line`` escapes it. A Markdown file is read by ``cat`` in a terminal as often as in a
    viewer, so an ESC or U+202E in it is as live as on stdout; a newline would forge a line, a
    backtick would end the span and let the rest be read as Markdown.

    >>> markdown_value("runs/caf\u00e9 \x1b[2J`x`\u202e")
    '`` runs/café ⟨U+001B⟩[2J`x`⟨U+202E⟩ ``'
    """
    return code_span(terminal_line(text))


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.visible"))
