"""The gate's decision on the page, as course.gate reaches it.

The decision comes in as a plain dict (``course.lib.evaluation.locked_room.gate_view``): the library never
imports a tool."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from course.lib.evaluation.summary import pass_rate_line, points
from course.lib.reporting.page_parts import dl, escape


def _locked_row(row: Mapping[str, Any]) -> str:
    """One Locked Room field: the same in both runs, different, or not compared here."""
    if not row.get("compared", True):
        sym, rcls = "–", "skip"
    elif row.get("same"):
        sym, rcls = "✓", "same"
    else:
        sym, rcls = "✗", "differs"
    return (f'<tr class="{rcls}"><td class="sym">{sym}</td><td><code>{escape(row["field"])}</code></td>'
            f'<td><code>{escape(row["baseline"])}</code></td><td><code>{escape(row["candidate"])}</code></td>'
            f'<td>{escape(row["meaning"])}'
            f'{" (not compared here)" if not row.get("compared", True) else ""}</td></tr>')


def _bar_rows(result: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The change, the bar it had to clear and whether significance was required: both paired views show them."""
    delta = result.get("delta")
    return [("change (candidate − baseline)",
             escape(points(delta, signed=True, unit=" points")) if delta is not None else "–"),
            ("the bar (--min-delta)", escape(points(result["min_delta"], signed=True, unit=" points"))),
            ("require significance", escape(result.get("require_significance")))]


def _test_rows(test: str, p: float, interval: str, ci: Sequence[float]) -> list[tuple[str, str]]:
    """The noise test's p (highlighted) and its interval for the change: both paired views show them."""
    lo, hi = ci
    return [(test, f'<strong class="mcnemar">{escape(format(p, ".3g"))}</strong>'),
            (interval, escape(f"{points(lo, signed=True)} to {points(hi, signed=True)} points"))]


def render_gate(gate: Mapping[str, Any], anchor: str) -> str:
    """The gate's decision as course.gate reaches it: Locked Room fields, the paired table, McNemar p, the decision."""
    title = f"Gate: candidate {gate.get('candidate')} against baseline {gate.get('baseline')}"
    if gate.get("error"):
        return (f'<section class="gate" id="{escape(anchor)}"><h2>{escape(title)}</h2>'
                f'<p class="bad">The gate cannot compare these runs: {escape(gate["error"])}</p></section>')
    result = gate["result"]
    decision = str(result.get("decision"))
    cls = "accept" if decision == "ACCEPT" else "reject"
    out = [f'<section class="gate" id="{escape(anchor)}"><h2>{escape(title)}</h2>',
           f'<p class="decision {cls}">'
           + "<br>".join(escape(line) for line in gate.get("decision_lines", [f"Decision: {decision}"]))
           + "</p>",
           "<h3>Locked Room</h3><table class=\"locked\"><thead><tr><th></th><th>field</th><th>baseline</th>"
           "<th>candidate</th>"
           "<th>what it means</th></tr></thead><tbody>"]
    out.extend(_locked_row(row) for row in gate.get("rows", []))
    out.append("</tbody></table>")
    for text in gate.get("explanations", []):
        out.append(f'<p class="bad">→ {escape(text)}.</p>')
    base, cand = result.get("baseline", {}), result.get("candidate", {})
    out.append("<p>" + "<br>".join(
        escape(pass_rate_line(x["passed"], x["n"], label))
        for label, x in (("baseline", base), ("candidate", cand)) if x.get("n")) + "</p>")
    t = result.get("paired")
    if t and t.get("method") == "per-item pass rates":  # multi-sample runs: the items are the unit
        facts = [("shared items", escape(t["shared"])),
                 ("items whose pass rate is higher / lower / equal",
                  escape(f"{t['higher']} / {t['lower']} / {t['equal']}")), *_bar_rows(result)]
        if t.get("shared"):
            facts += _test_rows("sign-flip test over items, p", t["p_value"],
                                "95% interval for the change (from the same test)", t["difference_ci95"])
        out.append("<h3>Paired over the shared items (each item's pass rate)</h3>" + dl(facts))
        if gate.get("noise"):
            out.append(f"<p>{escape(gate['noise'])}</p>")
    elif t:
        out.append(
            "<h3>Paired over the shared items</h3><table class=\"paired\"><thead><tr><th></th><th>candidate passes</th>"
            "<th>candidate fails</th></tr></thead><tbody>"
            f"<tr><th>baseline passes</th><td>{t['both']} (both)</td><td>{t['b']} (b)</td></tr>"
            f"<tr><th>baseline fails</th><td>{t['c']} (c)</td><td>{t['neither']} (neither)</td></tr></tbody></table>")
        facts = [("shared items", escape(t["shared"])), *_bar_rows(result)]
        if t.get("shared"):
            facts += _test_rows("exact McNemar p", t["mcnemar_p"], "95% interval for the change (Newcombe)",
                                t["difference_ci95"])
        if t.get("only_in_baseline") or t.get("only_in_candidate"):
            facts.append(("ids in one run only", escape(f"{t['only_in_baseline']} baseline, "
                                                   f"{t['only_in_candidate']} candidate")))
        out.append(dl(facts))
        if gate.get("noise"):
            out.append(f"<p>{escape(gate['noise'])}</p>")
    else:
        out.append("<p>No delta is computed: the Locked Room is violated, so the pass rates are not comparable.</p>")
    if gate.get("text"):
        out.append(f"<details><summary>as course.gate prints it</summary><pre>{escape(gate['text'])}</pre></details>")
    out.append("</section>")
    return "".join(out)


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.reporting.gate_section"))
