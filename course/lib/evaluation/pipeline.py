# Over 600 lines because scoring a run and merging its parts share every check.
"""Loop A's pipeline: score a completions file against a dataset and write the run directory.

``course.eval`` is its command line; ``course.tinylm.rl`` calls :func:`evaluate` on its
own samples. :func:`score_files` streams both files into results.jsonl and a
``Tally``; :func:`build_manifest` adds the Locked Room fields and provenance;
:func:`evaluate` writes it all atomically through the one run writer
(``course.lib.records.runs``)::

    run_dir, manifest, summary = evaluate(Path("data/datasets/math_dev.jsonl"),
                                          Path("data/rollouts/frozen_rollouts_dev.jsonl"), outdir="runs/x")

The completions are scored by a rubric from ``course.instrument.rubric_registry.RUBRICS``:
``"strict"`` (reward spec v1, the default) or, to *measure* a reward hack, one of
the hackable rubrics (``rubric="contains_answer"``). The manifest records the
rubric's name and version; they are Locked Room fields, so the gate never
compares a pass rate scored by one rubric with one scored by another.

The run directory holds (formats in docs/formats.md):
  manifest.json   the conditions of the measurement (the Locked Room fields course.gate compares)
  results.jsonl   one line per dataset item, in dataset order: id, completion, expected, reward, details
  summary.json    n, passed, pass rate with a 95 % Wilson interval, mean reward, counts and shares per code

A selection pack as the completions (several samples per item) makes a multi-sample run
(``_score_pack``): one results line per sample, with ``sample_index`` and the item's
``item_passed`` of ``item_samples``, and the summary's interval clustered by item.
  summary.md      the same for a human, with a few example failures per code

How the pipeline stays flat in memory (benchmarks/bench_eval.py measures it):
the dataset and the completions are streamed side by side, line by line
(``course.lib.records.formats.iter_aligned``: the one plain reader on each file), and each result
is written as soon as it is scored; only counters and a few example failures are kept. This needs
the completions in dataset order, which is how
the bundled rollouts and every course tool write them. If the ids do not line
up (another order, a missing or an unknown id), the run restarts in *indexed*
mode: the dataset is read once to index its ids (a 64-bit digest per id and its
position, in flat arrays), the completions once to find each one's item and note
where its line starts, then the dataset again, in order, each item's completion
read back from its place in the file. Memory grows by about 60 bytes per item,
not by the items themselves (holding them took ~0.6 KB per item; benchmarks/bench_eval.py). Every id
problem is reported precisely, and results are still written in dataset order.
Either way the output bytes are identical.
"""

from __future__ import annotations

import os
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from course.errors import CourseError
from course.instrument.rubric_registry import Rubric, ScoreFn, get_rubric
from course.lib.bundled import FROZEN_ROLLOUTS_DEV, MATH_DEV, PROJECT_ROOT
from course.lib.evaluation.locked_room import same_value, shown
from course.lib.evaluation.rescoring import MISSING as MISSING_CODE
from course.lib.evaluation.rescoring import Rescorer
from course.lib.evaluation.shards import (
    SHARD_FIELD,
    PartLine,
    Shard,
    check_complete,
    check_same_settings,
    interleave,
    recorded_dataset,
    shard_from_record,
)
from course.lib.evaluation.summary import (
    PASS_REWARD,
    Tally,
    clustered_summary,
    missing_result,
    render_summary_md,
    result_record,
    split_from_path,
)
from course.lib.records.formats import (
    COMPLETION_FIELDS,
    PROMPT_TEMPLATE,
    NotAligned,
    SampleSet,
    iter_aligned,
    iter_completion_objects,
    iter_dataset_objects,
    iter_samples,
    line_check,
    read_run,
    result_line_check,
)
from course.lib.records.jsonl import (
    MAX_READ,
    JsonlWriter,
    dumps_line,
    empty_file,
    input_lines,
    input_problem,
    line_ends,
    open_input,
    parse_line,
)
from course.lib.records.manifest import (
    display_path,
    environment,
    input_fingerprint,
    locked_room,
    sha256_file,
    template_note,
)
from course.lib.records.runs import atomic_run_dir, resolve_outdir, write_manifest, write_summary, write_text
from course.lib.visible import markdown_value, terminal_line, visible

TOOL = "course.eval"
PROGRESS_EVERY = 8192  # lines between checks of the clock for the progress line


# ===========================================================================
# Scoring: two files in, results.jsonl out, a Tally of what happened
# ===========================================================================
@dataclass
class Scored:
    """What scoring produced besides results.jsonl."""

    tally: Tally
    results_sha256: str
    n_missing: int
    policy: str
    sampling: dict[str, Any]
    in_dataset_order: bool
    prompt_template: dict[str, Any] | None = None  # line 1's, if the file records one
    samples_per_item: int = 0  # 0: a rollouts file (one completion per item); m >= 1: a selection pack scored whole
    item_counts: tuple[tuple[int, int], ...] = ()  # a pack: each item's (passing samples, samples), dataset order


Progress = Callable[[int], None]


def score_files(
    dataset: Path,
    completions: Path,
    results_path: Path,
    *,
    allow_missing: bool = False,
    progress: Progress | None = None,
    rubric: Rubric | None = None,
    shard: Shard | None = None,
) -> Scored:
    """Score every dataset item's completion with ``rubric`` (default strict); write results.jsonl in dataset order.

    Raises ``CourseError`` (``path:line: ...``) for any malformed input; the
    caller writes into a temporary directory, so nothing is left behind.
    With a ``shard`` (``course.lib.evaluation.shards``) only the shard's items are scored and written. With
    the completions in dataset order only its lines (and line 1, the one-policy reference) are parsed and
    checked: every line is checked by the part that owns it (against line 1, as in a whole run), and a
    dataset id repeated in two parts' lines by the merge, which reads the whole dataset. Otherwise (the
    indexed path) both files are read and checked whole.
    """
    rubric = get_rubric("strict") if rubric is None else rubric
    if is_pack(completions):
        if shard is not None:  # a part measures its shard's items; a pack's samples are per item, so shard the dataset
            raise CourseError(f"{completions}: --shard scores rollouts files line by line; a selection pack is "
                              "scored whole "
                              "(several samples per item): run it without --shard")
        return _score_pack(dataset, completions, results_path, allow_missing, progress, rubric)
    try:
        return _score_aligned(dataset, completions, results_path, progress, rubric, shard)
    except NotAligned:  # the completions do not follow the dataset line by line
        return _score_indexed(dataset, completions, results_path, allow_missing, progress, rubric, shard)


def _score_aligned(
    dataset: Path, completions: Path, results_path: Path, progress: Progress | None, rubric: Rubric,
    shard: Shard | None = None,
) -> Scored:
    """The streaming path: dataset line i and completions line i carry the same id."""
    score: ScoreFn = rubric.score  # strict: spec_v1.score itself, so strict results are what they always were
    tally = Tally(scorer_version=rubric.version, rubric=rubric.name)
    first: dict[str, Any] | None = None
    with JsonlWriter(results_path) as out:
        write, add = out.write, tally.add  # bound once: this loop runs a million times
        holds = None if shard is None else shard.holds
        for example, record in iter_aligned(dataset, completions, holds):
            if first is None:
                first = record
                if holds is not None and not holds(0):
                    continue  # line 1, read by every part (the one-policy reference), is part 0's to score
            ident, text, expected = example["id"], record["completion"], example["expected_answer"]
            # Score, then one results.jsonl line: id, completion, expected, reward, details.
            scored = score(example, text)
            reward, details = scored["reward"], scored["details"]
            result = {"id": ident, "completion": text, "expected": expected, "reward": reward, "details": details}
            write(result)
            add(result)
            if progress is not None and tally.n % PROGRESS_EVERY == 0:
                progress(tally.n)
        sha = out.sha256
    assert first is not None  # an empty dataset file is rejected by the reader
    return Scored(tally, sha, 0, first["policy"], first["sampling"], True, first.get(PROMPT_TEMPLATE))


def is_pack(completions: Path) -> bool:
    """True when the completions file is a selection pack: its first line holds a ``samples`` array."""
    with open_input(completions) as f:
        for raw in input_lines(f):
            record = parse_line(raw, completions, 1)
            return isinstance(record, dict) and "samples" in record
    return False


def _score_pack(
    dataset: Path, completions: Path, results_path: Path, allow_missing: bool, progress: Progress | None,
    rubric: Rubric,
) -> Scored:
    """A multi-sample run: every sample of every item scored, one results line per sample.

    The lines of an item follow each other in sample order, each with its ``sample_index`` and the
    item's ``item_passed`` of ``item_samples`` (its pass rate, the unit the gate pairs over). Every
    item must have the same number of samples (pass@1 is then the pooled rate and the mean of the
    items' rates alike). The pack is held in memory (packs hold hundreds of items, not millions).
    """
    sets: dict[str, SampleSet] = {}
    first: SampleSet | None = None
    for sample_set in iter_samples(completions):
        if first is None:
            first = sample_set
        elif len(sample_set.samples) != len(first.samples):
            raise CourseError(
                f"{completions}:{sample_set.line}: id {sample_set.id!r} has {len(sample_set.samples)} samples, the "
                f"first item {len(first.samples)}; a multi-sample run scores the same number of samples for every item"
            )
        sets[sample_set.id] = sample_set
    if first is None:
        raise empty_file(completions)
    m = len(first.samples)
    examples = list(iter_dataset_objects(dataset))
    known = {example["id"] for _, example in examples}
    for ident, sample_set in sets.items():
        if ident not in known:
            raise CourseError(f"{completions}:{sample_set.line}: id {ident!r} is not in the dataset {dataset}")
    missing = [(line, example["id"]) for line, example in examples if example["id"] not in sets]
    if missing and not allow_missing:
        line, ident = missing[0]
        raise CourseError(
            f"{dataset}:{line}: id {ident!r} has no samples in {completions} "
            f"({len(missing)} of {len(examples)} items have none); pass --allow-missing to score them as failures"
        )
    score: ScoreFn = rubric.score
    tally = Tally(scorer_version=rubric.version, rubric=rubric.name)
    counts: list[tuple[int, int]] = []
    with JsonlWriter(results_path) as out:
        for _, example in examples:
            # the loop's name is reused for the next value of another type
            sample_set = sets.get(example["id"])  # type: ignore[assignment]
            if sample_set is None:
                lines = [missing_result(example, scorer_version=rubric.version) for _ in range(m)]
            else:
                lines = [result_record(example, x.completion, score(example, x.completion)) for x in sample_set.samples]
            k = sum(1 for line in lines if line["reward"] == PASS_REWARD)
            counts.append((k, m))
            # the loop's name is reused for the next value of another type
            for index, line in enumerate(lines):  # type: ignore[assignment]
                # the loop's name is reused for the next value of another type
                result = {**line, "sample_index": index, "item_passed": k, "item_samples": m}  # type: ignore[dict-item]
                out.write(result)
                tally.add(result)
                if progress is not None and tally.n % PROGRESS_EVERY == 0:
                    progress(tally.n)
        sha = out.sha256
    in_order = list(sets) == [example["id"] for _, example in examples]
    return Scored(tally, sha, len(missing), first.policy, first.sampling, in_order, first.prompt_template,
                  samples_per_item=m, item_counts=tuple(counts))


class _DigestsCollide(Exception):
    """Two different ids share a 64-bit digest: the indexed path cannot tell them apart by digest."""


class _IdIndex:
    """Each dataset id's position, kept as the id's 64-bit digest (Python's ``hash``) in an open-addressing
    table: linear probing over two flat ``array('q')`` (digests, positions), at most half full, so 32 to 64
    bytes per id whatever the ids' length. A digest is not the id: whoever finds a position checks the id
    itself later (``_score_indexed`` does), and two dataset ids with one digest raise ``_DigestsCollide``."""

    def __init__(self, n: int) -> None:
        size = 1024
        while size < 2 * n:
            size *= 2
        self._digests, self._positions = array("q", bytes(8 * size)), array("q", bytes(8 * size))
        self._mask = size - 1

    def add(self, ident: str, position: int) -> None:
        digest, digests, mask = hash(ident) or 1, self._digests, self._mask  # 0 marks a free slot
        slot = digest & mask
        while digests[slot]:
            if digests[slot] == digest:
                raise _DigestsCollide
            slot = (slot + 1) & mask
        digests[slot], self._positions[slot] = digest, position

    def get(self, ident: str) -> int:
        """The position of the dataset id with this id's digest, or -1: then the id is surely not in the dataset."""
        digest, digests, mask = hash(ident) or 1, self._digests, self._mask
        slot = digest & mask
        while digests[slot]:
            if digests[slot] == digest:
                return self._positions[slot]
            slot = (slot + 1) & mask
        return -1


def _score_indexed(
    dataset: Path, completions: Path, results_path: Path, allow_missing: bool, progress: Progress | None,
    rubric: Rubric, shard: Shard | None = None,
) -> Scored:
    """Any order, in memory of a few dozen bytes per item (see the module docstring); the items held in
    memory instead only if two ids share a digest (about once in 10**7 runs of a million items)."""
    try:
        return _score_by_offsets(dataset, completions, results_path, allow_missing, progress, rubric, shard)
    except _DigestsCollide:
        return _score_in_memory(dataset, completions, results_path, allow_missing, progress, rubric, shard)


def _in_shard(items: Any, shard: Shard | None) -> Any:
    """Only the shard's items of a dataset-order stream (all of them without a shard)."""
    return items if shard is None else (item for position, item in enumerate(items) if shard.holds(position))


def _missing_in_shard(missing: Any, shard: Shard | None) -> int:
    """How many of the positions ``missing`` (items without a completion) the shard holds: its part's n_missing."""
    return sum(1 for i in missing if shard is None or shard.holds(i))


def _line_at(f: Any, offset: int) -> bytes:
    f.seek(offset)
    return f.readline(MAX_READ + 1)


def _score_by_offsets(
    dataset: Path, completions: Path, results_path: Path, allow_missing: bool, progress: Progress | None,
    rubric: Rubric, shard: Shard | None = None,
) -> Scored:
    """Index the dataset's ids, find each completion's item and line offset, then score in dataset order."""
    # 1. the dataset (every check of its reader): id digest -> position
    index = _IdIndex(line_ends(dataset)[0] + 1)
    n = 0
    for n, (_, example) in enumerate(iter_dataset_objects(dataset), 1):
        index.add(example["id"], n - 1)
    # 2. the completions (every check of their reader), in file order, so the first bad line is the one reported
    seen_on = array("q", bytes(8 * n))  # completions line of each item, 0 = none yet
    offsets = array("q", bytes(8 * n))  # where that line starts in the file
    check = line_check(completions, COMPLETION_FIELDS, one_policy=True, unique=False)
    first: dict[str, Any] | None = None
    with open_input(completions) as f, open_input(completions) as again:
        lineno = offset = 0
        for raw in input_lines(f):
            lineno += 1
            record = parse_line(raw, completions, lineno)
            check(record, completions, lineno)
            i = index.get(record["id"])
            if i < 0:
                raise CourseError(f"{completions}:{lineno}: id {record['id']!r} is not in the dataset {dataset}")
            if seen_on[i]:
                if parse_line(_line_at(again, offsets[i]), completions, seen_on[i])["id"] != record["id"]:
                    raise _DigestsCollide  # two different ids, one digest
                raise CourseError(
                    f"{completions}:{lineno}: duplicate id {record['id']!r} (first seen on line {seen_on[i]}); "
                    "every id must be unique"
                )
            seen_on[i], offsets[i] = lineno, offset
            offset += len(raw)
            if first is None:
                first = record
    if first is None:
        raise empty_file(completions)
    n_missing = seen_on.count(0)

    def pairs() -> Any:
        """(dataset line, example, its completion record or None), in dataset order, each id checked."""
        # Both files passed every check of their readers above; what is read again here is parsed, not re-checked.
        with open_input(dataset) as d, open_input(completions) as f:
            for i, raw in enumerate(input_lines(d)):
                line = i + 1
                example = parse_line(raw, dataset, line)
                record = None
                if seen_on[i]:
                    record = parse_line(_line_at(f, offsets[i]), completions, seen_on[i])
                    if record["id"] != example["id"]:
                        raise _DigestsCollide  # a completion whose id is not the dataset's, with the same digest
                yield line, example, record

    if n_missing and not allow_missing:
        # Every found id is checked against the dataset first: an unknown id hidden by a digest is the earlier error.
        first_missing: tuple[int, str] | None = None
        for line, example, record in pairs():
            if record is None and first_missing is None:
                first_missing = line, example["id"]
        assert first_missing is not None
        line, ident = first_missing
        raise CourseError(
            f"{dataset}:{line}: id {ident!r} has no completion in {completions} "
            f"({n_missing} of {n} items have none); pass --allow-missing to score them as failures"
        )
    # 3. the dataset again, in order, each completion read back from its line
    items = ((example, record is not None, record and record["completion"]) for _, example, record in pairs())
    tally, sha = _write_in_dataset_order(results_path, _in_shard(items, shard), rubric, progress)
    if shard is not None:
        n_missing = _missing_in_shard((i for i in range(n) if not seen_on[i]), shard)
    return Scored(tally, sha, n_missing, first["policy"], first["sampling"], False, first.get(PROMPT_TEMPLATE))


def _write_in_dataset_order(
    results_path: Path, items: Any, rubric: Rubric, progress: Progress | None
) -> tuple[Tally, str]:
    """results.jsonl from ``(example, has a completion, its text)`` in dataset order: the Tally and the file's
    sha256."""
    score: ScoreFn = rubric.score
    tally = Tally(scorer_version=rubric.version, rubric=rubric.name)
    with JsonlWriter(results_path) as out:
        for example, present, text in items:
            if present:
                scored = score(example, text)
                result = {
                    "id": example["id"],
                    "completion": text,
                    "expected": example["expected_answer"],
                    "reward": scored["reward"],
                    "details": scored["details"],
                }
            else:
                result = missing_result(example, scorer_version=rubric.version)
            out.write(result)
            tally.add(result)
            if progress is not None and tally.n % PROGRESS_EVERY == 0:
                progress(tally.n)
        sha = out.sha256
    return tally, sha


def _score_in_memory(
    dataset: Path, completions: Path, results_path: Path, allow_missing: bool, progress: Progress | None,
    rubric: Rubric, shard: Shard | None = None,
) -> Scored:
    """Any order: hold the dataset and completions in memory, check every id, score in dataset order
    (exact whatever the digests: the fallback when two ids share one)."""
    examples: list[dict[str, Any]] = []
    lines: list[int] = []
    for lineno, example in iter_dataset_objects(dataset):
        examples.append(example)
        lines.append(lineno)
    position = {example["id"]: i for i, example in enumerate(examples)}
    texts: list[Any] = [None] * len(examples)
    seen_on: list[int] = [0] * len(examples)  # completions line of each item, 0 = none yet
    first: dict[str, Any] | None = None
    for lineno, record in iter_completion_objects(completions, unique=False):
        i = position.get(record["id"])
        if i is None:
            raise CourseError(f"{completions}:{lineno}: id {record['id']!r} is not in the dataset {dataset}")
        if seen_on[i]:
            raise CourseError(
                f"{completions}:{lineno}: duplicate id {record['id']!r} (first seen on line {seen_on[i]}); "
                "every id must be unique"
            )
        seen_on[i] = lineno
        texts[i] = record["completion"]
        if first is None:
            first = record
    missing = [i for i, line in enumerate(seen_on) if not line]
    if missing and not allow_missing:
        i = missing[0]
        raise CourseError(
            f"{dataset}:{lines[i]}: id {examples[i]['id']!r} has no completion in {completions} "
            f"({len(missing)} of {len(examples)} items have none); pass --allow-missing to score them as failures"
        )
    assert first is not None
    items = ((example, bool(seen_on[i]), texts[i]) for i, example in enumerate(examples))
    tally, sha = _write_in_dataset_order(results_path, _in_shard(items, shard), rubric, progress)
    return Scored(tally, sha, _missing_in_shard(missing, shard), first["policy"], first["sampling"], False,
                  first.get(PROMPT_TEMPLATE))


# ===========================================================================
# The run directory
# ===========================================================================
def build_manifest(
    *,
    argv: Sequence[str] | None,
    dataset: dict[str, Any],
    completions: dict[str, Any],
    split: str | None,
    scored: Scored,
    allow_missing: bool,
    summary_sha256: str,
    rubric: Rubric | None = None,
    shard: Shard | None = None,
) -> dict[str, Any]:
    """manifest.json: the Locked Room fields first (the rubric among them), then provenance.

    A part (``shard``) records which part it is under ``"shard"``; a whole run has no such key.
    """
    manifest = {
        **environment(TOOL, argv),
        **locked_room(dataset, split, scored.policy, scored.sampling, rubric, prompt_template=scored.prompt_template),
        "completions": completions,
        "n_items": len(scored.item_counts) if scored.samples_per_item else scored.tally.n,
        **({"samples_per_item": scored.samples_per_item} if scored.samples_per_item else {}),
        "n_missing": scored.n_missing,
        "allow_missing": allow_missing,
        "completions_in_dataset_order": scored.in_dataset_order,
        "results_sha256": scored.results_sha256,
        "summary_sha256": summary_sha256,
    }
    if shard is not None:
        manifest[SHARD_FIELD] = shard.record()
    return manifest


def rubric_line(manifest: dict[str, Any]) -> str | None:
    """One line naming a non-strict rubric and its loophole (None for strict: nothing to warn about)."""
    name = manifest.get("rubric", "strict")
    if name == "strict":
        return None
    rubric = get_rubric(name)
    return (f"Rubric: {name} ({manifest.get('rubric_version')}), NOT the strict verifier; hackable on purpose: "
            f"{rubric.loophole}")


def _context_lines(manifest: dict[str, Any]) -> list[str]:
    rubric = rubric_line(manifest)
    return ([rubric] if rubric else []) + [
        f"Dataset: {markdown_value(manifest['dataset']['path'])} (split "
        f"{terminal_line(manifest['split'] or 'unknown')}, "
        f"{manifest['n_items']} items, sha256 {manifest['dataset']['sha256'][:12]}…)",
        f"Completions: {markdown_value(manifest['completions']['path'])} (policy {markdown_value(manifest['policy'])}, "
        f"sampling {markdown_value(dumps_line(manifest['sampling']))}{template_note(manifest)})",
        f"Scorer: `{manifest['scorer_version']}` (fingerprint {manifest['scorer_fingerprint'][:12]}…)",
        f"Missing completions scored as failures: {manifest['n_missing']}",
    ]


def resolve_inputs(dataset: str | None, completions: str | None) -> tuple[Path, Path]:
    """The files a scoring command names: both given, or neither (the bundled dev set and its frozen rollouts)."""
    if (dataset is None) != (completions is None):
        raise CourseError("pass both --dataset and --completions, or neither (to use the bundled dev set)")
    if dataset is None or completions is None:
        return PROJECT_ROOT / MATH_DEV, PROJECT_ROOT / FROZEN_ROLLOUTS_DEV
    return Path(dataset), Path(completions)


def render_markdown(manifest: dict[str, Any], summary: dict[str, Any], examples: Any) -> str:
    """summary.md of a course.eval run (a whole run, a part, or parts merged: the same words)."""
    return render_summary_md(
        summary, examples, title="Evaluation summary (course.eval)", context=_context_lines(manifest)
    )


def evaluate(
    dataset: Path,
    completions: Path,
    *,
    outdir: str | os.PathLike[str] | None,
    force: bool = False,
    allow_missing: bool = False,
    split: str | None = None,
    argv: Sequence[str] | None = None,
    progress: Progress | None = None,
    rubric: str = "strict",
    completions_recorded_as: str | os.PathLike[str] | None = None,
    shard: Shard | None = None,
) -> tuple[Path, dict[str, Any], dict[str, Any]]:
    """Score with the rubric named ``rubric`` and write the run directory atomically; return
    ``(run_dir, manifest, summary)``.

    ``completions_recorded_as``: the path the manifest and summary.md give the completions, when
    they lie in a run directory still being written (course.tinylm.rl): the path they will have.
    ``shard``: write part K of N only (``course.lib.evaluation.shards``; ``merge_eval_runs`` joins the parts).
    """
    chosen = get_rubric(rubric)  # an unknown name: CourseError listing the names, before any work
    # fail before any work
    final = resolve_outdir(outdir, force=force, prefix="eval", tool=TOOL, inputs=(dataset, completions))
    for path, what in ((dataset, "dataset"), (completions, "completions")):
        problem = input_problem(path)  # a FIFO, a device or a directory is refused here, never opened
        if problem is not None:
            raise CourseError(f"{path}: {problem} (the {what})")
    split = split if split is not None else split_from_path(dataset)
    dataset_fp, completions_fp = input_fingerprint(dataset), input_fingerprint(completions)
    if completions_recorded_as is not None:
        completions_fp["path"] = display_path(completions_recorded_as)
    with atomic_run_dir(final, force=force, prefix="eval") as tmp:
        scored = score_files(
            dataset, completions, tmp / "results.jsonl", allow_missing=allow_missing, progress=progress, rubric=chosen,
            shard=shard,
        )
        summary = {**scored.tally.summary(), "split": split, "n_missing": scored.n_missing}
        if scored.samples_per_item:  # several samples per item: the items are the unit of the interval
            summary.update(clustered_summary(scored.item_counts))
        summary_sha256 = write_summary(tmp, summary)
        manifest = build_manifest(
            argv=argv,
            dataset=dataset_fp,
            completions=completions_fp,
            split=split,
            scored=scored,
            allow_missing=allow_missing,
            summary_sha256=summary_sha256,
            rubric=chosen,
            shard=shard,
        )
        write_text(tmp / "summary.md", render_markdown(manifest, summary, scored.tally.examples))
        write_manifest(tmp, manifest)  # last: a manifest means the rest is complete
    return final, manifest, summary


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.evaluation.pipeline"))


# ===========================================================================
# course.eval merge: part runs -> the run one process would have written
# ===========================================================================
# Every manifest key a part shares with its siblings: the Locked Room fields, the inputs and how they were read.
PART_SETTINGS = (
    "tool", "dataset", "dataset_fingerprint", "split", "rubric", "rubric_version", "scorer_version",
    "scorer_fingerprint", "policy", "sampling", "prompt_template", "completions", "allow_missing",
)  # not completions_in_dataset_order: a part sees only its own lines' order (the merge records whether all did)


PART_FILES = ("manifest.json", "results.jsonl", "summary.json", "summary.md")  # what course.eval --shard writes


def _read_part(path: str | os.PathLike[str]) -> tuple[str, Any, Shard]:
    run = read_run(path)
    where = f"{visible(str(run.path))}/manifest.json"
    if run.manifest.get("tool") != "course.eval":
        raise CourseError(f"{where}: written by {shown(run.manifest.get('tool'), 60)}; merge takes course.eval parts")
    if SHARD_FIELD not in run.manifest:
        raise CourseError(f"{where}: not a part (no shard in its manifest); parts are written by "
                          "course.eval --shard K/N")
    shard = shard_from_record(run.manifest[SHARD_FIELD], where)
    if sha256_file(run.results_path) != run.manifest.get("results_sha256"):
        raise CourseError(
            f"{visible(str(run.results_path))}: does not match the sha256 recorded in its manifest; it was changed "
            "after the run (score that part again)"
        )
    return visible(str(run.path)), run, shard


def _part_rescorer(manifest: dict[str, Any], where: str) -> Rescorer:
    """The ``Rescorer`` of the parts' rubric, or one line saying why the parts cannot be re-scored (a merge never
    accepts a line it could not re-score)."""
    rescorer = Rescorer(manifest.get("rubric", "strict"), manifest.get("scorer_fingerprint"), "")
    if rescorer.unscorable is not None:
        raise CourseError(f"{where}: the parts cannot be re-scored: {rescorer.unscorable}; score them again")
    return rescorer


def _check_part_line(line: PartLine, rescorer: Rescorer, dataset: Path) -> None:
    """A part's line names its dataset item's expected answer and records the verdict the rubric gives it
    against that item, or the merge is refused naming the part's file, line and item."""
    record, where = line.record, visible(str(line.path))
    if not same_value(record.get("expected"), line.item["expected_answer"]):
        raise CourseError(
            f"{where}:{line.lineno}: id {shown(record['id'], 80)} records expected {shown(record.get('expected'), 40)} "
            f"but the dataset {visible(str(dataset))} says {shown(line.item['expected_answer'], 40)}; this part was "
            "not scored against the dataset the parts recorded (score it again)")
    found = rescorer.add(record, line.lineno, example=line.item, where=where)
    if found is not None:
        raise CourseError(f"{found}; the part was changed after it was scored (score it again)")
    if rescorer.unscorable is not None:
        raise CourseError(f"{rescorer.unscorable}; this part cannot be re-scored (score it again)")


def merge_eval_runs(
    parts: Sequence[str | os.PathLike[str]],
    *,
    outdir: str | os.PathLike[str] | None,
    force: bool = False,
    dataset: str | os.PathLike[str] | None = None,
    argv: Sequence[str] | None = None,
) -> tuple[Path, dict[str, Any], dict[str, Any]]:
    """Check the part runs and write the merged run atomically; return ``(run_dir, manifest, summary)``.

    Every line of every part is scored again against the dataset item it holds, and a line that
    records another expected answer, reward or code is refused, naming the part's file, line and
    item (``_check_part_line``): a merge accepts nothing it could not re-score. ``outdir`` may not
    be, or hold, a file of a part, even with ``force``.
    results.jsonl is the parts' lines in dataset order and summary.json is tallied from them in
    that order, exactly as ``evaluate`` tallies: so both are the
    single-process run's bytes. The manifest is the parts' (the same Locked Room fields), with this
    command's provenance, no shard, and ``merged_from`` naming each part and its results' sha256.
    """
    if not parts:
        raise CourseError("merge needs the part run directories (python -m course.eval merge PARTS... --outdir RUN)")
    # Every file of every part is an input: the merged run may not replace one (fail before any work).
    inputs = [os.path.join(p, name) for p in parts for name in PART_FILES] + [*parts, dataset]
    final = resolve_outdir(outdir, force=force, prefix="eval", tool=TOOL, inputs=inputs)
    read = [_read_part(p) for p in parts]
    check_same_settings([(name, run.manifest) for name, run, _ in read], PART_SETTINGS)
    count = check_complete([(name, shard) for name, _, shard in read])
    by_index = sorted(read, key=lambda r: r[2].index)
    first = by_index[0][1].manifest
    source = recorded_dataset(first["dataset"], dataset, f"{by_index[0][0]}/manifest.json")
    rescorer = _part_rescorer(first, f"{by_index[0][0]}/manifest.json")
    tally = Tally(scorer_version=first["scorer_version"], rubric=first.get("rubric", "strict"))
    with atomic_run_dir(final, force=force, prefix="eval") as tmp:
        with JsonlWriter(tmp / "results.jsonl") as out:
            lines = interleave(source, [run.results_path for _, run, _ in by_index], count, by_index[0][2].block,
                               checker=result_line_check)
            for line in lines:
                _check_part_line(line, rescorer, source)
                out.write_line(line.raw.decode("utf-8").rstrip("\n"))
                tally.add(line.record)
            results_sha256 = out.sha256
        n_missing = tally.counts.get(MISSING_CODE, 0)  # what the lines say, re-scored: not what a manifest claims
        summary = {**tally.summary(), "split": first.get("split"), "n_missing": n_missing}
        summary_sha256 = write_summary(tmp, summary)
        manifest = {**first, **environment(TOOL, argv)}
        del manifest[SHARD_FIELD]
        manifest.update({
            "completions_in_dataset_order": all(run.manifest.get("completions_in_dataset_order") is True
                                                for _, run, _ in by_index),
            "n_items": tally.n, "n_missing": n_missing, "results_sha256": results_sha256,
            "summary_sha256": summary_sha256,
            "merged_from": [{"run": display_path(run.path), "shard": shard.label,
                             "n_items": run.manifest.get("n_items"),
                             "results_sha256": run.manifest["results_sha256"]} for _, run, shard in by_index],
        })
        write_text(tmp / "summary.md", render_markdown(manifest, summary, tally.examples))
        write_manifest(tmp, manifest)  # last: a manifest means the rest is complete
    return final, manifest, summary
