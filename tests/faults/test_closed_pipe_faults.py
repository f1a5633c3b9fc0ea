"""Fault suite: a closed output pipe never ends as success, and never leaves an output half-written.

The attack: ``python -m course.bandit_train --slow | head -2``, ``python -m course.tinylm.sft ...
2>&1 | head -2``, a listing piped into a reader that has already gone. Before the fix, every tool but
rollout_sample mapped the broken pipe to exit 0: the run it was writing had vanished, yet the shell
saw success (and ``python -m course`` printed a traceback). The rule, for every tool, lives in
``course.cli.run``: the tool stops where the write failed, exit 141 (128 + SIGPIPE, what a shell
reports for any Unix tool cut off this way), one line on stderr if stderr can still be read, and
every output is whole or absent (run directories and files are only renamed into place once
complete). ``--help`` is argparse's: it prints, ignores a failed write and exits 0.

Real processes (the pipe and the process's own streams are the point), and one in-process case for
stdout on a full disk (the system names no path: the line names <stdout>).

    python -m pytest tests/faults/test_closed_pipe_faults.py -q
"""

from __future__ import annotations

import errno
import importlib.util
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from course.cli import EXIT_PIPE_CLOSED
from course.lib.records import runs

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
NO_TORCH = importlib.util.find_spec("torch") is None


def run_with_reader_gone(args: list[str], cwd: Path, *, stderr_too: bool = False) -> subprocess.CompletedProcess[str]:
    """``python ARGS`` with stdout (and with ``stderr_too`` stderr) on a pipe whose reader has left:
    ``| head -0``, the deterministic form of ``| head -2`` (every write fails, not just a later one)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run([sys.executable, *args], cwd=cwd, env=ENV, stdout=write_end,
                              stderr=write_end if stderr_too else subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write_end)


def test_bandit_train_slow_piped_into_head_stops_with_141_and_writes_no_run(tmp_path: Path) -> None:
    # The story is ~100 KB: more than a pipe holds, so the tool is still writing when head leaves.
    proc = subprocess.run(["bash", "-c", f"{sys.executable} -m course.bandit_train --slow --outdir b | head -2; "
                           "echo \"exit ${PIPESTATUS[0]}\" >&2"], cwd=tmp_path, env=ENV, capture_output=True, text=True,
                          timeout=120)
    assert len(proc.stdout.splitlines()) == 2
    assert proc.stderr.splitlines() == ["interrupted: the output pipe closed (nothing is left half-written)",
                                        f"exit {EXIT_PIPE_CLOSED}"]
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no run, no temporary


def test_a_run_that_finished_before_the_pipe_closed_is_named_whole(tmp_path: Path) -> None:
    proc = run_with_reader_gone(["-m", "course.eval", "--outdir", "r"], tmp_path)
    assert proc.returncode == EXIT_PIPE_CLOSED
    assert proc.stderr == "interrupted: the output pipe closed; r was written whole before\n"
    assert runs.is_project_run(tmp_path / "r") and sorted(p.name for p in tmp_path.iterdir()) == ["r"]


@pytest.mark.parametrize("module", ["course", "course.tinylm"])
def test_the_tool_listing_into_a_closed_pipe_is_141_not_a_traceback(tmp_path: Path, module: str) -> None:
    proc = run_with_reader_gone(["-m", module], tmp_path)
    assert (proc.returncode, proc.stderr) == (EXIT_PIPE_CLOSED,
                                              "interrupted: the output pipe closed (nothing is left half-written)\n")


def test_help_into_a_closed_pipe_is_argparses_exit_0(tmp_path: Path) -> None:
    proc = run_with_reader_gone(["-m", "course.eval", "--help"], tmp_path)
    assert (proc.returncode, proc.stderr) == (0, "")


def test_an_error_line_into_a_closed_stderr_is_still_exit_2(tmp_path: Path) -> None:
    proc = run_with_reader_gone(["-m", "course.eval", "--dataset", "missing.jsonl"], tmp_path, stderr_too=True)
    assert proc.returncode == 2  # not the traceback of a print that failed inside the error handler


@pytest.mark.skipif(NO_TORCH, reason="the tiny LM needs the lm extra")
def test_tinylm_sft_with_its_progress_into_a_closed_pipe_stops_with_141_and_writes_nothing(tmp_path: Path) -> None:
    proc = run_with_reader_gone(["-m", "course.tinylm.sft", "--out", "pi.pt", "--steps", "2", "--n-layer", "1",
                                 "--n-embd", "32", "--n-head", "2", "--batch-size", "2", "--threads", "1"],
                                tmp_path, stderr_too=True)
    assert proc.returncode == EXIT_PIPE_CLOSED
    assert sorted(p.name for p in tmp_path.iterdir()) == []


# sft's last progress line fails (the pipe closed during the dev evaluation): the weights must not
# be left without their manifest. Before the fix the line came between the two writes.
SFT_LAST_LINE_FAILS = """
import sys
import course.tinylm.sft as sft
def info(message):
    if message.startswith("dev pass@1"):
        raise BrokenPipeError(32, "Broken pipe")
sft.info = info
raise SystemExit(sft.main(sys.argv[1:]))
"""


@pytest.mark.skipif(NO_TORCH, reason="the tiny LM needs the lm extra")
def test_tinylm_sft_never_leaves_weights_without_their_manifest_when_the_pipe_closes(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-c", SFT_LAST_LINE_FAILS, "--out", "pi.pt", "--steps", "2",
                           "--n-layer", "1", "--n-embd", "32", "--n-head", "2", "--batch-size", "2", "--threads", "1",
                           "--eval-samples", "1"],
                          cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=300)
    assert proc.returncode == EXIT_PIPE_CLOSED, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pi.pt", "pi_manifest.json"]


def test_a_closed_pipe_inside_a_run_is_not_reported_as_a_file_error(tmp_path: Path) -> None:
    with pytest.raises(BrokenPipeError):
        with runs.atomic_run_dir(tmp_path / "r") as tmp:
            (tmp / "x.txt").write_text("x")
            raise BrokenPipeError(32, "Broken pipe")
    assert sorted(p.name for p in tmp_path.iterdir()) == []


class _FullDisk(io.RawIOBase):
    """A file on a full disk: every write fails with ENOSPC (until ``full`` is cleared, so it closes quietly)."""

    full = True

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:  # type: ignore[no-untyped-def,override]
        if self.full:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return len(data)


def test_stdout_on_a_full_disk_is_one_line_naming_stdout(monkeypatch, capsys) -> None:
    # `python -m course.score ... > out.json` on a full disk: the output is buffered, so the write
    # fails when it is flushed; the system names no path, so the line names <stdout>.
    from course import score

    capsys.readouterr()
    disk = _FullDisk()
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(io.BufferedWriter(disk), encoding="utf-8"))
    code = score.main(["--expected", "3", "Final: 3"])
    disk.full = False
    assert (code, capsys.readouterr().err) == (2, f"error: <stdout>: {os.strerror(errno.ENOSPC)}\n")
