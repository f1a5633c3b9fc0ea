"""The prompt template is a Locked Room field: recorded per file, carried into manifests, compared by the gate.

plain vs fewshot is an environment change ("Locked Room violated: prompt_template differs"), never
learning; a file written before the field existed counts as the dataset prompt as-is (plain), and
its run's outputs are what they always were.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import course.eval as ev
import course.gate as gate
import course.selection_demo as selection_demo
from course.errors import CourseError
from course.lib.policy.templates import FEWSHOT, PLAIN
from course.lib.records.formats import iter_completions, iter_samples
from course.lib.records.jsonl import dumps_line
from course.lib.records.manifest import PROJECT_ROOT

DATASET = PROJECT_ROOT / "data" / "datasets" / "math_dev.jsonl"
FROZEN = PROJECT_ROOT / "data" / "rollouts" / "frozen_rollouts_dev.jsonl"
PACK = PROJECT_ROOT / "data" / "rollouts" / "selection_pack_dev.jsonl"


def with_template(src: Path, dst: Path, template: dict | None, *, only_line: int | None = None) -> Path:
    """A copy of ``src`` whose lines carry ``template`` (every line, or only ``only_line``)."""
    lines = []
    for i, raw in enumerate(src.read_text(encoding="utf-8").splitlines(), start=1):
        record = json.loads(raw)
        if template is not None and only_line in (None, i):
            record["prompt_template"] = template
        lines.append(dumps_line(record) + "\n")
    dst.write_text("".join(lines), encoding="utf-8")
    return dst


def evaluate(tmp_path: Path, name: str, completions: Path) -> Path:
    out = tmp_path / "runs" / name
    assert ev.main(["--dataset", str(DATASET), "--completions", str(completions), "--outdir", str(out)]) == 0
    return out


def manifest(run: Path) -> dict:
    return json.loads((run / "manifest.json").read_text(encoding="utf-8"))


def gate_run(capsys, base: Path, cand: Path) -> tuple[int, str]:
    capsys.readouterr()
    code = gate.main(["--baseline", str(base), "--candidate", str(cand), "--min-delta", "0"])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


# --- the gate ----------------------------------------------------------------------------------------
def test_the_gate_refuses_plain_against_fewshot_as_an_environment_change(tmp_path, capsys) -> None:
    plain = evaluate(tmp_path, "plain", with_template(FROZEN, tmp_path / "plain.jsonl", PLAIN.record()))
    fewshot = evaluate(tmp_path, "fewshot", with_template(FROZEN, tmp_path / "fewshot.jsonl", FEWSHOT.record()))
    code, out = gate_run(capsys, plain, fewshot)
    assert code == 1
    assert "Decision: REJECT (Locked Room violated: prompt_template differs)" in out
    assert "prompt_template  [environment:" in out and "not learning" in out
    assert "Change:" not in out  # no delta is computed across environments


def test_the_gate_json_names_the_template_field_and_both_values(tmp_path, capsys) -> None:
    plain = evaluate(tmp_path, "plain", with_template(FROZEN, tmp_path / "plain.jsonl", PLAIN.record()))
    fewshot = evaluate(tmp_path, "fewshot", with_template(FROZEN, tmp_path / "fewshot.jsonl", FEWSHOT.record()))
    capsys.readouterr()
    assert gate.main(["--baseline", str(plain), "--candidate", str(fewshot), "--min-delta", "0", "--json"]) == 1
    result = json.loads(capsys.readouterr().out)
    (difference,) = result["locked_room"]["differences"]
    assert difference["field"] == "prompt_template" and difference["kind"] == "environment"
    assert FEWSHOT.fingerprint in difference["candidate"] and PLAIN.fingerprint in difference["baseline"]


def test_a_file_without_a_template_is_comparable_with_one_recorded_as_plain(tmp_path, capsys) -> None:
    old = evaluate(tmp_path, "old", FROZEN)
    plain = evaluate(tmp_path, "plain", with_template(FROZEN, tmp_path / "plain.jsonl", PLAIN.record()))
    code, out = gate_run(capsys, old, plain)
    assert code == 0 and "Locked Room: ok" in out


def test_a_file_without_a_template_is_not_comparable_with_fewshot(tmp_path, capsys) -> None:
    old = evaluate(tmp_path, "old", FROZEN)
    fewshot = evaluate(tmp_path, "fewshot", with_template(FROZEN, tmp_path / "fewshot.jsonl", FEWSHOT.record()))
    code, out = gate_run(capsys, old, fewshot)
    assert code == 1 and "prompt_template differs" in out
    assert "implicit: the rollouts record no template" in out  # the absent side says what it stands for


# --- manifests: carried when recorded, absent (as before) when not --------------------------------------
def test_eval_and_selection_manifests_carry_the_packs_template(tmp_path) -> None:
    run = evaluate(tmp_path, "fewshot", with_template(FROZEN, tmp_path / "fewshot.jsonl", FEWSHOT.record()))
    assert manifest(run)["prompt_template"] == FEWSHOT.record()
    assert (f"prompt template `fewshot` (sha256 {FEWSHOT.fingerprint[:12]}"
            in (run / "summary.md").read_text(encoding="utf-8"))
    pack = with_template(PACK, tmp_path / "pack.jsonl", FEWSHOT.record())
    out = tmp_path / "runs" / "sel"
    assert selection_demo.main(["--dataset", str(DATASET), "--samples", str(pack), "--n", "4",
                                "--outdir", str(out)]) == 0
    assert manifest(out)["prompt_template"] == FEWSHOT.record()


def test_a_run_on_a_file_without_the_field_is_written_as_before(tmp_path) -> None:
    run = evaluate(tmp_path, "old", FROZEN)
    assert "prompt_template" not in manifest(run)
    assert "prompt template" not in (run / "summary.md").read_text(encoding="utf-8")


def test_the_template_does_not_change_what_is_scored(tmp_path) -> None:
    old = evaluate(tmp_path, "old", FROZEN)
    plain = evaluate(tmp_path, "plain", with_template(FROZEN, tmp_path / "plain.jsonl", PLAIN.record()))
    for name in ("results.jsonl", "summary.json"):
        assert (old / name).read_bytes() == (plain / name).read_bytes()


# --- the per-file rule ---------------------------------------------------------------------------------
def test_the_readers_return_the_recorded_template(tmp_path) -> None:
    rollouts = with_template(FROZEN, tmp_path / "r.jsonl", FEWSHOT.record())
    pack = with_template(PACK, tmp_path / "p.jsonl", FEWSHOT.record())
    assert {c.prompt_template["name"] for c in iter_completions(rollouts)} == {"fewshot"}
    assert {s.prompt_template["name"] for s in iter_samples(pack)} == {"fewshot"}
    assert {c.prompt_template for c in iter_completions(FROZEN)} == {None}


def test_a_template_that_changes_within_a_file_is_refused_with_its_line(tmp_path) -> None:
    mixed = with_template(FROZEN, tmp_path / "mixed.jsonl", PLAIN.record())
    lines = mixed.read_text(encoding="utf-8").splitlines(keepends=True)
    record = json.loads(lines[2])
    record["prompt_template"] = FEWSHOT.record()
    lines[2] = dumps_line(record) + "\n"
    mixed.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(CourseError, match=r"mixed.jsonl:3: prompt_template differs from line 1"):
        list(iter_completions(mixed))


@pytest.mark.parametrize("only_line, expected", [(2, "r.jsonl:2: prompt_template differs from line 1"),
                                                 (1, "r.jsonl:2: prompt_template differs from line 1")])
def test_a_template_on_some_lines_only_is_refused(tmp_path, only_line, expected) -> None:
    partial = with_template(FROZEN, tmp_path / "r.jsonl", FEWSHOT.record(), only_line=only_line)
    with pytest.raises(CourseError, match=expected):
        list(iter_completions(partial))


@pytest.mark.parametrize("bad", ["fewshot", {"name": "fewshot"}, {"name": "", "sha256": "ab"},
                                 {"name": 1, "sha256": "ab"}])
def test_a_malformed_template_is_refused_on_line_1(tmp_path, bad) -> None:
    broken = with_template(PACK, tmp_path / "p.jsonl", bad)
    with pytest.raises(CourseError, match=r"p.jsonl:1: field 'prompt_template' must be an object"):
        list(iter_samples(broken))
