"""benchmarks/llm_transfer.py's tables: pass@1 per policy with item-clustered intervals, lifts paired over items."""

from __future__ import annotations

import sys

from course.lib.bundled import PROJECT_ROOT

sys.path.insert(0, str(PROJECT_ROOT / "benchmarks"))
from llm_transfer import tables  # noqa: E402


def measured(pi0, warm, final, n=4):  # type: ignore[no-untyped-def]
    return {"template": "fewshot", "splits": {"bench": {"template": "fewshot", "items": len(pi0), "samples": n,
                                                        "passed": {"pi0": pi0, "warm_start": warm, "final": final}}}}


def test_each_policy_gets_its_pass_at_1_and_the_lifts_are_final_minus_pi0_and_final_minus_warm_start() -> None:
    row = tables(measured([0, 1, 2, 1], [2, 2, 2, 2], [4, 3, 4, 3]))["bench"]
    assert row["pi0"]["pass_at_1"] == 4 / 16 and row["final"]["pass_at_1"] == 14 / 16
    assert row["lift"]["points"] == 100 * (14 - 4) / 16 and row["rl_lift"]["points"] == 100 * (14 - 8) / 16
    low, high = row["lift"]["ci95_points"]
    assert 0 < low <= row["lift"]["points"] <= high
    low, high = row["pi0"]["ci95"]
    assert low < 4 / 16 < high


def test_a_run_without_a_warm_start_has_no_rl_lift() -> None:
    m = measured([0, 1], [0, 0], [1, 1])
    del m["splits"]["bench"]["passed"]["warm_start"]
    row = tables(m)["bench"]
    assert "rl_lift" not in row and row["lift"]["points"] == 100 * (2 - 1) / 8
