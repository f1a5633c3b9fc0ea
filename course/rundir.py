"""Run directories: where every tool writes its artifacts, atomically.

A run directory is built in a hidden temporary sibling (``runs/.eval_001.tmp-<pid>``)
and renamed into place only when every file is written, so an interrupted run
leaves nothing that looks complete. An existing run is never overwritten unless
the caller passes ``force=True`` (the CLIs' ``--force``).

Usage inside a tool::

    with atomic_run_dir(args.outdir, force=args.force, prefix="eval") as tmp:
        write_json(tmp / "summary.json", summary)
    # here the directory exists under its final name
"""

from __future__ import annotations

import os
import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from course.errors import CourseError

RUNS_ROOT = Path("runs")


def next_run_name(prefix: str, root: Path = RUNS_ROOT) -> Path:
    """The first free ``root/<prefix>_NNN`` (``runs/eval_001``, ``runs/eval_002``, ...)."""
    for i in range(1, 100_000):
        candidate = root / f"{prefix}_{i:03d}"
        if not candidate.exists():
            return candidate
    raise CourseError(f"no free run name under {root}/ for prefix {prefix!r}")


def resolve_outdir(outdir: str | os.PathLike[str] | None, *, force: bool, prefix: str) -> Path:
    """Check the destination before any work is done: fail fast, write nothing."""
    if outdir is None:
        return next_run_name(prefix)
    path = Path(outdir)
    if path.exists() and not force:
        raise CourseError(f"{path}: run directory already exists; pass --force to overwrite it")
    if path.exists() and not path.is_dir():
        raise CourseError(f"{path}: exists and is not a directory")
    return path


@contextmanager
def atomic_run_dir(
    outdir: str | os.PathLike[str] | None, *, force: bool = False, prefix: str = "run"
) -> Iterator[Path]:
    """Yield a temporary directory; on success, rename it to the final run directory.

    To know the final path early (to print it), call ``resolve_outdir`` first and
    pass its result here as ``outdir`` (with the same ``force``).
    """
    final = resolve_outdir(outdir, force=force, prefix=prefix)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.parent / f".{final.name}.tmp-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if final.exists():
        if not force:  # someone created it while we worked
            shutil.rmtree(tmp, ignore_errors=True)
            raise CourseError(f"{final}: run directory appeared during the run; pass --force to overwrite it")
        old = final.parent / f".{final.name}.old-{os.getpid()}"
        os.replace(final, old)
        os.replace(tmp, final)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(tmp, final)
