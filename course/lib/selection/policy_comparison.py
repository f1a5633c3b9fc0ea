"""Several policies on the same items, side by side: pass@1, pass@k and the strict error codes.

"Who generated this data?" is the course's question; this module answers "and how does
it fail?" for several answers at once. Each input is a rollout file in the course's
formats (frozen rollouts: one sample per item; a selection pack: several), all scored
against one dataset by the strict verifier::

    table = compare_policies("data/datasets/math_dev.jsonl", [
        ("sim", "data/rollouts/selection_pack_dev.jsonl"),
        ("llm-fewshot", "data/llm/pack_fewshot_dev.jsonl"),
    ], k=8)
    print("\\n".join(render(table)))

Per policy: the recorded policy, sampling and prompt template; samples per item; the
unbiased pass@1 and pass@k from all samples of each item (``course.lib.stats.pass_at_k``,
Chen et al. 2021; pass@1 is then the mean share of passing samples); the strict pass
rate of sample 0 alone (what ``course.eval`` reports on the frozen rollouts, with its
95 % Wilson interval); and every error code's share of ALL samples, so a pack's 800
samples describe the policy's habits better than its 100 first samples do.

Every file must hold exactly the dataset's ids ("the same items"); the tool is
``python -m course.compare_policies``.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass
from typing import Any, Sequence

from course.errors import CourseError
from course.instrument.spec_v1 import SCORER_VERSION, score
from course.lib.evaluation.summary import PASS_REWARD, code_meaning, ordered_codes, percent, split_from_path
from course.lib.policy.templates import describe
from course.lib.records.formats import iter_completions, iter_samples, read_dataset
from course.lib.records.jsonl import dumps_line, iter_objects
from course.lib.records.manifest import display_path, refuse_credentials
from course.lib.stats import pass_at_k, wilson_interval
from course.lib.visible import visible


@dataclass(frozen=True)
class PolicyFile:
    """One rollout file read as "item id -> its samples, in stored order"."""

    label: str
    path: str
    kind: str  # "frozen rollouts" or "selection pack"
    policy: str
    sampling: dict[str, Any]
    prompt_template: dict[str, Any] | None
    samples: dict[str, tuple[Any, ...]]


def _is_pack(path: str) -> bool:
    for _, obj in iter_objects(path):
        return "samples" in obj
    return False  # empty: the format's own reader words the error


def read_policy_file(label: str, path: str) -> PolicyFile:
    """A frozen-rollouts file or a selection pack (told apart by line 1's ``samples`` field)."""
    if _is_pack(path):
        packs = list(iter_samples(path))
        first = packs[0]
        samples = {p.id: tuple(s.completion for s in p.samples) for p in packs}
        return PolicyFile(label, path, "selection pack", first.policy, first.sampling, first.prompt_template, samples)
    rows = list(iter_completions(path))
    first_row = rows[0]
    return PolicyFile(label, path, "frozen rollouts", first_row.policy, first_row.sampling, first_row.prompt_template,
                      {r.id: (r.completion,) for r in rows})


def compare_policies(
    dataset: str | os.PathLike[str], files: Sequence[tuple[str, str]], *, k: int = 8
) -> dict[str, Any]:
    """Score every sample of every file against ``dataset``; the table's numbers (what ``--json`` prints)."""
    if not files:
        raise CourseError("name at least one rollout file to compare")
    if k < 1:
        raise CourseError(f"k must be at least 1, got {k}")
    labels = [label for label, _ in files]
    if len(set(labels)) != len(labels):
        shared = next(label for label in labels if labels.count(label) > 1)
        raise CourseError(f"two files share the label {shared!r}; name them LABEL=PATH")
    examples = read_dataset(dataset)
    ids = [ex.id for ex in examples]
    columns = []
    for label, path in files:
        pf = read_policy_file(label, path)
        # printed, and in --json: the rule every manifest is held to, before any scoring
        refuse_credentials(pf.policy, pf.sampling, where=f"{display_path(path)}: the")
        missing = [i for i in ids if i not in pf.samples]
        extra = sorted(set(pf.samples) - set(ids))
        if missing or extra:
            what = f"no line for dataset id {missing[0]!r}" if missing else f"id {extra[0]!r} is not in the dataset"
            raise CourseError(f"{path}: {what} ({len(missing)} missing, {len(extra)} extra); "
                              f"compare policies on the same items ({dataset})")
        codes: Counter[str] = Counter()
        sum_p1 = sum_pk = 0.0
        first_passed = 0
        n_min = min(len(pf.samples[i]) for i in ids)
        for ex in examples:
            texts = pf.samples[ex.id]
            verdicts = [score(ex.as_dict(), t) for t in texts]
            passed = [v["reward"] == PASS_REWARD for v in verdicts]
            codes.update(v["details"]["error_code"] for v in verdicts)
            c = sum(passed)
            sum_p1 += pass_at_k(len(texts), c, 1)
            if n_min >= k:
                sum_pk += pass_at_k(len(texts), c, k)
            first_passed += passed[0]
        n_items = len(examples)
        lo, hi = wilson_interval(first_passed, n_items)
        columns.append({
            "label": label, "path": display_path(path), "kind": pf.kind, "policy": pf.policy, "sampling": pf.sampling,
            "prompt_template": pf.prompt_template, "samples_per_item": n_min,
            "n_samples": sum(len(pf.samples[i]) for i in ids),
            "pass_at_1": sum_p1 / n_items, "pass_at_k": sum_pk / n_items if n_min >= k else None,
            "sample0_passed": first_passed, "sample0_ci95": [lo, hi],
            "codes": dict(sorted(codes.items())),
        })
    return {"dataset": display_path(dataset), "split": split_from_path(dataset), "n_items": len(examples),
            "scorer_version": SCORER_VERSION, "k": k, "columns": columns}


def _percent(x: float | None) -> str:
    return "-" if x is None else percent(x)


def render(table: dict[str, Any]) -> list[str]:
    """The human table: one column per policy, the figures, then every error code's share of all samples."""
    cols = table["columns"]
    k = table["k"]
    n_items = table["n_items"]
    lines = [
        f"{len(cols)} polic{'y' if len(cols) == 1 else 'ies'} on the same {n_items} items of {table['dataset']} "
        f"(split {table['split'] or 'unknown'}), scored by the strict verifier ({table['scorer_version']})",
        "",
    ]
    for c in cols:  # what was read from the files is shown escaped (course.lib.visible): never raw
        lines.append(f"  {visible(c['label'])}: {visible(c['path'])} ({c['kind']}; policy {visible(c['policy'])}, "
                     f"sampling {visible(dumps_line(c['sampling']))}, template "
                     f"{visible(describe(c['prompt_template']))})")
    rows: list[tuple[str, list[str]]] = [
        ("samples per item", [str(c["samples_per_item"]) for c in cols]),
        ("pass@1 (unbiased)", [_percent(c["pass_at_1"]) for c in cols]),
        (f"pass@{k} (unbiased)", [_percent(c["pass_at_k"]) for c in cols]),
        ("sample 0 passes", [f"{c['sample0_passed']}/{n_items}" for c in cols]),
    ]
    all_codes: Counter[str] = Counter()
    for c in cols:
        all_codes.update(c["codes"])
    code_rows = [(f"  {code}", [percent(c['codes'].get(code, 0) / c['n_samples']) for c in cols])
                 for code in ordered_codes(all_codes)]
    head = max(len(r[0]) for r in rows + code_rows)
    widths = [max(len(visible(c["label"])), *(len(r[1][i]) for r in rows + code_rows)) for i, c in enumerate(cols)]

    def line(name: str, values: Sequence[str]) -> str:
        return (f"{name:<{head}}  " + "  ".join(f"{v:>{w}}" for v, w in zip(values, widths))).rstrip()

    lines += ["", line("", [visible(c["label"]) for c in cols])]
    lines += [line(name, values) for name, values in rows]
    lines += ["error codes (share of all samples)"]
    lines += [line(name, values) for name, values in code_rows]
    lines += [""]
    lines += [f"  {code:<{head - 2}}  {code_meaning(code)}" for code in ordered_codes(all_codes)]
    lines += [
        "",
        f"pass@1 and pass@{k}: unbiased estimates from all samples of each item, 1 - C(n-c,k)/C(n,k) (Chen "
        "et al. 2021);",
        f"'-' where a file holds fewer than {k} samples per item (frozen rollouts hold one).",
        "sample 0 passes: the strict pass rate course.eval reports on the frozen rollouts (sample 0 of a pack).",
    ]
    if any(c["prompt_template"] is None for c in cols):
        lines.append("A file without a prompt template gave its policy the dataset prompt as-is (the Locked Room "
                     "counts it as plain).")
    return lines


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.selection.policy_comparison"))
