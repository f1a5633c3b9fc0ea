"""course.bandit_train --noise-sweep: the reward-noise sweep's table (noise_sweep.txt), shown as it is."""

from __future__ import annotations

from course.lib.reporting.page_parts import RunData, RunKind, View, escape
from course.lib.reporting.views.ablation import VIEW as ABLATION


def _render(run: RunData, prefix: str) -> str:
    return "<h3>Reward-noise sweep</h3>" + "".join(f"<pre>{escape(t)}</pre>" for t in run.texts.values())


VIEW = View(RunKind("noise_sweep", "Bandit reward-noise sweep", ("course.bandit_train",), mode="noise_sweep"),
            ABLATION.load, _render)


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.reporting.views.noise_sweep"))
