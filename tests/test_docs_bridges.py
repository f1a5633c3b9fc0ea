"""docs/bridges.md's TRL block runs as written: offline, on CPU, from a folder like the project's."""

from __future__ import annotations

import importlib.util
import os
import re
import runpy
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PAGE = REPO / "docs" / "bridges.md"


def python_blocks(text: str) -> list[str]:
    """The ``python`` fenced blocks of a page, in order."""
    return re.findall(r"^```python\n(.*?)^```$", text, flags=re.S | re.M)


def trl_block() -> str:
    (block,) = [b for b in python_blocks(PAGE.read_text(encoding="utf-8")) if "GRPOTrainer(" in b]
    return block


def test_the_trl_block_turns_bf16_off_and_names_no_hub_model():
    block = trl_block()
    assert "bf16=False" in block and "use_cpu=True" in block
    assert not re.search(r"model=\"[\w.-]+/[\w.-]+\"", block)  # a hub id would need the network


@pytest.mark.slow  # builds the twin and runs one GRPO step: about half a minute on one core
@pytest.mark.skipif(importlib.util.find_spec("trl") is None, reason="the trl extra (trl) is not installed")
def test_the_trl_block_of_the_bridges_page_runs_offline_on_cpu_as_written(tmp_path, monkeypatch, capsys):
    for name in ("data",):
        (tmp_path / name).symlink_to(REPO / name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    script = tmp_path / "snippet.py"
    script.write_text(trl_block(), encoding="utf-8")
    runpy.run_path(str(script), run_name="__main__")
    mean = float(capsys.readouterr().out.strip().splitlines()[-1])
    assert 0.0 <= mean <= 1.0
    assert os.path.isdir(tmp_path / "runs" / "grpo")
