"""Sharded evaluation: course.eval --shard K/N writes parts, course.eval merge joins them into the one-process run.

The guarantee under test: whatever cut the work and whatever ran the parts, the merged run is the
single-process run (results.jsonl and summary.json byte for byte), the gate treats it exactly as
that run, and a set of parts that cannot make that run is refused in one line, exit 2.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import course.eval as ev
import course.gate as gate
from course.errors import CourseError
from course.lib.evaluation.shards import MAX_SHARDS, Shard, parse_shard, shard_of
from course.lib.records.jsonl import dumps_line
from course.lib.records.manifest import PROJECT_ROOT

DEV = PROJECT_ROOT / "data" / "datasets" / "math_dev.jsonl"
FROZEN = PROJECT_ROOT / "data" / "rollouts" / "frozen_rollouts_dev.jsonl"
SAME_BYTES = ("results.jsonl", "summary.json")


# --- which items a shard holds ------------------------------------------------------------------------
@settings(max_examples=200, deadline=None)
@given(n_items=st.integers(0, 300), count=st.integers(1, 40), block=st.integers(1, 70))
def test_every_position_is_in_exactly_one_shard_for_any_count_and_block(n_items: int, count: int, block: int) -> None:
    shards = [Shard(k, count, block) for k in range(count)]
    for position in range(n_items):
        owners = [s.index for s in shards if s.holds(position)]
        assert owners == [shard_of(position, count, block)]


def test_blocks_of_consecutive_items_are_dealt_round_robin() -> None:
    assert [shard_of(p, 2, block=3) for p in range(8)] == [0, 0, 0, 1, 1, 1, 0, 0]
    assert [p for p in range(7) if Shard(2, 3).holds(p)] == [2, 5]


def test_the_assignment_does_not_depend_on_the_process_hash_seed() -> None:
    # Positions, not hash(): the same dataset is cut the same way in every interpreter (a Ray worker, a cluster node).
    import subprocess
    import sys

    code = "from course.lib.evaluation.shards import shard_of; print([shard_of(p, 5, 2) for p in range(30)])"
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=PROJECT_ROOT, check=True,
                           env={"PYTHONHASHSEED": seed, "PATH": ""}).stdout for seed in ("0", "1", "12345")}
    assert len(outs) == 1


# K and N keep their capitals: the shard is written K/N, as --shard takes it
@pytest.mark.parametrize("text", ["", "3", "1/", "/4", "a/4", "-1/4", "1.0/4", "4/4", "0/0", f"0/{MAX_SHARDS + 1}",
                                  "١/٤"])
def test_a_shard_that_is_not_K_of_N_is_refused(text: str) -> None:  # noqa: N802
    with pytest.raises(CourseError, match=r"K/N|N must|K counts from 0"):
        parse_shard(text)


def test_a_bad_shard_flag_is_a_usage_error_before_any_work(tmp_path: Path, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        ev.main(["--shard", "2/2", "--outdir", str(tmp_path / "p")])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "argument --shard: '2/2': K counts from 0" in err and not (tmp_path / "p").exists()


# --- parts and the merge on the bundled dev set ----------------------------------------------------------
def _eval(*args: str) -> int:
    return ev.main(["--dataset", str(DEV), "--completions", str(FROZEN), *args])


@pytest.fixture(scope="module")
def dev_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The single-process run of the bundled dev set and its 3 parts (made once: every test below reads them)."""
    root = tmp_path_factory.mktemp("shards")
    assert _eval("--outdir", str(root / "single")) == 0
    for k in range(3):
        assert _eval("--shard", f"{k}/3", "--outdir", str(root / f"part_{k}")) == 0
    return root


def _parts(root: Path) -> list[str]:
    return [str(root / f"part_{k}") for k in (2, 0, 1)]  # any order


def test_a_part_records_its_shard_and_the_same_fingerprints_as_the_whole_run(dev_runs: Path) -> None:
    single = json.loads((dev_runs / "single" / "manifest.json").read_text())
    part = json.loads((dev_runs / "part_1" / "manifest.json").read_text())
    assert part["shard"]["index"] == 1 and part["shard"]["count"] == 3 and part["shard"]["block"] == 1
    assert "position" in part["shard"]["rule"]
    for key in ("dataset", "dataset_fingerprint", "scorer_fingerprint", "rubric", "policy", "sampling", "completions"):
        assert part[key] == single[key], key
    ids = [json.loads(line)["id"] for line in (dev_runs / "part_1" / "results.jsonl").read_text().splitlines()]
    dev_ids = [json.loads(line)["id"] for line in DEV.read_text().splitlines()]
    assert ids == dev_ids[1::3] and part["n_items"] == len(ids) == 33


def test_merged_parts_are_the_single_process_run_byte_for_byte(dev_runs: Path, tmp_path: Path) -> None:
    assert ev.main(["merge", *_parts(dev_runs), "--outdir", str(tmp_path / "merged")]) == 0
    for name in SAME_BYTES + ("summary.md",):
        assert (tmp_path / "merged" / name).read_bytes() == (dev_runs / "single" / name).read_bytes(), name
    manifest = json.loads((tmp_path / "merged" / "manifest.json").read_text())
    assert "shard" not in manifest and [m["shard"] for m in manifest["merged_from"]] == ["0/3", "1/3", "2/3"]
    assert manifest["command"].startswith("python -m course.eval merge ")


def test_the_gate_accepts_the_merged_run_as_it_accepts_the_single_process_run(dev_runs: Path, tmp_path: Path,
                                                                               capsys) -> None:
    assert ev.main(["merge", *_parts(dev_runs), "--outdir", str(tmp_path / "merged"), "--json"]) == 0
    capsys.readouterr()
    verdicts = []
    for candidate in (dev_runs / "single", tmp_path / "merged"):
        assert gate.main(["--baseline", str(dev_runs / "single"), "--candidate", str(candidate),
                          "--min-delta", "0.00", "--json"]) == 0
        verdict = json.loads(capsys.readouterr().out)
        verdict["candidate"].pop("run")
        verdicts.append(verdict)
    assert verdicts[0] == verdicts[1] and verdicts[0]["decision"] == "ACCEPT"


def test_the_gate_refuses_a_part_as_a_measurement_of_the_dataset(dev_runs: Path, capsys) -> None:
    assert gate.main(["--baseline", str(dev_runs / "single"), "--candidate", str(dev_runs / "part_0"),
                      "--min-delta", "0.00"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is part 0/3 of a sharded run" in err and "course.eval merge" in err


def test_more_parts_than_items_still_merge_to_the_single_run(tmp_path: Path) -> None:
    dataset, completions = tmp_path / "tiny_dev.jsonl", tmp_path / "tiny_rollouts.jsonl"
    lines = DEV.read_text().splitlines(keepends=True)[:2]
    dataset.write_text("".join(lines))
    completions.write_text("".join(FROZEN.read_text().splitlines(keepends=True)[:2]))
    base = ["--dataset", str(dataset), "--completions", str(completions)]
    assert ev.main([*base, "--outdir", str(tmp_path / "single")]) == 0
    for k in range(3):
        assert ev.main([*base, "--shard", f"{k}/3", "--outdir", str(tmp_path / f"p{k}")]) == 0
    assert json.loads((tmp_path / "p2" / "summary.json").read_text())["n"] == 0
    assert ev.main(["merge", *(str(tmp_path / f"p{k}") for k in range(3)), "--outdir", str(tmp_path / "m")]) == 0
    for name in SAME_BYTES:
        assert (tmp_path / "m" / name).read_bytes() == (tmp_path / "single" / name).read_bytes()


def test_parts_scored_from_shuffled_completions_merge_to_the_same_run(dev_runs: Path, tmp_path: Path) -> None:
    # The indexed path (completions in another order) cuts the dataset the same way as the streaming path.
    shuffled = tmp_path / "shuffled_rollouts.jsonl"
    shuffled.write_text("".join(reversed(FROZEN.read_text().splitlines(keepends=True))))
    base = ["--dataset", str(DEV), "--completions", str(shuffled)]
    assert ev.main([*base, "--outdir", str(tmp_path / "single")]) == 0
    for k in range(2):
        assert ev.main([*base, "--shard", f"{k}/2", "--outdir", str(tmp_path / f"p{k}")]) == 0
    assert ev.main(["merge", str(tmp_path / "p0"), str(tmp_path / "p1"), "--outdir", str(tmp_path / "m")]) == 0
    for name in SAME_BYTES:
        assert (tmp_path / "m" / name).read_bytes() == (tmp_path / "single" / name).read_bytes()
    assert (tmp_path / "m" / "results.jsonl").read_bytes() == (dev_runs / "single" / "results.jsonl").read_bytes()


def test_eval_without_a_subcommand_is_unchanged(dev_runs: Path, tmp_path: Path) -> None:
    assert _eval("--outdir", str(tmp_path / "again")) == 0
    for name in SAME_BYTES:
        assert (tmp_path / "again" / name).read_bytes() == (dev_runs / "single" / name).read_bytes()
    assert "shard" not in json.loads((tmp_path / "again" / "manifest.json").read_text())


def test_merge_help_ends_with_a_worked_example(capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        ev.main(["merge", "--help"])
    out = capsys.readouterr().out
    assert (exc.value.code == 0 and "example:" in out
            and out.rstrip().splitlines()[-1].strip().startswith("python -m course.gate"))


# --- what a merge refuses: one line, exit 2, nothing written ----------------------------------------------
def _copy_parts(dev_runs: Path, tmp_path: Path) -> list[Path]:
    out = []
    for k in range(3):
        shutil.copytree(dev_runs / f"part_{k}", tmp_path / f"part_{k}")
        out.append(tmp_path / f"part_{k}")
    return out


def _edit_manifest(run: Path, **changes: object) -> None:
    path = run / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest.update(changes)
    path.write_text(json.dumps(manifest, indent=2))


def _refused(tmp_path: Path, capsys, *parts: Path | str, extra: tuple[str, ...] = ()) -> str:
    out = tmp_path / "merged"
    assert ev.main(["merge", *map(str, parts), "--outdir", str(out), *extra]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: "), err
    assert not out.exists()
    return err


def test_merge_refuses_parts_with_another_scorer_fingerprint(dev_runs: Path, tmp_path: Path, capsys) -> None:
    parts = _copy_parts(dev_runs, tmp_path)
    _edit_manifest(parts[1], scorer_fingerprint="0" * 64)
    assert "scorer_fingerprint differs" in _refused(tmp_path, capsys, *parts)


def test_merge_refuses_parts_with_other_sampling_settings(dev_runs: Path, tmp_path: Path, capsys) -> None:
    parts = _copy_parts(dev_runs, tmp_path)
    _edit_manifest(parts[2], sampling={"seed": 99})
    assert "sampling differs" in _refused(tmp_path, capsys, *parts)


def test_merge_refuses_parts_of_another_dataset(dev_runs: Path, tmp_path: Path, capsys) -> None:
    parts = _copy_parts(dev_runs, tmp_path)
    _edit_manifest(parts[0], dataset_fingerprint="f" * 64)
    assert "dataset_fingerprint differs" in _refused(tmp_path, capsys, *parts)


def test_merge_refuses_a_missing_shard(dev_runs: Path, tmp_path: Path, capsys) -> None:
    parts = _parts(dev_runs)[:2]
    assert "shard 1/3 missing" in _refused(tmp_path, capsys, *parts)


def test_merge_refuses_a_shard_given_twice(dev_runs: Path, tmp_path: Path, capsys) -> None:
    parts = _copy_parts(dev_runs, tmp_path)
    assert "shard 0/3 is given twice" in _refused(tmp_path, capsys, parts[0], *parts)


def test_merge_refuses_parts_cut_into_different_numbers_of_shards(dev_runs: Path, tmp_path: Path, capsys) -> None:
    assert _eval("--shard", "1/2", "--outdir", str(tmp_path / "half")) == 0
    capsys.readouterr()
    err = _refused(tmp_path, capsys, dev_runs / "part_0", tmp_path / "half", dev_runs / "part_2")
    assert "is shard 1/2" in err


def test_merge_refuses_a_run_that_is_not_a_part(dev_runs: Path, tmp_path: Path, capsys) -> None:
    assert "not a part" in _refused(tmp_path, capsys, dev_runs / "single")


def test_merge_refuses_a_part_whose_results_were_edited(dev_runs: Path, tmp_path: Path, capsys) -> None:
    parts = _copy_parts(dev_runs, tmp_path)
    results = parts[1] / "results.jsonl"
    results.write_text(results.read_text().replace('"reward": 0.0', '"reward": 1.0', 1))
    assert "does not match the sha256 recorded in its manifest" in _refused(tmp_path, capsys, *parts)


def _rewrite_results(run: Path, lines: list[str]) -> None:
    """A part whose results were changed and whose manifest was updated to match (a hand-made part)."""
    import hashlib

    text = "".join(line + "\n" for line in lines)
    (run / "results.jsonl").write_text(text)
    _edit_manifest(run, results_sha256=hashlib.sha256(text.encode()).hexdigest())


def test_merge_refuses_an_id_repeated_in_a_part(dev_runs: Path, tmp_path: Path, capsys) -> None:
    parts = _copy_parts(dev_runs, tmp_path)
    lines = (parts[1] / "results.jsonl").read_text().splitlines()
    _rewrite_results(parts[1], lines + lines[-1:])
    assert "results.jsonl:34: duplicate id 'dev-0098'" in _refused(tmp_path, capsys, *parts)


def test_merge_refuses_an_id_that_another_part_holds(dev_runs: Path, tmp_path: Path, capsys) -> None:
    parts = _copy_parts(dev_runs, tmp_path)
    lines = (parts[1] / "results.jsonl").read_text().splitlines()
    stolen = (parts[0] / "results.jsonl").read_text().splitlines()[-1]  # dev-0100, part 0's last item
    _rewrite_results(parts[1], lines + [stolen])
    assert "results.jsonl:34: id dev-0100 is not an item its shard holds" in _refused(tmp_path, capsys, *parts)


def test_merge_refuses_an_id_missing_from_a_part(dev_runs: Path, tmp_path: Path, capsys) -> None:
    parts = _copy_parts(dev_runs, tmp_path)
    lines = (parts[2] / "results.jsonl").read_text().splitlines()
    _rewrite_results(parts[2], lines[:-1])
    assert "ends before dataset item 'dev-0099'" in _refused(tmp_path, capsys, *parts)


def test_merge_refuses_an_id_that_is_not_in_the_dataset(dev_runs: Path, tmp_path: Path, capsys) -> None:
    parts = _copy_parts(dev_runs, tmp_path)
    lines = (parts[0] / "results.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    first["id"] = "stranger-1"
    _rewrite_results(parts[0], [dumps_line(first), *lines[1:]])
    err = _refused(tmp_path, capsys, *parts)
    assert "part_0/results.jsonl:1: id stranger-1 where its shard's next dataset item is 'dev-0001'" in err


def test_merge_refuses_a_dataset_that_is_not_the_one_the_parts_measured(dev_runs: Path, tmp_path: Path, capsys) -> None:
    other = tmp_path / "other_dev.jsonl"
    other.write_text(DEV.read_text().replace('"expected_answer": ', '"expected_answer": 1', 1))
    err = _refused(tmp_path, capsys, *_parts(dev_runs), extra=("--dataset", str(other)))
    assert "is not the dataset the parts measured" in err


# --- every line is checked by the part that owns it, with the whole run's words ------------------------
def _two_files(tmp_path: Path, dataset_lines: list[str], completion_lines: list[str]) -> list[str]:
    dataset, completions = tmp_path / "edge_dev.jsonl", tmp_path / "edge_rollouts.jsonl"
    dataset.write_text("".join(dataset_lines))
    completions.write_text("".join(completion_lines))
    return ["--dataset", str(dataset), "--completions", str(completions)]


def _error(args: list[str], capsys) -> str:  # type: ignore[no-untyped-def]
    assert ev.main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    return err


def test_a_bad_line_is_refused_by_the_part_that_owns_it_as_the_whole_run_refuses_it(tmp_path: Path, capsys) -> None:
    rollouts = FROZEN.read_text().splitlines(keepends=True)
    # position 4: part 1 of 3
    rollouts[4] = rollouts[4].replace('"policy": "sim-policy-v1"', '"policy": "another-policy"')
    base = _two_files(tmp_path, DEV.read_text().splitlines(keepends=True), rollouts)
    whole = _error([*base, "--outdir", str(tmp_path / "whole")], capsys)
    assert "edge_rollouts.jsonl:5: policy differs from line 1" in whole
    assert _error([*base, "--shard", "1/3", "--outdir", str(tmp_path / "p1")], capsys) == whole
    for k in (0, 2):  # the other parts neither parse nor check that line: its owner does
        assert ev.main([*base, "--shard", f"{k}/3", "--outdir", str(tmp_path / f"p{k}")]) == 0


def test_a_dataset_id_repeated_in_two_parts_is_refused_by_the_merge(tmp_path: Path, capsys) -> None:
    dataset = DEV.read_text().splitlines(keepends=True)
    rollouts = FROZEN.read_text().splitlines(keepends=True)
    dataset[2], rollouts[2] = dataset[1], rollouts[1]  # dev-0002 at positions 1 (part 1) and 2 (part 0)
    base = _two_files(tmp_path, dataset, rollouts)
    for k in range(2):
        assert ev.main([*base, "--shard", f"{k}/2", "--outdir", str(tmp_path / f"p{k}")]) == 0
    capsys.readouterr()
    err = _error(["merge", str(tmp_path / "p0"), str(tmp_path / "p1"), "--outdir", str(tmp_path / "m")], capsys)
    assert "edge_dev.jsonl:3: duplicate id 'dev-0002'" in err and not (tmp_path / "m").exists()


def test_completions_out_of_order_in_one_part_only_still_merge_to_the_single_run(tmp_path: Path) -> None:
    rollouts = FROZEN.read_text().splitlines(keepends=True)
    # positions 1 and 2: parts 1 and 2 of 3 meet it, part 0 does not
    rollouts[1], rollouts[2] = rollouts[2], rollouts[1]
    base = _two_files(tmp_path, DEV.read_text().splitlines(keepends=True), rollouts)
    assert ev.main([*base, "--outdir", str(tmp_path / "single")]) == 0
    for k in range(3):
        assert ev.main([*base, "--shard", f"{k}/3", "--outdir", str(tmp_path / f"p{k}")]) == 0
    orders = [json.loads((tmp_path / f"p{k}" / "manifest.json").read_text())["completions_in_dataset_order"]
              for k in range(3)]
    assert orders == [True, False, False]
    assert ev.main(["merge", *(str(tmp_path / f"p{k}") for k in range(3)), "--outdir", str(tmp_path / "m")]) == 0
    for name in SAME_BYTES:
        assert (tmp_path / "m" / name).read_bytes() == (tmp_path / "single" / name).read_bytes()
    assert json.loads((tmp_path / "m" / "manifest.json").read_text())["completions_in_dataset_order"] is False
