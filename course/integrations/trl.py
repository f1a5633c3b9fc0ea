"""The course's instrument as a TRL reward function (GRPOTrainer, RLOOTrainer, ...).

TRL calls every reward function as ``f(prompts=..., completions=..., completion_ids=...,
**columns)`` where ``columns`` are the dataset's other columns, one value per completion, and
expects one float per completion. ``strict_reward`` is that function for the strict
``Final: <int>`` verifier: the expected answers come from the ``expected_answer`` column
(``make_strict_reward(column=...)`` names another), and a conversational completion (a list
of ``{"role", "content"}`` messages) is scored on its last assistant message.

Why the error codes are logged: a reward of 0 says nothing about *why*. TRL (>= 1.x) passes
two hooks to reward functions, ``log_metric(name, value)`` (a scalar averaged over the logging
step, reported beside ``kl`` and ``entropy``) and ``log_extra(column, values)`` (a column of the
completions table). ``strict_reward`` logs the share of every strict error code as
``strict/<code>`` (all codes, every batch, so the averages are over the same batches) and each
completion's code as the ``error_code`` column. Called without the hooks (older TRL, or by
hand) it only returns rewards.

    from trl import GRPOConfig, GRPOTrainer
    from course.integrations.trl import strict_reward, course_dataset
    trainer = GRPOTrainer(model=model, reward_funcs=strict_reward,
                          train_dataset=course_dataset("data/datasets/math_dev.jsonl"), args=GRPOConfig(...))

What it accepts, checked against TRL's ``GRPOTrainer._calculate_rewards`` (trl 1.16): every
column is repeated once per generation, so there is exactly one expected answer per completion.
Anything else is a caller's mistake and raises ``ValueError`` naming it (TRL does not catch a
reward function's exception: the run stops at the first batch instead of learning from a
reward that measures nothing):

  * a column of another length than ``completions`` (zipping would score some completions
    and drop the rest);
  * an expected answer that is not an integer. ``"1"`` (a text column) and ``numpy.int64(1)``
    are integers and are read as such (``course.integrations.expected``); ``"3.5"``, ``None``
    or a 5,000-digit number are not, and would otherwise score 0 for every completion;
  * a conversation with no assistant message (TRL passes the generated turns, which always
    hold one; scoring the last message would score the user's own text).

Content given as parts is read by the course's one rule (``course.lib.external.messages``: text
parts joined with nothing in between, other parts skipped), the same in every bridge.
A completion that is not text (``content: None``, a text part whose ``text`` is not a string)
is the model's failure, not the caller's: the scorer names it ``not_a_string`` (reward 0). An
empty batch returns ``[]`` and logs nothing.

No TRL import here: the function is plain Python, so it can be unit-tested and reused anywhere.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Callable, Sequence

from course.instrument.spec_v1 import ERROR_CODES, score
from course.integrations.expected import integer_answers
from course.lib.external.messages import completion_text  # the one rule for message text (docs/bridges.md)

ANSWER_COLUMN = "expected_answer"


def make_strict_reward(column: str = ANSWER_COLUMN) -> Callable[..., list[float]]:
    """A TRL reward function scoring with ``course.instrument.spec_v1.score``, expected answers from ``column``."""

    def strict_reward(prompts: Sequence[Any], completions: Sequence[Any], **kwargs: Any) -> list[float]:
        if column not in kwargs:
            raise KeyError(
                f"strict_reward needs the dataset column {column!r} (one expected answer per completion); "
                f"columns passed: {sorted(k for k in kwargs if k not in ('log_metric', 'log_extra', 'trainer_state'))}"
            )
        expected = list(kwargs[column])
        if len(expected) != len(completions):
            raise ValueError(
                f"strict_reward got {len(completions)} completion(s) and {len(expected)} value(s) of {column!r}: "
                f"TRL passes one reward per completion and repeats every column once per generation, so "
                f"the lengths must match (repeat each answer num_generations times when calling it by hand)"
            )
        if not completions:
            return []  # an empty batch: no rewards, and no shares to log (0/0)
        answers = integer_answers(expected, f"strict_reward: {column}", "the strict verifier scores integer "
                                  "answers only (an int, a numpy integer or a string of digits)")
        texts = []
        for i, c in enumerate(completions):
            try:
                texts.append(completion_text(c))
            except ValueError as exc:
                raise ValueError(f"strict_reward: completion {i} is {exc}") from None
        verdicts = [score({"expected_answer": a}, t) for a, t in zip(answers, texts)]
        codes = [v["details"]["error_code"] for v in verdicts]
        log_metric, log_extra = kwargs.get("log_metric"), kwargs.get("log_extra")
        if log_metric is not None:
            counts = Counter(codes)
            for code in ERROR_CODES:
                log_metric(f"strict/{code}", counts[code] / len(codes))
        if log_extra is not None:
            log_extra("error_code", codes)
        return [float(v["reward"]) for v in verdicts]

    strict_reward.__name__ = "course_strict" if column == ANSWER_COLUMN else f"course_strict_{column}"
    return strict_reward


strict_reward = make_strict_reward()


def course_rows(path: str, *, conversational: bool = False) -> list[dict[str, Any]]:
    """A course dataset as TRL rows: ``prompt`` (text, or one user message) plus ``id`` and ``expected_answer``."""
    from course.lib.records.formats import read_dataset

    return [
        {
            "id": ex.id,
            "prompt": [{"role": "user", "content": ex.prompt}] if conversational else ex.prompt,
            ANSWER_COLUMN: ex.expected_answer,
        }
        for ex in read_dataset(path)
    ]


def course_dataset(path: str, *, conversational: bool = False):
    """``course_rows`` as a ``datasets.Dataset`` (what TRL trainers take). Needs the ``trl`` extra."""
    from datasets import Dataset

    return Dataset.from_list(course_rows(path, conversational=conversational))


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.integrations.trl"))
