"""Where a report page is written, and the one overwrite rule: a page course.report wrote may be replaced;
any other file needs ``force``; a file of a run the page shows never (the page would destroy what it shows)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

from course.errors import CourseError
from course.lib.records.jsonl import open_input, output_problem, writes_into
from course.lib.records.temporaries import write_text_atomic

GENERATOR = "course.report"
REPORT_NAME = "report.html"


def default_output(run_paths: Sequence[str | os.PathLike[str]]) -> Path:
    """One run: ``RUN_DIR/report.html``. Several: ``compare_<a>_vs_<b>.html`` beside the first run.

    >>> default_output(["runs/eval_001"]).as_posix()
    'runs/eval_001/report.html'
    >>> default_output(["runs/a", "runs/b"]).as_posix()
    'runs/compare_a_vs_b.html'
    """
    paths = [Path(p) for p in run_paths]
    if len(paths) == 1:
        return paths[0] / REPORT_NAME
    name = "compare_" + "_vs_".join(p.resolve().name if p.name in ("", ".", "..") else p.name for p in paths)
    return paths[0].parent / (name[:200] + ".html")


def is_report_file(path: str | os.PathLike[str]) -> bool:
    """True when the file at ``path`` was written by this tool (its generator tag is in the first 2 KB)."""
    try:
        with open_input(path, "a report") as f:  # never blocks: a FIFO is not a report
            head = f.read(2048)
    except (OSError, CourseError):
        return False
    return f'<meta name="generator" content="{GENERATOR}">'.encode() in head


def check_output(path: str | os.PathLike[str], *, force: bool = False,
                 runs: Sequence[str | os.PathLike[str]] = ()) -> Path:
    """Refuse an output the page may not be written to; called before any run is read, and again
    by ``write_report``. A page course.report wrote is replaced; any other file needs ``force``,
    and a file inside one of the ``runs`` shown (``results.jsonl``, a user's ``README.md``) is
    never replaced, even with ``force``: the report would destroy what it shows."""
    out = Path(path)
    if out.is_dir():
        raise CourseError(f"{out}: is a directory; give a file name such as {out / REPORT_NAME}")
    if not out.parent.is_dir():
        return out  # nothing there to protect; a missing run is named by the reader, a missing folder by write_report
    problem = output_problem(out)  # a FIFO or a device is never written into, even with --force
    if problem is not None:
        raise CourseError(f"{out}: {problem}")
    if os.path.lexists(out) and not is_report_file(out):
        for run in runs:
            if writes_into(out, run):
                raise CourseError(f"{out}: is a file of the run {run} shown in the report, not a page course.report "
                                  "wrote; the report never replaces it, even with --force; choose another --out")
        if not force:
            raise CourseError(f"{out}: exists and was not written by course.report; pass --force to overwrite it")
    return out


def write_report(path: str | os.PathLike[str], html: str, *, force: bool = False,
                 runs: Sequence[str | os.PathLike[str]] = ()) -> Path:
    """Write atomically (temp file, then rename), after ``check_output`` (again: things may have changed)."""
    out = check_output(path, force=force, runs=runs)
    if not out.parent.is_dir():  # here, not before the work: a missing run is named as such first
        raise CourseError(f"{out.parent}: no such directory")
    write_text_atomic(out, html)  # marked temporary, then one rename (course.lib.records.temporaries)
    return out


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.reporting.report_files"))
