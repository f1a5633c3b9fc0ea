"""Loop B's pipeline: best-of-N over a pack of samples, written as a run directory, and its report.

``course.selection_demo`` is its command line (it parses and prints); the maths
(``SelectionTally``, pass@k) lives in ``course.lib.selection.best_of_n``::

    run_dir, manifest, summary = select(Path("data/datasets/math_dev.jsonl"),
                                        Path("data/rollouts/selection_pack_dev.jsonl"), n=4, outdir="runs/x")
    print("\n".join(report_lines(run_dir, manifest, summary)))

For every dataset item it scores ALL samples of the item's pack line with the
strict verifier, hands the FIRST N (stored order) to ``pick_best``
(the student exercise ``course/assignments/pick_best.py``, passed in by the tool
and looked up at call time) and records which sample was chosen. The run directory is the kind
``course.eval`` writes (formats in docs/formats.md) plus a "selection" block in
the manifest (n, rule, picker, picker_sha256): Locked Room fields, so the gate
never credits selection compute to the policy.

Memory: the dataset is held (small); the pack is streamed one line at a time.
A pack in dataset order is written through as it is read; a pack in another
order still works, holding only the results that arrived early until their turn.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from course.errors import CourseError
from course.lib.evaluation.inspection import inspect_failures_command
from course.lib.evaluation.summary import (
    breakdown_lines,
    pass_rate_line,
    percent,
    points,
    render_summary_md,
    split_from_path,
)
from course.lib.records.formats import iter_samples, read_dataset
from course.lib.records.jsonl import JsonlWriter, dumps_line, input_problem
from course.lib.records.manifest import environment, input_fingerprint, locked_room, shown_here, template_note
from course.lib.records.runs import atomic_run_dir, resolve_outdir, write_manifest, write_summary, write_text
from course.lib.selection.best_of_n import GAIN_LABEL, Picker, SelectionTally, item_result, picker_identity
from course.lib.visible import command, markdown_value, terminal_line, visible

TOOL = "course.selection_demo"


# ===========================================================================
# Selection over two files: dataset + pack in, results.jsonl out
# ===========================================================================
@dataclass
class Selected:
    tally: SelectionTally
    results_sha256: str
    policy: str
    sampling: dict[str, Any]
    prompt_template: dict[str, Any] | None = None  # the pack's, if it records one


def select_files(dataset: Path, samples: Path, results_path: Path, *, n: int, picker: Picker) -> Selected:
    """Select best-of-``n`` for every dataset item; write results.jsonl in dataset order.

    Raises ``CourseError`` (``path:line: ...``) for malformed inputs, a pack id
    that is not in the dataset, a dataset item without samples, or an item with
    fewer than ``n`` samples. The caller writes into a temporary directory, so
    an error leaves nothing behind.
    """
    examples = read_dataset(dataset)
    position = {example.id: i for i, example in enumerate(examples)}
    pack_line = [0] * len(examples)  # the pack line of each item; 0 = not seen yet
    tally = SelectionTally(n)
    early: dict[int, dict[str, Any]] = {}  # results that arrived before their turn (pack out of order)
    turn = 0  # the next dataset position to write
    policy: str | None = None
    sampling: dict[str, Any] = {}
    template: dict[str, Any] | None = None
    with JsonlWriter(results_path) as out:
        for pack in iter_samples(samples):
            i = position.get(pack.id)
            if i is None:
                raise CourseError(f"{samples}:{pack.line}: id {pack.id!r} is not in the dataset {dataset}")
            if pack_line[i]:
                raise CourseError(
                    f"{samples}:{pack.line}: duplicate id {pack.id!r} (first seen on line {pack_line[i]}); "
                    "every id must be unique"
                )
            pack_line[i] = pack.line
            if len(pack.samples) < n:
                raise CourseError(
                    f"{samples}:{pack.line}: id {pack.id!r} has {len(pack.samples)} sample"
                    f"{'s' if len(pack.samples) != 1 else ''}; --n {n} needs at least {n} (the first {n} in "
                    "stored order)"
                )
            if policy is None:
                policy, sampling, template = pack.policy, pack.sampling, pack.prompt_template
            early[i] = item_result(examples[i].as_dict(), pack, n, picker)
            while turn in early:  # write every result whose turn has come, in dataset order
                result = early.pop(turn)
                out.write(result)
                tally.add(result)
                turn += 1
        if turn < len(examples):
            missing = sum(1 for line in pack_line if not line)
            example = examples[turn]
            raise CourseError(
                f"{dataset}:{example.line}: id {example.id!r} has no samples in {samples} "
                f"({missing} of {len(examples)} items have none); every dataset item needs a pack line"
            )
        sha = out.sha256
    assert policy is not None  # an empty pack file is rejected by the reader
    return Selected(tally, sha, policy, sampling, template)


# ===========================================================================
# The run directory
# ===========================================================================
def build_manifest(
    *,
    argv: Sequence[str] | None,
    dataset: dict[str, Any],
    samples: dict[str, Any],
    split: str | None,
    selected: Selected,
    selection: dict[str, Any],
    summary_sha256: str,
) -> dict[str, Any]:
    """manifest.json: course.eval's Locked Room fields, the pack, and the selection instrument."""
    return {
        **environment(TOOL, argv),
        **locked_room(dataset, split, selected.policy, selected.sampling, prompt_template=selected.prompt_template),
        "samples": samples,
        "samples_fingerprint": samples["sha256"],
        "n_items": selected.tally.chosen.n,
        "samples_per_item": selected.tally.min_pack,
        "selection": selection,
        "results_sha256": selected.results_sha256,
        "summary_sha256": summary_sha256,
    }


def select(
    dataset: Path,
    samples: Path,
    *,
    n: int,
    outdir: str | os.PathLike[str] | None,
    force: bool = False,
    split: str | None = None,
    argv: Sequence[str] | None = None,
    picker: Picker,
    rule: str,
) -> tuple[Path, dict[str, Any], dict[str, Any]]:
    """Run best-of-``n`` and write the run directory atomically; return ``(run_dir, manifest, summary)``.

    ``picker`` and its ``rule`` come from the tool (``course.assignments.pick_best`` as it is
    *now*, looked up at call time, so a student's edit or a test's monkeypatch is used).
    """
    if type(n) is not int or n < 1:
        raise CourseError(f"--n must be a positive integer (how many samples to choose from), got {n!r}")
    # fail before any work
    final = resolve_outdir(outdir, force=force, prefix=f"sel_n{n}", tool=TOOL, inputs=(dataset, samples))
    for path, what in ((dataset, "dataset"), (samples, "selection pack")):
        problem = input_problem(path)  # a FIFO, a device or a directory is refused here, never opened
        if problem is not None:
            raise CourseError(f"{path}: {problem} (the {what})")
    selection = {"n": n, "rule": rule, **picker_identity(picker)}
    split = split if split is not None else split_from_path(dataset)
    dataset_fp, samples_fp = input_fingerprint(dataset), input_fingerprint(samples)
    with atomic_run_dir(final, force=force, prefix=f"sel_n{n}") as tmp:
        selected = select_files(dataset, samples, tmp / "results.jsonl", n=n, picker=picker)
        summary = {**selected.tally.summary(rule=selection["rule"]), "split": split}
        summary_sha256 = write_summary(tmp, summary)
        manifest = build_manifest(
            argv=argv, dataset=dataset_fp, samples=samples_fp, split=split, selected=selected,
            selection=selection, summary_sha256=summary_sha256,
        )
        write_text(tmp / "summary.md", render_markdown(summary, selected.tally, manifest, final.name))
        write_manifest(tmp, manifest)  # last: a manifest means the rest is complete
    return final, manifest, summary


# ===========================================================================
# Text for humans (console and summary.md share these lines)
# ===========================================================================
def headline_lines(summary: dict[str, Any]) -> list[str]:
    """pass@1, best-of-N and the gain, each labelled for what it is."""
    first, best, gain = summary["pass_at_1"], summary["best_of_n"], summary["selection_gain"]
    n = summary["N"]
    lines = [
        pass_rate_line(first["passed"], first["n"], label="pass@1 (sample 0 of each item)"),
        pass_rate_line(best["passed"], best["n"], label=f"best-of-{n} ({_which(n)})"),
        f"Mean reward: {first['mean_reward']:.3f} (sample 0) -> {best['mean_reward']:.3f} (best-of-{n})",
    ]
    if n == 1:
        # One candidate per item: nothing was selected, so a "+0.0 points selection improvement"
        # would report a measurement of something that did not happen.
        return lines + [
            "Gain: none to measure: at N=1 there is no selection (sample 0 is the only candidate, so best-of-1 "
            "is pass@1). Run --n 2 or more to see what choosing among samples buys."
        ]
    return lines + [
        f"Gain: {points(gain['pass_rate'], signed=True)} points = {GAIN_LABEL}: {gain['items_rescued']} items rescued, "
        f"{gain['items_lost']} lost. Same policy, same samples; {n}x the sampling compute per item.",
    ]


def policy_line(n: int) -> str:
    """Why the policy did not change (N > 1), or what N=1 is (the point best-of-N is measured from)."""
    if n == 1:
        return ("N=1 scores sample 0 of each item, as course.eval scores a frozen rollout: the point best-of-N "
                "is measured from.")
    return ("The policy did not change: selection picks a better output, learning (Loop C) would make good "
            "outputs likelier at N=1.")


def _which(n: int) -> str:
    return "sample 0 only: nothing to choose" if n == 1 else f"first {n} samples, chosen by pick_best"


def curve_lines(summary: dict[str, Any]) -> list[str]:
    """The pass@k table: unbiased pass@k beside pass^k, first-k and the plug-in shortcut."""
    curve = summary["pass_at_k_curve"]
    n_total = curve["samples_per_item"]
    lines = [
        f"{'k':>3}  {'pass@k':>7}  {'pass^k':>7}  {'first-k':>7}  {'plug-in':>7}",
    ]
    for row in curve["rows"]:
        lines.append(
            f"{row['k']:>3}  {percent(row['pass_at_k']):>7}  {percent(row['pass_hat_k']):>7}  "
            f"{percent(row['first_k']):>7}  {percent(row['plug_in']):>7}"
        )
    lines += [
        f"  pass@k  : unbiased estimate from all {n_total} samples per item, 1 - C(n-c,k)/C(n,k) (Chen et al. 2021)",
        "  pass^k  : all k samples pass, C(c,k)/C(n,k) (reliability: falls as k grows)",
        "  first-k : one of the first k stored samples passes (one draw per item: noisier, order-dependent)",
        "  plug-in : 1-(1-c/n)^k, the shortcut that is biased low for k > 1",
    ]
    return lines


def failing_lines(summary: dict[str, Any]) -> list[str]:
    block = summary["still_failing"]
    n = summary["N"]
    lines = [
        f"Selection still fails on {block['count']} of {summary['n_items']} items "
        f"({percent(block['share'])}): no passing sample among the first {n}."
    ]
    for ex in block["examples"]:
        later = ex["first_passing_index"]
        hint = (
            f"; sample {later} of the pack passes, beyond N" if later is not None
            else "; no sample in the whole pack passes"
        )
        lines.append(f"  {visible(str(ex['id']))} (expected {ex['expected']}): {', '.join(ex['codes'])}{hint}")
    return lines


def render_markdown(summary: dict[str, Any], tally: SelectionTally, manifest: dict[str, Any], name: str) -> str:
    """summary.md: course.eval's layout for the chosen samples, then the selection sections."""
    n = summary["N"]
    selection = manifest["selection"]
    context = [
        f"Dataset: {markdown_value(manifest['dataset']['path'])} (split "
        f"{terminal_line(manifest['split'] or 'unknown')}, "
        f"{manifest['n_items']} items, sha256 {manifest['dataset']['sha256'][:12]}…)",
        f"Selection pack: {markdown_value(manifest['samples']['path'])} (policy {markdown_value(manifest['policy'])}, "
        f"{manifest['samples_per_item']} samples per item, sampling {markdown_value(dumps_line(manifest['sampling']))}"
        f"{template_note(manifest)})",
        f"Scorer: `{manifest['scorer_version']}` (fingerprint {manifest['scorer_fingerprint'][:12]}…)",
        f"Selection: best of the first {n} samples by `{selection['picker']}` ({selection['rule']})",
        f"**This is selection, not learning**: {summary['note']}. The rows below describe the CHOSEN sample "
        "of each item.",
    ]
    text = render_summary_md(summary, tally.chosen.examples, title=f"Selection best-of-{n}: {name}", context=context)
    out = [text.rstrip("\n"), "", "## Selection, not learning", ""]
    out += [f"- {line}" for line in headline_lines(summary)]
    out += ["", f"## pass@k from all {summary['pass_at_k_curve']['samples_per_item']} samples per item", "", "```"]
    out += curve_lines(summary)
    out += ["```", "", "## Where selection still fails", ""]
    out += [failing_lines(summary)[0], ""]
    out += [f"- {line.strip()}" for line in failing_lines(summary)[1:]]
    return "\n".join(out).rstrip("\n") + "\n"


def report_lines(run_dir: Path, manifest: dict[str, Any], summary: dict[str, Any]) -> list[str]:
    """What ``course.selection_demo`` prints after a run: the console report, line by line."""
    n = summary["N"]
    selection = manifest["selection"]
    out = [
        f"Selection best-of-{n} on {summary['n_items']} items: {visible(shown_here(manifest['dataset']['path']))} "
        f"(split {visible(manifest['split'] or 'unknown')}) x {visible(shown_here(manifest['samples']['path']))} "
        f"(policy {visible(manifest['policy'])}, {manifest['samples_per_item']} samples per item)",
        f"Scorer {manifest['scorer_version']} (fingerprint {manifest['scorer_fingerprint'][:12]}); "
        f"picker {selection['picker']}: {selection['rule']}",
        "",
        *headline_lines(summary),
        policy_line(n),
        "",
        f"pass@k estimated from all {summary['pass_at_k_curve']['samples_per_item']} samples of each item "
        f"(mean over {summary['n_items']} items):",
        *curve_lines(summary),
        "",
        *failing_lines(summary),
    ]
    codes = breakdown_lines(summary)
    if codes:
        out.append(f"Chosen samples by error code ({summary['failed']} of {summary['n']} fail):")
        out += codes
    out += [
        "",
        f"Wrote {visible(str(run_dir))}/ (manifest.json, results.jsonl, summary.json, summary.md)",
        f"Inspect failures: {inspect_failures_command(run_dir)}",
        "Compare with another run (a different N is a change of selection compute: the Locked Room rejects it): "
        + command(["python", "-m", "course.gate", "--baseline", "RUN", "--candidate", run_dir, "--min-delta", "0"]),
    ]
    return out


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.selection.pipeline"))
