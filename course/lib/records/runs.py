# Over 600 lines because the run writer's reservation, rename and --force rules go together.
"""The run writer: the one place a run directory is created, filled and made to appear.

A run directory (``runs/eval_001/``: manifest.json, summary.json, ...) is a
measurement; it must never be half-written, never collide with another run and
never replace something the user owns. This module guarantees it for every tool:

* **Reservation at the start.** ``resolve_outdir`` (or ``atomic_run_dir``) reserves
  the destination with an exclusive ``mkdir`` of a hidden temporary sibling
  ``.NAME.tmp`` whose first content is its ownership marker (``.owner``: this project,
  the host, the pid, NAME; ``course.lib.records.temporaries`` owns the rule).
  Default names (``runs/<prefix>_NNN``) skip every name that exists *or* is reserved,
  so concurrent runs without ``--outdir`` get distinct names; a second run aimed at
  the same ``--outdir`` fails at once instead of after its work.
* **One moment of appearance.** The tool writes into the temporary directory; the
  final ``rename`` is the only moment the run appears under its name.
* **Nothing left behind.** Every exit path that Python can catch (an exception,
  Ctrl-C, SIGTERM, SIGHUP, ``sys.exit``) removes the temporary directory: while a
  reservation is held, SIGTERM/SIGHUP raise ``SystemExit(128 + signal)`` so the
  context managers unwind. A process killed with SIGKILL cannot clean up; the next
  run in the same parent directory removes temporary directories whose marker is
  this project's and whose owner process is dead (and restores an old run a killed
  ``--force`` had moved aside). A folder without the marker is never touched, whatever
  its name (``.config.old``, ``.cache.tmp``): a run that needs its name says so and stops.
* **--force replaces only runs.** ``is_project_run`` decides: the directory holds a
  ``manifest.json`` written by this project. Anything else (a user's folder with
  notes) is refused with one line, untouched. The old run is replaced only after
  the new one is complete; if the swap fails the old run is put back.
* **--force replaces only what the same tool wrote** (a rerun must not delete the README a
  student put in the run folder). At the moment a run appears, the run writer records
  every file it holds with its sha256 in the manifest (``run_files``), and every folder it made
  (``run_folders``): that is the run's ownership record. A rerun with ``--force`` then replaces only
  those files, unchanged; every other entry (a README, notes, a report page, a folder of plots) is the
  user's and is carried into the new run (hard-linked, so nothing is copied or lost if the swap fails), and one
  stderr line names what was kept. It refuses, before any work, a run of another tool, an
  ``--outdir`` that holds one of the run's own inputs, a run inside another run, and a run
  whose recorded file was changed since (the user's edit would be lost); after the work, a user's file with the name
  of a file the new run writes (both cannot be kept: the old run stays as it was). A run
  written before the record existed has no list: there the files the new run writes are
  replaced and everything else is kept.
* **OS errors carry their path.** A failure of the file system (read-only, disk
  full, name too long, a file where a directory should be) becomes one
  ``CourseError`` line naming the user's path (never the temporary's) and the cause;
  nothing partial is left.
* **No NaN in a run.** ``write_json`` writes through ``course.lib.records.jsonl.dumps_pretty``, which
  refuses NaN, infinity and anything else the reader would refuse, the last line of
  defence behind the CLI's argument types.

Usage inside a tool::

    final = resolve_outdir(args.outdir, force=args.force, prefix="eval",  # reserves; fails before any work
                           tool="course.eval", inputs=(args.dataset, args.completions))
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
import shutil
import stat
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from course.errors import CourseError
from course.lib.records import temporaries
from course.lib.records.jsonl import dumps_pretty, encode_text, pretty_bytes, read_json
from course.lib.records.manifest import MARKER, MARKER_FIELD, recorded_inputs, sha256_file
from course.lib.records.temporaries import OWNER_FILE, clean_stale
from course.lib.visible import terminal_line, visible

RUNS_ROOT = Path("runs")


# ===========================================================================
# Recognising a run of this project (the --force rule)
# ===========================================================================
def is_project_run(path: str | os.PathLike[str]) -> bool:
    """True if ``path`` is a directory this project wrote as a run, so ``--force`` may replace it.

    The rule: a real directory (not a symlink) whose ``manifest.json`` is a regular file
    holding a JSON object that either carries the marker ``"written_by": "rl-foundations-llm"``
    (every manifest since this module exists) or was written by an earlier version of the
    project: ``"tool"`` is a string starting with ``course.`` and ``"course_version"`` is a
    string (what ``course.lib.records.manifest.environment`` always wrote). A ``course.tinylm.sweep``
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
        data = read_json(manifest, "manifest")  # the one reader: regular file, capped, every JSON rule
    except (OSError, CourseError):
        return False
    if data.get(MARKER_FIELD) == MARKER:
        return True
    tool, version = data.get("tool"), data.get("course_version")
    return isinstance(tool, str) and tool.startswith("course.") and isinstance(version, str)


# ===========================================================================
# What a run owns: the files it wrote (the --force rule)
# ===========================================================================
RUN_FILES = "run_files"  # manifest key: {relative POSIX path: sha256} of every file the run wrote
RUN_FOLDERS = "run_folders"  # manifest key: every folder the run made, empty ones too (checkpoints/ of a short run)
# manifest key: the sha256 of the manifest's own content (every other key, canonical JSON), so that a note
# added to manifest.json by hand is seen as an edit, as one added to summary.md is.
RUN_MANIFEST = "run_manifest_sha256"
_SHOWN = 10  # a message names this many kept entries, then says how many more


def _walk(root: Path) -> tuple[dict[str, Path], list[str]]:
    """Every regular file under ``root`` by relative POSIX path, and every folder (symbolic links never followed)."""
    found: dict[str, Path] = {}
    folders: list[str] = []
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        folders += [
            (Path(folder) / d).relative_to(root).as_posix() for d in dirs if not (Path(folder) / d).is_symlink()
        ]
        for name in sorted(files):
            path = Path(folder) / name
            if stat.S_ISREG(os.lstat(path).st_mode):
                found[path.relative_to(root).as_posix()] = path
    return found, sorted(folders)


def _record_run_files(tmp: Path) -> tuple[frozenset[str], frozenset[str]]:
    """Write the ownership record into the finished run's manifest; return the run's files and folders.

    Every regular file but the manifest itself (and the reservation's marker) is listed with its
    sha256: a later ``--force`` replaces exactly these files, and only while they are unchanged.
    A run without a manifest (a caller of ``atomic_run_dir`` that writes none) gets no record.
    """
    found, folders = _walk(tmp)
    files = {rel: path for rel, path in found.items() if rel != OWNER_FILE}
    manifest_path = tmp / "manifest.json"
    if "manifest.json" in files:
        manifest = read_json(manifest_path, "manifest")
        record = {rel: sha256_file(path) for rel, path in files.items() if rel != "manifest.json"}
        manifest = {**manifest, RUN_FILES: record, RUN_FOLDERS: folders}
        write_json(manifest_path, {**manifest, RUN_MANIFEST: manifest_digest(manifest)})
    return frozenset(files), frozenset(folders)


def manifest_digest(manifest: dict[str, Any]) -> str:
    """The sha256 of a manifest's content but its own ``run_manifest_sha256``: canonical JSON (keys sorted,
    no whitespace), so what counts is what it says, not how it is laid out."""
    content = {k: v for k, v in manifest.items() if k != RUN_MANIFEST}
    text = json.dumps(content, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _manifest_edited(manifest: Any) -> bool:
    """Was a run's manifest changed since the run writer recorded it (a note added by hand)?

    A manifest from before ``run_manifest_sha256`` existed has nothing to compare with: not edited.
    """
    if not isinstance(manifest, dict) or not isinstance(manifest.get(RUN_MANIFEST), str):
        return False
    try:
        return manifest_digest(manifest) != manifest[RUN_MANIFEST]
    except ValueError:  # a number JSON cannot write: not what the run writer wrote
        return True


def _folders(paths: Iterable[str]) -> frozenset[str]:
    """Every folder that holds one of ``paths`` (``a/b/c`` gives ``a`` and ``a/b``)."""
    out: set[str] = set()
    for rel in paths:
        parts = rel.split("/")
        out.update("/".join(parts[:i]) for i in range(1, len(parts)))
    return frozenset(out)


def _recorded(manifest: Any) -> dict[str, str] | None:
    """The ownership record of an old run's manifest, or None (a run from before the record existed)."""
    record = manifest.get(RUN_FILES) if isinstance(manifest, dict) else None
    if not isinstance(record, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in record.items()):
        return None
    return record


@dataclass(frozen=True)
class _Owners:
    """Who owns what in an existing run directory, as ``--force`` sees it."""

    tool: str | None  # the tool that wrote it, from its manifest
    recorded: bool  # its manifest lists the files it wrote (RUN_FILES)
    theirs: tuple[str, ...]  # the user's entries (top-most: a folder of the user's is one entry), relative paths
    changed: tuple[str, ...]  # files the run wrote that were changed (or replaced) since


def _owners(final: Path, new_files: frozenset[str] | None, new_folders: frozenset[str] = frozenset()) -> _Owners:
    """Sort an existing run's entries into the run's and the user's.

    An entry is the run's when the manifest lists it and it is still the regular file with the
    recorded sha256 (the manifest itself is always the run's). Without a record (an older run),
    an entry is the run's when the new run writes the same name (``new_files``; before the work,
    when they are not known yet, nothing but the manifest counts as the run's). A folder the run
    made (``run_folders``, or one holding a file of the run) or the new run makes is looked into;
    every other entry, a symbolic link, a FIFO or a folder of the user's, is the user's.
    """
    try:
        manifest = read_json(final / "manifest.json", "manifest")
    except (OSError, CourseError):
        manifest = None
    tool = manifest.get("tool") if isinstance(manifest, dict) and isinstance(manifest.get("tool"), str) else None
    if tool is None and (final / "sweep.csv").is_file():
        tool = "course.tinylm.sweep"  # a sweep from before sweeps had a manifest (see is_project_run)
    record = _recorded(manifest)
    owned = set(record) if record is not None else set(new_files or ())
    owned.add("manifest.json")
    # Folders the run made (recorded, or holding one of its files) or the new run makes are looked
    # into, entry by entry; any other folder is the user's, whole.
    made = manifest.get(RUN_FOLDERS) if isinstance(manifest, dict) else None
    made = frozenset(m for m in made if isinstance(m, str)) if isinstance(made, list) else frozenset()
    holding = _folders(owned) | made | new_folders
    theirs: list[str] = []
    changed: list[str] = []

    def visit(folder: Path, prefix: str) -> None:
        for entry in sorted(os.scandir(folder), key=lambda e: e.name):
            rel = prefix + entry.name
            if entry.is_dir(follow_symlinks=False):
                if rel in holding:
                    visit(Path(entry.path), rel + "/")
                else:
                    theirs.append(rel)  # a folder holding nothing of the run's: the user's, whole
                continue
            if rel not in owned:
                theirs.append(rel)
            elif rel == "manifest.json":
                continue
            elif record is None:
                continue  # an older run: the new run's file of that name replaces it
            elif entry.is_file(follow_symlinks=False) and sha256_file(entry.path) == record[rel]:
                continue
            else:
                theirs.append(rel)
                changed.append(rel)

    visit(final, "")
    if _manifest_edited(manifest):
        changed.insert(0, "manifest.json")
    return _Owners(tool, record is not None, tuple(theirs), tuple(changed))


def _inside(path: str, folder: Path) -> bool:
    """Does ``path`` (a file or folder, through any symbolic link) lie in ``folder`` or is it ``folder``?"""
    real, home = os.path.realpath(path), os.path.realpath(folder)
    return real == home or real.startswith(home.rstrip(os.sep) + os.sep)


def _listed(names: Sequence[str]) -> str:
    shown = ", ".join(visible(n) for n in names[:_SHOWN])
    return shown + (f" and {len(names) - _SHOWN} more" if len(names) > _SHOWN else "")


def _check_replaceable(final: Path, tool: str | None, inputs: Sequence[str],
                       new_files: frozenset[str] | None = None, new_folders: frozenset[str] = frozenset()) -> _Owners:
    """Refuse a ``--force`` that would lose something; return who owns what in ``final``.

    Before any work (``resolve_outdir``) with what the caller said; again when the new run is
    complete (``_finish``) with the tool its manifest names and every input it recorded.
    """
    for path in inputs:
        if _inside(path, final):
            raise CourseError(
                f"{final}: holds {visible(path)}, an input of this run; --force would replace the folder it lives in, "
                "so nothing was changed; choose another --outdir"
            )
    owners = _owners(final, new_files, new_folders)
    if tool is not None and owners.tool != tool:
        raise CourseError(
            f"{final}: is a run of {visible(str(owners.tool))}, not of {tool}; --force replaces only a run of the same "
            "tool, so it was left untouched; choose another --outdir"
        )
    if "manifest.json" in owners.changed:
        raise CourseError(
            f"{final}: manifest.json changed since {owners.tool or 'the run'} wrote it (a note added by hand?); "
            "--force would lose the change, so nothing was replaced; move what you added to a file of its own in "
            "the run folder (--force keeps those) and undo the edit, or choose another --outdir"
        )
    if owners.changed:
        raise CourseError(
            f"{final}: {_listed(owners.changed)} changed since {owners.tool or 'the run'} wrote "
            f"{'it' if len(owners.changed) == 1 else 'them'}; --force would lose the change, so nothing was replaced; "
            "move your version out of the run folder (or delete it), then rerun"
        )
    return owners


def _link_or_copy(src: str, dst: str) -> None:
    """Carry one entry of the user's: a hard link (no copy, and the original stays until the old run
    is gone), or a copy of a regular file where the file system refuses links."""
    try:
        os.link(src, dst, follow_symlinks=False)
    except OSError:
        if not stat.S_ISREG(os.lstat(src).st_mode):
            raise
        shutil.copy2(src, dst)


def _carry(final: Path, tmp: Path, theirs: Sequence[str], tool: str | None) -> None:
    """Put the user's entries of the old run ``final`` into the new run ``tmp``, at the same paths.

    A name the new run holds itself cannot take both: refused, naming it (the old run is kept).
    """
    for rel in theirs:
        parts = rel.split("/")
        for i in range(1, len(parts) + 1):
            there = tmp.joinpath(*parts[:i])
            if os.path.lexists(there) and (i == len(parts) or not there.is_dir() or there.is_symlink()):
                raise CourseError(
                    f"{final / rel}: was not written by {tool or 'this tool'} (it is yours, or was changed) "
                    "and the new "
                    f"run writes {'/'.join(parts[:i])} too; the old run was kept as it was; move it out of the run "
                    "folder, then rerun with --force"
                )
    for rel in theirs:
        src, dst = final / rel, tmp / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        try:
            if src.is_symlink():
                os.symlink(os.readlink(src), dst)
            elif src.is_dir():
                shutil.copytree(src, dst, symlinks=True, copy_function=_link_or_copy)
            else:
                _link_or_copy(str(src), str(dst))
        except (OSError, shutil.Error) as exc:
            raise CourseError(f"{src}: cannot carry it into the new run, so the old run was kept as it was: "
                              f"{getattr(exc, 'strerror', None) or exc}") from None


# ===========================================================================
# Reservations and the signal handlers that unwind them
# ===========================================================================
@dataclass
class _Reservation:
    final: Path
    tmp: Path
    force: bool
    tool: str | None = None  # the tool writing it (course.eval, ...), when the caller said so
    inputs: tuple[str, ...] = ()  # inputs named by the caller (paths as given)


_PENDING: dict[str, _Reservation] = {}


def _key(path: Path) -> str:
    return os.path.abspath(path)


_os_error = temporaries.os_error


def _in_the_way(final: Path, folder: Path, kind: str) -> CourseError:
    """The refusal when a name this run needs is taken by a live run or by something not this project's."""
    who = temporaries.holder(folder)
    if who.startswith("process"):
        doing = "is writing this directory now" if kind == "tmp" else "is replacing this run now"
        return CourseError(f"{final}: another run ({who}) {doing}; wait for it or choose another --outdir")
    return CourseError(
        f"{final}: the folder {folder} is in the way and is {who}, so it was left untouched; "
        "move it away or choose another --outdir"
    )


def _reserve(final: Path, *, exclusive_name: bool) -> Path | None:
    """Make the hidden temporary sibling of ``final``, its ownership marker written first.

    Returns the temporary path, or None if the name is taken (when ``exclusive_name`` the
    caller tries the next name; otherwise it is an error naming what holds it).
    """
    tmp = final.parent / f".{final.name}.tmp"
    try:
        return temporaries.make(final)
    except FileExistsError:
        if clean_stale(final.parent) and not os.path.lexists(tmp):
            return _reserve(final, exclusive_name=exclusive_name)
        if exclusive_name:
            return None
        raise _in_the_way(final, tmp, "tmp") from None
    except OSError as exc:
        raise CourseError(f"{final.parent}: cannot create the run directory {final.name} here: "
                          f"{exc.strerror or exc}") from None


def _check_destination(path: Path, *, force: bool, tool: str | None = None, inputs: Sequence[str] = ()) -> None:
    if os.path.islink(path):
        raise CourseError(f"{path}: is a symbolic link; give the run directory's real path")
    name = Path(os.path.abspath(path)).name
    cwd = os.path.abspath(os.getcwd())
    target = os.path.abspath(path)
    if not name or target == cwd or cwd.startswith(target.rstrip(os.sep) + os.sep):
        raise CourseError(f"{path}: is the current directory or one of its parents; give a new directory name")
    if len(name.encode("utf-8", "surrogateescape")) + len(".tmp") + 1 > 255:
        raise CourseError(f"{path}: file name too long (at most 250 bytes for a run directory name)")
    _refuse_a_piece_of_another_run(path)  # the same rule for a first run and a --force rerun
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
    # another tool's run, an input inside, an edited file: now, not after the work
    _check_replaceable(path, tool, inputs)
    old = path.parent / f".{name}.old"  # where the old run will be set aside: refused now, not after the work
    if os.path.lexists(old) and not (clean_stale(path.parent) and not os.path.lexists(old)):
        raise _in_the_way(path, old, "old")


def _refuse_a_piece_of_another_run(path: Path) -> None:
    """Refuse an ``--outdir`` that is, or lies in, something an enclosing run wrote.

    One rule for a first run and a ``--force`` rerun alike: a folder the user made inside a run
    (``RUN/checks/``) is the user's entry there, which ``--force`` on the enclosing run carries over,
    so a run may be written (and rewritten) in it; a file or folder the enclosing run wrote (rl's
    ``eval_final_holdout/``, ``checkpoints/``) is part of that measurement, and no other run replaces
    it or writes into it. A run from before the ownership record cannot say what it wrote: all of it
    counts as its own.
    """
    target = Path(os.path.abspath(path))
    for above in target.parents:
        if not is_project_run(above):
            continue
        rel = target.relative_to(above).as_posix()
        try:
            manifest = read_json(above / "manifest.json", "manifest")
        except (OSError, CourseError):
            manifest = None
        record = _recorded(manifest)
        made = manifest.get(RUN_FOLDERS) if isinstance(manifest, dict) else None
        owned = set(record or ()) | _folders(record or ()) | {m for m in made or () if isinstance(m, str)}
        if record is None or any(rel == o or rel.startswith(o + "/") for o in owned):
            raise CourseError(
                f"{path}: is part of the run {above} ({run_tool(above) or 'a course tool'}), which wrote "
                f"{'it' if record is None else visible(rel.split('/')[0])}; a run never replaces or writes into a "
                "piece of another one; choose another --outdir"
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


def resolve_outdir(
    outdir: str | os.PathLike[str] | None,
    *,
    force: bool,
    prefix: str,
    tool: str | None = None,
    inputs: Sequence[str | os.PathLike[str] | None] = (),
) -> Path:
    """Check the destination and reserve it before any work is done; return the final path.

    ``tool`` (the name its manifest will give, ``course.eval``) and ``inputs`` (the files and
    folders the run reads) let ``--force`` refuse before any work to replace another tool's run
    or a folder holding an input; the finished run is checked again either way, with the tool
    its manifest names and every input its manifest records (``recorded_inputs``).
    With ``outdir`` None the first free ``runs/<prefix>_NNN`` is reserved atomically.
    The reservation is released by ``atomic_run_dir`` (which adopts it), by
    ``release_pending`` (``course.cli.run`` calls it on every exit) or at interpreter exit.
    """
    named = tuple(os.fspath(p) for p in inputs if p is not None)
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
                temporaries.remove(tmp)
                continue
            _hold(_Reservation(final, tmp, force, tool, named))
            return final
        raise CourseError(f"no free run name under {RUNS_ROOT}/ for prefix {prefix!r}")
    final = Path(outdir)
    held = _PENDING.get(_key(final))
    if held is not None:
        return final
    _check_destination(final, force=force, tool=tool, inputs=named)
    _make_parent(final.parent)
    clean_stale(final.parent)
    tmp = _reserve(final, exclusive_name=False)
    assert tmp is not None
    _hold(_Reservation(final, tmp, force, tool, named))
    return final


def _hold(res: _Reservation) -> None:
    _PENDING[_key(res.final)] = res
    temporaries.hold(res.tmp)


def _release(res: _Reservation) -> None:
    temporaries.release(res.tmp)
    _PENDING.pop(_key(res.final), None)


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
        manifest = read_json(Path(run_dir) / "manifest.json", "manifest")
    except (OSError, CourseError):
        return None
    tool = manifest.get("tool") if isinstance(manifest, dict) else None
    return tool if isinstance(tool, str) else None


def _manifest_inputs(run_dir: Path) -> tuple[str, ...]:
    """The input files a finished run's manifest records (none without a readable one)."""
    try:
        return recorded_inputs(read_json(run_dir / "manifest.json", "manifest"))
    except (OSError, CourseError):
        return ()


def committed() -> tuple[Path, ...]:
    """The run directories this process has finished so far, in the order they appeared."""
    return tuple(_COMMITTED)


def _commit(res: _Reservation) -> None:
    """Make the run appear: the final rename (after moving an old run aside under --force)."""
    _finish(res)
    _COMMITTED.append(res.final)


def _finish(res: _Reservation) -> None:
    final, tmp = res.final, res.tmp
    # The marker stays while the files are hashed (a kill leaves a folder the next run cleans), and
    # goes just before the renames: the finished run carries no marker of a temporary.
    # before the user's entries are carried in: only the run's are listed
    new_files, new_folders = _record_run_files(tmp)
    if not os.path.lexists(final):
        (tmp / OWNER_FILE).unlink(missing_ok=True)
        try:
            os.rename(tmp, final)  # rename(2) also replaces an *empty* directory: check the result
        except OSError as exc:
            raise _os_error(exc, final, "cannot move the finished run into place") from None
        return
    if not res.force:  # someone created it while we worked
        raise CourseError(f"{final}: run directory appeared during the run; pass --force to overwrite it")
    if os.path.islink(final) or not is_project_run(final):
        raise CourseError(f"{final}: was replaced during the run by something that is not a run; left untouched")
    # The same checks as before the work, now with the tool the new manifest names and every input
    # the run recorded (a tool that did not name them up front is checked here, the old run kept).
    tool = run_tool(tmp) or res.tool
    if tool is None:
        raise CourseError(f"{final}: the new run has no manifest.json naming its tool, so it cannot replace a run; "
                          "the old run was kept as it was")
    owners = _check_replaceable(final, tool, res.inputs + _manifest_inputs(tmp), new_files, new_folders)
    (tmp / OWNER_FILE).unlink(missing_ok=True)  # before the carry: a .owner of the user's may be among the entries
    _carry(final, tmp, owners.theirs, tool)
    old = final.parent / f".{final.name}.old"
    try:
        # Exclusive, marked first: a concurrent --force on the same name is refused, not interleaved,
        # and a kill from here on leaves a folder the next run recognises as this project's.
        temporaries.make(final, "old")
    except FileExistsError:
        raise _in_the_way(final, old, "old") from None
    except OSError as exc:
        raise CourseError(f"{final}: cannot set the old run aside: {exc.strerror or exc}") from None
    aside = old / "run"
    try:
        os.rename(final, aside)
    except OSError as exc:
        temporaries.remove(old)
        raise CourseError(f"{final}: cannot set the old run aside: {exc.strerror or exc}") from None
    try:
        os.rename(tmp, final)
    except OSError as exc:
        try:
            os.rename(aside, final)  # put the old run back: it must survive any failure
        finally:
            temporaries.remove(old)
        raise CourseError(f"{final}: cannot move the finished run into place (the old run was kept): "
                          f"{exc.strerror or exc}") from None
    temporaries.remove(old)
    if owners.theirs:  # one line: what --force kept, so nobody wonders where their notes went
        print(terminal_line(
            f"{final}: kept {len(owners.theirs)} {'entry' if len(owners.theirs) == 1 else 'entries'} {tool} did not "
            "write"
            f"{'' if owners.recorded else ' (an older run without a file list: every name the new run does not write)'}"
            f": {_listed(owners.theirs)} (carried into the new run)"), file=sys.stderr, flush=True)


@contextmanager
def atomic_run_dir(
    outdir: str | os.PathLike[str] | None,
    *,
    force: bool = False,
    prefix: str = "run",
    tool: str | None = None,
    inputs: Sequence[str | os.PathLike[str] | None] = (),
) -> Iterator[Path]:
    """Yield the temporary directory to write the run into; on success, rename it into place.

    ``outdir`` is normally what ``resolve_outdir`` returned (its reservation is adopted);
    otherwise the destination is checked and reserved here. On any exception the temporary
    directory is removed, an ``OSError`` becomes a one-line ``CourseError`` naming the run,
    and an existing run is left as it was.
    """
    final = resolve_outdir(outdir, force=force, prefix=prefix, tool=tool, inputs=inputs)
    res = _PENDING[_key(final)]
    res.force = res.force or force
    try:
        try:
            yield res.tmp
        except BrokenPipeError:  # the output's reader left (`| head -2`): course.cli's rule, not a file error
            raise
        except OSError as exc:
            raise _os_error(exc, final, "could not write the run (nothing was kept)") from None
        except CourseError as exc:  # a message naming a file of the run names it under the run's name
            raise temporaries.in_user_terms(exc) from None
        _commit(res)
    finally:
        _release(res)


# ===========================================================================
# Writing the standard files
# ===========================================================================
def dumps_json(obj: Any, first: Sequence[str] = ()) -> str:
    """Pretty, canonical JSON with a final newline (``course.lib.records.jsonl.dumps_pretty``, the one JSON
    writer: NaN, infinity and anything else its reader would refuse are a ``CourseError``).

    Keys are sorted at every level, except that the top-level keys named in ``first`` come
    first, in that order (the headline a reader looks for); the bytes still depend only on
    the content, never on the order in which a dict was built.

    >>> dumps_json({"b": 1, "a": {"y": 2, "x": 3}, "c": 4}, first=("c",)).split()
    ['{', '"c":', '4,', '"a":', '{', '"x":', '3,', '"y":', '2', '},', '"b":', '1', '}']
    """
    return dumps_pretty(obj, first)


def write_json(path: str | os.PathLike[str], obj: Any, first: Sequence[str] = ()) -> str:
    """Write ``dumps_json(obj, first)``; return the sha256 of the bytes written.

    A NaN or infinity anywhere in ``obj`` (or anything else the reader would refuse) is a
    ``CourseError`` naming the file: a run never records a number that is not one.
    """
    # The file is named alone: the hidden temporary directory it is written in is no name a user knows.
    return _write_bytes(path, pretty_bytes(obj, Path(path).name, first))


def write_text(path: str | os.PathLike[str], text: str) -> str:
    """Write UTF-8 text; return the sha256 of the bytes written."""
    return _write_bytes(path, encode_text(text, Path(path).name))


def _write_bytes(path: str | os.PathLike[str], data: bytes) -> str:
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
    "RUN_FILES",
    "RUN_FOLDERS",
    "RUN_MANIFEST",
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

    raise SystemExit(not_a_tool("course.lib.records.runs"))
