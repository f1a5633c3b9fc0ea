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
One manager takes numbers only: verl's PRIME reward manager (``reward_model.reward_manager=prime``)
reads a result as ``float(result)`` or ``float(result[0])``, and a dict makes it zero the whole
batch with one printed line. With it, name ``compute_reward`` instead (the same reward as a
float; the error codes are then not logged).
``verl_rows`` turns a course dataset into rows of verl's RL parquet schema (``data_source``,
``prompt`` as chat messages, ``ability``, ``reward_model.ground_truth``, ``extra_info``).

What verl passes, and what comes back whatever it passes (no exception, ever): verl's
reward managers do not agree on what a raising ``compute_score`` means -- the naive manager
stops the run, the PRIME manager's process pool turns the exception into a reward of 0.0 and
prints one line -- so an exception would be a silent 0 in one of them. Instead an unusable
ground truth comes back as the instrument's ``bad_example`` verdict: ``score`` 0.0 and
``error_code`` ``"bad_example"`` with the ``reason`` (verl collects both per response in
``reward_extra_info``, so the row is named in the logs). The ground truth is read the way the
parquet stores it (``course.integrations.expected``): a string of digits (``"323"``), a Python
or numpy integer. A 5,000-digit ground truth is an integer the verifier does not compare
(more than 4,300 digits: rule 7): ``bad_example``, not the ``ValueError`` Python's int() raises.
Keyword arguments some verl versions add (``reward_router_address``, ...) are accepted and unused.

This module imports nothing outside the standard library and the course: verl imports *it*.
"""

from __future__ import annotations

from typing import Any

from course.instrument.spec_v1 import score, verdict
from course.integrations.expected import library_answer
from course.integrations.messages import emitted_text

DATA_SOURCE = "rl_foundations_llm/strict_final_v1"


def ground_truth_int(ground_truth: Any) -> Any:
    """verl stores ground truth as given in the parquet (usually a string): an integer in any of its
    encodings becomes an int; anything else is returned unchanged (``compute_score`` names it).

    >>> ground_truth_int("323"), ground_truth_int(" -7"), ground_truth_int("3.5")
    (323, -7, '3.5')
    """
    answer, problem = library_answer(ground_truth)
    return ground_truth if problem is not None else answer


def compute_score(data_source: Any, solution_str: Any, ground_truth: Any, extra_info: Any = None,
                  **unused: Any) -> dict[str, Any]:
    """Score one response with the strict verifier; ``score`` is the reward, the rest is evidence.

    Every key is present for every response (verl stacks each key into one array per batch).

    >>> compute_score(DATA_SOURCE, "Final: 323", "323")["score"]
    1.0
    >>> compute_score(DATA_SOURCE, "Final:323", "323")["error_code"]
    'prefix_spacing'
    >>> compute_score(DATA_SOURCE, "Final: 3", "9" * 5000)["error_code"]
    'bad_example'
    """
    answer, problem = library_answer(ground_truth)
    if problem is None:
        result = score({"expected_answer": answer}, emitted_text(solution_str))
    else:
        result = verdict("bad_example", f"{problem[0].upper()}{problem[1:]}: a data bug, not a model failure.", None)
    details = result["details"]
    return {
        "score": float(result["reward"]),
        "error_code": details["error_code"],
        "parsed": bool(details.get("parsed")),
        "scorer_version": details["scorer_version"],
        "reason": details["reason"],
    }


def compute_reward(data_source: Any, solution_str: Any, ground_truth: Any, extra_info: Any = None,
                   **unused: Any) -> float:
    """``compute_score``'s reward alone, for reward managers that take a number (verl's PRIME manager).

    >>> compute_reward(DATA_SOURCE, "Final: 323", "323")
    1.0
    """
    return compute_score(data_source, solution_str, ground_truth, extra_info)["score"]


def verl_rows(path: str, split: str = "train") -> list[dict[str, Any]]:
    """A course dataset as rows of verl's RL parquet schema (write them with pyarrow or pandas)."""
    from course.lib.records.formats import read_dataset

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
