"""course.ray_eval: the shards of an evaluation as Ray tasks on a local Ray, merged into the one-process run.

One local Ray for the whole file (``ray.init(num_cpus=2)``, no dashboard, usage stats off: nothing
leaves the machine); on a cluster the same code runs with ``--address``.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

import course.eval as ev
import course.gate as gate
import course.lib.extras
from course.lib.records.manifest import PROJECT_ROOT

HAVE_RAY = importlib.util.find_spec("ray") is not None
DEV = PROJECT_ROOT / "data" / "datasets" / "math_dev.jsonl"
FROZEN = PROJECT_ROOT / "data" / "rollouts" / "frozen_rollouts_dev.jsonl"
needs_ray = pytest.mark.skipif(not HAVE_RAY, reason="the ray extra is not installed")


def test_help_ends_with_a_worked_example(run_in_process) -> None:
    proc = run_in_process("course.ray_eval", ["--help"], cwd=PROJECT_ROOT)
    assert proc.returncode == 0 and "example:" in proc.stdout and "--address" in proc.stdout
    assert proc.stdout.rstrip().splitlines()[-1].strip().startswith("--shards 64 --address auto")


def test_without_ray_it_is_one_line_naming_the_extra_and_exit_2(run_in_process, monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(course.lib.extras, "_importable", lambda name: name != "ray")
    proc = run_in_process("course.ray_eval", ["--shards", "2", "--outdir", str(tmp_path / "r")], cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert "needs the ray extra" in proc.stderr and "pip install -e '.[ray]'" in proc.stderr
    assert not (tmp_path / "r").exists()


@pytest.fixture(scope="module")
def local_ray():  # type: ignore[no-untyped-def]
    """A local Ray for this file's tests: two CPUs, no dashboard, no usage statistics; shut down afterwards."""
    import os

    saved = os.environ.get("RAY_USAGE_STATS_ENABLED")
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    from course.integrations.ray import init_ray

    ray = init_ray(num_cpus=2)
    yield ray
    ray.shutdown()
    if saved is None:
        os.environ.pop("RAY_USAGE_STATS_ENABLED", None)
    else:
        os.environ["RAY_USAGE_STATS_ENABLED"] = saved


@needs_ray
def test_ray_shards_merge_into_the_single_process_run_and_the_gate_accepts_it(local_ray, run_in_process,
                                                                            tmp_path: Path, capsys) -> None:
    assert ev.main(["--dataset", str(DEV), "--completions", str(FROZEN), "--outdir", str(tmp_path / "single")]) == 0
    proc = run_in_process("course.ray_eval", ["--dataset", str(DEV), "--completions", str(FROZEN), "--shards", "3",
                                              "--outdir", str(tmp_path / "on_ray"), "--json"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert sorted(p["shard"] for p in report["parts"]) == ["0/3", "1/3", "2/3"]
    assert sum(p["n_items"] for p in report["parts"]) == 100
    for name in ("results.jsonl", "summary.json", "summary.md"):
        assert (tmp_path / "on_ray" / name).read_bytes() == (tmp_path / "single" / name).read_bytes(), name
    parts = sorted(p.name for p in (tmp_path / "on_ray_parts").iterdir())
    assert parts == ["part_0_of_3", "part_1_of_3", "part_2_of_3"]
    part = json.loads((tmp_path / "on_ray_parts" / "part_1_of_3" / "manifest.json").read_text())
    assert part["shard"]["index"] == 1 and "--shard 1/3" in part["command"]  # the part says how to redo it by hand
    capsys.readouterr()
    assert gate.main(["--baseline", str(tmp_path / "single"), "--candidate", str(tmp_path / "on_ray"),
                      "--min-delta", "0.00"]) == 0
    assert "Decision: ACCEPT" in capsys.readouterr().out


@needs_ray
def test_a_part_that_refuses_its_input_on_ray_is_one_line_and_exit_2(local_ray, run_in_process, tmp_path: Path) -> None:
    short = tmp_path / "short_rollouts.jsonl"
    short.write_text("".join(FROZEN.read_text().splitlines(keepends=True)[:-1]))  # dev-0100 has no completion
    proc = run_in_process("course.ray_eval", ["--dataset", str(DEV), "--completions", str(short), "--shards", "2",
                                              "--outdir", str(tmp_path / "r")], cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "id 'dev-0100' has no completion" in proc.stderr and not (tmp_path / "r").exists()
