"""Rollout records of the tiny LM in the course's file formats (frozen rollouts, selection packs).

``course.tinylm.sample`` writes them to a file; ``course.tinylm.rl`` samples pi0 and
the trained policy on the holdout with them. Every record names the policy
(``tinylm:<first 12 hex of the checkpoint's sha256>``) and the sampling settings,
so ``course.gate`` can check that two runs differ only in the policy::

    records, n_truncated = sample_records(model, "tinylm:3203e40d2036", [("dev-0001", "Compute 2 + 3. ...")],
                                          n=1, seed=0, temperature=1.0, top_p=1.0, max_tokens=32)
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from course.tinylm.policy import sample_items


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


def rollout_records(
    ids: Sequence[str],
    drawn: Sequence[Sequence[tuple[str, bool]]],
    policy: str,
    sampling: dict[str, Any],
    extra: dict[str, Any] | None = None,
) -> tuple[list[dict[str, Any]], int]:
    """Sampled ``(text, truncated)`` lists, one per item, as rollout records, and the truncation count.

    One sample per item gives frozen-rollout lines, several give selection-pack lines. ``extra``
    fields go on every line (the real LLM's ``prompt_template``). Shared by the tiny LM and
    ``course.llm.sample``: one record shape for every policy the course samples itself.
    """
    records = []
    n_truncated = 0
    for ident, samples in zip(ids, drawn):
        n_truncated += sum(t for _, t in samples)
        if len(samples) == 1:
            text, truncated = samples[0]
            record = {"id": ident, "completion": text, "truncated": truncated, "policy": policy, "sampling": sampling}
        else:
            record = {
                "id": ident,
                "samples": [{"sample_index": j, "completion": text, "truncated": t} for j, (text, t) in enumerate(samples)],
                "policy": policy,
                "sampling": sampling,
            }
        records.append({**record, **(extra or {})})
    return records, n_truncated


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.tinylm.rollouts"))
