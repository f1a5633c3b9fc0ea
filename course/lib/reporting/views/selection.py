"""course.selection_demo's runs: the scoring sections with best-of-N's own (pass@1, best-of-N, the pass@k curves)."""

from __future__ import annotations

from typing import Any

from course.lib.evaluation.summary import pass_rate_line, points
from course.lib.reporting.page_parts import (
    TABLE_COMPLETION_LIMIT,
    RunData,
    RunKind,
    RunSource,
    View,
    dl,
    escape,
    numbers_table,
    pct,
)
from course.lib.reporting.scoring_sections import load_scoring, scoring_body
from course.lib.reporting.svg import Series, line_chart
from course.lib.visible import visible


def _load(src: RunSource) -> dict[str, Any]:
    return load_scoring(src.run, src.kind)


def _selection(run: RunData) -> str:
    s = run.summary or {}
    out = ["<h3>Selection: more sampling compute, same policy</h3>"]
    p1, bn, gain = s.get("pass_at_1"), s.get("best_of_n"), s.get("selection_gain")
    lines = []
    if isinstance(p1, dict) and p1.get("n"):
        lines.append(escape(pass_rate_line(p1["passed"], p1["n"], "pass@1 (sample 0)")))
    if isinstance(bn, dict) and bn.get("n"):
        lines.append(escape(pass_rate_line(bn["passed"], bn["n"], f"best-of-{s.get('N', '?')}")))
    if isinstance(gain, dict):
        lines.append(escape(f"gain {points(gain.get('pass_rate', 0), signed=True)} points: {gain.get('label', '')}; "
                       f"{gain.get('items_rescued', 0)} items rescued, {gain.get('items_lost', 0)} lost"))
    if lines:
        out.append("<p>" + "<br>".join(lines) + "</p>")
    curve = s.get("pass_at_k_curve")
    if isinstance(curve, dict) and curve.get("rows"):
        rows = curve["rows"]
        keys = (("pass_at_k", "pass@k (unbiased)", False), ("pass_hat_k", "pass^k (all k pass)", False),
                ("first_k", "first-k (stored order)", True), ("plug_in", "plug-in 1-(1-c/n)^k (biased)", True))
        series = [Series(label, tuple((r["k"], r[key]) for r in rows), dashed=dashed, markers=True)
                  for key, label, dashed in keys if all(key in r for r in rows)]
        out.append(line_chart(series, title=f"pass@k, pass^k and first-k over k (from {curve.get('samples_per_item')} "
                                            "samples per item)",
                              x_label="k (samples)", y_label="share of items", y_range=(0.0, 1.0)))
        out.append(numbers_table(["k"] + [k for k, _, _ in keys],
                                  [[r["k"]] + [r.get(k) for k, _, _ in keys] for r in rows]))
        est = curve.get("estimators")
        if isinstance(est, dict):
            out.append(dl([(k, escape(v)) for k, v in sorted(est.items())]))
    still = s.get("still_failing")
    if isinstance(still, dict) and still.get("count"):
        out.append(f"<p>{still['count']} items ({escape(pct(still.get('share')))}) have no passing sample "
                   "among the N; first examples:</p>")
        body = "".join(
            f"<tr><td>{escape(x.get('id'))}</td><td>{escape(x.get('expected'))}</td>"
            f"<td>{escape(', '.join(map(str, x.get('codes', []))))}</td>"
            f"<td><code>⟦{escape(visible(x.get('chosen_completion'), limit=TABLE_COMPLETION_LIMIT))}⟧</code></td>"
            f"<td>{escape(x.get('first_passing_index'))}</td></tr>" for x in still.get("examples", [])
        )
        out.append("<table><thead><tr><th>id</th><th>expected</th><th>codes of the N</th><th>chosen completion</th>"
                   f"<th>first passing sample in the pack</th></tr></thead><tbody>{body}</tbody></table>")
    return "".join(out)


def _render(run: RunData, prefix: str) -> str:
    return scoring_body(run, prefix, f'<div id="{prefix}-selection">' + _selection(run) + "</div>")

VIEW = View(RunKind("selection", "Selection (best-of-N)", ("course.selection_demo",)), _load, _render)


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.reporting.views.selection"))
