"""course.compare_policies: several rollout files on the same items, pass@1 / pass@k / error codes side by side."""

from __future__ import annotations

import json

import pytest

import course.compare_policies as cp
from course.errors import CourseError
from course.lib.records.jsonl import dumps_line
from course.lib.records.manifest import PROJECT_ROOT
from course.lib.selection.policy_comparison import compare_policies, render
from course.lib.stats import pass_at_k

DEV = PROJECT_ROOT / "data" / "datasets" / "math_dev.jsonl"
SIM_PACK = PROJECT_ROOT / "data" / "rollouts" / "selection_pack_dev.jsonl"
SIM_FROZEN = PROJECT_ROOT / "data" / "rollouts" / "frozen_rollouts_dev.jsonl"
PI0 = PROJECT_ROOT / "data" / "tinylm" / "frozen_pi0_dev.jsonl"


def test_help_ends_with_a_worked_example(run_in_process) -> None:
    proc = run_in_process("course.compare_policies", ["--help"], cwd=PROJECT_ROOT)
    assert (proc.returncode == 0 and "example:" in proc.stdout
            and "sim=data/rollouts/selection_pack_dev.jsonl" in proc.stdout)


def test_a_smoke_run_on_the_bundled_files_prints_one_column_each(capsys) -> None:
    assert cp.main(["--dataset", str(DEV), f"sim={SIM_PACK}", f"tinylm={PI0}"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("2 policies on the same 100 items of data/datasets/math_dev.jsonl (split dev)")
    assert "pass@1 (unbiased)   29.5%   30.0%" in out and "pass@8 (unbiased)   75.0%       -" in out


def test_pass_at_1_and_pass_at_k_are_the_unbiased_estimates_from_all_samples() -> None:
    table = compare_policies(DEV, [("sim", str(SIM_PACK))], k=4)
    (column,) = table["columns"]
    from course.instrument.spec_v1 import score
    from course.lib.records.formats import iter_samples, read_dataset

    expected = {e.id: e.as_dict() for e in read_dataset(DEV)}
    counts = [(len(p.samples), sum(score(expected[p.id], s.completion)["reward"] == 1.0 for s in p.samples))
              for p in iter_samples(SIM_PACK)]
    assert column["pass_at_1"] == pytest.approx(sum(c / n for n, c in counts) / len(counts))
    assert column["pass_at_k"] == pytest.approx(sum(pass_at_k(n, c, 4) for n, c in counts) / len(counts))


def test_sample_0_of_a_pack_is_what_course_eval_reports_on_its_frozen_rollouts() -> None:
    table = compare_policies(DEV, [("pack", str(SIM_PACK)), ("frozen", str(SIM_FROZEN))])
    pack, frozen = table["columns"]
    assert pack["sample0_passed"] == frozen["sample0_passed"] == 30
    assert frozen["pass_at_k"] is None and frozen["samples_per_item"] == 1


def test_every_code_share_is_of_all_samples_and_they_add_up_to_one() -> None:
    (column,) = compare_policies(DEV, [("sim", str(SIM_PACK))])["columns"]
    assert sum(column["codes"].values()) == column["n_samples"] == 800
    assert column["codes"]["ok"] / 800 == pytest.approx(column["pass_at_1"])


def test_a_bare_path_is_labelled_by_its_file_name(capsys) -> None:
    assert cp.main(["--dataset", str(DEV), str(PI0), "--json"]) == 0
    (column,) = json.loads(capsys.readouterr().out)["columns"]
    assert column["label"] == "frozen_pi0_dev" and column["policy"] == "tinylm:3203e40d2036"


def test_a_file_that_misses_an_item_is_refused_naming_it(tmp_path, capsys) -> None:
    short = tmp_path / "short.jsonl"
    short.write_text("".join(SIM_FROZEN.read_text(encoding="utf-8").splitlines(keepends=True)[:99]), encoding="utf-8")
    assert cp.main(["--dataset", str(DEV), f"short={short}"]) == 2
    assert ("no line for dataset id 'dev-0100' (1 missing, 0 extra); compare policies on the same items"
            in capsys.readouterr().err)


def test_two_files_with_one_label_are_refused() -> None:
    with pytest.raises(CourseError, match="two files share the label 'x'"):
        compare_policies(DEV, [("x", str(SIM_PACK)), ("x", str(PI0))])


def test_what_a_file_says_is_shown_escaped(tmp_path) -> None:
    odd = tmp_path / "odd.jsonl"
    lines = []
    for raw in SIM_FROZEN.read_text(encoding="utf-8").splitlines():
        record = json.loads(raw)
        record["policy"] = "evil\u202epolicy"
        lines.append(dumps_line(record) + "\n")
    odd.write_text("".join(lines), encoding="utf-8")
    text = "\n".join(render(compare_policies(DEV, [("odd", str(odd))])))
    assert "\u202e" not in text and "evil⟨U+202E⟩policy" in text
