"""Seeded, batched sampling from the real LLM: prompts in, completions (and their tokens) out.

The same contract as the tiny LM's sampler (``course.tinylm.policy``), so the course's
rollout files and its RL loop treat both policies alike:

  ``generate``      sample G completions for each of P chat prompts; returns the shared
                    ``SampledBatch`` record of ``course.lib.policy.sampling`` (prompt tokens,
                    completion tokens and mask, texts)
  ``sample_items``  n completions per dataset item under a prompt template, in fixed batches
  ``row_seed``      the string that seeds one sampled row

Randomness, the course's way (no global RNG, no ``torch.manual_seed``): every sampled row
has its own ``random.Random(row_seed(seed, item id, sample index))`` and draws one uniform
number per token (inverse-CDF sampling, ``course.lib.policy.sampling.draw_tokens``). So a row's completion does
not depend on which other rows share its batch, up to float rounding, and with the batch
composition fixed (``rows_per_batch`` items in dataset order) and the thread count fixed,
a rerun on the same machine is byte-identical.

How a batch is computed. Every prompt of a template begins with the same tokens (the chat
header, the system prompt and the worked examples: ~120 of a few-shot prompt's ~145), so the
prefill is in two parts: that shared prefix is read ONCE (batch 1; with the lean decoder, once per
policy state, from the model's prefix cache, ``course.llm.prefix_cache``), then each prompt's own tail
(~25 tokens), left-padded and placed after the prefix ([prefix | padding | tail], the padding
masked out of every key, the tail's positions continuing the prefix's): each row computes exactly
its own prompt, up to float rounding. Only the last position's logits are computed. Each prompt's
cache is then repeated for its G samples. Each step feeds one token per row; a row stops at the
model's end-of-turn token (``<|im_end|>``) or at ``max_tokens``. A stopped row's cache row stays
(its output ignored) until the rows still writing are at most ``COMPACT_AT`` of the cache; then the
cache keeps only theirs, so a few-shot batch whose rows mostly answer in five tokens does not pay
for its longest ramble 64 times over. The stop token is an action (it is in ``tokens`` and
``mask``) but not text.

Two decoders do that work behind three calls (``prefill``, ``step``, ``keep``):
``course.llm.decoder.LlamaDecoder``, a lean forward pass of Llama-style models (SmolLM2) with fused
projections, a preallocated cache and the shared prefix kept once, and ``HFDecoder``, the model's own
Hugging Face forward, for any other model. Tests hold both to the model's whole forward pass. Where
the time goes, beside the machine's matrix-product bound and Hugging Face ``generate``:
benchmarks/bench_llm_sampling.py.

Before any token is drawn, every prompt is rendered (``course.lib.policy.templates.render``: no special-token
text from the data, a bounded template) and measured: a prompt whose tokens plus ``max_tokens`` do not
fit the model's context (``model.config.max_position_embeddings``) is refused, naming the item,
instead of running on past the positions the model was trained on.

Not a CLI; see ``python -m course.llm.sample --help``.
"""

from __future__ import annotations

import random
from typing import Any, Callable, Sequence

import torch
import torch.nn.functional as F

from course.errors import CourseError
from course.lib.policy.sampling import SampledBatch, draw_tokens, filter_top_p, sample_in_batches
from course.lib.policy.templates import PromptTemplate, render
from course.llm.decoder import LlamaDecoder, decoder_for
from course.llm.lora import refuse_non_finite
from course.llm.prefix_cache import prefix_kv

DEFAULT_MAX_TOKENS = 48
# Rows (items x samples) computed together. Fixed, not tuned to the machine: the batch composition
# is part of what makes a rerun byte-identical (float sums depend on the shapes).
ROWS_PER_BATCH = 64
# Rows per batch where no shipped file has to be reproduced (the RFT pool, the benchmark's transfer tables):
# a matrix product of more rows runs nearer the machine's peak (benchmarks/bench_llm_sampling.py prints the
# products' throughput at the model's shapes for 13, 64 and 1,320 rows). Fixed too, for the same reason.
WIDE_BATCH_ROWS = 256


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


def context_length(model: Any) -> int | None:
    """How many positions the model was built for (``max_position_embeddings``), or None if it does not say."""
    n = getattr(getattr(model, "config", None), "max_position_embeddings", None)
    return n if type(n) is int and n > 0 else None


def check_fits(model: Any, prompt_tokens: int, max_tokens: int, where: str) -> None:
    """``CourseError`` unless a prompt of ``prompt_tokens`` tokens plus ``max_tokens`` fits the model's context."""
    context = context_length(model)
    if context is not None and prompt_tokens + max_tokens > context:
        raise CourseError(f"{where}: the prompt is {prompt_tokens:,} tokens; with --max-tokens {max_tokens} that is "
                          f"{prompt_tokens + max_tokens:,}, beyond the model's context of {context:,} tokens; "
                          "shorten the prompt or lower --max-tokens")


def shared_prefix_length(rows: Sequence[Sequence[int]], shared: Sequence[int] | None) -> int:
    """How many leading tokens the rows are read with as one prefix: ``shared`` (the template's own prefix,
    ``template_prefix``) when every row begins with it and has a token after it, so that every batch
    of the template keys the same cached prefix; else whatever the rows have in common.

    >>> shared_prefix_length([[1, 2, 3, 4], [1, 2, 3, 5]], [1, 2])
    2
    >>> shared_prefix_length([[1, 2, 3, 4], [1, 9, 3, 5]], [1, 2])
    1
    """
    n = len(shared) if shared else 0
    if n and all(len(r) > n and list(r[:n]) == list(shared or ()) for r in rows):
        return n
    return common_prefix_length(rows)


def template_prefix(tokenizer: Any, template: PromptTemplate) -> list[int]:
    """The tokens every prompt of ``template`` begins with (chat header, system turn, worked examples):
    what two prompts that differ from their first character share. Only a key for the prefix cache:
    ``shared_prefix_length`` checks each batch against it, so a tokenizer that merges across the
    boundary costs a cache miss, never a wrong prompt."""
    probes = [tokenizer(render(tokenizer, template, text), add_special_tokens=False)["input_ids"]
              for text in ("0 + 1?", "Name a colour.")]
    return list(probes[0][: common_prefix_length(probes)])


def common_prefix_length(rows: Sequence[Sequence[int]]) -> int:
    """How many leading tokens every row shares, leaving each row at least one token of its own.

    >>> common_prefix_length([[1, 2, 3, 4], [1, 2, 5], [1, 2, 3]])
    2
    >>> common_prefix_length([[7, 8], [7, 8]])
    1
    """
    limit = min(len(r) for r in rows) - 1
    first = rows[0]
    k = 0
    while k < limit and all(r[k] == first[k] for r in rows):
        k += 1
    return k


def lay_out_for_sampling(model: torch.nn.Module) -> None:
    """Store every linear layer's weight column-major (the same values, another memory order), once.

    A linear layer computes ``x @ W.T``. With W stored row-major (as loaded), ``W.T`` is a transposed
    view and the matrix library runs its "A times B-transposed" kernel, which on a batch of a few rows
    (the decode steps, where most rows have already stopped) runs at a fraction of the speed of the
    plain "A times B" kernel that a contiguous ``W.T`` gets; on hundreds of rows (prefill, the
    log-probability passes) the two are equally fast (benchmarks/bench_llm_sampling.py measures both).
    Idempotent; the tied embedding shares the weight of the LM head and reads it by rows.
    """
    with torch.no_grad():
        for module in model.modules():
            weight = getattr(module, "weight", None)
            if (isinstance(module, torch.nn.Linear) and weight is not None and weight.dim() == 2
                    and weight.is_contiguous()):
                weight.data = weight.data.t().contiguous().t()


def split_prompts(
    prompt: torch.Tensor, prompt_valid: torch.Tensor, pad: int, shared: Sequence[int] | None = None
) -> tuple[list[int], torch.Tensor, torch.Tensor]:
    """Left-padded prompts (P, Lp) -> the prefix they all share (a list of c ids: ``shared`` if they all
    begin with it, see ``shared_prefix_length``), and each prompt's own tail, left-padded to W: tails
    (P, W) and which tail positions are real (P, W)."""
    P = prompt.shape[0]
    rows = [row[valid].tolist() for row, valid in zip(prompt.cpu(), prompt_valid.cpu())]
    c = shared_prefix_length(rows, shared)
    W = max(len(r) - c for r in rows)
    tails = torch.full((P, W), pad, dtype=torch.long)
    tail_valid = torch.zeros((P, W), dtype=torch.bool)
    for i, r in enumerate(rows):
        tails[i, W - (len(r) - c):] = torch.tensor(r[c:], dtype=torch.long)
        tail_valid[i, W - (len(r) - c):] = True
    return rows[0][:c], tails, tail_valid


# A finished row keeps its cache row (its output ignored) until the rows still writing are at most this share of
# the cache's rows; then the cache is compacted. Copying the cache at every stop would cost more than the dead rows.
COMPACT_AT = 0.75


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
    shared_prefix: Sequence[int] | None = None,
    keep_graph: bool = False,
) -> SampledBatch:
    """Sample ``group`` completions per rendered prompt; row b uses ``random.Random(row_seeds[b])``.

    ``len(row_seeds)`` must be ``len(texts) * group`` (prompt-major order). temperature 0 is greedy.
    ``shared_prefix``: the template's prefix (``template_prefix``), read from the model's prefix cache
    (``course.llm.prefix_cache``) with the lean decoder; ``keep_graph``: cache it with its autograd graph,
    for the log-probability pass with gradients that follows in the same policy state (an RL step).
    """
    P, B = len(texts), len(texts) * group
    if P == 0 or len(row_seeds) != B:
        raise ValueError(f"need {B} row seeds for {P} prompts x {group}, got {len(row_seeds)}")
    lay_out_for_sampling(model)
    prompt, prompt_valid = encode_prompts(tokenizer, texts)
    check_fits(model, int(prompt_valid.sum(dim=1).max()), max_tokens, "a prompt of the batch")
    stops = stop_ids(model, tokenizer)
    pad = int(tokenizer.pad_token_id)
    rngs = [random.Random(s) for s in row_seeds]

    decoder = decoder_for(model)
    prefix, tails, tail_valid = split_prompts(prompt, prompt_valid, pad, shared_prefix)
    if prefix and isinstance(decoder, LlamaDecoder):
        kv = prefix_kv(model, prefix, graph=keep_graph)
        next_logits, next_pos = decoder.prefill(prefix, tails, tail_valid, group, max_tokens, kv)  # (B, V)
    else:
        next_logits, next_pos = decoder.prefill(prefix, tails, tail_valid, group, max_tokens)
    chosen = torch.full((B, max_tokens), pad, dtype=torch.long)  # (B, K)
    stop_tensor = torch.tensor(sorted(stops), dtype=torch.long)
    sample_of = torch.arange(B)  # cache row -> the sampled row it holds
    writing = torch.ones(B, dtype=torch.bool)  # per cache row: still writing?
    for t in range(max_tokens):
        live = writing.nonzero().squeeze(1)  # cache rows still writing
        logits = next_logits  # (L, V): the prefill's for every row, then each step's for the live rows
        refuse_non_finite(logits, model, f"token {t + 1} of sampling")  # NaN would pick the end token for ever
        if temperature == 0:
            tok = logits.argmax(dim=-1)
        else:
            probs = F.softmax(logits / temperature, dim=-1)  # (L, V)
            if top_p < 1.0:
                probs = filter_top_p(probs, top_p)
            # One uniform per live row from its own stream: a row's numbers never depend on the other rows.
            tok = draw_tokens(probs, [rngs[i].random() for i in sample_of[live].tolist()])
        chosen[sample_of[live], t] = tok
        writing[live] = ~torch.isin(tok, stop_tensor)
        if t == max_tokens - 1 or not bool(writing.any()):
            break
        feed = torch.full((len(writing),), pad, dtype=torch.long)  # a finished row reads padding, ignored
        feed[live] = tok
        if int(writing.sum()) <= COMPACT_AT * len(writing):  # finished rows leave the cache
            keep = writing.nonzero().squeeze(1)
            decoder.keep(keep)
            sample_of, writing, feed, next_pos = sample_of[keep], writing[keep], feed[keep], next_pos[keep]
        next_logits = decoder.step(feed, next_pos, writing.nonzero().squeeze(1))  # (L, V): live rows only
        next_pos = next_pos + 1

    return sampled_batch(tokenizer, prompt, prompt_valid, chosen, stops, group)


def sampled_batch(tokenizer: Any, prompt: Any, prompt_valid: Any, chosen: Any, stops: frozenset[int],
                  group: int) -> SampledBatch:
    """The drawn tokens (B, K) as a ``SampledBatch``: each row up to and including its stop token (the stop
    token is an action: inside the mask), its text without it, and whether it ran out of tokens."""
    B, max_tokens = chosen.shape
    mask = torch.zeros_like(chosen, dtype=torch.bool)
    texts_out, truncated = [], []
    for i in range(B):
        row = chosen[i].tolist()
        end = next((k for k, tok_id in enumerate(row) if tok_id in stops), None)
        n = max_tokens if end is None else end + 1
        mask[i, :n] = True
        texts_out.append(tokenizer.decode(row[: n if end is None else end], skip_special_tokens=False,
                                          clean_up_tokenization_spaces=False))
        truncated.append(end is None)
    width = max(1, int(mask.sum(dim=1).max()))
    return SampledBatch(
        prompt_tokens=prompt, prompt_valid=prompt_valid, tokens=chosen[:, :width], mask=mask[:, :width],
        group=group, texts=texts_out, truncated=truncated, cropped=[False] * (B // group),
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
    rendered = render_items(model, tokenizer, items, template, max_tokens)  # every refusal before the first draw
    shared = template_prefix(tokenizer, template)

    def draw(texts: list[str], seeds: list[str]) -> SampledBatch:
        return generate(model, tokenizer, texts, seeds, group=n, temperature=temperature, top_p=top_p,
                        max_tokens=max_tokens, shared_prefix=shared)

    return sample_in_batches(rendered, draw, n=n, seed=seed, seed_of=row_seed, rows_per_batch=rows_per_batch,
                             progress=progress)


def render_items(model: Any, tokenizer: Any, items: Sequence[tuple[str, str]], template: PromptTemplate,
                 max_tokens: int) -> list[tuple[str, str]]:
    """``(item id, the chat the model reads)`` for every item, each checked: rendered by the one bounded
    renderer (no special-token text from the data) and short enough for the model's context with
    ``max_tokens`` more. ``CourseError`` naming the first item that is not."""
    out = []
    for ident, prompt in items:
        try:
            text = render(tokenizer, template, prompt)
            n = len(tokenizer(text, add_special_tokens=False)["input_ids"])
            check_fits(model, n, max_tokens, f"item {ident}")
        except CourseError as exc:
            message = str(exc)
            raise CourseError(message if message.startswith(f"item {ident}:") else f"item {ident}: {message}") from None
        out.append((ident, text))
    return out


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.llm.sampler"))
