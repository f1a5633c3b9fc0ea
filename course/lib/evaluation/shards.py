"""Shards: one measurement cut into N parts that any engine may run, and the parts put back together.

Past one machine the work is cut, never the instrument. ``course.eval --shard K/N`` and
``course.llm.sample --shard K/N`` each do part K of N of a run and record the shard in their
manifest beside the same fingerprints a single-process run records; ``course.eval merge`` (and
``course.llm.sample merge``) check the parts and write the run a single process would have written,
byte for byte. What runs the parts (a shell loop, Ray, a batch queue) is not this module's business
(``course.integrations.ray`` is one such engine).

**Which items a shard holds** (the one rule, ``RULE``): the item at 0-based position ``p`` of the
dataset file belongs to shard ``(p // block) mod N``. Blocks of ``block`` consecutive items are dealt
round robin. Positions, not Python's ``hash()`` (salted per process by ``PYTHONHASHSEED``) and not a
digest of the ids: the dataset's sha256, which every manifest records, pins every position, so the
assignment is a deterministic function of the recorded dataset, and it needs nothing but a line
counter while the file streams. Scoring deals single items (``block`` 1). A sampler deals whole
batches (``block`` = its items per batch), so every batch a part computes holds exactly the items
the single process's batch held: float sums see the same shapes, and the merged rollouts are the
single process's bytes.

**What a merge refuses** (each a ``CourseError``, one line, exit 2 in the tools): a run that is not
a part, parts whose fingerprints or settings differ (``check_same_settings``; each merge names the keys it compares), a
shard missing or given twice, a part's results edited after the run, a dataset that is not the one
the parts recorded, and any id out of place: the merge walks the dataset in order and takes each
item's line from the part that owns its position, so every dataset id must appear exactly once,
in the part that owns it, and nothing else may appear. ``course.eval merge`` also scores every
part's line again against its dataset item (``course.lib.evaluation.rescoring``) and refuses a line
whose expected answer, reward or code is not what the dataset and the rubric give, and no merge
writes over a file of one of its parts (``course.ray_eval`` keeps its parts outside the run:
``check_parts_outside``).

    shard = parse_shard("1/4")                    # part 1 of 4 (K counts from 0)
    [p for p in range(10) if shard.holds(p)]      # [1, 5, 9]
    # course.eval merge: course.lib.evaluation.pipeline.merge_eval_runs (the pipeline writes a whole run, merged or not)
    run_dir, manifest, summary = merge_eval_runs(["runs/p0", "runs/p1", "runs/p2", "runs/p3"], outdir="runs/all")
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping, NamedTuple, Sequence

from course.errors import CourseError
from course.lib.bundled import PROJECT_ROOT
from course.lib.evaluation.locked_room import same_value, shown
from course.lib.records.formats import iter_dataset_objects
from course.lib.records.jsonl import input_lines, open_input, parse_line
from course.lib.records.manifest import environment, sha256_file
from course.lib.visible import visible

RULE = "position: the item at 0-based position p of the dataset file is in shard (p // block) mod count"
MAX_SHARDS = 100_000  # more parts than that is a typo, not a plan (each part is a run directory)
SHARD_FIELD = "shard"  # the manifest key of a part; a merged or single-process run has none


@dataclass(frozen=True)
class Shard:
    """Part ``index`` of ``count`` (``index`` counts from 0), dealing ``block`` consecutive items at a time."""

    index: int
    count: int
    block: int = 1

    def __post_init__(self) -> None:
        if not (1 <= self.count <= MAX_SHARDS and 0 <= self.index < self.count and self.block >= 1):
            raise CourseError(f"shard {self.index}/{self.count} (block {self.block}): need 0 <= K < N <= {MAX_SHARDS}")

    @property
    def label(self) -> str:
        """``"1/4"``: as ``--shard`` takes it."""
        return f"{self.index}/{self.count}"

    def holds(self, position: int) -> bool:
        """Whether the dataset item at 0-based ``position`` is in this shard.

        >>> [p for p in range(8) if Shard(1, 3).holds(p)], [p for p in range(8) if Shard(0, 2, block=2).holds(p)]
        ([1, 4, 7], [0, 1, 4, 5])
        """
        return shard_of(position, self.count, self.block) == self.index

    def record(self) -> dict[str, Any]:
        """What a part's manifest records under ``"shard"``."""
        return {"index": self.index, "count": self.count, "block": self.block, "rule": RULE}

    def with_block(self, block: int) -> "Shard":
        return Shard(self.index, self.count, block)


def shard_of(position: int, count: int, block: int = 1) -> int:
    """The shard that holds the item at 0-based ``position``: ``(position // block) % count``.

    >>> [shard_of(p, 3) for p in range(7)], [shard_of(p, 2, block=3) for p in range(7)]
    ([0, 1, 2, 0, 1, 2, 0], [0, 0, 0, 1, 1, 1, 0])
    """
    return (position // block) % count


def parse_shard(text: str) -> Shard:
    """``--shard K/N``: part K of N, K from 0 to N-1 (``course.cli.shard`` makes it an argparse type).

    >>> parse_shard("1/4")
    Shard(index=1, count=4, block=1)
    >>> parse_shard("4/4")
    Traceback (most recent call last):
    ...
    course.errors.CourseError: '4/4': K counts from 0, so it must be 0 to 3 (part K of N)
    """
    k, sep, n = text.partition("/")
    if not sep or not (k.isascii() and k.isdigit() and n.isascii() and n.isdigit()) or len(k) > 6 or len(n) > 6:
        raise CourseError(f"{_quoted(text)}: expected K/N, two whole numbers (part K of N, K from 0): 0/4, 1/4, ...")
    index, count = int(k), int(n)
    if not 1 <= count <= MAX_SHARDS:
        raise CourseError(f"{_quoted(text)}: N must be 1 to {MAX_SHARDS}")
    if index >= count:
        raise CourseError(f"{_quoted(text)}: K counts from 0, so it must be 0 to {count - 1} (part K of N)")
    return Shard(index, count)


def _quoted(text: str) -> str:
    return visible(repr(text if len(text) <= 40 else text[:37] + "..."))


def shard_from_record(value: Any, where: str) -> Shard:
    """The ``Shard`` a part's manifest records, or one line saying why that record is not one."""
    if not isinstance(value, dict) or any(type(value.get(k)) is not int for k in ("index", "count", "block")):
        raise CourseError(f"{where}: 'shard' is {shown(value, 60)}, not a shard record (index, count, block)")
    if value.get("rule") != RULE:
        raise CourseError(f"{where}: shard rule {shown(value.get('rule'), 80)} is not this version's ({RULE})")
    try:
        return Shard(value["index"], value["count"], value["block"])
    except CourseError as exc:
        raise CourseError(f"{where}: {exc}") from None


def check_parts_outside(outdir: str | os.PathLike[str] | None, parts_dir: str | os.PathLike[str] | None) -> None:
    """Refuse a ``--parts-dir`` that is ``--outdir`` or inside it (through any link), before any work.

    The parts are inputs of the merge that writes ``--outdir``: inside it they would make the merged
    run's folder exist before the merge (refused only after every part was scored), and a ``--force``
    replacing the merged run would replace its own inputs.
    """
    if outdir is None or parts_dir is None:
        return
    out, parts = os.path.realpath(outdir), os.path.realpath(parts_dir)
    if parts == out or parts.startswith(out.rstrip(os.sep) + os.sep):
        raise CourseError(
            f"--parts-dir {visible(str(parts_dir))} is inside --outdir {visible(str(outdir))}: the parts are the "
            "merge's inputs and cannot live in the run it writes; choose a --parts-dir outside --outdir"
        )


# ===========================================================================
# Checking a set of parts (shared by both merges)
# ===========================================================================
def check_same_settings(parts: Sequence[tuple[str, Mapping[str, Any]]], keys: Sequence[str]) -> None:
    """Every part's manifest has the first part's value for each of ``keys`` (absent counts as a value)."""
    (first_name, first), rest = parts[0], parts[1:]
    for name, manifest in rest:
        for key in keys:
            a, b = first.get(key, _ABSENT), manifest.get(key, _ABSENT)
            if (a is _ABSENT) != (b is _ABSENT) or (a is not _ABSENT and not same_value(a, b)):
                raise CourseError(
                    f"{name}: {key} differs from {first_name}'s ({_said(b)} vs {_said(a)}); the parts of one run "
                    "share every fingerprint and setting"
                )


_ABSENT = object()


def _said(value: Any) -> str:
    return "absent" if value is _ABSENT else shown(value, 80)


def check_complete(parts: Sequence[tuple[str, Shard]]) -> int:
    """The parts are shards 0..N-1 of one N with one block, each exactly once; returns N."""
    first_name, first = parts[0]
    seen: dict[int, str] = {}
    for name, shard in parts:
        if (shard.count, shard.block) != (first.count, first.block):
            raise CourseError(
                f"{name}: is shard {shard.label} (block {shard.block}), but {first_name} is shard {first.label} "
                f"(block {first.block}); the parts of one run are cut the same way"
            )
        if shard.index in seen:
            raise CourseError(f"{name}: shard {shard.label} is given twice (also {seen[shard.index]})")
        seen[shard.index] = name
    absent = [k for k in range(first.count) if k not in seen]
    if absent:
        missing = ", ".join(f"{k}/{first.count}" for k in absent[:5]) + (" ..." if len(absent) > 5 else "")
        raise CourseError(f"shard {missing} missing: a merge needs all {first.count} parts ({len(parts)} given)")
    return first.count


def recorded_dataset(recorded: Mapping[str, Any], override: str | os.PathLike[str] | None, where: str) -> Path:
    """The dataset file the parts were made from: ``override`` or the recorded path (relative to the
    project root when it lies inside it), refused unless its sha256 is the recorded one."""
    if override is not None:
        path = Path(override)
    else:
        name = str(recorded.get("path"))
        path = Path(name) if Path(name).is_absolute() else PROJECT_ROOT / name
        if not path.exists():
            raise CourseError(f"{where}: its dataset {visible(name)} is not found here; pass --dataset PATH")
    digest = sha256_file(path)
    if digest != recorded.get("sha256"):
        raise CourseError(
            f"{path}: sha256 {digest[:12]}… is not the dataset the parts measured "
            f"({shown(recorded.get('sha256'))[:12]}…)"
        )
    return path


class PartLine(NamedTuple):
    """One line of a part, as ``interleave`` yields it: its bytes, the parsed object, the dataset item whose
    position it holds, and where it is (the part's file and line number)."""

    raw: bytes
    record: dict[str, Any]
    item: dict[str, Any]
    path: Path
    lineno: int


class _PartLines:
    """One part's lines in order: raw bytes and parsed object, each line checked by ``checker(path)``."""

    def __init__(self, path: Path, checker: Any) -> None:
        self.path, self.lineno = path, 0
        self.check = None if checker is None else checker(path)
        self._file = open_input(path)
        self._lines: Iterator[bytes] = input_lines(self._file)

    def next(self) -> tuple[bytes, dict[str, Any]] | None:
        raw = next(self._lines, None)
        if raw is None:
            return None
        self.lineno += 1
        obj = parse_line(raw, self.path, self.lineno)
        if self.check is not None:
            self.check(obj, self.path, self.lineno)
        return raw, obj

    def close(self) -> None:
        self._file.close()


def interleave(
    dataset: Path, parts: Sequence[Path], count: int, block: int, *, limit: int | None = None, checker: Any = None
) -> Iterator[PartLine]:
    """Each dataset item's line, in dataset order, taken from the part that owns its position
    (the first ``limit`` items only, when given); ``checker(path)`` makes the check of a part's lines.

    Every dataset id must be the next line of its part, and every part must end with its last item:
    so each id appears exactly once, in its own part, and the parts hold nothing else.
    """
    readers = [_PartLines(p, checker) for p in parts]
    try:
        for position, (lineno, example) in enumerate(iter_dataset_objects(dataset)):
            if limit is not None and position >= limit:
                break
            part = readers[shard_of(position, count, block)]
            got = part.next()
            if got is None:
                raise CourseError(
                    f"{part.path}: ends before dataset item {example['id']!r} ({dataset}:{lineno}), which "
                    "its shard holds"
                )
            if got[1].get("id") != example["id"]:
                raise CourseError(
                    f"{part.path}:{part.lineno}: id {shown(got[1].get('id'), 60)} where its shard's next "
                    "dataset item is "
                    f"{example['id']!r} ({dataset}:{lineno}); each id must appear once, in the part that owns it"
                )
            yield PartLine(got[0], got[1], example, part.path, part.lineno)
        for part in readers:
            extra = part.next()
            if extra is not None:
                raise CourseError(
                    f"{part.path}:{part.lineno}: id {shown(extra[1].get('id'), 60)} is not an item its shard holds "
                    "(a duplicate, or not in the dataset)"
                )
    finally:
        for part in readers:
            part.close()


# ===========================================================================
# Sampled parts (course.llm.sample --shard K/N): rollout files -> the file one process would have written
# ===========================================================================
# What differs from part to part by nature: provenance, the part's own output and timing, its shard.
ROLLOUT_PART_OWN = frozenset({
    "written_by", "command", "created_utc", "git_commit", "git_dirty", "python", "platform",
    "output", "derived_from", "truncated", "timing", SHARD_FIELD,
})


def merge_rollout_parts(
    parts: Sequence[tuple[str | os.PathLike[str], Mapping[str, Any]]],
    *,
    tool: str,
    dataset: str | os.PathLike[str] | None = None,
    argv: Sequence[str] | None = None,
) -> tuple[bytes, dict[str, Any]]:
    """Rollout parts (each a file and its manifest) checked and joined in dataset order: the merged file's
    bytes and its manifest (without ``output``: the caller writes the file, then fingerprints it).

    Every manifest key but ``ROLLOUT_PART_OWN`` must agree (model, policy, adapters, template, sampling,
    samples per item, threads, rows per batch, dataset, limit, ...): with the batches cut on block
    boundaries, the joined bytes are what one process sampling the whole dataset writes.
    """
    if not parts:
        raise CourseError(f"merge needs the part files (python -m {tool} merge PARTS... --out FILE)")
    named = []
    for path, manifest in parts:
        where = f"{visible(str(path))}'s manifest"
        if manifest.get("tool") != tool:
            raise CourseError(f"{where}: written by {shown(manifest.get('tool'), 60)}; this merge takes {tool} parts")
        if SHARD_FIELD not in manifest:
            raise CourseError(f"{where}: not a part (no shard in it); parts are written by {tool} --shard K/N")
        output = manifest.get("output")
        if not isinstance(output, dict) or sha256_file(path) != output.get("sha256"):
            raise CourseError(f"{visible(str(path))}: does not match the sha256 its manifest records; it was changed "
                              "after sampling (sample that part again)")
        named.append((visible(str(path)), manifest, shard_from_record(manifest[SHARD_FIELD], where)))
    keys = sorted({k for _, m, _ in named for k in m} - ROLLOUT_PART_OWN)
    check_same_settings([(name, m) for name, m, _ in named], keys)
    count = check_complete([(name, shard) for name, _, shard in named])
    ordered = sorted(zip(parts, named), key=lambda pair: pair[1][2].index)
    first = ordered[0][1][1]
    source = recorded_dataset(first["dataset"], dataset, f"{ordered[0][1][0]}'s manifest")
    limit = first.get("limit")
    lines = interleave(source, [Path(p) for (p, _), _ in ordered], count, ordered[0][1][2].block,
                       limit=limit if type(limit) is int else None)
    data = b"".join(line.raw if line.raw.endswith(b"\n") else line.raw + b"\n" for line in lines)
    manifest = {**first, **environment(tool, argv)}
    del manifest[SHARD_FIELD]
    manifest.pop("timing", None)
    manifest["truncated"] = sum(m.get("truncated", 0) for _, (_, m, _) in ordered)
    if "derived_from" in manifest:
        manifest["derived_from"] = None  # each part's came from its own part pack; the merged pack is merged separately
    manifest["merged_from"] = [{"output": m.get("output"), "shard": shard.label, "timing": m.get("timing")}
                               for _, (_, m, shard) in ordered]
    return data, manifest


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.evaluation.shards"))
