"""course.llm.decoder, the sampler's lean forward pass, against the Hugging Face forward it replaces.

Both decoders (``LlamaDecoder`` and ``HFDecoder``) must compute the model's function:
the prefill's logits equal one whole forward pass per prompt, every decode step's logits equal the
forward pass over the prompt and the tokens so far, with LoRA adapters on, off or anchored, and
through a compaction of the cache. Run on the tiny random Llama of conftest.py (``tiny_llm_dir``).
"""

from __future__ import annotations

import importlib.util

import pytest

from course.lib.policy.templates import FEWSHOT

HAVE_LLM = all(importlib.util.find_spec(m) is not None for m in ("torch", "transformers", "safetensors"))
pytestmark = pytest.mark.skipif(not HAVE_LLM, reason="the llm extra is not installed")
# Float rounding only: fused products and the split softmax sum in another order than the module does.
ATOL = 1e-5
PROMPTS = ("Compute 1 + 2.", "What is 1234 * 5678 - 42, exactly?", "9 - 3?")


def decoders():  # type: ignore[no-untyped-def]
    from course.llm.decoder import HFDecoder, LlamaDecoder

    return [LlamaDecoder, HFDecoder]


@pytest.fixture
def llm(tiny_llm_dir):  # type: ignore[no-untyped-def]
    from course.llm.load import load_llm

    return load_llm(str(tiny_llm_dir))


def whole_forward(llm, ids):  # type: ignore[no-untyped-def]
    import torch

    with torch.no_grad():
        return llm.model(torch.tensor([ids])).logits[0, -1]


def prompts(llm, texts=PROMPTS):  # type: ignore[no-untyped-def]
    from course.lib.policy.templates import render
    from course.llm.sampler import encode_prompts, split_prompts

    rendered = [render(llm.tokenizer, FEWSHOT, p) for p in texts]
    ids = [llm.tokenizer(t, add_special_tokens=False)["input_ids"] for t in rendered]
    prompt, valid = encode_prompts(llm.tokenizer, rendered)
    return ids, split_prompts(prompt, valid, int(llm.tokenizer.pad_token_id))


@pytest.mark.parametrize("kind", [0, 1], ids=["LlamaDecoder", "HFDecoder"])
def test_the_prefill_gives_each_prompt_the_logits_of_its_whole_forward_pass(llm, kind) -> None:
    import torch

    ids, (prefix, tails, tail_valid) = prompts(llm)
    assert len(prefix) > 10 and bool((~tail_valid).any())  # a shared prefix, and padding in the middle
    logits, next_pos = decoders()[kind](llm.model).prefill(prefix, tails, tail_valid, 2, 4)
    assert logits.shape[0] == 2 * len(ids) and next_pos.tolist() == [len(r) for r in ids for _ in range(2)]
    for i, row in enumerate(ids):
        assert torch.allclose(logits[2 * i], whole_forward(llm, row), atol=ATOL)
        assert torch.equal(logits[2 * i], logits[2 * i + 1])  # a prompt's samples start from the same logits


@pytest.mark.parametrize("kind", [0, 1], ids=["LlamaDecoder", "HFDecoder"])
def test_every_decode_step_and_a_compacted_cache_give_the_logits_of_the_whole_forward_pass(llm, kind) -> None:
    import torch

    ids, split = prompts(llm)
    decoder = decoders()[kind](llm.model)
    logits, pos = decoder.prefill(*split, 1, 6)
    rows = [list(r) for r in ids]
    for step in range(5):
        tokens = torch.tensor([(7 * step + 3 * i) % 90 + 5 for i in range(len(rows))])  # printable characters
        for r, t in zip(rows, tokens.tolist()):
            r.append(t)
        if step == 2:  # the middle row stops: the cache keeps rows 0 and 2, in that order
            decoder.keep(torch.tensor([0, 2]))
            rows, tokens, pos = [rows[0], rows[2]], tokens[[0, 2]], pos[[0, 2]]
        logits = decoder.step(tokens, pos)
        pos = pos + 1
        for i, row in enumerate(rows):
            assert torch.allclose(logits[i], whole_forward(llm, row), atol=ATOL), (step, i)


@pytest.mark.parametrize("mode", ["on", "off", "anchor"])
def test_the_lean_decoder_computes_a_lora_model_in_its_current_mode(llm, mode) -> None:
    import contextlib

    import torch

    from course.llm.decoder import LlamaDecoder
    from course.llm.lora import adapter_parameters, adapters_off, add_lora, anchor, anchored

    add_lora(llm.model, rank=2, alpha=4, seed=0)
    generator = torch.Generator().manual_seed(0)

    def move() -> None:  # random directions, so that the three modes are three different functions
        with torch.no_grad():
            for p in adapter_parameters(llm.model):
                p.add_(torch.randn(p.shape, generator=generator))

    move()  # B is no longer zero: the adapters change the function
    anchor(llm.model)
    move()  # the trained adapters move away from the anchored ones
    ids, split = prompts(llm)
    context = {"on": contextlib.nullcontext(), "off": adapters_off(llm.model), "anchor": anchored(llm.model)}[mode]
    with context:
        logits, _ = LlamaDecoder(llm.model).prefill(*split, 1, 2)
        expected = [whole_forward(llm, row) for row in ids]
    for i, row in enumerate(ids):
        assert torch.allclose(logits[i], expected[i], atol=ATOL)
    others = {m for m in ("on", "off", "anchor") if m != mode}
    for other in others:  # and the three modes are three different functions
        ctx = {"on": contextlib.nullcontext(), "off": adapters_off(llm.model), "anchor": anchored(llm.model)}[other]
        with ctx:
            assert float((whole_forward(llm, ids[0]) - expected[0]).abs().max()) > 100 * ATOL


def test_the_fused_weights_are_reused_until_a_weight_changes_or_an_adapter_is_switched(llm) -> None:
    import torch

    from course.llm.decoder import fused_blocks
    from course.llm.lora import adapter_parameters, adapters_off, add_lora

    add_lora(llm.model, rank=2, alpha=4, seed=0)
    first = fused_blocks(llm.model)
    assert fused_blocks(llm.model) is first  # nothing changed: the same tensors
    with adapters_off(llm.model):
        off = fused_blocks(llm.model)
    assert off is not first
    with torch.no_grad():
        adapter_parameters(llm.model)[1].add_(1.0)  # an optimizer step changes B in place
    after = fused_blocks(llm.model)
    assert after is not first and not torch.equal(after[0][1], off[0][1])


def test_a_model_the_lean_decoder_does_not_compute_samples_through_the_hugging_face_forward(llm) -> None:
    from course.llm.decoder import HFDecoder, LlamaDecoder, decoder_for, supports
    from course.llm.sampler import generate

    assert supports(llm.model) and isinstance(decoder_for(llm.model), LlamaDecoder)
    llm.model.config.attention_bias = True  # a bias the lean pass does not add: not its model any more
    assert not supports(llm.model) and isinstance(decoder_for(llm.model), HFDecoder)
    llm.model.config.attention_bias = False
    llm.model.config.hidden_act = "gelu"
    assert not supports(llm.model)
    rendered = ["<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"]
    out = generate(llm.model, llm.tokenizer, rendered, ["s:0", "s:1"], group=2, max_tokens=3)
    assert len(out.texts) == 2 and out.tokens.shape[0] == 2


def test_both_decoders_draw_the_same_completions_from_the_same_seeds(llm, monkeypatch) -> None:
    from course.lib.policy.templates import render
    from course.llm import sampler
    from course.llm.decoder import HFDecoder

    texts = [render(llm.tokenizer, FEWSHOT, p) for p in PROMPTS]
    seeds = [f"s:{i}" for i in range(len(texts) * 4)]
    lean = sampler.generate(llm.model, llm.tokenizer, texts, seeds, group=4, max_tokens=8)
    monkeypatch.setattr(sampler, "decoder_for", HFDecoder)
    reference = sampler.generate(llm.model, llm.tokenizer, texts, seeds, group=4, max_tokens=8)
    assert lean.texts == reference.texts and lean.tokens.tolist() == reference.tokens.tolist()
    assert lean.mask.tolist() == reference.mask.tolist() and lean.truncated == reference.truncated


@pytest.mark.parametrize("kind", [0, 1], ids=["LlamaDecoder", "HFDecoder"])
def test_prompts_that_share_no_prefix_are_read_whole_and_their_padding_makes_no_nan(llm, kind) -> None:
    import torch

    from course.llm.sampler import encode_prompts, split_prompts

    texts = ["abc", "Zebra crossing at 5", "9"]  # no common first token; padding before the short ones
    ids = [llm.tokenizer(t, add_special_tokens=False)["input_ids"] for t in texts]
    prefix, tails, tail_valid = split_prompts(*encode_prompts(llm.tokenizer, texts), int(llm.tokenizer.pad_token_id))
    assert prefix == [] and bool((~tail_valid).any())
    logits, _ = decoders()[kind](llm.model).prefill(prefix, tails, tail_valid, 1, 2)
    assert not bool(logits.isnan().any())
    for i, row in enumerate(ids):
        assert torch.allclose(logits[i], whole_forward(llm, row), atol=ATOL)
