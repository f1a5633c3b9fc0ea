"""course.io: the one JSONL reader rejects every bad-input class with path:line, and streams.

Every reader test runs twice, with and without orjson, because the fast parser
must never change what is accepted or what an error says.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import course.io as cio
from course.errors import CourseError
from course.io import (
    JsonlWriter,
    dumps_line,
    iter_completions,
    iter_objects,
    iter_results,
    iter_samples,
    read_dataset,
    read_json,
)

SAMPLING = {"max_tokens": 32, "seed": 3, "temperature": 0.8, "top_p": 0.95}


@pytest.fixture(params=["orjson", "stdlib"])
def parser(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "stdlib":
        monkeypatch.setattr(cio, "_orjson", None)
    elif cio._orjson is None:
        pytest.skip("orjson is not installed")
    return request.param


def write_bytes(tmp_path: Path, data: bytes, name: str = "f.jsonl") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def dataset_bytes(n: int = 3) -> bytes:
    return "".join(
        dumps_line({"id": f"dev-{i:04d}", "prompt": f"Compute {i} + 1.", "expected_answer": i + 1}) + "\n"
        for i in range(1, n + 1)
    ).encode()


def completion_line(ident: str, text: str = "Final: 1", **over: object) -> str:
    record = {"id": ident, "completion": text, "policy": "p", "sampling": SAMPLING}
    record.update(over)
    return dumps_line(record) + "\n"


def error_of(fn, path: Path) -> str:
    with pytest.raises(CourseError) as info:
        list(fn(path))
    return str(info.value)


# --- happy paths -------------------------------------------------------------------------
def test_read_dataset_returns_examples_in_file_order_with_line_numbers(tmp_path: Path, parser: str) -> None:
    examples = read_dataset(write_bytes(tmp_path, dataset_bytes(3)))
    assert [e.id for e in examples] == ["dev-0001", "dev-0002", "dev-0003"]
    assert [e.line for e in examples] == [1, 2, 3]
    assert examples[1].as_dict() == {"id": "dev-0002", "prompt": "Compute 2 + 1.", "expected_answer": 3}


def test_a_missing_final_newline_is_accepted(tmp_path: Path, parser: str) -> None:
    assert len(read_dataset(write_bytes(tmp_path, dataset_bytes(2).rstrip(b"\n")))) == 2


def test_unknown_extra_fields_are_ignored(tmp_path: Path, parser: str) -> None:
    line = dumps_line({"id": "a", "prompt": "p", "expected_answer": 1, "source": "hand-written"}) + "\n"
    assert read_dataset(write_bytes(tmp_path, line.encode()))[0].expected_answer == 1


def test_iter_completions_yields_records_with_policy_and_sampling(tmp_path: Path, parser: str) -> None:
    path = write_bytes(tmp_path, (completion_line("a") + completion_line("b", "Final: −2")).encode())
    records = list(iter_completions(path))
    assert [(r.id, r.completion, r.policy, r.line) for r in records] == [("a", "Final: 1", "p", 1), ("b", "Final: −2", "p", 2)]
    assert records[0].sampling == SAMPLING


def test_a_null_completion_is_accepted_so_one_failed_sample_does_not_sink_the_file(tmp_path: Path, parser: str) -> None:
    path = write_bytes(tmp_path, completion_line("a", None).encode())  # type: ignore[arg-type]
    assert next(iter_completions(path)).completion is None


def test_sampling_numbers_compare_by_value_so_1_and_1_0_are_the_same_setting(tmp_path: Path, parser: str) -> None:
    lines = completion_line("a", sampling={"temperature": 1}) + completion_line("b", sampling={"temperature": 1.0})
    assert len(list(iter_completions(write_bytes(tmp_path, lines.encode())))) == 2


def test_the_reader_streams_yielding_early_lines_before_it_reaches_a_bad_line(tmp_path: Path, parser: str) -> None:
    path = write_bytes(tmp_path, dataset_bytes(3) + b"{not json}\n")
    stream = iter_objects(path)
    assert next(stream)[0] == 1  # line 1 arrives although line 4 is broken
    with pytest.raises(CourseError, match=r":4: invalid JSON"):
        list(stream)


# --- every bad-input class ------------------------------------------------------------------
@pytest.mark.parametrize(
    "data,line,fragment",
    [
        (b"{\"id\": \"a\", \"prompt\": \"p\", \"expected_answer\": 1\n", 1, "invalid JSON"),
        (b"[1, 2]\n", 1, "expected a JSON object"),
        (b"\"just text\"\n", 1, "expected a JSON object"),
        (b"null\n", 1, "got null"),
        (b"{\"id\": \"a\", \"prompt\": \"p\"}\n", 1, "missing field 'expected_answer'"),
        (b"{\"id\": \"a\", \"prompt\": \"p\", \"expected_answer\": true}\n", 1, "must be an integer, got a boolean"),
        (b"{\"id\": \"a\", \"prompt\": \"p\", \"expected_answer\": \"323\"}\n", 1, "must be an integer, got a string"),
        (b"{\"id\": \"a\", \"prompt\": \"p\", \"expected_answer\": 323.0}\n", 1, "must be an integer, got a number"),
        (b"{\"id\": 7, \"prompt\": \"p\", \"expected_answer\": 1}\n", 1, "field 'id' must be a string"),
        (b"{\"id\": \"\", \"prompt\": \"p\", \"expected_answer\": 1}\n", 1, "field 'id' must not be empty"),
        (b"{\"id\": \"a\", \"prompt\": \"p\", \"expected_answer\": NaN}\n", 1, "invalid JSON"),
        (b"", 1, "empty file"),
        (b"\xef\xbb\xbf" + dataset_bytes(1), 1, "byte-order mark"),
        (dataset_bytes(1).replace(b"\n", b"\r\n"), 1, "CRLF"),
        (dataset_bytes(2).replace(b"\n", b"\r\n", 1)[:-1] + b"\r", 1, "CRLF"),
        (dataset_bytes(1) + b"{\"id\": \"b\", \"prompt\": \"caf\xe9\", \"expected_answer\": 1}\n", 2, "not valid UTF-8"),
        (dataset_bytes(1) + b"\n" + dataset_bytes(2)[len(dataset_bytes(1)):], 2, "blank line"),
        (dataset_bytes(2) + b"\n", 3, "blank line"),
        (dataset_bytes(1) + b"   \n", 2, "blank line"),
        (b"{\"id\": \"a\\ud800\", \"prompt\": \"p\", \"expected_answer\": 1}\n", 1, "lone surrogate"),
    ],
)
def test_every_bad_dataset_file_is_rejected_with_path_and_line(
    tmp_path: Path, parser: str, data: bytes, line: int, fragment: str
) -> None:
    path = write_bytes(tmp_path, data)
    message = error_of(read_dataset, path)
    assert message.startswith(f"{path}:{line}: ")
    assert fragment in message


def test_a_duplicate_id_names_both_lines(tmp_path: Path, parser: str) -> None:
    data = dataset_bytes(3) + dataset_bytes(2)[len(dataset_bytes(1)):]  # dev-0002 again on line 4
    path = write_bytes(tmp_path, data)
    assert error_of(read_dataset, path) == (
        f"{path}:4: duplicate id 'dev-0002' (first seen on line 2); every id must be unique"
    )


def test_a_missing_file_is_reported_by_path(tmp_path: Path, parser: str) -> None:
    assert error_of(read_dataset, tmp_path / "nope.jsonl") == f"{tmp_path / 'nope.jsonl'}: no such file"


def test_a_rollout_file_that_mixes_sampling_settings_is_rejected(tmp_path: Path, parser: str) -> None:
    lines = completion_line("a") + completion_line("b", sampling={**SAMPLING, "temperature": 0.2})
    path = write_bytes(tmp_path, lines.encode())
    message = error_of(iter_completions, path)
    assert message.startswith(f"{path}:2: sampling differs from line 1")


def test_a_rollout_file_that_mixes_policies_is_rejected(tmp_path: Path, parser: str) -> None:
    path = write_bytes(tmp_path, (completion_line("a") + completion_line("b", policy="q")).encode())
    assert error_of(iter_completions, path).startswith(f"{path}:2: policy differs from line 1")


def test_a_rollout_line_without_sampling_is_rejected(tmp_path: Path, parser: str) -> None:
    line = dumps_line({"id": "a", "completion": "Final: 1", "policy": "p"}) + "\n"
    path = write_bytes(tmp_path, line.encode())
    assert error_of(iter_completions, path) == f"{path}:1: missing field 'sampling' (an object)"


def test_an_infinite_sampling_value_is_rejected(tmp_path: Path, parser: str) -> None:
    line = '{"id": "a", "completion": "x", "policy": "p", "sampling": {"temperature": 1e400}}\n'
    path = write_bytes(tmp_path, line.encode())
    assert "too large" in error_of(iter_completions, path)


def test_duplicate_completion_ids_are_rejected(tmp_path: Path, parser: str) -> None:
    path = write_bytes(tmp_path, (completion_line("a") + completion_line("b") + completion_line("a")).encode())
    assert error_of(iter_completions, path).startswith(f"{path}:3: duplicate id 'a' (first seen on line 1)")


# --- selection packs ---------------------------------------------------------------------------
def pack_line(ident: str, texts: list[str], indices: list[int] | None = None) -> str:
    indices = list(range(len(texts))) if indices is None else indices
    samples = [{"sample_index": i, "completion": t} for i, t in zip(indices, texts)]
    return dumps_line({"id": ident, "samples": samples, "policy": "p", "sampling": SAMPLING}) + "\n"


def test_iter_samples_yields_numbered_samples_with_stable_ids(tmp_path: Path, parser: str) -> None:
    path = write_bytes(tmp_path, (pack_line("a", ["Final: 1", "Final: 2"]) + pack_line("b", ["x"])).encode())
    packs = list(iter_samples(path))
    assert [len(p.samples) for p in packs] == [2, 1]
    assert packs[0].samples[1].completion == "Final: 2"
    assert packs[0].sample_id(1) == "a#1"


def test_a_pack_with_samples_out_of_order_is_rejected(tmp_path: Path, parser: str) -> None:
    path = write_bytes(tmp_path, pack_line("a", ["x", "y"], [1, 0]).encode())
    assert error_of(iter_samples, path).startswith(f"{path}:1: samples[0] has sample_index 1")


def test_a_pack_item_without_samples_is_rejected(tmp_path: Path, parser: str) -> None:
    path = write_bytes(tmp_path, pack_line("a", []).encode())
    assert "is empty" in error_of(iter_samples, path)


# --- run files -----------------------------------------------------------------------------
def test_iter_results_rejects_a_non_numeric_reward(tmp_path: Path, parser: str) -> None:
    line = dumps_line({"id": "a", "reward": "1", "details": {"error_code": "ok"}}) + "\n"
    path = write_bytes(tmp_path, line.encode())
    assert error_of(iter_results, path).startswith(f"{path}:1: field 'reward' must be a finite number")


def test_iter_results_requires_an_error_code(tmp_path: Path, parser: str) -> None:
    path = write_bytes(tmp_path, (dumps_line({"id": "a", "reward": 1.0, "details": {}}) + "\n").encode())
    assert "missing field 'error_code'" in error_of(iter_results, path)


def test_read_json_reports_a_corrupt_manifest_with_its_line(tmp_path: Path) -> None:
    path = write_bytes(tmp_path, b'{\n  "a": 1,\n}\n', "manifest.json")
    with pytest.raises(CourseError, match=r"manifest.json:3: the manifest is not valid JSON"):
        read_json(path, "manifest")


def test_read_json_reports_a_missing_manifest(tmp_path: Path) -> None:
    with pytest.raises(CourseError, match="no such file"):
        read_json(tmp_path / "manifest.json", "manifest")


# --- writers ---------------------------------------------------------------------------------
def test_dumps_line_is_canonical_sorted_and_unescaped() -> None:
    assert dumps_line({"b": "−7", "a": [1, 2.5]}) == '{"a": [1, 2.5], "b": "−7"}'


def test_jsonl_writer_hash_is_the_sha256_of_the_bytes_written(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    with JsonlWriter(path) as writer:
        for i in range(5000):  # more than one buffered block
            writer.write({"i": i, "t": "ü"})
    assert writer.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert path.read_bytes().count(b"\n") == 5000


# --- orjson is only a fast path ---------------------------------------------------------------
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.sampled_from([2**64, -(2**63) - 1, 10**30])
    | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)


def _verdict(path: Path) -> object:
    try:
        return [obj for _, obj in iter_objects(path)]
    except CourseError as exc:
        return f"error: {exc}"


@given(st.dictionaries(st.text(max_size=5), json_values, max_size=4), st.booleans())
@settings(max_examples=150, deadline=None)
def test_orjson_and_the_standard_library_give_the_same_verdict(tmp_path_factory, obj: dict, ascii_only: bool) -> None:
    if cio._orjson is None:
        pytest.skip("orjson is not installed")
    line = json.dumps(obj, ensure_ascii=ascii_only) + "\n"
    try:
        data = ("{}\n" + line).encode("utf-8")  # line 1 always goes to the standard library
    except UnicodeEncodeError:  # a lone surrogate cannot even be written as UTF-8
        return
    path = tmp_path_factory.mktemp("eq") / "x.jsonl"
    path.write_bytes(data)
    with_orjson = _verdict(path)
    saved, cio._orjson = cio._orjson, None
    try:
        without = _verdict(path)
    finally:
        cio._orjson = saved
    assert repr(with_orjson) == repr(without)


def test_integers_beyond_64_bits_are_read_exactly_whichever_parser_runs(tmp_path: Path, parser: str) -> None:
    big = -(2**63) - 1  # orjson alone would turn this into a float
    line = dumps_line({"id": "a", "prompt": "p", "expected_answer": big}) + "\n"
    path = write_bytes(tmp_path, (dataset_bytes(1).decode() + line.replace('"a"', '"b"')).encode())
    assert read_dataset(path)[1].expected_answer == big


def test_a_big_sampling_seed_is_the_same_value_on_every_line(tmp_path: Path, parser: str) -> None:
    seed = 2**64 + 1
    lines = completion_line("a", sampling={"seed": seed}) + completion_line("b", sampling={"seed": seed})
    records = list(iter_completions(write_bytes(tmp_path, lines.encode())))
    assert [r.sampling["seed"] for r in records] == [seed, seed]
    assert all(type(r.sampling["seed"]) is int for r in records)
