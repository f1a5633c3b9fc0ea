"""The report's views, one module per kind of run directory, and the one registry built from them.

Each module here declares ``VIEW``: a ``course.lib.reporting.page_parts.View`` holding its run kind (name, the
page's title, the tools whose manifests name it, and the manifest ``mode`` that makes it a kind of its own),
its loader, its manifest shape and its renderer. ``discover`` imports every module of the package and
collects them, so a new kind of run is one new module here and nothing else. Every table the rest of the
course needs about run kinds (``KIND_LABEL``, ``TOOL_KIND``, ``REPORTABLE_TOOLS``, ``RL_KINDS``) is derived
from the views, never declared a second time. Standard library only.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any, Iterable, Mapping

from course.errors import CourseError
from course.lib.reporting.page_parts import RunKind, View

FALLBACK = "other"  # the kind of any run no view claims


def discover(paths: Iterable[str]) -> dict[str, View]:
    """Every module's ``VIEW`` under the package ``paths``, by kind name, in module-name order.

    Two views of one kind name, or two claiming the same tool and mode, are a programming error."""
    found: dict[str, View] = {}
    claims: dict[tuple[str, str | None], str] = {}
    for info in sorted(pkgutil.iter_modules(list(paths)), key=lambda m: m.name):
        view = getattr(importlib.import_module(f"{__name__}.{info.name}"), "VIEW", None)
        if not isinstance(view, View):
            raise CourseError(f"{__name__}.{info.name}: declares no VIEW (a course.lib.reporting.page_parts.View)")
        if view.kind.name in found:
            raise CourseError(f"{__name__}.{info.name}: a second view of the run kind {view.kind.name!r}")
        for tool in view.kind.tools:
            taken = claims.setdefault((tool, view.kind.mode), view.kind.name)
            if taken != view.kind.name:
                raise CourseError(f"{__name__}.{info.name}: {tool} (mode {view.kind.mode}) is already {taken!r}'s")
        found[view.kind.name] = view
    if FALLBACK not in found:
        raise CourseError(f"{__name__}: no view of the fallback kind {FALLBACK!r}")
    return found


VIEWS: dict[str, View] = discover(__path__)


def kind_of(manifest: Mapping[str, Any]) -> str:
    """The kind of run a manifest names: its tool's kind, or the kind its ``mode`` selects; else ``other``."""
    tool, mode = str(manifest.get("tool")), manifest.get("mode")
    claiming = [view.kind for view in VIEWS.values() if tool in view.kind.tools]
    for kind in claiming:
        if kind.mode is not None and kind.mode == mode:
            return kind.name
    return next((kind.name for kind in claiming if kind.mode is None), FALLBACK)


def view_for(kind: str) -> View:
    """The view that draws a kind (the fallback view for a kind no module declares)."""
    return VIEWS.get(kind, VIEWS[FALLBACK])


def label_of(kind: str) -> str:
    """The page's title for a kind of run."""
    return view_for(kind).kind.label


KINDS: tuple[RunKind, ...] = tuple(view.kind for view in VIEWS.values())
KIND_LABEL: dict[str, str] = {kind.name: kind.label for kind in KINDS}
# A tool's own kind (not the kinds a manifest mode selects): what its run directories are, unless told otherwise.
TOOL_KIND: dict[str, str] = {tool: kind.name for kind in KINDS if kind.mode is None for tool in kind.tools}
REPORTABLE_TOOLS = frozenset(TOOL_KIND)  # manifests' `tool` values the page knows how to draw
RL_KINDS = frozenset(name for name, view in VIEWS.items() if view.holdout_gate)  # Loop C's runs, whichever policy


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.reporting.views"))
