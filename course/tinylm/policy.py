"""The tiny LM as a *policy*: prompts in, sampled completions and their log-probabilities out.

Operations every Loop C tool needs, shared by ``sample``, ``sft``, ``rl``:

  ``generate``             sample G completions for each of P prompts (KV cache, left padding)
  ``completion_logprobs``  log pi(token | prefix) and the entropy at every completion position
  ``sample_items``         n completions per dataset item, batched, each with its own random stream
  ``sample_records``       those completions as rollout / selection-pack records (``course.lib.policy.rollout_records``)
  ``TinyLMPolicy``         the tiny LM and its pi0 behind the interface of Loop C
                           (``course.lib.learning.rl_loop.RLPolicy``)

Shared-prefix batching: the G samples of one prompt share its keys and values.
The prompt (~100 characters) is read once per prompt, not once per sample, and
only the short completions (~10 characters) are computed per sample; with G = 8
this makes a training step several times cheaper, and gradients still flow
through the shared prompt computation (``repeat_interleave`` is differentiable).

Randomness: every sampled *row* has its own ``random.Random`` seeded by a string
such as ``"tinylm:1234:dev-0007:3"`` (seed, item id, sample index). A token is drawn
by inverse-CDF sampling with that row's uniform number, so a row's completion
does not depend on which other rows share its batch (up to float rounding), and
Python's string seeding does not depend on PYTHONHASHSEED.

Not a CLI; see ``python -m course.tinylm.sample --help``.
"""

from __future__ import annotations

import functools
import random
from pathlib import Path
from typing import Any, Callable, Sequence

import torch
import torch.nn.functional as F

from course.lib.bundled import FROZEN_PI0_DEV
from course.lib.evaluation.distribution_shift import shift_report
from course.lib.policy.rollout_records import rollout_records
from course.lib.policy.sampling import SampledBatch, draw_tokens, filter_top_p, sample_in_batches
from course.tinylm.model import GPT, KVCache, allocate_cache, attention_mask, positions, save_checkpoint
from course.tinylm.vocab import VOCAB

DEFAULT_THREADS = 2
DEFAULT_MAX_TOKENS = 32

# Tokens the policy never chooses: structure markers only the code writes. Their logits
# are set to -inf everywhere the policy's distribution is used (sampling, log-probs, KL).
_NEVER_SAMPLED = (VOCAB.PAD, VOCAB.BOS, VOCAB.SEP)
_NEVER_MASK = torch.zeros(VOCAB.size, dtype=torch.bool)
_NEVER_MASK[list(_NEVER_SAMPLED)] = True


def policy_logits(logits: torch.Tensor) -> torch.Tensor:
    """Mask ``<pad> <bos> <sep>``: (..., V) -> (..., V) float32 with those logits at -inf."""
    return logits.float().masked_fill(_NEVER_MASK, float("-inf"))  # a new tensor: the caller's is untouched


def prompt_ids(prompt: str, max_prompt_tokens: int) -> tuple[list[int], bool]:
    """``<bos> prompt <sep>`` as ids, and whether the prompt had to be cropped.

    A prompt longer than the context leaves room for is cut from the *left*: the
    end of the prompt (the question and the format instruction) is what the
    policy most needs to see.
    """
    body = VOCAB.encode(prompt)
    cropped = len(body) > max_prompt_tokens
    if cropped:
        body = body[-max_prompt_tokens:]
    return [VOCAB.BOS] + body + [VOCAB.SEP], cropped


def _encode_prompts(
    model: GPT, prompts: Sequence[str], max_tokens: int
) -> tuple[torch.Tensor, torch.Tensor, list[bool]]:
    """Left-padded prompt batch: tokens (P, Lp), valid (P, Lp), cropped flags."""
    max_prompt = model.cfg.block_size - max_tokens - 2  # room for <bos>, <sep> and the completion
    encoded = [prompt_ids(p, max_prompt) for p in prompts]
    Lp = max(len(ids) for ids, _ in encoded)
    tokens = torch.full((len(prompts), Lp), VOCAB.PAD, dtype=torch.long)
    for i, (ids, _) in enumerate(encoded):
        tokens[i, Lp - len(ids):] = torch.tensor(ids)
    return tokens, tokens != VOCAB.PAD, [c for _, c in encoded]


def _expand(cache: KVCache, group: int) -> KVCache:
    """Repeat each prompt's keys/values for its G samples: (P, H, S, D) -> (P*G, H, S, D)."""
    if group == 1:
        return cache
    return [(k.repeat_interleave(group, dim=0), v.repeat_interleave(group, dim=0)) for k, v in cache]


def generate(
    model: GPT,
    prompts: Sequence[str],
    row_seeds: Sequence[str],
    *,
    group: int = 1,
    temperature: float = 1.0,
    top_p: float = 1.0,
    max_tokens: int = DEFAULT_MAX_TOKENS,
) -> SampledBatch:
    """Sample ``group`` completions per prompt; row b uses ``random.Random(row_seeds[b])``.

    ``len(row_seeds)`` must be ``len(prompts) * group`` (prompt-major order).
    temperature 0 means greedy decoding (argmax; no randomness used).
    """
    P = len(prompts)
    B = P * group
    if P == 0 or len(row_seeds) != B:
        raise ValueError(f"need {B} row seeds for {P} prompts x {group}, got {len(row_seeds)}")
    prompt, prompt_valid, cropped = _encode_prompts(model, prompts, max_tokens)
    rngs = [random.Random(s) for s in row_seeds]
    # Sampled under inference_mode; the copy is an ordinary tensor, which the log-prob
    # pass that follows (with gradients) may take as its input.
    out = _sample_tokens(model, prompt, prompt_valid, rngs, group, temperature, top_p, max_tokens).clone()  # (B, K)

    mask = torch.zeros_like(out, dtype=torch.bool)  # (B, K)
    texts, truncated = [], []
    for i in range(B):
        row = out[i].tolist()
        n = row.index(VOCAB.EOS) + 1 if VOCAB.EOS in row else max_tokens  # no <eos>: every slot was used
        mask[i, :n] = True
        texts.append(VOCAB.decode(row[:n]))
        truncated.append(VOCAB.EOS not in row[:n])
    width = int(mask.sum(dim=1).max())  # drop all-pad columns at the right
    return SampledBatch(
        prompt_tokens=prompt,
        prompt_valid=prompt_valid,
        tokens=out[:, :width],
        mask=mask[:, :width],
        group=group,
        texts=texts,
        truncated=truncated,
        cropped=cropped,
    )


@torch.inference_mode()  # no autograd bookkeeping at all (no_grad still tracked versions and views)
def _sample_tokens(model: GPT, prompt: torch.Tensor, prompt_valid: torch.Tensor, rngs: list[random.Random],
                   group: int, temperature: float, top_p: float, max_tokens: int) -> torch.Tensor:
    """The decode loop: (P, Lp) prompts -> (B, K) chosen tokens, ``<pad>`` after each row's ``<eos>``."""
    B = len(rngs)

    # Prefill: read each prompt once, then share its keys/values among its G rows.
    pos = positions(prompt_valid)  # (P, Lp)
    logits, cache = model(prompt, pos, attention_mask(prompt_valid))
    Lp = prompt.shape[1]
    cache = allocate_cache(cache, Lp + max_tokens, group)  # (B, H, Lp + K, D) per layer, filled up to Lp
    next_logits = policy_logits(logits[:, -1, :]).repeat_interleave(group, dim=0)  # (B, V): first completion token
    next_pos = pos[:, -1].repeat_interleave(group) + 1  # (B,)
    # The decode steps' attention mask, kept whole and updated one column per step (0.0: may look,
    # -inf: may not; see model.additive_mask). Rebuilding it at every step (concatenate, clone, and
    # a bool-to-float conversion in every layer) cost more small tensor operations than the attention.
    keys = torch.full((B, 1, 1, Lp + max_tokens), float("-inf"))  # (B, 1, 1, Lp + K)
    keys[:, 0, 0, :Lp].masked_fill_(prompt_valid.repeat_interleave(group, dim=0), 0.0)  # the real prompt tokens

    out = torch.full((B, max_tokens), VOCAB.PAD, dtype=torch.long)  # (B, K)
    done = torch.zeros(B, dtype=torch.bool)
    for t in range(max_tokens):
        if temperature == 0:
            tok = next_logits.argmax(dim=-1)  # (B,)
        else:
            # (dividing by 1.0 changes no bit, so the common case skips the operation)
            probs = F.softmax(next_logits if temperature == 1.0 else next_logits / temperature, dim=-1)  # (B, V)
            if top_p < 1.0:
                probs = filter_top_p(probs, top_p)
            # Every row draws its uniform even when done, so a row's stream never depends on the others.
            tok = draw_tokens(probs, [r.random() for r in rngs])
        tok = tok.masked_fill(done, VOCAB.PAD)
        out[:, t] = tok
        done = done | (tok == VOCAB.EOS)
        if bool(done.all()) or t == max_tokens - 1:
            break
        # Feed the new token (one position per row); finished rows feed <pad>, masked out as a key.
        S = Lp + t + 1
        column = keys[:, 0, 0, S - 1]  # (B,) a view: the new token's column
        column.fill_(0.0)  # a row may always see itself (no empty softmax rows)
        logits, cache = model(tok[:, None], next_pos[:, None], keys[..., :S], cache, past_len=Lp + t)
        column.masked_fill_(tok == VOCAB.PAD, float("-inf"))  # later steps: a finished row's <pad> is no key
        next_logits = policy_logits(logits[:, -1, :])
        next_pos = next_pos + 1
    return out


def completion_logprobs(model: GPT, ro: SampledBatch) -> tuple[torch.Tensor, torch.Tensor]:
    """log pi(chosen token | prompt, earlier tokens) and the entropy there, for every completion slot.

    Gradients flow into ``logp`` when the model requires them; ``entropy`` is a
    diagnostic computed without gradients. Shapes: both (B, K); read them where
    ``ro.mask`` is True (elsewhere logp is 0).
    """
    P, Lp = ro.prompt_tokens.shape
    B, K = ro.tokens.shape
    G = ro.group
    # 1. the prompts, once each: (P, Lp) -> logits at the last prompt position and the cache
    pos_p = positions(ro.prompt_valid)  # (P, Lp)
    logits_p, cache = model(ro.prompt_tokens, pos_p, attention_mask(ro.prompt_valid))
    first = logits_p[:, -1:, :].repeat_interleave(G, dim=0)  # (B, 1, V): predicts completion token 0
    cache = _expand(cache, G)
    # 2. the completions, G per prompt, attending to their prompt's cached keys and causally to themselves
    prompt_keys = ro.prompt_valid.repeat_interleave(G, dim=0)[:, None, :].expand(B, K, Lp)  # (B, K, Lp)
    own = torch.ones(K, K, dtype=torch.bool).tril()[None] & ro.mask[:, None, :]  # (B, K, K)
    own = own | torch.eye(K, dtype=torch.bool)[None]  # padding slots see themselves: no empty rows
    mask = torch.cat([prompt_keys, own], dim=2)[:, None]  # (B, 1, K, Lp + K)
    pos_c = pos_p[:, -1:].repeat_interleave(G, dim=0) + 1 + torch.arange(K)[None, :]  # (B, K)
    logits_c, _ = model(ro.tokens, pos_c, mask, cache)  # (B, K, V); slot t predicts token t + 1
    logits = policy_logits(torch.cat([first, logits_c[:, :-1, :]], dim=1))  # (B, K, V): slot t predicts token t
    logp_all = F.log_softmax(logits, dim=-1)  # (B, K, V)
    logp = logp_all.gather(-1, ro.tokens[:, :, None]).squeeze(-1)  # (B, K)
    # <pad> after <eos> has log-prob -inf (it can never be chosen); zero it so that -inf * 0 never makes NaN.
    logp = torch.where(ro.mask, logp, torch.zeros_like(logp))
    with torch.no_grad():
        p_all = logp_all.exp()
        entropy = -(p_all * logp_all.masked_fill(p_all == 0, 0.0)).sum(dim=-1)  # (B, K), nats
    return logp, entropy


def row_seed(seed: int, item_id: str, sample_index: int) -> str:
    """The string that seeds one sampled row: the same (seed, item, index) always draws the same numbers."""
    return f"tinylm:{seed}:{item_id}:{sample_index}"


@torch.no_grad()
def sample_items(
    model: GPT,
    items: Sequence[tuple[str, str]],
    *,
    n: int,
    seed: int,
    temperature: float = 1.0,
    top_p: float = 1.0,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    rows_per_batch: int = 128,
    progress: Callable[[int], None] | None = None,
) -> list[list[tuple[str, bool]]]:
    """``n`` completions for each ``(item id, prompt)``: per item a list of (text, truncated).

    Items are batched ``rows_per_batch // n`` at a time in the given order. Each
    row has its own random stream (``row_seed``), so batching changes only float
    rounding, never which random numbers a sample uses: sample 0 of an n = 8 run
    is the same draw as the single sample of an n = 1 run. ``progress(items_done)``, if given,
    is called after each batch (for a progress line; it never touches the random streams).
    """
    def draw(prompts: list[str], seeds: list[str]) -> SampledBatch:
        return generate(model, prompts, seeds, group=n, temperature=temperature, top_p=top_p, max_tokens=max_tokens)

    return sample_in_batches(items, draw, n=n, seed=seed, seed_of=row_seed, rows_per_batch=rows_per_batch,
                             progress=progress)


def sample_records(
    model: Any,
    policy: str,
    items: Sequence[tuple[str, str]],
    *,
    n: int,
    seed: int,
    temperature: float,
    top_p: float,
    max_tokens: int,
    progress: Callable[[int], None] | None = None,
) -> tuple[list[dict[str, Any]], int]:
    """Rollout records in the frozen-rollouts (n = 1) or selection-pack (n > 1) shape, and the truncation count.

    ``progress(items_done)`` is called after each batch (a progress line; it never changes a sample).
    """
    # How ONE sample is drawn, as course.rollout_sample records it. The number of samples
    # is left out on purpose: it is selection compute (the length of "samples", locked by
    # course.gate as selection.n), and sample j is the same draw whatever n is, so an
    # n=1 file and sample 0 of an n=8 pack carry the same sampling and may be compared.
    sampling = {"temperature": temperature, "top_p": top_p, "max_tokens": max_tokens, "seed": seed}
    drawn = sample_items(model, items, n=n, seed=seed, temperature=temperature, top_p=top_p, max_tokens=max_tokens,
                         progress=progress)
    return rollout_records([ident for ident, _ in items], drawn, policy, sampling)


class TinyLMPolicy:
    """The tiny LM being trained and its frozen reference pi0, as the course's RL loop sees a policy
    (``course.lib.learning.rl_loop.RLPolicy``): every method is one of the functions above, applied to the
    trained model or to pi0. All of the model's weights are trained."""

    def __init__(self, model: GPT, ref: GPT, model_info: dict, ref_info: dict, threads: int) -> None:
        self.model, self.ref, self.model_info, self.ref_info, self.threads = model, ref, model_info, ref_info, threads
        self.pi0_name: str = ref_info["policy"]

    def describe(self) -> str:
        return (f"policy {self.model_info['policy']} ({self.model_info['n_params']:,} params), "
                f"reference pi0 {self.pi0_name}, {self.threads} threads")

    def generate(self, prompts: Sequence[str], row_seeds: Sequence[str], *, group: int, temperature: float,
                 max_tokens: int) -> SampledBatch:
        return generate(self.model, prompts, row_seeds, group=group, temperature=temperature, max_tokens=max_tokens)

    def logprobs(self, rollouts: SampledBatch) -> tuple[torch.Tensor, torch.Tensor]:
        return completion_logprobs(self.model, rollouts)

    def reference_logprobs(self, rollouts: SampledBatch) -> torch.Tensor:
        return completion_logprobs(self.ref, rollouts)[0]

    def parameters(self) -> list[torch.nn.Parameter]:
        return list(self.model.parameters())

    def train_mode(self, training: bool) -> None:
        self.model.train(training)

    def sample_items(self, items: Sequence[tuple[str, str]], *, n: int, seed: int, temperature: float,
                     max_tokens: int) -> list[list[tuple[str, bool]]]:
        return sample_items(self.model, items, n=n, seed=seed, temperature=temperature, max_tokens=max_tokens)

    def rollout_records(self, items: Sequence[tuple[str, str]], *, pi0: bool, policy_name: str, n: int, seed: int,
                        temperature: float, top_p: float, max_tokens: int,
                        progress: Callable[[int], None] | None = None) -> tuple[list[dict], int]:
        return sample_records(self.ref if pi0 else self.model, policy_name, items, n=n, seed=seed,
                              temperature=temperature, top_p=top_p, max_tokens=max_tokens, progress=progress)

    def save(self, path: Path) -> str:
        return save_checkpoint(self.model, path)

    def trained_name(self, sha256: str) -> str:
        return f"tinylm:{sha256[:12]}"

    def shift_report(self, policy_name: str) -> dict:
        return shift_report(functools.partial(sample_items, self.model), policy_name, FROZEN_PI0_DEV)


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.tinylm.policy"))
