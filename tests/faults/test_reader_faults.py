"""Reader fault classes (issue #12, classes 5, 6 and the reader part of 7), across every tool that reads input.

Each case hands one tool one bad input in one slot and expects what the product
standard promises: exit code 2, exactly one line on stderr naming the bad path,
and nothing written. The tools run in-process (fast); a SIGALRM turns a hang on
a FIFO into a failure instead of a stuck suite.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
from pathlib import Path
from typing import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from course.errors import CourseError
from course.lib.records import formats
from course.lib.records.jsonl import MAX_DEPTH, iter_objects, read_json

# Every case runs with the standard library's reading alone and with orjson first (the fast path,
# where installed): the same verdicts, the same messages (tests/conftest.py, json_reader).
pytestmark = pytest.mark.usefixtures("json_reader")

ROOT = Path(__file__).resolve().parents[2]
DEV = ROOT / "data/datasets/math_dev.jsonl"
ROLLOUTS = ROOT / "data/rollouts/frozen_rollouts_dev.jsonl"
PACK = ROOT / "data/rollouts/selection_pack_dev.jsonl"
GOLDEN = ROOT / "data/golden/golden_exploits.jsonl"
KATA = ROOT / "data/kata/kata_examples.jsonl"


# ---------------------------------------------------------------------------
# The tools and the slot each reads. A slot is (tool, good input, argv builder).
# ---------------------------------------------------------------------------
def _eval_dataset(bad: Path, out: Path) -> list[str]:
    return ["course.eval", "--dataset", str(bad), "--completions", str(ROLLOUTS), "--outdir", str(out / "run")]


def _eval_completions(bad: Path, out: Path) -> list[str]:
    return ["course.eval", "--dataset", str(DEV), "--completions", str(bad), "--outdir", str(out / "run")]


def _selection(bad: Path, out: Path) -> list[str]:
    return ["course.selection_demo", "--dataset", str(DEV), "--samples", str(bad), "--n", "1",
            "--outdir", str(out / "run")]


def _golden(bad: Path, out: Path) -> list[str]:
    return ["course.golden", "--exploits", str(bad)]


def _kata(bad: Path, out: Path) -> list[str]:
    return ["course.kata", "--examples", str(bad)]


def _red_team(bad: Path, out: Path) -> list[str]:
    return ["course.red_team", "--rubric", "last_number", "--no-golden", "--exploits", str(bad)]


def _rollout_sample(bad: Path, out: Path) -> list[str]:
    return ["course.rollout_sample", "--dataset", str(bad), "--model", "m", "--base-url", "http://127.0.0.1:9/v1",
            "--out", str(out / "o.jsonl")]


def _tinylm_sample(bad: Path, out: Path) -> list[str]:
    return ["course.tinylm.sample", "--dataset", str(bad), "--out", str(out / "o.jsonl")]


JSONL_SLOTS: dict[str, tuple[Path, Callable[[Path, Path], list[str]]]] = {
    "eval --dataset": (DEV, _eval_dataset),
    "eval --completions": (ROLLOUTS, _eval_completions),
    "selection_demo --samples": (PACK, _selection),
    "golden --exploits": (GOLDEN, _golden),
    "kata --examples": (KATA, _kata),
    "red_team --exploits": (GOLDEN, _red_team),
    "rollout_sample --dataset": (DEV, _rollout_sample),
    "tinylm.sample --dataset": (DEV, _tinylm_sample),
}
DATASET_SLOTS = ["eval --dataset", "rollout_sample --dataset", "tinylm.sample --dataset"]
if importlib.util.find_spec("torch") is None:
    # Without the lm extra, tinylm.sample stops at the extras rule before reading any file
    # (tests/test_tinylm_tools.py checks that); its reader is the same one eval uses.
    del JSONL_SLOTS["tinylm.sample --dataset"]
    DATASET_SLOTS.remove("tinylm.sample --dataset")


def _gate(run: Path, out: Path) -> list[str]:
    return ["course.gate", "--baseline", str(run), "--candidate", str(run), "--min-delta", "0"]


def _inspect(run: Path, out: Path) -> list[str]:
    return ["course.inspect_run", "--run", str(run)]


RUN_SLOTS = {"gate": _gate, "inspect_run": _inspect}


def run_tool(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """Run ``python -m <argv[0]> <argv[1:]>`` in-process, with a 10 s alarm against hangs."""
    import importlib

    module = importlib.import_module(argv[0])

    def hang(signum: int, frame: object) -> None:
        raise TimeoutError(f"{argv[0]} hung on its input")

    previous = signal.signal(signal.SIGALRM, hang)
    signal.alarm(10)
    try:
        code = module.main(argv[1:])
    except SystemExit as exc:  # argparse
        code = exc.code
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    return code, capsys.readouterr().err


def assert_refused(code: int, err: str, bad: Path, out: Path, *fragments: str) -> None:
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert str(bad) in lines[0], lines[0]
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    assert sorted(p.name for p in out.iterdir()) == [], "nothing may be written"


@pytest.fixture()
def out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "out"
    directory.mkdir()
    monkeypatch.chdir(directory)  # a tool's default output (runs/...) would land here and be seen
    return directory


# ---------------------------------------------------------------------------
# Class 5: special files are refused up front, by what they are, and never hang
# ---------------------------------------------------------------------------
def _special(kind: str, tmp_path: Path) -> Path:
    path = tmp_path / f"special_{kind}"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    else:
        path.symlink_to("/dev/zero")
    return path


SPECIAL = {"fifo": "is not a regular file (a FIFO", "directory": "is a directory",
           "dev-zero": "is not a regular file (a character device"}


@pytest.mark.parametrize("kind", sorted(SPECIAL))
@pytest.mark.parametrize("slot", sorted(JSONL_SLOTS))
def test_a_special_file_as_input_is_refused_by_name_without_hanging(
    slot: str, kind: str, tmp_path: Path, out: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if kind == "fifo" and not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this system")
    bad = _special(kind, tmp_path)
    code, err = run_tool(JSONL_SLOTS[slot][1](bad, out), capsys)
    assert_refused(code, err, bad, out, SPECIAL[kind])


@pytest.fixture(scope="module")
def good_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from course.lib.evaluation.pipeline import evaluate

    run, _, _ = evaluate(DEV, ROLLOUTS, outdir=tmp_path_factory.mktemp("run") / "r", argv=[])
    return run


def _copy_run(good_run: Path, tmp_path: Path) -> Path:
    run = tmp_path / "run"
    shutil.copytree(good_run, run)
    return run


@pytest.mark.parametrize("name", ["manifest.json", "summary.json", "results.jsonl"])
@pytest.mark.parametrize("kind", sorted(SPECIAL))
@pytest.mark.parametrize("tool", sorted(RUN_SLOTS))
def test_a_special_file_inside_a_run_directory_is_refused_by_name(
    tool: str, kind: str, name: str, good_run: Path, tmp_path: Path, out: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _copy_run(good_run, tmp_path)
    (run / name).unlink()
    if kind == "fifo":
        os.mkfifo(run / name)
    elif kind == "directory":
        (run / name).mkdir()
    else:
        (run / name).symlink_to("/dev/zero")
    code, err = run_tool(RUN_SLOTS[tool](run, out), capsys)
    assert_refused(code, err, run / name, out, SPECIAL[kind])


def test_the_reader_itself_refuses_a_fifo_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "f.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(CourseError, match="is not a regular file"):
        list(iter_objects(fifo))


# ---------------------------------------------------------------------------
# Class 6: lone surrogates (high and low) and deep nesting, one verdict everywhere
# ---------------------------------------------------------------------------
def _inject(line: str, key: str, raw_value: str) -> str:
    """Line 1 of a good file with one more member whose JSON text is ``raw_value``."""
    assert line.startswith("{")
    return "{" + json.dumps(key) + ": " + raw_value + ", " + line[1:]


CONTENT_FAULTS = {
    "low surrogate": ('"x\\udc00y"', "lone surrogate"),
    "high surrogate": ('"x\\ud800y"', "lone surrogate"),
    "reversed pair": ('"\\udc00\\ud800"', "lone surrogate"),
    "500-deep note": ("[" * 500 + "]" * 500, "nested too deeply"),
    "100,000-deep array": ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
}


def _bad_copy(good: Path, tmp_path: Path, fault: str) -> Path:
    lines = good.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[0] = _inject(lines[0], "injected", CONTENT_FAULTS[fault][0])  # a key no file has: one fault per line
    bad = tmp_path / f"bad_{good.name}"
    bad.write_text("".join(lines), encoding="utf-8")
    return bad


@pytest.mark.parametrize("fault", sorted(CONTENT_FAULTS))
@pytest.mark.parametrize("slot", sorted(JSONL_SLOTS))
def test_a_surrogate_or_deep_nesting_on_line_1_is_refused_with_path_and_line(
    slot: str, fault: str, tmp_path: Path, out: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good, argv = JSONL_SLOTS[slot]
    bad = _bad_copy(good, tmp_path, fault)
    code, err = run_tool(argv(bad, out), capsys)
    assert_refused(code, err, bad, out, f"{bad}:1: ", CONTENT_FAULTS[fault][1])


@pytest.mark.parametrize("name", ["manifest.json", "summary.json"])
@pytest.mark.parametrize("fault", sorted(CONTENT_FAULTS))
@pytest.mark.parametrize("tool", sorted(RUN_SLOTS))
def test_a_surrogate_or_deep_nesting_in_a_run_file_is_refused_with_its_path(
    tool: str, fault: str, name: str, good_run: Path, tmp_path: Path, out: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _copy_run(good_run, tmp_path)
    text = (run / name).read_text(encoding="utf-8")
    (run / name).write_text(_inject(text, "note", CONTENT_FAULTS[fault][0]), encoding="utf-8")
    code, err = run_tool(RUN_SLOTS[tool](run, out), capsys)
    assert_refused(code, err, run / name, out, f"{run / name}:1: ", CONTENT_FAULTS[fault][1])


def test_nesting_up_to_the_limit_is_accepted_and_one_more_level_is_not(tmp_path: Path) -> None:
    ok, deep = tmp_path / "ok.jsonl", tmp_path / "deep.jsonl"
    ok.write_text('{"a": ' + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1) + "}\n")
    deep.write_text('{"a": ' + "[" * MAX_DEPTH + "]" * MAX_DEPTH + "}\n")
    assert len(list(iter_objects(ok))) == 1
    with pytest.raises(CourseError, match=rf"{deep}:1: invalid JSON: nested too deeply"):
        list(iter_objects(deep))


def test_brackets_inside_strings_do_not_count_as_nesting(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps({"note": "[" * 5000}) + "\n")
    assert list(iter_objects(path))[0][1]["note"] == "[" * 5000


def test_a_valid_surrogate_pair_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text('{"note": "\\ud83d\\ude00"}\n')
    assert list(iter_objects(path))[0][1]["note"] == "\U0001F600"


def test_read_json_gives_a_deep_manifest_the_same_verdict_as_a_deep_line(tmp_path: Path) -> None:
    path = tmp_path / "manifest.json"
    path.write_text('{\n  "a": ' + "[" * 100_000 + "]" * 100_000 + "\n}\n")
    with pytest.raises(CourseError, match=rf"{path}:2: the manifest is not valid JSON: nested too deeply"):
        read_json(path, "manifest")


# ---------------------------------------------------------------------------
# Class 7 (reader part): a boolean is never an integer
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("slot", DATASET_SLOTS)
def test_expected_answer_true_is_refused_by_every_dataset_reader(
    slot: str, tmp_path: Path, out: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = DEV.read_text(encoding="utf-8").splitlines(keepends=True)
    record = json.loads(lines[1])
    record["expected_answer"] = True
    lines[1] = json.dumps(record) + "\n"
    bad = tmp_path / "bool.jsonl"
    bad.write_text("".join(lines), encoding="utf-8")
    code, err = run_tool(JSONL_SLOTS[slot][1](bad, out), capsys)
    assert_refused(code, err, bad, out, f"{bad}:2: field 'expected_answer' must be an integer, got a boolean")


@pytest.mark.parametrize("slot,good", [("eval --completions", ROLLOUTS), ("selection_demo --samples", PACK)])
@pytest.mark.parametrize("first,second", [(1, True), (True, 1), (0, False), (1.0, True)])
def test_a_seed_of_true_is_not_the_seed_1_in_the_one_sampling_per_file_rule(
    slot: str, good: Path, first: object, second: object, tmp_path: Path, out: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = good.read_text(encoding="utf-8").splitlines(keepends=True)
    records = [json.loads(line) for line in lines]
    for i, record in enumerate(records):
        record["sampling"]["seed"] = first if i == 0 else second
    bad = tmp_path / good.name
    bad.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    code, err = run_tool(JSONL_SLOTS[slot][1](bad, out), capsys)
    assert_refused(code, err, bad, out, f"{bad}:2: sampling differs from line 1")


def test_numbers_equal_by_value_are_still_the_same_sampling(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    rows = [{"id": "a", "completion": "x", "policy": "p", "sampling": {"seed": 1, "t": [1, {"u": 0}]}},
            {"id": "b", "completion": "y", "policy": "p", "sampling": {"seed": 1.0, "t": [1.0, {"u": 0.0}]}}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert [c.id for c in formats.iter_completions(path)] == ["a", "b"]


def test_a_nested_boolean_differs_from_a_nested_number(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    rows = [{"id": "a", "completion": "x", "policy": "p", "sampling": {"t": [1]}},
            {"id": "b", "completion": "y", "policy": "p", "sampling": {"t": [True]}}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(CourseError, match=rf"{path}:2: sampling differs from line 1"):
        list(formats.iter_completions(path))


# ---------------------------------------------------------------------------
# Property: whatever bytes a line holds, each reader accepts it or refuses it with path:line
# ---------------------------------------------------------------------------
READERS = {
    "objects": lambda p: list(iter_objects(p)),
    "dataset": formats.read_dataset,
    "completions": lambda p: list(formats.iter_completions(p)),
    "pack": lambda p: list(formats.iter_samples(p)),
    "results": lambda p: list(formats.iter_results(p)),
}
PIECES = st.sampled_from([
    b"{", b"}", b"[", b"]", b'"', b":", b",", b" ", b"\\", b"\\u", b"d800", b"dc00", b"\xff", b"\xc3\xa9", b"\r",
    b"\x00", b"1", b"true", b"NaN", b"1e400", b'"id"', b'"a"', b'"expected_answer"', b'"prompt"', b"\xef\xbb\xbf",
])


@given(
    st.one_of(st.binary(max_size=40), st.lists(PIECES, max_size=30).map(b"".join)),
    st.sampled_from(sorted(READERS)),
)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_any_line_is_accepted_or_refused_with_path_and_line(tmp_path: Path, data: bytes, reader: str) -> None:
    path = tmp_path / "any.jsonl"
    path.write_bytes(data.replace(b"\n", b" ") + b"\n")
    try:
        READERS[reader](path)
    except CourseError as exc:
        message = str(exc)
        assert message.startswith(f"{path}:1: "), message
        assert "\n" not in message
        message.encode("utf-8")  # printable: no lone surrogate leaks into the message


@given(st.binary(min_size=1, max_size=30))
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_via_the_cli_any_bad_line_gives_exit_2_one_stderr_line_and_writes_nothing(
    tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str], data: bytes
) -> None:
    tmp = tmp_path_factory.mktemp("cli")
    out = tmp / "out"
    out.mkdir()
    dataset, bad = tmp / "math_dev.jsonl", tmp / "bad.jsonl"
    dataset.write_bytes(b"".join(DEV.read_bytes().splitlines(keepends=True)[:3]))
    lines = ROLLOUTS.read_bytes().splitlines(keepends=True)[:3]
    bad.write_bytes(lines[0] + data.replace(b"\n", b" ") + b"\n" + lines[2])
    argv = ["course.eval", "--dataset", str(dataset), "--completions", str(bad), "--outdir", str(out / "run")]
    code, err = run_tool(argv, capsys)
    if code == 2:
        assert_refused(code, err, bad, out, f"{bad}:2: ")
    else:  # an acceptable line: a valid dataset item would have to appear by chance
        assert code == 0
