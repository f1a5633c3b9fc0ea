"""The tiny LM's tools at their edges: the missing-extra rule, the progress line, the sweep's plot,
and an rl run directory that names only where things are.

A tiny random network (1 layer, 32 dimensions) keeps every run to a second or two.
"""

from __future__ import annotations

import io
import json

import pytest

import course.lib.extras
from course.lib.policy.progress import ProgressLine


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


# --- the missing-extra rule ----------------------------------------------------------------------
@pytest.mark.parametrize("tool", ["rl", "sweep", "sample", "shift", "sft"])
def test_a_tinylm_tool_without_matplotlib_exits_2_before_any_work_and_names_no_file(tool, tmp_path, monkeypatch,
                                                                                    capsys):
    import importlib

    module = importlib.import_module(f"course.tinylm.{tool}")
    real = course.lib.extras.missing
    monkeypatch.setattr(course.lib.extras, "missing", lambda extra: ["matplotlib"] if extra == "lm" else real(extra))
    out = tmp_path / "out"
    argv = {
        "rl": ["--outdir", str(out)],
        "sweep": ["--steps", "1", "--outdir", str(out)],
        "sample": ["--dataset", "data/datasets/math_dev.jsonl", "--out", str(out)],
        "shift": ["--run", str(out)],
        "sft": ["--out", str(out)],
    }[tool]
    assert module.main(argv) == 2
    stdout, stderr = capsys.readouterr()
    assert stderr == ("error: the tiny LM needs the lm extra (matplotlib not installed): "
                      "pip install torch==2.13.0 && pip install -e '.[lm]'\n")
    assert stdout == ""  # no "Wrote ...", no "View it: ..."
    assert list(tmp_path.iterdir()) == []  # nothing written, not even a reservation


# --- the progress line ---------------------------------------------------------------------------
def test_the_progress_line_is_drawn_on_a_terminal_and_erased_at_the_end():
    tty = Tty()
    progress = ProgressLine("rl step", 3, stream=tty)
    progress.update(3)
    assert tty.getvalue() == "\r\033[Krl step 3/3 (0s)"
    progress.clear()
    assert tty.getvalue().endswith("\r\033[K")


def test_the_progress_line_writes_nothing_when_stderr_is_not_a_terminal():
    pipe = io.StringIO()
    progress = ProgressLine("rl step", 3, stream=pipe)
    progress.update(1)
    progress.update(3)
    progress.info("a line that stays")
    progress.clear()
    assert pipe.getvalue() == "a line that stays\n"


def test_a_message_during_progress_erases_the_line_first_so_it_stands_alone():
    tty = Tty()
    progress = ProgressLine("sft step", 10, stream=tty)
    progress.update(10)
    progress.info("step 10  loss 0.5")
    assert tty.getvalue().endswith("sft step 10/10 (0s)\r\033[Kstep 10  loss 0.5\n")


# --- the sweep's plot ----------------------------------------------------------------------------
def test_the_sweep_plot_has_a_title_labelled_axes_a_full_legend_and_rates_from_zero(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    import argparse

    import course.lib.reporting.plotting
    from course.tinylm import sweep

    figures = []
    monkeypatch.setattr(course.lib.reporting.plotting, "save_figure", lambda fig, path: figures.append(fig))
    rows = [{"beta": b, "reward_last5": r, "slice_strict_pass_end": p, "slice_strict_pass_start": 0.27,
             "kl_k1_per_token": k / 10, "kl_k3_per_token": k / 10, "kl_k1_per_sample": k, "entropy_per_token": 0.3,
             "run": f"beta_{b:g}"}
            for b, r, p, k in ((0.0, 0.7, 0.5, 2.0), (0.5, 0.4, 0.35, 0.2))]
    written = sweep.write_outputs(tmp_path, rows, argparse.Namespace(rubric="strict", seed=0, steps=60))
    assert written == ["sweep.csv", "sweep.md", "sweep.png"]
    (fig,) = figures
    (ax,) = fig.get_axes()
    assert "drift from pi0" in ax.get_title()
    assert "(nats)" in ax.get_xlabel() and "(0-1)" in ax.get_ylabel()
    assert len(ax.get_legend().get_texts()) == len(ax.get_lines()) == 2
    assert ax.get_ylim()[0] == 0.0
    import matplotlib.pyplot as plt

    plt.close(fig)


def test_the_sweep_names_only_the_files_it_wrote_when_the_plot_is_skipped(tmp_path, monkeypatch):
    import argparse

    from course.tinylm import sweep

    monkeypatch.setattr(sweep, "plot_to", lambda path, draw: False)
    rows = [{"beta": 0.0, "reward_last5": 0.5, "slice_strict_pass_end": 0.3, "slice_strict_pass_start": 0.27,
             "kl_k1_per_token": 0.1, "kl_k3_per_token": 0.1, "kl_k1_per_sample": 1.0, "entropy_per_token": 0.3,
             "run": "beta_0"}]
    assert (sweep.write_outputs(tmp_path, rows, argparse.Namespace(rubric="strict", seed=0, steps=1))
            == ["sweep.csv", "sweep.md"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sweep.csv", "sweep.md"]


# --- an rl run directory -------------------------------------------------------------------------
def test_an_rl_run_names_its_holdout_rollouts_and_eval_runs_where_they_are_after_the_rename(tmp_path,
                                                                                            figures_not_rendered):
    torch = pytest.importorskip("torch")
    from course.lib.policy.sampling import set_threads
    from course.lib.records.manifest import display_path
    from course.tinylm import rl
    from course.tinylm.model import GPT, GPTConfig, save_checkpoint

    set_threads(1)
    torch.manual_seed(0)
    ck = tmp_path / "tiny.pt"
    save_checkpoint(GPT(GPTConfig(n_layer=1, n_head=2, n_embd=32, block_size=96)).eval(), ck)
    run = tmp_path / "run"
    argv = ["--pi0", str(ck), "--steps", "1", "--prompts-per-step", "2", "--group-size", "2", "--eval-every", "1",
            "--eval-samples", "1", "--slice-items", "2", "--holdout-samples", "1", "--max-tokens", "3",
            "--threads", "1", "--outdir", str(run)]
    assert rl.main(argv) == 0
    for tag in ("pi0", "final"):
        manifest = json.loads((run / f"eval_{tag}_holdout" / "manifest.json").read_text())
        assert manifest["completions"]["path"] == display_path(run / f"holdout_{tag}_pack.jsonl")
        assert ".tmp" not in (run / f"eval_{tag}_holdout" / "summary.md").read_text()
    gate = (run / "gate.txt").read_text()
    assert f"Baseline : {run / 'eval_pi0_holdout'}" in gate and ".tmp" not in gate
    summary = json.loads((run / "summary.json").read_text())
    assert summary["holdout"]["gate"]["verdict"] in ("ACCEPT", "REJECT")
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary directory left
