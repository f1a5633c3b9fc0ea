"""The course's instrument as verl's custom reward function, for verl 0.9.1 (the ``verl`` extra).

verl loads a function by file path and name and calls it once per response as
``compute_score(data_source=..., solution_str=..., ground_truth=..., extra_info=...)``
(``ground_truth`` is the row's ``reward_model.ground_truth``, ``extra_info`` its ``extra_info``).
It takes a float, or a dict with a ``"score"`` key whose other keys it collects per response
as ``reward_extra_info`` (logged beside the reward).

What verl 0.9.1 really runs, read from its source (tests/test_bridges_verl.py runs it):

* **Training** (``python -m verl.trainer.main_ppo``): rewards are computed by the reward loop,
  ``RewardLoopManager``, which starts ``reward.num_workers`` Ray actors (``RewardLoopWorker``);
  each loads the function with ``get_custom_reward_fn``, which reads exactly these keys::

      reward.custom_reward_function.path=course/integrations/verl.py
      reward.custom_reward_function.name=compute_score

  and hands it to the reward manager ``reward.reward_manager.name`` (registered in 0.9.1:
  ``naive``, the default, ``dapo``, ``gdpo``, ``rate_limited``, ``remote``). Every one of them takes
  the dict: ``score`` is the reward, ``error_code``, ``parsed``, ``scorer_version`` and ``reason``
  come back per response as ``reward_extra_info``. The legacy top-level keys
  (``custom_reward_function.path=...``) are still accepted by ``main_ppo``'s config but never read:
  only ``verl.experimental.fully_async_policy.fully_async_main`` migrates them, so with ``main_ppo``
  they leave the reward on verl's default scorer, which stops at the first batch with
  ``NotImplementedError`` for this ``data_source``. verl 0.9.1 has no PRIME reward manager
  (``reward.reward_manager.name=prime`` is ``Unknown reward manager``).
* **Offline scoring** (``python -m verl.trainer.main_eval``, one Ray task per parquet row): it
  calls the function positionally, ``fn(data_source, response, ground_truth)``, for each of a
  row's ``responses`` and averages the results with ``numpy.mean``, so it needs a number: name
  ``compute_reward`` (``compute_score``'s dicts make it raise ``TypeError``). Its config has no
  ``reward`` group, and its own top-level ``custom_reward_function`` is not read either, so the
  keys are added with ``+``::

      python -m verl.trainer.main_eval data.path=runs/verl_eval.parquet \
          +reward.custom_reward_function.path=course/integrations/verl.py \
          +reward.custom_reward_function.name=compute_reward

  It prints the mean over rows of each row's mean reward: with one response per row the strict
  pass rate, with a selection pack's n responses the mean pass@1. ``verl_eval_rows`` writes
  those rows from a course dataset and a rollouts file or pack.

verl loads the file by path under a module name of its own, so ``course`` must be importable in
verl's environment (``pip install verl==0.9.1``, in a venv of its own: docs/bridges.md). ``verl_rows`` turns a course
dataset into rows of verl's RL parquet schema (``data_source``, ``prompt`` as chat messages, ``ability``,
``reward_model.ground_truth``, ``extra_info``).

What comes back whatever verl passes (no exception, ever): an exception in a reward worker stops
the training run, and in ``main_eval`` a whole Ray task; an unusable ground truth is instead the
instrument's ``bad_example`` verdict: ``score`` 0.0 and ``error_code`` ``"bad_example"`` with the
``reason`` (collected per response, so the row is named in the logs). The ground truth is read
the way the parquet stores it (``course.integrations.expected``): a string of digits (``"323"``),
a Python or numpy integer. A 5,000-digit ground truth is an integer the verifier does not compare
(more than 4,300 digits: rule 7): ``bad_example``, not the ``ValueError`` Python's int() raises.
A ``solution_str`` given as message parts is read by the course's one rule
(``course.lib.external.messages``). Keyword arguments the reward loop adds
(``reward_router_address``, ``reward_model_tokenizer``) are accepted and unused.

This module imports nothing outside the standard library and the course: verl imports *it*.
"""

from __future__ import annotations

from typing import Any

from course.instrument.spec_v1 import score, verdict
from course.integrations.expected import library_answer
from course.lib.external.messages import emitted_text

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
    """``compute_score``'s reward alone, for callers that need a number (verl's ``main_eval`` averages them).

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


def verl_eval_rows(dataset: str, samples: str) -> list[dict[str, Any]]:
    """Rows of ``verl.trainer.main_eval``'s parquet: ``verl_rows`` plus ``responses``, one list per item.

    ``samples`` is a frozen-rollouts file (one response per item) or a selection pack (its n
    samples, in stored order); every dataset item must have a line, and every line an item.
    """
    from course.errors import CourseError
    from course.lib.selection.policy_comparison import read_policy_file

    responses = read_policy_file("samples", samples).samples  # a frozen file or a pack, told apart by line 1
    rows = verl_rows(dataset, split="eval")
    ids = {row["extra_info"]["id"] for row in rows}
    stray = sorted(set(responses) - ids)
    if stray:
        raise CourseError(f"{samples}: id {stray[0]!r} is not an item of {dataset}")
    for row in rows:
        if row["extra_info"]["id"] not in responses:
            raise CourseError(f"{samples}: no completion for item {row['extra_info']['id']!r} of {dataset}")
        row["responses"] = list(responses[row["extra_info"]["id"]])
    return rows


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.integrations.verl"))
