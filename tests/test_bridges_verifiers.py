"""verifiers bridge: the course dataset and strict scorer as a verifiers 0.4 taskset, with the real library.

verifiers 0.4 needs Python >= 3.11 and brings its own client stack, so it lives in a venv of its own
(.ci/run); in the project's venv these tests are skipped, except the one that checks the message a
missing library gives.
"""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path

import pytest

from course.instrument.spec_v1 import ERROR_CODES, score
from course.lib.records.formats import iter_completions, read_dataset

REPO = Path(__file__).resolve().parent.parent
DEV = REPO / "data" / "datasets" / "math_dev.jsonl"
FROZEN = REPO / "data" / "rollouts" / "frozen_rollouts_dev.jsonl"
HAVE_VERIFIERS = importlib.util.find_spec("verifiers") is not None
needs_verifiers = pytest.mark.skipif(not HAVE_VERIFIERS,
                                     reason="verifiers 0.4 (Python >= 3.11) is not installed: a venv of its own")


def scored_trace(task, text):  # type: ignore[no-untyped-def]
    """A real verifiers trace of one rollout (the task's prompt, then the model's reply), scored by the task."""
    import verifiers.v1 as vf
    from verifiers.v1.graph import MessageNode
    from verifiers.v1.trace import AgentInfo, Trace, TraceTask
    from verifiers.v1.types import AssistantMessage

    nodes = [MessageNode(message=m) for m in task.data.prompt]
    if text is not None:
        nodes.append(MessageNode(parent=len(nodes) - 1, message=AssistantMessage(content=text), sampled=True))
    trace = Trace(task=TraceTask(type=type(task).__name__, data=task.data), agent=AgentInfo(config=vf.AgentConfig()),
                  nodes=nodes)
    asyncio.run(task.score(trace))
    return trace


@needs_verifiers
def test_load_environment_gives_verifiers_a_single_agent_env_over_every_course_item():
    import verifiers.v1 as vf

    from course.integrations.verifiers import CourseTask, load_environment

    env = load_environment(str(DEV))
    assert isinstance(env, vf.Env)
    tasks = list(env.taskset)
    items = read_dataset(DEV)
    assert [t.data.id for t in tasks] == [ex.id for ex in items]
    assert all(isinstance(t, CourseTask) for t in tasks)
    assert [t.data.expected_answer for t in tasks] == [ex.expected_answer for ex in items]
    assert [[(m.role, m.content) for m in t.data.prompt] for t in tasks] == [[("user", ex.prompt)] for ex in items]


@needs_verifiers
def test_the_reward_and_metrics_of_every_frozen_rollout_are_course_scores_verdict():
    from course.integrations.verifiers import load_taskset

    tasks = {t.data.id: t for t in load_taskset(str(DEV))}
    items = {ex.id: ex.as_dict() for ex in read_dataset(DEV)}
    for c in iter_completions(str(FROZEN)):
        trace = scored_trace(tasks[c.id], c.completion)
        verdict = score(items[c.id], c.completion)
        assert trace.rewards["course_strict"].score == verdict["reward"]
        assert trace.info["course_details"] == verdict["details"]
        code = verdict["details"]["error_code"]
        assert {k: v for k, v in trace.metrics.items()} == {f"strict/{e}": float(e == code) for e in ERROR_CODES}


@needs_verifiers
@pytest.mark.parametrize("text", ["Final: 323\n\n", "Final:323", "Final: 323\nFinal: 323", "final: 323", None])
def test_a_reply_gets_course_scores_verdict_whatever_its_format(text):
    from course.integrations.verifiers import load_taskset

    task = next(iter(load_taskset(str(DEV))))
    trace = scored_trace(task, text)
    verdict = score({"expected_answer": 323}, text)
    assert trace.rewards["course_strict"].score == verdict["reward"]
    assert trace.info["course_details"] == verdict["details"]


@pytest.mark.skipif(HAVE_VERIFIERS, reason="checks the message given where verifiers is not installed")
def test_without_verifiers_the_import_names_the_library_and_where_it_lives():
    with pytest.raises(ImportError, match=r"needs verifiers 0\.4 \(Python >= 3\.11\), in a venv of its own") as info:
        importlib.import_module("course.integrations.verifiers")
    assert info.value.name == "verifiers"
