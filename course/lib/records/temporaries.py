"""The temporaries this project makes beside a user's files, and the only code that ever removes one.

Every output appears at once (the atomic-write rule): a run directory, a report, an imported
dataset is first written into a hidden temporary beside its final name, then renamed into place.
Those temporaries sit in the user's own folders (``--outdir ~/myrun`` puts them in the home
directory), so this module owns one strict rule for them (a cleaner keyed on names alone would delete a
user's ``.config.old`` or rename ``.notes.old-31337`` to ``notes``):

* **The marker comes first.** A temporary is always a folder, ``.NAME.tmp`` (the output being
  written) or ``.NAME.old`` (a run that ``--force`` moved aside), created with an exclusive
  ``mkdir``; the first thing written into it, before anything else, is its ownership marker
  ``.owner``: one JSON line naming this project, the host, the process id, ``NAME`` and the kind.
  A single file is written as ``.NAME.tmp/NAME`` and renamed out (``atomic_file``), so files and
  run directories obey the same rule.
* **Only a marked folder is ever touched.** ``clean_stale`` removes a temporary (or, for a run moved
  aside by a killed ``--force``, puts the run back) only when its marker is this project's, names
  that very folder, was written on this host and its process is gone. A folder without a marker
  is left exactly as it is, whatever its name or age: ``.config.old``, ``.cache.tmp``,
  ``.photos.tmp-2019``, a ``.thesis.old`` holding a ``run`` folder. A run that needs such a name
  stops before any work with one line saying so. The ``.NAME.tmp-PID``/``.NAME.old-PID`` folders of
  the first versions (before markers) are left alone too: by name alone they cannot be told apart
  from a user's.
* **Claimed before removed.** A stale folder is first renamed to a name of its own
  (``.NAME.tmp.gone-PID``) and checked to be the very folder that was judged (same inode and the
  same marker of a process still gone: a freed inode number is reused at once on ext4 and tmpfs),
  so a cleaner racing another never removes a folder a live run has just made under the freed name.
  Removal deletes the marker last, so a cleaner killed half-way leaves a folder still marked, which
  the next cleaner finishes.
* **Known limits.** A process id reused by a live process keeps its dead owner's folder until that
  process ends (never the reverse). A process killed between ``mkdir`` and the marker write (a few
  microseconds) leaves an empty unmarked folder, which is then treated as the user's: the run that
  needs the name says so and nothing is removed.

Errors name the user's path, never a temporary's (``user_path`` maps one back). ``hold``/``release``
let SIGTERM and SIGHUP unwind through the ``finally`` blocks while a temporary exists.

    with atomic_file("runs/report.html") as tmp:  # tmp is runs/.report.html.tmp/report.html
        tmp.write_text(page, encoding="utf-8")
    # here runs/report.html holds the whole page, and runs/.report.html.tmp is gone
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import socket
import stat
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from course.errors import CourseError
from course.lib.records.jsonl import encode_text, loads_document, open_input, output_problem, pretty_bytes
from course.lib.records.manifest import MARKER, MARKER_FIELD

OWNER_FILE = ".owner"
KINDS = ("tmp", "old")
# .NAME.tmp / .NAME.old, and the name a cleaner gives one it has claimed: .NAME.tmp.gone-PID
_FOLDER = re.compile(r"^\.(?P<name>.+)\.(?P<kind>tmp|old)(?:\.gone-(?P<claimer>[0-9]+))?$")
_MARKER_BYTES = 4096  # a marker is one short line; anything longer is not one


# ===========================================================================
# The marker
# ===========================================================================
@dataclass(frozen=True)
class Owner:
    """What a temporary's marker records. ``name``/``kind`` are None in the first markers
    (``rl-foundations-llm HOST PID``), which the folder's own name then supplies."""

    host: str
    pid: int
    name: str | None
    kind: str | None


def _marker_line(name: str, kind: str) -> bytes:
    record = {MARKER_FIELD: MARKER, "host": socket.gethostname(), "pid": os.getpid(), "name": name, "kind": kind}
    # ensure_ascii: a NAME that is not UTF-8 (surrogate-escaped bytes) is still written exactly.
    return (json.dumps(record, sort_keys=True, ensure_ascii=True) + "\n").encode("ascii")


def read_owner(folder: str | os.PathLike[str]) -> Owner | None:
    """The marker of ``folder`` if it is one this project wrote, else None (never blocks, never raises)."""
    path = Path(folder) / OWNER_FILE
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return None
        with open_input(path, "an owner marker", limit=_MARKER_BYTES) as f:
            text = f.read(_MARKER_BYTES).decode("ascii")
    except (OSError, CourseError, UnicodeDecodeError):
        return None
    if text.startswith("{"):
        try:  # the project's one JSON reader: a marker nested 3,000 deep is refused, never a RecursionError
            data = loads_document(text, path, "owner marker")
        except CourseError:
            return None
        if not (isinstance(data, dict) and data.get(MARKER_FIELD) == MARKER and isinstance(data.get("host"), str)
                and type(data.get("pid")) is int and isinstance(data.get("name"), str) and data.get("kind") in KINDS):
            return None
        return Owner(data["host"], data["pid"], data["name"], data["kind"])
    fields = text.split()  # the first markers: "rl-foundations-llm HOST PID"
    if len(fields) == 3 and fields[0] == MARKER and fields[2].isdigit():
        return Owner(fields[1], int(fields[2]), None, None)
    return None


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    except (OSError, OverflowError):
        return False
    return True


def owned(folder: str | os.PathLike[str]) -> Owner | None:
    """The marker of ``folder`` if the folder is a temporary of this project: a real directory
    named ``.NAME.KIND`` (or claimed, ``.NAME.KIND.gone-PID``) whose marker names that NAME and KIND."""
    p = Path(folder)
    m = _FOLDER.match(p.name)
    if m is None or p.is_symlink() or not p.is_dir():
        return None
    owner = read_owner(p)
    if owner is None:
        return None
    if owner.name is None:  # a first-version marker names no folder: the folder's own name stands
        return owner
    return owner if (owner.name, owner.kind) == (m.group("name"), m.group("kind")) else None


def holder(folder: str | os.PathLike[str]) -> str:
    """Who holds ``folder``, for a message: ``"process 123"``, or words saying it is not this project's."""
    owner = owned(folder)
    if owner is None:
        return "not this project's (it carries no owner marker)"
    return f"process {owner.pid}" + ("" if owner.host == socket.gethostname() else f" on {owner.host}")


# ===========================================================================
# Making and removing one
# ===========================================================================
def make(final: str | os.PathLike[str], kind: str = "tmp") -> Path:
    """Create the temporary ``.NAME.KIND`` beside ``final`` and write its marker before anything else.

    ``FileExistsError`` if the name is taken (the caller decides: clean, skip or refuse);
    other ``OSError``s as the file system gives them. Nothing is left behind on failure.
    """
    final = Path(final)
    folder = final.parent / f".{final.name}.{kind}"
    os.mkdir(folder)
    try:
        fd = os.open(folder / OWNER_FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
        try:
            os.write(fd, _marker_line(final.name, kind))
        finally:
            os.close(fd)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    _USER_NAMES[os.path.abspath(folder)] = os.fspath(final)
    return folder


def remove(folder: str | os.PathLike[str]) -> None:
    """Delete a temporary of this project, its marker last (a removal cut short stays marked). Never raises."""
    p = Path(folder)
    try:
        with os.scandir(p) as listing:
            children = list(listing)
    except OSError:
        return
    for child in children:
        if child.name == OWNER_FILE:
            continue
        try:
            if child.is_dir(follow_symlinks=False):
                shutil.rmtree(child.path)
            else:
                os.unlink(child.path)
        except OSError:
            pass
    try:
        os.unlink(p / OWNER_FILE)
    except OSError:
        pass
    try:
        os.rmdir(p)
    except OSError:
        pass


def _claim(entry: Path, judged: os.stat_result, owner: Owner) -> Path | None:
    """Rename ``entry`` to a name of this process; None if what got renamed is not the folder judged
    (same inode, and the same marker of a process still gone: an inode number can be reused)."""
    claimed = entry.parent / f"{entry.name}.gone-{os.getpid()}"
    try:
        os.rename(entry, claimed)
    except OSError:
        return None  # another cleaner was first, or the name was taken again
    now = os.lstat(claimed)
    if (now.st_dev, now.st_ino) == (judged.st_dev, judged.st_ino) and read_owner(claimed) == owner \
            and not _pid_alive(owner.pid):
        return claimed
    # A live run made a new folder under the freed name between our look and our rename: give it back.
    if not os.path.lexists(entry):
        try:
            os.rename(claimed, entry)
        except OSError:
            pass
    return None


def clean_stale(parent: str | os.PathLike[str]) -> list[Path]:
    """Remove this project's temporaries in ``parent`` whose process is gone; return what was cleaned.

    A ``.NAME.old`` whose ``NAME`` no longer exists is a run a killed ``--force`` had moved aside:
    the run is put back under ``NAME`` instead of removed. Anything without this project's marker
    is never touched. Never raises: cleaning is a courtesy, not part of the run.
    """
    done: list[Path] = []
    try:
        with os.scandir(parent) as listing:
            names = sorted(e.name for e in listing if e.name.startswith(".") and _FOLDER.match(e.name))
    except OSError:
        return done
    host = socket.gethostname()
    for name in names:
        entry = Path(parent) / name
        try:
            judged = os.lstat(entry)
            owner = owned(entry)
            if owner is None or owner.host != host:
                continue  # not ours, or another machine's (its processes cannot be checked from here)
            m = _FOLDER.match(entry.name)
            assert m is not None
            claimer = m.group("claimer")
            if _pid_alive(owner.pid) or (claimer is not None and _pid_alive(int(claimer))):
                continue
            claimed = entry if claimer is not None else _claim(entry, judged, owner)
            if claimed is None:
                continue
            home = entry.parent / m.group("name")
            aside = claimed / "run"
            if m.group("kind") == "old" and not os.path.lexists(home) and aside.is_dir() and not aside.is_symlink():
                os.rename(aside, home)  # the run a killed --force had moved aside goes back
            remove(claimed)
            done.append(entry)
        except OSError:
            continue
    return done


# ===========================================================================
# Errors name the user's path
# ===========================================================================
# Absolute path of a temporary of this process (a folder, or the file inside one) -> the path the
# user gave for what it becomes. Entries stay after removal: a late error message still maps.
_USER_NAMES: dict[str, str] = {}


def user_path(path: str | os.PathLike[str]) -> str:
    """``path`` with a temporary of this process replaced by the final name it stands for.

    >>> user_path("/nowhere/else.txt")
    '/nowhere/else.txt'
    """
    text = os.fspath(path)
    absolute = os.path.abspath(text)
    for temporary, final in sorted(_USER_NAMES.items(), key=lambda kv: -len(kv[0])):
        if absolute == temporary:
            return final
        if absolute.startswith(temporary + os.sep):
            return os.path.join(final, absolute[len(temporary) + 1:])
    return text


def os_error(exc: OSError, path: str | os.PathLike[str], doing: str) -> CourseError:
    """One line for a failure of the file system: the user's path (never a temporary's), what was being done, why."""
    named = user_path(exc.filename) if exc.filename is not None else os.fspath(path)
    return CourseError(f"{named}: {doing}: {exc.strerror or exc}")


def in_user_terms(exc: CourseError) -> CourseError:
    """``exc`` with every temporary of this process named by its final path."""
    message = str(exc)
    for temporary, final in sorted(_USER_NAMES.items(), key=lambda kv: -len(kv[0])):
        for shown in sorted({temporary, os.path.relpath(temporary)}, key=len, reverse=True):
            message = message.replace(shown, final)
    return exc if message == str(exc) else CourseError(message)


# ===========================================================================
# Signals: SIGTERM/SIGHUP unwind (and clean) while a temporary exists
# ===========================================================================
_HELD: set[str] = set()
_SAVED_HANDLERS: dict[int, Any] = {}
_SIGNALS = tuple(s for s in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)) if s is not None)


def _raise_exit(signum: int, frame: Any) -> None:
    # Unwind through every `with` and `finally` (which remove the temporaries),
    # then exit with the conventional 128 + signal number.
    raise SystemExit(128 + signum)


def hold(folder: str | os.PathLike[str]) -> None:
    """Note that ``folder`` exists; while any is held, SIGTERM and SIGHUP raise ``SystemExit``."""
    _HELD.add(os.path.abspath(folder))
    if _SAVED_HANDLERS:
        return
    for sig in _SIGNALS:
        try:
            _SAVED_HANDLERS[sig] = signal.signal(sig, _raise_exit)
        except (ValueError, OSError):  # not the main thread: exceptions still clean up
            pass


def release(folder: str | os.PathLike[str]) -> None:
    """Remove ``folder`` (if still there) and forget it; the last release restores the signal handlers."""
    remove(folder)
    _HELD.discard(os.path.abspath(folder))
    if _HELD:
        return
    for sig, handler in list(_SAVED_HANDLERS.items()):
        try:
            signal.signal(sig, handler)
        except (ValueError, OSError, TypeError):
            pass
    _SAVED_HANDLERS.clear()


# ===========================================================================
# One file, atomically
# ===========================================================================
@contextmanager
def atomic_file(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path to write ``path``'s new content into; on success, rename it into place.

    A missing parent folder is created. The output is refused before anything is made if it exists
    and is not a regular file
    (a FIFO, a device, a socket, a directory: never written into, never replaced); a symbolic
    link is replaced, never written through. The temporary is ``.NAME.tmp/NAME`` (marked
    first, see above); it is removed on every exit Python can catch, and by the next writer in
    the same folder after a kill. An ``OSError`` becomes one ``CourseError`` naming ``path``.
    """
    target = Path(path)
    problem = output_problem(target)
    if problem is not None:
        raise CourseError(f"{target}: {problem}")
    parent = target.parent
    try:
        # A missing parent folder is created first, as the run writer creates runs/: the docs'
        # --out runs/x.jsonl must work in a fresh directory, where no tool has made runs/ yet.
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a file where a folder should be, read-only, ...: name the output
        raise CourseError(f"{target}: cannot write it: {exc.strerror or exc}") from None
    clean_stale(parent)
    try:
        folder = make(target)
    except FileExistsError:
        folder = parent / f".{target.name}.tmp"
        who = holder(folder)
        if who.startswith("process"):
            raise CourseError(f"{target}: another run ({who}) is writing it now; wait for it or choose "
                              "another name") from None
        raise CourseError(
            f"{target}: cannot write it: the folder {folder} is in the way and is {who}, so it was left untouched; "
            "move it away or choose another name"
        ) from None
    except OSError as exc:  # no such folder, not a directory, read-only, full: name the output, not the temporary
        raise CourseError(f"{target}: cannot write it: {exc.strerror or exc}") from None
    hold(folder)
    try:
        tmp = folder / target.name
        _USER_NAMES[os.path.abspath(tmp)] = os.fspath(target)
        try:
            yield tmp
            problem = output_problem(target)  # it may have become a FIFO while we wrote
            if problem is not None:
                raise CourseError(f"{target}: {problem}")
            os.replace(tmp, target)
        except BrokenPipeError:  # the output's reader left (`| head -2`): course.cli's rule, not a file error
            raise
        except OSError as exc:
            raise os_error(exc, target, "cannot write it (nothing was changed)") from None
        except CourseError as exc:
            raise in_user_terms(exc) from None
    finally:
        release(folder)


def write_bytes_atomic(path: str | os.PathLike[str], data: bytes) -> str:
    """Write ``data`` to ``path`` atomically (``atomic_file``); return its sha256."""
    with atomic_file(path) as tmp:
        with open(tmp, "wb") as f:
            f.write(data)
    return hashlib.sha256(data).hexdigest()


def write_text_atomic(path: str | os.PathLike[str], text: str) -> str:
    """Write UTF-8 text atomically so readers see the old file or the new one, never half of one;
    return its sha256. A lone surrogate is refused before anything is written."""
    return write_bytes_atomic(path, encode_text(text, path))


def write_json_atomic(path: str | os.PathLike[str], obj: Any) -> str:
    """Pretty, canonical JSON (``course.lib.records.jsonl.pretty_bytes``: refuses what its reader refuses),
    atomically."""
    return write_bytes_atomic(path, pretty_bytes(obj, path))


__all__ = [
    "OWNER_FILE",
    "Owner",
    "atomic_file",
    "clean_stale",
    "hold",
    "holder",
    "in_user_terms",
    "make",
    "os_error",
    "owned",
    "read_owner",
    "release",
    "remove",
    "user_path",
    "write_bytes_atomic",
    "write_json_atomic",
    "write_text_atomic",
]


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.records.temporaries"))
