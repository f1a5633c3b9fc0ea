"""Fault suite for run directories and numeric flags (issue #12 classes 1, 2, 3, 4 and 8).

Each test plays a hostile or unlucky user against the one run writer (course.lib.records.runs)
and the one CLI helper (course.cli): --force on a folder the user owns, kill -9 and
SIGTERM mid-run, four runs racing for a default name, read-only and full file systems,
names too long, files where directories should be, NaN/inf/out-of-range flags.
The promise under test: one line on stderr, exit 2, nothing partial left, nothing of
the user's touched.

    python -m pytest tests/faults -q
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from course.lib.records import runs

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}


def _in_new_process(*args: str, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``python -m ARGS`` in a new interpreter: for a run that must be another process (a lock this
    process holds, the run after a kill)."""
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=cwd, env=ENV, capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture
def cli(run_in_process):  # type: ignore[no-untyped-def]
    """``python -m MODULE ARGS`` run inside this process (tests/conftest.py, as runpy runs ``-m``).
    A refusal tested with it happens in argument parsing or in the run writer, where a separate
    interpreter changes nothing but the ~0.2 s it takes to start; what needs a real process
    (signals, kill -9, four racing runs, a lock held by another process) starts one below."""

    def call(module: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        return run_in_process(module, list(args), cwd=cwd)

    return call


def _one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    """The error line of a refused command (argparse adds its usage lines above it)."""
    lines = proc.stderr.strip().splitlines()
    assert lines and "error" in lines[-1], proc.stderr
    assert "Traceback" not in proc.stderr
    return lines[-1]


def _hidden(path: Path) -> list[str]:
    return sorted(p.name for p in path.iterdir() if p.name.startswith("."))


def _make_run(path: Path, tool: str = "course.eval") -> None:
    path.mkdir(parents=True)
    (path / "manifest.json").write_text(json.dumps({"tool": tool, "course_version": "0.1.0"}), encoding="utf-8")
    (path / "summary.json").write_text("{}\n", encoding="utf-8")


@pytest.fixture(scope="module")
def big_inputs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A generated 300k-line dataset and its completions: seconds of course.eval work, so a signal sent
    once scoring has begun (the temporary results.jsonl exists) always lands mid-run."""
    d = tmp_path_factory.mktemp("big")
    ds, comp = d / "big_dev.jsonl", d / "big_completions.jsonl"
    n = 300_000
    ds.write_text("".join(f'{{"expected_answer": {i}, "id": "q{i}", "prompt": "p"}}\n' for i in range(n)),
                  encoding="utf-8")
    comp.write_text(
        "".join(f'{{"completion": "Final: {i}", "id": "q{i}", "policy": "p", "sampling": {{}}}}\n' for i in range(n)),
        encoding="utf-8",
    )
    return ds, comp


# ===========================================================================
# Class 1: nothing a user owns is ever deleted
# ===========================================================================
def test_force_refuses_a_user_folder_and_leaves_it_untouched(cli, tmp_path: Path) -> None:
    user = tmp_path / "v"
    (user / "sub").mkdir(parents=True)
    (user / "notes.txt").write_text("x\n", encoding="utf-8")
    proc = cli("course.eval", "--outdir", "v", "--force", cwd=tmp_path)
    assert proc.returncode == 2
    assert "not a run of this project" in _one_error_line(proc)
    assert sorted(p.name for p in user.iterdir()) == ["notes.txt", "sub"]
    assert _hidden(tmp_path) == []


@pytest.mark.parametrize(
    "manifest",
    ['{"tool": "my.script"}', "[1, 2]", "not json", '{"written_by": "someone-else", "tool": "x"}'],
    ids=["foreign-tool", "not-an-object", "not-json", "foreign-marker"],
)
def test_force_refuses_a_folder_whose_manifest_this_project_did_not_write(tmp_path: Path, manifest: str) -> None:
    (tmp_path / "v").mkdir()
    (tmp_path / "v" / "manifest.json").write_text(manifest, encoding="utf-8")
    assert not runs.is_project_run(tmp_path / "v")


def test_a_run_written_by_an_earlier_version_is_recognised_for_force(tmp_path: Path) -> None:
    _make_run(tmp_path / "old")
    assert runs.is_project_run(tmp_path / "old")


def test_a_sweep_written_before_sweeps_had_a_manifest_is_recognised(tmp_path: Path) -> None:
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "sweep.csv").write_text("beta\n0\n", encoding="utf-8")
    _make_run(tmp_path / "s" / "beta_0", tool="course.tinylm.rl")
    assert runs.is_project_run(tmp_path / "s")
    (tmp_path / "s" / "beta_1").mkdir()  # a sub-folder that is not a run: not a sweep of ours
    assert not runs.is_project_run(tmp_path / "s")


def test_a_symlink_to_a_run_is_not_a_run_force_may_replace(tmp_path: Path) -> None:
    _make_run(tmp_path / "r")
    (tmp_path / "link").symlink_to(tmp_path / "r")
    assert not runs.is_project_run(tmp_path / "link")


def test_force_replaces_a_run_of_this_project_and_marks_the_new_manifest(cli, tmp_path: Path) -> None:
    # a run of the same tool: another tool's is refused (test_force_faults)
    _make_run(tmp_path / "r", tool="course.toy_mdp")
    proc = cli("course.toy_mdp", "--steps", "3", "--outdir", "r", "--force", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["written_by"] == "rl-foundations-llm" and manifest["tool"] == "course.toy_mdp"
    assert _hidden(tmp_path) == []


def test_a_failed_force_run_keeps_the_old_run_intact(cli, tmp_path: Path) -> None:
    _make_run(tmp_path / "r")
    before = sorted((p.name, p.read_bytes()) for p in (tmp_path / "r").iterdir())
    proc = cli("course.eval", "--dataset", "missing.jsonl", "--completions", "missing.jsonl", "--outdir", "r",
               "--force", cwd=tmp_path)
    assert proc.returncode == 2
    assert sorted((p.name, p.read_bytes()) for p in (tmp_path / "r").iterdir()) == before
    assert _hidden(tmp_path) == []


# ===========================================================================
# Class 2: no half-written run anywhere, not even hidden
# ===========================================================================
@pytest.mark.parametrize("outdir", ["dangling", "loop", "."])
def test_an_unusable_outdir_is_one_line_and_leaves_nothing(cli, tmp_path: Path, outdir: str) -> None:
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    proc = cli("course.eval", "--outdir", outdir, "--force", cwd=tmp_path)
    assert proc.returncode == 2
    _one_error_line(proc)
    assert _hidden(tmp_path) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dangling", "loop"]


def _start_eval_and_wait_for_temp(tmp_path: Path, big: tuple[Path, Path]) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "course.eval", "--dataset", str(big[0]), "--completions", str(big[1]),
         "--outdir", "out"],
        cwd=tmp_path, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    deadline = time.monotonic() + 30
    while not (tmp_path / ".out.tmp" / "results.jsonl").exists():  # mid-run: scoring has begun
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.02)
    return proc


def test_sigterm_mid_run_removes_the_temporary_directory(tmp_path: Path, big_inputs: tuple[Path, Path]) -> None:
    proc = _start_eval_and_wait_for_temp(tmp_path, big_inputs)
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=30)
    assert proc.returncode == 128 + signal.SIGTERM
    assert list(tmp_path.iterdir()) == []


def test_a_run_killed_with_sigkill_is_cleaned_by_the_next_run(tmp_path: Path, big_inputs: tuple[Path, Path]) -> None:
    proc = _start_eval_and_wait_for_temp(tmp_path, big_inputs)
    proc.kill()
    proc.communicate(timeout=30)
    assert _hidden(tmp_path) == [".out.tmp"]  # SIGKILL cannot be caught: the leftover is visible...
    assert not (tmp_path / "out").exists()  # ...but never under the run's name
    nxt = _in_new_process("course.toy_mdp", "--steps", "2", "--outdir", "next", cwd=tmp_path)
    assert nxt.returncode == 0, nxt.stderr
    assert _hidden(tmp_path) == []  # the next run in the same parent removed it


def test_a_live_runs_temporary_directory_is_not_cleaned(tmp_path: Path) -> None:
    tmp = tmp_path / ".busy.tmp"
    tmp.mkdir()
    (tmp / runs.OWNER_FILE).write_text(f"{runs.MARKER} {os.uname().nodename} {os.getpid()}\n", encoding="utf-8")
    assert runs.clean_stale(tmp_path) == []
    assert tmp.exists()


def test_a_run_moved_aside_by_a_killed_force_is_restored(tmp_path: Path) -> None:
    old = tmp_path / ".r.old"
    _make_run(old / "run")
    (old / runs.OWNER_FILE).write_text(f"{runs.MARKER} {os.uname().nodename} 999999999\n", encoding="utf-8")
    runs.clean_stale(tmp_path)
    assert runs.is_project_run(tmp_path / "r") and _hidden(tmp_path) == []


# ===========================================================================
# Class 3: concurrent runs do not collide
# ===========================================================================
def test_four_parallel_evals_without_outdir_get_four_names(tmp_path: Path) -> None:
    procs = [
        subprocess.Popen([sys.executable, "-m", "course.eval"], cwd=tmp_path, env=ENV, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
        for _ in range(4)
    ]
    codes = [p.wait(timeout=60) for p in procs]
    assert codes == [0, 0, 0, 0]
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == ["eval_001", "eval_002", "eval_003", "eval_004"]


def test_a_second_run_on_a_busy_outdir_is_refused_at_once(tmp_path: Path) -> None:
    held = runs.resolve_outdir(tmp_path / "r", force=False, prefix="eval")
    try:
        proc = _in_new_process("course.toy_mdp", "--steps", "2", "--outdir", str(held), cwd=tmp_path)
        assert proc.returncode == 2 and "another run" in _one_error_line(proc)
    finally:
        runs.release_pending()
    assert list(tmp_path.iterdir()) == []


# ===========================================================================
# Class 4: OS errors are one-line errors
# ===========================================================================
def test_outdir_under_a_file_is_one_line(cli, tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x", encoding="utf-8")
    proc = cli("course.eval", "--outdir", "f/run", cwd=tmp_path)
    assert proc.returncode == 2 and "f: exists and is not a directory" in _one_error_line(proc)


def test_runs_being_a_file_is_one_line(cli, tmp_path: Path) -> None:
    (tmp_path / "runs").write_text("x", encoding="utf-8")
    proc = cli("course.bandit_train", "--steps", "2", cwd=tmp_path)
    assert proc.returncode == 2 and "runs: exists and is not a directory" in _one_error_line(proc)


def test_a_name_too_long_is_one_line(cli, tmp_path: Path) -> None:
    proc = cli("course.kl_tradeoff_demo", "--outdir", "a" * 300, cwd=tmp_path)
    assert proc.returncode == 2 and "file name too long" in _one_error_line(proc)
    assert list(tmp_path.iterdir()) == []


# find_spec, not importorskip: the refusal comes before the tool imports torch, which costs seconds.
@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="the lm extra (PyTorch) is not installed")
def test_a_file_output_under_a_file_is_one_line(cli, tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x", encoding="utf-8")
    proc = cli("course.tinylm.sample", "--dataset", str(ROOT / "data/datasets/math_dev.jsonl"), "--out", "f/x.jsonl",
               cwd=tmp_path)
    assert proc.returncode == 2 and _one_error_line(proc).startswith("error: f")


@pytest.fixture()
def tmpfs(tmp_path: Path):  # type: ignore[no-untyped-def]
    """Mount small tmpfs file systems (root only); always unmounted."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root; the full-disk and read-only cases run only as root")
    mounted: list[Path] = []

    def mount(name: str, options: str) -> Path:
        point = tmp_path / name
        point.mkdir()
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(point)], capture_output=True,
                              text=True)
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
        mounted.append(point)
        return point

    yield mount
    for point in mounted:
        subprocess.run(["umount", str(point)], check=False)


@pytest.mark.parametrize("tool", [["course.eval"], ["course.toy_mdp"], ["course.bandit_train", "--steps", "3000"],
                                  ["course.selection_demo", "--n", "4"]])
def test_a_full_disk_is_one_line_and_leaves_nothing(cli, tmpfs, tool: list[str]) -> None:  # type: ignore[no-untyped-def]
    full = tmpfs("full", "size=16k")
    proc = cli(*tool, "--outdir", str(full / "r"), cwd=full.parent)
    assert proc.returncode == 2
    line = _one_error_line(proc)
    assert "No space left on device" in line and str(full) in line
    assert list(full.iterdir()) == []


def test_a_full_disk_during_force_keeps_the_old_run(cli, tmpfs) -> None:  # type: ignore[no-untyped-def]
    full = tmpfs("full", "size=16k")
    _make_run(full / "r")
    before = sorted((p.name, p.read_bytes()) for p in (full / "r").iterdir())
    proc = cli("course.eval", "--outdir", str(full / "r"), "--force", cwd=full.parent)
    assert proc.returncode == 2 and "No space left on device" in _one_error_line(proc)
    assert sorted((p.name, p.read_bytes()) for p in (full / "r").iterdir()) == before
    assert sorted(p.name for p in full.iterdir()) == ["r"]


def test_a_read_only_directory_is_one_line(cli, tmpfs) -> None:  # type: ignore[no-untyped-def]
    ro = tmpfs("ro", "ro,size=16k")
    proc = cli("course.eval", "--outdir", str(ro / "r"), cwd=ro.parent)
    assert proc.returncode == 2
    assert "Read-only file system" in _one_error_line(proc) and str(ro) in _one_error_line(proc)


# ===========================================================================
# Class 8: no NaN or infinity is accepted or written
# ===========================================================================
BAD_FLAGS = [
    ("course.kl_tradeoff_demo", "--betas", "1e-320"),
    ("course.kl_tradeoff_demo", "--betas", "nan"),
    ("course.toy_mdp", "--rewards", "1e308", "1e308", "1e308", "1e308"),
    ("course.toy_mdp", "--lr", "inf"),
    ("course.toy_mdp", "--step", "5"),  # abbreviations are errors (issue #16 item 8)
    ("course.bandit_train", "--lr", "nan"),
    ("course.bandit_train", "--seed", "-1"),
    ("course.bandit_train", "--steps", "0"),
    ("course.tinylm.sample", "--dataset", "d.jsonl", "--out", "o.jsonl", "--temperature", "nan"),
    ("course.tinylm.sample", "--dataset", "d.jsonl", "--out", "o.jsonl", "--top-p", "1.5"),
    ("course.tinylm.sample", "--dataset", "d.jsonl", "--out", "o.jsonl", "--threads", "100000"),
    ("course.tinylm.rl", "--beta", "nan"),
    ("course.tinylm.rl", "--lr", "nan"),
    ("course.tinylm.rl", "--temperature", "-inf"),
    ("course.tinylm.sweep", "--betas", "0", "inf"),
    ("course.tinylm.sft", "--lr", "nan"),
    ("course.exercises.planted_bugs", "--bug", "kl", "--beta", "nan"),
    ("course.eval", "--outdi", "x"),
]


@pytest.mark.parametrize("argv", BAD_FLAGS, ids=[" ".join(a) for a in BAD_FLAGS])
def test_a_bad_number_is_refused_before_any_work(cli, tmp_path: Path, argv: tuple[str, ...]) -> None:
    proc = cli(*argv, cwd=tmp_path)
    assert proc.returncode == 2
    _one_error_line(proc)
    assert list(tmp_path.iterdir()) == []


def test_the_run_writer_refuses_to_write_nan(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="non-finite"):
        runs.write_json(tmp_path / "summary.json", {"x": float("nan")})
    assert not (tmp_path / "summary.json").exists()


@pytest.mark.parametrize("argv", [["--betas", "0.001", "1000"], ["--betas", "0.001"]])
def test_the_extreme_betas_allowed_give_finite_numbers(cli, tmp_path: Path, argv: list[str]) -> None:
    proc = cli("course.kl_tradeoff_demo", *argv, "--outdir", "k", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    text = (tmp_path / "k" / "kl_tradeoff.csv").read_text(encoding="utf-8").lower()
    assert "nan" not in text and "inf" not in text


def test_the_extreme_rewards_allowed_log_finite_numbers(cli, tmp_path: Path) -> None:
    proc = cli("course.toy_mdp", "--rewards", "1e6", "-1000000", "1e6", "-1000000", "--lr", "100", "--steps", "50",
               "--outdir", "m", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    for f in (tmp_path / "m").iterdir():
        text = f.read_text(encoding="utf-8").lower()
        assert "nan" not in text and "infinity" not in text, f.name


# ===========================================================================
# Every tool's --help still works
# ===========================================================================
TOOLS = [
    "course.eval", "course.selection_demo", "course.bandit_train", "course.toy_mdp", "course.kl_tradeoff_demo",
    "course.gate", "course.inspect_run", "course.kata", "course.red_team", "course.golden", "course.rollout_sample",
    "course.token_inspect", "course.score", "course.rubrics", "course.import_completions", "course.report",
    "course.tinylm.rl", "course.tinylm.sample",
    "course.tinylm.sweep", "course.tinylm.sft", "course.tinylm.sft_data", "course.tinylm.shift",
    "course.exercises.planted_bugs",
]


def test_every_tools_help_still_works_and_ends_with_an_example() -> None:
    # One real interpreter runs each tool as `python -m TOOL --help` would (runpy, as __main__), so
    # the entry point itself is covered; each tool's own test file checks its help's content.
    code = (
        "import contextlib, io, runpy, sys, warnings\n"
        "warnings.simplefilter('ignore', RuntimeWarning)  # runpy: a tool imported by an earlier one\n"
        "for name in sys.argv[1:]:\n"
        "    out = io.StringIO()\n"
        "    sys.argv = [name, '--help']\n"
        "    with contextlib.redirect_stdout(out):\n"
        "        try:\n"
        "            runpy.run_module(name, run_name='__main__', alter_sys=True)\n"
        "        except SystemExit as e:\n"
        "            assert e.code in (0, None), (name, e.code)\n"
        "        else:\n"
        "            raise AssertionError(f'{name} --help did not exit')\n"
        "    assert 'example' in out.getvalue(), name\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, *TOOLS], env=ENV, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
