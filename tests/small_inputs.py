"""One-line input files the fault suite hands to the single-file writers (datasets import, import_completions)."""

from __future__ import annotations

import json
from pathlib import Path


def gsm8k_file(path: Path) -> Path:
    """A GSM8K release file of one item (``#### 5``), for ``course.datasets import --format gsm8k``."""
    path.write_text(json.dumps({"question": "What is 2 + 3?", "answer": "2 + 3 = 5\n#### 5"}) + "\n", encoding="utf-8")
    return path


def plain_completions_file(path: Path) -> Path:
    """One plain completion line for math_dev's first item, for ``course.import_completions --format plain``."""
    path.write_text(json.dumps({"id": "dev-0001", "completion": "Final: 1"}) + "\n", encoding="utf-8")
    return path
