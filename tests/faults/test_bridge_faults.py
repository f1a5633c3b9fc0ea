"""Fault suite for the bridges (issue #23, class 8: no silently wrong reward).

Each bridge must accept what its library really passes and never return a wrong number
silently: a caller's mistake raises a clear error where the library shows it (TRL, inspect),
and where an exception would itself become a silent 0 (verl's PRIME manager) the bridge
returns the instrument's ``bad_example`` verdict with its reason instead of raising.

What the libraries pass was read from their source: TRL 1.16 ``GRPOTrainer._calculate_rewards``
repeats every dataset column once per generation; inspect_ai 0.3's ``Target`` is a sequence of
strings; verl's reward managers call ``compute_score(data_source=, solution_str=, ground_truth=,
extra_info=)`` with the parquet's ground truth as stored.
"""

from __future__ import annotations

import importlib.util

import pytest

from course.integrations.trl import strict_reward
from course.integrations.verl import compute_score


# ---------------------------------------------------------------------------
# TRL: one reward per completion, or a clear error
# ---------------------------------------------------------------------------
def test_trl_strict_reward_refuses_three_completions_with_one_answer_instead_of_one_reward():
    with pytest.raises(ValueError, match=r"3 completion\(s\) and 1 value\(s\) of 'expected_answer'"):
        strict_reward(["p"] * 3, ["Final: 1", "Final: 1", "Final: 1"], expected_answer=[1])


def test_trl_strict_reward_refuses_more_answers_than_completions():
    with pytest.raises(ValueError, match="the lengths must match"):
        strict_reward(["p"], ["Final: 1"], expected_answer=[1, 2])


def test_trl_an_empty_batch_returns_no_rewards_and_logs_no_division_by_zero():
    metrics, columns = {}, {}
    assert strict_reward([], [], expected_answer=[], log_metric=metrics.__setitem__,
                         log_extra=columns.__setitem__) == []
    assert metrics == {} and columns == {}


def test_trl_a_text_part_that_is_not_a_string_scores_not_a_string_instead_of_raising():
    columns = {}
    completion = [{"role": "assistant", "content": [{"type": "text", "text": 42}]}]
    assert strict_reward(["p"], [completion], expected_answer=[42], log_extra=columns.__setitem__) == [0.0]
    assert columns["error_code"] == ["not_a_string"]


def test_trl_a_conversation_without_an_assistant_message_is_refused_not_scored_on_the_users_text():
    user_only = [{"role": "user", "content": "Final: 7"}]  # the user's text would have scored 1.0
    with pytest.raises(ValueError, match="no assistant message"):
        strict_reward(["p"], [user_only], expected_answer=[7])


@pytest.mark.parametrize("answer", ["7", " 7\n", 7], ids=["string", "padded_string", "int"])
def test_trl_an_integer_answer_given_as_text_scores_like_the_integer(answer):
    columns = {}
    assert strict_reward(["p", "p"], ["Final: 7", "Final: 8"], expected_answer=[answer] * 2,
                         log_extra=columns.__setitem__) == [1.0, 0.0]
    assert columns["error_code"] == ["ok", "wrong_answer"]


def test_trl_a_numpy_integer_answer_scores_like_the_integer():
    np = pytest.importorskip("numpy")
    columns = {}
    assert strict_reward(["p"], ["Final: 1"], expected_answer=[np.int64(1)], log_extra=columns.__setitem__) == [1.0]
    assert columns["error_code"] == ["ok"]


@pytest.mark.parametrize("answer", ["3.5", "1,000", None, 1.0, True, "9" * 5000],
                         ids=["decimal", "separator", "none", "float", "bool", "5000_digits"])
def test_trl_an_answer_that_is_not_an_integer_raises_instead_of_scoring_zero_everywhere(answer):
    with pytest.raises(ValueError, match=r"expected_answer\[0\]: the expected answer"):
        strict_reward(["p"], ["Final: 1"], expected_answer=[answer])


# ---------------------------------------------------------------------------
# verl: the parquet's ground truth as stored; never an exception (PRIME turns one into a silent 0)
# ---------------------------------------------------------------------------
def test_verl_a_5000_digit_ground_truth_is_a_named_bad_example_not_a_valueerror():
    result = compute_score(data_source="x", solution_str="Final: 3", ground_truth="9" * 5000, extra_info=None)
    assert result["score"] == 0.0 and result["error_code"] == "bad_example"
    assert "5000 digits" in result["reason"]


def test_verl_a_numpy_integer_ground_truth_scores_like_the_integer():
    np = pytest.importorskip("numpy")
    result = compute_score(data_source="x", solution_str="Final: 3", ground_truth=np.int64(3), extra_info=None)
    assert result["score"] == 1.0 and result["error_code"] == "ok"


def test_verl_extra_keyword_arguments_of_newer_reward_loops_are_accepted():
    result = compute_score(data_source="x", solution_str="Final: 3", ground_truth="3", extra_info={},
                           reward_router_address=None, reward_model_tokenizer=None)
    assert result["score"] == 1.0 and result["error_code"] == "ok"


def _prime_manager_score(result) -> float:
    """How verl's PRIME reward manager reads one compute_score result (workers/reward_manager/prime.py);
    anything else raises there and the whole batch is set to 0.0."""
    if isinstance(result, int | float | bool):
        return float(result)
    return float(result[0])


def test_verl_the_float_variant_gives_the_prime_manager_the_reward_its_dict_would_zero():
    from course.integrations.verl import compute_reward

    with pytest.raises(KeyError):
        _prime_manager_score(compute_score("x", "Final: 3", "3"))  # why compute_score is not for that manager
    assert _prime_manager_score(compute_reward("x", "Final: 3", "3")) == 1.0
    assert _prime_manager_score(compute_reward("x", "Final: 3", "9" * 5000)) == 0.0


# ---------------------------------------------------------------------------
# inspect_ai: Target("323") as inspect users write it, with no course metadata
# ---------------------------------------------------------------------------
@pytest.fixture
def inspect_eval(tmp_path):
    """Run course_strict through inspect's own eval() over samples given as inspect users write them."""
    if importlib.util.find_spec("inspect_ai") is None:
        pytest.skip("the inspect extra (inspect_ai) is not installed")
    import inspect_ai
    from inspect_ai import Task
    from inspect_ai.dataset import MemoryDataset, Sample
    from inspect_ai.model import ModelOutput, ModelUsage
    from inspect_ai.solver import generate

    from course.integrations.inspect_ai import course_strict

    def run(samples: list[tuple[str, object, str]]):
        replies = {prompt: reply for prompt, _, reply in samples}

        def respond(messages, tools, tool_choice, config):
            out = ModelOutput.from_content(model="mockllm/model", content=replies[messages[-1].text])
            out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
            return out

        task = Task(dataset=MemoryDataset([Sample(input=p, target=t, id=f"s{i}")
                                           for i, (p, t, _) in enumerate(samples)]),
                    solver=generate(), scorer=course_strict())
        log = inspect_ai.eval(task, model="mockllm/model", model_args={"custom_outputs": respond},
                              log_dir=str(tmp_path), display="none", log_format="json")[0]
        return log

    return run


def test_inspect_a_plain_string_target_is_scored_as_the_integer_it_writes(inspect_eval):
    log = inspect_eval([("What is 17 * 19?", "323", "Final: 323"), ("What is 2 + 2?", "4", "Final:4")])
    assert log.status == "success"
    scores = [s.scores["course_strict"] for s in log.samples]
    assert [s.value for s in scores] == [1.0, 0.0]
    assert [s.metadata["error_code"] for s in scores] == ["ok", "prefix_spacing"]


def test_inspect_several_targets_are_alternatives_not_one_glued_number(inspect_eval):
    log = inspect_eval([("Two answers?", ["4", "-4"], "Final: -4")])
    score = log.samples[0].scores["course_strict"]
    assert score.value == 1.0 and score.metadata["error_code"] == "ok"


def test_inspect_a_target_that_is_not_an_integer_is_the_samples_error_not_a_zero(inspect_eval):
    log = inspect_eval([("Capital of France?", "Paris", "Final: 1")])
    assert log.status == "error"
    assert "Paris" in log.error.message and "is not an integer" in log.error.message


def test_inspect_metadata_and_target_that_disagree_are_an_error_not_one_silently_chosen():
    # metadata expected_answer 5, target "323": scoring against either one is a guess (found attacking #23 item 8).
    if importlib.util.find_spec("inspect_ai") is None:
        pytest.skip("the inspect extra (inspect_ai) is not installed")
    from inspect_ai.scorer import Target

    from course.integrations.inspect_ai import expected_answers

    with pytest.raises(ValueError, match="disagree"):
        expected_answers({"expected_answer": 5}, Target("323"))
    assert expected_answers({"expected_answer": 323}, Target("323")) == [323]  # the course's own samples
    assert expected_answers({"expected_answer": 323}, Target(["0323", "323"])) == [323]
    assert expected_answers({"expected_answer": 7}, Target("")) == [7]  # no target: the metadata alone


# ---------------------------------------------------------------------------
# lm-eval logs in (course.import_completions): no credential copied into the policy name
# ---------------------------------------------------------------------------
HF_TOKEN = "hf_TopSecretToken0123456789"
API_KEY = "sk-proj-TopSecretKey0123456789"


def _policy_imported_with(tmp_path, capsys, model_args: dict, form: str) -> tuple[str, str]:
    """import_completions --format lm-eval with these model_args (as lm-eval records them: a dict or
    "k=v,k=v"); returns everything written or printed, and the policy name."""
    import json
    from pathlib import Path

    from course.import_completions import main

    bridges = Path(__file__).resolve().parents[1] / "data" / "bridges"
    results = json.loads((bridges / "lmeval_results_course_math.json").read_text(encoding="utf-8"))
    results["config"]["model_args"] = (model_args if form == "dict"
                                       else ",".join(f"{k}={v}" for k, v in model_args.items()))
    (tmp_path / "results.json").write_text(json.dumps(results), encoding="utf-8")
    out = tmp_path / "r.jsonl"
    assert main(["--format", "lm-eval", str(bridges / "lmeval_samples_course_math.jsonl"),
                 "--results", str(tmp_path / "results.json"), "--out", str(out)]) == 0
    written = out.read_text(encoding="utf-8") + capsys.readouterr().out
    return written, json.loads(written.splitlines()[0])["policy"]


@pytest.mark.parametrize("form", ["string", "dict"])
def test_lm_eval_model_args_credentials_are_not_copied_into_the_policy(tmp_path, capsys, form):
    args = {"pretrained": "org/model", "token": HF_TOKEN, "api_key": API_KEY, "add_bos_token": "True",
            "base_url": "http://me:pa55word@127.0.0.1:8000/v1"}
    written, policy = _policy_imported_with(tmp_path, capsys, args, form)
    for secret in (HF_TOKEN, API_KEY, "pa55word"):
        assert secret not in written
    assert "pretrained=org/model" in policy and "add_bos_token=True" in policy
    assert "base_url=http://127.0.0.1:8000/v1" in policy


@pytest.mark.parametrize("form", ["string", "dict"])
def test_a_credential_in_a_model_urls_query_is_not_copied_into_the_policy(tmp_path, capsys, form):
    # An Azure-style endpoint carries its key in the query (`?api-key=...`); the URL is kept, the key is not.
    args = {"model": "gpt", "base_url": f"https://host.example/v1?api-key={API_KEY}&api-version=2024-06-01&token={HF_TOKEN}#top"}
    written, policy = _policy_imported_with(tmp_path, capsys, args, form)
    assert API_KEY not in written and HF_TOKEN not in written
    # The fragment goes too: it never reaches the server, and is where a token is handed over (#token=...).
    assert "base_url=https://host.example/v1?api-version=2024-06-01" in policy and "#top" not in policy, policy


# ---------------------------------------------------------------------------
# issue #35: numpy answers in a batch, multi-part messages, lm-eval's metric
# ---------------------------------------------------------------------------
def test_batch_numpy_int64_answers_are_integers_not_a_silent_bad_example():
    np = pytest.importorskip("numpy")
    from course.instrument.spec_v1 import score
    from course.integrations.batch import score_batch

    answers = np.array([323, 63], dtype=np.int64)  # what Ray Data hands a batch function
    assert score({"expected_answer": answers[0]}, "Final: 323")["details"]["error_code"] == "bad_example"  # the fault
    out = score_batch({"completion": ["Final: 323", "Final: 63"], "expected_answer": answers})
    assert out["reward"] == [1.0, 1.0] and out["error_code"] == ["ok", "ok"]


def test_inspect_output_in_two_text_parts_scores_as_trl_scores_it():
    if importlib.util.find_spec("inspect_ai") is None:
        pytest.skip("the inspect extra (inspect_ai) is not installed")
    from inspect_ai.model import ContentText, ModelOutput

    from course.integrations.trl import strict_reward
    from course.lib.external.messages import output_text

    out = ModelOutput.from_content(model="m", content=[ContentText(text="Final: "), ContentText(text="66")])
    assert out.completion == "Final: \n66"  # inspect's own join: multiple_lines, reward 0
    assert output_text(out) == "Final: 66"
    assert strict_reward(["p"], [[{"role": "assistant", "content": [{"type": "text", "text": "Final: "},
                                                                   {"type": "text", "text": "66"}]}]],
                         expected_answer=[66]) == [1.0]


def test_lm_eval_task_metric_gives_a_right_answer_1_where_exact_match_gave_0():
    from course.integrations.lm_eval import process_results

    assert process_results({"id": "dev-0001", "expected_answer": 323}, ["Final: 323"]) == {"course_strict": 1.0}


def test_inspect_epochs_with_one_missing_are_refused_not_packed_unevenly(tmp_path, monkeypatch, capsys):
    # A log whose item s2 has epochs 1 and 3 but not 2: packing it would shift epoch 3 to sample 1.
    if importlib.util.find_spec("inspect_ai") is None:
        pytest.skip("the inspect extra (inspect_ai) is not installed")
    from types import SimpleNamespace

    import inspect_ai.log

    from course.import_completions import main

    def sample(ident: str, epoch: int):
        output = SimpleNamespace(choices=[], completion=f"Final: {epoch}")
        return SimpleNamespace(id=ident, epoch=epoch, error=None, target="1", output=output)

    log = SimpleNamespace(status="success", error=None,
                          samples=[sample("s1", 1), sample("s1", 2), sample("s2", 1), sample("s2", 3)],
                          eval=SimpleNamespace(model="m",
                                               model_generate_config=SimpleNamespace(model_dump=lambda **_: {})))
    monkeypatch.setattr(inspect_ai.log, "read_eval_log", lambda path: log)
    (tmp_path / "x.eval").write_bytes(b"")
    out = tmp_path / "pack.jsonl"
    assert main(["--format", "inspect", str(tmp_path / "x.eval"), "--pack", "--out", str(out)]) == 2
    assert "x.eval:sample 3: sample 's2' has no epoch 2 (epochs [1, 3])" in capsys.readouterr().err
    assert not out.exists()
