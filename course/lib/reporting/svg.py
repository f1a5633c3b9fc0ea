"""Charts as inline SVG text, with the standard library only (what ``course.report`` draws with).

A report must open offline in any browser without matplotlib, so its charts are
plain SVG strings: axes with "nice" ticks, one polyline (and optional markers)
per series, a legend, and vertical marks for events such as a Goodhart alarm.
Everything is escaped, so a label can hold any text. Same input => same bytes
(coordinates are rounded to 0.1 px).

    from course.lib.reporting.svg import Series, line_chart
    svg = line_chart([Series("J", ((0, 0.17), (30, 0.86)))], title="J over steps", x_label="step", y_label="J")
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape
from typing import Callable, Sequence

__all__ = ["Series", "Mark", "line_chart", "nice_ticks", "PALETTE"]

# Colour-blind-safe palette (Okabe-Ito), in the order series are drawn.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#F0E442", "#000000")


@dataclass(frozen=True)
class Series:
    """One line of a chart: ``points`` are (x, y); ``labels`` (optional) name each point on the chart."""

    label: str
    points: tuple[tuple[float, float], ...]
    color: str = ""
    dashed: bool = False
    markers: bool = False
    line: bool = True
    labels: tuple[str, ...] = ()


@dataclass(frozen=True)
class Mark:
    """A vertical line at ``x`` with a short label (e.g. the step a Goodhart alarm was raised)."""

    x: float
    label: str
    color: str = "#C00000"


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """About ``count`` round tick values covering [lo, hi].

    >>> nice_ticks(0, 1)
    [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    >>> nice_ticks(1, 60)
    [0.0, 20.0, 40.0, 60.0]
    """
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return [0.0, 1.0]
    if hi <= lo:
        hi = lo + 1.0
    raw = (hi - lo) / max(1, count)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    start = math.floor(lo / step) * step
    ticks = []
    t = start
    while t <= hi + step * 1e-9:
        ticks.append(round(t, 12) + 0.0)
        t += step
    if ticks[-1] < hi:
        ticks.append(round(ticks[-1] + step, 12))
    return ticks


def _fmt(v: float) -> str:
    if v != 0 and (abs(v) >= 1e5 or abs(v) < 1e-3):
        return f"{v:.0e}"
    return f"{v:.6g}"


def _n(v: float) -> str:
    """A coordinate, rounded so equal charts give equal bytes."""
    return f"{v:.1f}"


def _grid_svg(y_ticks: Sequence[float], py: Callable[[float], float], x_ticks: Sequence[float],
              x_span: tuple[float, float], x_log: bool, box: tuple[float, float, float, float]) -> list[str]:
    """The grid lines and tick labels (x ticks are already on the axis' scale: log10 of x when ``x_log``)."""
    (left, top, pw, ph), (x_lo, x_hi) = box, x_span
    out: list[str] = []
    for t in y_ticks:
        y = py(t)
        out.append(f'<line x1="{left}" x2="{left + pw}" y1="{_n(y)}" y2="{_n(y)}" class="grid"/>')
        out.append(f'<text x="{left - 6}" y="{_n(y + 4)}" text-anchor="end" class="tick">{escape(_fmt(t))}</text>')
    for t in x_ticks:
        x = left + (t - x_lo) / (x_hi - x_lo) * pw
        label = _fmt(10**t) if x_log else _fmt(t)
        out.append(f'<line x1="{_n(x)}" x2="{_n(x)}" y1="{top}" y2="{top + ph}" class="grid"/>')
        out.append(f'<text x="{_n(x)}" y="{top + ph + 16}" text-anchor="middle" class="tick">{escape(label)}</text>')
    return out


def _marks_svg(marks: Sequence[Mark], px: Callable[[float], float], top: float, ph: float, x_log: bool) -> list[str]:
    """A dashed vertical line and its label at each mark's x (a mark at x <= 0 has no place on a log scale)."""
    out: list[str] = []
    for m in marks:
        if x_log and m.x <= 0:
            continue
        x = px(m.x)
        out.append(f'<line x1="{_n(x)}" x2="{_n(x)}" y1="{top}" y2="{top + ph}" stroke="{m.color}" '
                   f'stroke-width="2" stroke-dasharray="6 3"><title>{escape(m.label)}</title></line>')
        out.append(f'<text x="{_n(x + 3)}" y="{top + 12}" fill="{m.color}" class="mark">{escape(m.label)}</text>')
    return out


def _series_svg(series: Sequence[Series], px: Callable[[float], float], py: Callable[[float], float],
                x_log: bool) -> list[str]:
    """Each series' line, markers and point labels, in chart coordinates (``px``, ``py``)."""
    out: list[str] = []
    for i, s in enumerate(series):
        color = s.color or PALETTE[i % len(PALETTE)]
        pts = [(px(x), py(y)) for x, y in s.points if math.isfinite(y) and (x > 0 or not x_log)]
        if s.line and len(pts) > 1:
            dash = ' stroke-dasharray="5 3"' if s.dashed else ""
            coords = " ".join(f"{_n(a)},{_n(b)}" for a, b in pts)
            out.append(f'<polyline points="{coords}" fill="none" stroke="{color}" stroke-width="1.8"{dash}>'
                       f"<title>{escape(s.label)}</title></polyline>")
        if s.markers or len(pts) == 1 or not s.line:
            for a, b in pts:
                out.append(f'<circle cx="{_n(a)}" cy="{_n(b)}" r="2.8" fill="{color}"/>')
        for (a, b), text in zip(pts, s.labels):
            out.append(f'<text x="{_n(a + 4)}" y="{_n(b - 4)}" class="pl">{escape(text)}</text>')
    return out


def _legend_svg(series: Sequence[Series], cols: int, left: float, pw: float, height: int) -> list[str]:
    """The legend under the plot, ``cols`` entries per row."""
    out: list[str] = []
    for i, s in enumerate(series):
        color = s.color or PALETTE[i % len(PALETTE)]
        col, row = i % cols, i // cols
        x0, y0 = left + col * (pw / cols), height + 10 + row * 16
        dash = ' stroke-dasharray="5 3"' if s.dashed else ""
        out.append(f'<line x1="{_n(x0)}" x2="{_n(x0 + 18)}" y1="{_n(y0 - 4)}" y2="{_n(y0 - 4)}" stroke="{color}" '
                   f'stroke-width="2.5"{dash}/>')
        out.append(f'<text x="{_n(x0 + 22)}" y="{_n(y0)}" class="leg">{escape(s.label)}</text>')
    return out


def line_chart(
    series: Sequence[Series],
    *,
    title: str,
    x_label: str,
    y_label: str,
    width: int = 760,
    height: int = 300,
    y_range: tuple[float, float] | None = None,
    x_log: bool = False,
    marks: Sequence[Mark] = (),
) -> str:
    """An SVG line chart. ``x_log`` puts x on a log10 scale (x must be > 0 there)."""
    left, right, top, bottom = 58, 16, 30, 40
    # legend columns: as many as the longest label allows (about 6.2 px per character at 11 px)
    longest = max((len(s.label) for s in series), default=0)
    cols = next((c for c in (3, 2) if (width - 74) / c - 24 >= longest * 6.2), 1)
    legend_h = 16 * ((len(series) + cols - 1) // cols) + 8
    total_h = height + legend_h
    pw, ph = width - left - right, height - top - bottom

    def tx(x: float) -> float:
        return math.log10(x) if x_log else x

    xs = [tx(x) for s in series for x, _ in s.points if (x > 0 or not x_log)]
    ys = [y for s in series for _, y in s.points if math.isfinite(y)]
    xs += [tx(m.x) for m in marks if (m.x > 0 or not x_log)]
    if not xs:
        xs = [0.0, 1.0]
    if not ys:
        ys = [0.0, 1.0]
    x_lo, x_hi = min(xs), max(xs)
    if x_log:
        x_ticks = [float(e) for e in range(math.floor(x_lo), math.ceil(x_hi) + 1)]
    else:
        x_ticks = nice_ticks(x_lo, x_hi)
    x_lo, x_hi = min(x_ticks[0], x_lo), max(x_ticks[-1], x_hi)
    if y_range is not None:
        y_lo, y_hi = y_range
        y_ticks = [t for t in nice_ticks(y_lo, y_hi) if y_lo - 1e-12 <= t <= y_hi + 1e-12]
    else:
        y_ticks = nice_ticks(min(ys), max(ys))
        y_lo, y_hi = y_ticks[0], y_ticks[-1]
    if x_hi == x_lo:
        x_hi = x_lo + 1
    if y_hi == y_lo:
        y_hi = y_lo + 1

    def px(x: float) -> float:
        return left + (tx(x) - x_lo) / (x_hi - x_lo) * pw

    def py(y: float) -> float:
        y = min(max(y, y_lo), y_hi)
        return top + (1 - (y - y_lo) / (y_hi - y_lo)) * ph

    out = [
        f'<svg class="chart" viewBox="0 0 {width} {total_h}" '
        f'width="{width}" height="{total_h}" role="img" aria-label="{escape(title)}">',
        f"<title>{escape(title)}</title>",
        f'<text x="{width / 2:.1f}" y="18" text-anchor="middle" class="ct">{escape(title)}</text>',
    ]
    out += _grid_svg(y_ticks, py, x_ticks, (x_lo, x_hi), x_log, (left, top, pw, ph))
    out.append(f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" class="frame"/>')
    out.append(f'<text x="{left + pw / 2:.1f}" y="{top + ph + 32}" text-anchor="middle" class="axis">'
               f"{escape(x_label + (' (log scale)' if x_log else ''))}</text>")
    out.append(f'<text transform="translate(14 {top + ph / 2:.1f}) rotate(-90)" text-anchor="middle" class="axis">'
               f"{escape(y_label)}</text>")
    out += _marks_svg(marks, px, top, ph, x_log)
    out += _series_svg(series, px, py, x_log)
    out += _legend_svg(series, cols, left, pw, height)
    out.append("</svg>")
    return "\n".join(out)


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.reporting.svg"))
