"""Fault suite: ``--force`` replaces only what a run of the same tool wrote (issue 30 item 1).

The attack: the guide has students put a README.md in a run folder, then rerun with ``--force``;
before the fix the rerun deleted it (and every other file of theirs). ``course.eval --completions
runs/RL/holdout_final_rollouts.jsonl --outdir runs/RL --force`` replaced a whole ``course.llm.rl``
run, adapters and all, with a four-file eval run whose input lived inside it. The promise
(``course.lib.records.runs``): every run lists the files it wrote in its manifest (``run_files``,
with their sha256); ``--force`` replaces only those, unchanged; everything else is carried into
the new run and named on stderr; another tool's run, an ``--outdir`` holding an input and a run
whose file was edited are refused with one line, the old run untouched.

    python -m pytest tests/faults/test_force_faults.py -q
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from course.errors import CourseError
from course.lib.records import runs
from course.lib.records.manifest import input_fingerprint

ROOT = Path(__file__).resolve().parents[2]
DEV = ROOT / "data/datasets/math_dev.jsonl"
ROLLOUTS = ROOT / "data/rollouts/frozen_rollouts_dev.jsonl"
PACK = ROOT / "data/rollouts/selection_pack_dev.jsonl"
EVAL = ["course.eval", "--dataset", str(DEV), "--completions", str(ROLLOUTS)]

# Every core tool that writes a run directory, with small settings.
RUN_TOOLS = {
    "eval": EVAL,
    "selection_demo": ["course.selection_demo", "--dataset", str(DEV), "--samples", str(PACK), "--n", "2"],
    "bandit_train": ["course.bandit_train", "--steps", "3"],
    "bandit_train --ablation": ["course.bandit_train", "--ablation", "--seeds", "2", "--steps", "3"],
    "toy_mdp": ["course.toy_mdp", "--steps", "3"],
    "kl_tradeoff_demo": ["course.kl_tradeoff_demo"],
}


@pytest.fixture
def cli(run_in_process):  # type: ignore[no-untyped-def]
    def call(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        return run_in_process(args[0], list(args[1:]), cwd=cwd)

    return call


def tree(path: Path) -> dict[str, bytes | None]:
    """Every entry under ``path``: its bytes (None for a folder, the target for a link)."""
    out: dict[str, bytes | None] = {}
    for p in sorted(path.rglob("*")):
        rel = str(p.relative_to(path))
        out[rel] = os.readlink(p).encode() if p.is_symlink() else (None if p.is_dir() else p.read_bytes())
    return out


def error_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("error: ")
    return last


def no_temporaries(parent: Path) -> bool:
    return [p.name for p in parent.iterdir() if p.name.startswith(".")] == []


# ===========================================================================
# The user's files survive a rerun with --force
# ===========================================================================
@pytest.mark.parametrize("tool", sorted(RUN_TOOLS))
def test_a_readme_the_user_put_in_a_run_survives_a_rerun_with_force(cli, tmp_path: Path, tool: str) -> None:
    args = RUN_TOOLS[tool]
    assert cli(*args, "--outdir", "runs/m", cwd=tmp_path).returncode == 0
    (tmp_path / "runs/m/README.md").write_text("my hand-in\n", encoding="utf-8")
    proc = cli(*args, "--outdir", "runs/m", "--force", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "runs/m/README.md").read_text(encoding="utf-8") == "my hand-in\n"
    assert "runs/m: kept 1 entry" in proc.stderr and "README.md" in proc.stderr
    assert no_temporaries(tmp_path / "runs")


def test_a_folder_a_symbolic_link_and_a_nested_note_of_the_user_are_carried_over_as_they_were(
    cli, tmp_path: Path
) -> None:
    assert cli(*EVAL, "--outdir", "r", cwd=tmp_path).returncode == 0
    (tmp_path / "r/notes/drafts").mkdir(parents=True)
    (tmp_path / "r/notes/drafts/a.txt").write_bytes(b"draft\n")
    (tmp_path / "r/empty").mkdir()
    (tmp_path / "r/data").symlink_to("../somewhere/else")  # dangling on purpose: never followed
    mine = {k: v for k, v in tree(tmp_path / "r").items() if k.split("/")[0] in ("notes", "empty", "data")}
    proc = cli(*EVAL, "--outdir", "r", "--force", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert {k: v for k, v in tree(tmp_path / "r").items() if k.split("/")[0] in ("notes", "empty", "data")} == mine
    assert "kept 3 entries course.eval did not write: data, empty, notes" in proc.stderr


def test_a_carried_file_stays_the_users_at_the_next_rerun(cli, tmp_path: Path) -> None:
    assert cli(*EVAL, "--outdir", "r", cwd=tmp_path).returncode == 0
    (tmp_path / "r/README.md").write_text("mine", encoding="utf-8")
    for _ in range(2):
        assert cli(*EVAL, "--outdir", "r", "--force", cwd=tmp_path).returncode == 0
    manifest = json.loads((tmp_path / "r/manifest.json").read_text(encoding="utf-8"))
    assert (tmp_path / "r/README.md").read_text(encoding="utf-8") == "mine"
    assert "README.md" not in manifest[runs.RUN_FILES]


def test_the_manifest_lists_every_file_the_run_wrote_with_its_sha256(cli, tmp_path: Path) -> None:
    assert cli(*EVAL, "--outdir", "r", cwd=tmp_path).returncode == 0
    manifest = json.loads((tmp_path / "r/manifest.json").read_text(encoding="utf-8"))
    from course.lib.records.manifest import sha256_file

    assert manifest[runs.RUN_FILES] == {n: sha256_file(tmp_path / "r" / n)
                                        for n in ("results.jsonl", "summary.json", "summary.md")}


def test_a_file_the_old_run_wrote_and_the_new_one_does_not_is_removed(tmp_path: Path) -> None:
    def write(names: tuple[str, ...]) -> None:
        with runs.atomic_run_dir(tmp_path / "r", force=True, tool="course.eval") as tmp:
            for name in names:
                (tmp / name).write_text(name, encoding="utf-8")
            runs.write_manifest(tmp, {"tool": "course.eval"})

    write(("a.txt", "plot.png"))
    write(("a.txt",))
    assert sorted(p.name for p in (tmp_path / "r").iterdir()) == ["a.txt", "manifest.json"]


# ===========================================================================
# Refused before any work, the old run untouched
# ===========================================================================
def test_force_refuses_to_replace_a_run_of_another_tool(cli, tmp_path: Path) -> None:
    assert cli("course.toy_mdp", "--steps", "3", "--outdir", "r", cwd=tmp_path).returncode == 0
    before = tree(tmp_path / "r")
    line = error_line(cli(*EVAL, "--outdir", "r", "--force", cwd=tmp_path))
    assert "is a run of course.toy_mdp, not of course.eval" in line
    assert tree(tmp_path / "r") == before and no_temporaries(tmp_path)


def test_an_eval_of_an_llm_rl_runs_rollouts_into_that_run_is_refused(cli, tmp_path: Path) -> None:
    # The case: an llm.rl run (adapters, checkpoints) and an eval aimed at it, its input inside.
    rl = tmp_path / "runs/RL"
    (rl / "adapters").mkdir(parents=True)
    (rl / "adapters/lora.safetensors").write_bytes(b"\0" * 64)
    (rl / "holdout_final_rollouts.jsonl").write_bytes(ROLLOUTS.read_bytes())
    (rl / "manifest.json").write_text(json.dumps({"written_by": "rl-foundations-llm", "tool": "course.llm.rl"}),
                                      encoding="utf-8")
    before = tree(rl)
    proc = cli("course.eval", "--dataset", str(DEV), "--completions", "runs/RL/holdout_final_rollouts.jsonl",
               "--outdir", "runs/RL", "--force", cwd=tmp_path)
    assert "runs/RL: " in error_line(proc)
    assert tree(rl) == before and no_temporaries(tmp_path / "runs")


def test_an_outdir_holding_one_of_the_runs_own_inputs_is_refused_even_for_the_same_tool(cli, tmp_path: Path) -> None:
    assert cli(*EVAL, "--outdir", "r", cwd=tmp_path).returncode == 0
    (tmp_path / "r/mine.jsonl").write_bytes(ROLLOUTS.read_bytes())
    before = tree(tmp_path / "r")
    line = error_line(cli("course.eval", "--dataset", str(DEV), "--completions", "r/mine.jsonl", "--outdir", "r",
                          "--force", cwd=tmp_path))
    assert "holds r/mine.jsonl, an input of this run" in line
    assert tree(tmp_path / "r") == before


def test_a_run_file_the_user_edited_is_refused_by_name_before_any_work(cli, tmp_path: Path) -> None:
    assert cli(*EVAL, "--outdir", "r", cwd=tmp_path).returncode == 0
    with open(tmp_path / "r/summary.md", "a", encoding="utf-8") as f:
        f.write("\nMy analysis: ...\n")
    before = tree(tmp_path / "r")
    line = error_line(cli(*EVAL, "--outdir", "r", "--force", cwd=tmp_path))
    assert "summary.md changed since course.eval wrote it" in line
    assert tree(tmp_path / "r") == before


# ===========================================================================
# Checked again when the run is complete: what the caller did not say up front
# ===========================================================================
def test_a_tool_that_did_not_name_itself_still_cannot_replace_another_tools_run(tmp_path: Path) -> None:
    with runs.atomic_run_dir(tmp_path / "r", tool="course.toy_mdp") as tmp:
        runs.write_manifest(tmp, {"tool": "course.toy_mdp"})
    before = tree(tmp_path / "r")
    with pytest.raises(CourseError, match="is a run of course.toy_mdp, not of course.eval"):
        with runs.atomic_run_dir(tmp_path / "r", force=True) as tmp:  # no tool named: known from its manifest
            runs.write_manifest(tmp, {"tool": "course.eval"})
    assert tree(tmp_path / "r") == before and no_temporaries(tmp_path)


def test_an_input_the_run_recorded_inside_the_old_run_is_refused_when_the_run_completes(tmp_path: Path) -> None:
    with runs.atomic_run_dir(tmp_path / "r", tool="course.eval") as tmp:
        (tmp / "rollouts.jsonl").write_text("{}\n", encoding="utf-8")
        runs.write_manifest(tmp, {"tool": "course.eval"})
    before = tree(tmp_path / "r")
    with pytest.raises(CourseError, match="an input of this run"):
        with runs.atomic_run_dir(tmp_path / "r", force=True, tool="course.eval") as tmp:
            read = input_fingerprint(tmp_path / "r/rollouts.jsonl")  # read during the run, never named up front
            runs.write_manifest(tmp, {"tool": "course.eval", "completions": read})
    assert tree(tmp_path / "r") == before


def test_a_users_file_named_like_a_file_the_new_run_writes_is_refused_and_the_old_run_kept(tmp_path: Path) -> None:
    with runs.atomic_run_dir(tmp_path / "r", tool="course.eval") as tmp:
        runs.write_manifest(tmp, {"tool": "course.eval"})
    (tmp_path / "r/report.html").write_text("my page", encoding="utf-8")  # the user's: the run wrote no such file
    before = tree(tmp_path / "r")
    with pytest.raises(CourseError,
                       match="report.html: was not written by course.eval .* the new run writes report.html"):
        with runs.atomic_run_dir(tmp_path / "r", force=True, tool="course.eval") as tmp:
            (tmp / "report.html").write_text("the run's page", encoding="utf-8")
            runs.write_manifest(tmp, {"tool": "course.eval"})
    assert tree(tmp_path / "r") == before and no_temporaries(tmp_path)


def test_a_run_from_before_the_file_list_keeps_every_name_the_new_run_does_not_write(tmp_path: Path, capsys) -> None:
    old = tmp_path / "r"
    old.mkdir()
    (old / "manifest.json").write_text(json.dumps({"tool": "course.eval", "course_version": "0.1.0"}), encoding="utf-8")
    (old / "results.jsonl").write_text("old\n", encoding="utf-8")
    (old / "README.md").write_text("mine", encoding="utf-8")
    with runs.atomic_run_dir(old, force=True, tool="course.eval") as tmp:
        (tmp / "results.jsonl").write_text("new\n", encoding="utf-8")
        runs.write_manifest(tmp, {"tool": "course.eval"})
    assert (old / "results.jsonl").read_text(encoding="utf-8") == "new\n"
    assert (old / "README.md").read_text(encoding="utf-8") == "mine"
    assert "an older run without a file list" in capsys.readouterr().err


def test_an_empty_folder_the_run_made_is_the_runs_and_a_note_put_in_it_is_kept(tmp_path: Path) -> None:
    # A short tinylm.rl run leaves checkpoints/ empty; the rerun refused it as the user's before.
    def write() -> None:
        with runs.atomic_run_dir(tmp_path / "r", force=True, tool="course.tinylm.rl") as tmp:
            (tmp / "checkpoints").mkdir()
            runs.write_manifest(tmp, {"tool": "course.tinylm.rl"})

    write()
    write()
    (tmp_path / "r/checkpoints/note.txt").write_text("mine", encoding="utf-8")
    write()
    assert (tmp_path / "r/checkpoints/note.txt").read_text(encoding="utf-8") == "mine"
    assert json.loads((tmp_path / "r/manifest.json").read_text(encoding="utf-8"))[runs.RUN_FOLDERS] == ["checkpoints"]


def test_a_run_inside_another_run_is_not_replaced_piecemeal(cli, tmp_path: Path) -> None:
    # tinylm.rl keeps its holdout evals as eval runs inside it: replacing one would change the rl run.
    rl = tmp_path / "rl"
    assert cli(*EVAL, "--outdir", "rl/eval_final_holdout", cwd=tmp_path).returncode == 0
    (rl / "manifest.json").write_text(json.dumps({"written_by": "rl-foundations-llm", "tool": "course.tinylm.rl"}),
                                      encoding="utf-8")
    before = tree(rl)
    line = error_line(cli(*EVAL, "--outdir", "rl/eval_final_holdout", "--force", cwd=tmp_path))
    assert "is part of the run" in line and "course.tinylm.rl" in line
    assert tree(rl) == before


# ===========================================================================
# Issue 41 item 10: a note in the manifest is the user's; one rule for a run inside a run
# ===========================================================================
@pytest.mark.parametrize("edit", ["a new top-level note", "a note inside the dataset block"])
def test_a_note_added_by_hand_to_a_runs_manifest_is_protected_from_force_like_an_edited_summary(
        cli, tmp_path: Path, edit: str) -> None:
    assert cli(*EVAL, "--outdir", "r", cwd=tmp_path).returncode == 0
    manifest = json.loads((tmp_path / "r/manifest.json").read_text(encoding="utf-8"))
    if edit == "a new top-level note":
        manifest["note"] = "baseline for the report, do not delete"
    else:
        manifest["dataset"]["note"] = "the March copy"
    (tmp_path / "r/manifest.json").write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    before = tree(tmp_path / "r")
    line = error_line(cli(*EVAL, "--outdir", "r", "--force", cwd=tmp_path))
    assert "manifest.json changed since course.eval wrote it" in line and "nothing was replaced" in line, line
    assert tree(tmp_path / "r") == before and no_temporaries(tmp_path)


def test_a_manifest_only_laid_out_again_is_no_edit_and_force_replaces_the_run(cli, tmp_path: Path) -> None:
    assert cli(*EVAL, "--outdir", "r", cwd=tmp_path).returncode == 0
    manifest = json.loads((tmp_path / "r/manifest.json").read_text(encoding="utf-8"))
    (tmp_path / "r/manifest.json").write_text(json.dumps(manifest, indent=4), encoding="utf-8")
    assert cli(*EVAL, "--outdir", "r", "--force", cwd=tmp_path).returncode == 0


def test_a_run_in_a_users_folder_inside_another_run_is_allowed_first_and_with_force_alike(
        cli, tmp_path: Path) -> None:
    assert cli(*EVAL, "--outdir", "r", cwd=tmp_path).returncode == 0
    assert cli(*EVAL, "--outdir", "r/sub", cwd=tmp_path).returncode == 0
    assert cli(*EVAL, "--outdir", "r/sub", "--force", cwd=tmp_path).returncode == 0
    assert cli(*EVAL, "--outdir", "r", "--force", cwd=tmp_path).returncode == 0  # the outer run carries it
    assert (tmp_path / "r/sub/manifest.json").is_file()


def test_a_run_in_a_folder_another_run_wrote_is_refused_first_and_with_force_alike(cli, tmp_path: Path) -> None:
    assert cli(*EVAL, "--outdir", "r", cwd=tmp_path).returncode == 0
    manifest = json.loads((tmp_path / "r/manifest.json").read_text(encoding="utf-8"))
    manifest[runs.RUN_FOLDERS] = ["checkpoints"]  # as a run that made checkpoints/ records it
    manifest[runs.RUN_MANIFEST] = runs.manifest_digest(manifest)
    (tmp_path / "r/manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    (tmp_path / "r/checkpoints").mkdir()
    first = error_line(cli(*EVAL, "--outdir", "r/checkpoints/eval", cwd=tmp_path))
    assert "is part of the run" in first and "which wrote checkpoints" in first, first
    assert not (tmp_path / "r/checkpoints/eval").exists()
    (tmp_path / "r/checkpoints/eval").mkdir()
    again = error_line(cli(*EVAL, "--outdir", "r/checkpoints/eval", "--force", cwd=tmp_path))
    assert again == first
