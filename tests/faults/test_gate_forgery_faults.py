"""Fault suite for the gate's trust in a manifest (issue #30 item 7: a forged dataset fingerprint).

The attack: score the baseline's completions against a doctored dataset whose expected answers are
what each completion says, then copy ``dataset_fingerprint``, ``dataset`` and ``split`` from the
baseline's manifest. Before the fix the gate printed ``Locked Room: ok`` and ACCEPTed +70 points on
identical completions. The guarantee (``course.lib.evaluation.locked_room``: ``DatasetCheck``
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
    assert "is not at hand, so its items were not checked against it" in proc.stdout


def test_results_that_copy_the_expected_answers_but_keep_forged_rewards_are_rejected_naming_the_first_line(  # type: ignore[no-untyped-def]
    run_in_process, tmp_path
):
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
    assert proc.returncode == 1, proc.stdout + proc.stderr
    decision = proc.stdout.splitlines()[-1]
    assert decision.startswith("Decision: REJECT (the candidate's results record verdicts its rubric does not give "
                               "(35 of 100 lines; first "), decision
    assert "results.jsonl:1: id dev-0001 records reward 1.0, code ok, but rubric strict gives 0.0, wrong_answer" in (
        decision)


def test_an_honest_pair_of_runs_says_in_one_line_what_was_checked(run_in_process, tmp_path):  # type: ignore[no-untyped-def]
    base, other = tmp_path / "base", tmp_path / "other"
    for run in (base, other):
        assert run_in_process("course.eval", ["--outdir", str(run)], cwd=tmp_path).returncode == 0
    proc = run_in_process("course.gate", ["--baseline", str(base), "--candidate", str(other), "--min-delta", "0"],
                          cwd=tmp_path)
    assert proc.returncode == 0
    checked = [line for line in proc.stdout.splitlines() if line.startswith("Items checked:")]
    assert checked == ["Items checked: the same 100 ids with the same expected answers in both runs; re-scored, for "
                       "both runs: all 100 lines by rubric strict from their own completion and expected: rewards "
                       "and codes as recorded; dataset file, for both runs: data/datasets/math_dev.jsonl re-hashed "
                       "(matches), every id and expected answer as in it."]


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
    assert "has changed since the run (another sha256), so its items were not checked against it" in proc.stdout


# ---------------------------------------------------------------------------
# Issue 41 item 1: the gate re-scores every line of both runs from the line's own completion and expected,
# whether or not a dataset file is at hand, and checks summary.json against the results and its recorded sha.
# ---------------------------------------------------------------------------
def _reseal(run: Path, edit, *, summary: bool = True) -> None:  # type: ignore[no-untyped-def]
    """Edit every results line with ``edit`` (it changes the dict in place), re-tally summary.json from the
    edited lines (``summary``) and re-seal both sha256s in the manifest: a forger who knows the formats."""
    from course.lib.evaluation.summary import Tally

    lines, tally = [], Tally()
    for line in (run / "results.jsonl").read_text().splitlines():
        r = json.loads(line)
        edit(r)
        lines.append(dumps_line(r))
        tally.add(r)
    (run / "results.jsonl").write_text("\n".join(lines) + "\n")
    s = json.loads((run / "summary.json").read_text())
    if summary:
        fresh = tally.summary()
        for key in ("n", "passed", "failed", "pass_rate", "mean_reward", "counts", "breakdown"):
            s[key] = fresh[key]
    (run / "summary.json").write_text(json.dumps(s))
    m = json.loads((run / "manifest.json").read_text())
    m["results_sha256"] = sha256_file(run / "results.jsonl")
    m["summary_sha256"] = sha256_file(run / "summary.json")
    (run / "manifest.json").write_text(json.dumps(m))


def _pass_wrong_answers(r: dict) -> None:  # type: ignore[type-arg]
    if r["details"]["error_code"] == "wrong_answer":
        r["reward"] = 1.0


def _edit_manifest(run: Path, edit) -> None:  # type: ignore[no-untyped-def]
    m = json.loads((run / "manifest.json").read_text())
    edit(m)
    (run / "manifest.json").write_text(json.dumps(m))


def _gate(run_in_process, base: Path, cand: Path, tmp_path: Path):  # type: ignore[no-untyped-def]
    return run_in_process("course.gate", ["--baseline", str(base), "--candidate", str(cand), "--min-delta", "0.05"],
                          cwd=tmp_path)


def _pair(run_in_process, tmp_path: Path, *extra: str) -> tuple[Path, Path]:  # type: ignore[no-untyped-def]
    base, cand = tmp_path / "base", tmp_path / "cand"
    assert run_in_process("course.eval", [*extra, "--outdir", str(base)], cwd=tmp_path).returncode == 0
    shutil.copytree(base, cand)
    return base, cand


def test_the_issues_forgery_with_a_missing_dataset_file_is_refused_by_the_summarys_recorded_sha(  # type: ignore[no-untyped-def]
    run_in_process, tmp_path
):
    base, cand = _pair(run_in_process, tmp_path)
    # As filed: rewards raised, summary.json's passed raised to match, results re-sealed, dataset path moved.
    _reseal(cand, _pass_wrong_answers, summary=False)
    s = json.loads((cand / "summary.json").read_text())
    s["passed"] = 66
    (cand / "summary.json").write_text(json.dumps(s))
    _edit_manifest(cand, lambda m: (m.update(summary_sha256=json.loads((base / "manifest.json").read_text())
                                              ["summary_sha256"]), m["dataset"].update(path="/nowhere/dev.jsonl")))
    proc = _gate(run_in_process, base, cand, tmp_path)
    assert proc.returncode == 2 and proc.stdout == "", proc.stdout
    assert proc.stderr.strip().endswith("cand/summary.json: does not match the sha256 recorded in its manifest; it was "
                                        "changed after the run, so its numbers cannot be trusted (re-run the "
                                        "evaluation)"), proc.stderr


def test_a_resealed_forgery_with_a_missing_dataset_file_is_rejected_naming_the_item(run_in_process, tmp_path):  # type: ignore[no-untyped-def]
    base, cand = _pair(run_in_process, tmp_path)
    _reseal(cand, _pass_wrong_answers)
    _edit_manifest(cand, lambda m: m["dataset"].update(path="/nowhere/dev.jsonl"))
    proc = _gate(run_in_process, base, cand, tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert ("Decision: REJECT (the candidate's results record verdicts its rubric does not give (36 of 100 lines; "
            f"first {cand}/results.jsonl:1: id dev-0001 records reward 1.0, code wrong_answer, but rubric strict "
            "gives 0.0, wrong_answer))") in proc.stdout
    checked = next(line for line in proc.stdout.splitlines() if line.startswith("Items checked:"))
    assert "candidate: 36 of 100 lines record a reward or code that rubric strict does not give" in checked
    # the baseline's file has the fingerprint the candidate records: it checks the candidate's items too
    assert "candidate: the baseline's dataset file data/datasets/math_dev.jsonl re-hashed (matches)" in checked


def test_a_resealed_forgery_whose_manifest_has_no_dataset_key_is_rejected(run_in_process, tmp_path):  # type: ignore[no-untyped-def]
    base, cand = _pair(run_in_process, tmp_path)
    _reseal(cand, _pass_wrong_answers)
    _edit_manifest(cand, lambda m: m.pop("dataset"))
    proc = _gate(run_in_process, base, cand, tmp_path)
    assert proc.returncode == 1 and "Decision: REJECT (the candidate's results record verdicts" in proc.stdout


def test_a_forged_error_code_with_the_same_reward_is_rejected(run_in_process, tmp_path):  # type: ignore[no-untyped-def]
    base, cand = _pair(run_in_process, tmp_path)

    def relabel(r: dict) -> None:  # type: ignore[type-arg]
        if r["details"]["error_code"] == "multiple_lines":
            r["details"]["error_code"] = "wrong_answer"

    _reseal(cand, relabel)
    proc = run_in_process("course.gate", ["--baseline", str(base), "--candidate", str(cand), "--min-delta", "0"],
                          cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "records reward 0.0, code wrong_answer, but rubric strict gives 0.0, multiple_lines" in proc.stdout


def test_a_doctored_baseline_is_rejected_too(run_in_process, tmp_path):  # type: ignore[no-untyped-def]
    base, cand = _pair(run_in_process, tmp_path)

    def fail_passes(r: dict) -> None:  # type: ignore[type-arg]
        if r["reward"] == 1.0:
            r["reward"] = 0.0

    _reseal(base, fail_passes)
    proc = _gate(run_in_process, base, cand, tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Decision: REJECT (the baseline's results record verdicts its rubric does not give (30 of 100" in proc.stdout


def test_a_run_scored_by_another_version_of_the_scorer_is_never_accepted(run_in_process, tmp_path):  # type: ignore[no-untyped-def]
    base, cand = _pair(run_in_process, tmp_path)
    for run in (base, cand):
        _edit_manifest(run, lambda m: m.update(scorer_fingerprint="0" * 64))
    proc = run_in_process("course.gate", ["--baseline", str(base), "--candidate", str(cand), "--min-delta", "0"],
                          cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert ("the candidate could not be re-scored (it was scored by another version of rubric strict (scorer "
            "fingerprint 000000000000… is not this code's") in proc.stdout
    assert "re-scored, for both runs: NOT re-scored: it was scored by another version" in proc.stdout


def test_a_forged_multi_sample_run_is_rejected(run_in_process, tmp_path):  # type: ignore[no-untyped-def]
    pack = PROJECT_ROOT / "data/rollouts/selection_pack_dev.jsonl"
    base, cand = _pair(run_in_process, tmp_path, "--dataset", str(DEV), "--completions", str(pack))
    _reseal(cand, _pass_wrong_answers)
    proc = _gate(run_in_process, base, cand, tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Decision: REJECT (the candidate's results record verdicts its rubric does not give" in proc.stdout


def test_a_forged_run_of_a_hackable_rubric_is_re_scored_by_that_rubric(run_in_process, tmp_path):  # type: ignore[no-untyped-def]
    base, cand = _pair(run_in_process, tmp_path, "--rubric", "contains_answer")
    _reseal(cand, _pass_wrong_answers)
    proc = _gate(run_in_process, base, cand, tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "but rubric contains_answer gives 0.0, wrong_answer" in proc.stdout


def test_a_summary_forged_alone_and_resealed_is_refused_naming_the_figure(run_in_process, tmp_path):  # type: ignore[no-untyped-def]
    base, cand = _pair(run_in_process, tmp_path)
    s = json.loads((cand / "summary.json").read_text())
    s["counts"]["ok"], s["counts"]["wrong_answer"] = 40, 26  # n and passed left as they are
    (cand / "summary.json").write_text(json.dumps(s))
    _edit_manifest(cand, lambda m: m.update(summary_sha256=sha256_file(cand / "summary.json")))
    proc = _gate(run_in_process, base, cand, tmp_path)
    assert proc.returncode == 2 and proc.stdout == ""
    assert "cand/summary.json: 'counts' is" in proc.stderr and "the run directory is inconsistent" in proc.stderr
