"""The figures the guides state are the ones their commands print.

tests/test_docs.py runs every command of the guides; this file runs the commands behind the
figures the prose quotes about them and compares the two: what `--show` prints of the passes, how
many weak rubrics there are and how many golden exploits each rewards, the strict verdicts written
beside a hackable rubric's rewards, the planted x-axis bug's two logs, and Milestone 5's
measurement before and after the patch with the gate's decision between them. (The Goodhart run's
figures are compared by tests/test_goodhart_demo.py, which runs that training in the slow suite.)
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from course.instrument.rubric_registry import HACKABLE
from course.lib.reporting.rl_report import PANELS

REPO = Path(__file__).resolve().parent.parent
GUIDE = "docs/guide.md"
TEACHER = "teacher/instructor_guide.md"


def _text(page: str) -> str:
    """The page with its line breaks folded, as a reader sees the prose."""
    return " ".join((REPO / page).read_text(encoding="utf-8").split())


def _command(page: str, starts: str) -> list[str]:
    """The one command line of the page that is, or else starts with, ``starts``, as arguments after ``python -m``."""
    lines = [line.split("   #")[0].strip() for line in (REPO / page).read_text(encoding="utf-8").splitlines()
             if line.startswith(starts)]
    lines = [line for line in lines if line == starts] or lines
    assert len(set(lines)) == 1, (page, starts, lines)
    return shlex.split(lines[0])[2:]


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    (tmp_path / "data").symlink_to(REPO / "data")
    return tmp_path


def _run(run_in_process, cwd: Path, argv: list[str], code: int = 0) -> str:
    proc = run_in_process(argv[0], argv[1:], cwd=cwd)
    assert proc.returncode == code, proc.stdout + proc.stderr
    return proc.stdout


def test_only_passes_counts_all_46_and_prints_as_many_as_show_asks(run_in_process, workdir: Path) -> None:
    _run(run_in_process, workdir, _command(GUIDE, "python -m course.eval --rubric contains_answer"))
    base = "python -m course.inspect_run --run runs/m5_eval_contains --only-passes --show "
    for show in (3, 46):
        out = _run(run_in_process, workdir, _command(GUIDE, f"{base}{show}"))
        assert re.search(r"^\s+ok\s+46\s", out, flags=re.M), out
        assert len(re.findall(r"^-- dev-", out, flags=re.M)) == show
    assert "three with `--show 3`, all 46 with `--show 46`" in _text(GUIDE)


def test_the_instructor_guide_counts_the_weak_rubrics_and_what_each_rewards(run_in_process, workdir: Path) -> None:
    listed = _run(run_in_process, workdir, ["course.rubrics"]).splitlines()
    weak = [line.split()[0] for line in listed if line.split() and line.split()[0] in HACKABLE]
    words = {5: "Five", 6: "Six", 7: "Seven"}
    assert f"{words[len(weak)]} weak rubrics" in _text(TEACHER)
    for name in weak:
        out = _run(run_in_process, workdir, ["course.red_team", "--rubric", name])
        (count,) = re.findall(rf"'{name}' rewards (\d+)/82 exploits", out)
        assert re.search(rf"`{name}`(?: rewards)? {count}\b", _text(TEACHER)), (name, count)


def test_the_strict_verdicts_beside_the_format_rewards_are_in_the_story_the_guide_shows(run_in_process,
                                                                                        workdir: Path) -> None:
    out = _run(run_in_process, workdir, _command(GUIDE, "python -m course.bandit_train --rubric format_only "
                                                        "--action \"The answer is 323\" --action 323 --action "
                                                        "Final:323 --action \"Final: 324\" --action \"Final: 322\" "
                                                        "--action \"Final: 0\" --action \"Final: 323\" --steps 100 "
                                                        "--seed 1"))
    head = (workdir / "runs" / "m3_bandit_format" / "bandit_story.txt").read_text(encoding="utf-8").splitlines()[:9]
    for action in ("Final: 324", "Final: 322", "Final: 0"):
        (line,) = [x for x in head if f'"{action}"' in x]
        assert "reward 1.0" in line and "(strict: 0.0 wrong_answer)" in line
    guide = _text(GUIDE)
    for a, b in re.findall(r"J\(theta\): ([\d.]+) at the start -> ([\d.]+)", out)[:1] + re.findall(
            r"STRICT reward \(the goal\): ([\d.]+) at the start -> ([\d.]+)", out):
        assert f"from {a} to {b}" in guide, (a, b)
    assert "(strict: 0.0 wrong_answer)" in guide and "head -n 9 runs/m3_bandit_format/bandit_story.txt" in guide


def test_the_planted_x_axis_bug_reads_as_the_guides_say_in_both_logs(run_in_process, workdir: Path) -> None:
    found = {}
    for every in (1, 10):
        out = _run(run_in_process, workdir, _command(GUIDE, f"python -m course.exercises.planted_bugs --bug x_axis "
                                                            f"--log-every {every}"))
        found[every] = re.search(r"reaches E\[r\] >= 0.9 at x = (\d+); its last point is at x = (\d+)", out).groups()
    stated = f"({found[1][0]} and {found[1][1]} logged every step, {found[10][0]} and {found[10][1]} logged every 10)"
    assert stated in _text(GUIDE)


def test_milestone_five_measures_before_and_after_the_patch_and_quotes_the_gate(run_in_process, workdir: Path) -> None:
    guide = _text(GUIDE)
    before = _run(run_in_process, workdir, _command(GUIDE, "python -m course.eval --rubric contains_answer"))
    after = _run(run_in_process, workdir, _command(GUIDE, "python -m course.eval --outdir runs/m5_eval_patched"))
    gate = _run(run_in_process, workdir, _command(GUIDE, "python -m course.gate --baseline runs/m5_eval_contains "
                                                         "--candidate runs/m5_eval_patched"), code=1)
    n_before, n_after = (re.search(r"Pass rate: (\d+/100)", out).group(1) for out in (before, after))
    assert f"Before the patch {n_before}, after it {n_after}" in guide
    decision = re.search(r"^Decision: (REJECT \(Locked Room violated: [^(]*)", gate, flags=re.M).group(1).strip()
    assert f"`{decision}" in guide, decision


def test_every_panel_the_docs_name_is_a_labelled_panel_of_the_curves() -> None:
    for page in (GUIDE, TEACHER, "docs/tinylm.md", "course/tinylm/README.md"):
        for letter in re.findall(r"panel \(([a-z])\)", _text(page)):
            assert letter in PANELS, (page, letter)
    guide = _text(GUIDE)
    assert "panel (d) the share of samples that mention several numbers" in guide
    assert PANELS["d"].startswith("Strict verdicts of the training samples")


def test_each_panel_of_curves_png_is_drawn_with_its_letter() -> None:
    import inspect

    from course.lib.reporting import rl_report as report

    source = inspect.getsource(report._draw_curves)
    for letter in PANELS:
        assert f'panel_title("{letter}"' in source, letter
    assert report.panel_title("d") == "(d) Strict verdicts of the training samples"
