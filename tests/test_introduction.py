"""Introduction.md, the pre-work: every formula in Markdown maths, read aloud and located in the code.

Each display formula ($$ ... $$) is followed by a **Read:** paragraph (the formula in words) and a
**Where:** paragraph naming ``file: function`` pairs; every named file exists and defines every
named function or class (read with ``ast``, so a module that needs an extra is not imported). The
page ends its theory with six statements, and it never sends a student into ``teacher/``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
INTRO = (REPO / "Introduction.md").read_text(encoding="utf-8")
_WHERE_REF = re.compile(r"`((?:course|benchmarks|scripts)/[\w/]+\.py):\s*([\w, ]+)`")


def _formula_blocks() -> list[tuple[str, str]]:
    """(formula, the prose after it up to the next formula or heading)."""
    parts = re.split(r"^\$\$(.+?)\$\$$", INTRO, flags=re.M)
    return [(parts[i], re.split(r"^#|^\$\$", parts[i + 1], flags=re.M)[0]) for i in range(1, len(parts) - 1, 2)]


def _defined_names(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {node.name for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}


def _references() -> list[tuple[str, str]]:
    where = " ".join(INTRO.split())  # a reference may wrap across lines
    return [(path, name.strip()) for path, names in _WHERE_REF.findall(where) for name in names.split(",")
            if name.strip()]


def test_the_pre_work_carries_the_courses_formulas() -> None:
    formulas = " ".join(f for f, _ in _formula_blocks())
    for symbol in (r"\pi_\theta(y \mid x)", r"R : X \times Y", "J(theta)".replace("theta", r"\theta"), r"arg\,max",
                   r"\binom{n-c}{k}", r"\nabla_\theta J(\theta)", "A = R - b", r"\log \pi_\theta(y \mid x) = \sum",
                   r"\exp f_\theta", r"D_{\text{KL}}", r"\beta\, \mathbb{E}_x", r"\pi^{*}(a) \propto", r"(1 - 2p)",
                   r"\alpha\, R_t", r"\mathbb{1}", r"\mathbb{P}_{y \sim \pi_\theta(\cdot \mid x)}\big[R(x, y) = 1\big]",
                   r"\max_{j \le k} R(x, y_j) = 1", r"\pi_\theta(y \mid x) = \prod_{t=1}^{T}",
                   r"\nabla_\theta \log \pi_\theta(y \mid x) = \sum_{t=1}^{T}"):
        assert symbol in formulas, f"Introduction.md has no formula with {symbol}"


@pytest.mark.parametrize("index", range(len(_formula_blocks())))
def test_every_formula_is_read_aloud_and_located_in_the_code(index: int) -> None:
    formula, after = _formula_blocks()[index]
    assert "**Read:**" in after, f"formula {formula[:40]!r} has no plain reading"
    assert "**Where:**" in after, f"formula {formula[:40]!r} does not say where it is computed"
    assert _WHERE_REF.search(" ".join(after.split("**Where:**", 1)[1].split())), (f"formula {formula[:40]!r}: "
                                                                                  "no file: function")


@pytest.mark.parametrize("path, name", sorted(set(_references())))
def test_every_function_the_pre_work_names_exists_in_the_file_it_names(path: str, name: str) -> None:
    source = REPO / path
    assert source.is_file(), f"Introduction.md names {path}, which does not exist"
    assert name in _defined_names(source), f"Introduction.md names {name} in {path}, which defines no such function"


def test_the_pre_work_ends_its_theory_with_six_statements_and_disagrees_where_the_course_does() -> None:
    section = INTRO.split("## 8. Six statements", 1)[1].split("\n## ", 1)[0]
    statements = re.findall(r"^(\d)\. \*\*(.+?)\*\*", section, flags=re.M | re.S)
    assert [n for n, _ in statements] == ["1", "2", "3", "4", "5", "6"]
    kl = " ".join(statements[4][1].split())
    assert "does not prevent" in kl  # the course plan's "KL prevents reward hacking", answered
    assert "course disagrees" in " ".join(section.split())


def test_the_pre_work_never_sends_a_student_into_teacher() -> None:
    assert "teacher/" not in INTRO
