"""course.llm.rl's runs: the same run as course.tinylm.rl's (course.lib.learning.rl_loop), under its own title."""

from __future__ import annotations

from dataclasses import replace

from course.lib.reporting.page_parts import RunKind
from course.lib.reporting.views.tinylm_rl import VIEW as TINYLM_RL

VIEW = replace(TINYLM_RL, kind=RunKind("llm_rl", "Real LLM RL", ("course.llm.rl",)))


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.reporting.views.llm_rl"))
