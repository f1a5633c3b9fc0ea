"""Run directories of every kind course.report reads, built fresh in a temporary directory (shared by the report tests).

Real tools write them (course.eval, selection_demo, bandit_train, toy_mdp,
kl_tradeoff_demo) on the bundled data; the tinylm.rl run is assembled by hand in
that tool's documented layout (training it takes minutes), with a Goodhart alarm
at step 10 and two real course.eval runs as its holdout sub-runs. One eval run
holds hostile completions: markup, an attribute injection, invisible characters
and a 10 MB completion.
"""

from __future__ import annotations

import json
from pathlib import Path

import course.bandit_train as bandit_train
import course.eval as ev
import course.kl_tradeoff_demo as kl_demo
import course.selection_demo as selection_demo
import course.toy_mdp as toy_mdp
from course.lib.records.jsonl import dumps_line
from course.lib.records.manifest import PROJECT_ROOT
from course.lib.records.runs import write_json

DATA = PROJECT_ROOT / "data"
DEV = DATA / "datasets" / "math_dev.jsonl"
HOLDOUT = DATA / "datasets" / "math_holdout.jsonl"
FROZEN_DEV = DATA / "rollouts" / "frozen_rollouts_dev.jsonl"
FROZEN_HOLDOUT = DATA / "rollouts" / "frozen_rollouts_holdout.jsonl"
PACK_DEV = DATA / "rollouts" / "selection_pack_dev.jsonl"
BIG = 10_000_000  # characters in the hostile run's longest completion
HOSTILE = {
    "h-1": "<script>document.title='PWNED'</script>",
    "h-2": "</script><script>document.title='PWNED'</script>",
    "h-3": "<img src=x onerror=\"document.title='PWNED'\">Final: 3",
    "h-4": "Final:\u00a0\u22124\u200b",
    "h-5": "A" * BIG,
    "h-6": "\"'><b>bold</b>&amp; ]]> <!-- -->",
}


def _eval(out: Path, dataset: Path, completions: Path) -> Path:
    assert ev.main(["--dataset", str(dataset), "--completions", str(completions), "--outdir", str(out)]) == 0
    return out


def _better_rollouts(path: Path) -> Path:
    """The frozen dev rollouts with the first 20 wrong_answer items made correct: a real, significant gain."""
    answers = {json.loads(line)["id"]: json.loads(line)["expected_answer"] for line in DEV.read_text().splitlines()}
    fixed, lines = 0, []
    for line in FROZEN_DEV.read_text().splitlines():
        rec = json.loads(line)
        if (fixed < 20 and rec["completion"] != f"Final: {answers[rec['id']]}"
                and rec["completion"].startswith("Final: ")):
            rec["completion"] = f"Final: {answers[rec['id']]}"
            fixed += 1
        lines.append(dumps_line(rec))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _tinylm_rl(out: Path, root: Path) -> Path:
    out.mkdir(parents=True)
    _eval(out / "eval_pi0_holdout", HOLDOUT, FROZEN_HOLDOUT)
    _eval(out / "eval_final_holdout", HOLDOUT, FROZEN_HOLDOUT)
    records = [{"step": 0,
                "eval": {"step": 0, "slice_strict_pass": 0.3, "slice_rubric_reward": 0.3, "goodhart_alarm": ""}}]
    for step in range(1, 16):
        rec = {"step": step, "reward": 0.3 + 0.03 * step, "strict_pass_train": 0.3 - 0.01 * step,
               "kl_k1_per_token": 0.01 * step, "kl_k3_per_token": 0.009 * step, "entropy_per_token": 0.3 - 0.01 * step,
               "strict_codes": {"ok": 0.3 - 0.01 * step, "trailing_text": 0.2 + 0.02 * step},
               "example": "The answer is <b>42</b>\nFinal: 42"}
        if step % 5 == 0:
            alarm = "rubric reward up, strict pass down" if step == 10 else ""
            rec["eval"] = {"step": step, "slice_strict_pass": 0.3 - 0.02 * step,
                           "slice_rubric_reward": 0.3 + 0.04 * step, "goodhart_alarm": alarm}
        records.append(rec)
    (out / "rl_log.jsonl").write_text("".join(dumps_line(r) + "\n" for r in records), encoding="utf-8")
    write_json(out / "summary.json", {
        "rubric": "contains_answer", "beta": 0.05, "seed": 0, "steps": 15, "pi0": "tinylm:aaaa",
        "final_policy": "tinylm:bbbb",
        "goodhart_alarms": ["step 10: rubric reward up, strict pass down"],
        "holdout": {"gate": {"min_delta": 0.1, "require_significance": True, "verdict": "REJECT"},
                    "pi0": {"policy": "tinylm:aaaa", "pass_at_1": 0.22, "pass_at_1_ci95": [0.18, 0.26], "samples": 400},
                    "final": {"policy": "tinylm:bbbb", "pass_at_1": 0.24, "pass_at_1_ci95": [0.2, 0.28],
                              "samples": 400},
                    "lift_pass_at_1": 0.02, "lift_paired_bootstrap95": [-0.03, 0.07]},
    })
    (out / "shift.md").write_text("# shift\n\n| code | pi0 | final |\n", encoding="utf-8")
    write_json(out / "manifest.json", {"tool": "course.tinylm.rl",
                                       "command": "python -m course.tinylm.rl --rubric contains_answer",
                                       "git_commit": "0" * 40, "git_dirty": True,
                                       "settings": {"rubric": "contains_answer", "gate_min_delta": 0.1}})
    return out


def build_runs(root: Path) -> dict[str, Path]:
    """Every kind of run directory, under ``root``; returns name -> path."""
    runs: dict[str, Path] = {}
    runs["eval"] = _eval(root / "eval_clean", DEV, FROZEN_DEV)
    modified = root / "math_dev_modified.jsonl"
    modified.write_text(DEV.read_text().replace('"expected_answer": 323', '"expected_answer": 324', 1),
                        encoding="utf-8")
    runs["eval_modified"] = _eval(root / "eval_modified", modified, FROZEN_DEV)
    runs["eval_better"] = _eval(root / "eval_better", DEV, _better_rollouts(root / "better_rollouts.jsonl"))
    for n in (1, 4):
        out = root / f"sel_n{n}"
        assert selection_demo.main(["--dataset", str(DEV), "--samples", str(PACK_DEV), "--n", str(n),
                                    "--outdir", str(out)]) == 0
        runs[f"sel_n{n}"] = out
    runs["bandit"] = root / "bandit"
    assert bandit_train.main(["--steps", "30", "--seed", "0", "--lr", "0.5", "--baseline",
                              "--outdir", str(runs["bandit"])]) == 0
    runs["toy_mdp"] = root / "mdp"
    assert toy_mdp.main(["--outdir", str(runs["toy_mdp"])]) == 0
    runs["kl"] = root / "kl"
    assert kl_demo.main(["--outdir", str(runs["kl"])]) == 0
    runs["tinylm_rl"] = _tinylm_rl(root / "rl_goodhart", root)
    hostile_data = root / "hostile_dev.jsonl"
    hostile_data.write_text("".join(dumps_line({"id": k, "prompt": "p", "expected_answer": 3}) + "\n" for k in HOSTILE),
                            encoding="utf-8")
    hostile_rollouts = root / "hostile_rollouts.jsonl"
    hostile_rollouts.write_text("".join(
        dumps_line({"id": k, "completion": v, "policy": "evil", "sampling": {"seed": 0}}) + "\n"
        for k, v in HOSTILE.items()
    ), encoding="utf-8")
    runs["hostile"] = _eval(root / "hostile", hostile_data, hostile_rollouts)
    return runs
