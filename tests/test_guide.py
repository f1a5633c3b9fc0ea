"""docs/guide.md tells a student what to hand in, without sending them to teacher/.

Every milestone of the guide ends with a *Hand in* table: the files, the template each starts
from, and the command that makes it. The names are the course plan's, and where the project
renamed a file the table says so. The note templates are each placed in the milestone that uses
them. (The commands themselves run in tests/test_docs.py.)
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
GUIDE = (REPO / "docs" / "guide.md").read_text(encoding="utf-8")
MILESTONES = ("0", "0.5", "1", "2", "3", "4", "5", "6")


def _section(milestone: str) -> str:
    parts = re.split(r"^## Milestone ", GUIDE, flags=re.M)
    (section,) = [p for p in parts if p.startswith(f"{milestone} —")]
    return section


def _hand_in(milestone: str) -> str:
    section = _section(milestone)
    assert f"### Hand in (Milestone {milestone})" in section, f"Milestone {milestone} has no Hand in table"
    return section.split(f"### Hand in (Milestone {milestone})", 1)[1]


@pytest.mark.parametrize("milestone", MILESTONES)
def test_every_milestone_ends_with_a_hand_in_table_of_files_templates_and_commands(milestone: str) -> None:
    table = _hand_in(milestone)
    assert "| file | what it is | starts from / made by |" in table
    rows = [line for line in table.splitlines() if line.startswith("| ") and not line.startswith("| file ")]
    assert rows, milestone
    assert "`python -m course." in table or "template" in table


@pytest.mark.parametrize(
    "template, milestone",
    [
        ("mental_map_v1", "0"), ("experiment_log", "0"), ("run_readme_selection", "0.5"), ("baseline_ablation", "1"),
        ("diagram_prompts", "2"), ("llm_as_policy", "3"), ("eval_vs_reward", "4"), ("red_team_report", "5"),
        ("mental_map_v2", "6"),
    ],
)
def test_each_note_template_is_handed_in_at_the_milestone_that_uses_it(template: str, milestone: str) -> None:
    assert f"notes/{template}.md" in _hand_in(milestone), f"{template} is not in Milestone {milestone}'s hand-in"
    assert (REPO / "notes" / f"{template}.md").is_file()


def test_every_note_template_is_named_in_some_hand_in() -> None:
    handed_in = "".join(_hand_in(m) for m in MILESTONES)
    for path in sorted((REPO / "notes").glob("*.md")):
        assert f"notes/{path.name}" in handed_in, f"notes/{path.name} is in no milestone's hand-in"


@pytest.mark.parametrize(
    "milestone, plan_name, project_names",
    [
        ("0", "runs/run_001/", ["runs/m0_eval/"]),
        ("0.5", "selection_demo.jsonl", ["results.jsonl", "summary.json"]),
        ("0.5", "runs/m05_sel_n4/README.md", ["notes/run_readme_selection.md"]),
        ("1", "bandit_train_log.txt", ["bandit_log.jsonl", "bandit_story.txt"]),
        ("2", "toy_mdp_log.txt", ["toy_mdp_log.jsonl"]),
        ("3", "kl_tradeoff.csv", ["kl_tradeoff.png"]),
        ("4", "tests/test_rubric.py", ["STUDENT_CASES"]),
    ],
)
def test_the_course_plans_file_names_are_given_with_the_projects(milestone: str, plan_name: str, project_names: list[str]) -> None:
    table = _hand_in(milestone)
    assert plan_name in table
    for name in project_names:
        assert name in table, f"Milestone {milestone}: {plan_name} should say it is {name} here"


def test_the_guide_never_sends_a_student_to_teacher_for_a_hand_in() -> None:
    handed_in = "".join(_hand_in(m) for m in MILESTONES)
    assert "teacher/" not in handed_in


def test_exploration_is_taught_at_milestones_half_and_one() -> None:
    half = _section("0.5")
    assert "### Exploration, in LLM terms" in half
    for knob in ("temperature", "top_p", "seed", "N "):
        assert knob in half, knob
    assert "sampling differs" in half  # the gate's refusal is shown, not asserted
    assert "Exploration against exploitation" in _section("1")
