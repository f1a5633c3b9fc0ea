"""course.tinylm.sweep's runs: the beta sweep's table (sweep.md), shown as it is."""

from __future__ import annotations

from typing import Any

from course.lib.reporting.page_parts import RunData, RunKind, RunSource, View, escape, read_text


def _load(src: RunSource) -> dict[str, Any]:
    return {"texts": {"sweep.md": read_text(src.run / "sweep.md")} if (src.run / "sweep.md").is_file() else {}}


def _render(run: RunData, prefix: str) -> str:
    return "<h3>Beta sweep</h3>" + "".join(f"<pre>{escape(t)}</pre>" for t in run.texts.values())


VIEW = View(RunKind("sweep", "Beta sweep", ("course.tinylm.sweep",)), _load, _render)


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.reporting.views.sweep"))
