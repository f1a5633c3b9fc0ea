# Over 600 lines because every JSON byte passes here; the reader's rules go together.
"""Every JSON and JSONL byte the course reads or writes: the one reader loop and the writers.

The JSONL rules and why each exists are in docs/formats.md; this module enforces them.
``iter_objects`` reads a file one line at a time (UTF-8, one object per line; a BOM, a CR,
a blank line, NaN, a lone surrogate, a repeated key or nesting deeper than ``MAX_DEPTH``
is refused) and words every refusal ``path:line: what is wrong`` (a ``CourseError``). With
the ``fast`` extra a line is first read by orjson and kept only where its reading is certainly
the standard library's (``_fast_object``); both paths accept and refuse the same lines.
``read_json`` and ``loads_document`` read one document with the same protections;
``open_input`` is the one opener of every input (regular files only, reads capped at
``MAX_READ``). The writers are canonical (sorted keys, UTF-8, ``\n``), so equal data gives
equal bytes, and refuse whatever the reader would refuse (``unwritable``).
"""

from __future__ import annotations

import decimal
import errno
import hashlib
import io
import json
import math
import os
import re
import stat
from functools import partial
from pathlib import Path
from typing import IO, Any, Callable, Generator, Iterable, Iterator, Sequence

from course.errors import CourseError

MAX_DEPTH = 100  # arrays/objects inside one another; the course's formats use at most 4
# The most bytes any reader takes from one input: a whole document (manifest, summary, a
# report's text file), one JSONL line, or standard input. A FIFO or device is refused before
# reading; this cap bounds what a regular file or a pipe can make the reader hold in memory.
MAX_READ = 64 << 20


# ===========================================================================
# Writers (canonical bytes, and only bytes the reader accepts)
# ===========================================================================
def unwritable(exc: BaseException) -> CourseError:
    """The one refusal of every JSON writer: what would be written is something the reader refuses.

    >>> str(unwritable(ValueError("Out of range float values are not JSON compliant: nan")))
    'refusing to write JSON its reader would refuse: a non-finite number (NaN or infinity)'
    """
    if isinstance(exc, UnicodeEncodeError):
        what = "a lone surrogate (\\ud800-\\udfff), which is not Unicode text"
    elif isinstance(exc, RecursionError) or "nested too deeply" in str(exc):
        what = _deep_message()
    elif "not JSON compliant" in str(exc):
        what = "a non-finite number (NaN or infinity)"
    elif "integer string conversion" in str(exc):
        what = f"an integer with more digits than Python converts ({exc})"
    else:
        what = str(exc)
    return CourseError(f"refusing to write JSON its reader would refuse: {what}")


def _checked(text: str) -> str:
    # Two str.count calls bound the depth (the common case costs only them); the encoder
    # itself refuses NaN/infinity and integers beyond the digit limit. A lone surrogate can only
    # be in a line that is not ASCII: only such a line pays for a trial encoding.
    if text.count("[") + text.count("{") > MAX_DEPTH and too_deep_at(text) is not None:
        raise unwritable(ValueError(_deep_message()))
    if not text.isascii():
        text.encode("utf-8")  # UnicodeEncodeError (a ValueError): the caller words it
    return text


def dumps_line(record: Any) -> str:
    """One canonical JSON line (no trailing newline): sorted keys, ``", "``/``": "``, UTF-8 as is.

    ``CourseError`` (``unwritable``) for anything the reader would refuse.

    >>> dumps_line({"b": 1, "a": "\u2212"})
    '{"a": "\u2212", "b": 1}'
    """
    try:
        text = _encode_line(record)
        # _checked, inlined: this is results.jsonl's hot path
        if text.count("[") + text.count("{") > MAX_DEPTH and too_deep_at(text) is not None:
            raise ValueError(_deep_message())
        if not text.isascii():
            text.encode("utf-8")
        return text
    except (ValueError, RecursionError) as exc:
        raise unwritable(exc) from None


# What json.dumps(record, ensure_ascii=False, sort_keys=True, separators=(", ", ": ")) builds on
# every call, built once (the public JSONEncoder API; same bytes). allow_nan=False: the reader
# refuses NaN and Infinity, so the writer never emits them.
_LINE_ENCODER = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(", ", ": "), allow_nan=False)
# JSONEncoder.encode rebuilds its C encoder (and a closure) on every call: ~0.8 µs of a results
# line's ~4 (benchmarks/bench_eval.py). The same C encoder with the same settings, built once,
# gives the same bytes. It is built without the circular-reference markers (a shared dict that
# an error would leave dirty): anything that fails on it (a cycle: RecursionError here) is encoded
# again by JSONEncoder.encode, so every refusal is exactly the standard library's.
try:
    # a CPython name typeshed does not declare; ImportError covers its absence
    from json.encoder import c_make_encoder as _c_make_encoder  # type: ignore[attr-defined]
    from json.encoder import encode_basestring as _encode_string
except ImportError:  # pragma: no cover - CPython always has the C accelerator
    _c_make_encoder = None
_C_LINE = None if _c_make_encoder is None else _c_make_encoder(
    None, _LINE_ENCODER.default, _encode_string, None, _LINE_ENCODER.key_separator,
    _LINE_ENCODER.item_separator, True, False, False)


def _encode_line(record: Any, _join: Callable[[Iterable[str]], str] = "".join) -> str:
    if type(record) is dict and _C_LINE is not None:
        try:
            return _join(_C_LINE(record, 0))
        except Exception:  # noqa: BLE001 - the pure encoder below raises the standard library's own verdict, words and all
            pass
    return _LINE_ENCODER.encode(record)


def dumps_pretty(obj: Any, first: Sequence[str] = ()) -> str:
    """Pretty, canonical JSON text with a final newline (what ``pretty_bytes`` writes); refuses what
    the reader would refuse, like ``dumps_line``. Keys are sorted at every level, except that the
    top-level keys named in ``first`` come first, in that order (``course.lib.records.runs.dumps_json``)."""
    try:
        if not first or not isinstance(obj, dict):
            text = json.dumps(obj, ensure_ascii=False, sort_keys=True, indent=2, allow_nan=False)
        else:
            ordered = {key: obj[key] for key in first if key in obj}
            ordered.update((key, obj[key]) for key in sorted(obj) if key not in ordered)
            text = json.dumps({key: _sorted_keys(value) for key, value in ordered.items()},
                              ensure_ascii=False, indent=2, allow_nan=False)
        return _checked(text) + "\n"
    except (ValueError, RecursionError) as exc:
        raise unwritable(exc) from None


def _sorted_keys(value: Any) -> Any:
    """``value`` with every dict's keys in sorted order (what ``sort_keys=True`` would print)."""
    if isinstance(value, dict):
        return {key: _sorted_keys(value[key]) for key in sorted(value)}
    if isinstance(value, (list, tuple)):
        return [_sorted_keys(item) for item in value]
    return value


def encode_text(text: str, path: Any) -> bytes:
    """``text`` as UTF-8 bytes for ``path``; a lone surrogate is ``CourseError`` naming the file."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise CourseError(f"{path}: {unwritable(exc)}") from None


def pretty_bytes(obj: Any, name: Any, first: Sequence[str] = ()) -> bytes:
    """The bytes of a JSON file: ``dumps_pretty(obj, first)`` in UTF-8, the one encoding behind
    ``course.lib.records.runs.write_json`` (a file inside a run) and ``temporaries.write_json_atomic``
    (a file on its own). What cannot be written is a ``CourseError`` naming the file: ``name: what is wrong``."""
    try:
        return dumps_pretty(obj, first).encode("utf-8")  # dumps_pretty has already refused a lone surrogate
    except CourseError as exc:
        raise CourseError(f"{name}: {exc}") from None


def write_jsonl(path: str | os.PathLike[str], records: Iterable[Any]) -> int:
    """Write records one per line; return how many were written."""
    with JsonlWriter(path) as out:
        for record in records:
            out.write(record)
    return out.count


def refuse_existing(path: str | os.PathLike[str], force: bool,
                    inputs: Sequence[str | os.PathLike[str] | None] = ()) -> None:
    """The one output check, before any work: an output file that already exists is replaced only
    with ``--force``, and only if it is a regular file (a FIFO or a device is never written into);
    an output that is one of the command's ``inputs``, or an existing file inside an input folder,
    is refused even with ``--force`` (the tool would destroy what it reads)."""
    problem = output_problem(path)
    if problem is not None:
        raise CourseError(f"{path}: {problem}")
    for given in inputs:
        if given is not None and writes_into(path, given):
            where = "a file inside the input" if _real(path).startswith(_real(given).rstrip(os.sep) + os.sep) else \
                "the same file as the input"
            raise CourseError(f"{path}: is {where} {given}; writing it would destroy what is being read, so nothing "
                              "was done; choose another output")
    if os.path.lexists(path) and not force:
        raise CourseError(f"{path}: already exists (use --force to replace it)")


def _real(path: str | os.PathLike[str]) -> str:
    return os.path.realpath(path)


def writes_into(output: str | os.PathLike[str], given: str | os.PathLike[str]) -> bool:
    """Would writing ``output`` replace the input ``given``, or a file inside the input folder ``given``?
    (Through symbolic links and hard links; a new file beside an input's files replaces nothing.)"""
    out, home = _real(output), _real(given)
    if out == home:
        return True
    try:
        if os.path.exists(output) and os.path.exists(given) and os.path.samefile(output, given):
            return True  # a hard link to the input
    except OSError:
        pass
    return os.path.lexists(output) and out.startswith(home.rstrip(os.sep) + os.sep)


def output_problem(path: str | os.PathLike[str], *, in_place: bool = False) -> str | None:
    """Why ``path`` cannot be an output file, or None: the one output check, before any work. Never blocks.

    Refused: a directory, a FIFO, a device or a socket (named as what it is: opening a FIFO would hang),
    a path under a file, and a new file whose nearest existing folder cannot be written (found now, not
    after minutes of work). A symbolic link is fine for a writer that replaces the file: an atomic write
    replaces the link, never writing through it. ``in_place=True`` is a file grown where it is (the
    resumable ``--out`` of ``course.rollout_sample``): the link is followed, so a dangling one is refused,
    and an existing file must be readable (to resume) and writable (to append).

    >>> output_problem("/")
    'is a directory; refusing to write to it'
    """
    try:
        mode = (os.stat if in_place else os.lstat)(path).st_mode
    except FileNotFoundError:
        if in_place and os.path.islink(path):
            return "is a symbolic link to a missing file; remove it or choose another path"
        return _folder_problem(path)
    except NotADirectoryError:
        return _folder_problem(path)
    except OSError as exc:
        return f"cannot write it ({exc.strerror})"
    if stat.S_ISLNK(mode):
        return None
    problem = _mode_problem(mode)
    if problem is not None:
        return f"{problem}; refusing to write to it"
    if in_place and not os.access(path, os.R_OK | os.W_OK):
        return "is not readable and writable (resuming reads it, adding lines writes to it)"
    return None


def _folder_problem(path: str | os.PathLike[str]) -> str | None:
    """Why a new file cannot be made at ``path`` (its missing folders are made by the writer)."""
    ancestor = Path(path).parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        return f"cannot create it, {ancestor} is a file, not a directory"
    if not os.access(ancestor, os.W_OK | os.X_OK):
        read_only = hasattr(os, "statvfs") and os.statvfs(ancestor).f_flag & os.ST_RDONLY
        return f"cannot create it, {ancestor} is not writable" + (f" ({os.strerror(errno.EROFS)})" if read_only else "")
    return None


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
            try:
                data = b"\n".join(map(str.encode, self._buffer))
            except UnicodeEncodeError as exc:  # a lone surrogate: the reader would refuse the line
                self._buffer.clear()
                raise CourseError(f"{self.path}: {unwritable(exc)}") from None
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


class _InputFile(io.FileIO):
    """The raw file under every reader ``open_input`` returns: a failed read names the file.

    The operating system reports a read error (``EIO`` from ``/proc/self/mem``, a bad disk, a
    network file system gone away) without a path, and Python's ``OSError`` then has none: the
    tool's one line would say ``error: Input/output error`` and nothing else. Only
    the raw reads are wrapped (one per buffer of ``_BUFFER`` bytes), so the reader loop's per-line
    ``readline`` stays in C and costs nothing more.
    """

    _course_path: str

    def readinto(self, buffer: Any) -> int | None:
        try:
            return super().readinto(buffer)
        except OSError as exc:
            raise _naming(exc, self._course_path) from None

    def readall(self) -> bytes:
        try:
            return super().readall()
        except OSError as exc:
            raise _naming(exc, self._course_path) from None

    # FileIO.read's own signature, which typeshed's IO.read states otherwise
    def read(self, size: int = -1) -> bytes | None:  # type: ignore[override]
        try:
            return super().read(size)
        except OSError as exc:
            raise _naming(exc, self._course_path) from None


def _naming(exc: OSError, path: str) -> OSError:
    """``exc`` with ``path`` as its file name if it had none (the same errno, so the same subclass)."""
    return exc if exc.filename is not None else OSError(exc.errno, exc.strerror, path)


_BUFFER = 1 << 16  # bytes per raw read of an input (readline serves lines from it in C)


def open_input(path: str | os.PathLike[str], expected: str = "a JSONL file", *, limit: int | None = None) -> IO[bytes]:
    """Open a regular file for reading in binary; ``CourseError`` naming what it is otherwise.

    The file is opened with ``O_NONBLOCK`` and checked with ``fstat`` on the
    descriptor itself, so a FIFO (which would wait forever for a writer),
    ``/dev/zero`` (which never ends) or a directory is refused at once, and a
    file swapped between a check and the open cannot slip through. With
    ``limit``, a file larger than ``limit`` bytes is refused before any read.
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise CourseError(
            f"{path}: no such file" + ("" if expected == "a JSONL file" else f" (expected {expected})")
        ) from None
    except IsADirectoryError:  # pragma: no cover - Linux opens directories read-only; other systems may not
        raise CourseError(f"{path}: is a directory, expected {expected}") from None
    except OSError as exc:
        raise CourseError(f"{path}: cannot read ({exc.strerror}), expected {expected}") from None
    try:
        info = os.fstat(fd)
        problem = _mode_problem(info.st_mode)
        if problem is not None:
            raise CourseError(f"{path}: {problem}, expected {expected}")
        if limit is not None and info.st_size > limit:
            raise too_large(path, limit, expected)
        os.set_blocking(fd, True)
        raw = _InputFile(fd, "rb", closefd=True)
    except BaseException:
        os.close(fd)
        raise
    raw._course_path = os.fspath(path)
    # _InputFile is a FileIO; typeshed's bound on the raw stream misses subclasses
    return io.BufferedReader(raw, _BUFFER)  # type: ignore[type-var]


def too_large(path: Any, limit: int, expected: str) -> CourseError:
    """The error for an input larger than a reader takes."""
    return CourseError(f"{path}: more than {limit:,} bytes, larger than any "
                       f"{expected.removeprefix('a ').removeprefix('an ').removeprefix('the ')} the course reads; "
                       "refusing to read it")


def read_input(path: str | os.PathLike[str], expected: str, limit: int | None = None) -> bytes:
    """The whole of a regular file of at most ``limit`` bytes (default ``MAX_READ``; ``open_input``'s
    rules; never more is read)."""
    limit = MAX_READ if limit is None else limit
    with open_input(path, expected, limit=limit) as f:
        data = f.read(limit + 1)  # the file may have grown since fstat
    if len(data) > limit:
        raise too_large(path, limit, expected)
    return data


def read_stream(stream: IO[bytes], name: str, expected: str, limit: int | None = None) -> bytes:
    """At most ``limit`` bytes of an open stream (standard input: a pipe, a terminal, a
    redirected file or device), refused with one line once it holds more: ``/dev/zero`` on
    standard input stops at the cap instead of filling memory."""
    limit = MAX_READ if limit is None else limit
    chunks: list[bytes] = []
    size = 0
    while True:
        block = stream.read(min(1 << 20, limit + 1 - size))
        if not block:
            return b"".join(chunks)
        chunks.append(block)
        size += len(block)
        if size > limit:
            raise too_large(name, limit, expected)


def line_ends(path: str | os.PathLike[str]) -> tuple[int, int, int]:
    """``(complete lines, bytes up to the last newline, size)`` of a regular file, read in 1 MiB
    blocks through ``open_input`` (memory stays one block, whatever the file's size)."""
    lines = cut = size = 0
    with open_input(path) as f:
        for block in iter(partial(f.read, 1 << 20), b""):
            newlines = block.count(b"\n")
            if newlines:
                lines += newlines
                cut = size + block.rfind(b"\n") + 1
            size += len(block)
    return lines, cut, size


def input_lines(f: IO[bytes]) -> Iterator[bytes]:
    """The lines of an opened input, each cut at ``MAX_READ + 1`` bytes (``parse_line`` refuses
    such a line): memory stays bounded even for a file with no newline at all. A C-level
    iterator, so the cap costs the reader loop nothing measurable."""
    return iter(partial(f.readline, MAX_READ + 1), b"")


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


def _object(pairs: list[tuple[str, Any]], dict: type = dict, len: Callable[[Any], int] = len) -> dict[str, Any]:
    """Build a JSON object, refusing a key it holds twice (the standard library keeps the last silently).

    The one Python call per object is the whole cost of the check (benchmarks/bench_eval.py)."""
    obj = dict(pairs)
    if len(obj) == len(pairs):
        return obj
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            break
        seen.add(key)
    shown = repr(key[:60]) + ("..." if len(key) > 60 else "")
    raise ValueError(f"the key {shown} appears twice in one object (which value is meant is ambiguous)")


class _Floats(dict):
    """A float literal's value, refusing one too large for a float (``1e999`` reads as infinity).

    Used as ``parse_float=_Floats().__getitem__``: a literal seen before is a C-level dict hit
    (the values in a course file repeat: 0.0, 1.0, 0.8), so the check costs almost nothing."""

    def __missing__(self, literal: str) -> float:
        value = float(literal)
        if value - value != 0:  # inf - inf is nan; parse_constant already refuses NaN/Infinity
            shown = literal if len(literal) <= 40 else literal[:37] + "..."
            raise ValueError(f"the number {shown} is too large for a float (it would read as infinity)")
        if len(self) < 4096:
            self[literal] = value
        return value


_DECODER = json.JSONDecoder(
    parse_constant=_reject_constant, object_pairs_hook=_object, parse_float=_Floats().__getitem__
)
_raw_decode = _DECODER.raw_decode
# The same rules, with every number that has a fraction or an exponent read as the ``Decimal`` its
# text states (``1e23`` is exactly 10**23, ``9007199254740993.0`` exactly that integer), for a
# reader that must know which integer a number's text means before a float rounds it
# (``course.lib.external.dataset_readers``: answers). Never the fast path (orjson reads floats).
_EXACT_DECODER = json.JSONDecoder(
    parse_constant=_reject_constant, object_pairs_hook=_object, parse_float=decimal.Decimal
)
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
    """The JSON kind of a value, in words, for an error message: the one wording every reader uses.

    A boolean is named as one (JSON's ``true`` is not the integer 1). A float that is not finite is
    named too: the readers refuse NaN and Infinity, but a value built in Python can hold one.
    ``course.instrument.spec_v1._type_name`` stays apart: the instrument imports nothing from lib, its
    details are versioned, and a comment there would change its bytes, which are the scorer fingerprint.

    >>> [json_kind(v) for v in (None, True, 3, "3", [3], {})]
    ['null', 'a boolean', 'an integer', 'a string', 'an array', 'an object']
    >>> [json_kind(v) for v in (2.5, float("inf"), float("nan"))]
    ['a number with a fraction or exponent', 'an infinite number', 'NaN, not a number']
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, (float, decimal.Decimal)):  # a Decimal: a number read with exact_numbers=True
        exact = isinstance(value, decimal.Decimal)
        # `exact` says it is a Decimal; mypy does not narrow through a bool
        if value.is_nan() if exact else math.isnan(value):  # type: ignore[union-attr]
            return "NaN, not a number"
        # `exact` says it is a Decimal; mypy does not narrow through a bool
        if not (value.is_finite() if exact else math.isfinite(value)):  # type: ignore[union-attr]
            return "an infinite number"
        return "a number with a fraction or exponent"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__  # pragma: no cover - JSON has no other kinds


# ---------------------------------------------------------------------------
# The fast path (orjson, when installed): the same verdicts and values, sooner
# ---------------------------------------------------------------------------
_fast_on = True  # False: orjson is not installed, or use_fast_decoder(False)
_orjson_loads: Callable[[bytes], Any] | None = None
_orjson_dumps: Callable[[Any], bytes] | None = None
_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
_NINETEEN_DIGITS = b"0" * 19  # after _DIGITS_AS_ZERO: 19 digits in a row, perhaps an integer beyond 64 bits
# JSON nested deeper than MAX_DEPTH needs more bytes than this (each level opens and closes)
_DEEP_LINE = 2 * MAX_DEPTH + 1


def use_fast_decoder(enabled: bool = True) -> bool:
    """Read lines with orjson first (when it is installed) or with the standard library only;
    returns whether the fast path is on. Imported on first use: ``--help`` never pays for it."""
    global _fast_on, _orjson_loads, _orjson_dumps
    _fast_on = False
    if enabled:
        try:
            import orjson
        except ImportError:
            return False
        _orjson_loads, _orjson_dumps = orjson.loads, orjson.dumps
        _fast_on = True
    return _fast_on


def _fast_object(raw: bytes) -> dict[str, Any] | None:
    """The line's object as orjson reads it, where that is certainly what the standard library
    reads; None where only the standard library's reading may decide (and every refusal).

    The rules orjson does not share, each checked without leaving C code:
      * a ``\\u`` escape: a lone surrogate (refused here) and the colon count below;
      * 19 digits in a row: orjson reads an integer beyond 64 bits as a float, Python exactly;
      * more than ``MAX_DEPTH`` brackets: orjson nests up to 1024 levels, the course refuses 101;
      * a repeated key, which orjson drops silently: a line has one colon outside strings per
        member, and orjson writes the parsed object back with one per member left, so with no
        escape in the line the colons inside strings are the same on both sides: the counts
        differ exactly when a member was dropped.
    """
    loads = _orjson_loads
    if loads is None:
        if not use_fast_decoder():
            return None
        loads = _orjson_loads
    if ((b"\\" in raw and b"\\u" in raw)  # one byte is found faster than two: escapes are rare
            or (len(raw) > _DEEP_LINE and raw.count(b"[") + raw.count(b"{") > MAX_DEPTH)
            or _NINETEEN_DIGITS in raw.translate(_DIGITS_AS_ZERO)):
        return None
    try:
        value = loads(raw)  # type: ignore[misc]  # loads is orjson's whenever use_fast_decoder() said yes
        if type(value) is not dict or raw.count(b":") != _orjson_dumps(value).count(b":"):  # type: ignore[misc]  # orjson's, as loads
            return None
    except (ValueError, TypeError):  # orjson.JSONDecodeError, orjson.JSONEncodeError
        return None
    return value


def parse_line(raw: bytes, path: Any, lineno: int, *, exact_numbers: bool = False) -> dict[str, Any]:
    """One JSONL line (bytes, with or without its ``\\n``) as a checked JSON object, or ``CourseError``.

    With ``exact_numbers`` a number with a fraction or an exponent is the ``decimal.Decimal`` its
    text states, not the nearest float (``_EXACT_DECODER``)."""
    if len(raw) > MAX_READ:  # input_lines cut it there: the rest of the line was never read
        raise CourseError(f"{path}:{lineno}: a line longer than {MAX_READ:,} bytes, more than any line of a course "
                          "file; refusing to read it")
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
    if _fast_on and not exact_numbers:
        value = _fast_object(raw)
        if value is not None:
            return value
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
        decoder = _EXACT_DECODER if exact_numbers else _DECODER
        value, end = decoder.raw_decode(text)
        rest = len(text) - end  # usually 1 (the "\n") or 0 (a last line without one)
        if rest and (rest > 1 or text[end] != "\n") and text[end:].strip(_JSON_SPACE):
            value = decoder.decode(text)
    except json.JSONDecodeError:
        value = _decode_slowly(text, path, lineno, decoder)
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


def _decode_slowly(text: str, path: Any, lineno: int, decoder: json.JSONDecoder = _DECODER) -> Any:
    """``JSONDecoder.decode`` (which skips leading whitespace), every error as a ``CourseError``."""
    try:
        return decoder.decode(text)
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
    path: str | os.PathLike[str], check: Callable[[dict[str, Any], Any, int], None] | None = None,
    *, exact_numbers: bool = False,
) -> Generator[tuple[int, dict[str, Any]], None, None]:
    """Yield ``(line_number, object)`` for every line of a JSONL file, checking the
    file-level rules (regular file, encoding, BOM, CRLF, blank lines, JSON, depth,
    surrogates, one object per line, not empty).

    ``check(obj, path, line)``, if given, is a format's field and per-file rules
    (``course.lib.records.formats``); it raises ``CourseError`` to refuse the line.
    Reads one line at a time: memory is one line, whatever the file size. With ``exact_numbers``,
    a number with a fraction or an exponent is the ``Decimal`` its text states (``parse_line``).
    """
    with open_input(path) as f:
        lineno = 0
        for raw in input_lines(f):
            lineno += 1
            obj = parse_line(raw, path, lineno, exact_numbers=exact_numbers)
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
    data = read_input(path, f"the {what}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise CourseError(f"{path}: the {what} is not valid UTF-8") from None
    return loads_document(text, path, what)


def loads_document(text: str, path: Any, what: str) -> dict[str, Any]:
    """One JSON object given as text (a document's contents, or ``--sampling`` on the command line),
    with every rule of ``read_json``: ``CourseError`` naming ``path`` (and the line, when known)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a raw surrogate (bytes that were not UTF-8, decoded with surrogateescape)
        raise CourseError(f"{path}: the {what} holds characters that are not Unicode text (bytes that "
                          "were not UTF-8)") from None
    deep = too_deep_at(text)
    if deep is not None:
        line = text.count("\n", 0, deep) + 1
        raise CourseError(f"{path}:{line}: the {what} is not valid JSON: {_deep_message()}")
    try:
        value = _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        raise CourseError(f"{path}:{exc.lineno}: the {what} is not valid JSON: {exc.msg} (column "
                          f"{exc.colno})") from None
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

    raise SystemExit(not_a_tool("course.lib.records.jsonl"))
