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
def test_the_course_plans_file_names_are_given_with_the_projects(milestone: str, plan_name: str,
                                                                 project_names: list[str]) -> None:
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


@pytest.mark.parametrize(
    "note, milestone",
    [("concepts/rft_vs_rl.md", "0.5"), ("concepts/toy_tax.md", "1"), ("concepts/proxy_gap.md", "5")],
)
def test_each_concept_note_is_linked_where_its_milestone_needs_it(note: str, milestone: str) -> None:
    assert f"]({note})" in _section(milestone), f"{note} is not linked from Milestone {milestone}"


def _before_milestone_zero() -> str:
    return GUIDE.split("## Milestone 0 —", 1)[0]


def test_the_rl_family_tree_comes_before_the_milestones_with_its_three_branches() -> None:
    intro = _before_milestone_zero()
    assert "family tree" in intro
    for branch in ("value-based", "policy-gradient", "model-based"):
        assert f"| {branch} |" in intro, branch
    assert "**covered**" in intro and intro.count("not covered") == 2


def test_the_build_sabotage_reflect_repair_cycle_is_stated_before_the_milestones() -> None:
    intro = _before_milestone_zero().lower()
    assert "build, sabotage, reflect, repair" in intro
    for step in ("*build*", "*sabotage*", "*reflect*", "*repair*"):
        assert step in intro, step


def test_the_transfer_section_follows_milestone_six_and_names_what_gets_harder() -> None:
    after = GUIDE.split("## Milestone 6 —", 1)[1]
    assert "## Transfer:" in after
    transfer = after.split("## Transfer:", 1)[1].split("\n## ", 1)[0]
    assert "**What stays the same.**" in transfer and "**What gets harder.**" in transfer
    for topic in ("*Multi-turn work.*", "*Learned rewards.*", "*Non-determinism.*", "*Longer horizons.*"):
        assert topic in transfer, topic


def test_the_real_llm_and_the_bridges_are_said_to_be_optional_and_off_the_student_path() -> None:
    beyond = GUIDE.split("## Beyond the course:", 1)[1]
    assert "optional, off the student path" in GUIDE
    assert "compare_policies" in beyond and "course.llm.rl" in beyond  # the real LLM lives in that section
    assert "## Milestone" not in beyond
    bridges = (REPO / "docs" / "bridges.md").read_text(encoding="utf-8")
    assert "**Optional, and off the student path.**" in bridges.split("\n## ", 1)[0]
    assert "No milestone uses a bridge" in bridges
