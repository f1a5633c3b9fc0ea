"""The course's task and instrument inside lm-evaluation-harness (the ``lmeval`` extra).

Four tasks ship in ``course/integrations/lm_eval_tasks/`` (pass that one folder to ``--include_path``):

  * ``course_math``: any model, the dataset prompt as it is;
  * ``course_math_tinylm``: the tiny LM's prompt form ``<bos>{prompt}<sep>``
    (``course.integrations.hf_twin.policy_prompt``), for its Hugging Face twin;
  * ``course_math_x8`` and ``course_math_tinylm_x8``: the same with ``repeats: 8`` sampled
    generations per document (temperature 1), for a selection pack.

Their metric is ``course_strict``, the strict verifier's reward per document (``process_results``
below), so lm-eval's own results table shows the strict pass rate. lm-eval's ``exact_match``
would compare the whole generation (``Final: 323``) with the target (``323``): 0 for every model.
The dataset comes through ``course_docs`` (the task's ``custom_dataset``), read by the course's own
reader from a path resolved against the current folder and then the project root, so the tasks
work wherever ``lm_eval`` runs (a ``data_files`` path in the YAML is relative to the folder lm_eval
was started in). Another course dataset: ``--metadata '{"course_dataset": "path.jsonl"}'``.

What is scored is the raw generation lm-eval passes after its filters; the tasks set none, so
lm-eval's default ``take_first`` hands over the first generation of each document. With
``repeats > 1`` only that one is scored here: import the ``--log_samples`` file with
``python -m course.import_completions --format lm-eval --pack`` and every repeat becomes a
sample of a selection pack (Loop B's pass@k).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from course.instrument.spec_v1 import score
from course.integrations.expected import library_answer
from course.lib.bundled import MATH_DEV
from course.lib.external.messages import emitted_text

TASKS_DIR = Path(__file__).resolve().parent / "lm_eval_tasks"
DEFAULT_DATASET = MATH_DEV
METRIC = "course_strict"
_INT64 = 2**63  # an Arrow int64 column holds answers below this; a longer one is stored as text


def course_docs(course_dataset: str = DEFAULT_DATASET, **unused: Any):
    """The task's documents: a course dataset as ``{"test": Dataset}`` of ``id``, ``prompt``, ``expected_answer``.

    lm-eval calls it with the run's metadata (model arguments and ``--metadata``) as keywords:
    only ``course_dataset`` is read.
    """
    from datasets import Dataset, DatasetDict

    from course.lib.records.formats import read_dataset
    from course.lib.records.manifest import shown_here

    examples = read_dataset(shown_here(course_dataset))
    as_int = all(-_INT64 < ex.expected_answer < _INT64 for ex in examples)
    return DatasetDict({"test": Dataset.from_list([
        {"id": ex.id, "prompt": ex.prompt, "expected_answer": ex.expected_answer if as_int else str(ex.expected_answer)}
        for ex in examples
    ])})


def process_results(doc: dict[str, Any], results: Sequence[Any]) -> dict[str, float]:
    """``{"course_strict": reward}`` for one document: its first (filtered) generation, strictly scored.

    >>> process_results({"expected_answer": 323}, ["Final: 323"]), process_results({"expected_answer": 323}, ["323"])
    ({'course_strict': 1.0}, {'course_strict': 0.0})
    """
    answer, problem = library_answer(doc.get("expected_answer"))
    if problem is not None:  # lm-eval stops the run on an exception: better than a 0 that reads as the model's
        raise ValueError(f"course_strict: document {doc.get('id')!r}: {problem}")
    first = results[0] if results else None
    if isinstance(first, (list, tuple)) and first and all(isinstance(t, str) for t in first):
        first = first[0]  # a task without take_first hands over every repeat: the first is the one scored
    return {METRIC: float(score({"expected_answer": answer}, emitted_text(first))["reward"])}


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.integrations.lm_eval"))
