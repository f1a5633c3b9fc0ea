"""A scoring run's sections (course.eval and course.selection_demo): its pass rate, failure taxonomy and item table.

``load_scoring`` reads results.jsonl once in memory bounded by ``TABLE_ROWS`` rows (``ItemSample``) and
checks summary.json against it; ``scoring_body`` draws the result, the taxonomy (each bar a ``<details>``
that opens its examples) and the first page of the item table, which the page's script filters, sorts and
pages over an inline JSON block.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from course.instrument.spec_v1 import ERROR_CODES
from course.lib.evaluation.summary import PASS_REWARD, ordered_codes, pass_at_1_line, pass_rate_line, percent
from course.lib.records.formats import EVAL_SUMMARY, SELECTION_SUMMARY, iter_results, read_checked_json
from course.lib.reporting.page_parts import (
    COMPLETION_LIMIT,
    TABLE_COMPLETION_LIMIT,
    RunData,
    dl,
    escape,
    json_block,
)
from course.lib.stats import wilson_interval
from course.lib.visible import command, legend, visible

EXAMPLES_PER_CODE = 5
PAGE_SIZE = 50
# The item table holds at most TABLE_ROWS items (see _ItemSample): every item of a run up to that
# size, beyond it every item of the rare outcome codes and an evenly spaced subset of the common ones.
# A page embedding every item of a million-item run was too heavy to use (in Chromium, many seconds
# to open, and every filter over a million rows), and building it held every row in memory three
# times; a page of this many rows opens and filters without a wait, and the report's memory stays
# flat in the run's size (benchmarks/bench_report.py measures both, at 100,000 and 1,000,000 items).
# Every item stays in results.jsonl, and the page says how to see the rest.
TABLE_ROWS = 50_000
MAX_TABLE_CODES = 200  # codes beyond these (a hand-made results.jsonl) are counted and named, not embedded
# Items are counted per code for this many distinct codes (a real run has a few dozen); the items of
# any further code are counted together, and the page says how many (memory stays bounded).
MAX_COUNTED_CODES = 100_000
NAMED_CODES = 20  # a note names this many codes left out of the table, then says how many more


def item_row(result: Mapping[str, Any]) -> list[Any]:
    details = result["details"]
    completion = result.get("completion")
    expected = result.get("expected", details.get("expected"))
    extracted = details.get("extracted")
    if isinstance(completion, str):
        shown: str | None = visible(completion, limit=TABLE_COMPLETION_LIMIT)
        length: int | None = len(completion)
    else:
        shown, length = None, None
    return [
        str(result["id"]),
        expected if isinstance(expected, int) else (None if expected is None else str(expected)),
        extracted if isinstance(extracted, int) else (None if extracted is None else str(extracted)),
        str(details["error_code"]),
        str(details.get("reason", "")),
        1 if result["reward"] == PASS_REWARD else 0,
        shown,
        length,
    ]


def example_of(result: Mapping[str, Any]) -> dict[str, Any]:
    """What an example needs, with the completion already cut (a 10 MB completion is not kept)."""
    details = result["details"]
    completion = result.get("completion")
    return {
        "id": result["id"],
        "reward": result["reward"],
        "expected": result.get("expected", details.get("expected")),
        "extracted": details.get("extracted"),
        "reason": details.get("reason", ""),
        "completion": completion[: COMPLETION_LIMIT + 1] if isinstance(completion, str) else completion,
        "length": len(completion) if isinstance(completion, str) else None,
    }


class ItemSample:
    """The item table's rows, read in one pass in memory bounded by ``limit`` rows (or one per code, for
    at most ``max_codes`` codes, if there are more codes than that), however many items.

    Every item while there are at most ``limit``. Beyond that the most frequent codes are thinned,
    each as a systematic sample: item k of a code (k = 0, 1, 2, ...) is kept while k is a multiple
    of the code's stride, and whenever the table would exceed ``limit`` the code holding the most
    rows doubles its stride (every other kept row goes). So rare codes keep all their items, common
    ones an evenly spaced subset spread over the whole dataset (not just its start), with no random
    numbers: the same run gives the same page. Only the first ``max_codes`` codes (in order of first
    appearance) have rows at all; every code is still counted (``counts``, up to
    ``MAX_COUNTED_CODES`` codes, then ``uncounted``), so the page names what the table leaves out:
    no code's items vanish without a word.
    """

    def __init__(self, limit: int | None = None, max_codes: int = MAX_TABLE_CODES,
                 max_counted: int = MAX_COUNTED_CODES) -> None:
        self.limit, self.max_codes, self.max_counted = TABLE_ROWS if limit is None else limit, max_codes, max_counted
        self.n = 0
        self.passed = 0  # items whose reward is PASS_REWARD: checked against summary.json's "passed"
        self.uncounted = 0  # items of codes beyond max_counted distinct ones (counted only here)
        self.counts: dict[str, int] = {}
        self._kept: dict[str, list[tuple[int, int, list[Any]]]] = {}  # code -> (item index, rank in code, row)
        self._stride: dict[str, int] = {}
        self._total = 0  # rows kept, all codes

    def add(self, result: Mapping[str, Any]) -> None:
        index, self.n = self.n, self.n + 1
        self.passed += result["reward"] == PASS_REWARD
        code = result["details"]["error_code"]
        rank = self.counts.get(code)
        if rank is None:
            if len(self.counts) >= self.max_counted:
                self.uncounted += 1
                return
            rank = 0
            if len(self._kept) < self.max_codes:
                self._kept[code], self._stride[code] = [], 1
        self.counts[code] = rank + 1
        if code not in self._kept:  # counted, named on the page, never embedded
            return
        if rank % self._stride[code] == 0:
            self._kept[code].append((index, rank, item_row(result)))
            self._total += 1
            while self._total > self.limit:
                biggest = max(self._kept, key=lambda c: len(self._kept[c]))
                if len(self._kept[biggest]) < 2:  # one row per code: a code's first item always stays
                    break
                self._thin(biggest)

    def _thin(self, code: str) -> None:
        stride = self._stride[code] = 2 * self._stride[code]
        kept = [k for k in self._kept[code] if k[1] % stride == 0]
        self._total -= len(self._kept[code]) - len(kept)
        self._kept[code] = kept

    def rows(self) -> tuple[list[Any], ...]:
        return tuple(row for _, _, row in sorted(k for kept in self._kept.values() for k in kept))

    def sampled(self) -> bool:
        return self._total < self.n

    def left_out(self) -> dict[str, int]:
        """The codes with no row in the table (beyond the first ``max_codes``), with their item counts."""
        return {code: count for code, count in self.counts.items() if code not in self._kept}


def summary_disagrees(summary: Mapping[str, Any], sample: ItemSample) -> tuple[str, ...]:
    """A warning for each figure of summary.json that results.jsonl does not bear out.

    The page's pass rate and code bars come from summary.json, its table from results.jsonl: a
    summary saying n = 100 beside 300 results (hand-edited, or the files of two runs) would show
    numbers that describe neither. Compared: n, passed, and the count of every code.
    """
    warnings = []
    n, passed = summary.get("n"), summary.get("passed")
    if n != sample.n:
        warnings.append(f"summary.json says n = {n:,} but results.jsonl holds {sample.n:,} items: the pass rate and "
                        "the code counts shown come from summary.json and do not describe these results")
    if passed != sample.passed:
        warnings.append(f"summary.json says {passed:,} passed but {sample.passed:,} items of results.jsonl have "
                        f"reward {PASS_REWARD:g}")
    if sample.uncounted:
        warnings.append(f"results.jsonl holds more than {MAX_COUNTED_CODES:,} distinct error codes; the items of the "
                        f"codes past them ({sample.uncounted:,}) are counted in n only, not code by code")
        return tuple(warnings)
    # Both of summary.json's tallies by code (checked for shape by formats.EVAL_SUMMARY): the bars show "breakdown".
    tallies: dict[str, dict[str, int]] = {}
    if "breakdown" in summary:
        tallies["breakdown"] = {str(r["code"]): r["count"] for r in summary["breakdown"]}
    if "counts" in summary:
        if tallies.get("breakdown") == dict(summary["counts"]):
            tallies = {"breakdown (and counts)": tallies["breakdown"]}
        else:
            tallies["counts"] = dict(summary["counts"])
    for key, claimed in tallies.items():
        wrong = sorted(((c, claimed.get(c, 0), sample.counts.get(c, 0)) for c in set(claimed) | set(sample.counts)
                        if claimed.get(c, 0) != sample.counts.get(c, 0)),
                       key=lambda w: (-abs(w[1] - w[2]), w[0]))  # the largest gap named first
        if wrong:
            named = "; ".join(f"{visible(c)}: {s:,} in summary.json, {r:,} in results.jsonl"
                              for c, s, r in wrong[:NAMED_CODES])
            more = f"; and {len(wrong) - NAMED_CODES:,} more codes" if len(wrong) > NAMED_CODES else ""
            warnings.append(f"summary.json's {key} by error code disagree with results.jsonl for "
                            f"{len(wrong):,} code(s): "
                            f"{named}{more}")
    return tuple(warnings)


def load_scoring(run: Path, kind: str) -> dict[str, Any]:
    sample = ItemSample()
    examples: dict[str, list[dict[str, Any]]] = {}
    for result in iter_results(run / "results.jsonl"):
        sample.add(result)
        code = result["details"]["error_code"]
        if code not in sample.counts:  # past MAX_COUNTED_CODES: counted in n only (and said so)
            continue
        bucket = examples.setdefault(code, [])
        if len(bucket) < EXAMPLES_PER_CODE:
            bucket.append(example_of(result))
    summary = read_checked_json(run / "summary.json", EVAL_SUMMARY if kind == "eval" else SELECTION_SUMMARY, "summary")
    return {"rows": sample.rows(), "n_items": sample.n, "item_counts": dict(sample.counts), "examples": examples,
            "summary": summary, "left_out": sample.left_out(), "uncounted": sample.uncounted,
            "warnings": summary_disagrees(summary, sample)}


def ci_bar(passed: int, n: int) -> str:
    lo, hi = wilson_interval(passed, n)
    rate = passed / n
    w, x0, pw = 440, 14, 400

    def px(v: float) -> str:
        return f"{x0 + v * pw:.1f}"

    ticks = "".join(
        f'<line x1="{px(t / 4)}" x2="{px(t / 4)}" y1="10" y2="30" class="grid"/>'
        f'<text x="{px(t / 4)}" y="44" text-anchor="middle" class="tick">{t * 25}%</text>' for t in range(5)
    )
    label = f"pass rate {percent(rate)}, 95% Wilson interval {percent(lo)} to {percent(hi)}"
    return (
        f'<svg class="cibar" viewBox="0 0 {w} 50" width="{w}" height="50" role="img" aria-label="{escape(label)}">'
        f"<title>{escape(label)}</title>{ticks}"
        f'<rect x="{x0}" y="16" width="{pw}" height="8" class="track"/>'
        f'<rect x="{px(lo)}" y="12" width="{(hi - lo) * pw:.1f}" height="16" class="ci"/>'
        f'<circle cx="{px(rate)}" cy="20" r="5" class="pt"/></svg>'
    )


def clustered_line(summary: Mapping[str, Any]) -> str | None:
    """The headline of a multi-sample course.eval run (None for any other run, or one whose fields do not fit)."""
    items, m, ci = summary.get("items"), summary.get("samples_per_item"), summary.get("pass_rate_ci95")
    if not (type(items) is int and type(m) is int and items > 0 and m > 0 and items * m == summary.get("n")
            and isinstance(ci, dict) and ci.get("method") == "item-clustered"
            and all(isinstance(ci.get(k), (int, float)) and not isinstance(ci.get(k), bool) for k in ("low", "high"))):
        return None
    return pass_at_1_line(summary["passed"], summary["n"], items, ci["low"], ci["high"])


def pass_rate(summary: Mapping[str, Any]) -> str:
    n = summary.get("n") or 0
    if not n:
        return '<p class="passrate">No items were scored.</p>'
    passed = summary["passed"]
    mean = summary.get("mean_reward")
    clustered = clustered_line(summary)
    if clustered is not None:  # a multi-sample run: the samples of an item are not independent
        return (
            f'<p class="passrate"><strong>{escape(clustered)}</strong></p>'
            + (f"<p>Mean reward {mean:.3f}. " if isinstance(mean, (int, float)) else "<p>")
            + "Several samples per item: the interval treats the items as the unit of sampling "
            "(course.lib.stats.clustered_interval); as if the samples were independent it would be too narrow. "
            "Compare runs with course.gate, which pairs the items.</p>"
        )
    return (
        f'<p class="passrate"><strong>{escape(pass_rate_line(passed, n))}</strong></p>'
        + ci_bar(passed, n)
        + (f"<p>Mean reward {mean:.3f}. " if isinstance(mean, (int, float)) else "<p>")
        + "The interval is the 95 % Wilson score interval (course.lib.stats.wilson_interval): the policy's true "
        "pass rate on items like these is plausibly anywhere inside it. Compare runs with course.gate.</p>"
    )


def render_example(ex: Mapping[str, Any]) -> str:
    """One item as course.inspect_run prints it: completion between ⟦ ⟧, every invisible character escaped."""
    extracted = "nothing" if ex["extracted"] is None else ex["extracted"]
    pairs = [("expected", escape(ex["expected"])), ("extracted", escape(extracted)), ("reason", escape(ex["reason"]))]
    completion = ex["completion"]
    if isinstance(completion, str):
        length = ex["length"]
        shown = visible(completion, break_lines=True, limit=COMPLETION_LIMIT)
        if length is not None and length > COMPLETION_LIMIT:
            # the stored copy is cut; say how long the real one is
            shown = shown.rsplit("… [", 1)[0] + f"… [{length - COMPLETION_LIMIT} more characters]"
        pairs.append(("completion", f'<pre class="completion">⟦{escape(shown)}⟧</pre>'))
        if length is not None and length > COMPLETION_LIMIT:
            pairs.append(("length", f'<span class="bad">{length:,} characters; the first {COMPLETION_LIMIT} are '
                                    'shown</span>'))
        names = legend(completion[:COMPLETION_LIMIT])
        if names:
            pairs.append(("characters", "<br>".join(escape(name) for name in names)))
    else:
        not_text = f"not text ({type(completion).__name__})"
        pairs.append(("completion", "none" if completion is None else escape(not_text)))
    return (f'<div class="ex"><div class="exid">{escape(visible(str(ex["id"])))} (reward {escape(ex["reward"])})</div>'
            f'{dl(pairs)}</div>')


def taxonomy(run: RunData, prefix: str) -> str:
    summary = run.summary or {}
    n = summary.get("n") or 0
    rows = summary.get("breakdown") or []
    if not n or not rows:
        return ""
    top = max(r["count"] for r in rows)
    out = ['<div class="taxonomy">']
    for i, r in enumerate(rows):
        code = str(r["code"])
        share = r["count"] / n
        examples = run.examples.get(code, [])
        cls = "ok" if code == "ok" else "fail"
        body = "".join(render_example(x) for x in examples)
        more = r["count"] - len(examples)
        if more > 0 and (code in run.left_out or code not in run.item_counts):  # no row of it in the table
            inspect_command = command(
                ["python", "-m", "course.inspect_run", "--run", run.path, "--code", code, "--show", "20"]
            )
            body += (f'<p class="more">… and {more:,} more item(s) with this code, not in the table below (see its '
                     f'note): <code>{escape(inspect_command)}</code></p>')
        elif more > 0:
            body += f'<p class="more">… and {more:,} more item(s) with this code: filter the table below by code.</p>'
        out.append(
            f'<details class="bar {cls}" id="{prefix}-code-{i}"><summary>'
            f'<span class="code">{escape(code)}</span>'
            f'<span class="track"><span class="fill" style="width:{100 * r["count"] / top:.1f}%"></span></span>'
            f'<span class="num">{r["count"]:,} ({escape(percent(share))})</span>'
            f'<span class="meaning">{escape(r.get("meaning", ERROR_CODES.get(code, "")))}</span></summary>'
            f'{body}</details>'
        )
    out.append("</div>")
    return ("<h3>Outcomes by error code</h3><p class=\"hint\">Each bar opens its first examples "
            f"(up to {EXAMPLES_PER_CODE}), completions shown as course.inspect_run shows them: ⟨\\n⟩ newline, "
            "⟨\\t⟩ tab, ⟨U+XXXX⟩ any character outside printable ASCII, named underneath.</p>" + "".join(out))


COLUMNS = (("id", 0), ("expected", 1), ("extracted", 2), ("code", 3), ("reason", 4), ("completion", 6))


def row_cells(row: Sequence[Any]) -> str:
    cells = []
    for name, i in COLUMNS:
        v = row[i]
        if name == "extracted" and v is None:
            v = "nothing"
        elif name == "completion":
            v = "none" if v is None else "⟦" + v + "⟧"
        cls = ' class="pass"' if name == "code" and row[5] else (' class="fail"' if name == "code" else "")
        cells.append(f"<td{cls}>{escape('' if v is None else v)}</td>")
    return "<tr>" + "".join(cells) + "</tr>"


def sample_note(run: RunData) -> str:
    """What the item table holds when it is not every item: how the rows were chosen, every code it
    leaves out named with its count, and how to see every item."""
    if len(run.rows) == run.n_items:
        return ""
    left = run.left_out
    left_items = sum(left.values()) + run.uncounted
    parts = [f"This table holds {len(run.rows):,} of the run's {run.n_items:,} items."]
    if len(run.rows) < run.n_items - left_items:
        parts.append(
            f"A page holds at most {TABLE_ROWS:,} rows (every item of a larger run would make it too heavy for a "
            "browser): rare outcome codes keep all their items, the most frequent ones an evenly spaced subset "
            "(every 2nd, 4th, 8th... item of the code, in dataset order), so the rows span the whole dataset."
        )
    if left or run.uncounted:
        order = ordered_codes(left)
        named = ", ".join(f"{visible(c)} ({left[c]:,})" for c in order[:NAMED_CODES])
        more = f" and {len(order) - NAMED_CODES:,} more codes" if len(order) > NAMED_CODES else ""
        past = (f"; and {run.uncounted:,} items of codes past the first {MAX_COUNTED_CODES:,} distinct ones, not "
                "counted code by code") if run.uncounted else ""
        parts.append(
            f"Left out entirely: {left_items:,} items of the {len(left):,} codes past the first {MAX_TABLE_CODES:,} "
            f"(a page lists at most that many codes): {named}{more}{past}."
        )
    parts.append("The pass rate above is over every item, and the code list below gives both figures for each code "
                 "it lists.")
    return (
        f'<p class="sample-note">{escape(" ".join(parts))} All items are in '
        f'<code>{escape(run.path)}/results.jsonl</code>, one '
        f"per line; the items of one code, with the scorer's details: "
        f"<code>python -m course.inspect_run --run {escape(run.path)} --code CODE --show 20</code>.</p>"
    )


def items_table(run: RunData, prefix: str) -> str:
    rows = run.rows
    if not rows:
        return ""
    counts = run.item_counts
    shown_per_code: dict[str, int] = {}
    for r in rows:
        shown_per_code[r[3]] = shown_per_code.get(r[3], 0) + 1
    codes = [c for c in ordered_codes(counts) if c in shown_per_code]

    def option(c: str) -> str:
        label = f"{counts[c]:,}" if shown_per_code[c] == counts[c] else f"{shown_per_code[c]:,} of {counts[c]:,}"
        return f'<option value="{escape(c)}">{escape(c)} ({label})</option>'

    options = "".join(option(c) for c in codes)
    head = "".join(f'<th data-col="{i}" scope="col">{escape(name)}</th>' for name, i in COLUMNS)
    first = "".join(row_cells(r) for r in rows[:PAGE_SIZE])
    shown = min(PAGE_SIZE, len(rows))
    of = (
        f"{len(rows):,} (dataset order)" if len(rows) == run.n_items
        else f"the {len(rows):,} in this table (dataset order)"
    )
    return (
        f'<h3>Items</h3>{sample_note(run)}<div class="items" id="{prefix}-items" data-src="{prefix}-data">'
        '<div class="controls" hidden><label>filter <input class="q" type="search" placeholder="id, answer, code, '
        'reason, completion text"></label> '
        f'<label>code <select class="code"><option value="">all</option>{options}</select></label> '
        '<label>outcome <select class="outcome"><option value="">all</option><option value="pass">pass</option>'
        '<option value="fail">fail</option></select></label> '
        '<button type="button" class="prev">previous</button> <button type="button" class="next">next</button> '
        '<span class="pageinfo"></span> <span class="hint">(click a column heading to sort)</span></div>'
        f'<p class="static-note">Items 1–{shown} of {of}. Filtering, sorting and paging need JavaScript.</p>'
        f'<table class="itemtable"><thead><tr>{head}</tr></thead><tbody>{first}</tbody></table></div>'
        '<script type="application/json" '
        f'id="{prefix}-data">{json_block({"rows": list(rows), "page": PAGE_SIZE})}</script>'
    )


def scoring_body(run: RunData, prefix: str, middle: str = "") -> str:
    """A scoring run's body: its result, then ``middle`` (a kind's own section), the taxonomy and the item table."""
    parts = [f'<div id="{prefix}-result">' + pass_rate(run.summary or {}) + "</div>"]
    if middle:
        parts.append(middle)
    parts.append(taxonomy(run, prefix))
    parts.append(items_table(run, prefix))
    return "".join(parts)


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.reporting.scoring_sections"))
