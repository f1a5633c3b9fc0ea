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

import math
import os
import re
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from course.errors import CourseError, foreign_reader
from course.instrument.spec_v1 import MAX_DIGITS
from course.lib.records.jsonl import dumps_line, input_problem, iter_objects, open_input, read_json
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


# Every integer up to 2**53 is exactly a float; above it a float stands for several integers at once
# (9007199254740993 is read as ...992), so which one the data meant is lost.
FLOAT_EXACT_BELOW = 2 ** 53


def exact_integer(number: float | Decimal, where: str = "answer") -> int | None:
    """The integer a numeric answer states exactly, or None when it states a non-integer.

    A ``Decimal`` is a JSON number's own text (``iter_objects(..., exact_numbers=True)``): an
    integer exactly when its text is one, whatever its size (``1e23`` is 10**23, ``3.0`` is 3,
    ``9007199254740993.0`` is that integer), its digits counted against ``MAX_DIGITS`` before
    ``int()`` runs. A binary float (a parquet double) is an integer only below ``2**53``: above,
    which integer it was written for cannot be told, and that is an error, not a guess.

    >>> exact_integer(Decimal("1e23")), exact_integer(Decimal("9007199254740993.0")), exact_integer(Decimal("3.5"))
    (100000000000000000000000, 9007199254740993, None)
    >>> exact_integer(42.0), exact_integer(0.5)
    (42, None)
    """
    if isinstance(number, Decimal):
        if not number.is_finite():
            return None
        digits = max(number.adjusted() + 1, 1)
        if number.adjusted() >= MAX_DIGITS:  # 1e999999999: counted before anything is built
            raise CourseError(
                f"{where}: the answer is an integer of {digits:,} digits; reward spec v1 scores integers "
                f"of at most {MAX_DIGITS} digits (MAX_DIGITS)"
            )
        if number != number.to_integral_value():
            return None
        return int(number)
    if not math.isfinite(number) or not number.is_integer():
        return None
    if abs(number) >= FLOAT_EXACT_BELOW:
        raise CourseError(
            f"{where}: the answer {number!r} is a binary float of 2**53 or more, which stands for many integers "
            f"at once (floats are exact integers only below {FLOAT_EXACT_BELOW:,}); store the answers as "
            "integers or as text"
        )
    return int(number)


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
        if isinstance(answer, bool) or not isinstance(answer, (str, int, float, Decimal)):
            raise CourseError(f"{where}: column '{answer_col}' must be text or a number, got {type(answer).__name__}")
        if isinstance(answer, int):
            value: int | None = answer
            shown = str(answer)
        elif isinstance(answer, (float, Decimal)):
            value = exact_integer(answer, where)
            shown = str(answer) if isinstance(answer, Decimal) else repr(answer)
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
        items.append(
            {"id": item_id(source, row_number), "prompt": make_prompt(question, instruction), "expected_answer": value}
        )
    return Imported(tuple(items), tuple(skipped))


# ---------------------------------------------------------------------------
# Readers (I/O at the edge)
# ---------------------------------------------------------------------------
def jsonl_rows(path: str | os.PathLike[str]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Rows of a JSONL file through the course's one JSONL reader (its file rules and messages);
    numbers with a fraction or an exponent as the ``Decimal`` their text states (``exact_integer``)."""
    for lineno, obj in iter_objects(path, exact_numbers=True):
        yield f"{path}:{lineno}", obj


# What an import may decode: the question and answer text of the rows, plus ROW_COST bytes a row
# for the objects that hold it. GSM8K's whole test split is under 1 MB; a parquet file compresses
# the same 50 MiB string sixty times into 116 KB, and decoding it unbounded would ask for 3 GB.
DECODED_LIMIT = 256 << 20
ROW_COST = 256
BATCH_ROWS = 1024
SOURCE_LIMIT = 4 << 30  # bytes of a parquet file (its footer is read whole; the rows in batches)
FOOTER_LIMIT = 16 << 20  # bytes of a parquet footer (a dataset's is a few KB)
SAVED_FILES_LIMIT = 10_000  # entries of a save_to_disk folder that are looked at before anything is opened


def hf_rows(path: str | os.PathLike[str], split: str | None,
            columns: Sequence[str] | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
    """Rows of a local parquet file or a ``datasets`` dataset saved with ``save_to_disk``.

    Locations are ``path:row`` (1-based): a parquet file or an Arrow dataset has no lines.
    With ``columns`` only those columns are read (a missing one is refused at ``path:1``).
    Nothing is decoded unchecked: a parquet file is opened through the one opener and its
    metadata sizes are checked first; the rows are read in batches of ``BATCH_ROWS``, each
    batch's decoded size counted (dictionary-encoded text without expanding it) before a
    Python string is made, against ``DECODED_LIMIT`` (``decoded_size``). Every file of a
    saved dataset is checked before ``datasets`` opens any (``check_saved_dataset``).
    """
    p = Path(path)
    if p.is_dir():
        try:
            import datasets
        except ImportError:
            raise CourseError("reading a saved Hugging Face dataset needs the hf extra: pip "
                              "install -e '.[hf]'") from None
        check_saved_dataset(p)
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
        with foreign_reader(path, "dataset saved with save_to_disk"):
            table = loaded.data.table  # memory-mapped Arrow: nothing is decoded yet
            chosen = _chosen_columns(path, table.schema.names, columns)
            batches = table.select(chosen).to_batches(max_chunksize=BATCH_ROWS)
        yield from _bounded_rows(path, iter(batches), "dataset saved with save_to_disk")
        return
    if p.suffix == ".parquet":
        try:
            import pyarrow.parquet as pq
        except ImportError:
            raise CourseError("reading parquet needs the hf extra: pip install -e '.[hf]'") from None
        with open_input(p, "a parquet file", limit=SOURCE_LIMIT) as f:  # a FIFO or a device is refused, never waited on
            _check_parquet_footer(path, f)
            with foreign_reader(path, "parquet file"):
                parquet = pq.ParquetFile(f)
                chosen = _chosen_columns(path, parquet.schema_arrow.names, columns)
                _check_parquet_sizes(path, parquet, chosen)
                parquet = pq.ParquetFile(f, read_dictionary=chosen)  # dictionary pages stay dictionaries
                batches = parquet.iter_batches(batch_size=BATCH_ROWS, columns=chosen)
            yield from _bounded_rows(path, batches, "parquet file")
        return
    if p.suffix in (".jsonl", ".json") and p.is_file():
        yield from jsonl_rows(p)
        return
    raise CourseError(f"{path}: expected a save_to_disk directory, a .parquet or a .jsonl file")


def _chosen_columns(path: Any, names: Sequence[str], columns: Sequence[str] | None) -> list[str]:
    """The columns to read: ``columns`` (each must exist), or all."""
    if columns is None:
        return list(names)
    for col in columns:
        if col not in names:
            have = ", ".join(sorted(map(str, names))) or "none"
            raise CourseError(f"{path}:1: missing column '{col}' (columns: {have})")
    return list(dict.fromkeys(columns))


def _check_parquet_footer(path: Any, f: Any) -> None:
    """Refuse a footer (the file's metadata, parsed whole by pyarrow) longer than ``FOOTER_LIMIT``:
    its length is the four bytes before the closing ``PAR1``."""
    size = os.fstat(f.fileno()).st_size
    if size >= 12:
        f.seek(size - 8)
        tail = f.read(8)
        f.seek(0)
        if tail[4:] == b"PAR1" and int.from_bytes(tail[:4], "little") > FOOTER_LIMIT:
            raise CourseError(f"{path}: its metadata claims {int.from_bytes(tail[:4], 'little'):,} bytes, "
                              "more than the "
                              f"{FOOTER_LIMIT:,} a dataset's footer needs; refusing to parse it")


def _check_parquet_sizes(path: Any, parquet: Any, columns: Sequence[str]) -> None:
    """Refuse, from the footer alone, a file whose chosen columns are larger than an import decodes."""
    meta = parquet.metadata
    wanted = set(columns)
    total = meta.num_rows * ROW_COST
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        for c in range(group.num_columns):
            chunk = group.column(c)
            if chunk.path_in_schema.split(".", 1)[0] in wanted:
                total += max(chunk.total_uncompressed_size, 0)
    if total > DECODED_LIMIT:
        raise _too_large(path, total)


def _too_large(path: Any, size: int) -> CourseError:
    return CourseError(
        f"{path}: its question and answer columns decode to more than {DECODED_LIMIT:,} bytes "
        f"(at least {size:,}), more than a course dataset holds; import a slice of it"
    )


def decoded_size(array: Any) -> int:
    """Bytes ``array`` (an Arrow column) takes once decoded into Python values, counted without decoding:
    a dictionary-encoded text column counts each row's own text (the 50 MiB entry sixty times)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(array, pa.ChunkedArray):
        return sum(decoded_size(chunk) for chunk in array.chunks)
    kind = array.type
    if pa.types.is_dictionary(kind):
        value_type = kind.value_type
        if (
            pa.types.is_string(value_type)
            or pa.types.is_large_string(value_type)
            or pa.types.is_binary(value_type)
            or pa.types.is_large_binary(value_type)
        ):
            lengths = pc.binary_length(array.dictionary).take(array.indices)
            return int(pc.sum(lengths).as_py() or 0)
        return decoded_size(array.dictionary.take(array.indices))
    if (
        pa.types.is_string(kind)
        or pa.types.is_large_string(kind)
        or pa.types.is_binary(kind)
        or pa.types.is_large_binary(kind)
    ):
        return int(pc.sum(pc.binary_length(array)).as_py() or 0)
    return int(array.nbytes)


def _bounded_rows(path: Any, batches: Iterator[Any], what: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(path:row, row)`` from Arrow record batches, refusing before a batch is decoded when the
    rows so far would pass ``DECODED_LIMIT``."""
    row, decoded = 0, 0
    while True:
        try:
            with foreign_reader(path, what):
                batch = next(batches, None)
                if batch is None:
                    return
                decoded += batch.num_rows * ROW_COST + sum(decoded_size(col) for col in batch.columns)
                if decoded > DECODED_LIMIT:
                    raise _too_large(path, decoded)
                rows = batch.to_pylist()
        except MemoryError:  # pyarrow's ArrowMemoryError too: one line, never a traceback
            raise CourseError(f"{path}: decoding it needs more memory than this machine gives; import "
                              "a slice of it") from None
        for values in rows:
            row += 1
            yield f"{path}:{row}", values


def _refuse_compressed_arrow(path: Path) -> None:
    """Refuse an Arrow stream whose record batches are compressed, reading only message headers.

    ``save_to_disk`` writes uncompressed Arrow, which ``datasets`` memory-maps: nothing is decoded
    before a row is read. A compressed stream (hand-made: 3 GB of text in 120 KB of zstd) is
    decompressed whole when ``datasets`` opens it, before any row could be counted. Whether a batch
    is compressed is its header's ``compression`` field (Arrow's Message flatbuffer: the
    RecordBatch table's fourth field), read here without touching the body.
    """
    import pyarrow as pa

    with open_input(path, "an Arrow file of a saved dataset") as f:
        with foreign_reader(path, "Arrow file of a saved dataset"):
            reader = pa.ipc.MessageReader.open_stream(f)
            while True:
                try:
                    message = reader.read_next_message()
                except StopIteration:
                    return
                if message is None:
                    return
                if message.type in ("record batch", "dictionary batch") and _batch_compressed(
                        message.metadata.to_pybytes(), dictionary=message.type == "dictionary batch"):
                    raise CourseError(f"{path}: an Arrow file with compressed record batches, which datasets would "
                                      "decompress whole before a row is counted; save_to_disk writes them uncompressed")


def _table_field(buf: bytes, table: int, field: int) -> int | None:
    """The position of a flatbuffer table's field ``field`` (None when absent)."""
    vtable = table - int.from_bytes(buf[table:table + 4], "little", signed=True)
    vtable_size = int.from_bytes(buf[vtable:vtable + 2], "little")
    slot = 4 + 2 * field
    if slot + 2 > vtable_size:
        return None
    offset = int.from_bytes(buf[vtable + slot:vtable + slot + 2], "little")
    return table + offset if offset else None


def _batch_compressed(metadata: bytes, *, dictionary: bool) -> bool:
    """Does an Arrow IPC message's metadata (a ``Message`` flatbuffer) declare compressed buffers?"""
    try:
        message = int.from_bytes(metadata[0:4], "little")
        header = _table_field(metadata, message, 2)  # Message.header
        if header is None:
            return False
        batch = header + int.from_bytes(metadata[header:header + 4], "little")
        if dictionary:  # DictionaryBatch.data is the RecordBatch
            data = _table_field(metadata, batch, 1)
            if data is None:
                return False
            batch = data + int.from_bytes(metadata[data:data + 4], "little")
        return _table_field(metadata, batch, 3) is not None  # RecordBatch.compression
    except (IndexError, ValueError):
        return True  # a header this cannot read is not one save_to_disk wrote


def check_saved_dataset(folder: Path) -> None:
    """Check every file of a ``save_to_disk`` folder before ``datasets`` opens any.

    ``datasets`` opens the files itself (a FIFO named ``data-00000-of-00001.arrow`` would make it
    wait forever for a writer, ``/dev/zero`` behind a symbolic link would never end), and it
    opens whatever ``state.json`` lists, an absolute path or ``../..`` included. So: every entry
    must be a regular file or a folder (``input_problem``: ``stat``, never an open), the JSON
    files are read through the one reader (size-capped), and each data file a ``state.json``
    names must be a plain file name inside its folder.
    """
    seen = 0
    for root, dirs, files in os.walk(folder):
        for name in sorted(dirs) + sorted(files):
            seen += 1
            if seen > SAVED_FILES_LIMIT:
                raise CourseError(f"{folder}: more than {SAVED_FILES_LIMIT:,} files; not a dataset saved with "
                                  "save_to_disk")
            entry = Path(root) / name
            if name in dirs:
                if entry.is_symlink():  # its files would be opened unchecked: os.walk does not enter it
                    raise CourseError(f"{entry}: a symbolic link to a folder inside a saved dataset; copy "
                                      "the folder in")
                continue
            problem = input_problem(entry)
            if problem is not None:
                raise CourseError(f"{entry}: {problem}, expected a file of a dataset saved with save_to_disk")
    for state_path in sorted(folder.rglob("state.json")):
        state = read_json(state_path, "save_to_disk state.json")
        data_files = state.get("_data_files")
        if not isinstance(data_files, list):
            raise CourseError(f"{state_path}: no '_data_files' list (not a dataset saved with save_to_disk)")
        for listed in data_files:
            data_file = listed.get("filename") if isinstance(listed, dict) else None
            if (not isinstance(data_file, str) or not data_file or data_file != Path(data_file).name
                    or data_file in (".", "..")):
                raise CourseError(f"{state_path}: a data file {data_file!r} that is not a file name inside "
                                  f"{state_path.parent}")
            problem = input_problem(state_path.parent / data_file)
            if problem is not None:
                raise CourseError(f"{state_path.parent / data_file}: {problem}, expected an Arrow file of the saved "
                                  "dataset")
            _refuse_compressed_arrow(state_path.parent / data_file)
    for json_path in sorted(folder.rglob("*.json")):
        # dataset_info.json, dataset_dict.json: the reader's caps
        document = read_json(json_path, "save_to_disk JSON file")
        if json_path.name == "dataset_dict.json":
            for name in document.get("splits") or []:
                if not isinstance(name, str) or not name or name != Path(name).name or name in (".", "..") \
                        or not (json_path.parent / name).is_dir():
                    raise CourseError(f"{json_path}: a split {name!r} that is not a folder inside {json_path.parent}")


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

    raise SystemExit(not_a_tool("course.lib.external.dataset_readers"))
