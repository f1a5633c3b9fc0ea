"""Readers of outside question/answer data: GSM8K release files, Hugging Face datasets, parquet, JSONL.

This module owns turning rows another project published into course dataset items
(``{"id", "prompt", "expected_answer"}``, docs/formats.md) without guessing: stable ids
(``item_id``: ``<source>-<row>``), integer answers only (``parse_integer``,
``gsm8k_answer_text``; others are an error or, when asked, ``Skipped`` and listed), the
course's instruction appended to the question (``make_prompt``), the row readers
(``jsonl_rows``, ``hf_rows``), ``convert`` and ``render``. ``python -m course.datasets import``
is the tool: it parses the options, writes the file atomically and prints.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from course.errors import CourseError, foreign_reader
from course.instrument.spec_v1 import MAX_DIGITS
from course.lib.records.jsonl import dumps_line, iter_objects
from course.lib.visible import visible

INSTRUCTION = "Output exactly one line: Final: <int>"
GSM8K_MARK = "####"
# An integer as datasets write it: optional sign, digits, optionally grouped in threes by commas.
_INTEGER = re.compile(r"[+-]?(?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)")


@dataclass(frozen=True)
class Skipped:
    """An item left out because its answer is not an integer (reported, never silent)."""

    where: str
    answer: str


@dataclass(frozen=True)
class Imported:
    """The converted items and what was left out."""

    items: tuple[dict[str, Any], ...]
    skipped: tuple[Skipped, ...]


# ---------------------------------------------------------------------------
# Pure pieces: answers and ids
# ---------------------------------------------------------------------------
def parse_integer(text: str, where: str = "answer") -> int | None:
    """The integer a dataset's answer text states, or None when it is not an integer.

    An integer with more than reward spec v1's ``MAX_DIGITS`` digits is an error
    (``CourseError`` at ``where``), not a non-integer: the scorer could not score it,
    the course's JSON reader would refuse the file, and ``int()`` itself refuses
    such a string. The digits are counted before ``int()`` ever sees them.

    >>> parse_integer("1,234"), parse_integer(" -7 "), parse_integer("3.5"), parse_integer("1,23")
    (1234, -7, None, None)
    """
    text = text.strip()
    if not _INTEGER.fullmatch(text):
        return None
    sign = "-" if text.startswith("-") else ""
    digits = text.lstrip("+-").replace(",", "").lstrip("0") or "0"
    if len(digits) > MAX_DIGITS:
        raise CourseError(
            f"{where}: the answer is an integer of {len(digits):,} digits; reward spec v1 scores integers "
            f"of at most {MAX_DIGITS} digits (MAX_DIGITS)"
        )
    return int(sign + digits)


def gsm8k_answer_text(answer: str, where: str) -> str:
    """The text after the one ``####`` of a GSM8K solution (an error if there is none, or more than one).

    Two marks mean an edited or concatenated solution: which one is the answer is a guess,
    and the importer does not guess.

    >>> gsm8k_answer_text("3 + 4 = <<3+4=7>>7\\n#### 7", "x:1")
    '7'
    """
    marks = answer.count(GSM8K_MARK)
    if marks == 0:
        raise CourseError(f"{where}: the answer has no '{GSM8K_MARK} <n>' line (not the GSM8K release format)")
    if marks > 1:
        raise CourseError(
            f"{where}: the answer has {marks} '{GSM8K_MARK}' marks; a GSM8K solution ends with exactly one "
            f"'{GSM8K_MARK} <n>' line (which one is the answer would be a guess)"
        )
    return answer.split(GSM8K_MARK, 1)[1].strip()


def item_id(source: str, row: int) -> str:
    """The stable id of row ``row`` (1-based) of ``source``.

    >>> item_id("gsm8k_test", 17)
    'gsm8k_test-00017'
    """
    return f"{source}-{row:05d}"


def make_prompt(question: str, instruction: str = INSTRUCTION) -> str:
    """The question, then the course's one-line answer instruction."""
    question = question.strip()
    return f"{question} {instruction}" if instruction else question


def convert(
    rows: Iterable[tuple[str, dict[str, Any]]],
    *,
    source: str,
    question_col: str,
    answer_col: str,
    answer_style: str,
    skip_non_integer: bool,
    instruction: str = INSTRUCTION,
) -> Imported:
    """Turn ``(where, row)`` pairs into course dataset items.

    ``where`` is the row's ``path:line``; row numbers in ids count every row read,
    skipped ones included, so a row's id does not depend on its neighbours.
    ``answer_style`` is ``gsm8k`` (text after ``####``) or ``plain`` (the whole value).
    """
    items: list[dict[str, Any]] = []
    skipped: list[Skipped] = []
    for row_number, (where, row) in enumerate(rows, start=1):
        for col in (question_col, answer_col):
            if col not in row:
                have = ", ".join(sorted(map(str, row))) or "none"
                raise CourseError(f"{where}: missing column '{col}' (columns: {have})")
        question, answer = row[question_col], row[answer_col]
        if not isinstance(question, str) or not question.strip():
            raise CourseError(f"{where}: column '{question_col}' must be non-empty text")
        if isinstance(answer, bool) or not isinstance(answer, (str, int, float)):
            raise CourseError(f"{where}: column '{answer_col}' must be text or a number, got {type(answer).__name__}")
        if isinstance(answer, int):
            value: int | None = answer
            shown = str(answer)
        elif isinstance(answer, float):
            value = int(answer) if answer.is_integer() else None
            shown = repr(answer)
        else:
            shown = gsm8k_answer_text(answer, where) if answer_style == "gsm8k" else answer.strip()
            value = parse_integer(shown, where)
        if value is None:
            if not skip_non_integer:
                raise CourseError(
                    f"{where}: the answer {shown[:40]!r} is not an integer "
                    "(the strict scorer needs one; --skip-non-integer leaves such items out and lists them)"
                )
            skipped.append(Skipped(where, shown[:80]))
            continue
        items.append({"id": item_id(source, row_number), "prompt": make_prompt(question, instruction), "expected_answer": value})
    return Imported(tuple(items), tuple(skipped))


# ---------------------------------------------------------------------------
# Readers (I/O at the edge)
# ---------------------------------------------------------------------------
def jsonl_rows(path: str | os.PathLike[str]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Rows of a JSONL file through the course's one JSONL reader (its file rules and messages)."""
    for lineno, obj in iter_objects(path):
        yield f"{path}:{lineno}", obj


def hf_rows(path: str | os.PathLike[str], split: str | None) -> Iterator[tuple[str, dict[str, Any]]]:
    """Rows of a local parquet file or a ``datasets`` dataset saved with ``save_to_disk``.

    Locations are ``path:row`` (1-based): a parquet file or an Arrow dataset has no lines.
    """
    p = Path(path)
    if p.is_dir():
        try:
            import datasets
        except ImportError:
            raise CourseError("reading a saved Hugging Face dataset needs the hf extra: pip install -e '.[hf]'") from None
        with foreign_reader(path, "dataset saved with save_to_disk"):
            loaded = datasets.load_from_disk(str(p))
        if isinstance(loaded, datasets.DatasetDict):
            names = sorted(loaded)
            if split is None:
                raise CourseError(f"{path}: a DatasetDict with splits {names}: choose one with --split")
            if split not in loaded:
                raise CourseError(f"{path}: no split {split!r} (splits: {names})")
            loaded = loaded[split]
        elif split is not None:
            raise CourseError(f"{path}: a single dataset has no splits; leave out --split")
        with foreign_reader(path, "dataset saved with save_to_disk"):  # Arrow reads its rows lazily
            rows = [dict(row) for row in loaded]
        for i, row in enumerate(rows, start=1):
            yield f"{path}:{i}", row
        return
    if p.suffix == ".parquet":
        try:
            import pyarrow.parquet as pq
        except ImportError:
            raise CourseError("reading parquet needs the hf extra: pip install -e '.[hf]'") from None
        with foreign_reader(path, "parquet file"):
            rows = pq.read_table(p).to_pylist()
        for i, row in enumerate(rows, start=1):
            yield f"{path}:{i}", row
        return
    if p.suffix in (".jsonl", ".json") and p.is_file():
        yield from jsonl_rows(p)
        return
    raise CourseError(f"{path}: expected a save_to_disk directory, a .parquet or a .jsonl file")


def render(items: Sequence[dict[str, Any]]) -> str:
    """The dataset file's text: one canonical line per item (course.lib.records.jsonl.dumps_line)."""
    return "".join(dumps_line(it) + "\n" for it in items)


def import_report(source: Path, fmt: str, out: Path, result: Imported, fingerprint: str) -> dict[str, Any]:
    """What ``python -m course.datasets import --json`` prints about one import."""
    return {
        "source": str(source), "format": fmt, "out": str(out), "items": len(result.items),
        "skipped_non_integer": len(result.skipped),
        "skipped": [{"where": s.where, "answer": s.answer} for s in result.skipped],
        "dataset_fingerprint": fingerprint,
    }


def skipped_notes(skipped: Sequence[Skipped], shown: int = 10) -> list[str]:
    """Progress lines naming the first ``shown`` skipped items (and how many more)."""
    notes = [f"skipped (answer not an integer): {visible(s.where)}: {visible(repr(s.answer))}" for s in skipped[:shown]]
    if len(skipped) > shown:
        notes.append(f"... and {len(skipped) - shown} more skipped")
    return notes


def import_summary(result: Imported, source: Path, out: Path, fingerprint: str) -> str:
    """The three lines the tool prints after writing the dataset."""
    return "\n".join([
        f"imported {len(result.items)} items from {visible(str(source))} -> {visible(str(out))}",
        f"skipped (answer not an integer): {len(result.skipped)}",
        f"dataset_fingerprint: {fingerprint}",
    ])


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.bridges.dataset_readers"))
