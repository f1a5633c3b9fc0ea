"""The course's instrument as verl's custom reward function.

verl loads a function by file path and name and calls it once per response, from its reward
manager, as ``compute_score(data_source=..., solution_str=..., ground_truth=..., extra_info=...)``
(``ground_truth`` is the row's ``reward_model.ground_truth``, ``extra_info`` its ``extra_info``).
It takes a float, or a dict with a ``"score"`` key whose other keys it collects per response
as ``reward_extra_info`` (logged beside the reward). The config lines (verl 0.9, where the
reward settings live under ``reward``)::

    reward.custom_reward_function.path=course/integrations/verl.py
    reward.custom_reward_function.name=compute_score

(older verl, and verl 0.9's legacy form that it still migrates: ``custom_reward_function.path=...``
and ``custom_reward_function.name=compute_score`` at the top level). verl loads the file by
path under the module name ``custom_module``, so ``course`` must be importable in verl's
environment (``pip install -e .`` of this repository).
``verl_rows`` turns a course dataset into rows of verl's RL parquet schema (``data_source``,
``prompt`` as chat messages, ``ability``, ``reward_model.ground_truth``, ``extra_info``).

This module imports nothing outside the standard library and the course: verl imports *it*.
"""

from __future__ import annotations

import re
from typing import Any

from course.instrument.spec_v1 import score

DATA_SOURCE = "rl_foundations_llm/strict_final_v1"
_CANONICAL_INT = re.compile(r"-?[0-9]+")


def ground_truth_int(ground_truth: Any) -> Any:
    """verl stores ground truth as given in the parquet (usually a string): an integer string becomes an int.

    Anything else is passed on unchanged, so the scorer names it ``bad_example`` (it never raises).

    >>> ground_truth_int("323"), ground_truth_int(" -7"), ground_truth_int("3.5")
    (323, -7, '3.5')
    """
    if isinstance(ground_truth, str) and _CANONICAL_INT.fullmatch(ground_truth.strip()):
        return int(ground_truth.strip())
    return ground_truth


def compute_score(data_source: Any, solution_str: Any, ground_truth: Any, extra_info: Any = None) -> dict[str, Any]:
    """Score one response with the strict verifier; ``score`` is the reward, the rest is evidence.

    Every key is present for every response (verl stacks each key into one array per batch).

    >>> compute_score(DATA_SOURCE, "Final: 323", "323")["score"]
    1.0
    >>> compute_score(DATA_SOURCE, "Final:323", "323")["error_code"]
    'prefix_spacing'
    """
    verdict = score({"expected_answer": ground_truth_int(ground_truth)}, solution_str)
    details = verdict["details"]
    return {
        "score": float(verdict["reward"]),
        "error_code": details["error_code"],
        "parsed": bool(details.get("parsed")),
        "scorer_version": details["scorer_version"],
    }


def verl_rows(path: str, split: str = "train") -> list[dict[str, Any]]:
    """A course dataset as rows of verl's RL parquet schema (write them with pyarrow or pandas)."""
    from course.lib.formats import read_dataset

    return [
        {
            "data_source": DATA_SOURCE,
            "prompt": [{"role": "user", "content": ex.prompt}],
            "ability": "math",
            "reward_model": {"style": "rule", "ground_truth": str(ex.expected_answer)},
            "extra_info": {"split": split, "index": i, "id": ex.id},
        }
        for i, ex in enumerate(read_dataset(path))
    ]


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.integrations.verl"))
