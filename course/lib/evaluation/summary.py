"""Summaries of scored results: counts, shares, the pass-rate line, summary.json and summary.md.

Pure functions and one streaming accumulator, no file I/O: ``course.eval``,
``course.selection_demo`` and ``course.inspect_run`` build their reports from
these pieces so that every tool counts, orders and prints outcomes the same way.

    tally = Tally()
    for record in results:            # records shaped like results.jsonl lines
        tally.add(record)
    summary = tally.summary()          # the dict written to summary.json
    print(pass_rate_line(summary["passed"], summary["n"]))

Definitions used everywhere:
  * an item *passes* when its reward is exactly 1.0 (the strict scorer gives 1.0 or 0.0);
  * ``pass_rate = passed / n`` with a 95 % Wilson interval (``course.lib.stats``);
  * a *share* is ``count / n`` over all items, so the shares of all codes add to 1;
  * every printed rate is rounded by one rule, ``percent`` / ``points`` (half up from the value's
    shortest decimal form), so one count reads the same in every tool and doc;
  * outcome codes are ordered by count (largest first), ties broken by the order
    of ``course.score.ERROR_CODES`` (the order the rules are checked), then by name.
"""

from __future__ import annotations

import math
import os
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction
from pathlib import PurePath
from typing import Any, Iterable, Mapping, Sequence

from course.instrument.spec_v1 import ERROR_CODES, SCORER_VERSION
from course.lib.stats import clustered_interval, wilson_interval
from course.lib.visible import code_span, markdown_value, visible

PASS_REWARD = 1.0
EXAMPLES_PER_CODE = 3
KNOWN_SPLITS = ("dev", "holdout", "train", "test", "val")
_CODE_RANK = {code: i for i, code in enumerate(ERROR_CODES)}


# ---------------------------------------------------------------------------
# One results.jsonl line
# ---------------------------------------------------------------------------
def result_record(example: Mapping[str, Any], completion: Any, scored: Mapping[str, Any]) -> dict[str, Any]:
    """The results.jsonl line for one item: id, completion, expected, reward, details."""
    return {
        "id": example["id"],
        "completion": completion,
        "expected": example["expected_answer"],
        "reward": scored["reward"],
        "details": scored["details"],
    }


def missing_result(example: Mapping[str, Any], scorer_version: str = SCORER_VERSION) -> dict[str, Any]:
    """The line for an item with no completion (``course.eval --allow-missing``): a failure with its own code.

    ``scorer_version`` is the version of the rubric scoring the run (strict: reward spec v1).
    """
    expected = example["expected_answer"]
    return {
        "id": example["id"],
        "completion": None,
        "expected": expected,
        "reward": 0.0,
        "details": {
            "scorer_version": scorer_version,
            "error_code": "missing_completion",
            "parsed": False,
            "extracted": None,
            "expected": expected,
            "reason": "No completion was supplied for this example (scored as a failure by --allow-missing).",
        },
    }


# ---------------------------------------------------------------------------
# Streaming accumulator
# ---------------------------------------------------------------------------
def code_meaning(code: str, rubric: str = "strict") -> str:
    """What an outcome code means, for the rubric that assigned it.

    The hackable rubrics reuse the strict scorer's codes, but their ``ok`` is not the
    strict verifier's check, so a report of their run must not describe it as one.

    >>> code_meaning("ok")
    "exactly one line 'Final: <int>' with the expected integer"
    >>> code_meaning("ok", "contains_answer")
    'rewarded by the contains_answer rubric, NOT the strict check of reward spec v1'
    """
    meaning = ERROR_CODES.get(code, "(not a code of this scorer version)")
    if rubric == "strict":
        return meaning
    if code == "ok":
        return f"rewarded by the {rubric} rubric, NOT the strict check of reward spec v1"
    return f"{meaning} (as the {rubric} rubric reads it)"


def ordered_codes(counts: Mapping[str, int]) -> list[str]:
    """Codes by count (descending), then rule order, then name: the one display order.

    >>> ordered_codes({"wrong_answer": 2, "ok": 2, "empty": 5})
    ['empty', 'ok', 'wrong_answer']
    """
    return sorted(counts, key=lambda c: (-counts[c], _CODE_RANK.get(c, len(_CODE_RANK)), c))


class Tally:
    """Counts outcomes one result at a time; memory does not grow with the number of results.

    Keeps n, passes, the reward sum, a count per error code and the first
    ``examples_per_code`` results of each code (in input order) for reports.
    ``rubric`` and ``scorer_version`` name the rubric that scored the results
    (default: the strict verifier, reward spec v1): summary.json records the
    version, and each code's meaning is the one that rubric gives it.

    >>> t = Tally()
    >>> for code, r in [("ok", 1.0), ("wrong_answer", 0.0), ("ok", 1.0)]:
    ...     t.add({"id": code, "reward": r, "details": {"error_code": code}})
    >>> s = t.summary()
    >>> s["n"], s["passed"], s["counts"]
    (3, 2, {'ok': 2, 'wrong_answer': 1})
    """

    def __init__(
        self, examples_per_code: int = EXAMPLES_PER_CODE, scorer_version: str = SCORER_VERSION, rubric: str = "strict"
    ) -> None:
        self.examples_per_code = examples_per_code
        self.scorer_version = scorer_version
        self.rubric = rubric
        self.n = 0
        self.passed = 0
        self.reward_sum = 0.0
        self.counts: dict[str, int] = {}
        self.examples: dict[str, list[dict[str, Any]]] = {}

    def add(self, result: Mapping[str, Any]) -> None:
        reward = result["reward"]
        code = result["details"]["error_code"]
        self.n += 1
        self.reward_sum += reward
        if reward == PASS_REWARD:
            self.passed += 1
        count = self.counts.get(code, 0)
        self.counts[code] = count + 1
        if count < self.examples_per_code:
            self.examples.setdefault(code, []).append(_example_of(result))

    def summary(self) -> dict[str, Any]:
        """The summary.json fields every scoring run shares (tools may add their own keys)."""
        n = self.n
        if n == 0:
            return {
                "n": 0, "passed": 0, "failed": 0, "pass_rate": None, "pass_rate_ci95": None,
                "mean_reward": None, "counts": {}, "breakdown": [], "scorer_version": self.scorer_version,
            }
        lo, hi = wilson_interval(self.passed, n)
        breakdown = [
            {
                "code": code,
                "count": self.counts[code],
                "share": self.counts[code] / n,
                "meaning": code_meaning(code, self.rubric),
                "example_ids": [e["id"] for e in self.examples.get(code, [])],
            }
            for code in ordered_codes(self.counts)
        ]
        return {
            "n": n,
            "passed": self.passed,
            "failed": n - self.passed,
            "pass_rate": self.passed / n,
            "pass_rate_ci95": {"low": lo, "high": hi, "method": "wilson"},
            "mean_reward": self.reward_sum / n,
            "counts": dict(self.counts),
            "breakdown": breakdown,
            "scorer_version": self.scorer_version,
        }


def _example_of(result: Mapping[str, Any]) -> dict[str, Any]:
    details = result["details"]
    return {
        "id": result["id"],
        "completion": result.get("completion"),
        "expected": result.get("expected", details.get("expected")),
        "extracted": details.get("extracted"),
        "reason": details.get("reason", ""),
        "error_code": details["error_code"],
    }


def summarize(results: Iterable[Mapping[str, Any]]) -> tuple[dict[str, Any], Tally]:
    """Tally an iterable of results; return ``(summary, tally)`` (the tally keeps the examples)."""
    tally = Tally()
    for result in results:
        tally.add(result)
    return tally.summary(), tally


# ---------------------------------------------------------------------------
# Text for humans
# ---------------------------------------------------------------------------
# One rounding rule for every rate the course prints: half up from the value's shortest decimal
# form, as a person rounds. 89/400 = 0.2225 reads 22.3%, where the binary float's own rounding
# (f"{22.25:.1f}") prints 22.2: the same count must read the same everywhere it is quoted.
def _half_up(x: float | Fraction, digits: int, signed: bool) -> str:
    """100 * x rounded half up to ``digits`` decimals, as text (a sign when negative, or always if ``signed``)."""
    value = float(x)
    if not math.isfinite(value):
        return f"{100 * value:{'+' if signed else ''}.{digits}f}"
    d = (Decimal(repr(value)) * 100).copy_abs().quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP)
    return f"-{d}" if value < 0 and d != 0 else f"+{d}" if signed else f"{d}"


def percent(x: float | Fraction, digits: int = 1) -> str:
    """A rate in percent, the course's one rounding rule (half up): ``0.2225 -> '22.3%'``.

    >>> percent(0.23), percent(1.0), percent(89 / 400), percent(0.0005), percent(-0.0001)
    ('23.0%', '100.0%', '22.3%', '0.1%', '0.0%')
    """
    return _half_up(x, digits, signed=False) + "%"


def points(x: float | Fraction, *, signed: bool = False, unit: str = "") -> str:
    """A rate, or the difference of two rates, in percent (percentage points) with one decimal,
    rounded as ``percent`` rounds. ``signed`` shows the sign of a gain too; ``unit`` follows the number.

    >>> points(0.2225), points(0.255, signed=True), points(-0.0175, unit="%")
    ('22.3', '+25.5', '-1.8%')
    >>> points(Fraction(9, 400), signed=True, unit=" points"), points(0.0225)
    ('+2.3 points', '2.3')
    """
    return _half_up(x, 1, signed) + unit


def pass_rate_line(passed: int, n: int, label: str = "Pass rate") -> str:
    """The headline every scoring tool prints.

    >>> pass_rate_line(23, 100)
    'Pass rate: 23/100 = 23.0% (95% CI 15.8%–32.2%)'
    """
    lo, hi = wilson_interval(passed, n)
    return f"{label}: {passed}/{n} = {percent(passed / n)} (95% CI {percent(lo)}–{percent(hi)})"


def clustered_summary(item_counts: Iterable[tuple[int, int]]) -> dict[str, Any]:
    """summary.json's fields for a multi-sample run: items, samples per item, and the item-clustered interval.

    ``pass_rate_ci95`` treats the items as the unit (``course.lib.stats.clustered_interval``); the
    Wilson interval the samples would get if they were independent is kept beside it, to show how
    much narrower it is.

    >>> s = clustered_summary([(8, 8), (0, 8)] * 25)
    >>> s["items"], s["samples_per_item"], s["pass_rate_ci95"]["method"], round(s["pass_rate_ci95"]["low"], 3)
    (50, 8, 'item-clustered', 0.366)
    """
    counts = list(item_counts)
    passed, samples = [k for k, _ in counts], [m for _, m in counts]
    lo, hi = clustered_interval(passed, samples)
    w_lo, w_hi = wilson_interval(sum(passed), sum(samples))
    return {"items": len(counts), "samples_per_item": samples[0],
            "pass_rate_ci95": {"low": lo, "high": hi, "method": "item-clustered"},
            "pass_rate_ci95_if_independent": {"low": w_lo, "high": w_hi, "method": "wilson"}}


def pass_at_1_line(passed: int, n: int, items: int, low: float, high: float, label: str = "pass@1") -> str:
    """The headline of a multi-sample run: pooled pass@1 with its item-clustered interval.

    >>> pass_at_1_line(200, 400, 50, 0.366, 0.634)
    'pass@1: 200/400 samples = 50.0% over 50 items x 8 (95% CI 36.6%–63.4%, items as the unit)'
    """
    return (f"{label}: {passed}/{n} samples = {percent(passed / n)} over {items} items x {n // items} "
            f"(95% CI {percent(low)}–{percent(high)}, items as the unit)")


def headline(summary: Mapping[str, Any], label: str = "Pass rate") -> str:
    """The pass-rate line of any scoring run's summary: Wilson for one sample per item, clustered for several."""
    if "samples_per_item" in summary:
        ci = summary["pass_rate_ci95"]
        return pass_at_1_line(summary["passed"], summary["n"], summary["items"], ci["low"], ci["high"])
    return pass_rate_line(summary["passed"], summary["n"], label)


def breakdown_lines(summary: Mapping[str, Any], *, include_ok: bool = False) -> list[str]:
    """One aligned line per outcome code: ``code  count  share  meaning``."""
    rows = [r for r in summary["breakdown"] if include_ok or r["code"] != "ok"]
    if not rows:
        return []
    width = max(len(r["code"]) for r in rows)
    cwidth = max(len(str(r["count"])) for r in rows)
    return [
        f"  {r['code']:<{width}}  {r['count']:>{cwidth}}  {percent(r['share']):>6}  {r['meaning']}"
        for r in rows
    ]


def render_summary_md(
    summary: Mapping[str, Any],
    examples: Mapping[str, Sequence[Mapping[str, Any]]],
    *,
    title: str,
    context: Iterable[str] = (),
) -> str:
    """summary.md: the summary for a human, with a few example failures per code.

    ``context`` lines (dataset, completions, scorer...) are listed under the title.
    """
    out = [f"# {title}", ""]
    for line in context:
        out.append(f"- {line}")
    if context:
        out.append("")
    n = summary["n"]
    out += ["## Result", ""]
    if n and "samples_per_item" in summary:
        wide = summary["pass_rate_ci95_if_independent"]
        out.append(headline(summary))
        out.append("")
        out.append(f"Mean reward: {summary['mean_reward']:.3f}")
        out.append("")
        out.append(f"Each item was sampled {summary['samples_per_item']} times. Samples of one item are "
                   "not independent")
        out.append("(an easy item passes most of its samples), so the interval treats the items as the unit of")
        out.append(f"sampling; as if the {n} samples were independent it would read {percent(wide['low'])}–"
                   f"{percent(wide['high'])}, too narrow. To compare two runs, use `python -m course.gate`, which "
                   "pairs the items.")
    elif n:
        out.append(pass_rate_line(summary["passed"], n))
        out.append("")
        out.append(f"Mean reward: {summary['mean_reward']:.3f}")
        out.append("")
        out.append("The interval is a 95 % Wilson score interval: the policy's true pass rate on items like")
        out.append("these is plausibly anywhere inside it. To compare two runs, use `python -m course.gate`,")
        out.append("which pairs the items and tests whether the difference is more than noise.")
    else:
        out.append("No items were scored.")
    out += ["", "## Outcomes by error code", "", "| code | count | share | meaning |", "|---|---:|---:|---|"]
    for row in summary["breakdown"]:
        out.append(f"| `{row['code']}` | {row['count']} | {percent(row['share'])} | {row['meaning']} |")
    failures = [row for row in summary["breakdown"] if row["code"] != "ok"]
    if failures:
        out += ["", "## Example failures", "", "Completions are shown with invisible and look-alike characters",
                "escaped: `⟨\\n⟩` newline, `⟨\\t⟩` tab, `⟨U+XXXX⟩` any non-ASCII character (see "
                "course/lib/visible.py).", ""]
        for row in failures:
            out.append(f"### `{row['code']}` ({row['count']} of {n}, {percent(row['share'])})")
            out.append("")
            for ex in examples.get(row["code"], []):
                extracted = "nothing" if ex["extracted"] is None else ex["extracted"]
                out.append(f"- {markdown_value(str(ex['id']))}: expected {ex['expected']}, extracted {extracted}. "
                           f"{ex['reason']}")
                out.append(f"  completion: {code_span(visible(ex['completion'], limit=200))}")
            out.append("")
    return "\n".join(out).rstrip("\n") + "\n"


# ---------------------------------------------------------------------------
# Small helpers about files that tools share
# ---------------------------------------------------------------------------
def split_from_path(path: str | os.PathLike[str]) -> str | None:
    """Infer the split from a dataset file name: the first ``_``/``-``/``.`` separated
    word of the stem that names a split.

    >>> split_from_path("data/datasets/math_dev.jsonl"), split_from_path("/tmp/math_dev_modified.jsonl")
    ('dev', 'dev')
    >>> split_from_path("math_holdout.jsonl"), split_from_path("numbers.jsonl")
    ('holdout', None)
    """
    stem = PurePath(path).name.split(".")[0]
    for word in stem.replace("-", "_").split("_"):
        if word.lower() in KNOWN_SPLITS:
            return word.lower()
    return None


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.evaluation.summary"))
