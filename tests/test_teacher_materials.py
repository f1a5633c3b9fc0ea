"""The teacher's half of the course is complete and agrees with the instrument.

What ``tests/test_docs.py`` cannot see by running commands: that every milestone has a session in the
instructor guide, an entry in the milestone checklists and enough oral-exam questions; that the
strictness lesson quotes the scorer's real verdict; that ``teacher/README.md`` indexes every file
under ``teacher/``; that the student-facing docs say where the solutions are; and that the layout in
docs/architecture.md names every top-level part of the repository.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
TEACHER = REPO / "teacher"
MILESTONES = ("0", "0.5", "1", "2", "3", "4", "5", "6")

FARMER = "Let me calculate... 15 - 7 = 8. Final: 8"
FARMER_COMMAND = f'python -m course.score --expected 8 "{FARMER}"'
# The documents that teach the strictness contradiction and quote the scorer's verdict.
STRICTNESS_DOCS = ("docs/guide.md", "teacher/first_meeting/slides.md")


def _read(relative: str) -> str:
    return (REPO / relative).read_text(encoding="utf-8")


def _sections(text: str, level: str = "## ") -> dict[str, str]:
    """Body of each ``## Milestone X`` section, keyed by X."""
    out: dict[str, str] = {}
    parts = re.split(rf"^{level}Milestone (\S+) ", text, flags=re.M)
    for i in range(1, len(parts) - 1, 2):
        out[parts[i]] = parts[i + 1].split(f"\n{level}", 1)[0]
    return out


def _quoted_verdict(document: str) -> dict:
    """The JSON block a document prints right after the farmer command."""
    text = _read(document)
    at = text.index(FARMER_COMMAND)
    block = text[at:].split("```json\n", 1)[1].split("```", 1)[0]
    return json.loads(block)


# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("milestone", MILESTONES)
def test_every_milestone_has_a_session_a_checklist_and_five_oral_exam_questions(milestone: str) -> None:
    guide = _sections(_read("teacher/instructor_guide.md"))
    checklist = _sections(_read("teacher/milestone_checklists.md"))
    exam = _sections(_read("teacher/oral_exam.md"))
    assert milestone in guide, f"instructor guide has no section for milestone {milestone}"
    for part in ("**Goal.**", "**Timing", "**Before the session.**", "**Live.**", "**Ask.**", "**Wrong answers"):
        assert part in guide[milestone], f"milestone {milestone}: the session script lacks {part}"
    assert "```bash" in guide[milestone], f"milestone {milestone}: the session has no live commands"
    assert milestone in checklist and "- [ ]" in checklist[milestone], f"no checklist for milestone {milestone}"
    questions = re.findall(r"^\*\*Q\d+\. ", exam.get(milestone, ""), flags=re.M)
    assert len(questions) >= 5, f"milestone {milestone}: {len(questions)} oral-exam questions, need 5"
    for q in re.split(r"^\*\*Q\d+\. ", exam[milestone], flags=re.M)[1:]:
        words = " ".join(q.split())  # the prose wraps, so "Red flag" may straddle a line end
        assert "Good:" in words and "Red flag" in words, (f"milestone {milestone}: "
                                                          "a question lacks a good answer or red flags")


@pytest.mark.parametrize("document", STRICTNESS_DOCS)
def test_the_strictness_lesson_quotes_the_scorers_real_verdict(document: str) -> None:
    quoted = _quoted_verdict(document)
    assert quoted["reward"] == 0.0
    assert quoted["details"]["error_code"] == "missing_prefix"
    proc = subprocess.run(
        [sys.executable, "-m", "course.score", "--expected", "8", FARMER], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 1, proc.stderr
    assert json.loads(proc.stdout) == quoted, f"{document} quotes a verdict the scorer no longer gives"


@pytest.mark.parametrize("document", STRICTNESS_DOCS)
def test_the_strictness_lesson_shows_both_readings(document: str) -> None:
    text = _read(document).lower()
    assert "loose reading" in text and ("spec v1" in text or "written reading" in text)
    assert "before" in text and "scor" in text  # the spec is written before scoring


def test_teacher_readme_indexes_every_file_and_says_it_holds_solutions() -> None:
    index = _read("teacher/README.md")
    assert "holds solutions" in index
    for path in sorted(TEACHER.rglob("*")):
        if path.is_file() and path.name != "README.md" and "__pycache__" not in path.parts:
            relative = path.relative_to(TEACHER).as_posix()
            assert f"({relative})" in index, f"teacher/README.md does not link {relative}"


def test_teacher_materials_are_text_not_binary_decks() -> None:
    # .py: the teacher's tools (kata marking, the corrected planted-bug loops), run as scripts.
    for path in TEACHER.rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts:
            assert path.suffix in (".md", ".json", ".py"), path
            path.read_text(encoding="utf-8")


def test_slides_are_one_marp_deck_of_separated_slides() -> None:
    slides = _read("teacher/first_meeting/slides.md")
    assert slides.startswith("---\nmarp: true\n")
    assert len(re.findall(r"^---$", slides, flags=re.M)) >= 15


def test_handout_defines_the_glossary_terms() -> None:
    handout = _read("teacher/first_meeting/handout.md").lower()
    for term in ("reward", "return", "policy", "baseline", "advantage", "kl", "pass@k", "pass^k",
                 "locked room", "goodhart", "verifier", "rollout", "selection compute", "exploration", "exploitation"):
        assert f"**{term}" in handout, f"the handout does not define {term}"


def test_student_docs_say_teacher_holds_the_solutions() -> None:
    assert "`teacher/` holds the solutions" in _read("README.md")
    assert "Solutions" in _read("docs/guide.md") and "under `teacher/`" in _read("docs/guide.md")


def test_answer_keys_live_under_teacher_only() -> None:
    assert (TEACHER / "kata_answer_key.json").is_file() and (TEACHER / "planted_bugs_key.md").is_file()
    for name in ("kata_answer_key.json", "planted_bugs_key.md"):
        elsewhere = [p for p in _project_files() if p.name == name and TEACHER not in p.parents]
        assert not elsewhere, elsewhere


def _project_files() -> list[Path]:
    """Every file of the checkout, without descending into hidden folders (.git, .venv: tens of
    thousands of files that are not the course's) or run outputs."""
    found: list[Path] = []
    for root, dirs, files in os.walk(REPO):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in ("runs", "__pycache__")]
        found += (Path(root) / f for f in files)
    return found


def test_the_layout_names_every_top_level_part() -> None:
    layout = _read("docs/architecture.md").split("## Where things are", 1)[1].split("\n## ", 1)[0]
    for path in sorted(REPO.iterdir()):
        if path.name.startswith(".") or path.name in ("README.md", "pyproject.toml", "MEASUREMENT_RULES.md"):
            continue
        if (path.is_dir() and not any(path.glob("*")) or path.name.endswith(".egg-info")
                or path.name in ("runs", "__pycache__")):
            continue
        assert f"{path.name}/" in layout or path.name in layout, ("docs/architecture.md's layout does not mention "
                                                                  f"{path.name}")


def test_every_test_file_the_docs_name_exists() -> None:
    # tests/test_docs.py does not run `python -m pytest tests/...` lines (the suite runs them): check the names instead.
    docs = ["README.md", "Introduction.md", *(p.relative_to(REPO).as_posix() for p in TEACHER.rglob("*.md")),
            *(p.relative_to(REPO).as_posix() for p in (REPO / "docs").rglob("*.md"))]
    named = {m for d in docs for m in re.findall(r"python -m pytest ((?:tests/\S+\.py ?)+)", _read(d))}
    assert named
    for group in named:
        for name in group.split():
            assert (REPO / name).is_file(), name


def test_notes_templates_the_course_names_exist_and_ask_questions() -> None:
    for name in ("run_readme_selection", "baseline_ablation", "experiment_log", "diagram_prompts"):
        text = _read(f"notes/{name}.md")
        assert "*Template." in text and "?" in text, name
    for name in ("rft_vs_rl", "toy_tax", "proxy_gap"):
        assert len(_read(f"docs/concepts/{name}.md").splitlines()) < 90, f"{name}: a concept note is one page"


# ---------------------------------------------------------------------------------------------
# Fidelity to the course plan's teacher material.
# ---------------------------------------------------------------------------------------------
def test_the_invariant_checklist_states_the_course_plans_six_statements_with_probes() -> None:
    text = _read("teacher/invariant_checklist.md")
    headings = re.findall(r"^## (\d)\. (.+)$", text, flags=re.M)
    assert [n for n, _ in headings] == ["1", "2", "3", "4", "5", "6"]
    titles = " ".join(t.lower() for _, t in headings)
    for words in ("loop", "policy", "environment", "data comes from", "reward, objective, metric, surrogate",
                  "reward hacking"):
        assert words in titles, words
    assert "Milestone 3" in text and "without notes" in text
    sections = re.split(r"^## \d\. ", text, flags=re.M)[1:]
    for section in sections:
        assert "**The student says:**" in section and "**Probe:**" in section and "**Red flags:**" in section


def test_the_submission_checks_are_named_for_what_they_are_and_linked() -> None:
    assert _read("teacher/submission_forensics.md").startswith("# Submission forensics")
    for page in ("teacher/README.md", "teacher/instructor_guide.md", "teacher/milestone_checklists.md"):
        assert "submission_forensics.md" in _read(page), page
    assert "invariant_checklist.md" in _read("teacher/README.md")


def test_the_instructor_guide_points_to_the_file_that_holds_the_rules() -> None:
    guide = _read("teacher/instructor_guide.md")
    assert "Where in `course/score.py` does parsing happen" not in guide
    milestone_4 = guide.split("## Milestone 4", 1)[1].split("\n## ", 1)[0]
    assert "`course/instrument/spec_v1.py`" in milestone_4


def test_the_instructor_guide_compares_manifests_with_jq_and_resets_the_demo_runs() -> None:
    guide = _read("teacher/instructor_guide.md")
    assert "jq '.dataset_fingerprint, .scorer_version' runs/demo_eval_clean/manifest.json" in guide
    assert "jq '.dataset_fingerprint, .scorer_version' runs/demo_eval_modified/manifest.json" in guide
    reset = guide.split("## Appendix: resetting the demo runs", 1)[1]
    assert "\nrm -rf runs/demo_*\n" in reset and "# exit 2" in reset  # the rerun that fails is shown first


@pytest.mark.parametrize(
    "page",
    sorted(p.relative_to(REPO).as_posix() for p in TEACHER.rglob("*.md")
           if "python -m course." in p.read_text(encoding="utf-8")),
)
def test_every_teacher_page_with_commands_shows_the_poetry_form_and_says_it_is_the_same(page: str) -> None:
    text = _read(page)
    assert "poetry run python -m course." in text, page
    assert "the same command" in text.replace("\n", " ") or "is the same" in text.replace("\n", " "), page


def test_exploration_against_exploitation_is_in_the_teachers_checklists() -> None:
    checklists = _read("teacher/milestone_checklists.md")
    m1 = checklists.split("## Milestone 1", 1)[1].split("\n## ", 1)[0]
    assert "exploration against exploitation" in m1
    m05 = checklists.split("## Milestone 0.5", 1)[1].split("\n## ", 1)[0]
    assert "exploration compute" in m05 and "sampling" in m05
    guide = _read("teacher/instructor_guide.md")
    assert "Exploration, in LLM terms" in guide and "sampling differs" in guide


def test_milestone_fours_checklist_questions_are_stated() -> None:
    m4 = _read("teacher/milestone_checklists.md").split("## Milestone 4", 1)[1].split("\n## ", 1)[0]
    assert "parser's quirks instead of correctness" in m4
    assert "the model, the verifier, the prompt or the data" in m4


# ---------------------------------------------------------------------------------------------
# What is graded is asked: the teacher's "Done when" boxes and the student's "Hand in" tables pair up.
# ---------------------------------------------------------------------------------------------
_HAND_IN_MARK = re.compile(r"\*\(hand-in: (.+?)\)\*")


def _boxes(milestone: str) -> list[str]:
    """The "Done when" boxes of one milestone of teacher/milestone_checklists.md, each on one line."""
    section = _sections(_read("teacher/milestone_checklists.md"))[milestone]
    done = section.split("**Done when.**", 1)[1].split("\n\n", 1)[0]
    return [" ".join(box.split()) for box in re.split(r"^- \[ \] ", done, flags=re.M)[1:]]


def _hand_in_rows(milestone: str) -> list[str]:
    """The first cell of every row of the guide's Hand in table for one milestone."""
    section = _sections(_read("docs/guide.md"))[milestone]
    table = section.split(f"### Hand in (Milestone {milestone})", 1)[1]
    rows = [line for line in table.splitlines() if line.startswith("| ") and not line.startswith(("| file ", "|---"))]
    return [row.split(" | ", 1)[0][2:].strip() for row in rows]


@pytest.mark.parametrize("milestone", MILESTONES)
def test_every_graded_box_names_a_row_of_the_students_hand_in_table(milestone: str) -> None:
    rows = set(_hand_in_rows(milestone))
    for box in _boxes(milestone):
        named = _HAND_IN_MARK.findall(box)
        assert named, f"milestone {milestone}: a box grades something the student is not asked to hand in: {box[:80]}"
        for name in named:
            assert name in rows, (f"milestone {milestone}: {name!r} is not a row of the guide's hand-in table "
                                  f"{sorted(rows)}")


@pytest.mark.parametrize("milestone", MILESTONES)
def test_every_row_of_the_students_hand_in_table_is_graded_by_a_box(milestone: str) -> None:
    graded = {name for box in _boxes(milestone) for name in _HAND_IN_MARK.findall(box)}
    for row in _hand_in_rows(milestone):
        assert row in graded, f"milestone {milestone}: the hand-in {row!r} is asked for but no box grades it"


@pytest.mark.parametrize(
    "milestone, graded, asked",
    [
        ("0", "contextual bandit", "contextual bandit"),
        ("2", "horizon", "horizon"),
        ("4", "spec is written first", "before"),
    ],
)
def test_the_items_the_teacher_grades_are_in_the_students_hand_in_and_template(milestone: str, graded: str,
                                                                               asked: str) -> None:
    assert any(graded in box for box in _boxes(milestone)), graded
    table = _sections(_read("docs/guide.md"))[milestone].split(f"### Hand in (Milestone {milestone})", 1)[1]
    assert asked in " ".join(table.split()), f"milestone {milestone}: the hand-in table does not ask for {graded}"
    template = {"0": "notes/mental_map_v1.md", "2": "notes/llm_as_policy.md", "4": "notes/eval_vs_reward.md"}[milestone]
    assert asked in _read(template).lower(), f"{template} does not ask for {graded}"


# ---------------------------------------------------------------------------------------------
# The seeds' last mile: the cycle on the teacher's side, M5's before/after, M6's pipeline.
# ---------------------------------------------------------------------------------------------
def test_the_build_sabotage_reflect_repair_cycle_is_the_teachers_too_and_closes_the_first_meeting() -> None:
    guide = " ".join(_read("teacher/instructor_guide.md").split())
    intro = guide.split("## Milestone 0 ", 1)[0]
    assert "build, sabotage, reflect, repair" in intro.lower()
    for step in ("*Build*", "*Sabotage*", "*Reflect*", "*Repair*"):
        assert step in intro, step
    assert "Close the first meeting with this cycle" in intro
    slides = _read("teacher/first_meeting/slides.md")
    last_slides = slides.split("\n---\n")[-2:]
    assert any("build, sabotage, reflect, repair" in s.lower() for s in last_slides)


def test_milestone_five_asks_for_the_eval_before_and_after_the_patch_and_the_gate_between() -> None:
    rows = _hand_in_rows("5")
    assert "`runs/m5_eval_contains/` and `runs/m5_eval_patched/`" in rows
    report = _read("notes/red_team_report.md")
    assert "## 5. Before and after the patch" in report and "`Decision:`" in report
    assert "--baseline runs/m5_eval_contains --candidate runs/m5_eval_patched" in report


def test_milestone_six_asks_the_pipeline_with_the_courses_sft_reference_and_rl_run() -> None:
    template = _read("notes/mental_map_v2.md")
    pipeline = template.split("## 3. One pipeline: SFT, the RL step, the constraints", 1)[1].split("\n## ", 1)[0]
    for asked in ("**SFT**", "**The RL step**", "**The constraints**", "rollouts → scoring → update",
                  "course.tinylm.sft_data", "course/tinylm/sft.py", "course.tinylm.rl"):
        assert asked in pipeline, asked
    table = " ".join(_sections(_read("docs/guide.md"))["6"].split("### Hand in (Milestone 6)", 1)[1].split())
    assert "SFT, the RL step and its constraints" in table
    assert any("SFT, the RL step and the constraints" in box for box in _boxes("6"))
