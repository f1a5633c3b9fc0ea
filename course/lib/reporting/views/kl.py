"""course.kl_tradeoff_demo's runs: the KL frontier and each completion's probability at the optimum, by beta."""

from __future__ import annotations

import math
from typing import Any, Mapping

from course.lib.records.formats import KL_MANIFEST, read_kl_table
from course.lib.reporting.page_parts import RunData, RunKind, RunSource, View, numbers_table
from course.lib.reporting.svg import Series, line_chart
from course.lib.visible import visible


def _load(src: RunSource) -> dict[str, Any]:
    return {"table": read_kl_table(src.run / "kl_tradeoff.csv")}


def _render(run: RunData, prefix: str) -> str:
    rows = run.table
    if not rows:
        return "<p>kl_tradeoff.csv is empty.</p>"

    def f(row: Mapping[str, str], key: str) -> float:
        try:
            return float(row[key])
        except (KeyError, ValueError):
            return math.nan

    rows_sorted = sorted(rows, key=lambda r: f(r, "kl"))
    frontier = Series("closed-form optimum π ∝ π_ref·exp(r/β)",
                      tuple((f(r, "kl"), f(r, "expected_reward")) for r in rows_sorted),
                      markers=True, labels=tuple(f"β={r.get('beta')}" for r in rows_sorted))
    out = [line_chart([frontier], title="The KL frontier: expected reward against KL(π‖π_ref)",
                      x_label="KL(π‖π_ref) in nats", y_label="E_π[r]", height=320)]
    cols = run.manifest.get("columns") or {}
    pcols = [k for k in rows[0] if k.startswith("p_")]
    betas = [r for r in rows if f(r, "beta") > 0]
    series = [Series(f"π({visible(str(cols.get(k, k)))})", tuple((f(r, "beta"), f(r, k)) for r in betas), markers=True)
              for k in pcols]
    out.append(line_chart(series, title="Probability of each completion at the optimum, by β", x_label="β",
                          y_label="probability", y_range=(0.0, 1.0), x_log=True, height=320))
    headers = list(rows[0].keys())
    out.append(numbers_table(headers, [[r[h] for h in headers] for r in rows], summary="kl_tradeoff.csv"))
    return "".join(out)


VIEW = View(RunKind("kl", "KL trade-off", ("course.kl_tradeoff_demo",)), _load, _render, KL_MANIFEST)


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.reporting.views.kl"))
