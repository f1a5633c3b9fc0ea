"""Sampling from logits, the same for every policy the course samples itself (the tiny LM, the real LLM).

``SampledBatch`` (G completions for each of P prompts, as tensors; ``take_groups`` picks groups of several),
``draw_tokens`` (inverse-CDF, one uniform per row, so each row's random stream is its own), ``filter_top_p``
(nucleus), ``sample_in_batches`` (items in order, rows seeded per (item, sample)) and ``set_threads``
(a fixed thread count keeps float sums, and so runs, bitwise stable). Needs PyTorch (the lm or llm extra): import it
only after ``require``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import torch


def set_threads(n: int) -> int:
    """Fix the intra-op thread count (float sums are grouped per thread; a fixed count keeps runs bitwise stable)."""
    torch.set_num_threads(n)
    return torch.get_num_threads()


@dataclass
class SampledBatch:
    """G sampled completions for each of P prompts (B = P * G rows, prompt-major order).

    prompt_tokens: (P, Lp) long, left-padded ``<pad>.. <bos> prompt <sep>``
    prompt_valid:  (P, Lp) bool, True on real prompt tokens
    tokens:        (B, K) long, the chosen tokens: completion characters then ``<eos>``, ``<pad>`` after
    mask:          (B, K) bool, True on chosen tokens (the actions, including the ``<eos>``)
    group:         G, rows per prompt (row b belongs to prompt b // G)
    texts:         decoded completions (no special tokens)
    truncated:     True where the row hit max_tokens without choosing ``<eos>``
    cropped:       per prompt, True where it was cut to fit the context
    """

    prompt_tokens: torch.Tensor
    prompt_valid: torch.Tensor
    tokens: torch.Tensor
    mask: torch.Tensor
    group: int
    texts: list[str]
    truncated: list[bool]
    cropped: list[bool]


def take_groups(picks: Sequence[tuple[SampledBatch, int]]) -> SampledBatch:
    """One batch made of chosen groups of several batches: ``picks`` = (batch, prompt index), in order.

    Dynamic sampling (course.lib.learning.rl_loop) draws several batches and trains on the groups that
    carry a signal. The prompts are left-padded again to the widest, the completions right-padded:
    a slot off ``prompt_valid`` or off ``mask`` is never read by either policy's log-probabilities,
    so what fills it (0) does not matter.
    """
    if not picks:
        raise ValueError("take_groups needs at least one (rollouts, prompt index) pick")
    G = picks[0][0].group
    if any(ro.group != G for ro, _ in picks):
        raise ValueError("every picked group must have the same group size")
    Lp = max(ro.prompt_tokens.shape[1] for ro, _ in picks)
    K = max(ro.tokens.shape[1] for ro, _ in picks)
    P = len(picks)
    prompt_tokens = torch.zeros((P, Lp), dtype=torch.long)
    prompt_valid = torch.zeros((P, Lp), dtype=torch.bool)
    tokens = torch.zeros((P * G, K), dtype=torch.long)
    mask = torch.zeros((P * G, K), dtype=torch.bool)
    texts: list[str] = []
    truncated: list[bool] = []
    cropped: list[bool] = []
    for i, (ro, p) in enumerate(picks):
        w, k = ro.prompt_tokens.shape[1], ro.tokens.shape[1]
        prompt_tokens[i, Lp - w:] = ro.prompt_tokens[p]
        prompt_valid[i, Lp - w:] = ro.prompt_valid[p]
        tokens[i * G:(i + 1) * G, :k] = ro.tokens[p * G:(p + 1) * G]
        mask[i * G:(i + 1) * G, :k] = ro.mask[p * G:(p + 1) * G]
        texts += ro.texts[p * G:(p + 1) * G]
        truncated += ro.truncated[p * G:(p + 1) * G]
        cropped.append(ro.cropped[p])
    return SampledBatch(prompt_tokens=prompt_tokens, prompt_valid=prompt_valid, tokens=tokens, mask=mask, group=G,
                        texts=texts, truncated=truncated, cropped=cropped)


def draw_tokens(probs: torch.Tensor, uniforms: list[float]) -> torch.Tensor:
    """Inverse-CDF sampling, one uniform per row: probs (B, V) -> ids (B,)."""
    cdf = probs.double().cumsum(dim=-1)  # (B, V)
    u = torch.tensor(uniforms, dtype=torch.float64)[:, None] * cdf[:, -1:]  # (B, 1), scaled to the row's total
    idx = torch.searchsorted(cdf, u, right=True).squeeze(1)  # first id whose CDF exceeds u
    return idx.clamp(max=probs.shape[-1] - 1)


def filter_top_p(probs: torch.Tensor, top_p: float) -> torch.Tensor:
    """Nucleus sampling: keep the smallest set of most likely tokens whose mass reaches top_p."""
    sorted_p, order = torch.sort(probs, dim=-1, descending=True, stable=True)  # (B, V)
    keep_sorted = (sorted_p.cumsum(dim=-1) - sorted_p) < top_p  # mass *before* a token < top_p
    # The most likely token is always kept: a top_p below float32's smallest number (1e-300) compares as 0,
    # and an empty nucleus would divide 0 by 0 (NaN probabilities: every draw the last id).
    keep_sorted[..., 0] = True
    keep = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)
    probs = probs * keep
    return probs / probs.sum(dim=-1, keepdim=True)


def sample_in_batches(
    items: Sequence[tuple[str, str]],
    draw: Callable[[list[str], list[str]], SampledBatch],
    *,
    n: int,
    seed: int,
    seed_of: Callable[[int, str, int], str],
    rows_per_batch: int,
    progress: Callable[[int], None] | None = None,
) -> list[list[tuple[str, bool]]]:
    """The batching of every sampler the course owns (the tiny LM's, the real LLM's): items in the given
    order, ``rows_per_batch // n`` at a time, each row seeded by ``seed_of(seed, item id, sample index)``;
    ``draw(prompts, row_seeds)`` samples one batch. Per item, a list of (text, truncated)."""
    per_batch = max(1, rows_per_batch // n)
    out: list[list[tuple[str, bool]]] = []
    for start in range(0, len(items), per_batch):
        chunk = items[start : start + per_batch]
        seeds = [seed_of(seed, ident, j) for ident, _ in chunk for j in range(n)]
        ro = draw([p for _, p in chunk], seeds)
        for k in range(len(chunk)):
            out.append(list(zip(ro.texts[k * n : (k + 1) * n], ro.truncated[k * n : (k + 1) * n])))
        if progress is not None:
            progress(len(out))
    return out
