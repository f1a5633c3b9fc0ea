"""course.lib.selection.best_of_n: the maths of best-of-N, checked against a hand calculation.

The hand-calculated pack (3 items x 4 samples; 1 = the strict scorer passes it):

    item  expected  samples (stored order)                         rewards    c
    a     1         "Final: 7", "", "Final:1", "Final: 2"           0 0 0 0    0
    b     2         "Final: 3", "Final: 2", "final: 2", "Final: 2"  0 1 0 1    2
    c     3         "Final: 3", "Final: 3", "Final: 3", "Final: 03" 1 1 1 0    3
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from course.assignments.pick_best import pick_best
from course.errors import CourseError
from course.lib.records.formats import Sample, SampleSet
from course.lib.selection.best_of_n import SelectionTally, choose, item_result, picker_identity

HAND_PACK = [
    ("a", 1, ["Final: 7", "", "Final:1", "Final: 2"]),
    ("b", 2, ["Final: 3", "Final: 2", "final: 2", "Final: 2"]),
    ("c", 3, ["Final: 3", "Final: 3", "Final: 3", "Final: 03"]),
]


def _pack(item_id: str, completions: list[Any]) -> SampleSet:
    return SampleSet(item_id, tuple(Sample(i, c) for i, c in enumerate(completions)), "test-policy", {"seed": 0})


def _results(n: int, picker=pick_best, pack=HAND_PACK) -> list[dict[str, Any]]:
    return [item_result({"id": i, "expected_answer": e}, _pack(i, cs), n, picker) for i, e, cs in pack]


def _summary(n: int, picker=pick_best) -> dict[str, Any]:
    tally = SelectionTally(n)
    for result in _results(n, picker):
        tally.add(result)
    return tally.summary(rule="test rule")


def _column(summary: dict[str, Any], name: str) -> list[float]:
    return [row[name] for row in summary["pass_at_k_curve"]["rows"]]


def _close(values: list[float], fractions: list[Fraction]) -> bool:
    return values == pytest.approx([float(f) for f in fractions], rel=1e-12, abs=1e-15)


# --- one item ---------------------------------------------------------------------
def test_the_chosen_ids_follow_max_reward_with_ties_to_the_lowest_index() -> None:
    # a: all fail, tie at 0 -> #0; b: #1 and #3 pass -> #1; c: #0..#2 pass -> #0.
    assert [r["chosen_sample_id"] for r in _results(4)] == ["a#0", "b#1", "c#0"]
    assert [r["chosen_sample_id"] for r in _results(1)] == ["a#0", "b#0", "c#0"]


def test_a_result_line_records_the_candidates_and_the_pack_counts() -> None:
    b = _results(2)[1]
    assert b["considered"] == [
        {"sample_index": 0, "reward": 0.0, "error_code": "wrong_answer"},
        {"sample_index": 1, "reward": 1.0, "error_code": "ok"},
    ]
    assert (b["pack_samples"], b["pack_passing"], b["first_passing_index"]) == (4, 2, 1)
    assert (b["chosen_index"], b["completion"], b["reward"], b["details"]["error_code"]) == (1, "Final: 2", 1.0, "ok")


def test_only_the_first_n_samples_are_candidates() -> None:
    # a's sample 2 is "Final:1" (prefix_spacing); with N=2 it is never looked at.
    a = _results(2)[0]
    assert [c["error_code"] for c in a["considered"]] == ["wrong_answer", "empty"]


def test_a_picker_that_edits_a_reward_cannot_change_what_is_recorded() -> None:
    def cheating_picker(samples):
        samples[0]["reward"] = 1.0
        return samples[0]

    a = _results(4, picker=cheating_picker)[0]
    assert (a["chosen_sample_id"], a["reward"], a["details"]["error_code"]) == ("a#0", 0.0, "wrong_answer")


def test_a_picker_returning_a_copy_is_refused_with_the_contract() -> None:
    with pytest.raises(CourseError, match="not one of the 2 samples.*test_assignments"):
        choose([{"sample_index": 0, "reward": 0.0, "details": {}}, {"sample_index": 1, "reward": 1.0, "details": {}}],
               lambda samples: dict(samples[1]), "x")


def test_a_picker_that_raises_is_reported_with_the_item() -> None:
    def broken(samples):
        raise KeyError("score")

    with pytest.raises(CourseError, match=r"item 'a': .*broken raised KeyError"):
        _results(2, picker=broken)


def test_the_picker_identity_names_the_function_and_hashes_its_file() -> None:
    identity = picker_identity(pick_best)
    assert identity["picker"] == "course.assignments.pick_best.pick_best"
    assert len(identity["picker_sha256"]) == 64


# --- the summary, by hand ---------------------------------------------------------------
def test_pass_at_1_counts_sample_0_only() -> None:
    first = _summary(4)["pass_at_1"]
    assert (first["passed"], first["n"], first["rate"]) == (1, 3, 1 / 3)  # only c's sample 0 passes


def test_best_of_2_and_best_of_4_by_hand() -> None:
    # N=2: a fails (0,0), b passes (0,1), c passes -> 2/3. N=4 adds nothing: a never passes.
    for n in (2, 4):
        best = _summary(n)["best_of_n"]
        assert (best["passed"], best["n"]) == (2, 3)
    assert _summary(1)["best_of_n"]["passed"] == 1


def test_the_selection_gain_is_labelled_selection_and_counts_rescued_items() -> None:
    s = _summary(2)
    assert (s["kind"], s["note"]) == ("selection", "more sampling compute, same policy")
    gain = s["selection_gain"]
    assert gain["label"] == "selection improvement (more compute), not learning"
    assert (gain["pass_rate"], gain["items_rescued"], gain["items_lost"]) == (1 / 3, 1, 0)  # b is rescued


def test_the_unbiased_pass_at_k_curve_by_hand() -> None:
    # pass@k per item = 1 - C(4-c, k)/C(4, k); a (c=0) is 0 for every k.
    # k=1: b 2/4, c 3/4                     -> (0 + 1/2 + 3/4)/3 = 5/12
    # k=2: b 1 - C(2,2)/C(4,2) = 5/6, c 1   -> (0 + 5/6 + 1)/3  = 11/18
    # k=3, 4: b 1, c 1                      -> 2/3
    assert _close(_column(_summary(4), "pass_at_k"),
                  [Fraction(5, 12), Fraction(11, 18), Fraction(2, 3), Fraction(2, 3)])


def test_pass_hat_k_by_hand() -> None:
    # pass^k per item = C(c, k)/C(4, k).
    # k=1: 5/12; k=2: b 1/6, c 3/6 -> (1/6 + 1/2)/3 = 2/9; k=3: c 1/4 -> 1/12; k=4: 0
    assert _close(_column(_summary(4), "pass_hat_k"), [Fraction(5, 12), Fraction(2, 9), Fraction(1, 12), Fraction(0)])


def test_the_first_k_estimate_by_hand() -> None:
    # First passing index: a none, b 1, c 0 -> k=1: 1/3, k>=2: 2/3.
    assert _close(_column(_summary(4), "first_k"), [Fraction(1, 3)] + [Fraction(2, 3)] * 3)


def test_the_plug_in_estimate_by_hand_is_below_the_unbiased_one() -> None:
    # 1 - (1 - c/4)^k: k=2: b 3/4, c 15/16 -> 9/16; k=3: b 7/8, c 63/64 -> 119/192; k=4: b 15/16, c 255/256 -> 165/256
    plug_in = _column(_summary(4), "plug_in")
    assert _close(plug_in, [Fraction(5, 12), Fraction(9, 16), Fraction(119, 192), Fraction(165, 256)])
    assert all(p < u for p, u in zip(plug_in[1:], _column(_summary(4), "pass_at_k")[1:]))


def test_the_curve_uses_all_samples_whatever_n_is() -> None:
    assert _summary(1)["pass_at_k_curve"] == _summary(4)["pass_at_k_curve"]


def test_still_failing_items_list_the_codes_of_their_candidates() -> None:
    block = _summary(2)["still_failing"]
    assert block["count"] == 1
    assert block["examples"] == [
        {"id": "a", "expected": 1, "codes": ["wrong_answer", "empty"], "chosen_completion": "Final: 7",
         "first_passing_index": None}
    ]


def test_still_failing_at_n_1_notes_a_pass_further_down_the_pack() -> None:
    examples = _summary(1)["still_failing"]["examples"]
    assert [(e["id"], e["first_passing_index"]) for e in examples] == [("a", None), ("b", 1)]


def test_the_chosen_codes_are_counted_like_course_eval() -> None:
    assert _summary(2)["counts"] == {"wrong_answer": 1, "ok": 2}


def test_a_picker_that_ignores_reward_loses_items_and_says_so() -> None:
    # Always the last candidate: b's #3 passes, c's #3 ("Final: 03") fails although c's #0 passed.
    s = _summary(4, picker=lambda samples: samples[-1])
    assert (s["best_of_n"]["passed"], s["selection_gain"]["items_rescued"],
            s["selection_gain"]["items_lost"]) == (1, 1, 1)


# --- properties on random packs ------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(st.booleans(), min_size=1, max_size=8), min_size=1, max_size=8),
    st.integers(1, 8),
)
def test_curve_properties_hold_for_any_pack(passes: list[list[bool]], n: int) -> None:
    pack = [(f"i{j}", 1, ["Final: 1" if p else "Final: 0" for p in row]) for j, row in enumerate(passes)]
    n = min(n, min(len(row) for row in passes))
    tally = SelectionTally(n)
    for result in _results(n, pack=pack):
        tally.add(result)
    s = tally.summary(rule="r")
    rows = s["pass_at_k_curve"]["rows"]
    assert len(rows) == min(len(row) for row in passes)
    at, hat = [r["pass_at_k"] for r in rows], [r["pass_hat_k"] for r in rows]
    assert all(x <= y + 1e-12 for x, y in zip(at, at[1:]))  # more samples never hurt pass@k
    assert all(x + 1e-12 >= y for x, y in zip(hat, hat[1:]))  # all-k-pass only gets harder
    mean_share = sum(sum(row) / len(row) for row in passes) / len(passes)
    assert at[0] == pytest.approx(mean_share) and hat[0] == pytest.approx(mean_share)
    # With the default picker, best-of-N is exactly the first-k column at k = N.
    assert s["best_of_n"]["rate"] == rows[n - 1]["first_k"]
    assert s["best_of_n"]["passed"] == sum(any(row[:n]) for row in passes)
