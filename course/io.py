"""Reading and writing the course's files: one place for every JSON and JSONL byte.

Every tool reads its inputs through this module, so every tool rejects the same
bad files with the same message, ``path:line: what is wrong`` (a ``CourseError``;
the CLIs turn it into exit code 2 before anything is written).

Readers (all streaming unless the name says ``read``; memory does not grow with
the number of lines, except 8 bytes per id for the duplicate check):

  * ``read_dataset(path) -> list[Example]``       a dataset, small, in memory
  * ``iter_dataset(path) -> Iterator[Example]``   the same, streamed
  * ``iter_completions(path) -> Iterator[Completion]``  frozen rollouts
  * ``iter_samples(path) -> Iterator[SampleSet]``       selection packs
  * ``iter_results(path) -> Iterator[dict]``            a run's results.jsonl
  * ``read_json(path, what)``                           a run's manifest.json / summary.json

The JSONL rules (documented in docs/formats.md) and why:
  * one JSON object per line, UTF-8, ``\\n`` line ends; the last line may lack its ``\\n``;
  * a UTF-8 byte-order mark is REJECTED: it would silently become part of the
    first line and change the file's sha256 while looking identical;
  * CRLF line ends are REJECTED for the same reason (the bundled files are LF);
  * blank lines are REJECTED: they are the trace of a hand edit, and skipping
    them would make line numbers in error messages disagree with the editor's;
  * bytes that are not UTF-8, invalid JSON, NaN/Infinity, strings holding a lone
    surrogate escape, a line that is not an object, a missing field, a field of
    the wrong type (``true`` is not an integer) and a duplicate id are rejected;
  * unknown extra fields are allowed and ignored (room for tools to add notes).

Parsing uses ``orjson`` when it is installed (``pip install -e '.[fast]'``) and the
standard library otherwise. orjson is only a fast path: whenever it refuses a
line, or returns something the checks below reject, the line is parsed again with
the standard library and that verdict stands, so accepted files, error messages
and every byte written are the same with or without it. Writers always use the
standard library.

Writers are canonical so that equal data gives equal bytes (the determinism rule):
keys sorted, UTF-8 without escaping, ``\\n`` line ends, floats as Python's repr.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Callable, Iterable, Iterator, TypeVar

from course.errors import CourseError

try:  # optional fast parser; see the module docstring for why outputs do not change
    import orjson as _orjson
except ImportError:  # pragma: no cover - depends on the environment
    _orjson = None


# ===========================================================================
# Writers (canonical bytes)
# ===========================================================================
def dumps_line(record: Any) -> str:
    """One canonical JSON line (no trailing newline)."""
    return json.dumps(record, ensure_ascii=False, sort_keys=True, separators=(", ", ": "))


def dumps_pretty(obj: Any) -> str:
    """Pretty, canonical JSON text with a final newline (what ``write_json`` writes)."""
    return json.dumps(obj, ensure_ascii=False, sort_keys=True, indent=2) + "\n"


def write_json(path: str | os.PathLike[str], obj: Any) -> None:
    """Pretty, canonical JSON with a final newline."""
    Path(path).write_text(dumps_pretty(obj), encoding="utf-8")


def write_jsonl(path: str | os.PathLike[str], records: Iterable[Any]) -> int:
    """Write records one per line; return how many were written."""
    n = 0
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for record in records:
            f.write(dumps_line(record))
            f.write("\n")
            n += 1
    return n


def write_text_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write a text file so that readers see the old file or the new one, never half of one."""
    target = Path(path)
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_json_atomic(path: str | os.PathLike[str], obj: Any) -> None:
    """``write_json``, atomically."""
    write_text_atomic(path, dumps_pretty(obj))


class JsonlWriter:
    """Stream canonical JSONL lines to a file while hashing the bytes written.

    ``sha256`` is the hex digest of exactly the file's bytes, so a manifest can
    record it without reading the file again. Lines are buffered and written in
    blocks, which keeps the per-line cost at one ``dumps_line``.

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "x.jsonl")
    >>> with JsonlWriter(path) as w:
    ...     w.write({"id": "a", "n": 1})
    >>> open(path, encoding="utf-8").read(), w.count
    ('{"id": "a", "n": 1}\\n', 1)
    """

    _BLOCK = 2048

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._file: IO[bytes] = open(self.path, "wb")
        self._hash = hashlib.sha256()
        self._buffer: list[str] = []
        self.count = 0

    def write(self, record: Any) -> None:
        self.write_line(dumps_line(record))

    def write_line(self, line: str) -> None:
        """Append one already-canonical line (without its newline)."""
        self._buffer.append(line)
        self.count += 1
        if len(self._buffer) >= self._BLOCK:
            self._flush()

    def _flush(self) -> None:
        if self._buffer:
            self._buffer.append("")  # so the join ends with a newline
            data = "\n".join(self._buffer).encode("utf-8")
            self._hash.update(data)
            self._file.write(data)
            self._buffer.clear()

    @property
    def sha256(self) -> str:
        self._flush()
        return self._hash.hexdigest()

    def close(self) -> None:
        if not self._file.closed:
            self._flush()
            self._file.close()

    def __enter__(self) -> "JsonlWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ===========================================================================
# The one JSONL reader: bytes -> validated JSON objects, line by line
# ===========================================================================
_BOM = b"\xef\xbb\xbf"
_LONG_DIGITS = re.compile(rb"[0-9]{19}")
# A \uD800-\uDFFF escape: the only way a JSON text can smuggle in a lone surrogate.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abAB]")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


_STD_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


def _open_binary(path: str | os.PathLike[str]) -> IO[bytes]:
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise CourseError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise CourseError(f"{path}: is a directory, expected a JSONL file") from None
    except OSError as exc:
        raise CourseError(f"{path}: cannot read ({exc.strerror})") from None


def _has_lone_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False
    if isinstance(value, dict):
        return any(_has_lone_surrogate(k) or _has_lone_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_lone_surrogate(v) for v in value)
    return False


def _parse_std(raw: bytes, path: Any, lineno: int) -> Any:
    """The authoritative parse of one line (standard library), with the error messages."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CourseError(
            f"{path}:{lineno}: bytes that are not valid UTF-8 (0x{raw[exc.start]:02x} at byte "
            f"{exc.start + 1} of the line); save the file as UTF-8"
        ) from None
    if not text.strip():
        raise CourseError(
            f"{path}:{lineno}: blank line; every line must hold one JSON object (delete the line)"
        )
    try:
        value = _STD_DECODER.decode(text)
    except json.JSONDecodeError as exc:
        raise CourseError(f"{path}:{lineno}: invalid JSON: {exc.msg} (column {exc.colno})") from None
    except ValueError as exc:  # NaN/Infinity, or an integer beyond Python's digit limit
        raise CourseError(f"{path}:{lineno}: invalid JSON: {exc}") from None
    except RecursionError:
        raise CourseError(f"{path}:{lineno}: invalid JSON: nested too deeply") from None
    if "\\u" in text and _SURROGATE_ESCAPE.search(text) and _has_lone_surrogate(value):
        raise CourseError(
            f"{path}:{lineno}: a string holds a lone surrogate escape (\\ud800-\\udfff), which is not Unicode text"
        )
    return value


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number with a fraction or exponent"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__  # pragma: no cover - JSON has no other kinds


def _iter_parsed(path: str | os.PathLike[str]) -> Iterator[tuple[int, dict[str, Any], bytes | None]]:
    """Yield ``(line_number, object, raw)`` after the file-level checks.

    ``raw`` is the line's bytes when orjson parsed it (so a caller can ask the
    standard library for the authoritative verdict) and None when the standard
    library did. Line 1 always goes through the standard library: rollout files
    record line 1's policy and sampling in manifests, so its values must not
    depend on which parser is installed.
    """
    fast = _orjson.loads if _orjson is not None else None
    with _open_binary(path) as f:
        lineno = 0
        for raw in f:
            lineno += 1
            if lineno == 1 and raw.startswith(_BOM):
                raise CourseError(
                    f"{path}:1: the file starts with a UTF-8 byte-order mark (bytes EF BB BF), which would "
                    "silently become part of the first line; save it as UTF-8 without BOM "
                    "(e.g. sed -i '1s/^\\xEF\\xBB\\xBF//' FILE)"
                )
            if raw.endswith(b"\r\n") or raw.endswith(b"\r"):
                raise CourseError(
                    f"{path}:{lineno}: Windows line end (CRLF); the course's JSONL files use LF only, and "
                    "a stray CR changes the file's sha256 while looking identical "
                    "(convert with: sed -i 's/\\r$//' FILE, or dos2unix)"
                )
            if fast is not None and lineno > 1:
                try:
                    value = fast(raw)
                except ValueError:  # orjson.JSONDecodeError subclasses ValueError
                    value = None
                if type(value) is dict:
                    yield lineno, value, raw
                    continue
            yield lineno, _parse_object(raw, path, lineno), None
        if lineno == 0:
            raise CourseError(f"{path}:1: empty file; expected one JSON object per line")


def _parse_object(raw: bytes, path: Any, lineno: int) -> dict[str, Any]:
    value = _parse_std(raw, path, lineno)
    if type(value) is not dict:
        raise CourseError(f"{path}:{lineno}: expected a JSON object {{...}} on every line, got {_json_kind(value)}")
    return value


def _contains_float(value: Any) -> bool:
    if type(value) is float:
        return True
    if type(value) is dict:
        return any(_contains_float(v) for v in value.values())
    if type(value) is list:
        return any(_contains_float(v) for v in value)
    return False


def iter_objects(path: str | os.PathLike[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for every line of a JSONL file, checking the
    file-level rules (encoding, BOM, CRLF, blank lines, JSON, one object per line,
    not empty). Field checks are the typed readers' job.

    Reads bytes one line at a time: memory is one line, whatever the file size.
    Values are exactly the standard library's (orjson reads integers beyond 64
    bits as floats, so an orjson result holding any float is parsed again).
    """
    for lineno, obj, raw in _iter_parsed(path):
        if raw is not None and _contains_float(obj):
            obj = _parse_object(raw, path, lineno)
        yield lineno, obj


T = TypeVar("T")


def _iter_checked(
    path: str | os.PathLike[str], check: Callable[[dict[str, Any], str, int], T]
) -> Iterator[tuple[int, dict[str, Any], T]]:
    """Objects that pass ``check(obj, where, lineno)``; yields what ``check`` returns too.

    A line orjson parsed that fails the check is parsed again by the standard
    library and checked again, and that verdict stands: orjson reads integers
    beyond 64 bits as floats, which a check may reject (``expected_answer``) or
    see as a different value (a sampling ``seed``).
    """
    for lineno, obj, raw in _iter_parsed(path):
        where = f"{path}:{lineno}"
        try:
            checked = check(obj, where, lineno)
        except CourseError:
            if raw is None:
                raise
            obj = _parse_object(raw, path, lineno)
            checked = check(obj, where, lineno)
        yield lineno, obj, checked


_MISSING: Any = object()


# ---------------------------------------------------------------------------
# Field checks, shared by the typed readers.
# ---------------------------------------------------------------------------
def _short(value: Any, limit: int = 40) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, (dict, list)) else ""
    return f" ({text[:limit]}{'...' if len(text) > limit else ''})" if text else ""


def _need_str(obj: dict[str, Any], name: str, where: str, *, nonempty: bool = False) -> str:
    value = obj.get(name, _MISSING)
    if value is _MISSING:
        raise CourseError(f"{where}: missing field '{name}' (a string)")
    if type(value) is not str:
        raise CourseError(f"{where}: field '{name}' must be a string, got {_json_kind(value)}{_short(value)}")
    if nonempty and not value:
        raise CourseError(f"{where}: field '{name}' must not be empty")
    return value


def _need_int(obj: dict[str, Any], name: str, where: str) -> int:
    value = obj.get(name, _MISSING)
    if value is _MISSING:
        raise CourseError(f"{where}: missing field '{name}' (an integer)")
    if type(value) is not int:  # bool is an int subclass in Python; not in this format
        raise CourseError(f"{where}: field '{name}' must be an integer, got {_json_kind(value)}{_short(value)}")
    return value


def _need_object(obj: dict[str, Any], name: str, where: str) -> dict[str, Any]:
    value = obj.get(name, _MISSING)
    if value is _MISSING:
        raise CourseError(f"{where}: missing field '{name}' (an object)")
    if type(value) is not dict:
        raise CourseError(f"{where}: field '{name}' must be an object {{...}}, got {_json_kind(value)}{_short(value)}")
    return value


def _need_text_or_null(obj: dict[str, Any], name: str, where: str) -> str | None:
    value = obj.get(name, _MISSING)
    if value is _MISSING:
        raise CourseError(f"{where}: missing field '{name}' (a string)")
    if value is not None and type(value) is not str:
        raise CourseError(f"{where}: field '{name}' must be a string (or null), got {_json_kind(value)}{_short(value)}")
    return value


def _check_finite(value: Any, where: str, name: str) -> None:
    """Reject Infinity smuggled in as 1e400 (the standard library reads it as inf)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise CourseError(f"{where}: field '{name}' holds a number too large for a float")
    if isinstance(value, dict):
        for v in value.values():
            _check_finite(v, where, name)
    elif isinstance(value, list):
        for v in value:
            _check_finite(v, where, name)


class _UniqueIds:
    """Duplicate-id detection in 8 bytes per id, so a million-line file stays cheap.

    Each id is stored as a 64-bit BLAKE2b digest, spread over 256 buckets; at the
    end of the file each bucket is checked for repeats. A repeated digest is
    confirmed by re-reading the file (a digest collision between two different
    ids, about 1 in 10^8 for a million ids, is then recognised and ignored).
    """

    def __init__(self) -> None:
        self._buckets = [array("Q") for _ in range(256)]

    def add(self, ident: str) -> None:
        d = int.from_bytes(hashlib.blake2b(ident.encode("utf-8"), digest_size=8).digest(), "little")
        self._buckets[d & 0xFF].append(d)

    def repeated(self) -> set[int]:
        out: set[int] = set()
        for bucket in self._buckets:
            if len(set(bucket)) != len(bucket):
                seen: set[int] = set()
                for d in bucket:
                    if d in seen:
                        out.add(d)
                    seen.add(d)
        return out


def _digest(ident: str) -> int:
    return int.from_bytes(hashlib.blake2b(ident.encode("utf-8"), digest_size=8).digest(), "little")


def _raise_if_duplicates(path: Any, ids: _UniqueIds) -> None:
    suspects = ids.repeated()
    if not suspects:
        return
    first_line: dict[str, int] = {}
    for lineno, obj in iter_objects(path):
        ident = obj.get("id")
        if type(ident) is str and _digest(ident) in suspects:
            if ident in first_line:
                raise CourseError(
                    f"{path}:{lineno}: duplicate id {ident!r} (first seen on line {first_line[ident]}); "
                    "every id must be unique"
                )
            first_line[ident] = lineno


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


# ---------------------------------------------------------------------------
# Datasets
# ---------------------------------------------------------------------------
def dataset_fields(obj: dict[str, Any], where: str, lineno: int = 0) -> tuple[str, str, int]:
    """Check one dataset object; return ``(id, prompt, expected_answer)``."""
    ident, prompt, expected = obj.get("id"), obj.get("prompt"), obj.get("expected_answer")
    if type(ident) is str and ident and type(prompt) is str and type(expected) is int:
        return ident, prompt, expected  # the common case: one combined check
    return (
        _need_str(obj, "id", where, nonempty=True),
        _need_str(obj, "prompt", where),
        _need_int(obj, "expected_answer", where),
    )


def iter_dataset_objects(path: str | os.PathLike[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """Validated dataset lines as ``(line, object)``; ids unique (checked when the file ends)."""
    ids = _UniqueIds()
    for lineno, obj, (ident, _, _) in _iter_checked(path, dataset_fields):
        ids.add(ident)
        yield lineno, obj
    _raise_if_duplicates(path, ids)


def iter_dataset(path: str | os.PathLike[str]) -> Iterator[Example]:
    """Stream a dataset file (``{"id", "prompt", "expected_answer"}`` per line)."""
    for lineno, obj in iter_dataset_objects(path):
        yield Example(obj["id"], obj["prompt"], obj["expected_answer"], lineno)


def read_dataset(path: str | os.PathLike[str]) -> list[Example]:
    """Read a whole dataset into memory (datasets are small: about 100 items)."""
    return list(iter_dataset(path))


# ---------------------------------------------------------------------------
# Frozen rollouts (completions)
# ---------------------------------------------------------------------------
class _SameSettings:
    """The per-file rule: every line carries the policy and sampling of line 1.

    Values compare as JSON values (numbers by value, so 1 and 1.0 are the same
    temperature); the manifest records line 1's values.
    """

    def __init__(self) -> None:
        self.policy: str | None = None
        self.sampling: dict[str, Any] | None = None

    def check(self, obj: dict[str, Any], where: str) -> None:
        policy, sampling = obj.get("policy"), obj.get("sampling")
        if self.policy is None:
            policy = _need_str(obj, "policy", where, nonempty=True)
            sampling = _need_object(obj, "sampling", where)
            _check_finite(sampling, where, "sampling")
            self.policy, self.sampling = policy, sampling
            return
        if policy == self.policy and type(policy) is str and sampling == self.sampling and type(sampling) is dict:
            return
        _need_str(obj, "policy", where, nonempty=True)
        _need_object(obj, "sampling", where)
        if policy != self.policy:
            raise CourseError(
                f"{where}: policy differs from line 1 ({policy!r} vs {self.policy!r}); "
                "one file holds the rollouts of one policy"
            )
        raise CourseError(
            f"{where}: sampling differs from line 1 ({dumps_line(sampling)} vs {dumps_line(self.sampling)}); "
            "one file holds rollouts sampled with one setting"
        )


def completion_fields(obj: dict[str, Any], where: str) -> tuple[str, str | None]:
    """Check the per-item fields of a rollout line; return ``(id, completion)``."""
    ident, text = obj.get("id"), obj.get("completion", _MISSING)
    if type(ident) is str and ident and (type(text) is str or text is None):
        return ident, text
    return _need_str(obj, "id", where, nonempty=True), _need_text_or_null(obj, "completion", where)


def iter_completion_objects(
    path: str | os.PathLike[str], *, unique: bool = True
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Validated rollout lines as ``(line, object)``.

    ``unique=False`` skips the duplicate-id check for a caller that proves
    uniqueness another way (``course.eval`` matches ids line by line against a
    dataset whose ids are checked).
    """
    settings = _SameSettings()

    def check(obj: dict[str, Any], where: str, lineno: int) -> str:
        ident, _ = completion_fields(obj, where)
        settings.check(obj, where)
        return ident

    ids = _UniqueIds() if unique else None
    for lineno, obj, ident in _iter_checked(path, check):
        if ids is not None:
            ids.add(ident)
        yield lineno, obj
    if ids is not None:
        _raise_if_duplicates(path, ids)


def iter_completions(path: str | os.PathLike[str]) -> Iterator[Completion]:
    """Stream a frozen-rollouts file (``{"id", "completion", "policy", "sampling"}`` per line)."""
    for lineno, obj in iter_completion_objects(path):
        yield Completion(obj["id"], obj["completion"], obj["policy"], obj["sampling"], lineno)


# ---------------------------------------------------------------------------
# Selection packs
# ---------------------------------------------------------------------------
def iter_samples(path: str | os.PathLike[str]) -> Iterator[SampleSet]:
    """Stream a selection pack (``{"id", "samples": [{"sample_index", "completion"}, ...], "policy", "sampling"}``).

    Samples must be numbered 0..n-1 in stored order (n >= 1): the stable sample
    id ``f"{id}#{sample_index}"`` and "the first N samples" both rely on it.
    Packs may hold different numbers of samples per item; a tool that needs N
    samples checks ``len(pack.samples) >= N`` itself.
    """
    settings = _SameSettings()

    def check(obj: dict[str, Any], where: str, lineno: int) -> SampleSet:
        ident = _need_str(obj, "id", where, nonempty=True)
        raw_samples = obj.get("samples", _MISSING)
        if raw_samples is _MISSING:
            raise CourseError(f"{where}: missing field 'samples' (an array of objects)")
        if type(raw_samples) is not list:
            raise CourseError(f"{where}: field 'samples' must be an array, got {_json_kind(raw_samples)}")
        if not raw_samples:
            raise CourseError(f"{where}: field 'samples' is empty; an item needs at least one sample")
        samples = []
        for position, item in enumerate(raw_samples):
            at = f"{where}: samples[{position}]"
            if type(item) is not dict:
                raise CourseError(f"{at} must be an object, got {_json_kind(item)}")
            index = _need_int(item, "sample_index", at)
            if index != position:
                raise CourseError(f"{at} has sample_index {index}; samples must be numbered 0..n-1 in stored order")
            samples.append(Sample(index, _need_text_or_null(item, "completion", at)))
        settings.check(obj, where)
        return SampleSet(ident, tuple(samples), obj["policy"], obj["sampling"], lineno)

    ids = _UniqueIds()
    for _, _, pack in _iter_checked(path, check):
        ids.add(pack.id)
        yield pack
    _raise_if_duplicates(path, ids)


# ---------------------------------------------------------------------------
# Run directories (what course.eval and the other scoring tools write)
# ---------------------------------------------------------------------------
def _result_check(obj: dict[str, Any], where: str, lineno: int) -> str:
    ident = _need_str(obj, "id", where, nonempty=True)
    reward = obj.get("reward", _MISSING)
    if reward is _MISSING:
        raise CourseError(f"{where}: missing field 'reward' (a number)")
    if type(reward) not in (int, float) or not math.isfinite(reward):
        raise CourseError(f"{where}: field 'reward' must be a finite number, got {_json_kind(reward)}{_short(reward)}")
    details = _need_object(obj, "details", where)
    _need_str(details, "error_code", f"{where}: details", nonempty=True)
    return ident


def iter_results(path: str | os.PathLike[str]) -> Iterator[dict[str, Any]]:
    """Stream a run's ``results.jsonl``: each line needs ``id``, a finite numeric
    ``reward`` and a ``details`` object with a string ``error_code``."""
    ids = _UniqueIds()
    for _, obj, ident in _iter_checked(path, _result_check):
        ids.add(ident)
        yield obj
    _raise_if_duplicates(path, ids)


def read_json(path: str | os.PathLike[str], what: str = "JSON file") -> dict[str, Any]:
    """Read one JSON object (a manifest, a summary); ``CourseError`` if missing or corrupt."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise CourseError(f"{path}: no such file (expected the {what})") from None
    except OSError as exc:
        raise CourseError(f"{path}: cannot read the {what} ({exc.strerror})") from None
    try:
        value = _STD_DECODER.decode(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise CourseError(f"{path}: the {what} is not valid UTF-8") from None
    except json.JSONDecodeError as exc:
        raise CourseError(f"{path}:{exc.lineno}: the {what} is not valid JSON: {exc.msg} (column {exc.colno})") from None
    except ValueError as exc:
        raise CourseError(f"{path}: the {what} is not valid JSON: {exc}") from None
    if type(value) is not dict:
        raise CourseError(f"{path}: the {what} must be a JSON object, got {_json_kind(value)}")
    return value
