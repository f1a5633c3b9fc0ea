"""The run writer: the one place a run directory is created, filled and made to appear.

A run directory (``runs/eval_001/``: manifest.json, summary.json, ...) is a
measurement; it must never be half-written, never collide with another run and
never replace something the user owns. This module guarantees it for every tool:

* **Reservation at the start.** ``resolve_outdir`` (or ``atomic_run_dir``) reserves
  the destination with an exclusive ``mkdir`` of a hidden temporary sibling
  ``.NAME.tmp`` holding an owner file (``.owner``: this project's marker and the pid).
  Default names (``runs/<prefix>_NNN``) skip every name that exists *or* is reserved,
  so concurrent runs without ``--outdir`` get distinct names; a second run aimed at
  the same ``--outdir`` fails at once instead of after its work.
* **One moment of appearance.** The tool writes into the temporary directory; the
  final ``rename`` is the only moment the run appears under its name.
* **Nothing left behind.** Every exit path that Python can catch (an exception,
  Ctrl-C, SIGTERM, SIGHUP, ``sys.exit``) removes the temporary directory: while a
  reservation is held, SIGTERM/SIGHUP raise ``SystemExit(128 + signal)`` so the
  context managers unwind. A process killed with SIGKILL cannot clean up; the next
  run in the same parent directory removes temporary directories whose owner
  process is dead (and restores an old run a killed ``--force`` had moved aside).
* **--force replaces only runs.** ``is_project_run`` decides: the directory holds a
  ``manifest.json`` written by this project. Anything else (a user's folder with
  notes) is refused with one line, untouched. The old run is replaced only after
  the new one is complete; if the swap fails the old run is put back.
* **OS errors carry their path.** A failure of the file system (read-only, disk
  full, name too long, a file where a directory should be) becomes one
  ``CourseError`` line naming the path and the cause; nothing partial is left.
* **No NaN in a run.** ``write_json`` refuses NaN and infinity (``allow_nan=False``),
  the last line of defence behind the CLI's argument types.

Usage inside a tool::

    final = resolve_outdir(args.outdir, force=args.force, prefix="eval")  # reserves; fails before any work
    with atomic_run_dir(final, force=args.force, prefix="eval") as tmp:
        write_summary(tmp, summary, markdown)
        write_manifest(tmp, {**environment("course.eval", argv), ...})   # last
    # here the directory exists under its final name
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import re
import shutil
import signal
import socket
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

from course.errors import CourseError
from course.lib.manifest import MARKER, MARKER_FIELD

RUNS_ROOT = Path("runs")
OWNER_FILE = ".owner"
# Hidden siblings this module creates: .NAME.tmp (the run being written) and .NAME.old (the run
# a --force is replacing). Earlier versions used .NAME.tmp-PID / .NAME.old-PID: cleaned the same way.
_HIDDEN = re.compile(r"^\.(?P<name>.+)\.(?P<kind>tmp|old)(?:-(?P<pid>\d+))?$")
# A reservation without an owner file (the process died between mkdir and writing it) is stale
# once older than this many seconds.
_ORPHAN_GRACE_S = 60.0


# ===========================================================================
# Recognising a run of this project (the --force rule)
# ===========================================================================
def is_project_run(path: str | os.PathLike[str]) -> bool:
    """True if ``path`` is a directory this project wrote as a run, so ``--force`` may replace it.

    The rule: a real directory (not a symlink) whose ``manifest.json`` is a regular file
    holding a JSON object that either carries the marker ``"written_by": "rl-foundations-llm"``
    (every manifest since this module exists) or was written by an earlier version of the
    project: ``"tool"`` is a string starting with ``course.`` and ``"course_version"`` is a
    string (what ``course.lib.manifest.environment`` always wrote). A ``course.tinylm.sweep``
    directory from before sweeps had a manifest is recognised by its ``sweep.csv`` and its
    ``beta_*`` sub-runs, each a recognised run.
    """
    p = Path(path)
    if p.is_symlink() or not p.is_dir():
        return False
    manifest = p / "manifest.json"
    if not os.path.lexists(manifest) and (p / "sweep.csv").is_file():
        # course.tinylm.sweep wrote no top-level manifest before this module: a sweep is
        # recognised by its table and its per-beta runs, each a recognised run.
        subs = [s for s in p.iterdir() if s.name.startswith("beta_")]
        return bool(subs) and all(is_project_run(s) for s in subs)
    if manifest.is_symlink() or not manifest.is_file():
        return False
    try:
        if manifest.stat().st_size > 64 << 20:
            return False
        data = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return False
    if not isinstance(data, dict):
        return False
    if data.get(MARKER_FIELD) == MARKER:
        return True
    tool, version = data.get("tool"), data.get("course_version")
    return isinstance(tool, str) and tool.startswith("course.") and isinstance(version, str)


# ===========================================================================
# Stale temporary directories of dead processes
# ===========================================================================
def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    except OSError:
        return False
    return True


def _owner_pid(entry: Path) -> int | None:
    """The pid recorded in a reservation's owner file (None if absent or unreadable)."""
    try:
        text = (entry / OWNER_FILE).read_text(encoding="utf-8")
    except OSError:
        return None
    fields = text.split()
    if len(fields) >= 3 and fields[0] == MARKER and fields[1] == socket.gethostname():
        try:
            return int(fields[2])
        except ValueError:
            return None
    return None


def _is_stale(entry: Path, legacy_pid: str | None) -> bool:
    import time

    if legacy_pid is not None:
        return not _pid_alive(int(legacy_pid))
    pid = _owner_pid(entry)
    if pid is not None:
        return not _pid_alive(pid)
    if (entry / OWNER_FILE).exists():  # another host's or unreadable: not ours to judge
        return False
    try:
        return time.time() - entry.lstat().st_mtime > _ORPHAN_GRACE_S
    except OSError:
        return False


def clean_stale(parent: str | os.PathLike[str]) -> list[Path]:
    """Remove the temporary directories left in ``parent`` by runs whose process is dead.

    A ``.NAME.old`` whose ``NAME`` no longer exists is a run a killed ``--force`` had moved
    aside: it is renamed back instead of removed. Returns the entries removed or restored.
    Never raises: cleaning is a courtesy, not part of the run.
    """
    done: list[Path] = []
    try:
        entries = sorted(Path(parent).iterdir())
    except OSError:
        return done
    for entry in entries:
        m = _HIDDEN.match(entry.name)
        if not m or entry.is_symlink() or not entry.is_dir():
            continue
        try:
            if not _is_stale(entry, m.group("pid")):
                continue
            home = entry.parent / m.group("name")
            if m.group("kind") == "old" and not os.path.lexists(home):
                if m.group("pid") is not None:  # earlier versions moved the run itself aside
                    os.rename(entry, home)
                elif (entry / "run").is_dir():
                    os.rename(entry / "run", home)
                    shutil.rmtree(entry)
                else:
                    shutil.rmtree(entry)
            else:
                shutil.rmtree(entry)
            done.append(entry)
        except OSError:
            continue
    return done


# ===========================================================================
# Reservations and the signal handlers that unwind them
# ===========================================================================
@dataclass
class _Reservation:
    final: Path
    tmp: Path
    force: bool


_PENDING: dict[str, _Reservation] = {}
_SAVED_HANDLERS: dict[int, Any] = {}
_SIGNALS = tuple(s for s in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)) if s is not None)


def _raise_exit(signum: int, frame: Any) -> None:
    # Unwind through every `with` and `finally` (which remove the temporary directory),
    # then exit with the conventional 128 + signal number.
    raise SystemExit(128 + signum)


def _install_handlers() -> None:
    if _SAVED_HANDLERS:
        return
    for sig in _SIGNALS:
        try:
            _SAVED_HANDLERS[sig] = signal.signal(sig, _raise_exit)
        except (ValueError, OSError):  # not the main thread: exceptions still clean up
            pass


def _restore_handlers() -> None:
    for sig, handler in list(_SAVED_HANDLERS.items()):
        try:
            signal.signal(sig, handler)
        except (ValueError, OSError, TypeError):
            pass
    _SAVED_HANDLERS.clear()


def _key(path: Path) -> str:
    return os.path.abspath(path)


def _os_error(exc: OSError, path: Path, doing: str) -> CourseError:
    cause = exc.strerror or str(exc)
    named = exc.filename if exc.filename is not None else path
    return CourseError(f"{named}: {doing}: {cause}")


def _reserve(final: Path, *, exclusive_name: bool) -> Path | None:
    """mkdir the hidden temporary sibling of ``final`` and record our pid in it.

    Returns the temporary path, or None if another live run holds it (when
    ``exclusive_name`` the caller tries the next name; otherwise it is an error).
    """
    tmp = final.parent / f".{final.name}.tmp"
    try:
        tmp.mkdir()
    except FileExistsError:
        if clean_stale(final.parent) and not os.path.lexists(tmp):
            return _reserve(final, exclusive_name=exclusive_name)
        if exclusive_name:
            return None
        pid = _owner_pid(tmp)
        who = f"process {pid}" if pid is not None else "another process"
        raise CourseError(f"{final}: another run ({who}) is writing this directory now; wait for it or choose another --outdir")
    except OSError as exc:
        raise CourseError(f"{final.parent}: cannot create the run directory {final.name} here: {exc.strerror or exc}") from None
    try:
        (tmp / OWNER_FILE).write_text(f"{MARKER} {socket.gethostname()} {os.getpid()}\n", encoding="utf-8")
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise _os_error(exc, tmp, "cannot write in the run's temporary directory") from None
    return tmp


def _check_destination(path: Path, *, force: bool) -> None:
    if os.path.islink(path):
        raise CourseError(f"{path}: is a symbolic link; give the run directory's real path")
    name = Path(os.path.abspath(path)).name
    cwd = os.path.abspath(os.getcwd())
    target = os.path.abspath(path)
    if not name or target == cwd or cwd.startswith(target.rstrip(os.sep) + os.sep):
        raise CourseError(f"{path}: is the current directory or one of its parents; give a new directory name")
    if len(name.encode("utf-8", "surrogateescape")) + len(".tmp") + 1 > 255:
        raise CourseError(f"{path}: file name too long (at most 250 bytes for a run directory name)")
    if not os.path.lexists(path):
        return
    if not path.is_dir():
        raise CourseError(f"{path}: exists and is not a directory")
    if not force:
        raise CourseError(f"{path}: run directory already exists; pass --force to overwrite it")
    if not is_project_run(path):
        raise CourseError(
            f"{path}: exists and is not a run of this project (no manifest.json written by course.*); "
            "--force replaces only runs, so it was left untouched"
        )


def _make_parent(parent: Path) -> None:
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise CourseError(f"{parent}: exists and is not a directory") from None
    except OSError as exc:
        raise _os_error(exc, parent, "cannot create the directory") from None
    if not parent.is_dir():
        raise CourseError(f"{parent}: exists and is not a directory")


def next_run_name(prefix: str, root: Path = RUNS_ROOT) -> Path:
    """The first ``root/<prefix>_NNN`` that neither exists nor is reserved by a live run (no reservation made)."""
    for i in range(1, 100_000):
        candidate = root / f"{prefix}_{i:03d}"
        if not os.path.lexists(candidate) and not os.path.lexists(root / f".{candidate.name}.tmp"):
            return candidate
    raise CourseError(f"no free run name under {root}/ for prefix {prefix!r}")


def resolve_outdir(outdir: str | os.PathLike[str] | None, *, force: bool, prefix: str) -> Path:
    """Check the destination and reserve it before any work is done; return the final path.

    With ``outdir`` None the first free ``runs/<prefix>_NNN`` is reserved atomically.
    The reservation is released by ``atomic_run_dir`` (which adopts it), by
    ``release_pending`` (``course.cli.run`` calls it on every exit) or at interpreter exit.
    """
    if outdir is None:
        _make_parent(RUNS_ROOT)
        clean_stale(RUNS_ROOT)
        for i in range(1, 100_000):
            final = RUNS_ROOT / f"{prefix}_{i:03d}"
            if os.path.lexists(final):
                continue
            tmp = _reserve(final, exclusive_name=True)
            if tmp is None:
                continue
            if os.path.lexists(final):  # created between our check and our mkdir
                shutil.rmtree(tmp, ignore_errors=True)
                continue
            _hold(_Reservation(final, tmp, force))
            return final
        raise CourseError(f"no free run name under {RUNS_ROOT}/ for prefix {prefix!r}")
    final = Path(outdir)
    held = _PENDING.get(_key(final))
    if held is not None:
        return final
    _check_destination(final, force=force)
    _make_parent(final.parent)
    clean_stale(final.parent)
    tmp = _reserve(final, exclusive_name=False)
    assert tmp is not None
    _hold(_Reservation(final, tmp, force))
    return final


def _hold(res: _Reservation) -> None:
    _PENDING[_key(res.final)] = res
    _install_handlers()


def _release(res: _Reservation) -> None:
    shutil.rmtree(res.tmp, ignore_errors=True)
    _PENDING.pop(_key(res.final), None)
    if not _PENDING:
        _restore_handlers()


def pending() -> frozenset[str]:
    """The reservations held now (absolute final paths), to release only one's own later."""
    return frozenset(_PENDING)


def release_pending(keep: frozenset[str] = frozenset()) -> None:
    """Drop every reservation not yet turned into a run, except those in ``keep``
    (an enclosing tool's, when one tool's ``main`` runs inside another)."""
    for key, res in list(_PENDING.items()):
        if key not in keep:
            _release(res)


atexit.register(release_pending)


_COMMITTED: list[Path] = []  # runs this process made appear, in order (the outermost one last)


def run_tool(run_dir: str | os.PathLike[str]) -> str | None:
    """The ``tool`` its manifest names (``course.eval``, ...), or None if it has no readable one."""
    try:
        manifest = json.loads((Path(run_dir) / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    tool = manifest.get("tool") if isinstance(manifest, dict) else None
    return tool if isinstance(tool, str) else None


def committed() -> tuple[Path, ...]:
    """The run directories this process has finished so far, in the order they appeared."""
    return tuple(_COMMITTED)


def _commit(res: _Reservation) -> None:
    """Make the run appear: the final rename (after moving an old run aside under --force)."""
    _finish(res)
    _COMMITTED.append(res.final)


def _finish(res: _Reservation) -> None:
    final, tmp = res.final, res.tmp
    (tmp / OWNER_FILE).unlink(missing_ok=True)
    if not os.path.lexists(final):
        try:
            os.rename(tmp, final)  # rename(2) also replaces an *empty* directory: check the result
        except OSError as exc:
            raise _os_error(exc, final, "cannot move the finished run into place") from None
        return
    if not res.force:  # someone created it while we worked
        raise CourseError(f"{final}: run directory appeared during the run; pass --force to overwrite it")
    if os.path.islink(final) or not is_project_run(final):
        raise CourseError(f"{final}: was replaced during the run by something that is not a run; left untouched")
    old = final.parent / f".{final.name}.old"
    try:
        old.mkdir()  # exclusive: a concurrent --force on the same name is refused, not interleaved
    except OSError as exc:
        raise _os_error(exc, old, "cannot set the old run aside") from None
    try:
        (old / OWNER_FILE).write_text(f"{MARKER} {socket.gethostname()} {os.getpid()}\n", encoding="utf-8")
        aside = old / "run"
        os.rename(final, aside)
    except OSError as exc:
        shutil.rmtree(old, ignore_errors=True)
        raise _os_error(exc, final, "cannot set the old run aside") from None
    try:
        os.rename(tmp, final)
    except OSError as exc:
        try:
            os.rename(aside, final)  # put the old run back: it must survive any failure
        finally:
            shutil.rmtree(old, ignore_errors=True)
        raise _os_error(exc, final, "cannot move the finished run into place (the old run was kept)") from None
    shutil.rmtree(old, ignore_errors=True)


@contextmanager
def atomic_run_dir(
    outdir: str | os.PathLike[str] | None, *, force: bool = False, prefix: str = "run"
) -> Iterator[Path]:
    """Yield the temporary directory to write the run into; on success, rename it into place.

    ``outdir`` is normally what ``resolve_outdir`` returned (its reservation is adopted);
    otherwise the destination is checked and reserved here. On any exception the temporary
    directory is removed, an ``OSError`` becomes a one-line ``CourseError`` naming the run,
    and an existing run is left as it was.
    """
    final = resolve_outdir(outdir, force=force, prefix=prefix)
    res = _PENDING[_key(final)]
    res.force = res.force or force
    try:
        try:
            yield res.tmp
        except OSError as exc:
            raise _os_error(exc, final, "could not write the run (nothing was kept)") from None
        _commit(res)
    finally:
        _release(res)


# ===========================================================================
# Writing the standard files
# ===========================================================================
def dumps_json(obj: Any, first: Sequence[str] = ()) -> str:
    """Pretty, canonical JSON with a final newline; NaN and infinity are refused (ValueError).

    Keys are sorted at every level, except that the top-level keys named in ``first`` come
    first, in that order (the headline a reader looks for); the bytes still depend only on
    the content, never on the order in which a dict was built.

    >>> dumps_json({"b": 1, "a": {"y": 2, "x": 3}, "c": 4}, first=("c",)).split()
    ['{', '"c":', '4,', '"a":', '{', '"x":', '3,', '"y":', '2', '},', '"b":', '1', '}']
    """
    if not first or not isinstance(obj, dict):
        return json.dumps(obj, ensure_ascii=False, sort_keys=True, indent=2, allow_nan=False) + "\n"
    ordered = {key: obj[key] for key in first if key in obj}
    ordered.update((key, obj[key]) for key in sorted(obj) if key not in ordered)
    return json.dumps({key: _sorted_keys(value) for key, value in ordered.items()},
                      ensure_ascii=False, indent=2, allow_nan=False) + "\n"


def _sorted_keys(value: Any) -> Any:
    """``value`` with every dict's keys in sorted order (what ``sort_keys=True`` would print)."""
    if isinstance(value, dict):
        return {key: _sorted_keys(value[key]) for key in sorted(value)}
    if isinstance(value, (list, tuple)):
        return [_sorted_keys(item) for item in value]
    return value


def write_json(path: str | os.PathLike[str], obj: Any, first: Sequence[str] = ()) -> str:
    """Write ``dumps_json(obj, first)``; return the sha256 of the bytes written.

    A NaN or infinity anywhere in ``obj`` is a ``CourseError`` naming the file: a run
    never records a number that is not one.
    """
    try:
        text = dumps_json(obj, first)
    except ValueError as exc:
        raise CourseError(f"{Path(path).name}: refusing to write a non-finite number ({exc})") from None
    data = text.encode("utf-8")
    Path(path).write_bytes(data)
    return hashlib.sha256(data).hexdigest()


def write_text(path: str | os.PathLike[str], text: str) -> str:
    """Write UTF-8 text; return the sha256 of the bytes written."""
    data = text.encode("utf-8")
    Path(path).write_bytes(data)
    return hashlib.sha256(data).hexdigest()


# summary.json opens with its headline, in this order (the keys a run has); the breakdown and the
# rest follow by name. A reader who opens the file sees the pass rate first, not 100 lines of codes.
SUMMARY_HEADLINE = (
    "pass_rate", "pass_rate_ci95", "passed", "failed", "n", "n_missing", "mean_reward", "split", "scorer_version",
    "kind", "N", "pass_at_1", "selection_gain",
)


def write_summary(run_dir: str | os.PathLike[str], summary: Any, markdown: str | None = None) -> str:
    """``summary.json`` (headline first, see ``SUMMARY_HEADLINE``) and ``summary.md`` if given, in
    ``run_dir``; returns summary.json's sha256."""
    sha = write_json(Path(run_dir) / "summary.json", summary, SUMMARY_HEADLINE)
    if markdown is not None:
        write_text(Path(run_dir) / "summary.md", markdown)
    return sha


def write_manifest(run_dir: str | os.PathLike[str], manifest: dict[str, Any]) -> str:
    """``manifest.json``, written last (a manifest means the rest is complete), with the project marker."""
    return write_json(Path(run_dir) / "manifest.json", {MARKER_FIELD: MARKER, **manifest})


__all__ = [
    "RUNS_ROOT",
    "atomic_run_dir",
    "clean_stale",
    "dumps_json",
    "is_project_run",
    "next_run_name",
    "pending",
    "release_pending",
    "resolve_outdir",
    "write_json",
    "write_manifest",
    "write_summary",
    "write_text",
]


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.runs"))
