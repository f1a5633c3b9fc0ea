"""Fault suite, issue #30 item 10: a dataset import decodes nothing unbounded, waits on nothing, rounds nothing.

The class: ``python -m course.datasets import`` hands a user's files to pyarrow and ``datasets``, and
reads answers that may be numbers. A parquet file that compresses gigabytes into kilobytes, a saved
dataset whose Arrow file is a FIFO, an answer whose float is another integer than its text: each
must end as ONE line naming the file, exit 2, nothing written, or be read exactly. The guarantees
live in ``course.lib.external.dataset_readers`` (``hf_rows``, ``decoded_size``,
``check_saved_dataset``, ``exact_integer``) and ``course.lib.records.jsonl`` (``exact_numbers``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from course import datasets
from course.lib.external import dataset_readers

REPO = Path(__file__).resolve().parents[2]
needs_pyarrow = pytest.mark.skipif(importlib.util.find_spec("pyarrow") is None, reason="needs the hf extra (pyarrow)")
needs_datasets = pytest.mark.skipif(importlib.util.find_spec("datasets") is None,
                                    reason="needs the hf extra (datasets)")


def _import(capsys, *argv: str) -> tuple[int, str, str]:
    code = datasets.main(["import", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _one_line(code: int, err: str, *fragments: str) -> str:
    assert code == 2, err
    assert "Traceback" not in err, err
    (line,) = err.strip().splitlines()
    for fragment in fragments:
        assert fragment in line, line
    return line


# ---------------------------------------------------------------------------
# Decoded size: counted before anything is decoded
# ---------------------------------------------------------------------------
@needs_pyarrow
def test_a_small_parquet_file_of_sixty_huge_repeated_strings_is_refused_before_it_is_decoded(tmp_path, capsys):
    import pyarrow as pa
    import pyarrow.parquet as pq

    # The attack's shape: one 5 MiB string sixty times, stored once in the dictionary page, so the
    # footer's sizes are small (5 MiB) and only the rows' own lengths show the 300 MiB it decodes to.
    big = pa.array(["x" * (5 << 20)])
    questions = pa.DictionaryArray.from_arrays(pa.array([0] * 60, pa.int32()), big)
    src = tmp_path / "bomb.parquet"
    pq.write_table(pa.table({"question": questions, "answer": pa.array(["4"] * 60)}), src, compression="zstd")
    assert src.stat().st_size < 1 << 20  # a few hundred KB on disk
    out = tmp_path / "out.jsonl"
    code, _, err = _import(capsys, "--format", "hf", str(src), "--out", str(out))
    _one_line(code, err, str(src), "decode to more than 268,435,456 bytes", "import a slice")
    assert not out.exists()


@needs_pyarrow
def test_a_parquet_file_whose_footer_declares_too_much_text_is_refused_from_the_footer_alone(
    tmp_path, capsys, monkeypatch
):
    import pyarrow as pa
    import pyarrow.parquet as pq

    monkeypatch.setattr(dataset_readers, "DECODED_LIMIT", 1 << 20)
    src = tmp_path / "plain.parquet"
    pq.write_table(pa.table({"question": [f"q{i} " + "y" * 4000 for i in range(600)], "answer": ["4"] * 600}), src,
                   use_dictionary=False)
    seen: list[int] = []
    monkeypatch.setattr(dataset_readers, "decoded_size", lambda array: seen.append(1) or 0)
    code, _, err = _import(capsys, "--format", "hf", str(src), "--out", str(tmp_path / "o.jsonl"))
    _one_line(code, err, str(src), "decode to more than 1,048,576 bytes")
    assert seen == []  # refused before any batch was read


@needs_pyarrow
def test_only_the_question_and_answer_columns_are_read_and_a_missing_one_is_named(tmp_path, capsys):
    import pyarrow as pa
    import pyarrow.parquet as pq

    src = tmp_path / "d.parquet"
    pq.write_table(pa.table({"problem": ["What is 2+2?"], "solution": [4], "notes": ["n" * 100]}), src)
    code, _, err = _import(capsys, "--format", "hf", str(src), "--question-col", "problem", "--answer-col", "answer",
                           "--out", str(tmp_path / "o.jsonl"))
    _one_line(code, err, f"{src}:1: missing column 'answer' (columns: notes, problem, solution)")
    assert _import(capsys, "--format", "hf", str(src), "--question-col", "problem", "--answer-col", "solution",
                   "--out", str(tmp_path / "o.jsonl"))[0] == 0
    assert json.loads((tmp_path / "o.jsonl").read_text())["expected_answer"] == 4


# ---------------------------------------------------------------------------
# A saved dataset: every file checked before datasets opens it
# ---------------------------------------------------------------------------
def _saved(tmp_path: Path) -> Path:
    import datasets as hf

    saved = tmp_path / "saved"
    hf.Dataset.from_dict({"question": ["What is 2+2?"] * 3, "answer": ["4"] * 3}).save_to_disk(str(saved))
    return saved


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    # A subprocess with a timeout: if a FIFO were opened, the test fails instead of hanging the suite.
    return subprocess.run([sys.executable, "-m", "course.datasets", "import", *argv], cwd=REPO, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)})


@needs_datasets
def test_a_saved_dataset_whose_arrow_file_is_a_fifo_is_refused_at_once_naming_it(tmp_path):
    saved = _saved(tmp_path)
    arrow = next(saved.glob("*.arrow"))
    arrow.unlink()
    os.mkfifo(arrow)
    proc = _run("--format", "hf", str(saved), "--out", str(tmp_path / "o.jsonl"))
    _one_line(proc.returncode, proc.stderr, f"{arrow}: is not a regular file (a FIFO (named pipe))")
    assert not (tmp_path / "o.jsonl").exists()


@needs_datasets
def test_a_saved_dataset_whose_state_names_a_file_outside_it_is_refused(tmp_path, capsys):
    saved = _saved(tmp_path)
    state = json.loads((saved / "state.json").read_text())
    state["_data_files"] = [{"filename": "/dev/zero"}]
    (saved / "state.json").write_text(json.dumps(state))
    capsys.readouterr()  # datasets' own progress bar
    code, _, err = _import(capsys, "--format", "hf", str(saved), "--out", str(tmp_path / "o.jsonl"))
    _one_line(code, err, "state.json: a data file '/dev/zero' that is not a file name inside")


@needs_datasets
def test_a_saved_dataset_whose_arrow_file_is_compressed_is_refused_before_datasets_decompresses_it(tmp_path, capsys):
    import pyarrow as pa

    saved = _saved(tmp_path)
    capsys.readouterr()  # datasets' own progress bar
    arrow = next(saved.glob("*.arrow"))
    table = pa.table({"question": ["What is 2+2?"] * 3, "answer": ["4"] * 3})
    with pa.OSFile(str(arrow), "wb") as sink, pa.ipc.new_stream(
            sink, table.schema, options=pa.ipc.IpcWriteOptions(compression="zstd")) as writer:
        writer.write_table(table)
    code, _, err = _import(capsys, "--format", "hf", str(saved), "--out", str(tmp_path / "o.jsonl"))
    _one_line(code, err, f"{arrow}: an Arrow file with compressed record batches")


@needs_pyarrow
def test_a_parquet_footer_claiming_gigabytes_is_refused_before_pyarrow_parses_it(tmp_path, capsys):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"question": ["q?"], "answer": ["4"]}), tmp_path / "good.parquet")
    good = (tmp_path / "good.parquet").read_bytes()
    src = tmp_path / "footer.parquet"
    src.write_bytes(good[:-8] + (2 ** 31 - 1).to_bytes(4, "little") + b"PAR1")
    code, _, err = _import(capsys, "--format", "hf", str(src), "--out", str(tmp_path / "o.jsonl"))
    _one_line(code, err, f"{src}: its metadata claims 2,147,483,647 bytes")


@needs_datasets
def test_a_saved_dataset_still_imports_exactly(tmp_path, capsys):
    saved = _saved(tmp_path)
    capsys.readouterr()  # datasets' own progress bar
    assert _import(capsys, "--format", "hf", str(saved), "--out", str(tmp_path / "o.jsonl"))[0] == 0
    rows = [json.loads(line) for line in (tmp_path / "o.jsonl").read_text().splitlines()]
    assert [r["expected_answer"] for r in rows] == [4, 4, 4] and rows[0]["id"] == "saved-00001"


# ---------------------------------------------------------------------------
# Numbers: the integer the text states, or a refusal; never a rounded float
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("literal, expected", [
    ("1e23", 10 ** 23), ("9007199254740993.0", 9007199254740993), ("3.0", 3), ("-12.000e0", -12), ("1E+2", 100),
])
def test_a_json_answer_with_a_fraction_or_exponent_is_the_integer_its_text_states(tmp_path, capsys, literal, expected):
    src = tmp_path / "d.jsonl"
    src.write_text(f'{{"question": "q?", "answer": {literal}}}\n', encoding="utf-8")
    assert _import(capsys, "--format", "hf", str(src), "--out", str(tmp_path / "o.jsonl"))[0] == 0
    assert json.loads((tmp_path / "o.jsonl").read_text())["expected_answer"] == expected


@pytest.mark.parametrize("literal", ["3.5", "9007199254740993.5", "1e-30"])
def test_a_json_answer_whose_text_is_not_an_integer_is_refused_at_its_line(tmp_path, capsys, literal):
    src = tmp_path / "d.jsonl"
    src.write_text(f'{{"question": "q?", "answer": 1}}\n{{"question": "q?", "answer": {literal}}}\n', encoding="utf-8")
    code, _, err = _import(capsys, "--format", "hf", str(src), "--out", str(tmp_path / "o.jsonl"))
    _one_line(code, err, f"{src}:2: the answer", "is not an integer")


def test_a_json_answer_of_a_billion_digits_in_exponent_form_is_refused_before_it_is_built(tmp_path, capsys):
    src = tmp_path / "d.jsonl"
    src.write_text('{"question": "q?", "answer": 1e999999999}\n', encoding="utf-8")
    code, _, err = _import(capsys, "--format", "hf", str(src), "--out", str(tmp_path / "o.jsonl"), "--skip-non-integer")
    _one_line(code, err, f"{src}:1: the answer is an integer of 1,000,000,000 digits")


@needs_pyarrow
def test_a_parquet_double_above_two_to_the_53_is_refused_not_rounded(tmp_path, capsys):
    import pyarrow as pa
    import pyarrow.parquet as pq

    src = tmp_path / "d.parquet"
    pq.write_table(pa.table({"question": ["a?", "b?"], "answer": pa.array([42.0, 1e23], pa.float64())}), src)
    code, _, err = _import(capsys, "--format", "hf", str(src), "--out", str(tmp_path / "o.jsonl"))
    _one_line(code, err, f"{src}:2: the answer 1e+23 is a binary float of 2**53 or more")


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=-(10 ** 40), max_value=10 ** 40), st.sampled_from(["{}.0", "{}e0", "{}0e-1", "{}.000"]))
def test_any_integer_written_with_a_fraction_or_exponent_imports_as_exactly_that_integer(tmp_path_factory, n, form):
    from decimal import Decimal

    from course.lib.records.jsonl import parse_line

    value = parse_line(f'{{"answer": {form.format(n)}}}'.encode(), "d.jsonl", 1, exact_numbers=True)["answer"]
    assert isinstance(value, Decimal) and dataset_readers.exact_integer(value) == n
