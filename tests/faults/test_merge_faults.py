"""Fault suite for merges (issue 41 items 2, 3 and 7): a merge re-scores what it accepts, and never writes over
its inputs.

The attacks: part 1 of a three-part ``course.eval --shard`` run had its wrong answers given reward 1.0 and
its sha256s re-sealed, and ``course.eval merge`` wrote a run of 41/100 (truly 30) whose hashes all agreed;
``course.eval merge ... --outdir <a part> --force`` turned that part into the merged run;
``course.llm.sample merge A.jsonl B.jsonl --out B.manifest.json --force`` overwrote a part's manifest; and
``course.ray_eval --parts-dir`` inside ``--outdir`` was refused only after Ray had scored every part, leaving
the parts behind. The guarantees: ``course.lib.evaluation.pipeline.merge_eval_runs`` re-scores every line of
every part against the dataset it reads (``_check_part_line``) and passes every file of every part to
``resolve_outdir`` as an input; ``course.llm.sample`` names each part's manifest as an input;
``course.lib.evaluation.shards.check_parts_outside`` refuses the parts folder inside the run before Ray starts.

    python -m pytest tests/faults/test_merge_faults.py -q
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from course.lib.records.jsonl import dumps_line
from course.lib.records.manifest import PROJECT_ROOT, sha256_file

DEV = PROJECT_ROOT / "data/datasets/math_dev.jsonl"


def _parts(run_in_process, root: Path) -> list[Path]:  # type: ignore[no-untyped-def]
    parts = [root / f"P{k}" for k in range(3)]
    for k, part in enumerate(parts):
        assert run_in_process("course.eval", ["--shard", f"{k}/3", "--outdir", str(part)], cwd=root).returncode == 0
    return parts


def _reseal_part(part: Path, edit) -> None:  # type: ignore[no-untyped-def]
    lines = []
    for line in (part / "results.jsonl").read_text().splitlines():
        r = json.loads(line)
        edit(r)
        lines.append(dumps_line(r))
    (part / "results.jsonl").write_text("\n".join(lines) + "\n")
    m = json.loads((part / "manifest.json").read_text())
    m["results_sha256"] = sha256_file(part / "results.jsonl")
    (part / "manifest.json").write_text(json.dumps(m))


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_part_with_forged_rewards_is_refused_naming_the_part_file_line_and_item(run_in_process, tmp_path):  # type: ignore[no-untyped-def]
    parts = _parts(run_in_process, tmp_path)

    def pass_wrong(r: dict) -> None:  # type: ignore[type-arg]
        if r["details"]["error_code"] == "wrong_answer":
            r["reward"] = 1.0

    _reseal_part(parts[1], pass_wrong)
    for part in parts:  # as filed: the recorded dataset path renamed in all three, the file given with --dataset
        m = json.loads((part / "manifest.json").read_text())
        m["dataset"]["path"] = "renamed/math_dev.jsonl"
        (part / "manifest.json").write_text(json.dumps(m))
    proc = run_in_process("course.eval", ["merge", *map(str, parts), "--dataset", str(DEV), "--outdir",
                                          str(tmp_path / "M")], cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == "", proc.stdout
    assert proc.stderr == (f"error: {parts[1]}/results.jsonl:1: id dev-0002 records reward 1.0, code wrong_answer, "
                           "but rubric strict gives 0.0, wrong_answer; the part was changed after it was scored "
                           "(score it again)\n")
    assert not (tmp_path / "M").exists()


def test_a_part_scored_against_another_expected_answer_is_refused(run_in_process, tmp_path):  # type: ignore[no-untyped-def]
    parts = _parts(run_in_process, tmp_path)

    def say_what_the_completion_says(r: dict) -> None:  # type: ignore[type-arg]
        if r["details"]["error_code"] == "wrong_answer":  # expected set to the answer given, verdict made consistent
            r["expected"] = r["details"]["expected"] = r["details"]["extracted"]
            r["reward"], r["details"]["error_code"] = 1.0, "ok"

    _reseal_part(parts[2], say_what_the_completion_says)
    proc = run_in_process("course.eval", ["merge", *map(str, parts), "--outdir", str(tmp_path / "M")], cwd=tmp_path)
    assert proc.returncode == 2
    assert f"error: {parts[2]}/results.jsonl:" in proc.stderr and "records expected" in proc.stderr
    assert "this part was not scored against the dataset the parts recorded" in proc.stderr
    assert not (tmp_path / "M").exists()


@pytest.mark.parametrize("which", [0, 2])
def test_merge_onto_one_of_its_parts_with_force_is_refused_and_the_part_kept(run_in_process, tmp_path, which):  # type: ignore[no-untyped-def]
    parts = _parts(run_in_process, tmp_path)
    before = _snapshot(parts[which])
    proc = run_in_process("course.eval", ["merge", *map(str, parts), "--outdir", str(parts[which]), "--force"],
                          cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == (f"error: {parts[which]}: holds {parts[which]}/manifest.json, an input of this run; --force "
                           "would replace the folder it lives in, so nothing was changed; choose another --outdir\n")
    assert _snapshot(parts[which]) == before


def test_llm_sample_merge_onto_a_parts_manifest_is_refused_and_the_manifest_kept(run_in_process, tmp_path):  # type: ignore[no-untyped-def]
    a, b = tmp_path / "A.jsonl", tmp_path / "B.jsonl"
    for part in (a, b):  # the refusal comes before any part is read: their content does not matter here
        part.write_text("{}\n")
        part.with_name(part.stem + ".manifest.json").write_text('{"tool": "course.llm.sample"}\n')
    target = tmp_path / "B.manifest.json"
    proc = run_in_process("course.llm.sample", ["merge", str(a), str(b), "--out", str(target), "--force"],
                          cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith(f"error: {target}: is the same file as the input {target}"), proc.stderr
    assert target.read_text() == '{"tool": "course.llm.sample"}\n'


@pytest.mark.parametrize("parts_dir", ["O/parts", "O"])
def test_ray_eval_refuses_parts_inside_the_outdir_before_ray_starts(monkeypatch, capsys, tmp_path, parts_dir):  # type: ignore[no-untyped-def]
    import course.lib.extras
    import course.ray_eval

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(course.lib.extras, "require", lambda *a: pytest.fail("Ray was asked for"))
    monkeypatch.setattr(course.ray_eval, "require", lambda *a: pytest.fail("Ray was asked for"))
    code = course.ray_eval.main(["--shards", "2", "--outdir", "O", "--parts-dir", parts_dir, "--force"])
    assert code == 2
    assert capsys.readouterr().err == (f"error: --parts-dir {parts_dir} is inside --outdir O: the parts are the "
                                       "merge's inputs and cannot live in the run it writes; choose a --parts-dir "
                                       "outside --outdir\n")
    assert list(tmp_path.iterdir()) == []
