"""docs/objective.md's KL claims against what computes them: every excerpt line is the tool's output, and
every figure the prose quotes comes from the tool or from the exact spread table."""

from __future__ import annotations

import re
from pathlib import Path

from course.lib.learning import kl_estimators as kl

DOC = (Path(__file__).resolve().parents[1] / "docs" / "objective.md").read_text(encoding="utf-8")
KL_SECTION = DOC[DOC.index("## What a KL estimator estimates"):DOC.index("## How a loss is normalised")]


def excerpts(text: str) -> list[list[str]]:
    return [block.strip("\n").splitlines() for block in re.findall(r"```text\n(.*?)```", text, flags=re.S)]


def test_every_line_of_the_kl_excerpts_is_printed_by_the_documented_command(run_in_process, tmp_path) -> None:
    proc = run_in_process("course.kl_estimators", ["--policy", "categorical", "--samples", "100", "10000"],
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    printed = set(proc.stdout.splitlines())
    blocks = excerpts(KL_SECTION)
    assert len(blocks) == 2
    missing = [line for block in blocks for line in block if line not in printed]
    assert missing == []
    var_k = {x.split()[0]: x.split()[6] for x in proc.stdout.splitlines()
             if re.match(r"  k\S+ +loss +10000 ", x)}  # the Monte-Carlo per-sample variances at n = 10,000
    assert (var_k["k3"], var_k["k1"]) == ("0.1038", "0.3978")
    assert "variance is 0.1038 against k1's 0.3978" in KL_SECTION


def test_the_far_two_token_figures_are_what_the_documented_command_prints(run_in_process, tmp_path) -> None:
    args = ["--policy", "categorical", "--logits", "4.59512", "0", "--ref-logits", "0", "4.59512", "--samples", "10"]
    assert "--logits 4.59512 0 --ref-logits 0 4.59512" in KL_SECTION
    proc = run_in_process("course.kl_estimators", args, cwd=tmp_path)
    row = next(x for x in proc.stdout.splitlines() if x.startswith("      1      4.5032"))
    assert row.split()[2:5] == ["0.8362", "0", "79.83"]
    assert "var k3 = 79.83 against var k1 = 0.8362" in KL_SECTION


def test_the_ratios_of_k3s_to_k1s_value_variance_the_prose_quotes_are_the_exact_ones() -> None:
    rows = {r.scale: r for r in kl.spread_table([1.0, 0.5, -0.5, -1.0], [0.0] * 4)}
    assert round(rows[2.0].value_var[2] / rows[2.0].value_var[0], 1) == 5.7  # "almost six times"
    assert round(rows[4.0].value_var[2] / rows[4.0].value_var[0]) == 459
    assert "almost six times as much, at four times 459 times" in KL_SECTION
    assert all(rows[s].value_var[2] < rows[s].value_var[0] for s in (0.25, 0.5, 1.0))  # "only near pi0"


def test_the_doc_no_longer_says_trl_uses_plain_k3_or_has_no_reverse_kl_choice() -> None:
    for false_claim in ("both use k3 in", "TRL has no counterpart", "its spread is smaller |"):
        assert false_claim not in DOC
