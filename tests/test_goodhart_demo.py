"""Milestone 6's Goodhart demonstration tells one story in both halves of the course, the one the run shows.

The teacher's session script (teacher/instructor_guide.md), the student's guide (docs/guide.md) and
the tiny LM's page (docs/tinylm.md) name the same command: the weak rubric ``contains_answer`` with
no KL leash, a small learning rate and 150 steps. No page presents the leashed default run as the
demonstration (its own output says the proxy did not rise). The slow test runs the teacher's
command and checks what the teacher tells the room: on the same samples of the fixed dev slice the
proxy rose a little while the strict pass rate collapsed, the holdout fell, and the gate rejected,
with the figures both guides quote (the per-step training reward's range too).
"""

from __future__ import annotations

import csv
import importlib.util
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
GOODHART_FLAGS = ("--rubric contains_answer", "--beta 0", "--lr 2e-4", "--steps 150", "--seed 0")
PAGES = ("teacher/instructor_guide.md", "docs/guide.md", "docs/tinylm.md")


def _read(relative: str) -> str:
    return (REPO / relative).read_text(encoding="utf-8")


def _rl_commands(page: str, rubric: str = "contains_answer") -> list[str]:
    return [line.strip() for line in _read(page).splitlines()
            if line.strip().startswith("python -m course.tinylm.rl ") and f"--rubric {rubric}" in line]


def _milestone_six(page: str) -> str:
    return _read(page).split("## Milestone 6", 1)[1].split("\n## ", 1)[0]


def teachers_command() -> str:
    (command,) = [c for c in _rl_commands("teacher/instructor_guide.md")]
    return command


@pytest.mark.parametrize("page", PAGES)
def test_every_goodhart_command_runs_without_the_leash_for_150_steps(page: str) -> None:
    commands = _rl_commands(page)
    assert commands, f"{page} shows no Goodhart command"
    for command in commands:
        for flag in GOODHART_FLAGS[:-1]:
            assert flag in command, f"{page}: {command!r} lacks {flag}"


def test_the_teacher_and_the_student_run_the_same_goodhart_command() -> None:
    (students,) = _rl_commands("docs/guide.md")
    assert teachers_command() == students


@pytest.mark.parametrize("page", ["teacher/instructor_guide.md", "docs/guide.md"])
def test_both_guides_quote_the_same_proxy_and_goal_figures(page: str) -> None:
    text = " ".join(_milestone_six(page).split())
    for figure in ("0.570 → 0.615", "0.275 → 0.060"):
        assert figure in text, f"{page} does not quote {figure}"


def test_the_teacher_no_longer_says_the_leashed_run_still_hacks() -> None:
    text = " ".join(_milestone_six("teacher/instructor_guide.md").split())
    assert "has the same β and still hacks" not in text
    assert "0.570 → 0.520" in text  # the default run is shown as the contrast, with its own figures


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="the tiny LM needs the lm extra (PyTorch)")
def test_the_teachers_goodhart_command_prints_what_the_teacher_tells_the_room(tmp_path: Path) -> None:
    (tmp_path / "data").symlink_to(REPO / "data")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    argv = shlex.split(teachers_command())
    proc = subprocess.run([sys.executable, *argv[1:]], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=3600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout
    proxy = re.search(r"contains_answer reward \(the proxy trained on\):\s+([\d.]+) -> ([\d.]+)", out)
    goal = re.search(r"strict pass rate \(the goal\):\s+([\d.]+) -> ([\d.]+)", out)
    assert proxy and goal, out
    (p0, p1), (s0, s1) = (map(float, proxy.groups())), (map(float, goal.groups()))
    assert p1 > p0 and s1 < s0 - 0.1, out  # the proxy rose while the goal collapsed, on the same samples
    assert "Goodhart: the proxy rose while the strict pass rate fell" in out
    guide = " ".join(_milestone_six("teacher/instructor_guide.md").split())
    assert f"{proxy.group(1)} → {proxy.group(2)}" in guide and f"{goal.group(1)} → {goal.group(2)}" in guide, out
    # the per-step training reward's range, as every page quotes it, is the one in the run's curves.csv
    curves = (tmp_path / "runs" / "m6_rl_goodhart" / "curves.csv").read_text(encoding="utf-8").splitlines()
    rewards = [float(row["reward"]) for row in csv.DictReader(curves) if row["reward"]]
    for page in PAGES + ("course/tinylm/README.md",):
        text = " ".join(_read(page).split())
        stated = rf"\b{min(rewards):.3f} (?:and|to) {max(rewards):.3f}\b"
        assert re.search(stated, text), (page, min(rewards), max(rewards))
    holdout = re.search(r"pi0 ([\d.]+%) \[[^]]*\] -> final ([\d.]+%)", out)
    assert holdout and f"{holdout.group(1)} → {holdout.group(2)}" in guide, out
    # the run's closing lines name the gate's decision on the holdout and where it is written
    assert re.search(r"\bREJECT \(gate\.txt\)", out), out
