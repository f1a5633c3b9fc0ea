"""course.lib.records.jsonl / course.lib.records.formats: the one JSONL reader rejects every bad-input class
with path:line, and streams.

Every test here runs twice (the ``json_reader`` fixture): with the standard library's json alone,
and with orjson reading first where it is installed (course.lib.records.jsonl's fast path). The verdicts,
values and messages must be the same: the fast path only ever answers where its answer is the
standard library's.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import hypothesis_text as ht  # st.text() without hypothesis's slow first-run codec table
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import course.lib.records.formats as cio
from course.errors import CourseError
from course.lib.records.formats import iter_completions, iter_results, iter_samples, read_dataset
from course.lib.records.jsonl import JsonlWriter, dumps_line, iter_objects, read_json

pytestmark = pytest.mark.usefixtures("json_reader")

SAMPLING = {"max_tokens": 32, "seed": 3, "temperature": 0.8, "top_p": 0.95}


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
def test_read_dataset_returns_examples_in_file_order_with_line_numbers(tmp_path: Path) -> None:
    examples = read_dataset(write_bytes(tmp_path, dataset_bytes(3)))
    assert [e.id for e in examples] == ["dev-0001", "dev-0002", "dev-0003"]
    assert [e.line for e in examples] == [1, 2, 3]
    assert examples[1].as_dict() == {"id": "dev-0002", "prompt": "Compute 2 + 1.", "expected_answer": 3}


def test_a_missing_final_newline_is_accepted(tmp_path: Path) -> None:
    assert len(read_dataset(write_bytes(tmp_path, dataset_bytes(2).rstrip(b"\n")))) == 2


def test_unknown_extra_fields_are_ignored(tmp_path: Path) -> None:
    line = dumps_line({"id": "a", "prompt": "p", "expected_answer": 1, "source": "hand-written"}) + "\n"
    assert read_dataset(write_bytes(tmp_path, line.encode()))[0].expected_answer == 1


def test_iter_completions_yields_records_with_policy_and_sampling(tmp_path: Path) -> None:
    path = write_bytes(tmp_path, (completion_line("a") + completion_line("b", "Final: −2")).encode())
    records = list(iter_completions(path))
    assert [(r.id, r.completion, r.policy, r.line) for r in records] == [("a", "Final: 1", "p", 1),
                                                                         ("b", "Final: −2", "p", 2)]
    assert records[0].sampling == SAMPLING


def test_a_null_completion_is_accepted_so_one_failed_sample_does_not_sink_the_file(tmp_path: Path) -> None:
    path = write_bytes(tmp_path, completion_line("a", None).encode())  # type: ignore[arg-type]
    assert next(iter_completions(path)).completion is None


def test_sampling_numbers_compare_by_value_so_1_and_1_0_are_the_same_setting(tmp_path: Path) -> None:
    lines = completion_line("a", sampling={"temperature": 1}) + completion_line("b", sampling={"temperature": 1.0})
    assert len(list(iter_completions(write_bytes(tmp_path, lines.encode())))) == 2


def test_the_reader_streams_yielding_early_lines_before_it_reaches_a_bad_line(tmp_path: Path) -> None:
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
        (dataset_bytes(1) + b"{\"id\": \"b\", \"prompt\": \"caf\xe9\", \"expected_answer\": 1}\n", 2,
         "not valid UTF-8"),
        (dataset_bytes(1) + b"\n" + dataset_bytes(2)[len(dataset_bytes(1)):], 2, "blank line"),
        (dataset_bytes(2) + b"\n", 3, "blank line"),
        (dataset_bytes(1) + b"   \n", 2, "blank line"),
        (b"{\"id\": \"a\\ud800\", \"prompt\": \"p\", \"expected_answer\": 1}\n", 1, "lone surrogate"),
    ],
)
def test_every_bad_dataset_file_is_rejected_with_path_and_line(
    tmp_path: Path, data: bytes, line: int, fragment: str
) -> None:
    path = write_bytes(tmp_path, data)
    message = error_of(read_dataset, path)
    assert message.startswith(f"{path}:{line}: ")
    assert fragment in message


def test_a_duplicate_id_names_both_lines(tmp_path: Path) -> None:
    data = dataset_bytes(3) + dataset_bytes(2)[len(dataset_bytes(1)):]  # dev-0002 again on line 4
    path = write_bytes(tmp_path, data)
    assert error_of(read_dataset, path) == (
        f"{path}:4: duplicate id 'dev-0002' (first seen on line 2); every id must be unique"
    )


def test_ids_whose_digests_collide_are_told_apart_by_the_ids_themselves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every id gets the same 8-byte digest: each is a suspect, and only the re-read ids decide.
    monkeypatch.setattr(cio, "hash", lambda ident: 42, raising=False)
    path = write_bytes(tmp_path, dataset_bytes(40))
    assert [e.id for e in read_dataset(path)] == [f"dev-{i:04d}" for i in range(1, 41)]
    repeated = write_bytes(tmp_path, dataset_bytes(3) + dataset_bytes(2)[len(dataset_bytes(1)):], "r.jsonl")
    assert error_of(read_dataset, repeated) == (
        f"{repeated}:4: duplicate id 'dev-0002' (first seen on line 2); every id must be unique"
    )


def test_ids_in_no_order_whose_digests_collide_are_told_apart_by_the_ids_themselves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Sorted ids never reach the digest table; ids in falling order each go through it.
    monkeypatch.setattr(cio, "hash", lambda ident: 42, raising=False)
    lines = dataset_bytes(40).splitlines(keepends=True)[::-1]
    path = write_bytes(tmp_path, b"".join(lines))
    assert [e.id for e in read_dataset(path)] == [f"dev-{i:04d}" for i in range(40, 0, -1)]
    repeated = write_bytes(tmp_path, b"".join(lines + [lines[5]]), "r.jsonl")
    assert error_of(read_dataset, repeated) == (
        f"{repeated}:41: duplicate id 'dev-0035' (first seen on line 6); every id must be unique"
    )


def test_a_repeat_of_a_sorted_line_is_found_after_the_ids_stop_increasing(tmp_path: Path) -> None:
    # Lines 1-10 increase (kept as one comparison each); line 11 does not, so lines 1-10 are read
    # into the table, where line 12's repeat of line 5 is found.
    lines = dataset_bytes(10).splitlines(keepends=True)
    extra = (dumps_line({"id": "dev-0000", "prompt": "Compute 0 + 1.", "expected_answer": 1}) + "\n").encode()
    path = write_bytes(tmp_path, b"".join(lines + [extra]))
    assert [e.id for e in read_dataset(path)][-2:] == ["dev-0010", "dev-0000"]
    repeated = write_bytes(tmp_path, b"".join(lines + [extra, lines[4]]), "r.jsonl")
    assert error_of(read_dataset, repeated) == (
        f"{repeated}:12: duplicate id 'dev-0005' (first seen on line 5); every id must be unique"
    )


def test_the_duplicate_check_finds_a_repeat_after_its_table_has_grown(tmp_path: Path) -> None:
    data = dataset_bytes(3000) + dataset_bytes(7)[len(dataset_bytes(6)):]  # dev-0007 again on line 3001
    path = write_bytes(tmp_path, data)
    assert error_of(read_dataset, path) == (
        f"{path}:3001: duplicate id 'dev-0007' (first seen on line 7); every id must be unique"
    )


def test_a_missing_file_is_reported_by_path(tmp_path: Path) -> None:
    assert error_of(read_dataset, tmp_path / "nope.jsonl") == f"{tmp_path / 'nope.jsonl'}: no such file"


def test_a_rollout_file_that_mixes_sampling_settings_is_rejected(tmp_path: Path) -> None:
    lines = completion_line("a") + completion_line("b", sampling={**SAMPLING, "temperature": 0.2})
    path = write_bytes(tmp_path, lines.encode())
    message = error_of(iter_completions, path)
    assert message.startswith(f"{path}:2: sampling differs from line 1")


def test_a_rollout_file_that_mixes_policies_is_rejected(tmp_path: Path) -> None:
    path = write_bytes(tmp_path, (completion_line("a") + completion_line("b", policy="q")).encode())
    assert error_of(iter_completions, path).startswith(f"{path}:2: policy differs from line 1")


def test_a_rollout_line_without_sampling_is_rejected(tmp_path: Path) -> None:
    line = dumps_line({"id": "a", "completion": "Final: 1", "policy": "p"}) + "\n"
    path = write_bytes(tmp_path, line.encode())
    assert error_of(iter_completions, path) == f"{path}:1: missing field 'sampling' (an object)"


def test_an_infinite_sampling_value_is_rejected(tmp_path: Path) -> None:
    line = '{"id": "a", "completion": "x", "policy": "p", "sampling": {"temperature": 1e400}}\n'
    path = write_bytes(tmp_path, line.encode())
    assert "too large" in error_of(iter_completions, path)


def test_duplicate_completion_ids_are_rejected(tmp_path: Path) -> None:
    path = write_bytes(tmp_path, (completion_line("a") + completion_line("b") + completion_line("a")).encode())
    assert error_of(iter_completions, path).startswith(f"{path}:3: duplicate id 'a' (first seen on line 1)")


# --- selection packs ---------------------------------------------------------------------------
def pack_line(ident: str, texts: list[str], indices: list[int] | None = None) -> str:
    indices = list(range(len(texts))) if indices is None else indices
    samples = [{"sample_index": i, "completion": t} for i, t in zip(indices, texts)]
    return dumps_line({"id": ident, "samples": samples, "policy": "p", "sampling": SAMPLING}) + "\n"


def test_iter_samples_yields_numbered_samples_with_stable_ids(tmp_path: Path) -> None:
    path = write_bytes(tmp_path, (pack_line("a", ["Final: 1", "Final: 2"]) + pack_line("b", ["x"])).encode())
    packs = list(iter_samples(path))
    assert [len(p.samples) for p in packs] == [2, 1]
    assert packs[0].samples[1].completion == "Final: 2"
    assert packs[0].sample_id(1) == "a#1"


def test_a_pack_with_samples_out_of_order_is_rejected(tmp_path: Path) -> None:
    path = write_bytes(tmp_path, pack_line("a", ["x", "y"], [1, 0]).encode())
    assert error_of(iter_samples, path).startswith(f"{path}:1: samples[0] has sample_index 1")


def test_a_pack_item_without_samples_is_rejected(tmp_path: Path) -> None:
    path = write_bytes(tmp_path, pack_line("a", []).encode())
    assert "is empty" in error_of(iter_samples, path)


# --- run files -----------------------------------------------------------------------------
def test_iter_results_rejects_a_non_numeric_reward(tmp_path: Path) -> None:
    line = dumps_line({"id": "a", "reward": "1", "details": {"error_code": "ok"}}) + "\n"
    path = write_bytes(tmp_path, line.encode())
    assert error_of(iter_results, path).startswith(f"{path}:1: field 'reward' must be a finite number")


def test_iter_results_requires_an_error_code(tmp_path: Path) -> None:
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


# --- one decoder: any JSON object line is read exactly as json.loads reads it ------------------
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.sampled_from([2**64, -(2**63) - 1, 10**30])
    | st.floats(allow_nan=False) | ht.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(ht.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)


def _verdict(path: Path) -> object:
    try:
        return [obj for _, obj in iter_objects(path)]
    except CourseError as exc:
        return f"error: {exc}"


@given(st.dictionaries(ht.text(max_size=5), json_values, max_size=4), st.booleans())
@settings(max_examples=150, deadline=None)
def test_the_reader_returns_what_json_loads_returns_or_refuses_a_surrogate_or_infinity(
    tmp_path_factory, obj: dict, ascii_only: bool
) -> None:
    line = json.dumps(obj, ensure_ascii=ascii_only) + "\n"
    try:
        data = line.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate cannot even be written as UTF-8
        return
    path = tmp_path_factory.mktemp("eq") / "x.jsonl"
    path.write_bytes(data)
    verdict = _verdict(path)
    if isinstance(verdict, str):
        assert verdict.startswith(f"error: {path}:1: ")
        assert "lone surrogate" in verdict or "Infinity is not a JSON number" in verdict
    else:
        assert repr(verdict) == repr([json.loads(line)])


def test_integers_beyond_64_bits_are_read_exactly_as_python_ints(tmp_path: Path) -> None:
    big = -(2**63) - 1  # beyond 64 bits: some JSON parsers turn it into a float
    line = dumps_line({"id": "a", "prompt": "p", "expected_answer": big}) + "\n"
    path = write_bytes(tmp_path, (dataset_bytes(1).decode() + line.replace('"a"', '"b"')).encode())
    assert read_dataset(path)[1].expected_answer == big


def test_a_big_sampling_seed_is_the_same_value_on_every_line(tmp_path: Path) -> None:
    seed = 2**64 + 1
    lines = completion_line("a", sampling={"seed": seed}) + completion_line("b", sampling={"seed": seed})
    records = list(iter_completions(write_bytes(tmp_path, lines.encode())))
    assert [r.sampling["seed"] for r in records] == [seed, seed]
    assert all(type(r.sampling["seed"]) is int for r in records)


# --- iter_aligned: course.eval's streaming path reads exactly what the two readers read -----------
def read_one_by_one(dataset: Path, completions: Path) -> list[tuple[dict, dict]]:
    """The reference: each file through its own reader, ids compared line by line."""
    comps = cio.iter_completion_objects(completions, unique=False)
    pairs = []
    for _, example in cio.iter_dataset_objects(dataset):
        item = next(comps, None)
        if item is None or item[1]["id"] != example["id"]:
            raise cio.NotAligned
        pairs.append((example, item[1]))
    if next(comps, None) is not None:
        raise cio.NotAligned
    return pairs


def outcome(fn, dataset: Path, completions: Path) -> str:
    try:
        return "pairs " + repr(list(fn(dataset, completions)))
    except cio.NotAligned:
        return "not aligned"
    except CourseError as exc:
        return f"error: {exc}"


TAIL = ', "policy": "p", "sampling": ' + dumps_line(SAMPLING) + "}\n"
# Ways a line can go wrong or be unusual. Each takes the line (with its "\n") and returns bytes.
LINE_MUTATIONS = {
    "keep": lambda line: line.encode(),
    "invalid json": lambda line: line[: len(line) // 2].encode() + b"\n",
    "crlf": lambda line: line[:-1].encode() + b"\r\n",
    "not utf-8": lambda line: line.encode().replace(b'"id"', b'"\xff\xfeid"', 1),
    "an array": lambda line: b"[1, 2]\n",
    "blank": lambda line: b"\n",
    "leading space": lambda line: b"  " + line.encode(),
    "trailing space": lambda line: line[:-1].encode() + b" \t \n",
    "trailing text": lambda line: line[:-1].encode() + b" x\n",
    "two objects": lambda line: line[:-1].encode() + b" {}\n",
    "no newline": lambda line: line[:-1].encode(),
    "nul at the end": lambda line: line[:-1].encode() + b"\x00\n",
    "last brace a nul, no newline": lambda line: line[:-2].encode() + b"\x00",
    "policy first": lambda line: (json.dumps({"policy": None, **json.loads(line)}) + "\n").encode(),
    "lone surrogate": lambda line: line.replace('"id"', '"x": "\\ud800", "id"', 1).encode(),
    "id is a number": lambda line: line.replace('"id": "', '"id": 7, "old": "', 1).encode(),
    "id changed": lambda line: line.replace('"id": "', '"id": "other-', 1).encode(),
    "field removed": lambda line: line.replace('"prompt"', '"Prompt"').replace('"completion"', '"Completion"').encode(),
    "expected is true": lambda line: line.replace('"expected_answer": ', '"expected_answer": true, "was": ').encode(),
    "completion is null": lambda line: line.replace('"completion": ', '"completion": null, "was": ', 1).encode(),
    "big integer": lambda line: line.replace('"expected_answer": ', '"expected_answer": 18446744073709551617, "was": ')
    .replace('"seed": 3', '"seed": 18446744073709551617').encode(),
    "other sampling": lambda line: line.replace('"seed": 3', '"seed": 4').encode(),
    "same sampling, float seed": lambda line: line.replace('"seed": 3', '"seed": 3.0').encode(),
    "other policy": lambda line: line.replace('"policy": "p"', '"policy": "q"').encode(),
    # Lines that end in line 1's tail text (a removed shortcut once skipped parsing it): read as a parser would.
    "tail, empty head": lambda line: ("{" + TAIL).encode(),
    "tail, head ends in a comma": lambda line: ('{"completion": "Final: 1", "id": "dev-0001",' + TAIL).encode(),
    "tail, head repeats sampling": lambda line: line.replace('"completion"', '"sampling": 1, "completion"', 1).encode(),
    "tail text inside the completion": lambda line: line.replace(
        '"completion": "', '"completion": "' + TAIL[:-2].replace('"', '\\"') + " ", 1
    ).encode(),
    "tail, unclosed string in head": lambda line: ('{"completion": "Final: 1' + TAIL).encode(),
}


def aligned_files(tmp_path: Path, n: int, mutations: list[tuple[str, int, str]], drop: str | None) -> tuple[Path, Path]:
    dataset = [dumps_line({"id": f"dev-{i:04d}", "prompt": f"Compute {i} + 1.", "expected_answer": i + 1}) + "\n"
               for i in range(1, n + 1)]
    rollouts = [completion_line(f"dev-{i:04d}", f"Final: {i + 1}") for i in range(1, n + 1)]
    data = {"dataset": [line.encode() for line in dataset], "rollouts": [line.encode() for line in rollouts]}
    for which, index, name in mutations:
        lines = dataset if which == "dataset" else rollouts
        data[which][index % n] = LINE_MUTATIONS[name](lines[index % n])
    if drop == "last rollout":
        data["rollouts"].pop()
    elif drop == "extra rollout":
        data["rollouts"].append(completion_line("dev-9999").encode())
    elif drop == "bom":
        data["rollouts"][0] = b"\xef\xbb\xbf" + data["rollouts"][0]
    return (write_bytes(tmp_path, b"".join(data["dataset"]), "d.jsonl"),
            write_bytes(tmp_path, b"".join(data["rollouts"]), "c.jsonl"))


@given(
    st.integers(1, 4),
    st.lists(st.tuples(st.sampled_from(["dataset", "rollouts"]), st.integers(0, 3),
                       st.sampled_from(sorted(LINE_MUTATIONS))),
             max_size=3),
    st.sampled_from([None, None, "last rollout", "extra rollout", "bom"]),
)
@settings(max_examples=200, deadline=None)
def test_the_one_reader_accepts_a_line_as_json_loads_reads_it_or_refuses_it_with_path_and_line(
    tmp_path_factory, n: int, mutations: list, drop: str | None
) -> None:
    dataset, completions = aligned_files(tmp_path_factory.mktemp("al"), n, mutations, drop)
    verdict = outcome(cio.iter_aligned, dataset, completions)
    assert verdict == outcome(read_one_by_one, dataset, completions)
    if verdict.startswith("pairs "):
        pairs = list(cio.iter_aligned(dataset, completions))
        for (example, record), d_line, c_line in zip(pairs, dataset.read_text().splitlines(),
                                                     completions.read_text().splitlines()):
            assert repr(example) == repr(json.loads(d_line)) and repr(record) == repr(json.loads(c_line))
    elif verdict.startswith("error: "):
        assert re.match(rf"error: ({re.escape(str(dataset))}|{re.escape(str(completions))}):[0-9]+: ", verdict)


@pytest.mark.parametrize("name", sorted(LINE_MUTATIONS))
def test_every_line_mutation_gets_the_same_verdict_from_iter_aligned(tmp_path: Path, name: str) -> None:
    for where in (tmp_path / "rollouts", tmp_path / "both"):
        where.mkdir()
        mutations = [("rollouts", 1, name)] + ([("dataset", 2, name)] if where.name == "both" else [])
        dataset, completions = aligned_files(where, 3, mutations, None)
        assert outcome(cio.iter_aligned, dataset, completions) == outcome(read_one_by_one, dataset, completions)


def test_a_rollout_line_of_only_line_1s_tail_is_invalid_json(tmp_path: Path) -> None:
    dataset, completions = aligned_files(tmp_path, 3, [("rollouts", 1, "tail, empty head")], None)
    assert outcome(cio.iter_aligned, dataset, completions).startswith(f"error: {completions}:2: invalid JSON")


def test_without_a_shared_tail_a_line_ending_in_nul_instead_of_a_brace_is_invalid_json(tmp_path: Path) -> None:
    mutations = [("rollouts", 0, "policy first"), ("rollouts", 2, "last brace a nul, no newline")]
    dataset, completions = aligned_files(tmp_path, 3, mutations, None)
    assert outcome(cio.iter_aligned, dataset, completions).startswith(f"error: {completions}:3: invalid JSON")


def test_aligned_records_equal_what_json_loads_reads(tmp_path: Path) -> None:
    dataset, completions = aligned_files(tmp_path, 4, [], None)
    pairs = list(cio.iter_aligned(dataset, completions))
    assert len(pairs) == 4
    for (example, record), d_line, c_line in zip(pairs, dataset.read_text().splitlines(),
                                                 completions.read_text().splitlines()):
        assert repr(example) == repr(json.loads(d_line))
        assert repr(record) == repr(json.loads(c_line))


def test_a_key_repeated_in_one_line_is_refused_where_json_loads_keeps_the_last(tmp_path: Path) -> None:
    # json.loads silently keeps the last "sampling"; two readers could disagree on the item (issue 23 item 9).
    dataset, completions = aligned_files(tmp_path, 4, [("rollouts", 1, "tail, head repeats sampling")], None)
    assert outcome(cio.iter_aligned, dataset, completions) == (
        f"error: {completions}:2: invalid JSON: the key 'sampling' appears twice in one object "
        "(which value is meant is ambiguous)"
    )


# --- the fast path (orjson) against the standard library, line by line ------------------------
# JSON text built by hand, so that an object may repeat a key at any depth, numbers may be beyond
# 64 bits, strings may hold escapes (\\u among them) and colons, and spacing varies.
_KEYS = st.sampled_from(["a", "b", "id", "a:b", "\\u0061", "\\ud800", 'x\\"y'])
_LEAVES = st.one_of(
    st.sampled_from(["null", "true", "false", "0", "-0", "1e999", "NaN", "1.5e-324", '"x:y"', '"\\udc00"', '"\\u003a"',
                     '"\\ud83d\\ude00"', '"\\n:"']),
    st.integers(-(2**70), 2**70).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    ht.text(max_size=6).map(lambda t: json.dumps(t, ensure_ascii=False)),
)
_SPACE = st.sampled_from(["", " ", "  "])


def _object_text(draw_members: list) -> str:
    return "{" + ",".join(f'{s1}"{k}"{s2}:{s3}{v}' for k, v, s1, s2, s3 in draw_members) + "}"


_JSON_TEXT = st.recursive(
    _LEAVES,
    lambda inner: st.lists(inner, max_size=3).map(lambda xs: "[" + ", ".join(xs) + "]")
    | st.lists(st.tuples(_KEYS, inner, _SPACE, _SPACE, _SPACE), max_size=4).map(_object_text),
    max_leaves=10,
)


def _line_verdict(raw: bytes) -> object:
    from course.lib.records.jsonl import parse_line

    try:
        return repr(parse_line(raw, "x.jsonl", 3))  # repr: 1 and 1.0 and True differ, -0.0 and 0.0 differ
    except CourseError as exc:
        return f"error: {exc}"


@given(st.lists(st.tuples(_KEYS, _JSON_TEXT, _SPACE, _SPACE, _SPACE), max_size=5), _SPACE, st.sampled_from(["\n", ""]))
@settings(max_examples=300, deadline=None)
def test_the_fast_path_and_the_standard_library_give_every_line_the_same_verdict(
    json_reader: str, members: list, lead: str, end: str
) -> None:
    from course.lib.records import jsonl

    if json_reader != "orjson":
        pytest.skip("compares both paths itself: once is enough")
    raw = (lead + _object_text(members) + end).encode("utf-8", "surrogatepass")
    on = jsonl._fast_on
    try:
        jsonl.use_fast_decoder(True)
        fast = _line_verdict(raw)
        jsonl.use_fast_decoder(False)
        assert fast == _line_verdict(raw)
    finally:
        jsonl.use_fast_decoder(on)


def test_a_repeated_key_nested_in_a_value_is_refused_on_both_paths(tmp_path: Path) -> None:
    line = '{"id": "a", "completion": "x", "policy": "p", "sampling": {"seed": 1, "seed": 2}}\n'
    assert error_of(iter_objects, write_bytes(tmp_path, line.encode())) == (
        f"{tmp_path / 'f.jsonl'}:1: invalid JSON: the key 'seed' appears twice in one object "
        "(which value is meant is ambiguous)"
    )


def test_a_repeated_key_whose_strings_hold_colons_is_still_found(tmp_path: Path) -> None:
    # The fast path counts colons outside strings; colons inside the dropped member's strings must not hide it.
    line = '{"a:b": "c:d", "a:b": "e"}\n'
    assert "the key 'a:b' appears twice" in error_of(iter_objects, write_bytes(tmp_path, line.encode()))


def test_the_fast_path_reads_an_ordinary_line_when_orjson_is_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    from course.lib.records import jsonl

    if importlib.util.find_spec("orjson") is None or not jsonl._fast_on:
        pytest.skip("orjson is not installed, or this run reads with the standard library")
    jsonl.use_fast_decoder(True)
    calls = []
    loads = jsonl._orjson_loads
    monkeypatch.setattr(jsonl, "_orjson_loads", lambda raw: calls.append(raw) or loads(raw))
    assert jsonl.parse_line(completion_line("a").encode(), "x", 1)["id"] == "a"
    assert calls, "the fast path never ran: course.eval would read at the standard library's speed"


def test_without_orjson_the_reader_falls_back_to_the_standard_library(monkeypatch: pytest.MonkeyPatch,
                                                                      tmp_path: Path) -> None:
    import sys

    from course.lib.records import jsonl

    monkeypatch.setitem(sys.modules, "orjson", None)  # `import orjson` now raises ImportError, as on a core install
    monkeypatch.setattr(jsonl, "_orjson_loads", None)
    monkeypatch.setattr(jsonl, "_fast_on", True)  # as at start-up: not looked up yet
    records = list(iter_completions(write_bytes(tmp_path, (completion_line("a") + completion_line("b")).encode())))
    assert [r.id for r in records] == ["a", "b"]
    assert jsonl._fast_on is False and jsonl.use_fast_decoder() is False
    monkeypatch.undo()
    jsonl.use_fast_decoder(True)
