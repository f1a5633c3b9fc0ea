"""The kinds of run directory the course writes: which tool writes which kind, and what the page calls it.

One entry per kind. ``course.report`` draws a kind with the loader and the view registered for it in
``course.lib.reporting.html`` (``VIEWS``; a test checks that every kind here has one); every tool that
writes a run of a kind listed here ends with a "View it:" line (``course.cli``), and a test walks the tool
list (``course.lib.toolbox``) so that no tool writing a run directory is left out. Small on purpose:
the command line and the inspector need these names, not the page code. Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RunKind:
    """One kind of run directory: its name, the page's title for it, the tools whose manifests name it."""

    name: str
    label: str
    tools: tuple[str, ...]


RUN_KINDS: tuple[RunKind, ...] = (
    RunKind("eval", "Evaluation", ("course.eval",)),
    RunKind("selection", "Selection (best-of-N)", ("course.selection_demo",)),
    RunKind("bandit", "Bandit (REINFORCE)", ("course.bandit_train",)),
    RunKind("toy_mdp", "Two-step MDP", ("course.toy_mdp",)),
    RunKind("kl", "KL trade-off", ("course.kl_tradeoff_demo",)),
    RunKind("tinylm_rl", "Tiny LM RL", ("course.tinylm.rl",)),
    RunKind("llm_rl", "Real LLM RL", ("course.llm.rl",)),
    RunKind("sweep", "Beta sweep", ("course.tinylm.sweep",)),
)
# Not written by a tool of its own: bandit_train --ablation and --noise-sweep (the manifest's mode), and anything
# unknown.
DERIVED_KINDS: tuple[RunKind, ...] = (
    RunKind("ablation", "Bandit baseline ablation", ()),
    RunKind("noise_sweep", "Bandit reward-noise sweep", ()),
    RunKind("other", "Run", ()),
)
BANDIT_MODES = ("ablation", "noise_sweep")  # course.bandit_train's manifest `mode` values that are kinds of their own

KIND_LABEL: dict[str, str] = {kind.name: kind.label for kind in RUN_KINDS + DERIVED_KINDS}
TOOL_KIND: dict[str, str] = {tool: kind.name for kind in RUN_KINDS for tool in kind.tools}
REPORTABLE_TOOLS = frozenset(TOOL_KIND)  # manifests' `tool` values the page knows how to draw
RL_KINDS = frozenset({"tinylm_rl", "llm_rl"})  # course.lib.learning.rl_loop's runs, whichever policy


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.reporting.run_kinds"))
