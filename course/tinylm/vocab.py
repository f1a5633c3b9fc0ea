"""The tiny LM's vocabulary: one token per character, plus five special tokens.

This module is standard library only, so tools that only need to *look at*
tokens (``course.token_inspect``) can import it without PyTorch.

Layout of the 101 ids (fixed: a checkpoint's embedding rows depend on it)::

    0 <pad>   padding in a batch; never attended to, never scored
    1 <bos>   start of every sequence
    2 <sep>   end of the prompt: the policy's turn starts after it
    3 <eos>   the policy's "I am done" token; sampling stops here
    4 <unk>   any character outside the table below (decodes to U+FFFD)
    5 "\\n"    newline (completions may have several lines)
    6..100    printable ASCII, " " (32) to "~" (126), in code-point order

A policy sequence is ``<bos> prompt <sep> completion <eos>``. Characters are the
tokens, so "Final: 323" is 10 tokens, and a format slip such as "Final:323" is a
different *token* sequence, not just a different string.

    >>> ids = VOCAB.encode("Final: 323")
    >>> len(ids), VOCAB.decode(ids)
    (10, 'Final: 323')
    >>> VOCAB.token_text(VOCAB.EOS), VOCAB.token_text(VOCAB.encode("F")[0])
    ('<eos>', 'F')
    >>> VOCAB.decode([VOCAB.BOS] + VOCAB.encode("hi") + [VOCAB.EOS])
    'hi'
    >>> VOCAB.decode(VOCAB.encode("x\u2212y"))  # U+2212 MINUS SIGN is not in the table
    'x\\ufffdy'
"""

from __future__ import annotations

from typing import Iterable

from course.errors import CourseError

__all__ = ["CharVocab", "VOCAB"]


class CharVocab:
    """Character-level tokenizer with ``<pad> <bos> <sep> <eos> <unk>`` specials."""

    PAD = 0
    BOS = 1
    SEP = 2
    EOS = 3
    UNK = 4
    SPECIALS: tuple[str, ...] = ("<pad>", "<bos>", "<sep>", "<eos>", "<unk>")
    UNKNOWN_CHAR = "\ufffd"  # what <unk> decodes to: the Unicode replacement character

    def __init__(self) -> None:
        chars = ["\n"] + [chr(c) for c in range(32, 127)]
        self._itos: tuple[str, ...] = self.SPECIALS + tuple(chars)
        self._stoi: dict[str, int] = {ch: i + len(self.SPECIALS) for i, ch in enumerate(chars)}

    @property
    def size(self) -> int:
        """Number of token ids (the embedding table's row count)."""
        return len(self._itos)

    def encode(self, text: str, *, strict: bool = False) -> list[int]:
        """One id per character; characters outside the table become ``<unk>``.

        ``strict=True`` raises ``CourseError`` instead of using ``<unk>``.
        """
        if not isinstance(text, str):
            raise CourseError(f"encode expects text, got {type(text).__name__}")
        ids = []
        for pos, ch in enumerate(text):
            i = self._stoi.get(ch)
            if i is None:
                if strict:
                    raise CourseError(f"character U+{ord(ch):04X} at position {pos} is not in the tiny LM vocabulary")
                i = self.UNK
            ids.append(i)
        return ids

    def decode(self, ids: Iterable[int]) -> str:
        """Text of the character tokens; ``<pad> <bos> <sep> <eos>`` are dropped, ``<unk>`` is U+FFFD."""
        out = []
        for i in ids:
            i = int(i)
            if not 0 <= i < len(self._itos):
                raise CourseError(f"token id {i} is outside the vocabulary (0..{len(self._itos) - 1})")
            if i == self.UNK:
                out.append(self.UNKNOWN_CHAR)
            elif i >= len(self.SPECIALS):
                out.append(self._itos[i])
        return "".join(out)

    def token_text(self, i: int) -> str:
        """What one id stands for: the character itself, or the special's name such as ``<eos>``."""
        i = int(i)
        if not 0 <= i < len(self._itos):
            raise CourseError(f"token id {i} is outside the vocabulary (0..{len(self._itos) - 1})")
        return self._itos[i]

    def is_special(self, i: int) -> bool:
        """True for ``<pad> <bos> <sep> <eos> <unk>``."""
        return 0 <= int(i) < len(self.SPECIALS)


VOCAB = CharVocab()


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.tinylm.vocab"))
