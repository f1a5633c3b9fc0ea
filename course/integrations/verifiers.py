"""The course's dataset and strict scorer as a ``verifiers`` (0.4) environment: a taskset plugin.

PrimeIntellect's ``verifiers`` packages an RL task as an environment its evaluation (``vf eval``)
and trainers (prime-rl) load by id. In 0.4 (``verifiers.v1``) the data half is a *taskset*: a
module exporting one ``Taskset`` subclass through ``__all__``, whose ``load()`` yields tasks, and
each task scores a finished rollout with its ``@reward`` and ``@metric`` methods. verifiers
imports a taskset by a top-level module name, so importing this module registers it under the id
``course_math`` (``TASKSET_ID``):

  * ``CourseTaskset`` yields one ``CourseTask`` per item of a course dataset (default the dev
    set; ``--env.taskset.dataset PATH``): ``TaskData.id`` is the course id, the prompt the
    item's prompt as the only user message (the course's ``plain`` template), and
    ``expected_answer`` the integer.
  * ``CourseTask.course_strict`` (a ``@reward``, weight 1) is ``course.score``'s reward of the
    model's last reply, read as emitted (text parts joined with nothing in between, as in every
    bridge; not verifiers' ``last_reply``, which strips it). The whole
    ``details`` goes into ``trace.info["course_details"]``, and the metrics carry it as numbers
    (verifiers' metrics are floats): ``strict/<code>`` is 1.0 for the verdict's error code and
    0.0 for every other, so their means over a run are the error-code shares.
  * ``load_environment(dataset=...)`` builds the environment through verifiers' own loader
    (``verifiers.v1.load_environment`` of a ``SingleAgentEnvConfig`` whose taskset id is ``course_math``):
    a ``SingleAgentEnv`` whose taskset is ``CourseTaskset``, ready for verifiers' evaluation
    and trainers::

        from course.integrations.verifiers import load_environment
        env = load_environment("data/datasets/math_holdout.jsonl")

Needs ``verifiers`` 0.4 (Python 3.11 or newer), which lives in a venv of its own (docs/bridges.md).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Iterator

try:
    import verifiers.v1 as vf
except ImportError as failure:  # the plugin cannot exist without the library it plugs into
    raise ImportError(
        "course.integrations.verifiers needs verifiers 0.4 (Python >= 3.11), in a venv of its own: "
        "pip install verifiers==0.4.0 (docs/bridges.md)", name="verifiers"
    ) from failure

from course.instrument.spec_v1 import ERROR_CODES, score
from course.lib.bundled import MATH_DEV, PROJECT_ROOT
from course.lib.external.messages import emitted_text

TASKSET_ID = "course_math"
DEFAULT_DATASET = MATH_DEV


def _resolve(dataset: str | Path) -> Path:
    p = Path(dataset)
    if not p.exists() and not p.is_absolute() and (PROJECT_ROOT / p).exists():
        return PROJECT_ROOT / p  # run from another folder, the bundled data is still found
    return p


class CourseTasksetConfig(vf.TasksetConfig):
    dataset: Path = Path(DEFAULT_DATASET)
    """The course dataset (JSONL of id, prompt, expected_answer)."""


class CourseData(vf.TaskData):
    expected_answer: int
    """The item's integer answer, as the course dataset holds it."""


def reply_text(trace: Any) -> Any:
    """The model's last reply as emitted (not stripped), or None when it sent none."""
    replies = trace.assistant_messages
    return emitted_text(replies[-1].content) if replies else None


def strict_signals(expected_answer: int, completion: Any) -> tuple[float, dict[str, float], dict[str, Any]]:
    """``(reward, metrics, details)`` of one completion: the strict verdict, the one-hot error-code
    metrics and the verdict's whole ``details``. The scorer never raises.

    >>> reward, metrics, details = strict_signals(323, "Final:323")
    >>> reward, metrics["strict/prefix_spacing"], metrics["strict/ok"], details["error_code"]
    (0.0, 1.0, 0.0, 'prefix_spacing')
    """
    verdict = score({"expected_answer": expected_answer}, completion)
    details = verdict["details"]
    metrics = {f"strict/{code}": float(details["error_code"] == code) for code in ERROR_CODES}
    return float(verdict["reward"]), metrics, details


class CourseTask(vf.Task[CourseData]):
    @vf.reward(weight=1.0)
    async def course_strict(self, trace: vf.Trace) -> float:
        reward, metrics, details = strict_signals(self.data.expected_answer, reply_text(trace))
        trace.info["course_details"] = details
        trace.record_metrics(metrics)
        return reward


class CourseTaskset(vf.Taskset[CourseTask, CourseTasksetConfig]):
    def load(self) -> Iterator[CourseTask]:
        from course.lib.records.formats import read_dataset

        for ex in read_dataset(_resolve(self.config.dataset)):
            data = CourseData(id=ex.id, name=ex.id, prompt=[{"role": "user", "content": ex.prompt}],
                              expected_answer=ex.expected_answer)
            yield CourseTask(data, self.config.task)


def load_taskset(dataset: str | Path = DEFAULT_DATASET) -> CourseTaskset:
    """The taskset over ``dataset``, loaded through verifiers' own plugin loader (by this module's id)."""
    from verifiers.v1.utils.loaders import load_taskset as vf_load_taskset

    return vf_load_taskset(CourseTasksetConfig(id=TASKSET_ID, dataset=Path(dataset)))


def load_environment(dataset: str | Path = DEFAULT_DATASET, **env: Any) -> Any:
    """The environment verifiers' eval and trainers run: a single-agent env over ``CourseTaskset``."""
    config = vf.SingleAgentEnvConfig(taskset=CourseTasksetConfig(id=TASKSET_ID, dataset=Path(dataset)), **env)
    return vf.load_environment(config)


__all__ = ["CourseTaskset"]

# verifiers resolves a taskset id to a top-level module (``import course_math``): this module is that one.
sys.modules.setdefault(TASKSET_ID, sys.modules[__name__])
