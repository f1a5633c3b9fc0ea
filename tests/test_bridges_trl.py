"""TRL bridge: the reward function's contract, the exact HF twin of pi0, and a real GRPOTrainer run on CPU.

No hub access: the model is the course's tiny LM converted to a config-built GPT-NeoX, and the
tokenizer is built from the course's character vocabulary.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from course.integrations.trl import completion_text, make_strict_reward, strict_reward

REPO = Path(__file__).resolve().parent.parent
DEV = str(REPO / "data" / "datasets" / "math_dev.jsonl")


def test_reward_function_scores_text_and_conversational_completions_alike():
    text = strict_reward(["p", "p"], ["Final: 323", "Final:323"], expected_answer=[323, 323])
    chat = strict_reward(
        [[{"role": "user", "content": "p"}]] * 2,
        [[{"role": "assistant", "content": "Final: 323"}], [{"role": "assistant", "content": "Final:323"}]],
        expected_answer=[323, 323],
    )
    assert text == chat == [1.0, 0.0]


def test_reward_function_logs_the_share_of_every_error_code_and_a_code_column():
    metrics, columns = {}, {}
    strict_reward(["p"] * 4, ["Final: 1", "Final:1", "1", "Final: 2"], expected_answer=[1, 1, 1, 1],
                  log_metric=metrics.__setitem__, log_extra=columns.__setitem__)
    assert metrics["strict/ok"] == 0.25 and metrics["strict/prefix_spacing"] == 0.25
    assert metrics["strict/wrong_answer"] == 0.25 and metrics["strict/empty"] == 0.0
    assert columns["error_code"] == ["ok", "prefix_spacing", "missing_prefix", "wrong_answer"]


def test_reward_function_names_the_missing_answer_column():
    with pytest.raises(KeyError, match="answer"):
        make_strict_reward("answer")(["p"], ["Final: 1"], expected_answer=[1])


def test_non_text_completion_scores_zero_with_a_code():
    assert completion_text([{"role": "assistant", "content": None}]) is None
    columns = {}
    assert strict_reward(["p"], [[{"role": "assistant", "content": None}]], expected_answer=[1],
                         log_extra=columns.__setitem__) == [0.0]
    assert columns["error_code"] == ["not_a_string"]


@pytest.mark.slow  # builds a transformers model and compares logits: seconds, not milliseconds
def test_hf_twin_computes_the_same_logits_as_pi0():
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers", reason="the trl extra (transformers) is not installed")
    from course.integrations.hf_twin import char_tokenizer, policy_prompt, twin_from_gpt
    from course.tinylm.model import load_checkpoint
    from course.tinylm.vocab import VOCAB

    gpt, _ = load_checkpoint(REPO / "data" / "tinylm" / "pi0.pt")
    twin = twin_from_gpt(gpt).eval()
    ids = char_tokenizer()(policy_prompt("Compute 17 * 19.") + "Final: 323", add_special_tokens=False)["input_ids"]
    assert ids == [VOCAB.BOS] + VOCAB.encode("Compute 17 * 19.") + [VOCAB.SEP] + VOCAB.encode("Final: 323")
    x = torch.tensor([ids])
    with torch.no_grad():
        ref, _ = gpt.eval()(x, torch.arange(len(ids))[None], None)
        got = twin(x).logits
    assert torch.allclose(ref, got, atol=1e-5)


@pytest.mark.slow  # a real GRPOTrainer step on CPU
def test_grpo_trainer_runs_a_step_on_cpu_with_the_course_reward_and_logs_error_codes(tmp_path, monkeypatch):
    pytest.importorskip("trl", reason="the trl extra (trl, transformers, datasets) is not installed")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from course.integrations.hf_twin import char_tokenizer, policy_prompt, twin_from_gpt
    from course.integrations.trl import course_rows
    from course.tinylm.model import load_checkpoint

    gpt, _ = load_checkpoint(REPO / "data" / "tinylm" / "pi0.pt")
    rows = course_rows(DEV)[:4]
    for r in rows:
        r["prompt"] = policy_prompt(r["prompt"])
    args = GRPOConfig(
        output_dir=str(tmp_path), per_device_train_batch_size=4, num_generations=4, max_completion_length=12,
        max_steps=1, learning_rate=1e-4, logging_steps=1, report_to=[], save_strategy="no", use_cpu=True,
        seed=0, disable_tqdm=True,
    )
    trainer = GRPOTrainer(model=twin_from_gpt(gpt), reward_funcs=strict_reward, args=args,
                          train_dataset=Dataset.from_list(rows), processing_class=char_tokenizer())
    trainer.train()
    logged = trainer.state.log_history[0]
    shares = {k: v for k, v in logged.items() if k.startswith("strict/")}
    from course.instrument.spec_v1 import ERROR_CODES

    assert len(shares) == len(ERROR_CODES) and abs(sum(shares.values()) - 1.0) < 1e-6
    assert logged["rewards/course_strict/mean"] == pytest.approx(shares["strict/ok"])


@pytest.mark.slow  # writes and reloads a transformers model folder: seconds
def test_the_saved_twin_reloads_offline_with_the_same_logits_and_tokens_and_is_not_overwritten(tmp_path, capsys):
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers", reason="the trl extra (transformers) is not installed")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from course.integrations.hf_twin import char_tokenizer, main, policy_prompt, twin_from_gpt
    from course.tinylm.model import load_checkpoint

    out = tmp_path / "twin"
    assert main(["--out", str(out)]) == 0
    assert f"pretrained={out},dtype=float32" in capsys.readouterr().out  # the lm_eval line to run next
    model = AutoModelForCausalLM.from_pretrained(out, local_files_only=True).eval()
    tokenizer = AutoTokenizer.from_pretrained(out, local_files_only=True)
    text = policy_prompt("Compute 17 * 19.") + "Final: 323"
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    assert ids == char_tokenizer()(text, add_special_tokens=False)["input_ids"]
    gpt, _ = load_checkpoint(REPO / "data" / "tinylm" / "pi0.pt")
    with torch.no_grad():
        assert torch.allclose(model(torch.tensor([ids])).logits, twin_from_gpt(gpt).eval()(torch.tensor([ids])).logits)
    assert main(["--out", str(out)]) == 2 and "exists" in capsys.readouterr().err
    (tmp_path / "mine").mkdir()
    assert main(["--out", str(tmp_path / "mine"), "--force"]) == 2  # not a folder this command wrote
    assert "was not written by this command" in capsys.readouterr().err
