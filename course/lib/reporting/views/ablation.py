"""course.bandit_train --ablation: the baseline ablation's table (ablation.txt), shown as it is."""

from __future__ import annotations

from typing import Any

from course.lib.reporting.page_parts import RunData, RunKind, RunSource, View, escape, read_text


def _load(src: RunSource) -> dict[str, Any]:
    """The ablation's and the noise sweep's table: ``<kind>.txt``."""
    return {"texts": {f"{src.kind}.txt": read_text(src.run / f"{src.kind}.txt")}}


def _render(run: RunData, prefix: str) -> str:
    return "<h3>Baseline ablation</h3>" + "".join(f"<pre>{escape(t)}</pre>" for t in run.texts.values())


VIEW = View(RunKind("ablation", "Bandit baseline ablation", ("course.bandit_train",), mode="ablation"), _load, _render)


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.reporting.views.ablation"))
