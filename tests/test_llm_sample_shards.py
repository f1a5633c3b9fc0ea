"""course.llm.sample --shard K/N and course.llm.sample merge: parts of a sampling run joined into the one-process file.

On the tiny random Llama of conftest.py (``tiny_llm_dir``): with 8 samples per item a batch holds 8
items, so 20 items are 3 batches, and 2 shards take batches {0, 2} and {1}. The merged file must be
the single process's, byte for byte: the parts computed the very same batches.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from course.lib.records.formats import iter_samples
from course.lib.records.manifest import PROJECT_ROOT

HAVE_LLM = all(importlib.util.find_spec(m) is not None for m in ("torch", "transformers", "gguf", "safetensors"))
pytestmark = pytest.mark.skipif(not HAVE_LLM, reason="the llm extra is not installed")
DEV = PROJECT_ROOT / "data" / "datasets" / "math_dev.jsonl"


def sample(run_in_process, *args: str):  # type: ignore[no-untyped-def]
    return run_in_process("course.llm.sample", list(args), cwd=PROJECT_ROOT)


@pytest.fixture(scope="module")
def sampled(tiny_llm_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The single-process pack of 20 dev items (n=8) and its 2 parts, sampled once for the file."""
    from conftest import run_module_in_process

    root = tmp_path_factory.mktemp("llm_shards")
    common = ["--model", str(tiny_llm_dir), "--dataset", str(DEV), "--limit", "20", "--max-tokens", "4", "--n", "8"]
    for name, extra in (("single", []), ("part_0", ["--shard", "0/2"]), ("part_1", ["--shard", "1/2"])):
        proc = run_module_in_process("course.llm.sample", [*common, *extra, "--out", str(root / f"{name}.jsonl")],
                                     cwd=PROJECT_ROOT)
        assert proc.returncode == 0, proc.stderr
    return root


def _manifest(path: Path) -> dict:
    return json.loads(path.with_name(path.name.replace(".jsonl", ".manifest.json")).read_text())


def test_a_part_holds_whole_batches_and_records_its_shard(sampled: Path) -> None:
    ids = [s.id for s in iter_samples(sampled / "part_1.jsonl")]
    assert ids == [f"dev-{i:04d}" for i in range(9, 17)]  # batch 1: items 8..15 (ids count from 1)
    shard = _manifest(sampled / "part_1.jsonl")["shard"]
    assert (shard["index"], shard["count"], shard["block"]) == (1, 2, 8)
    assert "shard" not in _manifest(sampled / "single.jsonl")


def test_merged_parts_are_the_single_process_file_byte_for_byte(sampled: Path, run_in_process, tmp_path: Path) -> None:
    out = tmp_path / "merged.jsonl"
    proc = sample(run_in_process, "merge", str(sampled / "part_1.jsonl"), str(sampled / "part_0.jsonl"),
                  "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes() == (sampled / "single.jsonl").read_bytes()
    manifest = _manifest(out)
    assert [m["shard"] for m in manifest["merged_from"]] == ["0/2", "1/2"] and "shard" not in manifest
    assert manifest["policy"] == _manifest(sampled / "single.jsonl")["policy"]


def test_merge_refuses_parts_sampled_with_another_seed(sampled: Path, tiny_llm_dir: Path, run_in_process,
                                                      tmp_path: Path) -> None:
    other = tmp_path / "other_1.jsonl"
    proc = sample(run_in_process, "--model", str(tiny_llm_dir), "--dataset", str(DEV), "--limit", "20", "--max-tokens",
                  "4", "--n", "8", "--seed", "1", "--shard", "1/2", "--out", str(other))
    assert proc.returncode == 0, proc.stderr
    proc = sample(run_in_process, "merge", str(sampled / "part_0.jsonl"), str(other),
                  "--out", str(tmp_path / "m.jsonl"))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "sampling differs" in proc.stderr
    assert not (tmp_path / "m.jsonl").exists()


def test_merge_refuses_a_missing_part(sampled: Path, run_in_process, tmp_path: Path) -> None:
    proc = sample(run_in_process, "merge", str(sampled / "part_0.jsonl"), "--out", str(tmp_path / "m.jsonl"))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "shard 1/2 missing" in proc.stderr


def test_merge_refuses_a_part_edited_after_sampling(sampled: Path, run_in_process, tmp_path: Path) -> None:
    import shutil

    for name in ("part_0.jsonl", "part_0.manifest.json"):
        shutil.copy(sampled / name, tmp_path / name)
    (tmp_path / "part_0.jsonl").write_text((tmp_path / "part_0.jsonl").read_text()
                                           .replace('"completion": "', '"completion": "x', 1))
    proc = sample(run_in_process, "merge", str(tmp_path / "part_0.jsonl"), str(sampled / "part_1.jsonl"),
                  "--out", str(tmp_path / "m.jsonl"))
    assert proc.returncode == 2 and "does not match the sha256 its manifest records" in proc.stderr


def test_merge_help_ends_with_a_worked_example(run_in_process) -> None:
    proc = sample(run_in_process, "merge", "--help")
    assert proc.returncode == 0 and "example:" in proc.stdout
    assert proc.stdout.rstrip().splitlines()[-1].strip().startswith("python -m course.llm.sample merge")
