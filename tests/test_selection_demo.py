"""course.selection_demo end to end: the instructor's Loop B demo, run directories, bad inputs.

The maths is checked by hand in tests/test_selection.py; here the CLI, the files
it writes and the cross-checks against course.eval on the bundled data.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import course.assignments.pick_best as assignment
from course import selection_demo
from course.eval import main as eval_main
from course.lib.records.formats import iter_results
from course.lib.records.jsonl import read_json
from course.lib.records.manifest import PROJECT_ROOT, sha256_file

DEV = PROJECT_ROOT / "data/datasets/math_dev.jsonl"
DEV_PACK = PROJECT_ROOT / "data/rollouts/selection_pack_dev.jsonl"
DEV_FROZEN = PROJECT_ROOT / "data/rollouts/frozen_rollouts_dev.jsonl"


def _run(tmp_path: Path, name: str, *args: str) -> tuple[int, Path]:
    out = tmp_path / name
    code = selection_demo.main([*args, "--outdir", str(out)])
    return code, out


def _write(path: Path, lines: list[dict]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def _small(tmp_path: Path, pack_order: list[str] | None = None, n_samples: int = 4) -> tuple[Path, Path]:
    """A 3-item dataset and a pack with n_samples samples per item (the first passes on item b only)."""
    items = [("a", 1), ("b", 2), ("c", 3)]
    dataset = _write(tmp_path / "tiny_dev.jsonl", [
        {"id": i, "prompt": f"What is {e}? Output exactly one line: Final: <int>", "expected_answer": e}
        for i, e in items
    ])
    lines = {
        i: {
            "id": i,
            "samples": [{"sample_index": k, "completion": f"Final: {e if (i, k) in {('b', 0), ('c', 2)} else 0}"}
                        for k in range(n_samples)],
            "policy": "test-policy",
            "sampling": {"seed": 1},
        }
        for i, e in items
    }
    pack = _write(tmp_path / "tiny_pack.jsonl", [lines[i] for i in (pack_order or ["a", "b", "c"])])
    return dataset, pack


# --- the CLI ---------------------------------------------------------------------------
def test_help_shows_the_instructor_example(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        selection_demo.main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "--samples data/rollouts/selection_pack_dev.jsonl --n 4 --outdir runs/demo_sel_n4" in out


def test_the_instructor_sequence_runs_exactly_as_written(tmp_path: Path) -> None:
    # The guide's commands, verbatim, from a directory that has the repo's data/ (as the repo root does).
    (tmp_path / "data").symlink_to(PROJECT_ROOT / "data")
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}
    base = [sys.executable, "-m", "course.selection_demo", "--dataset", "data/datasets/math_dev.jsonl",
            "--samples", "data/rollouts/selection_pack_dev.jsonl"]
    outs = {}
    for n, outdir in (("1", "runs/demo_sel_n1"), ("4", "runs/demo_sel_n4"), ("4", "runs/demo_sel_n4_repeat")):
        done = subprocess.run([*base, "--n", n, "--outdir", outdir], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        outs[outdir] = done.stdout
    runs = tmp_path / "runs"
    # diff runs/demo_sel_n4/results.jsonl runs/demo_sel_n4_repeat/results.jsonl: no difference
    for name in ("results.jsonl", "summary.json"):
        assert (runs / "demo_sel_n4" / name).read_bytes() == (runs / "demo_sel_n4_repeat" / name).read_bytes()
    n1 = read_json(runs / "demo_sel_n1" / "summary.json")
    n4 = read_json(runs / "demo_sel_n4" / "summary.json")
    assert n4["pass_rate"] > n1["pass_rate"]
    assert n4["selection_gain"]["label"] == "selection improvement (more compute), not learning"
    assert "selection improvement (more compute), not learning" in outs["runs/demo_sel_n4"]
    assert "pass@k" in outs["runs/demo_sel_n4"] and "still fails" in outs["runs/demo_sel_n4"]


def test_summary_and_results_hold_no_time_or_path(tmp_path: Path) -> None:
    code, out = _run(tmp_path, "n2", "--n", "2")
    assert code == 0
    for name in ("summary.json", "results.jsonl"):
        text = (out / name).read_text(encoding="utf-8")
        assert str(tmp_path) not in text and "created_utc" not in text and "math_dev.jsonl" not in text


def test_the_run_directory_has_the_four_files_and_valid_results(tmp_path: Path) -> None:
    code, out = _run(tmp_path, "n4", "--n", "4")
    assert code == 0
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json", "results.jsonl", "summary.json", "summary.md"]
    results = list(iter_results(out / "results.jsonl"))  # the shared reader accepts the file
    assert len(results) == 100 and results[0]["id"] == "dev-0001"
    assert all(r["chosen_sample_id"] == f"{r['id']}#{r['chosen_index']}" for r in results)
    assert all(len(r["considered"]) == 4 for r in results)
    md = (out / "summary.md").read_text(encoding="utf-8")
    assert "This is selection, not learning" in md and "## pass@k from all 8 samples per item" in md


def test_the_manifest_records_the_inputs_the_scorer_and_the_selection_instrument(tmp_path: Path) -> None:
    code, out = _run(tmp_path, "n4", "--n", "4")
    manifest = read_json(out / "manifest.json")
    assert manifest["tool"] == "course.selection_demo"
    assert manifest["dataset"]["path"] == "data/datasets/math_dev.jsonl"
    assert manifest["dataset_fingerprint"] == sha256_file(DEV)
    assert manifest["samples_fingerprint"] == sha256_file(DEV_PACK)
    assert (manifest["split"], manifest["policy"], manifest["samples_per_item"]) == ("dev", "sim-policy-v1", 8)
    assert manifest["selection"] == {
        "n": 4,
        "rule": assignment.SELECTION_RULE,
        "picker": "course.assignments.pick_best.pick_best",
        "picker_sha256": sha256_file(assignment.__file__),
    }
    assert manifest["results_sha256"] == sha256_file(out / "results.jsonl")
    assert manifest["summary_sha256"] == sha256_file(out / "summary.json")


def test_n_1_reproduces_the_course_eval_pass_rate_on_the_frozen_rollouts(tmp_path: Path) -> None:
    # The frozen rollout of each item is sample 0 of its pack: the two tools must agree item by item.
    code, sel = _run(tmp_path, "sel", "--n", "1")
    assert code == 0
    assert eval_main(["--dataset", str(DEV), "--completions", str(DEV_FROZEN), "--outdir", str(tmp_path / "ev")]) == 0
    ev_summary, sel_summary = read_json(tmp_path / "ev" / "summary.json"), read_json(sel / "summary.json")
    assert (sel_summary["passed"], sel_summary["pass_rate"]) == (ev_summary["passed"], ev_summary["pass_rate"])
    assert sel_summary["counts"] == ev_summary["counts"]
    ev_rows = [(r["id"], r["completion"], r["reward"], r["details"])
               for r in iter_results(tmp_path / "ev" / "results.jsonl")]
    sel_rows = [(r["id"], r["completion"], r["reward"], r["details"]) for r in iter_results(sel / "results.jsonl")]
    assert sel_rows == ev_rows


def test_json_output_prints_the_run_dir_and_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _run(tmp_path, "n2", "--n", "2", "--json")
    assert code == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["run_dir"] == str(out) and printed["summary"] == read_json(out / "summary.json")


def test_an_alternative_pick_best_that_keeps_the_contract_gives_the_same_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, reference = _run(tmp_path, "ref", "--n", "8")

    def pick_best(samples):  # max reward, then lowest index, written another way
        return max(samples, key=lambda s: (s["reward"], -s["sample_index"]))

    monkeypatch.setattr(assignment, "pick_best", pick_best)
    code, other = _run(tmp_path, "alt", "--n", "8")
    assert code == 0
    assert (other / "results.jsonl").read_bytes() == (reference / "results.jsonl").read_bytes()
    assert read_json(other / "manifest.json")["selection"]["picker"].endswith("pick_best")
    assert read_json(other / "manifest.json")["selection"]["picker"] != "course.assignments.pick_best.pick_best"


def test_an_existing_run_is_not_overwritten_without_force(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(tmp_path, "n1", "--n", "1")[0] == 0
    before = (tmp_path / "n1" / "results.jsonl").read_bytes()
    assert _run(tmp_path, "n1", "--n", "2")[0] == 2
    assert "already exists" in capsys.readouterr().err
    assert (tmp_path / "n1" / "results.jsonl").read_bytes() == before
    assert _run(tmp_path, "n1", "--n", "2", "--force")[0] == 0
    assert read_json(tmp_path / "n1" / "summary.json")["N"] == 2


# --- bad inputs: exit 2, path:line, nothing written -------------------------------------
def test_n_larger_than_the_pack_exits_2_with_path_and_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _run(tmp_path, "n9", "--n", "9")
    assert code == 2
    err = capsys.readouterr().err
    assert f"{DEV_PACK}:1: id 'dev-0001' has 8 samples; --n 9 needs at least 9" in err
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_a_pack_id_not_in_the_dataset_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dataset, pack = _small(tmp_path)
    lines = pack.read_text(encoding="utf-8").splitlines()
    pack.write_text(lines[0] + "\n" + lines[1].replace('"b"', '"zz"') + "\n" + lines[2] + "\n", encoding="utf-8")
    code, out = _run(tmp_path, "run", "--dataset", str(dataset), "--samples", str(pack), "--n", "2")
    assert code == 2
    assert f"{pack}:2: id 'zz' is not in the dataset" in capsys.readouterr().err
    assert not out.exists()


def test_a_dataset_item_without_samples_exits_2_at_its_dataset_line(tmp_path: Path, capsys) -> None:
    dataset, pack = _small(tmp_path)
    lines = pack.read_text(encoding="utf-8").splitlines()
    pack.write_text(lines[0] + "\n" + lines[2] + "\n", encoding="utf-8")
    code, out = _run(tmp_path, "run", "--dataset", str(dataset), "--samples", str(pack), "--n", "2")
    assert code == 2
    assert f"{dataset}:2: id 'b' has no samples in {pack} (1 of 3 items have none)" in capsys.readouterr().err


def test_n_zero_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exit_info:
        selection_demo.main(["--n", "0", "--outdir", str(tmp_path / "x")])
    assert exit_info.value.code == 2


def test_only_one_of_dataset_and_samples_is_refused(tmp_path: Path, capsys) -> None:
    code, _ = _run(tmp_path, "run", "--dataset", str(DEV), "--n", "1")
    assert code == 2 and "pass both --dataset and --samples" in capsys.readouterr().err


def test_a_pack_in_another_order_gives_the_same_bytes(tmp_path: Path) -> None:
    dataset, pack = _small(tmp_path, n_samples=4)
    code, ordered = _run(tmp_path, "ordered", "--dataset", str(dataset), "--samples", str(pack), "--n", "3")
    assert code == 0
    shuffled_dir = tmp_path / "shuffled"
    shuffled_dir.mkdir()
    _, shuffled_pack = _small(shuffled_dir, pack_order=["c", "a", "b"])
    code, shuffled = _run(tmp_path, "shuffled_run", "--dataset", str(dataset), "--samples", str(shuffled_pack),
                          "--n", "3")
    assert code == 0
    for name in ("results.jsonl", "summary.json"):
        assert (shuffled / name).read_bytes() == (ordered / name).read_bytes()
    assert [r["chosen_sample_id"] for r in iter_results(ordered / "results.jsonl")] == ["a#0", "b#0", "c#2"]


def test_the_pack_alias_from_rollout_sample_works(tmp_path: Path) -> None:
    dataset, pack = _small(tmp_path)
    code, out = _run(tmp_path, "run", "--dataset", str(dataset), "--pack", str(pack), "--n", "1", "--split", "dev")
    assert code == 0 and read_json(out / "manifest.json")["split"] == "dev"


# --- course.gate on selection runs ------------------------------------------------------
def _gate(capsys: pytest.CaptureFixture[str], base: Path, cand: Path) -> tuple[int, str]:
    from course import gate

    capsys.readouterr()
    code = gate.main(["--baseline", str(base), "--candidate", str(cand), "--min-delta", "0"])
    return code, capsys.readouterr().out


def test_the_gate_rejects_n1_against_n4_as_selection_compute_not_learning(tmp_path: Path, capsys) -> None:
    _, n1 = _run(tmp_path, "n1", "--n", "1")
    _, n4 = _run(tmp_path, "n4", "--n", "4")
    code, out = _gate(capsys, n1, n4)
    assert code == 1
    assert "selection.n  [selection compute" in out and "baseline : 1" in out and "candidate: 4" in out
    assert "SELECTION compute" in out and "not from the policy learning anything" in out
    assert "Decision: REJECT (Locked Room violated: selection.n differs)" in out


def test_the_gate_sees_an_edited_picker_at_the_same_n(tmp_path: Path, capsys, monkeypatch) -> None:
    _, default = _run(tmp_path, "default", "--n", "4")

    def pick_best(samples):  # keeps the contract, but lives in another file: another instrument
        return max(samples, key=lambda s: (s["reward"], -s["sample_index"]))

    monkeypatch.setattr(assignment, "pick_best", pick_best)
    _, edited = _run(tmp_path, "edited", "--n", "4")
    code, out = _gate(capsys, default, edited)
    assert code == 1 and "selection.picker_sha256  [selection compute" in out


def test_the_gate_compares_an_eval_run_with_a_selection_run_and_names_both_tools(tmp_path: Path, capsys) -> None:
    assert eval_main(["--dataset", str(DEV), "--completions", str(DEV_FROZEN), "--outdir", str(tmp_path / "ev")]) == 0
    _, n4 = _run(tmp_path, "n4", "--n", "4")
    code, out = _gate(capsys, tmp_path / "ev", n4)
    assert code == 1
    assert "[course.eval," in out and "[course.selection_demo," in out
    assert "baseline : 1 (implicit: course.eval scores one completion per item)" in out


# --- N=1 is no selection (#16 item 8) -----------------------------------------------------------------
def test_n_1_says_there_is_no_selection_instead_of_a_zero_gain(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    code, out_dir = _run(tmp_path, "n1", "--n", "1")
    out = capsys.readouterr().out
    assert code == 0
    assert "at N=1 there is no selection" in out and "selection improvement" not in out
    assert "Gain: +0.0 points" not in (out_dir / "summary.md").read_text(encoding="utf-8")


def test_n_2_still_reports_its_gain_as_selection_not_learning(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert _run(tmp_path, "n2", "--n", "2")[0] == 0
    out = capsys.readouterr().out
    assert "points = selection improvement (more compute), not learning" in out and "no selection" not in out
