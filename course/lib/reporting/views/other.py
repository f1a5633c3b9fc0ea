"""Any other run directory with a manifest.json: the manifest (in the header) and summary.json as it is."""

from __future__ import annotations

import json
from typing import Any

from course.lib.records.jsonl import read_json
from course.lib.reporting.page_parts import RunData, RunKind, RunSource, View, escape


def _load(src: RunSource) -> dict[str, Any]:
    return {"summary": read_json(src.run / "summary.json", "summary")} if (src.run / "summary.json").is_file() else {}


def _render(run: RunData, prefix: str) -> str:
    if run.summary is not None:
        return ("<details open><summary>summary.json</summary>"
                f"<pre>{escape(json.dumps(run.summary, ensure_ascii=False, sort_keys=True, indent=2))}</pre></details>")
    return "<p>No view for this kind of run yet; its manifest is above.</p>"


VIEW = View(RunKind("other", "Run", ()), _load, _render)


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.reporting.views.other"))
