"""Looking inside a scoring run: which outcome codes, how often, and real examples of each.

``course.inspect_run`` is its command line; this module returns lines and never prints::

    run = open_scoring_run("runs/demo_eval_clean")       # CourseError with a pointer for another kind of run
    lines = inspect(run, top_k=5, bottom_k=5, show=2)     # the "top 5 / bottom 5" of measurement hygiene

Averages hide spec bugs and reward hacks; examples do not. What the selections mean:

* **top K**: the K *most frequent* outcome codes of the run (count descending; ties in the
  order the scorer checks its rules). Where most of the mass is: the big format slips.
* **bottom K**: the K *least frequent* codes present in the run (count ascending, same
  tie order), leaving out any already listed under top K. Where a rare spec bug or a new
  loophole first shows up, one or two items at a time.
* **only fails**: leave out the ``ok`` code (items that passed).
* **only passes**: only the ``ok`` code. A pass is a claim too: under a hackable rubric,
  or after a scorer change, read a few to check each one deserves its reward.
* **code C**: one code only.

Examples are the first ``show`` items of each chosen code in dataset order, each with
its prompt (read from the dataset the manifest names, when that file is unchanged),
expected answer, what the scorer extracted, its reason, and the completion with every
invisible or look-alike character escaped (``course.lib.visible``). Everything read
from the run directory is escaped the same way: a hand-edited manifest or result cannot
put a raw control or bidi character on the terminal.

A directory of another kind (a ``course.tinylm.rl`` run, a bandit log, a sweep, a folder
of runs) has no results.jsonl to inspect: :func:`open_scoring_run` refuses it with one
line saying what kind of run it is and what inside it *can* be inspected or viewed.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

from course.errors import CourseError
from course.instrument.spec_v1 import ERROR_CODES
from course.lib.bundled import PROJECT_ROOT
from course.lib.evaluation.summary import (
    PASS_REWARD,
    Tally,
    code_meaning,
    ordered_codes,
    pass_at_1_line,
    pass_rate_line,
    percent,
)
from course.lib.records.formats import RunDir, iter_results, read_dataset, read_run
from course.lib.records.jsonl import dumps_line, read_json
from course.lib.records.manifest import sha256_file
from course.lib.stats import clustered_interval
from course.lib.visible import command, legend, visible

SCORING_TOOLS = ("course.eval", "course.selection_demo")  # run directories with results.jsonl
COMPLETION_LIMIT = 600  # characters shown per completion; the rest is counted, not printed
_FIELD_LIMIT = 200  # characters shown of any other field read from the run
_LISTED = 4  # sub-runs or files named in a pointer
_CODE_RANK = {code: i for i, code in enumerate(ERROR_CODES)}

# What each other tool's run directory is, in a few words (the manifest's "tool" names it).
KIND_OF_RUN = {
    "course.tinylm.rl": "a tiny LM trained by RL",
    "course.tinylm.sweep": "a beta sweep of course.tinylm.rl runs",
    "course.tinylm.sft": "a tiny LM trained by supervised fine-tuning",
    "course.bandit_train": "a bandit trained by REINFORCE",
    "course.toy_mdp": "a two-step MDP trained by REINFORCE",
    "course.kl_tradeoff_demo": "the exact KL trade-off curve",
}


def shown(value: Any) -> str:
    """A value read from the run directory as safe terminal text (strings as they are, else as JSON)."""
    if isinstance(value, str):
        return visible(value, limit=_FIELD_LIMIT)
    return visible(dumps_line(value), limit=_FIELD_LIMIT)


# ===========================================================================
# Opening a run: a scoring run, or a pointer to what can be inspected instead
# ===========================================================================
def _tool_of(directory: Path) -> Any:
    """The manifest's ``tool`` of a directory, or None when it has no readable manifest."""
    manifest = directory / "manifest.json"
    if not manifest.is_file():
        return None
    try:
        return read_json(manifest, "manifest").get("tool")
    except (CourseError, OSError, AttributeError):
        return None


def _scoring_sub_runs(directory: Path) -> list[Path]:
    """Sub-directories that are scoring runs, by name (what ``--run`` can be pointed at instead)."""
    try:
        children = sorted(p for p in directory.iterdir() if p.is_dir() and not p.name.startswith("."))
    except OSError:
        return []
    return [p for p in children if _tool_of(p) in SCORING_TOOLS]


def _named(paths: list[Path]) -> str:
    shown_paths = ", ".join(visible(str(p)) for p in paths[:_LISTED])
    return shown_paths + (f" and {len(paths) - _LISTED} more" if len(paths) > _LISTED else "")


def _pointer(directory: Path, tool: str) -> str:
    """What to look at instead, for a run directory of another kind."""
    from course.lib.reporting.views import REPORTABLE_TOOLS

    subs = _scoring_sub_runs(directory)
    if subs:
        # course.tinylm.rl: the final evaluation is the interesting one, so it comes first.
        subs.sort(key=lambda p: (not p.name.startswith("eval_final"), p.name))
        also = f" (also {_named(subs[1:])})" if len(subs) > 1 else ""
        text = f"inspect its evaluations{also}: {inspect_command(subs[0])}"
    else:
        try:
            files = sorted(p for p in directory.iterdir() if p.is_file() and p.name != "manifest.json"
                           and not p.name.startswith("."))
            runs = sorted(p for p in directory.iterdir() if p.is_dir() and _tool_of(p) is not None)
        except OSError:
            files, runs = [], []
        parts = []
        if files:
            parts.append(f"read its files: {_named(files)}")
        if runs:
            parts.append(f"its sub-runs ({_named(runs)}) are {shown(_tool_of(runs[0]))} runs")
        text = "; ".join(parts) if parts else "it holds no files to read"
    if tool in REPORTABLE_TOOLS:
        text += f"; view it: {command(['python', '-m', 'course.report', directory])}"
    return text


def _clustered_headline(items: dict[str, list[int]]) -> str:
    """pass@1 of a multi-sample run with its item-clustered interval (the samples of an item are not independent)."""
    passed, samples = [k for k, _ in items.values()], [m for _, m in items.values()]
    if len(set(samples)) != 1:
        raise CourseError("a multi-sample run must have the same number of samples for every item")
    lo, hi = clustered_interval(passed, samples)
    return pass_at_1_line(sum(passed), sum(samples), len(items), lo, hi)


def inspect_command(run_dir: str | os.PathLike[str], *options: str) -> str:
    """``python -m course.inspect_run --run RUN_DIR [options]``, quoted so that pasting it works."""
    return command(["python", "-m", "course.inspect_run", "--run", run_dir, *options])


def inspect_failures_command(run_dir: str | os.PathLike[str]) -> str:
    """The command a scoring tool suggests after its run: the failures, five codes, two items of each."""
    return inspect_command(run_dir, "--only-fails", "--top-k", "5", "--show", "2")


def open_scoring_run(path: str | Path) -> RunDir:
    """The run directory of a scoring tool (course.eval, course.selection_demo), ready to inspect.

    Anything else is refused with one ``CourseError`` line that says what it is and points
    at what can be inspected: another tool's run (its kind from the manifest's ``tool``,
    then its scoring sub-runs, e.g. a tiny-LM run's ``eval_final_holdout/``, or its files),
    or a folder that holds runs (which ones). Missing or broken directories get
    ``read_run``'s messages.
    """
    directory = Path(path)
    if directory.is_dir() and not (directory / "manifest.json").exists():
        subs = _scoring_sub_runs(directory)
        if subs:
            raise CourseError(
                f"{visible(str(directory))}: not a run directory but a folder of runs; inspect one"
                + (f" (the others: {_named(subs[1:])})" if len(subs) > 1 else "")
                + f": {inspect_command(subs[0])}"
            )
    if directory.is_dir() and (directory / "manifest.json").is_file():
        manifest = read_json(directory / "manifest.json", "manifest")
        tool = manifest.get("tool") if isinstance(manifest, dict) else None
        # Another tool's run: refused when the tool is known not to score, or when there is nothing
        # scored to read. An unrecognised writer that left a results.jsonl is inspected.
        other = isinstance(tool, str) and tool not in SCORING_TOOLS
        if other and (tool in KIND_OF_RUN or not (directory / "results.jsonl").exists()):
            # `other` holds only for a str tool
            kind = KIND_OF_RUN.get(tool, "not a scoring run")  # type: ignore[arg-type]
            raise CourseError(
                f"{visible(str(directory))}: a {shown(tool)} run ({kind}); it has no scored results of its own "
                # `other` holds only for a str tool
                f"to inspect: {_pointer(directory, tool)}"  # type: ignore[arg-type]
            )
    return read_run(directory)


# ===========================================================================
# Prompts and one example
# ===========================================================================
def _dataset_path(run: RunDir) -> Path | None:
    recorded = run.manifest.get("dataset", {}).get("path") if isinstance(run.manifest.get("dataset"), dict) else None
    if not isinstance(recorded, str):
        return None
    path = Path(recorded)
    if path.is_absolute():
        return path
    for base in (PROJECT_ROOT, Path.cwd()):  # manifests name bundled files relative to the repo
        if (base / path).is_file():
            return base / path
    return None


def load_prompts(run: RunDir) -> tuple[dict[str, str], str | None]:
    """Prompts by id from the run's dataset, or ``({}, why not)`` when they cannot be trusted."""
    path = _dataset_path(run)
    if path is None or not path.is_file():
        return {}, "the dataset named in the manifest is not readable here; prompts not shown"
    expected_sha = run.manifest.get("dataset", {}).get("sha256")
    if sha256_file(path) != expected_sha:
        return {}, f"{visible(str(path))} has changed since the run (sha256 differs); prompts not shown"
    try:
        return {ex.id: ex.prompt for ex in read_dataset(path)}, None
    except CourseError as exc:
        return {}, f"the dataset could not be read ({exc}); prompts not shown"


def _field(label: str, value: Any) -> str:
    return f"   {label + ':':<12}{value}"


def render_example(result: dict[str, Any], prompt: str | None) -> list[str]:
    """The lines describing one item, completion made visible."""
    details = result["details"]
    lines = [f"-- {shown(result['id'])}  (reward {shown(result['reward'])})"]
    if prompt is not None:
        lines.append(_field("prompt", visible(prompt, limit=300)))
    expected = result.get("expected", details.get("expected"))
    extracted = details.get("extracted")
    lines.append(_field("expected", shown(expected)))
    lines.append(_field("extracted", "nothing" if extracted is None else shown(extracted)))
    lines.append(_field("reason", shown(details.get("reason", ""))))
    completion = result.get("completion")
    if isinstance(completion, str):
        text = visible(completion, break_lines=True, limit=COMPLETION_LIMIT).split("\n")
        lines.append(_field("completion", "⟦" + text[0] + ("⟧" if len(text) == 1 else "")))
        for i, more in enumerate(text[1:], start=2):
            lines.append(" " * 15 + more + ("⟧" if i == len(text) else ""))
        names = legend(completion[:COMPLETION_LIMIT])
        if names:
            lines.append(_field("characters", names[0]))
            lines += [" " * 15 + name for name in names[1:]]
    else:
        lines.append(_field("completion", "none" if completion is None else f"not text ({type(completion).__name__})"))
    return lines


# ===========================================================================
# Which codes: top K, bottom K, passes, fails, one code
# ===========================================================================
def bottom_codes(counts: dict[str, int], k: int, *, leave_out: tuple[str, ...] = ()) -> list[str]:
    """The ``k`` least frequent codes present (count ascending; ties in rule order, then by name).

    >>> bottom_codes({"ok": 5, "wrong_answer": 3, "empty": 1, "leading_zero": 1}, 2)
    ['empty', 'leading_zero']
    >>> bottom_codes({"ok": 5, "wrong_answer": 3, "empty": 1}, 2, leave_out=("empty",))
    ['wrong_answer', 'ok']
    """
    rest = [c for c in counts if c not in leave_out]
    return sorted(rest, key=lambda c: (counts[c], _CODE_RANK.get(c, len(_CODE_RANK)), c))[:k]


def rubric_label(manifest: dict[str, Any]) -> str:
    """Which rubric scored the run, as the header shows it.

    >>> rubric_label({"rubric": "contains_answer"}), rubric_label({})
    ('contains_answer', 'strict (not recorded: the run predates --rubric)')
    """
    if "rubric" not in manifest:  # every run from before manifests recorded it was scored strictly
        return "strict (not recorded: the run predates --rubric)"
    return shown(manifest["rubric"])


def inspect(
    run: RunDir,
    *,
    top_k: int | None = 5,
    bottom_k: int | None = None,
    show: int = 2,
    only_fails: bool = False,
    only_passes: bool = False,
    code: str | None = None,
) -> list[str]:
    """The whole report as lines (pure apart from reading the run's results and dataset)."""
    if only_fails and only_passes:
        raise CourseError("--only-fails and --only-passes exclude each other")
    tally, items = _read_tally(run)
    if code is not None and code not in tally.counts and code not in ERROR_CODES:
        present = ", ".join(shown(c) for c in ordered_codes(tally.counts))
        raise CourseError(f"--code {shown(code)}: not an error code of this scorer; codes in this run: {present}")
    summary = tally.summary()
    n = summary["n"]

    m = run.manifest
    rubric = m.get("rubric", "strict") if isinstance(m.get("rubric", "strict"), str) else "?"
    head = [
        f"Run: {visible(str(run.path))} ({shown(run.tool)}, split {shown(m.get('split') or 'unknown')}, "
        f"rubric {rubric_label(m)}, scorer {shown(m.get('scorer_version', '?'))}, policy "
        f"{shown(m.get('policy', '?'))})",
        (_clustered_headline(items) if items else pass_rate_line(summary["passed"], n))
        if n
        else "No items in this run.",
    ]
    sections: list[tuple[str, list[str]]] = []  # (title, codes)
    if code is not None:
        if code not in tally.counts:
            return head + [f"No item has error code {shown(code)}."]
        sections.append((f"Error code {shown(code)}:", [code]))
    elif only_passes:
        if "ok" not in tally.counts:
            return head + ["No item passed: there is no 'ok' outcome to show."]
        sections.append((f"Passes ('ok'): {summary['passed']} of {n} items. Check that each one "
                         "deserves its reward:", ["ok"]))
    else:
        counts = {c: k for c, k in tally.counts.items() if not (only_fails and c == "ok")}
        what = "failure" if only_fails else "outcome"
        scope = f"{summary['failed']} of {n} items failed" if only_fails else f"all {n} items, 'ok' = passed"
        top = ordered_codes(counts)[:top_k] if top_k is not None else []
        if top_k is not None:
            sections.append((f"Top {len(top)} {what} categories ({scope}):", top))
        if bottom_k is not None:
            bottom = bottom_codes(counts, bottom_k, leave_out=tuple(top))
            also = "; not already listed above" if top_k is not None else ""
            sections.append((f"Bottom {len(bottom)} {what} categories, least frequent first ({scope}{also}):", bottom))
    chosen: list[str] = []
    for title, codes in sections:
        head.append(title)
        width = max((len(shown(c)) for c in codes), default=0)
        for c in codes:
            k = tally.counts[c]
            head.append(f"  {shown(c):<{width}}  {k:>5}  {percent(k / n):>6}  {_meaning(c, rubric)}")
        chosen += codes

    if show <= 0 or not chosen:
        return head
    return head + _example_lines(run, chosen, show, tally.counts, n, rubric)


def _read_tally(run: RunDir) -> tuple[Tally, dict[str, list[int]]]:
    """One pass over results.jsonl: the outcome counts, and (a multi-sample run) each item's [passing samples,
    samples]."""
    tally = Tally(examples_per_code=0)
    items: dict[str, list[int]] = {}
    for result in iter_results(run.results_path):
        tally.add(result)
        if "sample_index" in result:
            item = items.setdefault(result["id"], [0, 0])
            item[0] += result["reward"] == PASS_REWARD
            item[1] += 1
    return tally, items


def _example_lines(run: RunDir, chosen: list[str], show: int, counts: Mapping[str, int], n: int,
                   rubric: str) -> list[str]:
    """A second pass: the first ``show`` items of each chosen code, in dataset order, with their prompts."""
    wanted: dict[str, list[dict[str, Any]]] = {c: [] for c in chosen}
    for result in iter_results(run.results_path):
        bucket = wanted.get(result["details"]["error_code"])
        if bucket is not None and len(bucket) < show:
            bucket.append(result)
    prompts, why_not = load_prompts(run)
    out = []
    if why_not:
        out.append(f"(note: {why_not})")
    for c in chosen:
        k = counts[c]
        out += ["", f"== {shown(c)}: {k} of {n} items ({percent(k / n)}) — {_meaning(c, rubric, unknown='')}"]
        for result in wanted[c]:
            out += render_example(result, prompts.get(result["id"]) if prompts else None)
    return out


def _meaning(code: str, rubric: str, unknown: str = "(unknown code)") -> str:
    """The code's meaning as the run's rubric gives it (shown escaped: the rubric name is read from the run)."""
    if code not in ERROR_CODES:
        return unknown
    return visible(code_meaning(code, rubric), limit=_FIELD_LIMIT)


def results_warning(run: RunDir) -> str | None:
    """A warning when results.jsonl no longer matches the sha256 its manifest recorded."""
    recorded = run.manifest.get("results_sha256")
    if recorded is not None and sha256_file(run.results_path) != recorded:
        return (
            f"warning: {visible(str(run.results_path))} does not match the sha256 in its manifest "
            "(edited after the run?)"
        )
    return None


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.evaluation.inspection"))
