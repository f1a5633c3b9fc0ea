"""The rollout and selection-pack record of every policy the course samples itself (docs/formats.md).

One sample per item gives a frozen-rollout line, several give a selection-pack line; ``extra``
fields (the real LLM's ``prompt_template``) go on every line. Standard library only.
"""

from __future__ import annotations

from typing import Any, Sequence


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
                "samples": [
                    {"sample_index": j, "completion": text, "truncated": t} for j, (text, t) in enumerate(samples)
                ],
                "policy": policy,
                "sampling": sampling,
            }
        records.append({**record, **(extra or {})})
    return records, n_truncated
