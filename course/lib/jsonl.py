"""Every JSON and JSONL byte the course reads or writes: the one reader loop and the writers.

The reader (``iter_objects``) is one plain loop: open the file (refusing
anything that is not a regular file, without ever blocking on it), then for each
line decode UTF-8, parse it with the standard library's ``json`` and check the
file-level rules. Every refusal is a ``CourseError`` worded
``path:line: what is wrong``; the CLIs turn it into exit code 2 before anything
is written. The typed formats built on it live in ``course.lib.formats``.

The JSONL rules (docs/formats.md) and why:
  * one JSON object per line, UTF-8, ``\\n`` line ends; the last line may lack its ``\\n``;
  * a UTF-8 byte-order mark is REJECTED: it would silently become part of the
    first line and change the file's sha256 while looking identical;
  * CRLF line ends (any CR byte) are REJECTED for the same reason (the bundled files are LF);
  * blank lines (also whitespace-only) are REJECTED: one is nearly always the
    trace of a hand edit, and an accepted file should mean exactly one item per line;
  * bytes that are not UTF-8, invalid JSON, NaN/Infinity, a line that is not an
    object are rejected;
  * a string holding a lone surrogate escape (``\\ud800``-``\\udfff``, high or
    low, not part of a pair) is rejected: it is not Unicode text and cannot be
    written back as UTF-8;
  * nesting deeper than ``MAX_DEPTH`` arrays/objects is rejected, checked
    without recursion, so a 100,000-deep line gets the same one-line verdict
    as a 101-deep one (no format of the course nests more than 4 levels).

``read_json`` reads one JSON document (a manifest, a summary) with the same
protections. Memory: one line at a time.

Writers are canonical so that equal data gives equal bytes (the determinism rule):
keys sorted, ``", "``/``": "`` separators, UTF-8 without escaping, ``\\n`` line ends.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from pathlib import Path
from typing import IO, Any, Callable, Iterable, Iterator

from course.errors import CourseError

MAX_DEPTH = 100  # arrays/objects inside one another; the course's formats use at most 4


# ===========================================================================
# Writers (canonical bytes)
# ===========================================================================
def dumps_line(record: Any) -> str:
    """One canonical JSON line (no trailing newline): sorted keys, ``", "``/``": "``, UTF-8 as is.

    >>> dumps_line({"b": 1, "a": "\u2212"})
    '{"a": "\u2212", "b": 1}'
    """
    return _LINE_ENCODER.encode(record)


# What json.dumps(record, ensure_ascii=False, sort_keys=True, separators=(", ", ": ")) builds on
# every call, built once (the public JSONEncoder API; same bytes).
_LINE_ENCODER = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(", ", ": "))


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


def refuse_existing(path: str | os.PathLike[str], force: bool) -> None:
    """An output file that already exists is replaced only with ``--force`` (checked before any work)."""
    if Path(path).exists() and not force:
        raise CourseError(f"{path}: already exists (use --force to replace it)")


def write_text_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write a text file so that readers see the old file or the new one, never half of one.

    A missing parent directory is created first, as the run writer creates ``runs/``: the docs'
    ``--out runs/x.jsonl`` must work in a fresh directory, where no tool has made ``runs/`` yet.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
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
    record it without reading the file again. Lines are buffered and written in blocks.

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
        self._flushed = 0  # lines already written to the file

    def write(self, record: Any) -> None:
        """Append ``record`` as one canonical line."""
        buffer = self._buffer
        buffer.append(dumps_line(record))
        if len(buffer) >= self._BLOCK:
            self._flush()

    def write_line(self, line: str) -> None:
        """Append one already-canonical line (without its newline)."""
        self._buffer.append(line)
        if len(self._buffer) >= self._BLOCK:
            self._flush()

    def _flush(self) -> None:
        if self._buffer:
            self._flushed += len(self._buffer)
            self._buffer.append("")  # so the join ends with a newline
            # Encoding line by line keeps the common ASCII line on CPython's fast path; one
            # non-ASCII line would otherwise widen the whole joined block (measured 2x slower).
            data = b"\n".join(map(str.encode, self._buffer))
            self._hash.update(data)
            self._file.write(data)
            self._buffer.clear()

    @property
    def count(self) -> int:
        """How many lines have been written so far."""
        return self._flushed + len(self._buffer)

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
# Opening an input: regular files only, never blocking
# ===========================================================================
def _kind(mode: int) -> str:
    """What a non-regular file is, in words."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"  # pragma: no cover - no other kinds on POSIX


def input_problem(path: str | os.PathLike[str]) -> str | None:
    """Why ``path`` cannot be read as an input file (``"no such file"``, ``"is a directory"``,
    ``"is not a regular file (a FIFO (named pipe))"``...), or None if it is a regular file.

    Uses ``stat``, which never blocks (opening a FIFO for reading would wait for a writer).
    """
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "no such file"
    except OSError as exc:
        return f"cannot read ({exc.strerror})"
    return _mode_problem(mode)


def _mode_problem(mode: int) -> str | None:
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "is a directory"
    return f"is not a regular file ({_kind(mode)})"


def open_input(path: str | os.PathLike[str], expected: str = "a JSONL file") -> IO[bytes]:
    """Open a regular file for reading in binary; ``CourseError`` naming what it is otherwise.

    The file is opened with ``O_NONBLOCK`` and checked with ``fstat`` on the
    descriptor itself, so a FIFO (which would wait forever for a writer),
    ``/dev/zero`` (which never ends) or a directory is refused at once, and a
    file swapped between a check and the open cannot slip through.
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise CourseError(f"{path}: no such file" + ("" if expected == "a JSONL file" else f" (expected {expected})")) from None
    except IsADirectoryError:  # pragma: no cover - Linux opens directories read-only; other systems may not
        raise CourseError(f"{path}: is a directory, expected {expected}") from None
    except OSError as exc:
        raise CourseError(f"{path}: cannot read ({exc.strerror}), expected {expected}") from None
    try:
        problem = _mode_problem(os.fstat(fd).st_mode)
        if problem is not None:
            raise CourseError(f"{path}: {problem}, expected {expected}")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


# ===========================================================================
# The one JSONL reader loop: bytes -> line -> checked JSON object
# ===========================================================================
_BOM = b"\xef\xbb\xbf"
# A \uD800-\uDFFF escape (high or low half): the only way JSON text can smuggle in a lone surrogate.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
# A JSON string (for the depth scan, which must not count brackets inside strings).
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)
_raw_decode = _DECODER.raw_decode
_JSON_SPACE = " \t\n\r"


def too_deep_at(text: str) -> int | None:
    """The offset where ``text`` nests more than ``MAX_DEPTH`` arrays/objects, or None.

    Iterative (no recursion, whatever the depth). Counting brackets gives an
    upper bound first, so an ordinary line costs two ``str.count`` calls.

    >>> too_deep_at("[" * 101 + "]" * 101), too_deep_at('{"a": "[[[["}')
    (100, None)
    """
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return None
    depth = 0
    stripped = _STRING.sub(lambda m: " " * len(m.group()), text)  # same offsets, no brackets in strings
    for match in _BRACKET.finditer(stripped):
        if match.group() in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return match.start()
        else:
            depth -= 1
    return None


def _deep_message() -> str:
    return f"nested too deeply (more than {MAX_DEPTH} levels of arrays/objects)"


_PAIRS_DECODER = json.JSONDecoder(object_pairs_hook=list, parse_constant=_reject_constant)


def text_has_lone_surrogate(text: str) -> bool:
    """True if any string of a valid JSON text holds a lone surrogate, even one a
    repeated key hides from the parsed object (``{"a": "\\udc00", "a": 1}``)."""
    return has_lone_surrogate(_PAIRS_DECODER.decode(text))


def has_lone_surrogate(value: Any) -> bool:
    """True if any string (key or value) in a parsed JSON value holds a lone surrogate. Iterative."""
    stack = [value]
    while stack:
        item = stack.pop()
        if type(item) is str:
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif type(item) is dict:
            stack.extend(item)
            stack.extend(item.values())
        elif type(item) in (list, tuple):
            stack.extend(item)
    return False


def json_kind(value: Any) -> str:
    """The JSON kind of a parsed value, in words (for error messages)."""
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


def parse_line(raw: bytes, path: Any, lineno: int) -> dict[str, Any]:
    """One JSONL line (bytes, with or without its ``\\n``) as a checked JSON object, or ``CourseError``."""
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
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CourseError(
            f"{path}:{lineno}: bytes that are not valid UTF-8 (0x{raw[exc.start]:02x} at byte "
            f"{exc.start + 1} of the line); save the file as UTF-8"
        ) from None
    if text.count("[") + text.count("{") > MAX_DEPTH and too_deep_at(text) is not None:
        raise CourseError(f"{path}:{lineno}: invalid JSON: {_deep_message()}")
    try:
        # raw_decode is decode() without its two whitespace scans; a line with anything
        # but one value and its newline (rare: leading or trailing text) goes to decode(),
        # which gives the verdict.
        value, end = _raw_decode(text)
        rest = len(text) - end  # usually 1 (the "\n") or 0 (a last line without one)
        if rest and (rest > 1 or text[end] != "\n") and text[end:].strip(_JSON_SPACE):
            value = _DECODER.decode(text)
    except json.JSONDecodeError:
        value = _decode_slowly(text, path, lineno)
    except ValueError as exc:  # NaN/Infinity, or an integer beyond Python's digit limit
        raise CourseError(f"{path}:{lineno}: invalid JSON: {exc}") from None
    except RecursionError:  # pragma: no cover - too_deep_at refuses these first; same verdict if not
        raise CourseError(f"{path}:{lineno}: invalid JSON: {_deep_message()}") from None
    if "\\u" in text and _SURROGATE_ESCAPE.search(text) and text_has_lone_surrogate(text):
        raise CourseError(
            f"{path}:{lineno}: a string holds a lone surrogate escape (\\ud800-\\udfff), which is not Unicode text"
        )
    if type(value) is not dict:
        raise CourseError(f"{path}:{lineno}: expected a JSON object {{...}} on every line, got {json_kind(value)}")
    return value


def _decode_slowly(text: str, path: Any, lineno: int) -> Any:
    """``JSONDecoder.decode`` (which skips leading whitespace), every error as a ``CourseError``."""
    try:
        return _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        if not text.strip():
            raise CourseError(
                f"{path}:{lineno}: blank line; every line must hold one JSON object (delete the line)"
            ) from None
        raise CourseError(f"{path}:{lineno}: invalid JSON: {exc.msg} (column {exc.colno})") from None
    except ValueError as exc:  # NaN/Infinity, or an integer beyond Python's digit limit
        raise CourseError(f"{path}:{lineno}: invalid JSON: {exc}") from None
    except RecursionError:  # pragma: no cover - too_deep_at refuses these first; same verdict if not
        raise CourseError(f"{path}:{lineno}: invalid JSON: {_deep_message()}") from None


def iter_objects(
    path: str | os.PathLike[str], check: Callable[[dict[str, Any], Any, int], None] | None = None
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for every line of a JSONL file, checking the
    file-level rules (regular file, encoding, BOM, CRLF, blank lines, JSON, depth,
    surrogates, one object per line, not empty).

    ``check(obj, path, line)``, if given, is a format's field and per-file rules
    (``course.lib.formats``); it raises ``CourseError`` to refuse the line.
    Reads one line at a time: memory is one line, whatever the file size.
    """
    with open_input(path) as f:
        lineno = 0
        for raw in f:
            lineno += 1
            obj = parse_line(raw, path, lineno)
            if check is not None:
                check(obj, path, lineno)
            yield lineno, obj
    if lineno == 0:
        raise empty_file(path)


def empty_file(path: Any) -> CourseError:
    """The error for a JSONL file with no line at all."""
    return CourseError(f"{path}:1: empty file; expected one JSON object per line")


def read_json(path: str | os.PathLike[str], what: str = "JSON file") -> dict[str, Any]:
    """Read one JSON object (a manifest, a summary); ``CourseError`` if missing, special or corrupt.

    The same protections as the JSONL reader: regular files only, UTF-8, no
    NaN/Infinity, no lone surrogate, at most ``MAX_DEPTH`` levels of nesting.
    """
    with open_input(path, f"the {what}") as f:
        data = f.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise CourseError(f"{path}: the {what} is not valid UTF-8") from None
    deep = too_deep_at(text)
    if deep is not None:
        line = text.count("\n", 0, deep) + 1
        raise CourseError(f"{path}:{line}: the {what} is not valid JSON: {_deep_message()}")
    try:
        value = _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        raise CourseError(f"{path}:{exc.lineno}: the {what} is not valid JSON: {exc.msg} (column {exc.colno})") from None
    except ValueError as exc:
        raise CourseError(f"{path}: the {what} is not valid JSON: {exc}") from None
    except RecursionError:  # pragma: no cover - too_deep_at refuses these first
        raise CourseError(f"{path}: the {what} is not valid JSON: {_deep_message()}") from None
    if "\\u" in text and _SURROGATE_ESCAPE.search(text) and text_has_lone_surrogate(text):
        line = _first_surrogate_line(text)
        raise CourseError(
            f"{path}:{line}: the {what} holds a lone surrogate escape (\\ud800-\\udfff), which is not Unicode text"
        )
    if type(value) is not dict:
        raise CourseError(f"{path}: the {what} must be a JSON object, got {json_kind(value)}")
    return value


def _first_surrogate_line(text: str) -> int:
    for number, line in enumerate(text.split("\n"), 1):
        if _SURROGATE_ESCAPE.search(line):
            try:
                has = has_lone_surrogate(json.loads(f"[{line.strip().rstrip(',')}]"))
            except ValueError:  # a line of a pretty document is not always a value on its own
                has = True
            if has:
                return number
    return 1  # pragma: no cover - the caller found one


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.jsonl"))
