"""course.toy_mdp's runs: the reward table, expected return and each decision's probability over episodes."""

from __future__ import annotations

from typing import Any

from course.lib.records.formats import TOY_MDP_EPISODE, TOY_MDP_MANIFEST, read_log
from course.lib.reporting.page_parts import RunData, RunKind, RunSource, View, escape, num, thin
from course.lib.reporting.svg import Series, line_chart


def _load(src: RunSource) -> dict[str, Any]:
    return {"records": read_log(src.run / "toy_mdp_log.jsonl", TOY_MDP_EPISODE)}


def _render(run: RunData, prefix: str) -> str:
    recs = [r for r in run.records if "pi1" in r]
    if not recs:
        return "<p>The log holds no episodes.</p>"
    m = run.manifest
    out = []
    rewards = m.get("rewards")
    if isinstance(rewards, list) and len(rewards) == 2:
        out.append("<table class=\"small\"><caption>Reward R(a1, a2), given only at the "
                   "end</caption><thead><tr><th></th>"
                   "<th>a2 = 0</th><th>a2 = 1</th></tr></thead><tbody>"
                   + "".join(f"<tr><th>a1 = {i}</th>" + "".join(f"<td>{escape(num(v))}</td>" for v in row) + "</tr>"
                             for i, row in enumerate(rewards)) + "</tbody></table>")
    last = recs[-1]
    j = thin([(r["episode"], r["expected_return"]) for r in recs]) + (
        (last["episode"], last.get("expected_return_after", last["expected_return"])),)
    out.append(line_chart(
        [Series("exact J(θ) (expected return)", j),
         Series("sampled return G", thin([(r["episode"], r["return"]) for r in recs]), line=False)],
        title="Expected return over episodes", x_label="episode", y_label="return", y_range=(0.0, 1.0)))
    series = [Series("π1(a1=1): first decision", thin([(r["episode"], r["pi1"][1]) for r in recs]))]
    for a1 in (0, 1):
        series.append(
            Series(f"π2(a2=0 | a1={a1})", thin([(r["episode"], r["pi2"][a1][0]) for r in recs]), dashed=True)
        )
    out.append(line_chart(series, title="Probabilities over episodes: the first action learns from the final reward",
                          x_label="episode", y_label="probability", y_range=(0.0, 1.0)))
    res = m.get("result") or {}
    if res:
        out.append(f"<p>Expected return {num(res.get('initial_expected_return'))} → "
                   f"{num(res.get('final_expected_return'))} "
                   f"after {len(recs)} episodes (lr {escape(m.get('lr'))}, baseline {escape(m.get('baseline'))}).</p>")
    return "".join(out)


VIEW = View(RunKind("toy_mdp", "Two-step MDP", ("course.toy_mdp",)), _load, _render, TOY_MDP_MANIFEST)


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.reporting.views.toy_mdp"))
