"""One rounding rule for every printed rate: ``course.lib.evaluation.summary.percent`` and ``points``."""

from __future__ import annotations

import re
from fractions import Fraction
from pathlib import Path

import pytest

from course.lib.evaluation import locked_room
from course.lib.evaluation.summary import pass_at_1_line, pass_rate_line, percent, points

REPO = Path(locked_room.__file__).resolve().parents[3]


@pytest.mark.parametrize("x, shown", [(89 / 400, "22.3%"), (0.0225, "2.3%"), (47.75 / 100, "47.8%"),
                                      (1 / 3, "33.3%"), (-0.0005, "-0.1%"), (0.0, "0.0%")])
def test_a_rate_on_a_tie_rounds_half_up_as_a_person_reads_it(x, shown):
    assert percent(x) == shown


def test_points_and_percent_round_one_value_alike():
    for x in (89 / 400, 0.0225, Fraction(9, 400), -0.0175):
        assert percent(x) == points(x) + "%"


def test_the_same_count_reads_the_same_in_the_eval_line_and_the_gates_multi_sample_line():
    assert "= 22.3% " in pass_rate_line(89, 400)
    assert "89/400 samples = 22.3% " in pass_at_1_line(89, 400, 50, 0.18, 0.27)


def test_the_gates_change_line_uses_the_same_rule():
    assert locked_room._points(0.0225) == "+2.3 points"


# A one-decimal percent or points written with a format spec bypasses the rule (a CSS width is no rate).
_BYPASS = re.compile(r"\{[^{}]*100[^{}]*:[+ ]?\.1f\}(%| points)|\{[^{}]*:\.1%\}")


def test_no_tool_formats_a_one_decimal_rate_itself():
    offenders = [f"{path.relative_to(REPO)}:{n}" for path in sorted((REPO / "course").rglob("*.py"))
                 for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
                 if _BYPASS.search(line) and "width:" not in line]
    assert offenders == []
