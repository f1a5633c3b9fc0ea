"""Seeded, batched sampling from the real LLM: prompts in, completions (and their tokens) out.

The same contract as the tiny LM's sampler (``course.tinylm.policy``), so the course's
rollout files and its RL loop treat both policies alike:

  ``generate``      sample G completions for each of P chat prompts; returns the tiny LM's
                    ``SampledBatch`` record (prompt tokens, completion tokens and mask, texts)
  ``sample_items``  n completions per dataset item under a prompt template, in fixed batches
  ``row_seed``      the string that seeds one sampled row

Randomness, the course's way (no global RNG, no ``torch.manual_seed``): every sampled row
has its own ``random.Random(row_seed(seed, item id, sample index))`` and draws one uniform
number per token (inverse-CDF sampling, ``course.lib.policy.sampling.draw_tokens``). So a row's completion does
not depend on which other rows share its batch, up to float rounding, and with the batch
composition fixed (``rows_per_batch`` items in dataset order) and the thread count fixed,
a rerun on the same machine is byte-identical.

How a batch is computed: the chat prompts (rendered by ``course.lib.policy.templates.render``) are
tokenised and padded on the LEFT, so every row's next token sits in the last column. The
prompts are read once each (prefill, logits of the last position only); their key/value
cache is then repeated for the G samples of each prompt (a few-shot prompt is ~150 tokens,
a completion ~20: reading it once instead of 8 times is most of the saving). Each step feeds
one token per row; a row stops at the model's end-of-turn token (``<|im_end|>``) or at
``max_tokens``, and leaves the batch (its cache rows are dropped), so a few-shot batch whose
rows mostly answer in five tokens does not pay for its longest ramble 64 times over. The stop
token is an action (it is in ``tokens`` and ``mask``) but not text.

Not a CLI; see ``python -m course.llm.sample --help``.
"""

from __future__ import annotations

import random
from typing import Any, Callable, Sequence

import torch
import torch.nn.functional as F

from course.lib.policy.templates import PromptTemplate, render
from course.lib.policy.sampling import SampledBatch, draw_tokens, filter_top_p, sample_in_batches

DEFAULT_MAX_TOKENS = 48
# Rows (items x samples) computed together. Fixed, not tuned to the machine: the batch composition
# is part of what makes a rerun byte-identical (float sums depend on the shapes).
ROWS_PER_BATCH = 64


def row_seed(seed: int, item_id: str, sample_index: int) -> str:
    """The string that seeds one sampled row: the same (seed, item, index) always draws the same numbers.

    >>> row_seed(0, "dev-0001", 3)
    'llm:0:dev-0001:3'
    """
    return f"llm:{seed}:{item_id}:{sample_index}"


def stop_ids(model: Any, tokenizer: Any) -> frozenset[int]:
    """The token ids that end a completion: the tokenizer's end-of-sequence and the model's own end ids."""
    ids = {tokenizer.eos_token_id}
    configured = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    ids |= set(configured) if isinstance(configured, (list, tuple)) else {configured}
    return frozenset(int(i) for i in ids if i is not None)


def encode_prompts(tokenizer: Any, texts: Sequence[str], device: str = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """Left-padded prompt batch: ids (P, Lp) and valid (P, Lp). The texts are whole rendered chats,
    special tokens included, so the tokenizer adds none of its own."""
    encoded = [tokenizer(t, add_special_tokens=False)["input_ids"] for t in texts]
    width = max(len(ids) for ids in encoded)
    tokens = torch.full((len(texts), width), int(tokenizer.pad_token_id), dtype=torch.long)
    valid = torch.zeros((len(texts), width), dtype=torch.bool)
    for i, ids in enumerate(encoded):
        tokens[i, width - len(ids):] = torch.tensor(ids, dtype=torch.long)
        valid[i, width - len(ids):] = True
    return tokens.to(device), valid.to(device)


def positions(valid: torch.Tensor) -> torch.Tensor:
    """Position ids that start at 0 on each row's first real token (left padding gets 0 too)."""
    return (valid.long().cumsum(dim=1) - 1).clamp(min=0)


def cache_of(output: Any) -> Any:
    """The key/value cache a forward pass returned (``cache`` since transformers 5.x renamed ``past_key_values``)."""
    return output["cache"] if "cache" in output else output["past_key_values"]


@torch.no_grad()
def generate(
    model: Any,
    tokenizer: Any,
    texts: Sequence[str],
    row_seeds: Sequence[str],
    *,
    group: int = 1,
    temperature: float = 1.0,
    top_p: float = 1.0,
    max_tokens: int = DEFAULT_MAX_TOKENS,
) -> SampledBatch:
    """Sample ``group`` completions per rendered prompt; row b uses ``random.Random(row_seeds[b])``.

    ``len(row_seeds)`` must be ``len(texts) * group`` (prompt-major order). temperature 0 is greedy.
    """
    P, B = len(texts), len(texts) * group
    if P == 0 or len(row_seeds) != B:
        raise ValueError(f"need {B} row seeds for {P} prompts x {group}, got {len(row_seeds)}")
    device = next(model.parameters()).device
    prompt, prompt_valid = encode_prompts(tokenizer, texts, str(device))
    stops = stop_ids(model, tokenizer)
    pad = int(tokenizer.pad_token_id)
    rngs = [random.Random(s) for s in row_seeds]

    # Prefill: each prompt once (only its last position's logits), then its cache repeated for its G rows.
    pos = positions(prompt_valid)
    out = model(input_ids=prompt, attention_mask=prompt_valid.long(), position_ids=pos, use_cache=True, logits_to_keep=1)
    cache = cache_of(out)
    if group > 1:
        cache.batch_repeat_interleave(group)
    next_logits = out.logits[:, -1, :].float().repeat_interleave(group, dim=0)  # (B, V)
    next_pos = pos[:, -1].repeat_interleave(group) + 1  # (B,)
    key_valid = prompt_valid.repeat_interleave(group, dim=0).long()  # (B, S): which cached keys are real

    chosen = torch.full((B, max_tokens), pad, dtype=torch.long)  # (B, K)
    stop_tensor = torch.tensor(sorted(stops), dtype=torch.long)
    live = torch.arange(B)  # the rows still writing; the tensors below hold only their rows
    for t in range(max_tokens):
        if temperature == 0:
            tok = next_logits.argmax(dim=-1).cpu()
        else:
            probs = F.softmax(next_logits / temperature, dim=-1).cpu()  # (L, V)
            if top_p < 1.0:
                probs = filter_top_p(probs, top_p)
            # One uniform per live row from its own stream: a row's numbers never depend on the other rows.
            tok = draw_tokens(probs, [rngs[i].random() for i in live.tolist()])
        chosen[live, t] = tok
        going = ~torch.isin(tok, stop_tensor)
        if t == max_tokens - 1 or not bool(going.any()):
            break
        if not bool(going.all()):  # finished rows leave the batch: the model computes only rows still writing
            keep = going.nonzero().squeeze(1)
            live, tok, key_valid, next_pos = live[keep], tok[keep], key_valid[keep], next_pos[keep]
            cache.batch_select_indices(keep.to(key_valid.device))
        key_valid = torch.cat([key_valid, torch.ones((len(live), 1), dtype=torch.long, device=key_valid.device)], dim=1)
        # The cache goes in 4th position: its keyword is `past_key_values` before transformers 5.x renamed it `cache`.
        out = model(tok[:, None].to(device), key_valid, next_pos[:, None], cache, use_cache=True)
        cache = cache_of(out)
        next_logits = out.logits[:, -1, :].float()
        next_pos = next_pos + 1

    mask = torch.zeros_like(chosen, dtype=torch.bool)
    texts_out, truncated = [], []
    for i in range(B):
        row = chosen[i].tolist()
        end = next((k for k, tok_id in enumerate(row) if tok_id in stops), None)
        n = max_tokens if end is None else end + 1  # the stop token is an action: inside the mask
        mask[i, :n] = True
        texts_out.append(tokenizer.decode(row[: n if end is None else end], skip_special_tokens=False,
                                          clean_up_tokenization_spaces=False))
        truncated.append(end is None)
    width = max(1, int(mask.sum(dim=1).max()))
    return SampledBatch(
        prompt_tokens=prompt.cpu(), prompt_valid=prompt_valid.cpu(), tokens=chosen[:, :width], mask=mask[:, :width],
        group=group, texts=texts_out, truncated=truncated, cropped=[False] * P,
    )


def sample_items(
    model: Any,
    tokenizer: Any,
    items: Sequence[tuple[str, str]],
    template: PromptTemplate,
    *,
    n: int,
    seed: int,
    temperature: float = 1.0,
    top_p: float = 1.0,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    rows_per_batch: int = ROWS_PER_BATCH,
    progress: Callable[[int], None] | None = None,
) -> list[list[tuple[str, bool]]]:
    """``n`` completions for each ``(item id, dataset prompt)``: per item a list of (text, truncated).

    Items go ``rows_per_batch // n`` at a time, in the given order; each row has its own random
    stream (``row_seed``). ``progress(items_done)``, if given, is called after each batch.
    """
    def draw(prompts: list[str], seeds: list[str]) -> SampledBatch:
        texts = [render(tokenizer, template, prompt) for prompt in prompts]
        return generate(model, tokenizer, texts, seeds, group=n, temperature=temperature, top_p=top_p,
                        max_tokens=max_tokens)

    return sample_in_batches(items, draw, n=n, seed=seed, seed_of=row_seed, rows_per_batch=rows_per_batch,
                             progress=progress)


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.llm.sampling"))
