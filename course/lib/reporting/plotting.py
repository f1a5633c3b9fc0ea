"""The one place the course touches matplotlib: lazy import, headless backend, one save rule.

Plots are optional (``pip install -e '.[plot]'``). A tool that offers ``--plot``
first asks ``course.cli.optional_view("plot", "--plot", ...)`` right after parsing
(without matplotlib: one line on stderr, and the run is written without the
picture: rule 2 of ``course.lib.extras``), then draws through this module, so that no tool ever opens
a window: the ``Agg`` backend is forced before ``pyplot`` is imported, which also makes plotting work
over SSH and in CI. The figures themselves (titles, units, legends) live in ``course.lib.learning.demo_plots``.

Usage inside a tool::

    from course.lib.reporting.plotting import plot_to

    def draw(plt):
        fig, ax = plt.subplots()
        ax.plot(xs, ys)
        return fig

    plot_to(run_dir / "curve.png", draw)   # True once written
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

from course.errors import CourseError

MISSING_MATPLOTLIB = "plotting needs matplotlib: pip install -e '.[plot]'"


def load_pyplot() -> Any | None:
    """Return ``matplotlib.pyplot`` on the non-interactive Agg backend, or None if matplotlib is missing."""
    try:
        import matplotlib
    except ImportError:
        return None
    # Force Agg *before* pyplot is imported: no window, no display needed, same pixels everywhere.
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def have_matplotlib() -> bool:
    """True when ``--plot`` can produce a file."""
    return load_pyplot() is not None


def save_figure(fig: Any, path: str | os.PathLike[str]) -> Path:
    """Save a figure as PNG and close it (figures left open leak memory in long sweeps).

    The "Software" metadata is dropped so the file does not name the matplotlib
    version; the pixels still depend on it, so plots are never part of a
    byte-identity check.
    """
    plt = load_pyplot()
    out = Path(path)
    fig.savefig(out, dpi=110, bbox_inches="tight", metadata={"Software": None})
    if plt is not None:
        plt.close(fig)
    return out


def plot_to(path: str | os.PathLike[str], draw: Callable[[Any], Any]) -> bool:
    """Call ``draw(pyplot) -> figure`` and save it to ``path``; return True once written.

    The tool has already asked ``optional_view("plot", ...)``; matplotlib missing here anyway (a
    tool that forgot to ask) is a one-line error, never a file named that was not written.
    """
    plt = load_pyplot()
    if plt is None:
        raise CourseError(f"{MISSING_MATPLOTLIB} (cannot write {Path(path).name})")
    save_figure(draw(plt), path)
    return True


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.reporting.plotting"))
