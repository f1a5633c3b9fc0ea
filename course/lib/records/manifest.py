"""Manifests: the laboratory notebook entry every run directory carries.

A manifest records what a fair comparison needs (which data, which instrument,
which policy and sampling settings) and where the run came from (course
version, git commit and dirtiness, Python, platform, command line, time).
``course.gate`` compares the first kind field by field (the Locked Room).

This module owns the shared pieces (``course.lib.records.runs`` writes them); each tool adds its own fields::

    manifest = {
        **environment("course.eval", argv),                      # provenance
        **locked_room(input_fingerprint(path), split, policy, sampling),  # what course.gate compares
        ...                                                       # the tool's own fields
    }
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import os
import platform
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any, Mapping, Sequence

import course
from course.errors import CourseError
from course.instrument.rubric_registry import Rubric, get_rubric
from course.lib.bundled import PROJECT_ROOT
from course.lib.external.redaction import public_args_text, public_settings
from course.lib.records.jsonl import open_input
from course.lib.visible import markdown_value, terminal_line

_CHUNK = 1 << 20
# The marker that makes a directory recognisably a run of this project: course.lib.records.runs lets
# --force replace only such directories (see course.lib.records.runs.is_project_run).
MARKER_FIELD = "written_by"
MARKER = "rl-foundations-llm"


def sha256_file(path: str | os.PathLike[str]) -> str:
    """Hex sha256 of a file's bytes, read in 1 MiB chunks (memory does not grow with size)."""
    h = hashlib.sha256()
    with open_input(path, "a regular file") as f:  # the one opener: a FIFO or a device is refused, never waited on
        for block in iter(lambda: f.read(_CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def file_fingerprint(path: str | os.PathLike[str]) -> dict[str, Any]:
    """``{"path", "sha256", "bytes"}`` for one input file. The path is kept as given."""
    p = Path(path)
    return {"path": str(path), "sha256": sha256_file(p), "bytes": p.stat().st_size}


def display_path(path: str | os.PathLike[str], root: Path = PROJECT_ROOT) -> str:
    """How a file is named in a manifest: relative to the project root (POSIX
    separators) when it lies inside it, else absolute, so the same file gets the
    same name whatever the current directory."""
    resolved = Path(path).resolve()
    try:
        return resolved.relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(resolved)


def input_fingerprint(path: str | os.PathLike[str]) -> dict[str, Any]:
    """``file_fingerprint`` with the path named as ``display_path`` names it: how run manifests record inputs.

    A run's manifest is where its inputs are known: ``recorded_inputs`` reads them back, so that the run
    writer never replaces the folder a run's own input lives in."""
    return {**file_fingerprint(path), "path": display_path(path)}


def recorded_inputs(manifest: Any, root: Path = PROJECT_ROOT) -> tuple[str, ...]:
    """Every input file a manifest records (each ``{"path", "sha256", "bytes"}`` in it, at any depth), as paths.

    A path ``display_path`` made relative is resolved against ``root`` again, so the answer names the
    same files whatever the current directory."""
    found: list[str] = []
    stack = [manifest]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            path = value.get("path")
            if isinstance(path, str) and isinstance(value.get("sha256"), str) and "bytes" in value:
                found.append(str(root / path))  # an absolute path stays itself under the join
            stack.extend(reversed(list(value.values())))
        elif isinstance(value, list):
            stack.extend(reversed(value))
    return tuple(found)


def locked_room(
    dataset: Mapping[str, Any],
    split: str | None,
    policy: str,
    sampling: Mapping[str, Any],
    rubric: Rubric | None = None,
    *,
    prompt_template: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The manifest fields of a scoring run that ``course.gate`` compares (its LOCKED_FIELDS,
    except the selection block, which only ``course.selection_demo`` writes).

    Built in one place so that every tool that scores records the measurement
    conditions the same way: the dataset (and its sha256 as ``dataset_fingerprint``),
    the split, the rubric that scored the completions (name and version; default the
    strict verifier, reward spec v1), the scorer's version and source fingerprint (those
    of that rubric: for strict, ``spec_v1.py``), the policy and its sampling, and the
    prompt template the rollouts record (``course.lib.policy.templates``). A file without one
    gave its policy the dataset prompt as it is, and its manifest has no such key, as
    before the field existed (the gate reads the absence as the ``plain`` template).
    """
    refuse_credentials(policy, sampling)
    rubric = get_rubric("strict") if rubric is None else rubric
    fields = {
        "dataset": dict(dataset),
        "dataset_fingerprint": dataset["sha256"],
        "split": split,
        "rubric": rubric.name,
        "rubric_version": rubric.version,
        "scorer_version": rubric.version,
        "scorer_fingerprint": rubric.fingerprint(),
        "policy": policy,
        "sampling": dict(sampling),
    }
    if prompt_template is not None:
        fields["prompt_template"] = dict(prompt_template)
    return fields


_REIMPORT = ("Re-import the source with python -m course.import_completions (it leaves credentials out), "
             "or remove the field")


def refuse_credentials(policy: str, sampling: Mapping[str, Any], *, where: str = "the completions'",
                       fix: str = _REIMPORT) -> None:
    """Refuse a policy or sampling that may carry a credential, before it is copied into a manifest.

    Defence in depth: ``course.import_completions`` leaves request headers, body strings and
    tokens out of what it writes, but a completions file written by an older version of it, by
    hand or by another tool reaches ``course.eval`` and ``course.selection_demo`` as it is, and
    its policy and sampling would be copied into manifest.json and summary.md, files meant to be
    shared. The rule is ``course.lib.external.redaction``'s (``public_settings``,
    ``public_args_text``); the field is named, its value never shown.
    """
    _, in_sampling = public_settings(dict(sampling))
    _, in_policy = public_args_text(str(policy))
    found = [f"sampling.{name}" for name in in_sampling] + [
        f"policy {name}" if "(" in name else f"policy ({name}=...)" for name in in_policy]
    if found:
        shown = ", ".join(terminal_line(name)[:80] for name in found[:3]) + (
            f" and {len(found) - 3} more" if len(found) > 3 else ""
        )
        raise CourseError(
            f"{where} {shown} may hold a credential (a key, token, header or cookie), which every line, "
            f"manifest, summary and table made from it would repeat; nothing written. {fix}"
        )


def template_note(manifest: Mapping[str, Any]) -> str:
    """``, prompt template `fewshot` (sha256 1a2b…)`` for a summary line, or "" when the rollouts recorded none
    (so the summaries of older files read exactly as they always did)."""
    template = manifest.get("prompt_template")
    if not isinstance(template, Mapping):
        return ""
    return (
        f", prompt template {markdown_value(str(template.get('name')))} "
        f"(sha256 {terminal_line(str(template.get('sha256'))[:12])}…)"
    )


def git_state(root: Path = PROJECT_ROOT) -> dict[str, Any]:
    """The commit checked out and whether the work tree differs from it (None outside git)."""
    def _git(*args: str) -> str | None:
        try:
            out = subprocess.run(
                ["git", *args], cwd=root, capture_output=True, text=True, timeout=10, check=True
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return out.stdout

    commit = _git("rev-parse", "HEAD")
    if commit is None:
        return {"git_commit": None, "git_dirty": None}
    status = _git("status", "--porcelain", "--untracked-files=no")
    return {"git_commit": commit.strip(), "git_dirty": bool(status and status.strip())}


def command_line(module: str, argv: Sequence[str] | None) -> str:
    """The command as a user would retype it: ``python -m course.eval --dataset ...``."""
    args = list(sys.argv[1:] if argv is None else argv)
    return shlex.join(["python", "-m", module, *args])


def environment(module: str, argv: Sequence[str] | None) -> dict[str, Any]:
    """Provenance fields shared by every manifest. Not part of any determinism guarantee."""
    return {
        MARKER_FIELD: MARKER,
        "tool": module,
        "course_version": course.__version__,
        **git_state(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "command": command_line(module, argv),
        "created_utc": _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat(),
    }



def shown_here(recorded: str) -> str:
    """A recorded path as the user can type it from the current directory.

    Manifests name project files relative to the project root (``data/datasets/math_dev.jsonl``),
    so a run says the same thing wherever it was made. Printed to a person in another directory,
    that name would point nowhere: there it is shown as the absolute path under the project root.
    """
    if Path(recorded).exists() or Path(recorded).is_absolute():
        return recorded
    under_root = PROJECT_ROOT / recorded
    return str(under_root) if under_root.exists() else recorded

def peak_rss_kib() -> int:
    """This process's own peak resident memory, in KiB (what a run or a benchmark child records).

    ``VmHWM`` of ``/proc/self/status`` where it exists. Not ``getrusage(RUSAGE_SELF).ru_maxrss``
    alone: Linux carries a parent's high-water mark across fork and exec, so a run started by a
    larger process (a notebook, a benchmark that generated a million lines) would report the
    parent's peak, not its own. ``ru_maxrss`` (KiB on Linux) is the fallback without ``/proc``.
    """
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.records.manifest"))
