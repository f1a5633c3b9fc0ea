"""What the course_math lm-eval tasks call: lm-evaluation-harness loads this file by its path (``!function utils.X``
in the YAML files beside it) and it hands over to ``course.integrations.lm_eval``.

When ``course`` is not installed (a clone run with ``lm_eval --include_path .../lm_eval_tasks`` from any
folder), the checkout this file sits in is put on ``sys.path`` first, so the tasks find the course, and
through it the dataset, wherever lm_eval runs.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

if importlib.util.find_spec("course") is None:  # lm_eval's console script does not put the checkout on sys.path
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from course.integrations.lm_eval import course_docs, process_results  # noqa: E402

__all__ = ["course_docs", "process_results"]
