"""course.gate: Locked Room first, then the bar, then the paired noise check; exit codes 0/1/2."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import course.eval as ev
import course.gate as gate
from course.lib import bundled
from course.lib.evaluation import locked_room
from course.lib.records.jsonl import dumps_line
from course.lib.records.manifest import PROJECT_ROOT
from course.lib.stats import mcnemar_exact

SAMPLING = {"max_tokens": 32, "seed": 5, "temperature": 0.8, "top_p": 1.0}
N = 100
ANSWERS = [(i * 37) % 211 - 50 for i in range(N)]


def write_dataset(path: Path, answers=ANSWERS) -> Path:
    path.write_text("".join(
        dumps_line({"id": f"d-{i:03d}", "prompt": f"Item {i}", "expected_answer": a}) + "\n"
        for i, a in enumerate(answers)
    ))
    return path


def write_rollouts(path: Path, passing: set[int], *, policy: str = "p1", sampling=SAMPLING) -> Path:
    """Items in `passing` get the right answer; the rest a wrong one."""
    path.write_text("".join(
        dumps_line({"id": f"d-{i:03d}", "completion": f"Final: {a if i in passing else a + 1}",
                    "policy": policy, "sampling": sampling}) + "\n"
        for i, a in enumerate(ANSWERS)
    ))
    return path


def evaluate(root: Path, name: str, dataset: Path, rollouts: Path, *extra: str) -> Path:
    out = root / "runs" / name
    assert ev.main(["--dataset", str(dataset), "--completions", str(rollouts), "--outdir", str(out), *extra]) == 0
    return out


@pytest.fixture(scope="module")
def lab(tmp_path_factory) -> dict[str, Path]:
    """Runs on one dataset: baseline 30 passes; candidates that change some items."""
    root = tmp_path_factory.mktemp("gate")
    dataset = write_dataset(root / "toy_dev.jsonl")
    base_pass = set(range(30))
    runs = {"root": root, "dataset": dataset}
    runs["base"] = evaluate(root, "base", dataset, write_rollouts(root / "r_base.jsonl", base_pass))
    # +1 item net (2 newly pass, 1 newly fails): tiny, noise.
    small = (base_pass - {0}) | {30, 31}
    runs["small"] = evaluate(root, "small", dataset, write_rollouts(root / "r_small.jsonl", small, policy="p2"))
    # +15 items net (16 newly pass, 1 newly fails): far beyond noise.
    big = (base_pass - {0}) | set(range(30, 46))
    runs["big"] = evaluate(root, "big", dataset, write_rollouts(root / "r_big.jsonl", big, policy="p3"))
    # 57 vs 56 passes: a change of exactly 0.01, which floats get wrong (0.57 - 0.56 < 0.01).
    runs["p56"] = evaluate(root, "p56", dataset, write_rollouts(root / "r56.jsonl", set(range(56))))
    runs["p57"] = evaluate(root, "p57", dataset, write_rollouts(root / "r57.jsonl", set(range(57))))
    return runs


def run_gate(capsys, base: Path, cand: Path, *extra: str) -> tuple[int, str]:
    capsys.readouterr()
    code = gate.main(["--baseline", str(base), "--candidate", str(cand), *extra])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def copy_run(src: Path, dst: Path) -> Path:
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst)
    return dst


def edit_manifest(run: Path, **changes) -> None:
    manifest = json.loads((run / "manifest.json").read_text())
    manifest.update(changes)
    (run / "manifest.json").write_text(json.dumps(manifest))


# --- the bar -------------------------------------------------------------------------------------
def test_a_clear_improvement_is_accepted_with_exit_0(lab, capsys) -> None:
    code, out = run_gate(capsys, lab["base"], lab["big"], "--min-delta", "0.05")
    assert code == 0
    assert "Decision: ACCEPT" in out and "Change: +15.0 points" in out


def test_a_change_below_the_bar_is_rejected_with_exit_1(lab, capsys) -> None:
    code, out = run_gate(capsys, lab["base"], lab["small"], "--min-delta", "0.05")
    assert code == 1
    assert "Decision: REJECT (the change +1.0 points is below the required +5.0 points)" in out


def test_a_worse_candidate_is_rejected_at_min_delta_zero(lab, capsys) -> None:
    code, _ = run_gate(capsys, lab["big"], lab["base"], "--min-delta", "0")
    assert code == 1


def test_a_change_exactly_at_the_bar_is_accepted_because_it_is_computed_exactly(lab, capsys) -> None:
    assert 0.57 - 0.56 < 0.01  # why floats would get this wrong
    code, out = run_gate(capsys, lab["p56"], lab["p57"], "--min-delta", "0.01")
    assert code == 0, out


def test_a_run_gated_against_itself_shows_no_difference_to_test(lab, capsys) -> None:
    code, out = run_gate(capsys, lab["base"], lab["base"], "--min-delta", "0.00")
    assert code == 0 and "there is no difference to test" in out


# --- noise -----------------------------------------------------------------------------------------
def test_the_paired_report_gives_discordant_counts_and_the_exact_mcnemar_p(lab, capsys) -> None:
    _, out = run_gate(capsys, lab["base"], lab["small"], "--min-delta", "0")
    assert "both pass 29, only baseline passes 1 (b), only candidate passes 2 (c), neither 68" in out
    assert f"exact McNemar p = {mcnemar_exact(1, 2):.3g}" in out
    assert "not distinguishable from noise" in out


def test_a_small_change_passes_the_bar_but_fails_require_significance(lab, capsys) -> None:
    code, out = run_gate(capsys, lab["base"], lab["small"], "--min-delta", "0")
    assert code == 0 and "Caution: the change is within noise" in out
    code, out = run_gate(capsys, lab["base"], lab["small"], "--min-delta", "0", "--require-significance")
    assert code == 1 and "not significant at p < 0.05" in out


def test_a_large_change_is_distinguishable_from_noise_and_passes_require_significance(lab, capsys) -> None:
    code, out = run_gate(capsys, lab["base"], lab["big"], "--min-delta", "0.05", "--require-significance")
    assert code == 0
    assert "The change is distinguishable from noise" in out
    assert "95% interval for the change (Newcombe): +" in out


def test_json_output_carries_the_decision_and_its_evidence(lab, capsys) -> None:
    code, out = run_gate(capsys, lab["base"], lab["big"], "--min-delta", "0.05", "--json")
    result = json.loads(out)
    assert code == 0 and result["decision"] == "ACCEPT"
    assert result["delta"] == pytest.approx(0.15)
    assert (result["paired"]["b"], result["paired"]["c"]) == (1, 16)
    assert result["locked_room"] == {"ok": True, "differences": []}


# --- the Locked Room --------------------------------------------------------------------------------
def test_the_instructors_perturbation_demo_is_a_locked_room_reject(lab, capsys) -> None:
    root = lab["root"]
    modified = root / "math_dev_modified.jsonl"
    shutil.copy(lab["dataset"], modified)
    text = modified.read_text()
    modified.write_text(text.replace(f'"expected_answer": {ANSWERS[50]},', f'"expected_answer": {ANSWERS[50] + 7},', 1))
    candidate = evaluate(root, "modified", modified, root / "r_base.jsonl", "--force")
    code, out = run_gate(capsys, lab["base"], candidate, "--min-delta", "0.00")
    assert code == 1
    assert "Locked Room: VIOLATED" in out
    assert "Decision: REJECT (Locked Room violated: dataset_fingerprint differs)" in out
    base_fp = json.loads((lab["base"] / "manifest.json").read_text())["dataset_fingerprint"]
    cand_fp = json.loads((candidate / "manifest.json").read_text())["dataset_fingerprint"]
    assert f'baseline : "{base_fp}"' in out and f'candidate: "{cand_fp}"' in out
    assert "Change:" not in out  # no delta is computed across different rooms


def test_a_different_split_is_a_locked_room_reject(lab, capsys) -> None:
    cand = copy_run(lab["base"], lab["root"] / "runs/split")
    edit_manifest(cand, split="holdout")
    code, out = run_gate(capsys, lab["base"], cand, "--min-delta", "0")
    assert code == 1 and 'split  [dataset' in out and 'candidate: "holdout"' in out


def test_different_sampling_settings_are_a_locked_room_reject(lab, capsys) -> None:
    root = lab["root"]
    hot = write_rollouts(root / "r_hot.jsonl", set(range(30)), sampling={**SAMPLING, "temperature": 1.2})
    cand = evaluate(root, "hot", lab["dataset"], hot, "--force")
    code, out = run_gate(capsys, lab["base"], cand, "--min-delta", "0")
    assert code == 1 and "sampling  [sampling" in out and '"temperature": 1.2' in out


def test_a_different_scorer_is_a_locked_room_reject(lab, capsys) -> None:
    cand = copy_run(lab["base"], lab["root"] / "runs/scorer")
    edit_manifest(cand, scorer_version="strict-final-v2", scorer_fingerprint="0" * 64)
    code, out = run_gate(capsys, lab["base"], cand, "--min-delta", "0")
    assert code == 1
    assert "scorer_version  [instrument" in out and "scorer_fingerprint  [instrument" in out


def test_every_differing_field_is_listed_with_both_values(lab, capsys) -> None:
    cand = copy_run(lab["base"], lab["root"] / "runs/many")
    edit_manifest(cand, split="holdout", dataset_fingerprint="f" * 64, sampling={"temperature": 0.0})
    code, result = run_gate(capsys, lab["base"], cand, "--min-delta", "0", "--json")
    fields = [d["field"] for d in json.loads(result)["locked_room"]["differences"]]
    assert code == 1 and fields == ["dataset_fingerprint", "split", "sampling"]


def test_more_selection_compute_is_reported_as_selection_not_learning(lab, capsys) -> None:
    n1 = copy_run(lab["base"], lab["root"] / "runs/sel_n1")
    n4 = copy_run(lab["big"], lab["root"] / "runs/sel_n4")
    edit_manifest(n1, tool="course.selection_demo", selection={"n": 1, "rule": "max reward, lowest index"})
    edit_manifest(n4, tool="course.selection_demo", selection={"n": 4, "rule": "max reward, lowest index"})
    code, out = run_gate(capsys, n1, n4, "--min-delta", "0")
    assert code == 1
    assert "selection.n  [selection compute" in out
    assert "baseline : 1" in out and "candidate: 4" in out
    assert "SELECTION compute" in out and "not from the policy learning anything" in out


def test_an_eval_run_against_best_of_4_differs_in_selection_compute(lab, capsys) -> None:
    sel = copy_run(lab["big"], lab["root"] / "runs/sel_only")
    edit_manifest(sel, tool="course.selection_demo", selection={"n": 4, "rule": "max reward, lowest index"})
    code, out = run_gate(capsys, lab["base"], sel, "--min-delta", "0")
    assert code == 1
    assert "baseline : 1 (implicit: course.eval scores one completion per item)" in out
    assert "selection.rule" not in out.split("Decision")[1]


def test_an_eval_run_and_best_of_1_are_the_same_compute_and_comparable(lab, capsys) -> None:
    sel = copy_run(lab["base"], lab["root"] / "runs/sel_n1_only")
    edit_manifest(sel, tool="course.selection_demo", selection={"n": 1, "rule": "max reward, lowest index"})
    code, out = run_gate(capsys, lab["base"], sel, "--min-delta", "0")
    assert code == 0 and "Locked Room: ok" in out


def test_a_different_rule_counts_once_there_is_a_choice_to_make(lab, capsys) -> None:
    a = copy_run(lab["base"], lab["root"] / "runs/rule_a")
    b = copy_run(lab["base"], lab["root"] / "runs/rule_b")
    edit_manifest(a, tool="course.selection_demo", selection={"n": 4, "rule": "max reward, lowest index"})
    edit_manifest(b, tool="course.selection_demo", selection={"n": 4, "rule": "random"})
    code, out = run_gate(capsys, a, b, "--min-delta", "0")
    assert code == 1 and "selection.rule  [selection compute" in out


def test_the_locked_fields_table_names_the_keys_the_gate_compares() -> None:
    assert [f.key for f in locked_room.LOCKED_FIELDS] == [
        "dataset_fingerprint", "split", "rubric", "rubric_version", "scorer_version", "scorer_fingerprint", "sampling",
        "prompt_template", "selection.n", "selection.rule",
        "selection.picker_sha256",
    ]


# --- unusable input: exit 2 ------------------------------------------------------------------------
def test_a_missing_run_directory_exits_2(lab, capsys) -> None:
    code, out = run_gate(capsys, lab["base"], lab["root"] / "runs/nope", "--min-delta", "0")
    assert code == 2 and "no such run directory" in out


def test_a_corrupt_manifest_exits_2_with_its_line(lab, capsys) -> None:
    cand = copy_run(lab["base"], lab["root"] / "runs/corrupt")
    (cand / "manifest.json").write_text('{\n  "tool": "course.eval",\n')
    code, out = run_gate(capsys, lab["base"], cand, "--min-delta", "0")
    assert code == 2 and "manifest.json:3: the manifest is not valid JSON" in out


def test_a_run_from_another_tool_exits_2(lab, capsys) -> None:
    other = copy_run(lab["base"], lab["root"] / "runs/bandit")
    edit_manifest(other, tool="course.bandit_train")
    code, out = run_gate(capsys, lab["base"], other, "--min-delta", "0")
    assert code == 2 and "written by course.bandit_train" in out


def test_results_edited_after_the_run_exit_2(lab, capsys) -> None:
    cand = copy_run(lab["base"], lab["root"] / "runs/edited")
    results = cand / "results.jsonl"
    results.write_text(results.read_text().replace('"reward": 0.0', '"reward": 1.0'))
    code, out = run_gate(capsys, lab["base"], cand, "--min-delta", "0")
    assert code == 2 and "does not match the sha256 recorded in its manifest" in out


def test_a_min_delta_that_is_not_a_number_is_a_usage_error(lab, capsys) -> None:
    with pytest.raises(SystemExit) as info:
        gate.main(["--baseline", str(lab["base"]), "--candidate", str(lab["base"]), "--min-delta", "five"])
    assert info.value.code == 2


def test_help_shows_a_worked_example(capsys) -> None:
    with pytest.raises(SystemExit) as info:
        gate.main(["--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert "python -m course.gate --baseline runs/demo_eval_clean --candidate runs/demo_eval_modified" in out


# --- the bundled data, as the instructor runs it ----------------------------------------------------
@pytest.mark.skipif(not (PROJECT_ROOT / bundled.MATH_DEV).exists(), reason="bundled data pack not present")
def test_perturbation_demo_on_the_bundled_dev_set(tmp_path: Path, capsys) -> None:
    modified = tmp_path / "math_dev_modified.jsonl"
    lines = (PROJECT_ROOT / bundled.MATH_DEV).read_text().splitlines(keepends=True)
    first = json.loads(lines[0])
    first["expected_answer"] += 1  # "Modify one expected_answer in the temporary file"
    modified.write_text(dumps_line(first) + "\n" + "".join(lines[1:]))
    rollouts = str(PROJECT_ROOT / bundled.FROZEN_ROLLOUTS_DEV)
    clean, changed = tmp_path / "runs/demo_eval_clean", tmp_path / "runs/demo_eval_modified"
    dataset = str(PROJECT_ROOT / bundled.MATH_DEV)
    assert ev.main(["--dataset", dataset, "--completions", rollouts, "--outdir", str(clean)]) == 0
    assert ev.main(["--dataset", str(modified), "--completions", rollouts, "--outdir", str(changed)]) == 0
    code, out = run_gate(capsys, clean, changed, "--min-delta", "0.00")
    assert code == 1 and "Locked Room: VIOLATED" in out and "dataset_fingerprint" in out


def test_the_module_runs_as_python_dash_m_with_exit_code_1_on_reject(lab) -> None:
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-m", "course.gate", "--baseline", str(lab["base"]), "--candidate", str(lab["small"]),
         "--min-delta", "0.05"],
        cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 1 and "Decision: REJECT" in proc.stdout


# --- the rubric is a Locked Room field (#13 item 8) --------------------------------------------------
def test_runs_scored_by_different_rubrics_are_rejected_and_the_reason_names_both(lab, capsys) -> None:
    hacked = evaluate(lab["root"], "base_contains", lab["dataset"], lab["root"] / "r_base.jsonl",
                      "--rubric", "contains_answer")
    code, out = run_gate(capsys, lab["base"], hacked, "--min-delta", "0")
    assert code == 1
    assert "Decision: REJECT (Locked Room violated: rubric, rubric_version" in out
    assert "(scored by rubric strict vs contains_answer)" in out
    assert "a pass under a hackable rubric is not a pass under the strict verifier" in out


def test_a_run_written_before_rubrics_were_recorded_counts_as_strict(lab, capsys) -> None:
    old = copy_run(lab["base"], lab["root"] / "runs/old_strict")
    manifest = json.loads((old / "manifest.json").read_text())
    del manifest["rubric"], manifest["rubric_version"]
    (old / "manifest.json").write_text(json.dumps(manifest))
    code, out = run_gate(capsys, old, lab["big"], "--min-delta", "0")
    assert code == 0 and "Locked Room: ok" in out


def test_a_run_written_before_rubrics_were_recorded_is_not_comparable_with_a_hackable_one(lab, capsys) -> None:
    old = copy_run(lab["base"], lab["root"] / "runs/old_strict2")
    manifest = json.loads((old / "manifest.json").read_text())
    del manifest["rubric"], manifest["rubric_version"]
    (old / "manifest.json").write_text(json.dumps(manifest))
    hacked = evaluate(lab["root"], "base_last", lab["dataset"], lab["root"] / "r_base.jsonl", "--rubric", "last_number")
    code, out = run_gate(capsys, old, hacked, "--min-delta", "0")
    assert code == 1
    assert '"strict" (implicit: written before runs recorded their rubric' in out
    assert "(scored by rubric strict vs last_number)" in out


def test_two_runs_scored_by_the_same_hackable_rubric_are_comparable_and_say_so(lab, capsys) -> None:
    a = evaluate(lab["root"], "ca_a", lab["dataset"], lab["root"] / "r_base.jsonl", "--rubric", "contains_answer")
    b = evaluate(lab["root"], "ca_b", lab["dataset"], lab["root"] / "r_big.jsonl", "--rubric", "contains_answer")
    code, out = run_gate(capsys, a, b, "--min-delta", "0")
    assert (code == 0 and "Locked Room: ok (" in out
            and "rubric contains_answer, scorer hackable-contains-answer-v1" in out)
