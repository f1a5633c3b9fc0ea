"""course.eval's runs: the scoring sections (pass rate, failure taxonomy, item table)."""

from __future__ import annotations

from typing import Any

from course.lib.reporting.page_parts import RunData, RunKind, RunSource, View
from course.lib.reporting.scoring_sections import load_scoring, scoring_body


def _load(src: RunSource) -> dict[str, Any]:
    return load_scoring(src.run, src.kind)


def _render(run: RunData, prefix: str) -> str:
    return scoring_body(run, prefix)

VIEW = View(RunKind("eval", "Evaluation", ("course.eval",)), _load, _render)


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.reporting.views.eval"))
