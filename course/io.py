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
  * ``iter_objects(path) -> Iterator[(line, dict)]``     any JSONL file, file-level checks only
  * ``iter_aligned(dataset, rollouts) -> Iterator[(example, record)]``  both files side by side
    (course.eval's million-line path; raises ``NotAligned`` when the ids stop matching)
  * ``read_json(path, what)``                           a run's manifest.json / summary.json
  * ``read_run(dir) -> RunDir``                         a finished run directory (manifest + summary)

Writers: ``dumps_line``, ``dumps_result`` (a results.jsonl line, fast), ``write_json``, ``write_jsonl``, ``JsonlWriter`` (streams
lines and hashes the bytes it writes), ``write_text_atomic``, ``write_json_atomic``.

The JSONL rules (documented in docs/formats.md) and why:
  * one JSON object per line, UTF-8, ``\\n`` line ends; the last line may lack its ``\\n``;
  * a UTF-8 byte-order mark is REJECTED: it would silently become part of the
    first line and change the file's sha256 while looking identical;
  * CRLF line ends (any CR byte) are REJECTED for the same reason (the bundled files are LF);
  * blank lines (also whitespace-only) are REJECTED: one is nearly always the
    trace of a hand edit (a deleted item, a paste), and an accepted file should
    mean exactly one item per line, nothing skipped silently;
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
def _dumps_line_std(record: Any) -> str:
    return json.dumps(record, ensure_ascii=False, sort_keys=True, separators=(", ", ": "))


def _cached_c_encoder() -> Callable[[Any], str] | None:
    """The C encoder ``json.dumps`` builds on every call, built once (about 1 µs saved
    per line). Used only if it reproduces ``json.dumps`` byte for byte on a probe."""
    try:
        from json.encoder import c_make_encoder, encode_basestring

        def default(o: Any) -> Any:
            raise TypeError(f"Object of type {type(o).__name__} is not JSON serializable")

        encode = c_make_encoder(None, default, encode_basestring, None, ": ", ", ", True, False, True)
        probe = {"b": [1, 2.5, None, True, 10**30], "a": "\u2212 7\n\"\\", "c": {"z": 1e-7, "y": -0.0}, "": []}

        def fast(record: Any) -> str:
            return "".join(encode(record, 0))

        return fast if fast(probe) == _dumps_line_std(probe) else None
    except Exception:  # pragma: no cover - an interpreter without the C accelerator
        return None


_dumps_line_fast = _cached_c_encoder()


def dumps_line(record: Any) -> str:
    """One canonical JSON line (no trailing newline): sorted keys, ``", "``/``": "``, UTF-8 as is.

    >>> dumps_line({"b": 1, "a": "\u2212"})
    '{"a": "\u2212", "b": 1}'
    """
    if _dumps_line_fast is not None:
        return _dumps_line_fast(record)
    return _dumps_line_std(record)  # pragma: no cover


_encode_string = json.encoder.encode_basestring  # the C function json.dumps(ensure_ascii=False) uses


def dumps_result(ident: str, completion: str | None, expected: int, reward: float, details: dict[str, Any]) -> str:
    """``dumps_line`` of one results.jsonl record, the line ``course.eval`` writes a million times.

    The five keys are fixed, so the line is composed around one encoder call for
    ``details``; for other value types it falls back to ``dumps_line``. Same bytes
    either way (tests/test_io.py checks it on generated records).

    >>> dumps_result("a", "Final: 1", 1, 1.0, {"error_code": "ok"})
    '{"completion": "Final: 1", "details": {"error_code": "ok"}, "expected": 1, "id": "a", "reward": 1.0}'
    """
    if (
        _dumps_line_fast is not None and type(ident) is str and type(expected) is int
        and type(reward) is float and reward - reward == 0.0  # finite: json.dumps would write NaN/Infinity
        and (type(completion) is str or completion is None)
    ):
        text = "null" if completion is None else _encode_string(completion)
        return (
            f'{{"completion": {text}, "details": {_dumps_line_fast(details)}, "expected": {int.__repr__(expected)}, '
            f'"id": {_encode_string(ident)}, "reward": {float.__repr__(reward)}}}'
        )
    return dumps_line(
        {"id": ident, "completion": completion, "expected": expected, "reward": reward, "details": details}
    )


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
            # Encoding line by line keeps the common ASCII line on CPython's fast path; one
            # non-ASCII line would otherwise widen the whole joined block (measured 2x slower).
            data = b"\n".join(map(str.encode, self._buffer))
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
# A \uD800-\uDFFF escape: the only way a JSON text can smuggle in a lone surrogate.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abAB]")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


_STD_DECODER = json.JSONDecoder(parse_constant=_reject_constant)
_MISSING: Any = object()


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


_scan_once = _STD_DECODER.scan_once  # the decoder's C scanner, without decode()'s regex calls
_JSON_SPACE = " \t\n\r"


def _parse_std(raw: bytes, path: Any, lineno: int) -> Any:
    """The authoritative parse of one line (standard library), with the error messages.

    Only unusual lines get here: the ordinary ones were parsed by ``_quick_object``.
    """
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CourseError(
            f"{path}:{lineno}: bytes that are not valid UTF-8 (0x{raw[exc.start]:02x} at byte "
            f"{exc.start + 1} of the line); save the file as UTF-8"
        ) from None
    value = _parse_slow(text, path, lineno)
    if "\\u" in text and _SURROGATE_ESCAPE.search(text) and _has_lone_surrogate(value):
        raise CourseError(
            f"{path}:{lineno}: a string holds a lone surrogate escape (\\ud800-\\udfff), which is not Unicode text"
        )
    return value


def _parse_slow(text: str, path: Any, lineno: int) -> Any:
    """``JSONDecoder.decode`` with its leading-space handling, and every error as a CourseError."""
    if not text.strip():
        raise CourseError(f"{path}:{lineno}: blank line; every line must hold one JSON object (delete the line)")
    try:
        return _STD_DECODER.decode(text)
    except json.JSONDecodeError as exc:
        raise CourseError(f"{path}:{lineno}: invalid JSON: {exc.msg} (column {exc.colno})") from None
    except ValueError as exc:  # NaN/Infinity, or an integer beyond Python's digit limit
        raise CourseError(f"{path}:{lineno}: invalid JSON: {exc}") from None
    except RecursionError:
        raise CourseError(f"{path}:{lineno}: invalid JSON: nested too deeply") from None


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


def _quick_object(raw: bytes) -> dict[str, Any] | None:
    """The standard library's parse of an ordinary line, or None to send it to ``_line_object``.

    Ordinary: valid UTF-8, no CR byte, one JSON object from the first byte, then
    only whitespace, no ``\\uD8xx`` escapes. Everything else takes the slow path,
    which decides and words the error (or accepts an unusual but valid line).
    """
    if 13 in raw:  # a CR byte (memchr: fast); the slow path names the problem
        return None
    try:
        text = raw.decode("utf-8")
        obj, end = _scan_once(text, 0)
    except (UnicodeDecodeError, StopIteration, ValueError, RecursionError):
        return None
    if end != len(text) and text[end:].strip(_JSON_SPACE):
        return None
    if type(obj) is not dict or ("\\u" in text and _SURROGATE_ESCAPE.search(text)):
        return None
    return obj


def _line_object(raw: bytes, path: Any, lineno: int) -> dict[str, Any]:
    """The slow, precise path for one line: every file-level rule, and the error message if one is broken."""
    if lineno == 1 and raw.startswith(_BOM):
        raise CourseError(
            f"{path}:1: the file starts with a UTF-8 byte-order mark (bytes EF BB BF), which would "
            "silently become part of the first line; save it as UTF-8 without BOM "
            "(e.g. sed -i '1s/^\\xEF\\xBB\\xBF//' FILE)"
        )
    if 13 in raw:  # JSON strings cannot hold a raw CR, so any CR byte is a line end or a stray
        raise CourseError(
            f"{path}:{lineno}: Windows line end (CRLF) or a stray carriage return; the course's JSONL "
            "files use LF only, and a CR changes the file's sha256 while looking identical "
            "(convert with: sed -i 's/\\r$//' FILE, or dos2unix)"
        )
    return _parse_object(raw, path, lineno)


T = TypeVar("T")
Check = Callable[[dict[str, Any], Any, int], "tuple[str | None, T]"]


def _read(
    path: str | os.PathLike[str],
    check: Check,
    *,
    unique: bool,
    exact_floats: bool = False,
    payload: bool = True,
) -> Iterator[Any]:
    """The one loop every reader runs: bytes -> line -> object -> ``check`` -> yield.

    ``check(obj, path, lineno)`` validates the fields and returns ``(id, payload)``;
    the loop yields ``(line_number, object, payload)``, or ``(line_number, object)``
    with ``payload=False``. With ``unique`` the ids must all differ (verified
    when the file ends, see ``_UniqueIds``).

    orjson, when installed, is only a fast path. Line 1 always goes through the
    standard library (rollout files record line 1's policy and sampling in
    manifests, so those values must not depend on the parser), and a line orjson
    parsed that fails ``check`` is parsed and checked again by the standard
    library, whose verdict stands: orjson reads integers beyond 64 bits as
    floats, which a check may reject (``expected_answer``) or see as another
    value (a sampling ``seed``). ``exact_floats`` (for callers without field
    checks) re-parses every orjson result that holds a float.
    """
    fast = _orjson.loads if _orjson is not None else None
    ids = _UniqueIds() if unique else None
    remember = ids.add if ids is not None else None
    with _open_binary(path) as f:
        lineno = 0
        for raw in f:
            lineno += 1
            if fast is not None and lineno > 1 and 13 not in raw:
                try:
                    obj = fast(raw)
                except ValueError:  # orjson.JSONDecodeError subclasses ValueError
                    obj = None
                if type(obj) is dict and not (exact_floats and _contains_float(obj)):
                    try:
                        ident, extra = check(obj, path, lineno)
                    except CourseError:
                        pass  # let the standard library give the verdict below
                    else:
                        if remember is not None:
                            remember(ident)
                        yield (lineno, obj, extra) if payload else (lineno, obj)
                        continue
            obj = _quick_object(raw)
            if obj is None:
                obj = _line_object(raw, path, lineno)
            ident, extra = check(obj, path, lineno)
            if remember is not None:
                remember(ident)
            yield (lineno, obj, extra) if payload else (lineno, obj)
    if lineno == 0:
        raise CourseError(f"{path}:1: empty file; expected one JSON object per line")
    if ids is not None:
        _raise_if_duplicates(path, ids)


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


def _no_check(obj: dict[str, Any], path: Any, lineno: int) -> tuple[None, None]:
    return None, None


def iter_objects(path: str | os.PathLike[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for every line of a JSONL file, checking the
    file-level rules (encoding, BOM, CRLF, blank lines, JSON, one object per line,
    not empty). Field checks are the typed readers' job.

    Reads bytes one line at a time: memory is one line, whatever the file size.
    Values are exactly the standard library's, whichever parser is installed.
    """
    return _read(path, _no_check, unique=False, exact_floats=True, payload=False)



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

    It does what a ``set`` of ids would (a set also goes by ``hash()``), but keeps
    only each id's 64-bit hash, in 256 compact arrays, instead of the strings.
    When the file ends each array is checked for repeated hashes; a repeat is
    confirmed by re-reading the file and comparing the ids themselves, so a hash
    collision between two different ids is recognised and ignored. The verdict
    never depends on hash values (nor on PYTHONHASHSEED); only the rare re-read does.
    """

    def __init__(self) -> None:
        self._buckets = [array("q") for _ in range(256)]

    def add(self, ident: str) -> None:
        h = hash(ident)
        self._buckets[h & 0xFF].append(h)

    def repeated(self) -> set[int]:
        out: set[int] = set()
        for bucket in self._buckets:
            if len(set(bucket)) != len(bucket):
                seen: set[int] = set()
                for h in bucket:
                    if h in seen:
                        out.add(h)
                    seen.add(h)
        return out


def _raise_if_duplicates(path: Any, ids: _UniqueIds) -> None:
    suspects = ids.repeated()
    if not suspects:
        return
    first_line: dict[str, int] = {}
    for lineno, obj in iter_objects(path):
        ident = obj.get("id")
        if type(ident) is str and hash(ident) in suspects:
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
def dataset_fields(obj: dict[str, Any], where: str) -> tuple[str, str, int]:
    """Check one dataset object; return ``(id, prompt, expected_answer)``."""
    return (
        _need_str(obj, "id", where, nonempty=True),
        _need_str(obj, "prompt", where),
        _need_int(obj, "expected_answer", where),
    )


def _dataset_check(obj: dict[str, Any], path: Any, lineno: int) -> tuple[str, None]:
    ident = obj.get("id")
    if type(ident) is str and ident and type(obj.get("prompt")) is str and type(obj.get("expected_answer")) is int:
        return ident, None  # the common case: one combined test, no message built
    return dataset_fields(obj, f"{path}:{lineno}")[0], None


def iter_dataset_objects(path: str | os.PathLike[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """Validated dataset lines as ``(line, object)``; ids unique (checked when the file ends)."""
    return _read(path, _dataset_check, unique=True, payload=False)


def iter_dataset(path: str | os.PathLike[str]) -> Iterator[Example]:
    """Stream a dataset file (``{"id", "prompt", "expected_answer"}`` per line)."""
    for lineno, obj, _ in _read(path, _dataset_check, unique=True):
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

    def check(self, obj: dict[str, Any], path: Any, lineno: int) -> None:
        policy, sampling = obj.get("policy"), obj.get("sampling")
        if policy == self.policy and sampling == self.sampling and type(sampling) is dict and self.policy is not None:
            return  # the common case
        where = f"{path}:{lineno}"
        policy = _need_str(obj, "policy", where, nonempty=True)
        sampling = _need_object(obj, "sampling", where)
        if self.policy is None:
            _check_finite(sampling, where, "sampling")
            self.policy, self.sampling = policy, sampling
            return
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
    return _need_str(obj, "id", where, nonempty=True), _need_text_or_null(obj, "completion", where)


def iter_completion_objects(
    path: str | os.PathLike[str], *, unique: bool = True
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Validated rollout lines as ``(line, object)``.

    ``unique=False`` skips the duplicate-id check for a caller that proves
    uniqueness another way (``course.eval`` matches ids line by line against a
    dataset whose ids are checked, or indexes them itself).
    """
    return _read(path, _completion_check(_SameSettings()), unique=unique, payload=False)


def _completion_check(settings: _SameSettings) -> Check:
    """The field check of one rollout line, for one file (``settings`` remembers line 1)."""

    def check(obj: dict[str, Any], path: Any, lineno: int) -> tuple[str, None]:
        ident, text = obj.get("id"), obj.get("completion", _MISSING)
        if not (type(ident) is str and ident and (type(text) is str or text is None)):
            ident, _ = completion_fields(obj, f"{path}:{lineno}")
        settings.check(obj, path, lineno)
        return ident, None

    return check


class NotAligned(Exception):
    """``iter_aligned`` met a line pair whose ids differ, or one file ended before the other."""


def _shared_tail(text: str, whole: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """Split rollout line 1 into a head and a reusable tail: ``(tail text, tail members)``.

    The tail is everything from the top-level member ``"policy"`` on, e.g.
    ``, "policy": "sim-policy-v1", "sampling": {...}}\n``; in a rollout file it is
    usually the same text on every line. None when line 1 does not split cleanly.
    ``iter_aligned`` explains why a line ending in the same tail may skip parsing it.
    """
    cut = text.find(', "policy": ')
    if cut <= 0:
        return None
    try:
        head, end = _scan_once(text[:cut] + "}", 0)
        tail, end_tail = _scan_once("{" + text[cut + 1 :], 0)
    except (StopIteration, ValueError, RecursionError):
        return None
    if type(head) is not dict or not head or end != cut + 1 or type(tail) is not dict:
        return None
    if ("{" + text[cut + 1 :])[end_tail:].strip(_JSON_SPACE) or {**head, **tail} != whole:
        return None
    return text[cut:], tail


def iter_aligned(
    dataset: str | os.PathLike[str], completions: str | os.PathLike[str]
) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """A dataset and its rollouts read side by side: ``(example, record)`` per line pair.

    Every line is checked exactly as ``iter_dataset_objects`` and
    ``iter_completion_objects`` check it (the same functions accept the unusual
    lines and word every error), dataset ids must be unique, and rollout line i
    must carry dataset line i's id. Where that last condition fails, or one file
    is longer than the other, it raises ``NotAligned`` (not an input error: the
    caller matches ids another way, as ``course.eval``'s indexed mode does).
    Treat the records as read-only: records may share line 1's ``policy`` and
    ``sampling`` objects (see below).

    Why a loop of its own: this is the million-line path of ``course.eval``
    (benchmarks/bench_eval.py measures it). Two savings, both exact:

    * one loop over both files, with the ordinary line parsed inline, instead of
      two generators and their per-line bookkeeping;
    * the shared tail. A rollout line is ``H + T`` where ``T`` (from ``"policy"``
      on) is usually line 1's text, and parsing T (mostly its sampling floats)
      is about two thirds of the line's parse time. If ``H + "}"`` parses as a non-empty object that ends
      exactly at that ``"}"``, a JSON parser that has read H stands inside the
      top-level object right after a member's value: the same state it was in
      where line 1's T began. Parsing is deterministic, so T then yields exactly
      line 1's members and ``H + T`` is valid with the members of ``H + "}"``
      followed by line 1's tail members (a key repeated in T takes T's value,
      as ``dict.update`` does). Any other line is parsed whole.
    """
    fast = _orjson.loads if _orjson is not None else None
    scan, space, escape, missing = _scan_once, _JSON_SPACE, _SURROGATE_ESCAPE, _MISSING
    ids = _UniqueIds()
    remember = ids.add
    settings = _SameSettings()
    check_completion = _completion_check(settings)
    policy = sampling = missing  # line 1's, once line 1 has been checked
    tail: str | None = None  # line 1's shared tail and its members, when it has one
    tail_members: dict[str, Any] = {}
    with _open_binary(dataset) as fd, _open_binary(completions) as fc:
        next_completion = fc.readline
        lineno = 0
        for raw in fd:
            lineno += 1
            raw_c = next_completion()
            if not raw_c:  # the same verdicts, in the same order, as reading the two files one by one
                example = _quick_object(raw)
                _dataset_check(_line_object(raw, dataset, lineno) if example is None else example, dataset, lineno)
                if lineno == 1:
                    raise CourseError(f"{completions}:1: empty file; expected one JSON object per line")
                raise NotAligned(f"{completions} ends at line {lineno - 1}, {dataset} goes on")
            # The ordinary pair, inline: the standard library's parse (or orjson's), then the
            # same acceptance tests as _dataset_check and check_completion's common case.
            # Anything else (None here) takes the slow path below, which decides and words it.
            example = record = None
            if 13 not in raw and 13 not in raw_c:
                if fast is not None and lineno > 1:
                    try:
                        example, record = fast(raw), fast(raw_c)
                    except ValueError:  # orjson.JSONDecodeError
                        example = record = None
                else:
                    try:
                        text = raw.decode("utf-8")
                        example, end = scan(text, 0)
                        if (end != len(text) and text[end:].strip(space)) or ("\\u" in text and escape.search(text)):
                            example = None
                        text = raw_c.decode("utf-8")
                        if tail is not None and text.endswith(tail):
                            text = text[: len(text) - len(tail)]  # H; see the docstring
                            record, end = scan(text + "}", 0)
                            if end == len(text) + 1 and type(record) is dict and record:
                                record.update(tail_members)
                            else:
                                record = None
                        else:
                            record, end = scan(text, 0)
                            if end != len(text) and text[end:].strip(space):
                                record = None
                        if "\\u" in text and escape.search(text):
                            record = None
                    except (UnicodeDecodeError, StopIteration, ValueError, RecursionError):
                        example = record = None
                if type(example) is dict and type(record) is dict:
                    ident = example.get("id")
                    completion = record.get("completion", missing)
                    if (
                        type(ident) is str and ident and type(example.get("prompt")) is str
                        and type(example.get("expected_answer")) is int
                        and record.get("id") == ident and (type(completion) is str or completion is None)
                        and record.get("policy") == policy
                        and ((value := record.get("sampling")) is sampling or value == sampling)
                    ):
                        remember(ident)
                        yield example, record
                        continue
            # The slow path: one line at a time, through the functions the other readers use.
            example = _quick_object(raw)
            if example is None:
                example = _line_object(raw, dataset, lineno)
            ident, _ = _dataset_check(example, dataset, lineno)
            record = _quick_object(raw_c)
            if record is None:
                record = _line_object(raw_c, completions, lineno)
            check_completion(record, completions, lineno)
            if lineno == 1:
                policy, sampling = settings.policy, settings.sampling
                split = _shared_tail(raw_c.decode("utf-8"), record) if fast is None else None
                if split is not None:  # share line 1's own objects, so that `is` finds them equal
                    tail, tail_members = split[0], {key: record[key] for key in split[1]}
            if record["id"] != ident:
                raise NotAligned(f"line {lineno}: dataset id {ident!r}, completion id {record['id']!r}")
            remember(ident)
            yield example, record
        if lineno == 0:
            raise CourseError(f"{dataset}:1: empty file; expected one JSON object per line")
        _raise_if_duplicates(dataset, ids)
        raw_c = next_completion()
        if raw_c:  # one line more: check it (its error comes first), then say the files differ
            record = _quick_object(raw_c)
            check_completion(record if record is not None else _line_object(raw_c, completions, lineno + 1),
                             completions, lineno + 1)
            raise NotAligned(f"{completions} goes on after line {lineno}, where {dataset} ends")


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

    def check(obj: dict[str, Any], path: Any, lineno: int) -> tuple[str, SampleSet]:
        where = f"{path}:{lineno}"
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
        settings.check(obj, path, lineno)
        return ident, SampleSet(ident, tuple(samples), obj["policy"], obj["sampling"], lineno)

    for _, _, pack in _read(path, check, unique=True):
        yield pack


# ---------------------------------------------------------------------------
# Run directories (what course.eval and the other scoring tools write)
# ---------------------------------------------------------------------------
def _result_check(obj: dict[str, Any], path: Any, lineno: int) -> tuple[str, None]:
    where = f"{path}:{lineno}"
    ident = _need_str(obj, "id", where, nonempty=True)
    reward = obj.get("reward", _MISSING)
    if reward is _MISSING:
        raise CourseError(f"{where}: missing field 'reward' (a number)")
    if type(reward) not in (int, float) or not math.isfinite(reward):
        raise CourseError(f"{where}: field 'reward' must be a finite number, got {_json_kind(reward)}{_short(reward)}")
    details = _need_object(obj, "details", where)
    _need_str(details, "error_code", f"{where}: details", nonempty=True)
    return ident, None


def iter_results(path: str | os.PathLike[str]) -> Iterator[dict[str, Any]]:
    """Stream a run's ``results.jsonl``: each line needs ``id``, a finite numeric
    ``reward`` and a ``details`` object with a string ``error_code``."""
    for _, obj, _ in _read(path, _result_check, unique=True):
        yield obj


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
    if not (run / "results.jsonl").is_file():
        raise CourseError(f"{run}/results.jsonl: no such file; the run directory is incomplete")
    return RunDir(run, manifest, summary)
