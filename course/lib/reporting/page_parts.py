"""The report page's building blocks: what a run is to the page, how a view is declared, and the small HTML helpers.

``RunKind`` names a kind of run directory (the tools whose manifests name it, the page's title for it);
``View`` is how the page reads and draws one kind (declared once per kind in ``course.lib.reporting.views``);
``RunData`` is one run directory read once, rendered by pure functions. Every piece of run data goes
through ``escape``. Standard library only.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from html import escape as escape_html
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from course.lib.evaluation.summary import percent
from course.lib.records.jsonl import open_input
from course.lib.records.shapes import Shape

COMPLETION_LIMIT = 600  # characters of a completion shown in an example, as course.inspect_run shows
TABLE_COMPLETION_LIMIT = 120  # per row in the item table (the examples show more)
MAX_CHART_POINTS = 600  # longer logs are thinned evenly for drawing (the last point always kept)


@dataclass(frozen=True)
class RunData:
    """Everything the page shows about one run directory (read once, rendered by pure functions)."""

    path: str
    kind: str
    manifest: dict[str, Any]
    summary: dict[str, Any] | None = None
    # scoring runs: the item table's rows, [id, expected, extracted, code, reason, passed, completion, length],
    # in dataset order: every item, or an evenly spread sample of each code's items (ItemSample)
    rows: tuple[list[Any], ...] = ()
    n_items: int = 0  # scoring runs: the items in results.jsonl (len(rows) unless the table is a sample)
    item_counts: dict[str, int] = field(default_factory=dict)  # scoring runs: items per outcome code, all of them
    # scoring runs: codes with no row in the item table, their counts
    left_out: dict[str, int] = field(default_factory=dict)
    uncounted: int = 0  # scoring runs: items of codes past MAX_COUNTED_CODES (in n_items, in no code's count)
    examples: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    records: tuple[dict[str, Any], ...] = ()  # bandit / toy_mdp / tinylm.rl logs
    table: tuple[dict[str, str], ...] = ()  # kl_tradeoff.csv
    texts: dict[str, str] = field(default_factory=dict)  # small text files shown as they are
    sub_runs: tuple["RunData", ...] = ()  # tinylm.rl: its course.eval runs
    gate: dict[str, Any] | None = None  # tinylm.rl: the holdout gate (course.lib.evaluation.locked_room.gate_view)
    files: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()  # e.g. results.jsonl edited after the run


@dataclass(frozen=True)
class RunKind:
    """One kind of run directory: its name, the page's title for it, the tools whose manifests name it.

    ``mode``: the manifest's ``mode`` that makes a run of those tools this kind rather than the tool's own
    (course.bandit_train's ablation and noise sweep)."""

    name: str
    label: str
    tools: tuple[str, ...]
    mode: str | None = None


@dataclass(frozen=True)
class RunSource:
    """What a view's loader reads from: the run directory, its manifest, the path the page shows, and the
    reader of a run inside it (a learning run's course.eval sub-runs), passed in by the page."""

    run: Path
    kind: str
    manifest: Mapping[str, Any]
    path: str
    load_run: Callable[..., RunData]


@dataclass(frozen=True)
class View:
    """How the page shows one kind of run, declared in one module of ``course.lib.reporting.views``."""

    kind: RunKind
    load: Callable[[RunSource], dict[str, Any]]  # the run's files -> RunData fields (shapes checked on the way in)
    render: Callable[[RunData, str], str]  # (run, its section's id) -> HTML
    manifest_shape: Shape | None = None  # what the manifest must hold where the view draws from it
    holdout_gate: bool = False  # a learning run: course.report decides the gate on its two holdout sub-runs


# ===========================================================================
# Small HTML helpers (every piece of data goes through escape())
# ===========================================================================
def escape(value: Any) -> str:
    """Escape any value for HTML text or a quoted attribute."""
    return escape_html(str(value), quote=True)


def json_block(obj: Any) -> str:
    """JSON safe inside <script type="application/json">: no '<', '>' or '&' survives, so no '</script>'."""
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    return (text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def show(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def pct(x: float | None) -> str:
    return "–" if x is None else percent(x)


def num(x: Any, digits: int = 4) -> str:
    if isinstance(x, bool) or x is None:
        return str(x)
    if isinstance(x, float):
        return f"{x:.{digits}g}"
    return str(x)


def dl(pairs: Iterable[tuple[str, str]], cls: str = "kv") -> str:
    return f'<dl class="{cls}">' + "".join(f"<dt>{escape(k)}</dt><dd>{v}</dd>" for k, v in pairs) + "</dl>"


def thin(points: Sequence[tuple[float, float]], limit: int = MAX_CHART_POINTS) -> tuple[tuple[float, float], ...]:
    if len(points) <= limit:
        return tuple(points)
    step = math.ceil(len(points) / limit)
    kept = list(points[::step])
    if kept[-1] != points[-1]:
        kept.append(points[-1])
    return tuple(kept)


def numbers_table(headers: Sequence[str], rows: Iterable[Sequence[Any]], summary: str = "the numbers") -> str:
    body = "".join("<tr>" + "".join(f"<td>{escape(num(c))}</td>" for c in row) + "</tr>" for row in rows)
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    return (f'<details class="numbers"><summary>{escape(summary)}</summary>'
            f'<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></details>')



def read_text(path: Path, limit: int = 200_000) -> str:
    with open_input(path, "a text file") as f:  # the one opener: a FIFO or a device is refused, never waited on
        data = f.read(limit + 1)
    text = data[:limit].decode("utf-8", errors="replace")
    return text + (f"\n… [file cut at {limit} bytes]" if len(data) > limit else "")


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.reporting.page_parts"))
