"""Fault suite: every OS error names its path, and every tool checks its output before any work
(issue 30 item 11, the tools outside course.llm).

The attacks: ``course.eval --completions /proc/self/mem`` printed ``error: Input/output error`` and
no path (a read error reaches Python without a file name); ``course.report`` and ``course.gate
--html`` read and rendered every run before finding that ``--out`` was a FIFO; ``--force`` let an
output replace the very file the command reads (``course.datasets import d.jsonl --out d.jsonl``)
or a run's own ``results.jsonl`` (``course.report runs/a --out runs/a/results.jsonl``). The
promises: ``course.lib.records.jsonl.open_input`` names the file in any read error;
``refuse_existing`` (and the report's ``check_output``) is called before any work and refuses an
output that is one of the command's inputs, even with ``--force``.

    python -m pytest tests/faults/test_path_and_output_check_faults.py -q
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from course import gate, report
from course.errors import CourseError
from course.lib.records.jsonl import open_input, refuse_existing
from course.lib.records.manifest import sha256_file

ROOT = Path(__file__).resolve().parents[2]
DEV = ROOT / "data/datasets/math_dev.jsonl"
ROLLOUTS = ROOT / "data/rollouts/frozen_rollouts_dev.jsonl"
MEM = Path("/proc/self/mem")  # opens as a regular file of size 0; every read at offset 0 fails with EIO
needs_mem = pytest.mark.skipif(not MEM.exists(), reason="needs Linux /proc/self/mem")


@pytest.fixture
def cli(run_in_process):  # type: ignore[no-untyped-def]
    def call(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        return run_in_process(args[0], list(args[1:]), cwd=cwd)

    return call


def error_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in proc.stderr, proc.stderr
    return lines[0]


# ===========================================================================
# A read error names the file
# ===========================================================================
@needs_mem
@pytest.mark.parametrize("flag", ["--completions", "--dataset"])
def test_a_read_error_of_an_eval_input_names_the_file(cli, tmp_path: Path, flag: str) -> None:
    given = {"--dataset": str(DEV), "--completions": str(ROLLOUTS), flag: str(MEM)}
    proc = cli("course.eval", *(x for kv in given.items() for x in kv), "--outdir", "r", cwd=tmp_path)
    assert error_line(proc) == f"error: {MEM}: Input/output error"
    assert not (tmp_path / "r").exists()


@needs_mem
def test_every_read_through_the_one_opener_names_the_file_in_its_error(tmp_path: Path) -> None:
    with open_input(MEM, "a file") as f:
        with pytest.raises(OSError) as caught:
            f.readline()
    assert caught.value.filename == str(MEM)
    with pytest.raises(OSError) as caught:
        sha256_file(MEM)
    assert caught.value.filename == str(MEM)


# ===========================================================================
# Outputs are checked before any work
# ===========================================================================
def test_course_report_refuses_a_fifo_output_before_reading_any_run(cli, tmp_path: Path, monkeypatch) -> None:
    os.mkfifo(tmp_path / "page.html")
    monkeypatch.setattr(report, "build", lambda *a: pytest.fail("the runs were read before the output was checked"))
    line = error_line(cli("course.report", "runs/a", "--out", "page.html", cwd=tmp_path))
    assert "page.html: is not a regular file (a FIFO" in line


def test_course_gate_html_refuses_a_fifo_before_reading_either_run(cli, tmp_path: Path, monkeypatch) -> None:
    os.mkfifo(tmp_path / "gate.html")
    monkeypatch.setattr(gate, "load_pair", lambda *a: pytest.fail("a run was read before the output was checked"))
    line = error_line(cli("course.gate", "--baseline", "a", "--candidate", "b", "--min-delta", "0", "--html",
                          "gate.html", cwd=tmp_path))
    assert "gate.html: is not a regular file (a FIFO" in line


def test_the_report_never_replaces_a_file_of_a_run_it_shows_even_with_force(cli, tmp_path: Path) -> None:
    assert cli("course.eval", "--dataset", str(DEV), "--completions", str(ROLLOUTS), "--outdir", "a",
               cwd=tmp_path).returncode == 0
    before = (tmp_path / "a/results.jsonl").read_bytes()
    line = error_line(cli("course.report", "a", "--out", "a/results.jsonl", "--force", cwd=tmp_path))
    assert "a/results.jsonl: is a file of the run a shown in the report" in line
    assert (tmp_path / "a/results.jsonl").read_bytes() == before


# ===========================================================================
# An output is never one of the command's inputs, even with --force
# ===========================================================================
def test_an_import_whose_output_is_its_own_source_is_refused_even_with_force(cli, tmp_path: Path) -> None:
    (tmp_path / "d.jsonl").write_bytes(DEV.read_bytes())
    line = error_line(cli("course.datasets", "import", "--format", "gsm8k", "d.jsonl", "--out", "d.jsonl", "--force",
                          cwd=tmp_path))
    assert line.startswith("error: d.jsonl: is the same file as the input d.jsonl")
    assert (tmp_path / "d.jsonl").read_bytes() == DEV.read_bytes()


def test_an_output_reaching_an_input_through_a_symbolic_link_is_refused(cli, tmp_path: Path) -> None:
    (tmp_path / "c.jsonl").write_bytes(ROLLOUTS.read_bytes())
    (tmp_path / "link.jsonl").symlink_to("c.jsonl")
    line = error_line(cli("course.import_completions", "--format", "plain", "--policy", "p", "--sampling", "{}",
                          "--out", "link.jsonl", "--force", "c.jsonl", cwd=tmp_path))
    assert "link.jsonl: is the same file as the input c.jsonl" in line
    assert (tmp_path / "c.jsonl").read_bytes() == ROLLOUTS.read_bytes()


def test_an_existing_file_inside_an_input_folder_is_refused_but_a_new_one_beside_it_is_not(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in/part.arrow").write_bytes(b"data")
    with pytest.raises(CourseError, match="is a file inside the input"):
        refuse_existing(tmp_path / "in/part.arrow", True, inputs=(tmp_path / "in",))
    refuse_existing(tmp_path / "in/new.jsonl", False, inputs=(tmp_path / "in",))  # replaces nothing: allowed
