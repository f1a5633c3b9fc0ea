"""Distribution shift as a table: the strict error codes of pi0's frozen rollouts beside fresh samples of a policy.

Loops A and B can live on frozen rollouts; Loop C cannot. Once the policy has
learned, the completions it produces are no longer the ones in the snapshot:
some failure modes vanish, others appear that the frozen file never contained.
:func:`shift_report` scores both sides with the strict verifier, puts the
error-code distributions side by side (counts and shares) and names the codes
that occur only in the fresh samples (the snapshot's blind spot)::

    report = shift_report(functools.partial(sample_items, model), "tinylm:932791e2e595", FROZEN_PI0_DEV)
    print(report["markdown"])

The commands are ``python -m course.tinylm.shift`` and ``python -m course.tinylm.rl``
(which writes the table as shift.md).

It knows no model: the policy comes in as its ``sample_items`` and the frozen side as a file, so
it sits with the measurements, not with the tiny LM (``course.tinylm.policy`` passes both).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, Callable

from course.errors import CourseError
from course.instrument.spec_v1 import score
from course.lib.bundled import DEFAULT_DATASETS
from course.lib.evaluation.summary import percent
from course.lib.policy.training_problems import read_items
from course.lib.records.formats import iter_completions
from course.lib.visible import visible


def code_table(left: Counter[str], right: Counter[str], left_name: str, right_name: str) -> list[str]:
    """Markdown rows: code | left count | left share | right count | right share, most common first.

    >>> print("\\n".join(code_table(Counter(ok=3, empty=1), Counter(ok=4), "a", "b")))
    | error code | a: count | a: share | b: count | b: share |
    |---|---:|---:|---:|---:|
    | ok | 3 | 75.0% | 4 | 100.0% |
    | empty | 1 | 25.0% | 0 | 0.0% |
    """
    n_left, n_right = sum(left.values()) or 1, sum(right.values()) or 1
    codes = sorted(set(left) | set(right), key=lambda c: (-(left[c] + right[c]), c))
    rows = [f"| error code | {left_name}: count | {left_name}: share | {right_name}: count | {right_name}: share |",
            "|---|---:|---:|---:|---:|"]
    for c in codes:
        rows.append(f"| {c} | {left[c]} | {percent(left[c] / n_left)} "
                    f"| {right[c]} | {percent(right[c] / n_right)} |")
    return rows


def shift_report(sample: Callable[..., list[list[tuple[str, bool]]]], policy_name: str, frozen: Path,
                 seed: int | None = None) -> dict[str, Any]:
    """Score the frozen pi0 rollouts and fresh samples (``sample(items, n=, seed=, temperature=, top_p=, max_tokens=)``,
    the policy's ``sample_items`` with its model bound) on the same items; return the table (``markdown``) and the
    counts."""
    if not Path(frozen).exists():
        raise CourseError(f"{frozen}: no frozen pi0 rollouts (python -m course.tinylm.sample writes them)")
    items = {it["id"]: it for it in read_items(DEFAULT_DATASETS[0])}
    rollouts = list(iter_completions(frozen))
    missing = [c.id for c in rollouts if c.id not in items]
    if missing:
        raise CourseError(f"{frozen}: id {missing[0]!r} is not in {DEFAULT_DATASETS[0].name}")
    sampling = dict(rollouts[0].sampling)
    frozen_policy = rollouts[0].policy
    use_seed = sampling["seed"] if seed is None else seed
    left: Counter[str] = Counter(score(items[c.id], c.completion)["details"]["error_code"] for c in rollouts)
    drawn = sample([(c.id, items[c.id]["prompt"]) for c in rollouts], n=1, seed=use_seed,
                         temperature=sampling["temperature"], top_p=sampling.get("top_p", 1.0),
                         max_tokens=sampling["max_tokens"])
    fresh_texts = [samples[0][0] for samples in drawn]
    right: Counter[str] = Counter(score(items[c.id], t)["details"]["error_code"] for c, t in zip(rollouts, fresh_texts))
    examples: dict[str, str] = {}
    for c, t in zip(rollouts, fresh_texts):
        code = score(items[c.id], t)["details"]["error_code"]
        examples.setdefault(code, t)
    only_fresh = sorted(c for c in right if c not in left)
    only_frozen = sorted(c for c in left if c not in right)
    lines = [
        "# Distribution shift: frozen pi0 rollouts vs fresh samples of the trained policy",
        "",
        f"Items: {len(rollouts)} from math_dev. Left: `{visible(Path(frozen).name)}` "
        f"(policy `{visible(frozen_policy)}`). "
        f"Right: `{policy_name}`, sampled now with temperature {sampling['temperature']}, "
        f"max_tokens {sampling['max_tokens']}, seed {use_seed}.",
        "Both scored by the strict verifier (course.score).",
        "",
        *code_table(left, right, "frozen pi0", "trained"),
        "",
        ("Codes only in the fresh samples (the frozen snapshot's blind spot): "
         + ", ".join(f"{c} (e.g. {examples[c]!r})" for c in only_fresh)) if only_fresh
        else "No code appears in the fresh samples that the frozen snapshot lacks.",
        ("Codes that vanished after training: " + ", ".join(only_frozen)) if only_frozen else "",
        "",
        "Evaluating the trained policy on pi0's frozen rollouts would report the left column: "
        "a Step-N policy has to be measured on its own samples.",
    ]
    text = "\n".join(lines).rstrip() + "\n"
    return {
        "frozen": {"file": Path(frozen).name, "policy": frozen_policy, "codes": {k: left[k] for k in sorted(left)}},
        "fresh": {"policy": policy_name, "seed": use_seed, "codes": {k: right[k] for k in sorted(right)}},
        "only_fresh": only_fresh,
        "only_frozen": only_frozen,
        "markdown": text,
    }


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.evaluation.distribution_shift"))
