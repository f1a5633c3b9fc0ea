"""course.lib.learning.demo_plots: every figure of the Loop C demos says what it shows, and --plot writes it.

--plot without matplotlib is tested in tests/test_extras.py (this module is skipped without it)."""

from __future__ import annotations

import functools
import importlib.util
import random
from pathlib import Path
from typing import Any

import pytest

from course import bandit_train as bt
from course import kl_tradeoff_demo as kl
from course import toy_mdp
from course.lib.learning import two_step
from course.lib.reporting.plotting import load_pyplot

# A skip mark, not an import: matplotlib takes a second to import, and every pytest-xdist worker
# collects this file. pyplot (Agg backend: no window) is loaded when a figure is first drawn.
pytestmark = pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None,
                                reason="the plot extra (matplotlib) is not installed")


def _bandit_figure() -> Any:
    records = list(bt.reinforce([0.0, 1.0, 0.0], steps=30, lr=0.5, rng=random.Random(0), baseline="ema"))
    return bt._draw_learning_curve(records, "bandit: a title")(load_pyplot())


def _ablation_figure() -> Any:
    scenarios = []
    for name, rewards in (("rare", [0.0, 0.0, 1.0]), ("common", [1.0, 1.0, 0.0])):
        result = bt.run_ablation(rewards, seeds=3, base_seed=0, steps=15, lr=0.5, alpha=0.2)
        scenarios.append({"name": name, "result": result})
    return bt._draw_ablation(scenarios)(load_pyplot())


def _toy_mdp_figure() -> Any:
    episodes = list(two_step.reinforce(two_step.DEFAULT_REWARDS, steps=40, lr=0.5, use_baseline=True,
                                       rng=random.Random(0)))
    return toy_mdp._draw(episodes, "two-step MDP: a title")(load_pyplot())


def _kl_figure() -> Any:
    scored = bt.score_actions(bt.EXAMPLE, bt.DEFAULT_ACTIONS)
    rewards = [a.reward for a in scored]
    rows = kl.sweep(list(kl.PI_REF), rewards, list(kl.DEFAULT_BETAS))
    return kl._draw(rows, list(kl.PI_REF), rewards)(load_pyplot())


FIGURES = {"bandit": _bandit_figure, "ablation": _ablation_figure, "toy_mdp": _toy_mdp_figure, "kl": _kl_figure}


@functools.cache
def _figure(kind: str) -> Any:
    """Each figure is built once for the whole file: the checks below only read it (drawing it to
    measure the tick labels changes nothing they read)."""
    return FIGURES[kind]()


@pytest.fixture(scope="module", autouse=True)
def _close_the_figures_at_the_end():
    yield
    if _figure.cache_info().currsize:
        load_pyplot().close("all")
    _figure.cache_clear()


def _axes(fig: Any) -> list[Any]:
    """The axes that carry data; a twin axis (same x as its host, its own y) is its host's panel."""
    hosts = []
    for ax in fig.axes:
        if not (ax.get_lines() or ax.patches):
            continue
        twin_of = [other for other in hosts if other.get_shared_x_axes().joined(other, ax)]
        if not twin_of:
            hosts.append(ax)
    return hosts


def _all_legend_texts(fig: Any) -> set[str]:
    texts = set()
    for ax in fig.axes:
        legend = ax.get_legend()
        if legend is not None:
            texts |= {t.get_text() for t in legend.get_texts()}
    return texts


@pytest.mark.parametrize("kind", sorted(FIGURES))
def test_every_panel_has_a_title_and_axis_labels_with_units(kind: str) -> None:
    fig = _figure(kind)
    for ax in _axes(fig):
        assert ax.get_title(), f"{kind}: a panel without a title"
        assert ax.get_xlabel() or kind == "ablation", f"{kind}: no x label"  # ablation: the ticks name the rows
    for ax in fig.axes:  # every y axis, twins included, says its unit
        if ax.get_lines() or ax.patches:
            assert "(" in ax.get_ylabel(), f"{kind}: the y label {ax.get_ylabel()!r} names no unit"


@pytest.mark.parametrize("kind", sorted(FIGURES))
def test_every_line_and_bar_series_has_a_legend_entry(kind: str) -> None:
    fig = _figure(kind)
    labels = set()
    for ax in fig.axes:
        labels |= {line.get_label() for line in ax.get_lines() if not line.get_label().startswith("_")}
        labels |= {c.get_label() for c in ax.containers if not c.get_label().startswith("_")}
    assert labels and labels <= _all_legend_texts(fig)


@pytest.mark.parametrize("kind", sorted(FIGURES))
def test_no_two_tick_labels_overlap(kind: str) -> None:
    fig = _figure(kind)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        for labels in (ax.get_xticklabels(), ax.get_yticklabels()):
            boxes = [t.get_window_extent(renderer) for t in labels if t.get_visible() and t.get_text()]
            for i, a in enumerate(boxes):
                for b in boxes[i + 1 :]:
                    assert not a.overlaps(b), f"{kind}: tick labels overlap"


@pytest.mark.parametrize("kind", ["bandit", "toy_mdp", "kl"])
def test_axes_showing_a_probability_or_a_reward_rate_start_at_zero(kind: str) -> None:
    fig = _figure(kind)
    shown = [ax for ax in fig.axes if "probab" in ax.get_ylabel() or "reward (0" in ax.get_ylabel()]
    assert shown
    assert all(ax.get_ylim()[0] == 0.0 for ax in shown)


def test_the_ablation_plot_shows_the_variance_of_each_baseline_not_j() -> None:
    fig = _figure("ablation")
    for ax in _axes(fig):
        assert "variance" in ax.get_ylabel() and "J" not in ax.get_ylabel()
    assert {"none", "running mean", "EMA alpha=0.2", "b*"} <= _all_legend_texts(fig)


def test_the_kl_plot_puts_beta_on_a_log_axis() -> None:
    fig = _figure("kl")
    assert [ax.get_xscale() for ax in fig.axes if "beta" in ax.get_xlabel()] == ["log"]


@pytest.mark.parametrize(
    "tool, argv, png",
    [
        (toy_mdp.main, ["--steps", "20", "--plot"], "toy_mdp.png"),
        (kl.main, ["--betas", "0.1", "1", "--plot"], "kl_tradeoff.png"),
        (bt.main, ["--ablation", "--seeds", "2", "--steps", "5", "--plot"], "ablation.png"),
    ],
)
def test_plot_writes_the_png_and_names_it(tool: Any, argv: list[str], png: str, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert tool([*argv, "--outdir", str(tmp_path / "r")]) == 0
    assert (tmp_path / "r" / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert png in capsys.readouterr().out


@pytest.mark.parametrize("tool", ["bandit_train", "toy_mdp", "kl_tradeoff_demo"])
def test_a_loop_c_tool_imports_the_library_never_another_tool(tool: str) -> None:
    import ast

    source = (Path(__file__).resolve().parent.parent / "course" / f"{tool}.py").read_text(encoding="utf-8")
    imported = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module)
        elif isinstance(node, ast.Import):
            imported |= {alias.name for alias in node.names}
    course_modules = {m for m in imported if m.startswith("course")}
    allowed = ("course.lib", "course.cli", "course.errors", "course.instrument")
    assert course_modules and all(m.startswith(allowed) for m in course_modules), course_modules
