"""Each file format of the course, declared once: its fields, their JSON types and its per-file rules.

Every reader here is the one loop of ``course.lib.jsonl.iter_objects`` plus a
declaration (docs/formats.md has the same tables in prose):

  * dataset           ``read_dataset``, ``iter_dataset`` -> ``Example``; ``iter_dataset_objects``
  * frozen rollouts   ``iter_completions`` -> ``Completion``; ``iter_completion_objects``
  * selection pack    ``iter_samples`` -> ``SampleSet`` of ``Sample``
  * results.jsonl     ``iter_results`` -> dict; a whole run directory: ``read_run`` -> ``RunDir``
  * both side by side ``iter_aligned(dataset, completions)`` -> ``(example, record)`` pairs
    (course.eval's streaming path; ``NotAligned`` when the ids stop matching line by line)
  * any other object lines (golden, kata, red team): ``course.lib.jsonl.iter_objects``

Per-file rules: ids are non-empty strings, unique within the file (``UniqueIds``:
an 8-byte digest per id, 16 to 32 bytes per id in all, is the only memory that
grows with the file); rollout and pack
files carry one policy and one sampling on every line. Types are JSON's:
a boolean is never an integer (``expected_answer: true`` is refused), and the
"same sampling" rule compares numbers by value (1 and 1.0 are the same
temperature) but never a boolean with a number (``{"seed": 1}`` and
``{"seed": true}`` differ, although Python says ``1 == True``).
"""

from __future__ import annotations

import json
import math
import os
from array import array
from itertools import zip_longest
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from course.errors import CourseError
from course.lib.jsonl import (
    dumps_line,
    empty_file,
    input_lines,
    input_problem,
    iter_objects,
    json_kind,
    open_input,
    parse_line,
    read_json,
)

_MISSING: Any = object()


# ===========================================================================
# Fields: a name, the JSON kinds it accepts, and the words of its error
# ===========================================================================
@dataclass(frozen=True)
class Field:
    """One required field of a JSON object: ``types`` are the exact Python types accepted
    (``bool`` is never accepted for ``int``: ``type(value) is int`` is the test)."""

    name: str
    types: tuple[type, ...]
    noun: str  # how the missing-field message names the kind, e.g. "a string"
    nonempty: bool = False
    wrong: str = ""  # the start of the wrong-type message, e.g. "must be a string"

    def get(self, obj: dict[str, Any], where: str) -> Any:
        """The field's value, or ``CourseError`` worded ``where: ...``."""
        value = obj.get(self.name, _MISSING)
        if type(value) in self.types and (not self.nonempty or value):
            return value
        if value is _MISSING:
            raise CourseError(f"{where}: missing field '{self.name}' ({self.noun})")
        if type(value) not in self.types:
            raise CourseError(f"{where}: field '{self.name}' {self.wrong}, got {json_kind(value)}{_short(value)}")
        raise CourseError(f"{where}: field '{self.name}' must not be empty")


def require(obj: dict[str, Any], fields: tuple[Field, ...], path: Any, lineno: int) -> None:
    """Check that ``obj`` holds every field with its type; ``CourseError`` ``path:line: ...`` for the first that does not.

    The common case is one pass of type tests; the message (and ``where``) is built only on failure.
    """
    for f in fields:
        value = obj.get(f.name, _MISSING)
        if type(value) not in f.types or (f.nonempty and not value):
            where = f"{path}:{lineno}"
            for g in fields:
                g.get(obj, where)


def _short(value: Any, limit: int = 40) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, (dict, list)) else ""
    return f" ({text[:limit]}{'...' if len(text) > limit else ''})" if text else ""


def _string(name: str, *, nonempty: bool = False) -> Field:
    return Field(name, (str,), "a string", nonempty, "must be a string")


ID = _string("id", nonempty=True)
PROMPT = _string("prompt")
EXPECTED_ANSWER = Field("expected_answer", (int,), "an integer", wrong="must be an integer")
COMPLETION = Field("completion", (str, type(None)), "a string", wrong="must be a string (or null)")
POLICY = _string("policy", nonempty=True)
SAMPLING = Field("sampling", (dict,), "an object", wrong="must be an object {...}")
SAMPLES = Field("samples", (list,), "an array of objects", wrong="must be an array")
SAMPLE_INDEX = Field("sample_index", (int,), "an integer", wrong="must be an integer")
REWARD = Field("reward", (int, float), "a number", wrong="must be a finite number")
DETAILS = Field("details", (dict,), "an object", wrong="must be an object {...}")
ERROR_CODE = _string("error_code", nonempty=True)

# The formats: which fields each line must hold (extra fields are allowed and ignored).
DATASET_FIELDS = (ID, PROMPT, EXPECTED_ANSWER)
COMPLETION_FIELDS = (ID, COMPLETION)  # + one policy and sampling per file
PACK_FIELDS = (ID, SAMPLES)  # + samples[] of (SAMPLE_INDEX, COMPLETION), + one policy and sampling per file
RESULT_FIELDS = (ID, REWARD, DETAILS)  # + details.error_code


# ===========================================================================
# Typed records
# ===========================================================================
@dataclass(frozen=True)
class Example:
    """One dataset item. ``line`` is where it was read (for error messages), not data."""

    id: str
    prompt: str
    expected_answer: int
    line: int = field(default=0, compare=False, repr=False)

    def as_dict(self) -> dict[str, Any]:
        """The mapping ``course.score.score`` expects."""
        return {"id": self.id, "prompt": self.prompt, "expected_answer": self.expected_answer}


@dataclass(frozen=True)
class Completion:
    """One frozen rollout line: the completion for one item, with its policy and sampling."""

    id: str
    completion: str | None
    policy: str
    sampling: dict[str, Any]
    line: int = field(default=0, compare=False, repr=False)


@dataclass(frozen=True)
class Sample:
    sample_index: int
    completion: str | None


@dataclass(frozen=True)
class SampleSet:
    """One selection-pack line: n samples for one item, in stored order (index 0..n-1)."""

    id: str
    samples: tuple[Sample, ...]
    policy: str
    sampling: dict[str, Any]
    line: int = field(default=0, compare=False, repr=False)

    def sample_id(self, sample_index: int) -> str:
        """The stable id of one sample, e.g. ``dev-0001#3``."""
        return f"{self.id}#{sample_index}"


# ===========================================================================
# Per-file rules
# ===========================================================================
class UniqueIds:
    """The per-file rule "every id differs", in 16 to 32 bytes per id (a set of the id strings took ~100).

    Each id is kept as its 64-bit digest, Python's ``hash(id)`` (the same digest a
    ``set`` of the ids would compute), in an open-addressing table (a textbook hash set:
    linear probing in a flat ``array('q')``, 8 bytes a slot, sized from the file's line
    count to be at most half full, doubled if it fills anyway). So memory per id is
    8 bytes / load factor: 16 to 32 bytes, whatever the ids' length; ~17 MB at a million ids.

    A digest is not the id: two different ids may share one (about three chances in
    10**8 for a million ids). A digest seen before is therefore only a suspect: the
    file is read again up to this line and the ids themselves are compared. A true
    repeat is reported naming both lines; a collision of two different ids is
    recognised and ignored. So the verdict is exact and never depends on the digests
    (which vary with PYTHONHASHSEED); they decide only when the rare re-read happens.
    """

    def __init__(self, path: Any) -> None:
        self.path = path
        # Sized from the file's line count (one fast pass of bytes.count) so that it need not
        # grow while the file is read: growing moves every digest, at Python speed (measured:
        # it doubled the cost per id).
        lines, size = _count_lines(path), 1024
        while size < 2 * lines:
            size *= 2
        self._table = array("q", bytes(8 * size))
        self._mask = size - 1
        self._free = size // 2  # inserts left before the table is half full

    def add(self, ident: str, lineno: int) -> None:
        """Record ``ident`` (read on line ``lineno``); ``CourseError`` if an earlier line had it."""
        digest = hash(ident) or 1  # 0 marks a free slot
        table, mask = self._table, self._mask
        slot = digest & mask
        held = table[slot]
        while held:  # linear probing: the next slot, until a free one
            if held == digest:
                self._confirm(ident, lineno)  # a repeat, or two ids with one digest
            slot = (slot + 1) & mask
            held = table[slot]
        table[slot] = digest
        self._free -= 1
        if not self._free:
            self._grow()

    def _confirm(self, ident: str, lineno: int) -> None:
        """Read the file again up to ``lineno``: raise if an earlier line holds ``ident`` itself."""
        for first, obj in iter_objects(self.path):
            if first >= lineno:
                return  # a digest collision between two different ids: not a duplicate
            if obj.get("id") == ident:
                raise CourseError(
                    f"{self.path}:{lineno}: duplicate id {ident!r} (first seen on line {first}); every id must be unique"
                )

    def _grow(self) -> None:
        """Double the table and put every digest back (amortised: about two moves per id)."""
        old = self._table
        size = 2 * len(old)
        table, mask = array("q", bytes(8 * size)), size - 1
        for digest in old:
            if digest:
                slot = digest & mask
                while table[slot]:
                    slot = (slot + 1) & mask
                table[slot] = digest
        self._table, self._mask, self._free = table, mask, size // 2 - len(old) // 2


def _count_lines(path: Any) -> int:
    """How many lines ``path`` holds, about (0 if it cannot be opened: the reader words that error)."""
    try:
        with open_input(path) as f:
            return sum(block.count(b"\n") for block in iter(lambda: f.read(1 << 20), b"")) + 1
    except CourseError:
        return 0


def same_json(a: Any, b: Any) -> bool:
    """Equal as JSON values: numbers by value (1 == 1.0), but a boolean only equals a boolean.

    Python's ``==`` says ``1 == True``; a sampling ``seed`` of ``true`` is not the seed 1.
    Iterative, so any depth the reader accepted is fine.

    >>> same_json({"seed": 1, "t": 1.0}, {"seed": 1, "t": 1}), same_json({"seed": 1}, {"seed": True})
    (True, False)
    """
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if (type(x) is bool) != (type(y) is bool):
            return False
        if type(x) is dict:
            if type(y) is not dict or x.keys() != y.keys():
                return False
            stack.extend((x[k], y[k]) for k in x)
        elif type(x) is list:
            if type(y) is not list or len(x) != len(y):
                return False
            stack.extend(zip(x, y))
        elif type(y) in (dict, list) or x != y:
            return False
    return True


def _check_finite(value: Any, where: str, name: str) -> None:
    """Reject Infinity smuggled in as 1e400 (the standard library reads it as inf)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if type(item) is float and not math.isfinite(item):
            raise CourseError(f"{where}: field '{name}' holds a number too large for a float")
        if type(item) is dict:
            stack.extend(item.values())
        elif type(item) is list:
            stack.extend(item)


class OnePolicy:
    """The per-file rule: every line carries the policy and sampling of line 1.

    Values compare as JSON values (``same_json``); the manifest records line 1's values.
    """

    def __init__(self) -> None:
        self.policy: str | None = None
        self.sampling: dict[str, Any] | None = None
        # Keys of a flat line-1 sampling whose value Python's == could confuse with a
        # boolean (a bool, or a number equal to 0 or 1), with "was it a bool" for each.
        self._bool_risks: tuple[tuple[str, bool], ...] | None = None

    def check(self, obj: dict[str, Any], path: Any, lineno: int) -> None:
        policy, sampling = obj.get("policy"), obj.get("sampling")
        if policy == self.policy and self.policy is not None and type(sampling) is dict and sampling == self.sampling:
            risks = self._bool_risks
            if risks is not None:
                for key, was_bool in risks:
                    if (type(sampling[key]) is bool) is not was_bool:
                        break
                else:
                    return  # the common case: equal to line 1, and no boolean where line 1 had a number
        where = f"{path}:{lineno}"
        policy = POLICY.get(obj, where)
        sampling = SAMPLING.get(obj, where)
        if self.policy is None:
            _check_finite(sampling, where, "sampling")
            self.policy, self.sampling = policy, sampling
            flat = not any(type(v) in (dict, list) for v in sampling.values())
            risky = ((k, type(v) is bool) for k, v in sampling.items() if type(v) is not str and v in (0, 1))
            self._bool_risks = tuple(risky) if flat else None
            return
        if policy != self.policy:
            raise CourseError(
                f"{where}: policy differs from line 1 ({policy!r} vs {self.policy!r}); "
                "one file holds the rollouts of one policy"
            )
        if same_json(sampling, self.sampling):
            return  # e.g. 1 vs 1.0
        raise CourseError(
            f"{where}: sampling differs from line 1 ({dumps_line(sampling)} vs {dumps_line(self.sampling)}); "
            "one file holds rollouts sampled with one setting"
        )


Check = Callable[[dict[str, Any], Any, int], None]


def line_check(path: Any, fields: tuple[Field, ...], *, one_policy: bool = False, unique: bool = True) -> Check:
    """The per-line check of one file of a format: its fields, then (optionally) one policy and
    sampling per file, then (optionally) unique ids. One function per line, no message built
    unless a rule is broken (this runs a million times in course.eval)."""
    spec = tuple((f.name, f.types, f.nonempty) for f in fields)
    same_settings = OnePolicy().check if one_policy else None
    add_id = UniqueIds(path).add if unique else None

    def check(obj: dict[str, Any], path: Any, lineno: int) -> None:
        for name, types, nonempty in spec:
            value = obj.get(name, _MISSING)
            if type(value) not in types or (nonempty and not value):
                require(obj, fields, path, lineno)  # words the error
        if same_settings is not None:
            same_settings(obj, path, lineno)
        if add_id is not None:
            add_id(obj["id"], lineno)

    return check


# ===========================================================================
# Datasets
# ===========================================================================
def dataset_fields(obj: dict[str, Any], where: str) -> tuple[str, str, int]:
    """Check one dataset object; return ``(id, prompt, expected_answer)``."""
    return ID.get(obj, where), PROMPT.get(obj, where), EXPECTED_ANSWER.get(obj, where)


def iter_dataset_objects(path: str | os.PathLike[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """Validated dataset lines as ``(line, object)``; ids unique."""
    return iter_objects(path, line_check(path, DATASET_FIELDS))


def iter_dataset(path: str | os.PathLike[str]) -> Iterator[Example]:
    """Stream a dataset file (``{"id", "prompt", "expected_answer"}`` per line)."""
    for lineno, obj in iter_dataset_objects(path):
        yield Example(obj["id"], obj["prompt"], obj["expected_answer"], lineno)


def read_dataset(path: str | os.PathLike[str]) -> list[Example]:
    """Read a whole dataset into memory (datasets are small: about 100 items)."""
    return list(iter_dataset(path))


# ===========================================================================
# Frozen rollouts (completions)
# ===========================================================================
def completion_fields(obj: dict[str, Any], where: str) -> tuple[str, str | None]:
    """Check the per-item fields of a rollout line; return ``(id, completion)``."""
    return ID.get(obj, where), COMPLETION.get(obj, where)


def iter_completion_objects(
    path: str | os.PathLike[str], *, unique: bool = True
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Validated rollout lines as ``(line, object)``.

    ``unique=False`` skips the duplicate-id check for a caller that proves
    uniqueness another way (``course.eval`` matches ids against a dataset whose
    ids are checked, or indexes them itself).
    """
    return iter_objects(path, line_check(path, COMPLETION_FIELDS, one_policy=True, unique=unique))


def iter_completions(path: str | os.PathLike[str]) -> Iterator[Completion]:
    """Stream a frozen-rollouts file (``{"id", "completion", "policy", "sampling"}`` per line)."""
    for lineno, obj in iter_completion_objects(path):
        yield Completion(obj["id"], obj["completion"], obj["policy"], obj["sampling"], lineno)


class NotAligned(Exception):
    """``iter_aligned`` met a line pair whose ids differ, or one file ended before the other."""


def iter_aligned(
    dataset: str | os.PathLike[str], completions: str | os.PathLike[str]
) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """A dataset and its rollouts read side by side: ``(example, record)`` per line pair.

    Each line goes through its file's reader (``parse_line`` and the format's
    ``line_check``: every check, every message, dataset ids unique); rollout
    line i must carry dataset line i's id. Where it does not, or one file is
    longer than the other, ``NotAligned`` is raised (not an input error: the
    caller matches ids another way, as ``course.eval``'s indexed mode does).
    Memory: one line of each file, plus the dataset's id digests.

    One loop over both files (not two ``iter_objects`` generators zipped): this is
    course.eval's hot path, and each generator layer costs every line a resume.
    """
    check_example = line_check(dataset, DATASET_FIELDS)
    check_record = line_check(completions, COMPLETION_FIELDS, one_policy=True, unique=False)
    with open_input(dataset) as d, open_input(completions) as c:
        lineno = 0
        # Dataset line i, then rollout line i: errors come in that order (a file that has
        # ended reads as None; an empty one is refused as its own reader refuses it).
        for raw_example, raw_record in zip_longest(input_lines(d), input_lines(c)):
            lineno += 1
            example = record = None
            if raw_example is not None:
                example = parse_line(raw_example, dataset, lineno)
                check_example(example, dataset, lineno)
            elif lineno == 1:
                raise empty_file(dataset)
            if raw_record is not None:
                record = parse_line(raw_record, completions, lineno)
                check_record(record, completions, lineno)
            elif lineno == 1:
                raise empty_file(completions)
            if example is None or record is None:
                raise NotAligned(f"{dataset} and {completions} have different numbers of lines")
            if record["id"] != example["id"]:
                raise NotAligned(f"line {lineno}: dataset id {example['id']!r}, completion id {record['id']!r}")
            yield example, record
    if lineno == 0:
        raise empty_file(dataset)


# ===========================================================================
# Selection packs
# ===========================================================================
def iter_samples(path: str | os.PathLike[str]) -> Iterator[SampleSet]:
    """Stream a selection pack (``{"id", "samples": [{"sample_index", "completion"}, ...], "policy", "sampling"}``).

    Samples must be numbered 0..n-1 in stored order (n >= 1): the stable sample
    id ``f"{id}#{sample_index}"`` and "the first N samples" both rely on it.
    Packs may hold different numbers of samples per item; a tool that needs N
    samples checks ``len(pack.samples) >= N`` itself.
    """
    settings = OnePolicy()
    ids = UniqueIds(path)
    for lineno, obj in iter_objects(path):
        where = f"{path}:{lineno}"
        ident = ID.get(obj, where)
        raw_samples = SAMPLES.get(obj, where)
        if not raw_samples:
            raise CourseError(f"{where}: field 'samples' is empty; an item needs at least one sample")
        samples = []
        for position, item in enumerate(raw_samples):
            at = f"{where}: samples[{position}]"
            if type(item) is not dict:
                raise CourseError(f"{at} must be an object, got {json_kind(item)}")
            index = SAMPLE_INDEX.get(item, at)
            if index != position:
                raise CourseError(f"{at} has sample_index {index}; samples must be numbered 0..n-1 in stored order")
            samples.append(Sample(index, COMPLETION.get(item, at)))
        settings.check(obj, path, lineno)
        ids.add(ident, lineno)
        yield SampleSet(ident, tuple(samples), obj["policy"], obj["sampling"], lineno)


# ===========================================================================
# Run directories (what course.eval and the other scoring tools write)
# ===========================================================================
def _result_check(path: Any) -> Check:
    fields = line_check(path, RESULT_FIELDS[:2])  # id, reward; then finiteness, then details

    def check(obj: dict[str, Any], path: Any, lineno: int) -> None:
        fields(obj, path, lineno)
        reward = obj["reward"]
        if not math.isfinite(reward):
            where = f"{path}:{lineno}"
            raise CourseError(f"{where}: field 'reward' must be a finite number, got {json_kind(reward)}{_short(reward)}")
        details = obj.get("details")
        if type(details) is not dict or type(details.get("error_code")) is not str or not details["error_code"]:
            where = f"{path}:{lineno}"
            ERROR_CODE.get(DETAILS.get(obj, where), f"{where}: details")

    return check


def iter_results(path: str | os.PathLike[str]) -> Iterator[dict[str, Any]]:
    """Stream a run's ``results.jsonl``: each line needs ``id``, a finite numeric
    ``reward`` and a ``details`` object with a string ``error_code``."""
    for _, obj in iter_objects(path, _result_check(path)):
        yield obj


@dataclass(frozen=True)
class RunDir:
    """A finished run directory as written by a scoring tool (course.eval, course.selection_demo)."""

    path: Path
    manifest: dict[str, Any]
    summary: dict[str, Any]

    @property
    def results_path(self) -> Path:
        return self.path / "results.jsonl"

    @property
    def tool(self) -> str:
        return str(self.manifest.get("tool", "an unknown tool"))


def read_run(path: str | os.PathLike[str]) -> RunDir:
    """Open a run directory: its manifest and summary must parse and results.jsonl must exist.

    ``CourseError`` names what is missing; a directory without manifest.json is
    not a finished run (tools write the manifest last, inside an atomic rename).
    """
    run = Path(path)
    if not run.exists():
        raise CourseError(f"{run}: no such run directory")
    if not run.is_dir():
        raise CourseError(f"{run}: not a directory (expected a run directory holding manifest.json)")
    if not (run / "manifest.json").exists():
        raise CourseError(f"{run}/manifest.json: no such file; {run} is not a finished run directory")
    manifest = read_json(run / "manifest.json", "manifest")
    summary = read_json(run / "summary.json", "summary")
    problem = input_problem(run / "results.jsonl")
    if problem == "no such file":
        raise CourseError(f"{run}/results.jsonl: no such file; the run directory is incomplete")
    if problem is not None:
        raise CourseError(f"{run}/results.jsonl: {problem}, expected a JSONL file")
    return RunDir(run, manifest, summary)


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.formats"))
