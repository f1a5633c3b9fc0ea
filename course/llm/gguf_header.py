"""A GGUF file's header, read within the file's own bounds before any library parses it.

A GGUF file (llama.cpp's format, the packaged SmolLM2's) is a header, then the tensors' bytes:

    "GGUF", version (uint32), tensor count (uint64), key/value count (uint64)
    key/value pairs: key (uint64 length + UTF-8), value type (uint32), value (numbers, strings, arrays)
    tensor infos: name, dimension count (uint32), dimensions (uint64 each), type (uint32), offset (uint64)
    padding to the alignment (``general.alignment``, default 32), then the tensors' data

Every count and length in it is the file's word. ``gguf.GGUFReader`` and ``transformers`` trust
that word: a header claiming 2**62 tensors, or a key 2**60 bytes long, or a file cut short,
reaches them as a ``struct.error``, a numpy error or an allocation of exabytes. ``read_header``
walks the header itself first, checking each count against the bytes actually left before it
reads a thing, and each tensor's data against the end of the file, so a malformed file is one
``CourseError`` naming it (``path: not a GGUF model: ...``) before any library sees it.

What it returns is also a second, independent witness of what the file holds: the small
metadata values (the chat template, the architecture's sizes, the token list), which
``course.llm.load`` checks the de-quantised cache against (the cache is then not trusted on
its own word).

    header = read_header(Path("model.gguf"))
    header.fields["tokenizer.chat_template"], header.tensors["token_embd.weight"]
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from course.errors import CourseError
from course.lib.records.jsonl import open_input

MAGIC = b"GGUF"
VERSIONS = (2, 3)
MAX_DIMS = 4  # ggml's GGML_MAX_DIMS
DEFAULT_ALIGNMENT = 32
# value type -> (struct code, size) for the fixed-size scalars; 8 = string, 9 = array
_SCALARS = {0: ("B", 1), 1: ("b", 1), 2: ("H", 2), 3: ("h", 2), 4: ("I", 4), 5: ("i", 4), 6: ("f", 4), 7: ("?", 1),
            10: ("Q", 8), 11: ("q", 8), 12: ("d", 8)}
_STRING, _ARRAY = 8, 9
_MIN_KV = 8 + 4 + 1  # the smallest key/value pair: an empty key, a type, a one-byte value
_MIN_TENSOR = 8 + 4 + 4 + 8  # the smallest tensor info: an empty name, no dimensions, a type, an offset


@dataclass(frozen=True)
class GGUFHeader:
    """What a GGUF header says: its version, metadata and tensors (name -> (shape, ggml type number))."""

    version: int
    fields: dict[str, Any]
    tensors: dict[str, tuple[tuple[int, ...], int]]


class _Malformed(Exception):
    """Raised inside the walk; ``read_header`` turns it into one ``CourseError`` naming the file."""


class _Cursor:
    def __init__(self, data: Any) -> None:
        self.data, self.pos, self.end = data, 0, len(data)

    def left(self) -> int:
        return self.end - self.pos

    def take(self, n: int, what: str) -> Any:
        if n < 0 or n > self.left():
            raise _Malformed(f"{what} needs {n:,} bytes at byte {self.pos:,}, "
                             f"but the file ends {self.left():,} bytes later "
                             "(truncated, or a length that is not one)")
        start = self.pos
        self.pos += n
        return self.data[start : self.pos]

    def unpack(self, code: str, size: int, what: str) -> Any:
        return struct.unpack("<" + code, self.take(size, what))[0]

    def count(self, what: str, each: int) -> int:
        """A uint64 count of things of at least ``each`` bytes: at most what the rest of the file can hold."""
        n = self.unpack("Q", 8, what)
        room = self.left() // each
        if n > room:
            raise _Malformed(f"the header claims {n:,} {what}, "
                             f"but the {self.left():,} bytes left hold at most {room:,}")
        return n

    def string(self, what: str) -> str:
        n = self.unpack("Q", 8, f"the length of {what}")
        raw = self.take(n, what)
        try:
            return bytes(raw).decode("utf-8")
        except UnicodeDecodeError:
            raise _Malformed(f"{what} is not UTF-8 text") from None

    def value(self, kind: int, what: str) -> Any:
        if kind in _SCALARS:
            code, size = _SCALARS[kind]
            return self.unpack(code, size, what)
        if kind == _STRING:
            return self.string(what)
        if kind == _ARRAY:
            item = self.unpack("I", 4, f"the item type of {what}")
            if item in _SCALARS:
                code, size = _SCALARS[item]
                n = self.count(f"items of {what}", size)
                return list(struct.unpack(f"<{n}{code}", self.take(n * size, what)))
            if item == _STRING:
                n = self.count(f"items of {what}", 8)
                return [self.string(f"item {i} of {what}") for i in range(n)]
            raise _Malformed(f"{what}: arrays of type {item} are not part of GGUF (nested arrays are not read)")
        raise _Malformed(f"{what}: unknown value type {kind}")


def read_header(path: Path) -> GGUFHeader:
    """The header of the GGUF file at ``path``, every length checked against the file (``CourseError`` otherwise)."""
    with open_input(path, "a GGUF model file") as f:  # the one opener: a FIFO or a device is refused, never waited on
        size = f.seek(0, 2)
        if size < 4 + 4 + 8 + 8:
            raise CourseError(f"{path}: not a GGUF model: {size} bytes, shorter than a GGUF header")
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            try:
                return _walk(data)
            except _Malformed as exc:
                raise CourseError(f"{path}: not a GGUF model: {exc}") from None


def _walk(data: Any) -> GGUFHeader:
    from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType

    c = _Cursor(data)
    if bytes(c.take(4, "the magic")) != MAGIC:
        raise _Malformed("it does not start with the bytes GGUF")
    version = c.unpack("I", 4, "the version")
    if version not in VERSIONS:
        raise _Malformed(f"GGUF version {version}; versions {', '.join(map(str, VERSIONS))} are read")
    n_tensors = c.unpack("Q", 8, "the tensor count")
    n_kv = c.count("key/value pairs", _MIN_KV)
    if n_tensors > c.left() // _MIN_TENSOR:
        raise _Malformed(f"the header claims {n_tensors:,} tensors, but the {c.left():,} bytes left hold at most "
                         f"{c.left() // _MIN_TENSOR:,}")
    fields: dict[str, Any] = {}
    for i in range(n_kv):
        key = c.string(f"key {i}")
        kind = c.unpack("I", 4, f"the type of {key!r}")
        if key in fields:
            raise _Malformed(f"the key {key!r} appears twice")
        fields[key] = c.value(kind, repr(key))
    tensors: dict[str, tuple[tuple[int, ...], int]] = {}
    placed: list[tuple[int, int, str]] = []
    for i in range(n_tensors):
        name = c.string(f"the name of tensor {i}")
        n_dims = c.unpack("I", 4, f"the dimension count of {name!r}")
        if not 1 <= n_dims <= MAX_DIMS:
            raise _Malformed(f"tensor {name!r} has {n_dims} dimensions (GGUF allows 1 to {MAX_DIMS})")
        shape = tuple(c.unpack("Q", 8, f"a dimension of {name!r}") for _ in range(n_dims))
        kind = c.unpack("I", 4, f"the type of {name!r}")
        offset = c.unpack("Q", 8, f"the offset of {name!r}")
        try:
            block, block_bytes = GGML_QUANT_SIZES[GGMLQuantizationType(kind)]
        except (ValueError, KeyError):
            raise _Malformed(f"tensor {name!r} has unknown type {kind}") from None
        elements = 1
        for d in shape:
            elements *= d
        if elements % block:
            raise _Malformed(f"tensor {name!r}: {elements:,} elements do not fill blocks of {block}")
        if name in tensors:
            raise _Malformed(f"the tensor {name!r} appears twice")
        tensors[name] = (tuple(reversed(shape)), kind)  # GGUF lists dimensions fastest-first; shown as numpy does
        placed.append((offset, elements // block * block_bytes, name))
    alignment = fields.get("general.alignment", DEFAULT_ALIGNMENT)
    if type(alignment) is not int or alignment < 1 or alignment & (alignment - 1):
        raise _Malformed(f"general.alignment {alignment!r} is not a power of two")
    start = -(-c.pos // alignment) * alignment
    for offset, nbytes, name in placed:
        if offset % alignment or start + offset + nbytes > c.end:
            raise _Malformed(f"tensor {name!r} ({nbytes:,} bytes at data offset {offset:,}) lies beyond the end of the "
                             f"file ({c.end:,} bytes): truncated")
    return GGUFHeader(version, fields, tensors)


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.llm.gguf_header"))
