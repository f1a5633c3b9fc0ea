"""course.llm.prefix_cache: the template's shared prefix computed once per policy state and reused.

Tolerances. The log-probability passes read the cached keys and values that the model's own forward
computed, the same operations on the same inputs as a fresh prefix: equal bit for bit on one machine and
thread count (asserted exactly). The gradient through the graph that sampling cached is held to the gradient
of each prompt + completion read whole, with no cache at all: another order of float32 sums over a few
hundred terms (the block mask, the prefix apart), so 1e-4 relative, 1e-6 absolute; a gradient that missed
the prefix's part is off by far more. Sampling's lean decoder reads those keys instead of its own fused-
weight prefix pass: its logits differ by float32 rounding (ATOL 1e-5, as tests/test_llm_decoder.py), and
greedy decoding draws the same tokens. Run on the tiny random Llama of conftest.py (``tiny_llm_dir``).
"""

from __future__ import annotations

import importlib.util

import pytest
from rl_toy import TOY

HAVE_LLM = all(importlib.util.find_spec(m) is not None for m in ("torch", "transformers", "safetensors"))
pytestmark = pytest.mark.skipif(not HAVE_LLM, reason="the llm extra is not installed")
ATOL = 1e-5


@pytest.fixture
def policy(tiny_llm_dir):  # type: ignore[no-untyped-def]
    """A fresh LLMPolicy on the tiny Llama, its adapters' B moved off zero (so the adapters shape the prefix)."""
    import torch

    from course.lib.policy.sampling import set_threads
    from course.lib.policy.templates import FEWSHOT
    from course.llm.load import load_llm
    from course.llm.policy import LLMPolicy

    set_threads(1)
    pol = LLMPolicy(load_llm(str(tiny_llm_dir)), FEWSHOT, rank=4, alpha=8.0, adapter_seed=0, threads=1)
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for p in pol.parameters():
            if p.shape[1] == 4:  # lora_B (out x rank)
                p.copy_(torch.randn(p.shape, generator=gen) * 0.05)
    return pol


def rollouts(pol, tag="s", temperature=1.0):  # type: ignore[no-untyped-def]
    return pol.generate([p.prompt for p in TOY], [f"{tag}{i}" for i in range(2 * len(TOY))], group=2,
                        temperature=temperature, max_tokens=6)


def counting(monkeypatch):  # type: ignore[no-untyped-def]
    """Count the prefix forwards (``_compute`` calls) from now on."""
    from course.llm import prefix_cache

    calls: list[bool] = []
    real = prefix_cache._compute

    def wrapped(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(True)
        return real(*args, **kwargs)

    monkeypatch.setattr(prefix_cache, "_compute", wrapped)
    return calls


def grads(pol):  # type: ignore[no-untyped-def]
    return [p.grad.detach().clone() for p in pol.parameters()]


def test_greedy_sampling_draws_the_same_tokens_with_the_cached_prefix_as_with_its_own_prefix_pass(
        policy, monkeypatch) -> None:
    from course.llm import sampler

    cached = rollouts(policy, temperature=0.0)
    assert "_course_prefix_kv" in policy.model.__dict__  # the cache was used
    monkeypatch.setattr(sampler, "prefix_kv", lambda *a, **k: None)  # the decoder's own prefix pass
    own = rollouts(policy, temperature=0.0)
    assert cached.tokens.tolist() == own.tokens.tolist() and cached.texts == own.texts


def test_the_lean_decoder_gives_the_same_logits_from_the_cached_prefix_within_float32_rounding(policy) -> None:
    import torch

    from course.llm.decoder import LlamaDecoder
    from course.llm.prefix_cache import prefix_kv
    from course.llm.sampler import encode_prompts, split_prompts

    prompt, valid = encode_prompts(policy.tokenizer, policy.render([p.prompt for p in TOY]))
    prefix, tails, tail_valid = split_prompts(prompt, valid, policy.pad_id, policy.shared_prefix)
    assert len(prefix) == len(policy.shared_prefix) > 10
    own, _ = LlamaDecoder(policy.model).prefill(prefix, tails, tail_valid, 1, 2)
    cached, _ = LlamaDecoder(policy.model).prefill(prefix, tails, tail_valid, 1, 2,
                                                   prefix_kv(policy.model, prefix, graph=False))
    assert torch.allclose(own, cached, atol=ATOL)


def test_one_prefix_forward_serves_every_sampling_batch_and_the_pi_pass_and_pi0_keeps_its_own(
        policy, monkeypatch) -> None:
    calls = counting(monkeypatch)
    ro = rollouts(policy)
    rollouts(policy, tag="t")  # a second batch in the same policy state
    policy.logprobs(ro)
    assert len(calls) == 1  # the LoRA-on prefix: once for both batches and the pi pass
    policy.reference_logprobs(ro)
    policy.reference_logprobs(ro)
    assert len(calls) == 2  # pi0's (adapters off): its own entry, once


def test_after_an_optimizer_step_the_policy_reads_a_new_prefix_and_pi0_the_one_it_had(policy, monkeypatch) -> None:
    import torch

    ro = rollouts(policy)
    policy.logprobs(ro)[0].sum().backward()
    ref_before = policy.reference_logprobs(ro)
    torch.optim.SGD(policy.parameters(), lr=0.5).step()
    calls = counting(monkeypatch)
    assert torch.equal(policy.reference_logprobs(ro), ref_before) and calls == []  # pi0 does not move
    policy.logprobs(ro)
    assert len(calls) == 1  # the adapters moved: the LoRA-on prefix is computed again


def full_sequence_loss(pol, ro, weight):  # type: ignore[no-untyped-def]
    """The same weighted sum of log-probabilities, each prompt + completion read whole: no cache at all."""
    import torch

    total = torch.zeros(())
    for b in range(ro.tokens.shape[0]):
        prompt = ro.prompt_tokens[b // ro.group][ro.prompt_valid[b // ro.group]]
        chosen = ro.tokens[b][ro.mask[b]]
        logits = pol.model(input_ids=torch.cat([prompt, chosen])[None]).logits[0].float()
        logp = torch.log_softmax(logits, -1)[len(prompt) - 1 : -1].gather(-1, chosen[:, None]).squeeze(-1)
        total = total + (logp * weight[b][ro.mask[b]]).sum()
    return total


def test_the_gradient_through_the_prefix_cached_at_sampling_equals_that_of_each_sequence_read_whole(
        policy) -> None:
    import torch

    ro = rollouts(policy)  # caches the prefix with its graph, as an RL step's sampling does
    weight = torch.linspace(-1.0, 1.0, ro.tokens.numel()).view_as(ro.tokens)
    logp, _ = policy.logprobs(ro)
    (logp * weight).sum().backward()
    shared = grads(policy)
    for p in policy.parameters():
        p.grad = None
    full_sequence_loss(policy, ro, weight).backward()
    for a, b in zip(shared, grads(policy)):
        assert torch.allclose(a, b, rtol=1e-4, atol=1e-6)


def test_log_probabilities_from_the_cached_prefix_equal_those_of_a_fresh_prefix_bit_for_bit(policy) -> None:
    import torch

    from course.llm.prefix_cache import forget

    ro = rollouts(policy)
    cached, _ = policy.logprobs(ro)
    forget(policy.model)
    fresh, _ = policy.logprobs(ro)
    assert torch.equal(cached.detach(), fresh.detach())


def test_a_second_backward_in_the_same_policy_state_computes_the_prefix_again_instead_of_reusing_a_spent_graph(
        policy) -> None:
    import torch

    ro = rollouts(policy)
    policy.logprobs(ro)[0].sum().backward()  # spends the prefix's graph
    first = grads(policy)
    for p in policy.parameters():
        p.grad = None
    policy.logprobs(ro)[0].sum().backward()  # no step between (a skipped update): the same state
    for a, b in zip(first, grads(policy)):
        assert torch.equal(a, b)


def test_a_stale_prefix_is_never_read_after_an_optimizer_step(policy) -> None:
    import torch

    from course.llm.prefix_cache import forget

    ro = rollouts(policy)
    opt = torch.optim.Adam(policy.parameters(), lr=1e-2)
    with torch.no_grad():
        before, _ = policy.logprobs(ro)  # cached without a graph: only the version check can retire it
    policy.logprobs(ro)[0].sum().backward()
    opt.step()
    with torch.no_grad():
        after, _ = policy.logprobs(ro)
    forget(policy.model)
    with torch.no_grad():
        fresh, _ = policy.logprobs(ro)
    assert not torch.equal(before, after)
    assert torch.equal(after, fresh)


def test_the_anchored_policy_keeps_its_own_prefix_while_training_moves_the_adapters(policy) -> None:
    import torch

    from course.llm.prefix_cache import forget

    ro = rollouts(policy)
    policy.anchor_reference()
    anchored_before = policy.reference_logprobs(ro)
    with torch.no_grad():
        for p in policy.parameters():
            p.add_(0.1)
    assert torch.equal(policy.reference_logprobs(ro), anchored_before)  # the anchor did not move
    forget(policy.model)
    assert torch.equal(policy.reference_logprobs(ro), anchored_before)
    assert not torch.equal(policy.logprobs(ro)[0].detach(), anchored_before)
