"""One rule for a message in several parts (course.lib.external.messages): the text parts are joined with
nothing in between, in every bridge, so ["Final: ", "66"] is the line "Final: 66" whichever library
carried it, and ["Final: 66", "\\nmore"] is two lines everywhere."""

from __future__ import annotations

import importlib.util

import pytest

from course.instrument.spec_v1 import score
from course.integrations.batch import score_batch
from course.integrations.trl import strict_reward
from course.integrations.verl import compute_score
from course.lib.external.messages import emitted_text

SPLIT = ["Final: ", "66"]  # one answer line, cut in two by the provider's stream
TWO_LINES = ["Final: 66", "\nFinal: 67"]  # the model itself wrote the newline


def _parts(texts: list[str]) -> list[dict]:
    return [{"type": "text", "text": t} for t in texts]


def test_the_rule_joins_text_parts_with_nothing_and_skips_other_parts():
    content = [{"type": "text", "text": "Final: "}, {"type": "image", "image": "x.png"}, {"type": "text", "text": "66"}]
    assert emitted_text(content) == "Final: 66"
    assert score({"expected_answer": 66}, emitted_text(content))["details"]["error_code"] == "ok"


@pytest.mark.parametrize("texts, reward, code", [(SPLIT, 1.0, "ok"), (TWO_LINES, 0.0, "multiple_lines")])
def test_trl_verl_and_the_batch_adapter_give_the_verdict_of_the_joined_text(texts, reward, code):
    assert score({"expected_answer": 66}, "".join(texts))["details"]["error_code"] == code
    conversation = [{"role": "assistant", "content": _parts(texts)}]
    logged = {}
    assert strict_reward(["p"], [conversation], expected_answer=[66], log_extra=logged.__setitem__) == [reward]
    assert logged["error_code"] == [code]
    verl = compute_score("course", _parts(texts), "66")
    assert (verl["score"], verl["error_code"]) == (reward, code)
    batch = score_batch({"completion": [conversation], "expected_answer": [66]})
    assert (batch["reward"], batch["error_code"]) == ([reward], [code])


@pytest.fixture
def inspect_parts_log(tmp_path):
    """A real inspect eval whose mock model answers with content parts; returns (log dir, log)."""
    if importlib.util.find_spec("inspect_ai") is None:
        pytest.skip("the inspect extra (inspect_ai) is not installed")
    import inspect_ai
    from inspect_ai import Task
    from inspect_ai.dataset import MemoryDataset, Sample
    from inspect_ai.model import ContentText, ModelOutput, ModelUsage
    from inspect_ai.solver import generate

    from course.integrations.inspect_ai import course_strict

    replies = {"Split?": SPLIT, "Two lines?": TWO_LINES}

    def respond(messages, tools, tool_choice, config):
        out = ModelOutput.from_content(model="mockllm/model",
                                       content=[ContentText(text=t) for t in replies[messages[-1].text]])
        out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        return out

    task = Task(dataset=MemoryDataset([Sample(input="Split?", target="66", id="split"),
                                       Sample(input="Two lines?", target="66", id="two")]),
                solver=generate(), scorer=course_strict())
    log = inspect_ai.eval(task, model="mockllm/model", model_args={"custom_outputs": respond},
                          log_dir=str(tmp_path / "logs"), display="none", log_format="eval")[0]
    assert log.status == "success"
    return tmp_path / "logs", log


def test_inspect_scores_the_parts_as_emitted_not_joined_with_newlines(inspect_parts_log):
    _, log = inspect_parts_log
    by_id = {s.id: s for s in log.samples}
    assert by_id["split"].output.completion == "Final: \n66"  # inspect's own join, which the bridge does not use
    assert by_id["split"].scores["course_strict"].value == 1.0
    assert by_id["two"].scores["course_strict"].metadata["error_code"] == "multiple_lines"


def test_imported_inspect_completions_are_the_parts_joined_by_the_same_rule(inspect_parts_log, tmp_path):
    import json

    from course.import_completions import main

    log_dir, _ = inspect_parts_log
    out = tmp_path / "imported.jsonl"
    assert main(["--format", "inspect", str(log_dir), "--out", str(out)]) == 0
    completions = {json.loads(line)["id"]: json.loads(line)["completion"] for line in out.read_text().splitlines()}
    assert completions == {"split": "Final: 66", "two": "Final: 66\nFinal: 67"}
