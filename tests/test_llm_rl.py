"""Loop C on the real LLM: LoRA adapters, the policy's log-probabilities, one RL step, the CLI.

The default suite runs on the tiny random Llama of conftest.py (``tiny_llm_dir``): the same
code paths as SmolLM2 in a fraction of a second. The slow tests run the packaged SmolLM2
itself (loaded from the session's shared cache, never the user's).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from rl_toy import TOY, loop_settings

from course.lib.records.manifest import PROJECT_ROOT

HAVE_LLM = all(importlib.util.find_spec(m) is not None for m in ("torch", "transformers", "safetensors"))
pytestmark = pytest.mark.skipif(not HAVE_LLM, reason="the llm extra is not installed")


def settings(**changes):  # type: ignore[no-untyped-def]
    return loop_settings(**({"group_size": 2} | changes))  # groups of 2: the smallest group that has a baseline


@pytest.fixture
def tiny_policy(tiny_llm_dir):  # type: ignore[no-untyped-def]
    """A fresh LLMPolicy on the tiny Llama (adapters are added in place: each test gets its own model)."""
    from course.lib.policy.sampling import set_threads
    from course.lib.policy.templates import FEWSHOT
    from course.llm.load import load_llm
    from course.llm.policy import LLMPolicy

    set_threads(1)
    return LLMPolicy(load_llm(str(tiny_llm_dir)), FEWSHOT, rank=4, alpha=8.0, adapter_seed=0, threads=1)


def weights(policy):  # type: ignore[no-untyped-def]
    return {n: p.detach().clone() for n, p in policy.model.named_parameters()}


# --- the adapters and the log-probabilities ------------------------------------------------------------
def test_fresh_adapters_compute_exactly_pi0(tiny_policy) -> None:
    from course.llm.lora import adapters_off

    ro = tiny_policy.generate([p.prompt for p in TOY], ["a", "b", "c", "d"], group=2, temperature=1.0, max_tokens=5)
    logp, _ = tiny_policy.logprobs(ro)
    with adapters_off(tiny_policy.model):
        ref, _ = tiny_policy.logprobs(ro)
    assert bool((logp.detach() == ref.detach()).all())  # B = 0: the update adds exactly 0.0
    assert bool((tiny_policy.reference_logprobs(ro) == ref.detach()).all())


def _cut(ro, lengths, pad_id):  # type: ignore[no-untyped-def]
    """Completions of these lengths, as end tokens make them: the mask and the tokens past each length cleared."""
    for b, n in enumerate(lengths):
        ro.mask[b, n:] = False
        ro.tokens[b, n:] = pad_id


def _assert_each_full_sequence_agrees(policy, ro) -> None:  # type: ignore[no-untyped-def]
    """completion_logprobs against one plain forward pass per prompt + completion, row by row."""
    import torch

    from course.llm.policy import completion_logprobs

    fast, _ = completion_logprobs(policy.model, ro, policy.pad_id, entropy=False)
    for b in range(ro.tokens.shape[0]):
        prompt = ro.prompt_tokens[b // ro.group][ro.prompt_valid[b // ro.group]]
        chosen = ro.tokens[b][ro.mask[b]]
        with torch.no_grad():
            logits = policy.model(input_ids=torch.cat([prompt, chosen])[None]).logits[0].float()
        full = torch.log_softmax(logits, -1)[len(prompt) - 1 : -1].gather(-1, chosen[:, None]).squeeze(-1)
        assert torch.allclose(fast[b][ro.mask[b]].detach(), full, atol=1e-5), b
        assert bool((fast[b][~ro.mask[b]] == 0).all())


def test_log_probabilities_with_the_shared_prefix_read_once_equal_those_of_each_full_sequence(tiny_policy) -> None:
    ro = tiny_policy.generate([p.prompt for p in TOY], [f"r{i}" for i in range(6)], group=3, temperature=1.0,
                              max_tokens=5)
    _cut(ro, [5, 2, 4, 1, 3, 5], tiny_policy.pad_id)  # completions of different lengths
    _assert_each_full_sequence_agrees(tiny_policy, ro)


def test_prompts_packed_two_to_a_row_keep_each_full_sequences_log_probabilities(tiny_policy) -> None:
    """Three prompts whose segments (tail + G completions) pack as [long] and [short, short]: the packed
    row's second segment sees only its own prompt, at its own positions."""
    from course.llm.policy import pack_segments
    from course.llm.sampler import shared_prefix_length

    prompts = [TOY[0].prompt, "What is 5 + 6?", "What is 3 + 4?"]
    ro = tiny_policy.generate(prompts, [f"q{i}" for i in range(6)], group=2, temperature=1.0, max_tokens=6)
    _cut(ro, [6, 6, 1, 1, 1, 2], tiny_policy.pad_id)  # the first prompt's completions long, the others short
    rows = [r[v].tolist() for r, v in zip(ro.prompt_tokens, ro.prompt_valid)]
    c = shared_prefix_length(rows, None)
    segments = [len(r) - c + int(ro.mask[2 * p : 2 * p + 2].sum()) for p, r in enumerate(rows)]
    assert any(len(row) > 1 for row in pack_segments(segments)), segments  # two prompts do share a row
    _assert_each_full_sequence_agrees(tiny_policy, ro)


def test_saved_adapters_load_back_into_a_fresh_model_and_compute_the_same_policy(tiny_policy, tiny_llm_dir,
                                                                                 tmp_path) -> None:
    import torch

    from course.lib.policy.templates import FEWSHOT
    from course.llm.load import load_llm
    from course.llm.policy import LLMPolicy, read_adapter

    with torch.no_grad():
        for p in tiny_policy.parameters():
            p.add_(0.01)  # B != 0: an adapter that changes the policy
    sha = tiny_policy.save(tmp_path / "a.safetensors")
    adapter = read_adapter(tmp_path / "a.safetensors")
    assert (adapter.sha256 == sha
            and (adapter.base_policy, adapter.rank, adapter.alpha) == (tiny_policy.pi0_name, 4, 8.0))
    again = LLMPolicy(load_llm(str(tiny_llm_dir)), FEWSHOT, rank=4, alpha=8.0, adapter_seed=1, threads=1,
                      init_adapter=adapter)
    ro = tiny_policy.generate([TOY[0].prompt], ["s0", "s1"], group=2, temperature=1.0, max_tokens=4)
    assert torch.equal(tiny_policy.logprobs(ro)[0], again.logprobs(ro)[0])
    assert tiny_policy.trained_name(sha).endswith(f"+lora:{sha[:12]}")
    assert again.save(tmp_path / "b.safetensors") == sha  # same adapters, same bytes


def test_after_a_warm_start_the_kl_reference_is_the_anchored_policy_and_stays_put_while_training_moves_on(
        tiny_policy) -> None:
    import torch

    from course.lib.learning.rl_loop import reinforce_step

    with torch.no_grad():
        for p in tiny_policy.parameters():
            p.add_(0.02)  # a "warm start": the policy is no longer pi0
    ro = tiny_policy.generate([p.prompt for p in TOY], ["w0", "w1", "w2", "w3"], group=2, temperature=1.0, max_tokens=4)
    warm = tiny_policy.logprobs(ro)[0].detach()
    tiny_policy.anchor_reference()
    assert torch.equal(tiny_policy.reference_logprobs(ro), warm)
    s = settings(beta=0.1, lr=1e-2)
    opt = torch.optim.Adam(tiny_policy.parameters(), lr=s.lr, betas=(0.9, 0.99))
    texts = tiny_policy.generate([p.prompt for p in TOY],
                                 [f"rl:{s.seed}:1:{i}:{j}" for i in range(2) for j in range(2)],
                                 group=2, temperature=1.0, max_tokens=s.max_tokens).texts
    # the reference pass sits between forward and backward
    rec = reinforce_step(s, 1, tiny_policy, opt, _rewarding({texts[0]} - {texts[1]}), TOY)
    assert "update_skipped" not in rec
    assert torch.equal(tiny_policy.reference_logprobs(ro), warm)  # the anchor did not move
    assert not torch.equal(tiny_policy.logprobs(ro)[0].detach(), warm)  # the policy did
    with tiny_policy.computing_as_anchor():  # what the holdout samples as "the warm start"
        assert torch.equal(tiny_policy.logprobs(ro)[0].detach(), warm)
        again = tiny_policy.generate([p.prompt for p in TOY], ["w0", "w1", "w2", "w3"], group=2, temperature=1.0,
                                     max_tokens=4)
    assert again.texts == ro.texts  # the warm start's own samples, drawn again after training moved on
    assert not torch.equal(tiny_policy.logprobs(ro)[0].detach(), warm)  # and the policy is itself again after the block


def test_groups_taken_from_two_batches_keep_each_completions_log_probabilities_under_the_llm(tiny_policy) -> None:
    """Dynamic sampling trains on groups of several draws (take_groups): the LLM's one-row-per-prompt
    log-probabilities read real tokens only, so each row keeps the values it had in its own batch."""
    import torch

    from course.lib.policy.sampling import take_groups

    a = tiny_policy.generate([TOY[0].prompt], ["a0", "a1"], group=2, temperature=1.0, max_tokens=4)
    b = tiny_policy.generate([TOY[1].prompt + " Think."], ["b0", "b1"], group=2, temperature=1.0, max_tokens=2)
    both = take_groups([(b, 0), (a, 0)])
    with torch.no_grad():
        got = tiny_policy.logprobs(both)[0]
        for rows, ro in ((slice(0, 2), b), (slice(2, 4), a)):
            own = tiny_policy.logprobs(ro)[0]
            assert torch.allclose(got[rows, : own.shape[1]], own, atol=1e-5)


# --- one step of the loop -----------------------------------------------------------------------------
def _rewarding(texts_to_reward: set[str]):  # type: ignore[no-untyped-def]
    """A rubric that pays 1 for the listed completions and 0 for any other (the sign test's reward)."""
    def rubric(example, text):  # type: ignore[no-untyped-def]
        return {"reward": 1.0 if text in texts_to_reward else 0.0, "details": {"error_code": "ok"}}
    return rubric


def test_one_rl_step_raises_the_log_probability_of_the_completion_with_the_positive_advantage(tiny_policy) -> None:
    import torch

    from course.lib.learning.rl_loop import reinforce_step

    s = settings(lr=1e-2)
    seeds = [f"rl:{s.seed}:1:{i}:{j}" for i in range(2) for j in range(2)]  # the rows reinforce_step draws at step 1
    ro = tiny_policy.generate([p.prompt for p in TOY], seeds, group=2, temperature=1.0, max_tokens=s.max_tokens)
    assert ro.texts[0] != ro.texts[1] and ro.texts[2] != ro.texts[3], ("the toy batch needs two different samples "
                                                                       "per prompt")
    before, _ = tiny_policy.logprobs(ro)
    opt = torch.optim.Adam(tiny_policy.parameters(), lr=s.lr, betas=(0.9, 0.99))
    rec = reinforce_step(s, 1, tiny_policy, opt, _rewarding({ro.texts[0], ro.texts[3]}), TOY)
    assert rec["example"] == ro.texts[0] and "update_skipped" not in rec  # the same on-policy rows were drawn
    with torch.no_grad():
        after, _ = tiny_policy.logprobs(ro)
    gain = (after - before.detach()).sum(dim=1)  # change of log pi(whole completion), per row
    assert float(gain[0]) > 0 and float(gain[3]) > 0  # advantage +1/2: more likely
    assert float(gain[1]) < 0 and float(gain[2]) < 0  # advantage -1/2: less likely


@pytest.mark.parametrize("which", ["llm", "tinylm"])
def test_a_step_whose_rewards_are_all_equal_leaves_every_weight_bit_identical_even_after_adam_has_momentum(
        which, tiny_policy) -> None:
    """beta 0 and one reward for every sample: the gradient is exactly zero, so the loop makes no
    update. Adam with momentum from an earlier step WOULD move the weights (m != 0): it is skipped."""
    import torch

    from course.lib.learning.rl_loop import reinforce_step

    policy = tiny_policy if which == "llm" else _tiny_lm_policy()
    s = settings(beta=0.0, lr=1e-2)
    opt = torch.optim.Adam(policy.parameters(), lr=s.lr, betas=(0.9, 0.99))
    first = reinforce_step(s, 1, policy, opt, _rewarding(set()) if which == "tinylm" else _first_row_paid(policy, s),
                           TOY)
    if which == "tinylm":  # give Adam momentum with a gradient of our own choosing
        opt.zero_grad()
        sum(p.sum() for p in policy.parameters()).backward()
        opt.step()
    else:
        assert "update_skipped" not in first  # a real update: Adam now has momentum
    before = {i: p.detach().clone() for i, p in enumerate(policy.parameters())}
    rec = reinforce_step(s, 2, policy, opt, _rewarding(set()), TOY)  # every reward 0
    assert rec["update_skipped"] is True and rec["no_signal_groups"] == 1.0 and rec["grad_norm"] == 0.0
    assert all(torch.equal(before[i], p.detach()) for i, p in enumerate(policy.parameters()))


def _first_row_paid(policy, s):  # type: ignore[no-untyped-def]
    seeds = [f"rl:{s.seed}:1:{i}:{j}" for i in range(2) for j in range(2)]
    ro = policy.generate([p.prompt for p in TOY], seeds, group=2, temperature=1.0, max_tokens=s.max_tokens)
    return _rewarding({ro.texts[0]} - {ro.texts[1]})


def _tiny_lm_policy():  # type: ignore[no-untyped-def]
    import torch

    from course.tinylm.model import GPT, GPTConfig
    from course.tinylm.policy import TinyLMPolicy

    torch.manual_seed(0)
    cfg = GPTConfig(n_layer=1, n_head=2, n_embd=32, block_size=96)
    model, ref = GPT(cfg), GPT(cfg)
    ref.load_state_dict(model.state_dict())
    info = {"policy": "tinylm:toy", "n_params": 0}
    return TinyLMPolicy(model, ref, info, info, 1)


# --- the command line ---------------------------------------------------------------------------------
def llm_rl(run_in_process, *args: str):  # type: ignore[no-untyped-def]
    return run_in_process("course.llm.rl", list(args), cwd=PROJECT_ROOT)


def tiny_run_args(model: Path, out: Path, *extra: str) -> list[str]:
    return ["--model", str(model), "--template", "fewshot", "--steps", "2", "--prompts-per-step", "2",
            "--group-size", "2", "--max-tokens", "4", "--slice-items", "3", "--eval-samples", "1",
            "--eval-every", "1", "--threads", "1", "--outdir", str(out), *extra]


def test_help_ends_with_a_worked_example(run_in_process) -> None:
    proc = llm_rl(run_in_process, "--help")
    assert (proc.returncode == 0 and "example:" in proc.stdout
            and "--template {fewshot,gsm8k_final,plain}" in proc.stdout)


def test_the_template_must_be_named(run_in_process, tmp_path) -> None:
    proc = llm_rl(run_in_process, "--outdir", str(tmp_path / "r"))
    assert proc.returncode == 2 and "--template" in proc.stderr and not (tmp_path / "r").exists()


def test_a_run_on_the_tiny_model_writes_the_loop_c_layout_and_its_log_is_reproducible(run_in_process, tiny_llm_dir,
                                                                                       tmp_path,
                                                                                       figures_not_rendered) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    proc = llm_rl(run_in_process, *tiny_run_args(tiny_llm_dir, a, "--holdout-samples", "1"))
    assert proc.returncode == 0, proc.stderr
    for name in ("rl_log.jsonl", "curves.csv", "final.safetensors", "gate.txt", "summary.json", "manifest.json",
                 "holdout_pi0_pack.jsonl", "eval_pi0_holdout", "eval_final_holdout"):
        assert (a / name).exists(), name
    manifest = json.loads((a / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["prompt_template"]["name"] == "fewshot" and manifest["model"]["source"] == "local-path"
    assert manifest["adapters"]["kind"] == "LoRA" and "peak_rss_mb" in manifest and "wall_seconds" in manifest
    first = json.loads((a / "holdout_pi0_pack.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert first["prompt_template"]["name"] == "fewshot"  # the environment, on every line: a Locked Room field
    assert llm_rl(run_in_process, *tiny_run_args(tiny_llm_dir, b, "--no-holdout")).returncode == 0
    assert (a / "rl_log.jsonl").read_bytes() == (b / "rl_log.jsonl").read_bytes()


def test_rft_with_no_passing_sample_says_there_is_nothing_to_clone(run_in_process, tiny_llm_dir, tmp_path) -> None:
    out = tmp_path / "r"
    proc = llm_rl(run_in_process, *tiny_run_args(tiny_llm_dir, out, "--steps", "1", "--no-holdout",
                                                 "--warm-start", "rft", "--rft-problems", "2", "--rft-samples", "2"))
    assert proc.returncode == 0, proc.stderr
    assert "nothing to clone" in proc.stderr
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["warm_start"]["problems_kept"] == 0 and summary["warm_start"]["samples"] == 4


# --- the real model (slow) ----------------------------------------------------------------------------
@pytest.mark.slow
def test_with_the_plain_template_every_reward_is_zero_and_the_run_says_no_update_was_made(run_in_process, real_llm,
                                                                                          llm_cache_dir, tmp_path,
                                                                                          monkeypatch) -> None:
    monkeypatch.setenv("COURSE_LLM_CACHE", str(llm_cache_dir))  # the session's cache, never the user's
    out = tmp_path / "plain"
    proc = llm_rl(run_in_process, "--template", "plain", "--steps", "2", "--prompts-per-step", "2", "--group-size", "4",
                  "--slice-items", "2", "--eval-samples", "1", "--eval-every", "2", "--no-holdout", "--threads", "2",
                  "--outdir", str(out))
    assert proc.returncode == 0, proc.stderr
    log = [json.loads(line) for line in (out / "rl_log.jsonl").read_text(encoding="utf-8").splitlines()]
    steps = [r for r in log if r["step"] > 0]
    assert all(r["reward"] == 0.0 and r["no_signal_groups"] == 1.0 and r["update_skipped"] for r in steps)
    assert all(r["pg_samples"] == 0 for r in steps)  # the zero-signal accounting: no sample carried a signal
    assert all(r["kl_k1_per_token"] == 0.0 for r in steps)  # the policy never left pi0
    assert "2 of 2 steps had a gradient of exactly zero" in proc.stderr
    assert "0 of 16 samples (0%) carried a policy-gradient signal" in proc.stderr


@pytest.mark.slow
def test_a_short_fewshot_run_on_the_real_model_evaluates_pi0_and_the_final_policy_on_the_holdout(
        run_in_process, real_llm, llm_cache_dir, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("COURSE_LLM_CACHE", str(llm_cache_dir))
    out = tmp_path / "fewshot"
    proc = llm_rl(run_in_process, "--template", "fewshot", "--steps", "2", "--prompts-per-step", "4",
                  "--group-size", "4", "--slice-items", "4", "--eval-samples", "1", "--eval-every", "2",
                  "--holdout-samples", "1", "--max-tokens", "8", "--threads", "2", "--outdir", str(out))
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    h = summary["holdout"]
    assert h["items"] == 50 and h["pi0"]["samples"] == 50 and h["gate"]["verdict"] in ("ACCEPT", "REJECT")
    assert summary["template"] == "fewshot" and summary["pi0"].startswith("SmolLM2-135M-Instruct.Q4_1:")
    assert "Holdout headline" in proc.stdout


def test_the_fused_weights_of_sampling_are_let_go_before_the_gradient_pass_and_made_again_the_same(tiny_policy):  # type: ignore[no-untyped-def]
    """An RL step's peak memory is its gradient pass: the sampler's fused copy of the weights is dropped when
    the policy turns to training, and the next sampling makes it again from the same weights."""
    tiny_policy.train_mode(False)
    first = tiny_policy.generate([TOY[0].prompt], ["f0", "f1"], group=2, temperature=1.0, max_tokens=4)
    assert "_course_fused_blocks" in tiny_policy.model.__dict__
    tiny_policy.train_mode(True)
    assert "_course_fused_blocks" not in tiny_policy.model.__dict__
    tiny_policy.train_mode(False)
    again = tiny_policy.generate([TOY[0].prompt], ["f0", "f1"], group=2, temperature=1.0, max_tokens=4)
    assert again.texts == first.texts and bool((again.tokens == first.tokens).all())


def test_the_llms_gradient_pass_in_two_parts_gives_the_one_pass_gradient_through_the_shared_prefix(
        tiny_llm_dir) -> None:
    """Each part differentiates through the prompt prefix (course.llm.prefix_cache): the first part's backward
    spends the graph cached at sampling, the second reads the prefix again; the sum is the one-pass gradient."""
    import torch

    from course.lib.learning.rl_loop import reinforce_step
    from course.lib.policy.sampling import set_threads
    from course.lib.policy.templates import FEWSHOT
    from course.llm.load import load_llm
    from course.llm.policy import LLMPolicy

    def odd_sum(example, text):  # type: ignore[no-untyped-def]
        even = sum(map(ord, text)) % 2 == 0
        return {"reward": float(even), "details": {"error_code": "ok" if even else "wrong_answer"}}

    set_threads(1)
    grads, recs = {}, {}
    for chunks in (1, 2):
        policy = LLMPolicy(load_llm(str(tiny_llm_dir)), FEWSHOT, rank=4, alpha=8.0, adapter_seed=0, threads=1)
        s = settings(group_size=4, beta=0.1, grad_chunks=chunks, grad_clip=1e6)
        opt = torch.optim.SGD(policy.parameters(), lr=0.0)  # no move: the gradient stays in .grad
        recs[chunks] = reinforce_step(s, 1, policy, opt, odd_sum, TOY)
        grads[chunks] = [p.grad.detach().clone() for p in policy.parameters()]
    assert recs[1]["pg_samples"] > 0 and any(float(g.abs().max()) > 0 for g in grads[1])
    for a, b in zip(grads[1], grads[2]):
        assert torch.allclose(a, b, rtol=1e-4, atol=1e-7)
    assert recs[2]["pg_loss"] == pytest.approx(recs[1]["pg_loss"], rel=1e-4, abs=1e-7)
