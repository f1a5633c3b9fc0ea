"""Fault suite: nothing of the user's is ever removed or renamed (issue 23 item 1, and item 9's report leftover).

The attack: folders a user really has, named the way this project names its temporaries
(``.config.old``, ``.cache.tmp``, ``.photos.tmp-2019``, ``.notes.old-31337``, ``.thesis.old/run``),
all older than any grace period, beside an ``--outdir``, inside ``runs/`` and beside a single-file
output. Before the fix, the stale-temporary cleaner deleted the first three with their contents and
renamed the last two to ``notes`` and ``thesis``. The promise: a temporary is touched only when it
carries this project's ownership marker (``course.lib.records.temporaries``), so every byte, name and mtime
of the user's folders survives every tool; what the project itself left behind after a kill is
still cleaned.

    python -m pytest tests/faults/test_ownership_faults.py -q
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from small_inputs import gsm8k_file, plain_completions_file  # tests/small_inputs.py

from course.lib.records import runs, temporaries

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
DEV = ROOT / "data/datasets/math_dev.jsonl"
ROLLOUTS = ROOT / "data/rollouts/frozen_rollouts_dev.jsonl"
PACK = ROOT / "data/rollouts/selection_pack_dev.jsonl"
LONG_AGO = 1_577_836_800  # 2020-01-01: far older than any grace period a cleaner could apply

# The folders, with what a user keeps in them.
USER_FOLDERS = {
    ".config.old/settings.ini": b"[ui]\ntheme = dark\n",
    ".config.old/profiles/work.ini": b"[work]\n",
    ".cache.tmp/blob.bin": bytes(range(256)),
    ".photos.tmp-2019/holiday.jpg": b"\xff\xd8\xff\xe0 not really a jpeg",
    ".notes.old-31337/todo.txt": b"buy milk\n",
    ".thesis.old/run/chapter1.tex": b"\\chapter{Introduction}\n",
    # A run an earlier version of this project moved aside (no marker): still the user's data.
    ".mine.old-2/manifest.json": json.dumps({"tool": "course.eval", "course_version": "0.1.0"}).encode(),
}


def plant_user_folders(parent: Path) -> None:
    parent.mkdir(parents=True, exist_ok=True)
    for rel, data in USER_FOLDERS.items():
        path = parent / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    for path in sorted(parent.rglob("*"), reverse=True):  # children first, so a folder's mtime stays set
        if path.name.startswith(".") or any(part.startswith(".") for part in path.relative_to(parent).parts):
            os.utime(path, (LONG_AGO, LONG_AGO), follow_symlinks=False)


def user_state(parent: Path) -> list[tuple[str, bytes | None, int]]:
    """Every path under the user's folders: name, bytes (None for a folder), mtime."""
    tops = sorted({rel.split("/")[0] for rel in USER_FOLDERS})
    state = []
    for top in tops:
        for path in [parent / top, *sorted((parent / top).rglob("*"))] if (parent / top).exists() else []:
            state.append((str(path.relative_to(parent)), path.read_bytes() if path.is_file() else None,
                          path.lstat().st_mtime_ns))
    return state


def assert_untouched(parent: Path, before: list[tuple[str, bytes | None, int]], *, runs: tuple[str, ...] = ()) -> None:
    assert user_state(parent) == before
    for renamed in sorted({"notes", "thesis", "config", "cache", "photos", "mine"} - set(runs)):
        assert not (parent / renamed).exists(), f"{renamed} appeared: a user's folder was renamed"


def one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    """The one error line (a tool may print progress lines before it, never a traceback)."""
    lines = proc.stderr.strip().splitlines()
    errors = [line for line in lines if "error" in line.lower() or "Traceback" in line]
    assert len(errors) == 1 and lines[-1] == errors[0] and errors[0].startswith("error: "), proc.stderr
    return errors[0]


@pytest.fixture
def cli(run_in_process):  # type: ignore[no-untyped-def]
    def call(module: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        return run_in_process(module, list(args), cwd=cwd)

    return call


def _make_run(path: Path, tool: str = "course.toy_mdp") -> None:
    # A run of the tool these tests rerun with --force (another tool's run is refused: test_force_faults).
    path.mkdir(parents=True)
    (path / "manifest.json").write_text(json.dumps({"tool": tool, "course_version": "0.1.0"}), encoding="utf-8")


# ===========================================================================
# The user's folders survive every kind of writer
# ===========================================================================
RUN_TOOLS = {
    "eval --outdir": ["course.eval", "--dataset", str(DEV), "--completions", str(ROLLOUTS), "--outdir", "out/r"],
    "selection_demo --outdir": ["course.selection_demo", "--dataset", str(DEV), "--samples", str(PACK), "--n", "2",
                                "--outdir", "out/r"],
    "toy_mdp --outdir": ["course.toy_mdp", "--steps", "3", "--outdir", "out/r"],
    "kl_tradeoff_demo --outdir": ["course.kl_tradeoff_demo", "--outdir", "out/r"],
    "toy_mdp in runs/": ["course.toy_mdp", "--steps", "3"],
}


@pytest.mark.parametrize("tool", sorted(RUN_TOOLS))
def test_a_run_never_touches_a_users_folders_named_like_temporaries(cli, tmp_path: Path, tool: str) -> None:
    parent = tmp_path / ("runs" if tool.endswith("runs/") else "out")
    plant_user_folders(parent)
    before = user_state(parent)
    proc = cli(*RUN_TOOLS[tool], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert_untouched(parent, before)


def test_force_never_touches_a_users_folders_named_like_temporaries(cli, tmp_path: Path) -> None:
    plant_user_folders(tmp_path / "out")
    _make_run(tmp_path / "out" / "r")
    before = user_state(tmp_path / "out")
    proc = cli("course.toy_mdp", "--steps", "3", "--outdir", "out/r", "--force", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert_untouched(tmp_path / "out", before)
    assert json.loads((tmp_path / "out/r/manifest.json").read_text())["tool"] == "course.toy_mdp"




FILE_TOOLS = {
    "report --out": lambda d: ["course.report", str(d / "run"), "--out", "out/page.html"],
    "datasets import --out": lambda d: ["course.datasets", "import", str(gsm8k_file(d / "g.jsonl")),
                                        "--format", "gsm8k", "--out", "out/ds.jsonl"],
    "import_completions --out": lambda d: ["course.import_completions",
                                           str(plain_completions_file(d / "p.jsonl")),
                                           "--format", "plain", "--policy", "p", "--sampling", "{}",
                                           "--out", "out/c.jsonl"],
}


@pytest.mark.parametrize("tool", sorted(FILE_TOOLS))
def test_a_single_file_writer_never_touches_a_users_folders_named_like_temporaries(
    cli, tmp_path: Path, tool: str
) -> None:
    assert cli("course.toy_mdp", "--steps", "3", "--outdir", "run", cwd=tmp_path).returncode == 0
    plant_user_folders(tmp_path / "out")
    before = user_state(tmp_path / "out")
    proc = cli(*FILE_TOOLS[tool](tmp_path), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert_untouched(tmp_path / "out", before)
    assert [p.name for p in (tmp_path / "out").iterdir() if p.name.startswith(".") and ".tmp" in p.name and
            p.name not in (".cache.tmp", ".photos.tmp-2019")] == []  # and the writer's own temporary is gone


# ===========================================================================
# A name the run needs is taken by a user's folder: one line, before any work, folder untouched
# ===========================================================================
def test_a_users_folder_holding_the_runs_temporary_name_stops_the_run_untouched(cli, tmp_path: Path) -> None:
    plant_user_folders(tmp_path)
    before = user_state(tmp_path)
    proc = cli("course.toy_mdp", "--steps", "3", "--outdir", "cache", cwd=tmp_path)
    assert proc.returncode == 2
    line = one_error_line(proc)
    assert ".cache.tmp is in the way" in line and "not this project's" in line
    assert_untouched(tmp_path, before)


def test_force_stops_before_any_work_when_a_users_folder_holds_the_old_runs_name(cli, tmp_path: Path) -> None:
    plant_user_folders(tmp_path)
    _make_run(tmp_path / "config")
    before = user_state(tmp_path)
    proc = cli("course.toy_mdp", "--steps", "3", "--outdir", "config", "--force", cwd=tmp_path)
    assert proc.returncode == 2
    assert ".config.old is in the way" in one_error_line(proc)
    assert_untouched(tmp_path, before, runs=("config",))
    assert (tmp_path / "config/manifest.json").read_text() == json.dumps(
        {"tool": "course.toy_mdp", "course_version": "0.1.0"}
    )  # old run kept


def test_a_single_file_output_whose_temporary_name_a_user_holds_is_refused_untouched(cli, tmp_path: Path) -> None:
    assert cli("course.toy_mdp", "--steps", "3", "--outdir", "run", cwd=tmp_path).returncode == 0
    (tmp_path / ".page.html.tmp").mkdir()
    (tmp_path / ".page.html.tmp" / "mine.txt").write_text("mine\n")
    proc = cli("course.report", "run", "--out", "page.html", cwd=tmp_path)
    assert proc.returncode == 2 and ".page.html.tmp is in the way" in one_error_line(proc)
    assert (tmp_path / ".page.html.tmp" / "mine.txt").read_text() == "mine\n"
    assert not (tmp_path / "page.html").exists()


# ===========================================================================
# The marker: written first, checked exactly
# ===========================================================================
def _dead_pid() -> int:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    return dead.pid


def test_the_marker_is_the_first_and_only_thing_in_a_new_temporary(tmp_path: Path) -> None:
    folder = temporaries.make(tmp_path / "r")
    try:
        assert sorted(p.name for p in folder.iterdir()) == [".owner"]
        marker = json.loads((folder / ".owner").read_text())
        assert marker["written_by"] == "rl-foundations-llm" and marker["pid"] == os.getpid()
        assert (marker["name"], marker["kind"]) == ("r", "tmp")
    finally:
        temporaries.remove(folder)
    assert list(tmp_path.iterdir()) == []


def test_a_marker_naming_another_folder_is_not_trusted(tmp_path: Path) -> None:
    folder = tmp_path / ".a.tmp"
    folder.mkdir()
    marker = {"written_by": "rl-foundations-llm", "host": os.uname().nodename, "pid": _dead_pid(), "name": "b",
              "kind": "tmp"}
    (folder / ".owner").write_text(json.dumps(marker) + "\n")
    (folder / "data.txt").write_text("kept\n")
    assert temporaries.clean_stale(tmp_path) == []
    assert (folder / "data.txt").read_text() == "kept\n"


# Markers that are not this project's: what a user (or a disk error) could leave in a `.owner`.
GARBAGE_MARKERS = {
    "invalid UTF-8": b"\xff\xfe\x80 rl-foundations-llm host 1\n",
    "JSON nested 3,000 deep": b'{"written_by": ' + b"[" * 3000,
    "a JSON array": b'["rl-foundations-llm", "host", 1]\n',
    "NUL bytes": b"\x00" * 64,
    "the old form, pid not digits": b"rl-foundations-llm host 12a\n",
    "longer than a marker": b"rl-foundations-llm " + b"x" * 10_000 + b" 1\n",
}


@pytest.mark.parametrize("kind", sorted(GARBAGE_MARKERS))
def test_a_garbage_marker_is_not_ours_and_never_raises(tmp_path: Path, kind: str) -> None:
    folder = tmp_path / ".r.tmp"
    folder.mkdir()
    (folder / ".owner").write_bytes(GARBAGE_MARKERS[kind])
    (folder / "data.txt").write_text("kept\n")
    assert temporaries.read_owner(folder) is None and temporaries.owned(folder) is None
    assert temporaries.clean_stale(tmp_path) == []
    assert (folder / "data.txt").read_text() == "kept\n"


def test_a_run_whose_name_a_garbage_marked_folder_holds_stops_in_one_line(cli, tmp_path: Path) -> None:
    folder = tmp_path / "out" / ".r.tmp"
    folder.mkdir(parents=True)
    (folder / ".owner").write_bytes(GARBAGE_MARKERS["JSON nested 3,000 deep"])
    proc = cli("course.toy_mdp", "--steps", "3", "--outdir", "out/r", cwd=tmp_path)
    assert proc.returncode == 2
    assert "not this project's" in one_error_line(proc)
    assert sorted(p.name for p in folder.iterdir()) == [".owner"]


def test_a_dead_processs_marked_temporary_is_cleaned_and_a_live_ones_is_not(tmp_path: Path) -> None:
    code = ("import sys; from pathlib import Path; from course.lib.records import temporaries; "
            "temporaries.make(Path(sys.argv[1]))")
    subprocess.run([sys.executable, "-c", code, str(tmp_path / "gone")], env=ENV, check=True)
    mine = temporaries.make(tmp_path / "alive")
    try:
        assert temporaries.clean_stale(tmp_path) == [tmp_path / ".gone.tmp"]
        assert sorted(p.name for p in tmp_path.iterdir()) == [".alive.tmp"]
    finally:
        temporaries.remove(mine)


def test_a_run_a_killed_force_had_set_aside_is_put_back_by_the_next_run(tmp_path: Path) -> None:
    _make_run(tmp_path / "r")
    code = ("import os; from pathlib import Path; from course.lib.records import temporaries\n"
            "temporaries.make(Path('r'), 'old')\n"
            "os.rename('r', '.r.old/run')\n"
            "os.kill(os.getpid(), 9)  # killed between setting the old run aside and renaming the new one in\n")
    assert subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=ENV).returncode == -signal.SIGKILL
    assert not (tmp_path / "r").exists()
    runs.clean_stale(tmp_path)
    assert runs.is_project_run(tmp_path / "r") and sorted(p.name for p in tmp_path.iterdir()) == ["r"]


def test_a_removal_cut_short_is_finished_by_the_next_cleaner(tmp_path: Path) -> None:
    # A cleaner killed half-way leaves its claimed folder (.NAME.tmp.gone-PID), still marked.
    code = ("import os, sys; from pathlib import Path; from course.lib.records import temporaries\n"
            "folder = temporaries.make(Path(sys.argv[1]))\n"
            "os.rename(folder, str(folder) + '.gone-%d' % os.getpid())\n")
    subprocess.run([sys.executable, "-c", code, str(tmp_path / "x")], env=ENV, check=True)
    [claimed] = tmp_path.iterdir()
    assert claimed.name.startswith(".x.tmp.gone-")
    assert temporaries.clean_stale(tmp_path) == [claimed]
    assert list(tmp_path.iterdir()) == []


# ===========================================================================
# Item 9: a killed course.report leaves a temporary the next writer removes
# ===========================================================================
def test_a_temporary_left_by_a_killed_report_is_removed_by_the_next_report(cli, tmp_path: Path) -> None:
    assert cli("course.toy_mdp", "--steps", "3", "--outdir", "run", cwd=tmp_path).returncode == 0
    # course.report killed with SIGKILL at the moment it would rename its page into place.
    code = ("import os, sys\n"
            "os.replace = lambda *a, **k: os.kill(os.getpid(), 9)\n"
            "from course import report\n"
            "report.main(['run'])\n")
    killed = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=ENV, capture_output=True, text=True)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert [p.name for p in (tmp_path / "run").iterdir() if p.name.startswith(".")] != []  # the kill left one
    proc = cli("course.report", "run", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert [p.name for p in (tmp_path / "run").iterdir() if p.name.startswith(".")] == []


def test_a_cleaner_that_loses_a_race_gives_a_live_runs_new_folder_back(tmp_path: Path) -> None:
    # Cleaner A judged .r.tmp stale; before A renames it, another cleaner removed it and a live run
    # made a new .r.tmp under the freed name (the inode number may even be reused). A must give it back.
    code = ("import sys; from pathlib import Path; from course.lib.records import temporaries; "
            "temporaries.make(Path(sys.argv[1]))")
    subprocess.run([sys.executable, "-c", code, str(tmp_path / "r")], env=ENV, check=True)
    stale = tmp_path / ".r.tmp"
    judged, owner = os.lstat(stale), temporaries.owned(stale)
    assert owner is not None
    temporaries.remove(stale)  # the other cleaner
    live = temporaries.make(tmp_path / "r")  # the live run, this process
    try:
        assert temporaries._claim(stale, judged, owner) is None
        assert temporaries.owned(live) is not None and temporaries.owned(live).pid == os.getpid()
        assert sorted(p.name for p in tmp_path.iterdir()) == [".r.tmp"]
    finally:
        temporaries.remove(live)
