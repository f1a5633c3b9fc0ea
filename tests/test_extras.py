"""course.lib.extras: the two rules for a missing optional package, as the tools apply them.

Rule 1 (the work needs the extra): one line, exit 2, nothing written. Rule 2 (the extra only adds a
view: --plot's picture, token_inspect's cl100k_base column): the work is done and written, one
line on stderr names what was left out and the install command, exit 0. Absence is simulated by
replacing ``missing`` (no test here needs matplotlib or tiktoken to be absent for real).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from course import bandit_train as bt
from course import kl_tradeoff_demo as kl
from course import toy_mdp
from course.errors import CourseError
from course.lib import extras


def _without(monkeypatch: pytest.MonkeyPatch, extra: str, modules: list[str]) -> None:
    real = extras.missing
    monkeypatch.setattr(extras, "missing", lambda name: modules if name == extra else real(name))


def test_unavailable_names_the_extra_the_missing_modules_and_the_install_line(monkeypatch: pytest.MonkeyPatch) -> None:
    _without(monkeypatch, "plot", ["matplotlib"])
    assert extras.unavailable("plot", "--plot") == (
        "--plot needs the plot extra (matplotlib not installed): pip install -e '.[plot]'"
    )


def test_require_raises_the_same_line_as_a_course_error(monkeypatch: pytest.MonkeyPatch) -> None:
    _without(monkeypatch, "lm", ["torch"])
    with pytest.raises(CourseError, match=r"the tiny LM needs the lm extra \(torch not installed\): pip install torch"):
        extras.require("lm", "the tiny LM")


@pytest.mark.parametrize(
    "tool, argv, data, png",
    [
        (bt.main, ["--steps", "5", "--plot"], "bandit_log.jsonl", "learning_curve.png"),
        (bt.main, ["--ablation", "--seeds", "2", "--steps", "3", "--plot"], "ablation.txt", "ablation.png"),
        (toy_mdp.main, ["--steps", "5", "--plot"], "toy_mdp_log.jsonl", "toy_mdp.png"),
        (kl.main, ["--plot"], "kl_tradeoff.csv", "kl_tradeoff.png"),
    ],
)
def test_plot_without_matplotlib_writes_the_run_without_the_picture_and_says_so_in_one_line(
    tool: Any, argv: list[str], data: str, png: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _without(monkeypatch, "plot", ["matplotlib"])
    assert tool([*argv, "--outdir", str(tmp_path / "run")]) == 0
    out, err = capsys.readouterr()
    (note,) = [line for line in err.splitlines() if "plot" in line]  # one line (the ablation adds progress lines)
    assert note.startswith("--plot needs the plot extra") and "pip install -e '.[plot]'" in note
    assert note.endswith("writing the run without the picture")
    run = tmp_path / "run"
    assert (run / data).is_file() and not (run / png).exists()
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["plot"] is None  # the manifest never names a file that was not written
    assert png not in out  # nor does the "wrote ..." line


def test_plot_without_matplotlib_gives_the_same_data_as_a_run_without_plot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _without(monkeypatch, "plot", ["matplotlib"])
    assert kl.main(["--plot", "--outdir", str(tmp_path / "a")]) == 0
    assert kl.main(["--outdir", str(tmp_path / "b")]) == 0
    assert (tmp_path / "a" / "kl_tradeoff.csv").read_bytes() == (tmp_path / "b" / "kl_tradeoff.csv").read_bytes()
