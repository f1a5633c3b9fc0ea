"""Bring outside question/answer data into the course's dataset format.

The course measures on files of ``{"id", "prompt", "expected_answer"}`` lines
(docs/formats.md). Practitioners hold their data elsewhere: the GSM8K release
files (``question``, and an ``answer`` that is a worked solution ending in
``#### <n>``), or a Hugging Face ``datasets`` dataset. This tool converts them,
and refuses to guess:

  * ids are stable: ``<source>-<row>`` (row 1-based, five digits at least), so the
    same file always gives the same ids, and the same bytes;
  * the answer must be an integer (thousands commas as in ``1,234`` are read);
    an item whose answer is not (``3.5``, ``1/2``, ``x``) is an error at its
    ``path:line`` — or, with ``--skip-non-integer``, left out, counted and listed
    (never dropped silently);
  * a GSM8K answer without ``####``, a missing column or an unreadable line is
    ``path:line: what is wrong`` and exit 2; nothing is written, and an existing
    output file is only replaced with ``--force`` (the write is atomic).

The prompt is the question followed by the course's instruction
(`` Output exactly one line: Final: <int>``), the line the strict scorer rewards.
The sha256 printed at the end is the dataset fingerprint ``course.eval`` records
and ``course.gate`` locks.

Run it::

    python -m course.datasets import --format gsm8k gsm8k_test.jsonl --out runs/gsm8k_test.jsonl
    python -m course.datasets import --format hf data.parquet --question-col problem --answer-col solution --out runs/ds.jsonl
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from course.cli import EXIT_OK, info, make_parser, run
from course.errors import CourseError

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
def parse_integer(text: str) -> int | None:
    """The integer a dataset's answer text states, or None when it is not an integer.

    >>> parse_integer("1,234"), parse_integer(" -7 "), parse_integer("3.5"), parse_integer("1,23")
    (1234, -7, None, None)
    """
    text = text.strip()
    if not _INTEGER.fullmatch(text):
        return None
    return int(text.replace(",", ""))


def gsm8k_answer_text(answer: str, where: str) -> str:
    """The text after the last ``####`` of a GSM8K solution (an error if there is none).

    >>> gsm8k_answer_text("3 + 4 = <<3+4=7>>7\\n#### 7", "x:1")
    '7'
    """
    if GSM8K_MARK not in answer:
        raise CourseError(f"{where}: the answer has no '{GSM8K_MARK} <n>' line (not the GSM8K release format)")
    return answer.rsplit(GSM8K_MARK, 1)[1].strip()


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
            value = parse_integer(shown)
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
    from course.lib.jsonl import iter_objects

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
        try:
            loaded = datasets.load_from_disk(str(p))
        except (FileNotFoundError, ValueError) as exc:
            raise CourseError(f"{path}: not a dataset saved with save_to_disk ({exc})") from None
        if isinstance(loaded, datasets.DatasetDict):
            names = sorted(loaded)
            if split is None:
                raise CourseError(f"{path}: a DatasetDict with splits {names}: choose one with --split")
            if split not in loaded:
                raise CourseError(f"{path}: no split {split!r} (splits: {names})")
            loaded = loaded[split]
        elif split is not None:
            raise CourseError(f"{path}: a single dataset has no splits; leave out --split")
        for i, row in enumerate(loaded, start=1):
            yield f"{path}:{i}", dict(row)
        return
    if p.suffix == ".parquet":
        try:
            import pyarrow.parquet as pq
        except ImportError:
            raise CourseError("reading parquet needs the hf extra: pip install -e '.[hf]'") from None
        try:
            table = pq.read_table(p)
        except OSError as exc:
            raise CourseError(f"{path}: not a readable parquet file ({exc})") from None
        for i, row in enumerate(table.to_pylist(), start=1):
            yield f"{path}:{i}", row
        return
    if p.suffix in (".jsonl", ".json") and p.is_file():
        yield from jsonl_rows(p)
        return
    raise CourseError(f"{path}: expected a save_to_disk directory, a .parquet or a .jsonl file")


def render(items: Sequence[dict[str, Any]]) -> str:
    """The dataset file's text: one canonical line per item (course.lib.jsonl.dumps_line)."""
    from course.lib.jsonl import dumps_line

    return "".join(dumps_line(it) + "\n" for it in items)


# ---------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------
def build_parser():  # type: ignore[no-untyped-def]
    p = make_parser(
        "python -m course.datasets",
        "Import outside question/answer data (GSM8K release files, Hugging Face datasets, parquet, JSONL) "
        "into the course's dataset format, with stable ids and integer answers.",
        "  python -m course.datasets import --format gsm8k tests/data/gsm8k_sample.jsonl --out runs/gsm8k_sample.jsonl\n"
        "  python -m course.eval --dataset runs/gsm8k_sample.jsonl --completions ROLLOUTS.jsonl",
    )
    sub = p.add_subparsers(dest="command", required=True)
    imp = sub.add_parser("import", help="convert one file or saved dataset")
    imp.add_argument("source", help="the file (GSM8K JSONL, parquet, JSONL) or save_to_disk directory")
    imp.add_argument("--format", required=True, choices=("gsm8k", "hf"), help="gsm8k: question/answer with '#### n'; hf: named columns")
    imp.add_argument("--out", required=True, help="the dataset file to write")
    imp.add_argument("--question-col", default="question", help="column holding the question (default question)")
    imp.add_argument("--answer-col", default="answer", help="column holding the answer (default answer)")
    imp.add_argument("--answer-style", choices=("gsm8k", "plain"), default=None,
                     help="gsm8k: the answer is the text after '####'; plain: the whole value (default: gsm8k for --format gsm8k, plain for hf)")
    imp.add_argument("--split", default=None, help="split of a saved DatasetDict (e.g. test)")
    imp.add_argument("--source-name", default=None, help="id prefix (default: the source's file name without suffix)")
    imp.add_argument("--no-instruction", action="store_true", help="keep the question as the prompt, without the 'Final: <int>' instruction")
    imp.add_argument("--skip-non-integer", action="store_true", help="leave out (and list) items whose answer is not an integer instead of failing")
    imp.add_argument("--force", action="store_true", help="replace an existing output file")
    imp.add_argument("--json", action="store_true", help="print the result as JSON")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    return run(_main, argv)


def _main(argv: Sequence[str] | None) -> int:
    import json

    from course.lib.jsonl import write_text_atomic
    from course.lib.manifest import sha256_file

    args = build_parser().parse_args(argv)
    out = Path(args.out)
    if out.exists() and not args.force:
        raise CourseError(f"{out}: already exists (use --force to replace it)")
    source = Path(args.source)
    if not source.exists():
        raise CourseError(f"{source}: no such file or directory")
    name = args.source_name or (source.name if source.is_dir() else source.stem)
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
        raise CourseError(f"--source-name {name!r}: use letters, digits, '_', '.', '-' (it becomes part of every id)")
    style = args.answer_style or ("gsm8k" if args.format == "gsm8k" else "plain")
    rows = jsonl_rows(source) if args.format == "gsm8k" else hf_rows(source, args.split)
    result = convert(
        rows, source=name, question_col=args.question_col, answer_col=args.answer_col, answer_style=style,
        skip_non_integer=args.skip_non_integer, instruction="" if args.no_instruction else INSTRUCTION,
    )
    if not result.items:
        raise CourseError(f"{source}: no item with an integer answer; nothing written")
    write_text_atomic(out, render(result.items))  # everything was checked first: no half-written file
    fingerprint = sha256_file(out)
    report = {
        "source": str(source), "format": args.format, "out": str(out), "items": len(result.items),
        "skipped_non_integer": len(result.skipped),
        "skipped": [{"where": s.where, "answer": s.answer} for s in result.skipped],
        "dataset_fingerprint": fingerprint,
    }
    if args.json:
        print(json.dumps(report, ensure_ascii=False, sort_keys=True, indent=2))
        return EXIT_OK
    for s in result.skipped[:10]:
        info(f"skipped (answer not an integer): {s.where}: {s.answer!r}")
    if len(result.skipped) > 10:
        info(f"... and {len(result.skipped) - 10} more skipped")
    print(f"imported {len(result.items)} items from {source} -> {out}")
    print(f"skipped (answer not an integer): {len(result.skipped)}")
    print(f"dataset_fingerprint: {fingerprint}")
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
