# Over 600 lines because each file format is declared here once, read in one place.
"""Each file format of the course, declared once: its fields, their JSON types and its per-file rules.

Every reader here is the one loop of ``course.lib.records.jsonl.iter_objects`` plus a
declaration (docs/formats.md has the same tables in prose):

  * dataset           ``read_dataset``, ``iter_dataset`` -> ``Example``; ``iter_dataset_objects``
  * frozen rollouts   ``iter_completions`` -> ``Completion``; ``iter_completion_objects``
  * selection pack    ``iter_samples`` -> ``SampleSet`` of ``Sample``
  * results.jsonl     ``iter_results`` -> dict; a whole run directory: ``read_run`` -> ``RunDir``
  * both side by side ``iter_aligned(dataset, completions)`` -> ``(example, record)`` pairs
    (course.eval's streaming path; ``NotAligned`` when the ids stop matching line by line)
  * what course.report reads of a run (summaries, the demos' and tinylm.rl's logs, the kl
    table, the manifest fields a view draws): ``read_checked_json``, ``read_log``,
    ``read_bandit_log``, ``read_kl_table``, with nested shapes (``course.lib.records.shapes``)
  * any other object lines (golden, kata, red team): ``course.lib.records.jsonl.iter_objects``

Per-file rules: ids are non-empty strings, unique within the file (``UniqueIds``:
an 8-byte digest per id, 16 to 32 bytes per id in all, is the only memory that
grows with the file); rollout and pack
files carry one policy and one sampling on every line, and at most one prompt template (an
optional ``prompt_template``, ``{"name", "sha256"}``: the same on every line or on none). Types are JSON's:
a boolean is never an integer (``expected_answer: true`` is refused), and the
"same sampling" rule compares numbers by value (1 and 1.0 are the same
temperature) but never a boolean with a number (``{"seed": 1}`` and
``{"seed": true}`` differ, although Python says ``1 == True``).
"""

from __future__ import annotations

import csv
import io
import math
import os
from array import array
from dataclasses import dataclass, field
from itertools import zip_longest
from pathlib import Path
from typing import Any, Callable, Iterator

from course.errors import CourseError
from course.lib.records.jsonl import (
    dumps_line,
    empty_file,
    input_lines,
    input_problem,
    iter_objects,
    json_kind,
    open_input,
    parse_line,
    read_input,
    read_json,
)
from course.lib.records.shapes import (
    BOOL,
    COUNT,
    NUMBER,
    PROBABILITY,
    TEXT,
    Shape,
    check,
    mapping,
    nullable,
    number_in,
    obj,
    value_excerpt,
)
from course.lib.records.shapes import (
    array as array_of,
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
            raise CourseError(f"{where}: field '{self.name}' {self.wrong}, got "
                              f"{json_kind(value)}{value_excerpt(value)}")
        raise CourseError(f"{where}: field '{self.name}' must not be empty")


def require(obj: dict[str, Any], fields: tuple[Field, ...], path: Any, lineno: int) -> None:
    """Check that ``obj`` holds every field with its type; ``CourseError`` ``path:line: ...`` for the first that
    does not.

    The common case is one pass of type tests; the message (and ``where``) is built only on failure.
    """
    for f in fields:
        value = obj.get(f.name, _MISSING)
        if type(value) not in f.types or (f.nonempty and not value):
            where = f"{path}:{lineno}"
            for g in fields:
                g.get(obj, where)


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
# Optional on rollout and pack lines: how the item was put to the policy (course.lib.policy.templates).
# Absent = the dataset prompt as it is; present = {"name": "fewshot", "sha256": "<of the template's text>"}.
PROMPT_TEMPLATE = "prompt_template"

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
    prompt_template: dict[str, Any] | None = None  # absent from the file: None (the dataset prompt as-is)


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
    prompt_template: dict[str, Any] | None = None  # absent from the file: None (the dataset prompt as-is)

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

    Sorted ids (the usual file) never reach the table: while each id is greater than the
    one before, no id can repeat. At the first id that is not, the earlier lines' ids are
    read again into the table (once), and every later id is checked against it as above.
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
        # While every id is greater than the one before (a sorted file: the course's datasets and
        # rollouts), none can repeat, and one comparison is the whole check: the table stays empty
        # until the first id that is not (measured: 0.3 µs of course.eval's ~13 per line).
        # "" is below every id; None: the table is in use.
        self._last: str | None = ""

    def add(self, ident: str, lineno: int) -> None:
        """Record ``ident`` (read on line ``lineno``); ``CourseError`` if an earlier line had it."""
        last = self._last
        if last is not None:
            if type(ident) is str and ident > last:
                self._last = ident
                return
            self._fill(lineno)
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

    def _fill(self, lineno: int) -> None:
        """The first id that did not increase: put the ids of the lines before ``lineno`` (all
        different: they increased) into the table, read again from the file, as ``_confirm`` reads it."""
        self._last = None
        table, mask = self._table, self._mask
        for first, record in iter_objects(self.path):
            if first >= lineno:
                break
            digest = hash(record.get("id")) or 1
            slot = digest & mask
            while table[slot]:
                slot = (slot + 1) & mask
            table[slot] = digest
            self._free -= 1
            if not self._free:
                self._grow()
                table, mask = self._table, self._mask

    def _confirm(self, ident: str, lineno: int) -> None:
        """Read the file again up to ``lineno``: raise if an earlier line holds ``ident`` itself."""
        for first, record in iter_objects(self.path):
            if first >= lineno:
                return  # a digest collision between two different ids: not a duplicate
            if record.get("id") == ident:
                raise CourseError(
                    f"{self.path}:{lineno}: duplicate id {ident!r} (first seen on line {first}); every id "
                    "must be unique"
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


def _check_template(value: Any, where: str) -> None:
    """A ``prompt_template`` value must be ``{"name": non-empty string, "sha256": string, ...}``."""
    if type(value) is not dict or type(value.get("name")) is not str or not value["name"] \
            or type(value.get("sha256")) is not str:
        raise CourseError(
            f"{where}: field '{PROMPT_TEMPLATE}' must be an object {{\"name\": ..., \"sha256\": ...}}, "
            f"got {json_kind(value)}{value_excerpt(value)}"
        )


class OnePolicy:
    """The per-file rule: every line carries the policy and sampling of line 1, and its prompt
    template (or, like line 1, none).

    Values compare as JSON values (``same_json``); the manifest records line 1's values.
    """

    def __init__(self) -> None:
        self.policy: str | None = None
        self.sampling: dict[str, Any] | None = None
        self.template: Any = _MISSING  # line 1's prompt_template (_MISSING: line 1 has none)
        # Keys of a flat line-1 sampling whose value Python's == could confuse with a
        # boolean (a bool, or a number equal to 0 or 1), with "was it a bool" for each.
        self._bool_risks: tuple[tuple[str, bool], ...] | None = None

    def check(self, obj: dict[str, Any], path: Any, lineno: int) -> None:
        policy, sampling = obj.get("policy"), obj.get("sampling")
        template = obj.get(PROMPT_TEMPLATE, _MISSING)
        if template is not self.template and self.policy is not None:  # `is`: the common case, no template
            self._same_template(template, path, lineno)
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
            if template is not _MISSING:
                _check_template(template, where)
            self.policy, self.sampling, self.template = policy, sampling, template
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

    def _same_template(self, template: Any, path: Any, lineno: int) -> None:
        """A later line must repeat line 1's prompt template (or, like line 1, have none)."""
        if template is not _MISSING and self.template is not _MISSING and same_json(template, self.template):
            return
        def named(value: Any) -> str:
            return "none" if value is _MISSING else dumps_line(value)
        raise CourseError(
            f"{path}:{lineno}: {PROMPT_TEMPLATE} differs from line 1 ({named(template)} vs {named(self.template)}); "
            "one file holds the rollouts of one prompt template"
        )

    @property
    def prompt_template(self) -> dict[str, Any] | None:
        """Line 1's prompt template (None: the file records none)."""
        return None if self.template is _MISSING else self.template


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
    for lineno, record in iter_dataset_objects(path):
        yield Example(record["id"], record["prompt"], record["expected_answer"], lineno)


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
    """Stream a frozen-rollouts file (``{"id", "completion", "policy", "sampling"}`` per line, optionally
    ``"prompt_template"``)."""
    for lineno, record in iter_completion_objects(path):
        yield Completion(record["id"], record["completion"], record["policy"], record["sampling"], lineno,
                         record.get(PROMPT_TEMPLATE))


class NotAligned(Exception):
    """``iter_aligned`` met a line pair whose ids differ, or one file ended before the other."""


def iter_aligned(
    dataset: str | os.PathLike[str], completions: str | os.PathLike[str], keep: Callable[[int], bool] | None = None
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

    ``keep(position)`` (0-based; a shard's ``holds``): a line pair it refuses is read but neither
    parsed, checked nor yielded; the part that keeps it does that. Line 1 is always parsed, checked
    and yielded: it is every part's reference for the one-policy rule, as in a whole run.
    """
    check_example = line_check(dataset, DATASET_FIELDS)
    check_record = line_check(completions, COMPLETION_FIELDS, one_policy=True, unique=False)
    with open_input(dataset) as d, open_input(completions) as c:
        lineno = 0
        # Dataset line i, then rollout line i: errors come in that order (a file that has
        # ended reads as None; an empty one is refused as its own reader refuses it).
        for raw_example, raw_record in zip_longest(input_lines(d), input_lines(c)):
            lineno += 1
            if keep is not None and lineno > 1 and raw_example is not None and raw_record is not None \
                    and not keep(lineno - 1):
                continue  # another part's line pair
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
    """Stream a selection pack (``{"id", "samples": [{"sample_index", "completion"}, ...], "policy", "sampling"}``,
    optionally ``"prompt_template"``).

    Samples must be numbered 0..n-1 in stored order (n >= 1): the stable sample
    id ``f"{id}#{sample_index}"`` and "the first N samples" both rely on it.
    Packs may hold different numbers of samples per item; a tool that needs N
    samples checks ``len(pack.samples) >= N`` itself.
    """
    settings = OnePolicy()
    ids = UniqueIds(path)
    for lineno, record in iter_objects(path):
        where = f"{path}:{lineno}"
        ident = ID.get(record, where)
        raw_samples = SAMPLES.get(record, where)
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
        settings.check(record, path, lineno)
        ids.add(ident, lineno)
        yield SampleSet(ident, tuple(samples), record["policy"], record["sampling"], lineno,
                        record.get(PROMPT_TEMPLATE))


# ===========================================================================
# Run directories (what course.eval and the other scoring tools write)
# ===========================================================================
def _result_check(path: Any) -> Check:
    fields = line_check(path, RESULT_FIELDS[:2], unique=False)  # id, reward; then finiteness, then details
    # Ids are unique per item: a multi-sample run (course.eval on a selection pack) writes one line
    # per sample, the item's id on each, so only its first sample's line (sample_index 0) counts.
    add_id = UniqueIds(path).add

    def check(obj: dict[str, Any], path: Any, lineno: int) -> None:
        fields(obj, path, lineno)
        index = obj.get("sample_index", 0)
        if type(index) is not int or index < 0:
            raise CourseError(f"{path}:{lineno}: field 'sample_index' must be a non-negative integer, got "
                              f"{json_kind(index)}{value_excerpt(index)}")
        if index == 0:
            add_id(obj["id"], lineno)
        reward = obj["reward"]
        # an integer of 400 digits is not a reward either (math.isfinite overflows on it)
        if not NUMBER.accepts(reward):
            where = f"{path}:{lineno}"
            raise CourseError(f"{where}: field 'reward' must be a finite number, got "
                              f"{json_kind(reward)}{value_excerpt(reward)}")
        details = obj.get("details")
        if type(details) is not dict or type(details.get("error_code")) is not str or not details["error_code"]:
            where = f"{path}:{lineno}"
            ERROR_CODE.get(DETAILS.get(obj, where), f"{where}: details")

    return check


def result_line_check(path: Any) -> Check:
    """The check of one ``results.jsonl`` line that ``iter_results`` applies (for a reader that keeps the raw bytes)."""
    return _result_check(path)


def iter_results(path: str | os.PathLike[str]) -> Iterator[dict[str, Any]]:
    """Stream a run's ``results.jsonl``: each line needs ``id``, a finite numeric
    ``reward`` and a ``details`` object with a string ``error_code``."""
    for _, record in iter_objects(path, _result_check(path)):
        yield record


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


# ===========================================================================
# Run files as course.report reads them: every value a view draws, declared
# ===========================================================================
# A view does arithmetic on these (shares, chart coordinates, a Fraction for the gate), so a
# hand-edited summary or log must be refused here, naming the value, and never reach it.
# Each shape lists what the report reads; other keys are allowed (a reader promises only that).
def _passed_within_n(s: dict[str, Any]) -> str | None:
    return f"'passed' ({s['passed']}) is more than 'n' ({s['n']})" if s["passed"] > s["n"] else None


def _counts_add_up(s: dict[str, Any]) -> str | None:
    problem = _passed_within_n(s)
    if problem is None and "breakdown" in s and sum(r["count"] for r in s["breakdown"]) != s["n"]:
        problem = (
            f"the counts of 'breakdown' add up to {sum(r['count'] for r in s['breakdown'])}, not to 'n' ({s['n']})"
        )
    if problem is None and "counts" in s and sum(s["counts"].values()) != s["n"]:
        problem = f"the values of 'counts' add up to {sum(s['counts'].values())}, not to 'n' ({s['n']})"
    return problem


PASS_COUNTS = obj({"n": COUNT, "passed": COUNT}, rule=_passed_within_n)
_SCORING = {"mean_reward": NUMBER,
            "breakdown": array_of(obj({"code": TEXT, "count": COUNT}, {"meaning": TEXT})),
            "counts": mapping(COUNT)}
EVAL_SUMMARY = obj({"n": COUNT, "passed": COUNT}, _SCORING, rule=_counts_add_up)
SELECTION_SUMMARY = obj({"n": COUNT, "passed": COUNT}, {
    **_SCORING,
    "pass_at_1": PASS_COUNTS,
    "best_of_n": PASS_COUNTS,
    "selection_gain": obj(optional={"pass_rate": NUMBER}),
    "pass_at_k_curve": obj(optional={
        "rows": array_of(obj({"k": NUMBER}, {k: NUMBER for k in ("pass_at_k", "pass_hat_k", "first_k", "plug_in")})),
        "estimators": mapping(),
    }),
    "still_failing": obj(optional={"share": nullable(NUMBER),
                                   "examples": array_of(obj(optional={"codes": array_of()}))}),
}, rule=_counts_add_up)

BANDIT_MANIFEST = obj(optional={"actions": array_of(min_items=1), "rewards": array_of(), "result": mapping()})
BANDIT_STEP = obj({"step": NUMBER, "reward": NUMBER, "expected_reward": NUMBER,
                   "probs": array_of(PROBABILITY, min_items=1)},
                  {"expected_reward_after": NUMBER})

TOY_MDP_MANIFEST = obj(optional={"rewards": array_of(array_of(NUMBER, min_items=2, max_items=2),
                                                     min_items=2, max_items=2),
                                 "result": mapping()})
_PAIR = array_of(PROBABILITY, min_items=2, max_items=2)
TOY_MDP_EPISODE = obj({"episode": NUMBER, "return": NUMBER, "expected_return": NUMBER, "pi1": _PAIR,
                       "pi2": array_of(_PAIR, min_items=2, max_items=2)}, {"expected_return_after": NUMBER})

KL_MANIFEST = obj(optional={"columns": mapping()})
KL_COLUMNS = ("beta", "kl", "expected_reward")  # and p_<i>, one per completion

_GATE_DELTA = number_in(-1.0, 1.0)  # a pass-rate difference, as course.gate's --min-delta
RL_MANIFEST = obj(optional={"settings": obj(optional={"gate_min_delta": _GATE_DELTA})})
_HOLDOUT_SIDE = obj(optional={"pass_at_1_ci95": array_of(min_items=2, max_items=2),
                              # (runs before the clustered interval)
                              "pass_at_1_wilson95": array_of(min_items=2, max_items=2)})
RL_SUMMARY = obj(optional={
    "goodhart_alarms": array_of(),
    "holdout": obj(optional={
        "pi0": _HOLDOUT_SIDE, "final": _HOLDOUT_SIDE,
        "lift_paired_bootstrap95": array_of(min_items=2, max_items=2),
        "gate": obj(optional={"min_delta": _GATE_DELTA, "require_significance": BOOL}),
    }),
})
RL_TRAINING = ("reward", "strict_pass_train", "kl_k1_per_token", "kl_k3_per_token", "entropy_per_token")


def _training_step_whole(record: dict[str, Any]) -> str | None:
    """A line of rl_log.jsonl is an evaluation (step 0), a training step, or both: a step has all its numbers."""
    present = [k for k in RL_TRAINING if k in record]
    if present and len(present) < len(RL_TRAINING):
        absent = next(k for k in RL_TRAINING if k not in record)
        return f"missing field '{absent}' (a finite number): a training step records {', '.join(RL_TRAINING)}"
    return None


RL_RECORD = obj({"step": NUMBER}, {
    **{k: NUMBER for k in RL_TRAINING},
    "strict_codes": mapping(NUMBER),
    "eval": obj({"step": NUMBER, "slice_strict_pass": NUMBER, "slice_rubric_reward": NUMBER}),
}, rule=_training_step_whole)


def read_checked_json(path: str | os.PathLike[str], shape: Shape, what: str = "JSON file") -> dict[str, Any]:
    """``read_json``, then the value checked against ``shape`` (errors name ``path`` and the field)."""
    value = read_json(path, what)
    check(value, shape, str(path))
    return value


def read_log(path: str | os.PathLike[str], shape: Shape) -> tuple[dict[str, Any], ...]:
    """Every line of a JSONL log, each checked against ``shape`` (errors name ``path:line`` and the field)."""
    return tuple(obj for _, obj in iter_objects(path, lambda o, p, n: check(o, shape, f"{p}:{n}")))


def read_bandit_log(path: str | os.PathLike[str], actions: int | None) -> tuple[dict[str, Any], ...]:
    """bandit_log.jsonl: every step has one probability per action (``actions`` from the manifest, or line 1's)."""
    width = actions

    def one_per_action(record: dict[str, Any], path: Any, lineno: int) -> None:
        nonlocal width
        check(record, BANDIT_STEP, f"{path}:{lineno}")
        if width is None:
            width = len(record["probs"])
        elif len(record["probs"]) != width:
            source = "manifest.json names" if actions is not None else "line 1 has"
            raise CourseError(f"{path}:{lineno}: field 'probs' holds {len(record['probs'])} probabilities, "
                              f"but {source} {width} actions (one probability per action)")

    return tuple(obj for _, obj in iter_objects(path, one_per_action))


def read_kl_table(path: str | os.PathLike[str]) -> tuple[dict[str, str], ...]:
    """kl_tradeoff.csv: a header naming distinct columns (beta, kl, expected_reward, p_<i> ...), then rows
    of as many cells, each a finite number. Rows come back as ``{column: text}``, as ``csv.DictReader`` gives."""
    data = read_input(path, "a CSV file")  # the one opener, capped
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise CourseError(f"{path}:{line}: bytes that are not valid UTF-8 (0x{data[exc.start]:02x}); save the "
                          "file as UTF-8") from None
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, None)
        if not header:
            raise CourseError(f"{path}:1: empty file; expected a header line ({', '.join(KL_COLUMNS)}, p_0, ...)")
        absent = [c for c in KL_COLUMNS if c not in header]
        if absent or len(set(header)) != len(header) or not all(header):
            raise CourseError(f"{path}:1: the header must name distinct columns including {', '.join(KL_COLUMNS)}; "
                              f"got {dumps_line(header)[:120]}")
        rows = []
        for cells in reader:
            where = f"{path}:{reader.line_num}"
            if len(cells) != len(header):
                raise CourseError(f"{where}: {len(cells)} cells, but the header names {len(header)} columns")
            for name, cell in zip(header, cells):
                try:
                    number = float(cell)
                except ValueError:
                    number = math.nan
                if not math.isfinite(number):
                    raise CourseError(f"{where}: column '{name}' must be a finite number, got {dumps_line(cell)[:40]}")
            rows.append(dict(zip(header, cells)))
    except csv.Error as exc:
        raise CourseError(f"{path}:{reader.line_num}: not a readable CSV line ({exc})") from None
    return tuple(rows)


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.records.formats"))
