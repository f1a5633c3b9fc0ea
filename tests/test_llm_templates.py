"""course.lib.policy.templates: the prompt templates are named, fingerprinted, and never leak an evaluated item."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from course.errors import CourseError
from course.lib.policy import templates
from course.lib.policy.templates import FEWSHOT, GSM8K_FINAL, PLAIN, TEMPLATES, get_template
from course.lib.records.formats import read_dataset
from course.lib.records.jsonl import dumps_line

ROOT = Path(__file__).resolve().parents[1]
PROMPT = "Compute 2 + 3. Output exactly one line: Final: <int>"


def test_plain_is_the_dataset_prompt_as_the_only_user_message() -> None:
    assert PLAIN.messages(PROMPT) == [{"role": "user", "content": PROMPT}]


def test_fewshot_is_a_system_prompt_two_worked_examples_then_the_item() -> None:
    chat = FEWSHOT.messages(PROMPT)
    assert [m["role"] for m in chat] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert chat[-1] == {"role": "user", "content": PROMPT}
    assert all(m["content"].startswith("Final: ") for m in chat if m["role"] == "assistant")


def test_the_worked_examples_answer_their_own_questions_correctly_under_the_strict_scorer() -> None:
    from course.instrument.spec_v1 import score

    answers = {"Compute 14 * 6.": 84, "The temperature is 4 degrees and drops by 9 degrees.": -5}
    for (user, assistant), (question, expected) in zip(FEWSHOT.shots, answers.items()):
        assert user.startswith(question)
        verdict = score({"id": "shot", "prompt": user, "expected_answer": expected}, assistant)
        assert verdict["reward"] == 1.0 and verdict["details"]["error_code"] == "ok"


def test_the_gsm8k_templates_worked_word_problems_answer_correctly_under_the_strict_scorer() -> None:
    from course.instrument.spec_v1 import score

    chat = GSM8K_FINAL.messages(PROMPT)
    assert ([m["role"] for m in chat] == ["system", "user", "assistant", "user", "assistant", "user"]
            and chat[-1]["content"] == PROMPT)
    for (user, assistant), expected in zip(GSM8K_FINAL.shots, (7 * 36 - 150, 45 - 3 * 12)):
        assert user.endswith("Output exactly one line: Final: <int>")  # as course.datasets import words every prompt
        verdict = score({"id": "shot", "prompt": user, "expected_answer": expected}, assistant)
        assert verdict["reward"] == 1.0 and verdict["details"]["error_code"] == "ok"


def test_no_gsm8k_worked_example_is_an_item_of_the_bundled_gsm8k_sample() -> None:
    import json

    sample = ROOT / "tests" / "data" / "bridges" / "gsm8k_sample.jsonl"
    questions = [json.loads(line)["question"] for line in sample.read_text(encoding="utf-8").splitlines()]
    assert questions, "the sample was not read"
    assert [user for user, _ in GSM8K_FINAL.shots if any(user.startswith(q) or q in user for q in questions)] == []


def test_no_worked_example_is_a_dev_or_holdout_item() -> None:
    evaluated = {ex.prompt for name in ("math_dev", "math_holdout")
                 for ex in read_dataset(ROOT / "data" / "datasets" / f"{name}.jsonl")}
    assert evaluated, "the bundled datasets were not read"
    assert [user for t in TEMPLATES.values() for user, _ in t.shots if user in evaluated] == []


def test_the_fingerprint_is_the_sha256_of_the_exact_text_with_the_prompt_slot() -> None:
    for t in TEMPLATES.values():
        assert t.text == dumps_line(t.messages("{prompt}"))
        assert t.fingerprint == hashlib.sha256(t.text.encode("utf-8")).hexdigest()
        assert t.record() == {"name": t.name, "sha256": t.fingerprint}
    assert PLAIN.fingerprint != FEWSHOT.fingerprint


def test_changing_one_word_of_a_template_changes_its_fingerprint() -> None:
    edited = templates.PromptTemplate(FEWSHOT.name, FEWSHOT.summary, FEWSHOT.system + " ", FEWSHOT.shots)
    assert edited.fingerprint != FEWSHOT.fingerprint


def test_an_unknown_template_name_is_refused_with_the_choices() -> None:
    with pytest.raises(CourseError, match="unknown prompt template 'chain'; choose one of: plain, fewshot"):
        get_template("chain")


def test_a_file_without_the_field_counts_as_the_plain_template() -> None:
    assert templates.IMPLICIT is PLAIN
    assert templates.describe(None) == "plain (implicit: the dataset prompt as-is)"


def test_render_passes_the_messages_through_the_tokenizers_chat_template() -> None:
    class Recorder:
        def apply_chat_template(self, messages, tokenize, add_generation_prompt):  # type: ignore[no-untyped-def]
            assert tokenize is False and add_generation_prompt is True
            return dumps_line(messages)

    assert templates.render(Recorder(), FEWSHOT, PROMPT) == dumps_line(FEWSHOT.messages(PROMPT))
