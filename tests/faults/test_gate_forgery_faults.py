"""Fault suite for the gate's trust in a manifest (issue #30 item 7: a forged dataset fingerprint).

The attack: score the baseline's completions against a doctored dataset whose expected answers are
what each completion says, then copy ``dataset_fingerprint``, ``dataset`` and ``split`` from the
baseline's manifest. Before the fix the gate printed ``Locked Room: ok`` and ACCEPTed +70 points on
identical completions. The guarantee (``course.lib.evaluation.locked_room``: ``check_against_dataset``
re-hashes and re-scores, ``item_differences`` compares the runs' items): such a run is refused
(exit 2, its first false line named) when the recorded dataset file is at hand, and REJECTed as a
Locked Room violation (``items.expected``) when it is not.

    python -m pytest tests/faults/test_gate_forgery_faults.py -q
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from course.lib.records.jsonl import dumps_line
from course.lib.records.manifest import PROJECT_ROOT, sha256_file

DEV = PROJECT_ROOT / "data/datasets/math_dev.jsonl"
ROLLOUTS = PROJECT_ROOT / "data/rollouts/frozen_rollouts_dev.jsonl"


def _doctored_dataset(path: Path) -> Path:
    """math_dev with each expected answer replaced by what the frozen completion says (when it says one)."""
    said = {}
    for line in ROLLOUTS.read_text().splitlines():
        r = json.loads(line)
        m = re.fullmatch(r"Final: (-?[1-9][0-9]*|0)", r["completion"])
        if m:
            said[r["id"]] = int(m.group(1))
    out = []
    for line in DEV.read_text().splitlines():
        item = json.loads(line)
        item["expected_answer"] = said.get(item["id"], item["expected_answer"])
        out.append(dumps_line(item))
    path.write_text("\n".join(out) + "\n")
    return path


def _forge(run_in_process, tmp_path: Path) -> tuple[Path, Path]:  # type: ignore[no-untyped-def]
    base, forged = tmp_path / "base", tmp_path / "forged"
    assert run_in_process("course.eval", ["--outdir", str(base)], cwd=tmp_path).returncode == 0
    doctored = _doctored_dataset(tmp_path / "math_dev.jsonl")
    assert run_in_process("course.eval", ["--dataset", str(doctored), "--completions", str(ROLLOUTS),
                                          "--outdir", str(forged)], cwd=tmp_path).returncode == 0
    b = json.loads((base / "manifest.json").read_text())
    m = json.loads((forged / "manifest.json").read_text())
    for key in ("dataset_fingerprint", "dataset", "split"):
        m[key] = b[key]
    (forged / "manifest.json").write_text(json.dumps(m))
    return base, forged


def test_a_forged_fingerprint_with_the_dataset_at_hand_is_refused_naming_the_first_false_line(run_in_process, tmp_path):  # type: ignore[no-untyped-def]
    base, forged = _forge(run_in_process, tmp_path)
    proc = run_in_process("course.gate", ["--baseline", str(base), "--candidate", str(forged), "--min-delta", "0"],
                          cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    line = proc.stderr.strip()
    assert "results.jsonl:1: id dev-0001 records expected 304" in line and "says 323" in line, line


def test_a_forged_fingerprint_without_the_dataset_file_is_rejected_by_the_items_expected_answers(  # type: ignore[no-untyped-def]
    run_in_process, tmp_path
):
    base, forged = _forge(run_in_process, tmp_path)
    for run in (base, forged):  # the recorded dataset file is not at hand for either run
        m = json.loads((run / "manifest.json").read_text())
        m["dataset"]["path"] = str(tmp_path / "elsewhere" / "math_dev.jsonl")
        (run / "manifest.json").write_text(json.dumps(m))
    proc = run_in_process("course.gate", ["--baseline", str(base), "--candidate", str(forged), "--min-delta", "0"],
                          cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Locked Room: VIOLATED" in proc.stdout and "items.expected" in proc.stdout
    assert "Items checked: ids or expected answers DIFFER between the runs" in proc.stdout
    assert "is not at hand, so it was not re-scored" in proc.stdout


def test_results_that_copy_the_expected_answers_but_keep_forged_rewards_fail_the_re_score(run_in_process, tmp_path):  # type: ignore[no-untyped-def]
    base, forged = _forge(run_in_process, tmp_path)
    true_expected = {json.loads(line)["id"]: json.loads(line)["expected"]
                     for line in (base / "results.jsonl").read_text().splitlines()}
    lines = []
    for line in (forged / "results.jsonl").read_text().splitlines():
        r = json.loads(line)
        r["expected"] = true_expected[r["id"]]
        lines.append(dumps_line(r))
    (forged / "results.jsonl").write_text("\n".join(lines) + "\n")
    m = json.loads((forged / "manifest.json").read_text())
    m["results_sha256"] = sha256_file(forged / "results.jsonl")  # the forger re-seals the results
    (forged / "manifest.json").write_text(json.dumps(m))
    proc = run_in_process("course.gate", ["--baseline", str(base), "--candidate", str(forged), "--min-delta", "0"],
                          cwd=tmp_path)
    assert proc.returncode == 2
    assert "results.jsonl:1: id dev-0001 records reward 1.0 but rubric strict gives 0.0" in proc.stderr, proc.stderr


def test_an_honest_pair_of_runs_says_in_one_line_what_was_checked(run_in_process, tmp_path):  # type: ignore[no-untyped-def]
    base, other = tmp_path / "base", tmp_path / "other"
    for run in (base, other):
        assert run_in_process("course.eval", ["--outdir", str(run)], cwd=tmp_path).returncode == 0
    proc = run_in_process("course.gate", ["--baseline", str(base), "--candidate", str(other), "--min-delta", "0"],
                          cwd=tmp_path)
    assert proc.returncode == 0
    checked = [line for line in proc.stdout.splitlines() if line.startswith("Items checked:")]
    assert checked == ["Items checked: the same 100 ids with the same expected answers in both runs; dataset file, "
                       "for both runs: data/datasets/math_dev.jsonl re-hashed (matches) and all 100 results "
                       "re-scored against it."]


def test_a_dataset_changed_since_the_run_is_named_and_not_re_scored(run_in_process, tmp_path):  # type: ignore[no-untyped-def]
    data = tmp_path / "math_dev.jsonl"
    shutil.copy(DEV, data)
    runs = []
    for name in ("a", "b"):
        assert run_in_process("course.eval", ["--dataset", str(data), "--completions", str(ROLLOUTS), "--outdir",
                                              str(tmp_path / name)], cwd=tmp_path).returncode == 0
        runs.append(str(tmp_path / name))
    data.write_text(data.read_text() + "\n")
    proc = run_in_process("course.gate", ["--baseline", runs[0], "--candidate", runs[1], "--min-delta", "0"],
                          cwd=tmp_path)
    assert proc.returncode == 0
    assert "has changed since the run (another sha256), so it was not re-scored" in proc.stdout
