"""Loop B, the maths of selection: score one item's samples, let ``pick_best`` choose, count.

Pure functions and one streaming accumulator; no files, no printing (those are
``course.selection_demo``'s job). Selection spends more *sampling compute* to
choose a better output; the policy that produced the samples never changes,
so nothing here is "learning" (that is Loop C).

For one dataset item with a pack of n samples (stored order, indices 0..n-1):

  * every sample is scored with the strict verifier (``course.score.score``);
    c = how many of the n pass (reward 1.0);
  * the first N samples are the *candidates*; ``pick_best`` (the student
    exercise in ``course/assignments/pick_best.py``) returns one of them;
  * ``item_result`` builds the results.jsonl line; ``SelectionTally`` adds
    lines one at a time (memory does not grow with the number of items) and
    ``summary()`` returns everything summary.json reports.

The numbers, per item, then averaged over items:

  * pass@1 (sample 0)     did the first stored sample pass? (what ``course.eval`` scores)
  * best-of-N             did the chosen sample pass?
  * pass@k (unbiased)     1 - C(n-c, k) / C(n, k) from ALL n samples (Chen et al. 2021),
                          ``course.lib.stats.pass_at_k``: the chance that at least one of
                          k fresh samples passes, estimated from n >= k samples
  * pass^k                C(c, k) / C(n, k), ``course.lib.stats.pass_hat_k``: the chance that
                          all k pass (reliability; falls as k grows)
  * first-k               did one of the first k stored samples pass? One draw of k per
                          item: unbiased only if the stored order is random, and noisier
                          than pass@k because it ignores the other n - k samples
  * plug-in               1 - (1 - c/n)^k: plugs the estimate c/n into the formula for
                          independent draws; biased LOW for k > 1 (Jensen's inequality),
                          the shortcut Chen et al. warn against

Worked example (an item with n = 4 samples, c = 2 of them passing)::

    >>> from course.lib.stats import pass_at_k
    >>> pass_at_k(4, 2, 2)        # 1 - C(2,2)/C(4,2) = 1 - 1/6
    0.8333333333333334
    >>> 1 - (1 - 2 / 4) ** 2     # the plug-in shortcut: too low
    0.75
"""

from __future__ import annotations

import inspect
import math
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from course.errors import CourseError
from course.instrument.spec_v1 import score
from course.lib.evaluation.summary import PASS_REWARD, Tally
from course.lib.records.formats import SampleSet
from course.lib.stats import pass_at_k, pass_hat_k, plug_in_pass_at_k, wilson_interval

Picker = Callable[[Sequence[Mapping[str, Any]]], Mapping[str, Any]]

KIND = "selection"
NOTE = "more sampling compute, same policy"
GAIN_LABEL = "selection improvement (more compute), not learning"
STILL_FAILING_EXAMPLES = 3

ESTIMATORS = {
    "pass_at_k": "unbiased pass@k (Chen et al. 2021): mean over items of 1 - C(n-c,k)/C(n,k), from all n samples",
    "pass_hat_k": "pass^k: mean over items of C(c,k)/C(n,k), the chance that all k samples pass",
    "first_k": "share of items where one of the FIRST k stored samples passes: one draw per item "
    "(depends on the stored order; noisier than pass@k)",
    "plug_in": "mean over items of 1 - (1 - c/n)^k: the plug-in shortcut, biased low for k > 1",
}


# ===========================================================================
# One item
# ===========================================================================
def score_samples(example: Mapping[str, Any], pack: SampleSet) -> list[dict[str, Any]]:
    """Score every sample of one item; the dicts are what ``pick_best`` receives.

    >>> from course.lib.records.formats import Sample
    >>> pack = SampleSet("x", (Sample(0, "Final: 3"), Sample(1, "Final: 4")), "p", {})
    >>> [(s["sample_id"], s["reward"]) for s in score_samples({"expected_answer": 4}, pack)]
    [('x#0', 0.0), ('x#1', 1.0)]
    """
    scored = []
    for sample in pack.samples:
        verdict = score(example, sample.completion)
        scored.append(
            {
                "sample_index": sample.sample_index,
                "sample_id": pack.sample_id(sample.sample_index),
                "completion": sample.completion,
                "reward": verdict["reward"],
                "details": verdict["details"],
            }
        )
    return scored


def choose(candidates: Sequence[Mapping[str, Any]], picker: Picker, item_id: str) -> int:
    """Ask ``picker`` for the best candidate; return the position of the one it chose.

    The picker gets copies (a picker that edits a reward cannot change what is
    recorded) and must return one of them, the object itself, as the contract in
    ``course/assignments/pick_best.py`` says; anything else is a ``CourseError``.
    """
    offered = [{**c, "details": dict(c["details"])} for c in candidates]
    try:
        chosen = picker(offered)
    except Exception as exc:  # a student's picker may raise anything; say where
        raise CourseError(
            f"item {item_id!r}: {_picker_name(picker)} raised {type(exc).__name__}: {exc}"
        ) from exc
    for position, sample in enumerate(offered):
        if chosen is sample:
            return position
    raise CourseError(
        f"item {item_id!r}: {_picker_name(picker)} returned {_describe(chosen)}, not one of the "
        f"{len(offered)} samples it was given; it must return one of them, the object itself "
        "(check it with: python -m pytest tests/test_assignments.py)"
    )


def item_result(
    example: Mapping[str, Any], pack: SampleSet, n: int, picker: Picker
) -> dict[str, Any]:
    """The results.jsonl line for one item: the chosen sample, the N considered, the pack's counts.

    ``example`` is a dataset item (``id``, ``expected_answer``); ``pack`` must
    hold at least ``n`` samples (the caller checks and reports ``path:line``).
    """
    scored = score_samples(example, pack)
    candidates = scored[:n]
    chosen = candidates[choose(candidates, picker, pack.id)]
    passing = [s["sample_index"] for s in scored if s["reward"] == PASS_REWARD]
    return {
        "id": example["id"],
        "chosen_sample_id": chosen["sample_id"],
        "chosen_index": chosen["sample_index"],
        "completion": chosen["completion"],
        "expected": example["expected_answer"],
        "reward": chosen["reward"],
        "details": chosen["details"],
        # The N candidates in stored order: enough to re-check the choice by hand.
        "considered": [
            {"sample_index": s["sample_index"], "reward": s["reward"], "error_code": s["details"]["error_code"]}
            for s in candidates
        ],
        # The whole pack, for the pass@k curve (recomputable from this file alone).
        "pack_samples": len(scored),
        "pack_passing": len(passing),
        "first_passing_index": passing[0] if passing else None,
    }


# ===========================================================================
# Many items: a streaming accumulator
# ===========================================================================
class SelectionTally:
    """Adds results.jsonl lines (in dataset order) and builds summary.json.

    Memory is bounded by the number of *distinct* (n, c) pairs and first-pass
    indices (at most a few dozen), not by the number of items.
    """

    def __init__(self, n: int) -> None:
        self.n = n
        self.chosen = Tally()  # the chosen samples: best-of-N, codes, example failures
        self.first = Tally()  # sample 0 of each item: pass@1 as course.eval would score it
        self.pack_counts: dict[tuple[int, int], int] = {}  # (n_samples, n_passing) -> items
        self.first_pass_counts: dict[int, int] = {}  # first passing index -> items (items with one)
        self.min_pack: int | None = None  # the smallest pack: pass@k is defined for k <= it
        self.rescued = 0  # sample 0 failed, the chosen sample passes
        self.lost = 0  # sample 0 passed, the chosen sample fails (a picker that ignores reward)
        self.still_failing = 0
        self.failing_examples: list[dict[str, Any]] = []

    def add(self, result: Mapping[str, Any]) -> None:
        considered = result["considered"]
        first = considered[0]
        self.chosen.add(result)
        self.first.add({"id": result["id"], "reward": first["reward"], "details": {"error_code": first["error_code"]}})
        first_passed = first["reward"] == PASS_REWARD
        chosen_passed = result["reward"] == PASS_REWARD
        self.rescued += (not first_passed) and chosen_passed
        self.lost += first_passed and not chosen_passed
        key = (result["pack_samples"], result["pack_passing"])
        self.pack_counts[key] = self.pack_counts.get(key, 0) + 1
        index = result["first_passing_index"]
        if index is not None:
            self.first_pass_counts[index] = self.first_pass_counts.get(index, 0) + 1
        size = result["pack_samples"]
        self.min_pack = size if self.min_pack is None else min(self.min_pack, size)
        if not any(c["reward"] == PASS_REWARD for c in considered):
            self.still_failing += 1
            if len(self.failing_examples) < STILL_FAILING_EXAMPLES:
                self.failing_examples.append(
                    {
                        "id": result["id"],
                        "expected": result["expected"],
                        "codes": [c["error_code"] for c in considered],
                        "chosen_completion": result["completion"],
                        "first_passing_index": index,
                    }
                )

    def curve(self) -> list[dict[str, Any]]:
        """pass@k, pass^k, first-k and plug-in for k = 1 .. the smallest pack size."""
        items = self.chosen.n
        groups = sorted(self.pack_counts.items())  # sorted: the sum's order never depends on input order
        rows = []
        for k in range(1, (self.min_pack or 0) + 1):
            rows.append(
                {
                    "k": k,
                    "pass_at_k": math.fsum(m * pass_at_k(n, c, k) for (n, c), m in groups) / items,
                    "pass_hat_k": math.fsum(m * pass_hat_k(n, c, k) for (n, c), m in groups) / items,
                    "first_k": sum(m for i, m in self.first_pass_counts.items() if i < k) / items,
                    "plug_in": math.fsum(m * plug_in_pass_at_k(n, c, k) for (n, c), m in groups) / items,
                }
            )
        return rows

    def summary(self, *, rule: str) -> dict[str, Any]:
        """summary.json: the shared fields of the chosen samples (``Tally.summary``) plus selection's own."""
        if self.chosen.n == 0:
            raise CourseError("no items were selected: the dataset is empty")
        base = self.chosen.summary()
        first = self.first.summary()
        n_items = base["n"]
        return {
            **base,  # n, passed, pass_rate (= best-of-N), pass_rate_ci95, mean_reward, counts, breakdown
            "kind": KIND,
            "note": NOTE,
            "n_items": n_items,
            "N": self.n,
            "selection_rule": rule,
            "pass_at_1": _rate_block(first, "sample 0 of each item (the frozen rollout course.eval scores)"),
            "best_of_n": _rate_block(base, f"best of the first {self.n} samples of each item, chosen by pick_best"),
            "selection_gain": {
                "label": GAIN_LABEL,
                # Differences of counts over n (one rounding), not differences of rounded rates.
                "pass_rate": (self.chosen.passed - self.first.passed) / n_items,
                "mean_reward": (self.chosen.reward_sum - self.first.reward_sum) / n_items,
                "items_rescued": self.rescued,
                "items_lost": self.lost,
            },
            "pass_at_k_curve": {
                "samples_per_item": self.min_pack,
                "estimators": dict(ESTIMATORS),
                "rows": self.curve(),
            },
            "still_failing": {
                "count": self.still_failing,
                "share": self.still_failing / n_items,
                "examples": list(self.failing_examples),
            },
        }


def _rate_block(tally_summary: Mapping[str, Any], label: str) -> dict[str, Any]:
    lo, hi = wilson_interval(tally_summary["passed"], tally_summary["n"])
    return {
        "label": label,
        "passed": tally_summary["passed"],
        "n": tally_summary["n"],
        "rate": tally_summary["pass_rate"],
        "ci95": {"low": lo, "high": hi, "method": "wilson"},
        "mean_reward": tally_summary["mean_reward"],
    }


# ===========================================================================
# Who chose: the picker's name and the bytes of the file that defines it
# ===========================================================================
def picker_identity(picker: Picker) -> dict[str, Any]:
    """``{"picker": "module.name", "picker_sha256": hex or None}`` for the manifest.

    The sha256 covers the whole source file of the function: a student's edit to
    ``course/assignments/pick_best.py`` changes the instrument of selection, and
    ``course.gate`` sees it.
    """
    try:
        source = inspect.getsourcefile(picker)
    except TypeError:  # a builtin or a C function has no source file
        source = None
    digest = None
    if source is not None and Path(source).is_file():
        from course.lib.records.manifest import sha256_file

        digest = sha256_file(source)
    return {"picker": _picker_name(picker), "picker_sha256": digest}


def _picker_name(picker: Picker) -> str:
    module = getattr(picker, "__module__", None) or "?"
    name = getattr(picker, "__qualname__", None) or getattr(picker, "__name__", None) or repr(picker)
    return f"{module}.{name}"


def _describe(value: Any) -> str:
    if isinstance(value, Mapping) and "sample_index" in value:
        return f"a {type(value).__name__} with sample_index {value['sample_index']!r} (a copy?)"
    return f"a {type(value).__name__}"


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.selection.best_of_n"))
