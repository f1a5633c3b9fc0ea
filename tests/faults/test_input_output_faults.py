"""Fault suite: what goes in and what comes out (issue 23 items 2, 3's command-line part, 5 and 9's parts).

Each class is fixed at one place every tool goes through, and tested here through the tools:

* Hangs and unbounded reads: every input through ``course.lib.records.jsonl.open_input`` (regular files
  only, never blocking) and a cap on what is read (``MAX_READ``); every output through
  ``course.lib.records.temporaries`` or ``refuse_existing`` (a FIFO or a device is never written into).
  Real FIFOs, with an alarm so that a regression fails instead of hanging the suite.
* Command-line arguments that are not UTF-8, and JSON given on the command line that the
  reader would refuse: ``course.cli.run`` and ``course.lib.records.jsonl.loads_document``.
* Files the project writes that its own reader refuses: ``course.lib.records.jsonl.dumps_line`` /
  ``dumps_pretty`` (the one writer) refuse NaN, infinity, deep nesting, huge integers, lone
  surrogates; every numeric flag is bounded (``course.cli``); diverged training is refused.
* Repeated JSON keys (``path:line``), ``--min-lr`` above ``--lr``, OS errors naming the
  user's path and never a temporary's.

The promise in every case: one line on stderr, exit 2, nothing written, nothing hanging.

    python -m pytest tests/faults/test_input_output_faults.py -q
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from small_inputs import gsm8k_file, plain_completions_file  # tests/small_inputs.py

from course.errors import CourseError
from course.lib.records import jsonl, runs, temporaries

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
DEV = ROOT / "data/datasets/math_dev.jsonl"
ROLLOUTS = ROOT / "data/rollouts/frozen_rollouts_dev.jsonl"
HAS_TORCH = importlib.util.find_spec("torch") is not None
needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="the lm extra (PyTorch) is not installed")


@pytest.fixture
def cli(run_in_process, tmp_path: Path):  # type: ignore[no-untyped-def]
    """``python -m MODULE ARGS`` in this process, in ``tmp_path``, with a 30 s alarm against hangs."""

    def call(module: str, *args: str, cwd: Path = tmp_path, stdin: str = "") -> subprocess.CompletedProcess[str]:
        def hang(signum: int, frame: object) -> None:
            raise TimeoutError(f"{module} hung")

        previous = signal.signal(signal.SIGALRM, hang)
        signal.alarm(30)
        try:
            return run_in_process(module, list(args), cwd=cwd, stdin=stdin)
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, previous)

    return call


def one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    """The refusal: exit 2, one error line last on stderr (progress lines may come before it), no traceback."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr and "TimeoutError" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    errors = [line for line in lines if "error" in line]
    assert len(errors) == 1 and lines[-1] == errors[0], proc.stderr
    return errors[0]


def listing(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


def is_fifo(path: Path) -> bool:
    return stat.S_ISFIFO(os.lstat(path).st_mode)


@pytest.fixture(scope="module")
def demo_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One run of each kind the report reads extra files of (kl_tradeoff.csv, ablation.txt) and an eval run."""
    from conftest import run_module_in_process

    where = tmp_path_factory.mktemp("runs")
    for args in (["course.kl_tradeoff_demo", "--outdir", "kl"], ["course.bandit_train", "--ablation", "--seeds", "3",
                 "--steps", "5", "--outdir", "ablation"], ["course.eval", "--outdir", "eval"]):
        assert run_module_in_process(args[0], args[1:], cwd=where).returncode == 0
    return where


def _copy_run(demo_runs: Path, name: str, tmp_path: Path) -> Path:
    import shutil

    return Path(shutil.copytree(demo_runs / name, tmp_path / name))


# ===========================================================================
# Item 2: every input through the one opener; nothing waits on a FIFO; reads are capped
# ===========================================================================
@pytest.mark.parametrize("run_name, file_name", [("kl", "kl_tradeoff.csv"), ("ablation", "ablation.txt")])
def test_report_refuses_a_fifo_inside_a_run_without_waiting_for_a_writer(cli, demo_runs: Path, tmp_path: Path,
                                                                         run_name: str, file_name: str) -> None:
    run = _copy_run(demo_runs, run_name, tmp_path)
    (run / file_name).unlink()
    os.mkfifo(run / file_name)
    line = one_error_line(cli("course.report", str(run)))
    assert f"{run / file_name}: is not a regular file (a FIFO" in line
    assert not (run / "report.html").exists()


@pytest.mark.parametrize("tool", ["report --out", "report --out --force", "gate --html", "gate --html --force"])
def test_a_fifo_as_the_html_output_is_refused_and_never_written_into(
    cli, demo_runs: Path, tmp_path: Path, tool: str
) -> None:
    run = _copy_run(demo_runs, "eval", tmp_path)
    os.mkfifo(tmp_path / "page.html")
    force = ["--force"] if tool.endswith("--force") else []
    if tool.startswith("report"):
        proc = cli("course.report", str(run), "--out", "page.html", *force)
    else:
        proc = cli("course.gate", "--baseline", str(run), "--candidate", str(run), "--min-delta", "0",
                   "--html", "page.html", *force)
    assert "page.html: is not a regular file (a FIFO (named pipe)); refusing to write to it" in one_error_line(proc)
    assert is_fifo(tmp_path / "page.html")
    assert [p for p in tmp_path.iterdir() if p.name.startswith(".")] == []




FILE_OUTPUTS = {
    "datasets import": lambda d: ["course.datasets", "import", str(gsm8k_file(d / "g.jsonl")), "--format", "gsm8k",
                                  "--out", "o"],
    "import_completions": lambda d: ["course.import_completions", str(plain_completions_file(d / "p.jsonl")),
                                     "--format", "plain", "--policy", "p", "--sampling", "{}", "--out", "o"],
}
if HAS_TORCH:
    FILE_OUTPUTS["tinylm.sample"] = lambda d: ["course.tinylm.sample", "--dataset", str(DEV), "--out", "o"]


@pytest.mark.parametrize("tool", sorted(FILE_OUTPUTS))
def test_a_fifo_as_a_file_output_is_refused_even_with_force_and_left_a_fifo(cli, tmp_path: Path, tool: str) -> None:
    os.mkfifo(tmp_path / "o")
    line = one_error_line(cli(*FILE_OUTPUTS[tool](tmp_path), "--force"))
    assert "o: is not a regular file (a FIFO (named pipe)); refusing to write to it" in line
    assert is_fifo(tmp_path / "o")


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="making a device node needs root")
@pytest.mark.parametrize("tool", sorted(FILE_OUTPUTS))
def test_a_device_as_a_file_output_is_never_replaced_even_with_force(cli, tmp_path: Path, tool: str) -> None:
    # Before: --out /dev/null --force, run as root, renamed a regular file over /dev/null itself.
    # A copy of /dev/null's device node (char 1:3) inside tmp_path plays it here.
    os.mknod(tmp_path / "o", stat.S_IFCHR | 0o644, os.makedev(1, 3))
    line = one_error_line(cli(*FILE_OUTPUTS[tool](tmp_path), "--force"))
    assert "o: is not a regular file (a character device); refusing to write to it" in line
    assert stat.S_ISCHR(os.lstat(tmp_path / "o").st_mode)


@needs_torch
@pytest.mark.parametrize("flag", ["sample --checkpoint", "shift --checkpoint", "rl --init"])
def test_a_fifo_checkpoint_is_refused_before_torch_waits_on_it(cli, tmp_path: Path, flag: str) -> None:
    os.mkfifo(tmp_path / "ck.pt")
    args = {
        "sample --checkpoint": ["course.tinylm.sample", "--dataset", str(DEV), "--out", "o.jsonl",
                                "--checkpoint", "ck.pt"],
        "shift --checkpoint": ["course.tinylm.shift", "--checkpoint", "ck.pt"],
        "rl --init": ["course.tinylm.rl", "--init", "ck.pt", "--steps", "1", "--outdir", "r"],
    }[flag]
    assert ("ck.pt: is not a regular file (a FIFO (named pipe)), expected a tiny LM checkpoint"
            in one_error_line(cli(*args)))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck.pt"]


@pytest.mark.skipif(importlib.util.find_spec("inspect_ai") is None, reason="the inspect extra is not installed")
@pytest.mark.parametrize("given", ["the directory", "the log itself"])
def test_a_fifo_inspect_log_is_refused_before_inspect_opens_it(cli, tmp_path: Path, given: str) -> None:
    (tmp_path / "logs").mkdir()
    os.mkfifo(tmp_path / "logs" / "x.eval")
    source = "logs" if given == "the directory" else "logs/x.eval"
    line = one_error_line(cli("course.import_completions", source, "--format", "inspect", "--out", "o.jsonl"))
    assert "x.eval: is not a regular file (a FIFO (named pipe)), expected an inspect eval log" in line
    assert not (tmp_path / "o.jsonl").exists()


@pytest.mark.parametrize("tool", [["course.score", "--expected", "3", "-"],
                                  ["course.rubrics", "--rubric", "last_number", "--expected", "3", "-"]])
def test_dev_zero_on_stdin_stops_at_the_cap_with_one_line(tmp_path: Path, tool: list[str]) -> None:
    # Before: course.score read /dev/zero until memory ran out (6 GB seen). A real process, a real device.
    with open(os.devnull if not os.path.exists("/dev/zero") else "/dev/zero", "rb") as zero:
        proc = subprocess.run([sys.executable, "-m", *tool], stdin=zero, capture_output=True, text=True, env=ENV,
                              cwd=tmp_path, timeout=60)
    assert f"<stdin>: more than {jsonl.MAX_READ:,} bytes" in one_error_line(proc)


def test_a_completion_on_stdin_below_the_cap_is_still_scored(cli) -> None:
    proc = cli("course.score", "--expected", "323", "-", stdin="Final: 323")
    assert proc.returncode == 0 and json.loads(proc.stdout)["reward"] == 1.0


def test_a_jsonl_line_longer_than_the_cap_is_refused_after_reading_only_the_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jsonl, "MAX_READ", 1000, raising=False)
    path = tmp_path / "long.jsonl"
    path.write_text('{"id": "a"}\n{"id": "' + "x" * 5000 + '"}\n', encoding="utf-8")
    with pytest.raises(CourseError, match=rf"^{path}:2: a line longer than 1,000 bytes"):
        list(jsonl.iter_objects(path))
    with open(path, "rb") as f:  # the reader takes at most the cap (+1 byte) of a line at a time
        lines = jsonl.input_lines(f)
        assert [len(next(lines)), len(next(lines))] == [12, 1001]


def test_a_document_larger_than_the_cap_is_refused_before_it_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jsonl, "MAX_READ", 1000, raising=False)
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps({"note": "x" * 5000}), encoding="utf-8")
    with pytest.raises(CourseError, match="more than 1,000 bytes"):
        jsonl.read_json(path, "manifest")


# ===========================================================================
# Item 3 (command line): arguments that are not UTF-8, JSON arguments the reader would refuse
# ===========================================================================
NOT_UTF8 = {
    "eval --outdir": [b"course.eval", b"--outdir", b"run\xff"],
    "eval --dataset": [b"course.eval", b"--dataset=data\xe9.jsonl", b"--outdir", b"r"],
    "rollout_sample --model": [b"course.rollout_sample", b"--dataset", str(DEV).encode(), b"--model", b"m\xff",
                               b"--out", b"o.jsonl", b"--base-url", b"http://127.0.0.1:9/v1"],
    "rollout_sample --system-prompt": [b"course.rollout_sample", b"--dataset", str(DEV).encode(), b"--model", b"m",
                                       b"--system-prompt", b"be \xfe brief", b"--out", b"o.jsonl", b"--base-url",
                                       b"http://127.0.0.1:9/v1"],
    "rollout_sample --policy": [b"course.rollout_sample", b"--dataset", str(DEV).encode(), b"--model", b"m",
                                b"--policy", b"\xc3(", b"--out", b"o.jsonl", b"--base-url", b"http://127.0.0.1:9/v1"],
    "import_completions --policy": [b"course.import_completions", b"p.jsonl", b"--format", b"plain", b"--policy",
                                    b"p\xff", b"--sampling", b"{}", b"--out", b"o.jsonl"],
    "toy_mdp --outdir": [b"course.toy_mdp", b"--steps", b"2", b"--outdir", b"\x80run"],
}


@pytest.mark.parametrize("case", sorted(NOT_UTF8))
def test_an_argument_that_is_not_utf8_is_one_line_and_exit_2(tmp_path: Path, case: str) -> None:
    # A real process: only the operating system hands Python undecodable argv bytes.
    plain_completions_file(tmp_path / "p.jsonl")
    env = {**ENV, "GROQ_API_KEY": "test-key"}
    proc = subprocess.run([os.fsencode(sys.executable), b"-m", *NOT_UTF8[case]], capture_output=True, env=env,
                          cwd=tmp_path, timeout=60)
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 2 and "Traceback" not in err, err
    assert err.count("\n") == 1 and "holds bytes that are not UTF-8" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.jsonl"]


@pytest.mark.parametrize("sampling, fragment", [
    ('{"t": "\\ud800"}', "lone surrogate"),
    ('{"t": "\\udfff x"}', "lone surrogate"),
    ("{" + '"a": [' * 50_000 + "]" * 50_000 + "}", "nested too deeply"),
    ('{"a": ' + "[" * 500 + "]" * 500 + "}", "nested too deeply"),
    ('{"t": 1e999}', "too large for a float"),
    ('{"t": -1e400}', "too large for a float"),
    ('{"t": NaN}', "NaN is not a JSON number"),
    ('{"t": 1, "t": 2}', "appears twice"),
], ids=["high surrogate", "low surrogate", "50,000 deep", "500 deep", "1e999", "-1e400", "NaN", "repeated key"])
def test_a_sampling_the_reader_would_refuse_is_refused_at_the_command_line(
    cli, tmp_path: Path, sampling: str, fragment: str
) -> None:
    plain_completions_file(tmp_path / "p.jsonl")
    proc = cli("course.import_completions", "p.jsonl", "--format", "plain", "--policy", "p", "--sampling", sampling,
               "--out", "o.jsonl")
    line = one_error_line(proc)
    assert line.startswith("error: --sampling") and fragment in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.jsonl"]


# ===========================================================================
# Item 5: one writer for every JSON byte, refusing what its reader refuses; bounded numeric flags
# ===========================================================================
UNWRITABLE = {
    "nan": float("nan"),
    "infinity": float("inf"),
    "101 deep": json.loads("[" * 101 + "]" * 101),
    "5,000-digit integer": 10**5000,
    "lone surrogate": "x\udc80",
}


@pytest.mark.parametrize("value", list(UNWRITABLE.values()), ids=list(UNWRITABLE))
def test_every_json_writer_refuses_what_the_reader_would_refuse(tmp_path: Path, value: object) -> None:
    record = {"id": "a", "v": value}
    writers = {
        "jsonl line": lambda: jsonl.dumps_line(record).encode("utf-8"),
        "pretty": lambda: jsonl.dumps_pretty(record).encode("utf-8"),
        "run file": lambda: runs.write_json(tmp_path / "summary.json", record),
        "file on its own": lambda: temporaries.write_json_atomic(tmp_path / "summary.json", record),
        "jsonl file": lambda: jsonl.write_jsonl(tmp_path / "x.jsonl", [record]),
    }
    for name, write in writers.items():
        with pytest.raises(CourseError, match="refusing to write JSON its reader would refuse"):
            write()
    assert not (tmp_path / "summary.json").exists()


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5)
    | st.sampled_from(["\ud800", "\udfff", "a\udc80b", math.inf, -math.inf, math.nan])
    | st.builds(pow, st.just(10), st.just(4400)),  # built, not listed: hypothesis cannot repr a 4,401-digit int
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(JSON_VALUES, st.integers(min_value=0, max_value=120))
def test_a_line_the_writer_emits_is_one_the_reader_accepts_unchanged(value: object, depth: int) -> None:
    record = {"v": value}
    for _ in range(depth):
        record = {"v": [record]} if depth % 2 else {"v": record}
    try:
        line = jsonl.dumps_line(record).encode("utf-8")
    except (CourseError, UnicodeEncodeError):
        return  # refused before a byte is written (the file sinks turn UnicodeEncodeError into CourseError)
    back = jsonl.parse_line(line + b"\n", "x.jsonl", 1)  # accepted, never a CourseError
    assert jsonl.dumps_line(back).encode("utf-8") == line  # and it is the same value, byte for byte


def test_a_sampling_of_1e999_is_not_written_as_infinity(cli, tmp_path: Path) -> None:
    plain_completions_file(tmp_path / "p.jsonl")
    proc = cli("course.import_completions", "p.jsonl", "--format", "plain", "--policy", "p",
               "--sampling", '{"t": 1e999}', "--out", "o.jsonl")
    one_error_line(proc)
    assert not (tmp_path / "o.jsonl").exists()


def test_a_file_holding_1e999_is_refused_with_path_and_line(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text('{"id": "a"}\n{"id": "b", "x": 1e999}\n', encoding="utf-8")
    with pytest.raises(CourseError, match=rf"^{path}:2: invalid JSON: the number 1e999 is too large for a float"):
        list(jsonl.iter_objects(path))


# (the flag the one error line must name, the command). Before the fix each was accepted and work began
# (or a traceback came later): 10**8 bandit steps filled memory, --seed 2**64 overflowed torch, ...
BAD_NUMBERS = [
    ("--steps", ("course.bandit_train", "--steps", "100000000")),
    ("--seeds", ("course.bandit_train", "--ablation", "--seeds", "100000000")),
    ("--seed", ("course.bandit_train", "--seed", str(2**64))),
    ("--steps", ("course.toy_mdp", "--steps", "100000000")),
    ("--steps", ("course.exercises.planted_bugs", "--bug", "advantage", "--steps", "100000000")),
    ("--top-k", ("course.inspect_run", "--run", "r", "--top-k", "1" + "0" * 30)),
    ("--min-delta", ("course.gate", "--baseline", "a", "--candidate", "b", "--min-delta", "1e-10000000")),
    ("--min-delta", ("course.report", "a", "--min-delta", "1e-10000000")),
    ("--n", ("course.rollout_sample", "--dataset", "d", "--model", "m", "--out", "o", "--n", "1000000")),
    ("--timeout", ("course.rollout_sample", "--dataset", "d", "--model", "m", "--out", "o", "--timeout", "1e308")),
    ("--backoff", ("course.rollout_sample", "--dataset", "d", "--model", "m", "--out", "o", "--backoff", "1e308")),
    ("--seed", ("course.rollout_sample", "--dataset", "d", "--model", "m", "--out", "o", "--seed", str(2**70))),
    ("--n", ("course.tinylm.sample", "--dataset", "d", "--out", "o", "--n", "100000000")),
    ("--seed", ("course.tinylm.sample", "--dataset", "d", "--out", "o", "--seed", str(2**64))),
    ("--seed", ("course.tinylm.rl", "--seed", str(2**64))),
    ("--steps", ("course.tinylm.rl", "--steps", "100000000")),
    ("--group-size", ("course.tinylm.rl", "--group-size", "100000")),
    ("--prompts-per-step x --group-size", ("course.tinylm.rl", "--prompts-per-step", "512", "--group-size", "512")),
    ("--steps / --save-every", ("course.tinylm.rl", "--steps", "100000", "--save-every", "1")),
    ("--steps", ("course.tinylm.sweep", "--steps", "100000000")),
    # before: NaN manifest
    ("--lr", ("course.tinylm.sft", "--out", "x.pt", "--steps", "3", "--eval-samples", "1", "--lr", "1e6")),
    # before: traceback
    ("--lr", ("course.tinylm.sft", "--out", "x.pt", "--steps", "3", "--eval-samples", "1", "--lr", "1e308")),
    ("--batch-size", ("course.tinylm.sft", "--out", "x.pt", "--batch-size", "100000000")),
    ("--n-embd", ("course.tinylm.sft", "--out", "x.pt", "--n-embd", "100000")),
    ("--n-embd", ("course.tinylm.sft", "--out", "x.pt", "--n-embd", "100", "--n-head", "3")),
    ("--weight-decay", ("course.tinylm.sft", "--out", "x.pt", "--weight-decay", "-5")),
    ("--min-lr", ("course.tinylm.sft", "--out", "x.pt", "--steps", "3", "--eval-samples", "1", "--lr", "1e-3",
                  "--min-lr", "1e-2")),
]


@pytest.mark.parametrize("flag, argv", BAD_NUMBERS, ids=[" ".join(a)[:80] for _, a in BAD_NUMBERS])
def test_a_number_beyond_a_flags_bound_is_refused_before_any_work(
    cli, tmp_path: Path, flag: str, argv: tuple[str, ...]
) -> None:
    if argv[0].startswith("course.tinylm") and not HAS_TORCH and argv[0] != "course.tinylm.sweep":
        pytest.skip("without the lm extra these tools stop at the extras rule first")
    proc = cli(*argv)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert flag in proc.stderr.strip().splitlines()[-1], proc.stderr  # refused for this flag, not for a missing file
    assert list(tmp_path.iterdir()) == []


@needs_torch
def test_training_that_diverges_is_refused_and_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import torch.nn.functional as F

    from course.tinylm import sft

    real = F.cross_entropy
    monkeypatch.setattr(F, "cross_entropy", lambda *a, **k: real(*a, **k) * math.nan)  # what lr 1e6 does by step 3
    settings_ = {**sft.DEFAULTS, "steps": 2, "batch_size": 4, "eval_every": 0}
    with pytest.raises(CourseError, match=r"training diverged: the loss is nan at step 0 .*nothing was written"):
        sft.train(settings_, tmp_path / "x.pt", [])
    assert list(tmp_path.iterdir()) == []


# ===========================================================================
# Item 9: repeated keys, and OS errors that name the user's path
# ===========================================================================
def test_a_repeated_key_is_refused_with_path_and_line_by_every_reader(cli, tmp_path: Path) -> None:
    lines = DEV.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[2] = lines[2].replace('{"expected_answer": ', '{"id": "dev-9999", "expected_answer": ', 1)
    (tmp_path / "d.jsonl").write_text("".join(lines), encoding="utf-8")
    line = one_error_line(cli("course.eval", "--dataset", "d.jsonl", "--completions", str(ROLLOUTS), "--outdir", "r"))
    assert line == ("error: d.jsonl:3: invalid JSON: the key 'id' appears twice in one object "
                    "(which value is meant is ambiguous)")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.jsonl"]


def test_a_repeated_key_in_a_manifest_is_refused(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text('{"tool": "course.eval", "tool": "course.gate"}\n', encoding="utf-8")
    with pytest.raises(CourseError, match="the key 'tool' appears twice"):
        jsonl.read_json(tmp_path / "manifest.json", "manifest")


OUTPUT_UNDER_A_FILE = {
    "datasets import": lambda d: ["course.datasets", "import", str(gsm8k_file(d / "g.jsonl")), "--format", "gsm8k",
                                  "--out", "f/o.jsonl"],
    "import_completions": lambda d: ["course.import_completions", str(plain_completions_file(d / "p.jsonl")),
                                     "--format", "plain", "--policy", "p", "--sampling", "{}", "--out", "f/o.jsonl"],
    "report --out": lambda d: ["course.report", str(d / "run"), "--out", "f/o.html"],
}


@pytest.mark.parametrize("tool", sorted(OUTPUT_UNDER_A_FILE))
def test_an_os_error_names_the_users_path_never_a_temporary(cli, tmp_path: Path, tool: str) -> None:
    if tool.startswith("report"):
        assert cli("course.toy_mdp", "--steps", "2", "--outdir", "run").returncode == 0
    (tmp_path / "f").write_text("a file where a folder should be\n", encoding="utf-8")
    line = one_error_line(cli(*OUTPUT_UNDER_A_FILE[tool](tmp_path)))
    assert line.startswith("error: f") and ".tmp" not in line, line


@pytest.fixture()
def read_only_tmpfs(tmp_path: Path):  # type: ignore[no-untyped-def]
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    point = tmp_path / "ro"
    point.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=16k", "tmpfs", str(point)], capture_output=True,
                          text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    yield point
    subprocess.run(["umount", str(point)], check=False)


@pytest.mark.parametrize("tool", sorted(OUTPUT_UNDER_A_FILE))
def test_a_read_only_folder_is_named_as_the_users_output_not_a_temporary(
    cli, tmp_path: Path, read_only_tmpfs: Path, tool: str
) -> None:
    if tool.startswith("report"):
        assert cli("course.toy_mdp", "--steps", "2", "--outdir", "run").returncode == 0
    argv = [a.replace("f/o.", "ro/o.") for a in OUTPUT_UNDER_A_FILE[tool](tmp_path)]
    line = one_error_line(cli(*argv))
    assert line.startswith("error: ro/o.") and "Read-only file system" in line and ".tmp" not in line, line


def test_both_json_file_writers_name_the_file_they_refuse_to_write(tmp_path: Path) -> None:
    # A run file is named alone (its hidden temporary directory means nothing to a user); a file on its own by path.
    target = tmp_path / "summary.json"
    with pytest.raises(CourseError, match=r"^summary\.json: refusing to write JSON"):
        runs.write_json(target, {"x": math.nan})
    with pytest.raises(CourseError) as refused:
        temporaries.write_json_atomic(target, {"x": math.nan})
    assert str(refused.value).startswith(f"{target}: refusing to write JSON")
    assert list(tmp_path.iterdir()) == []


def test_an_atomic_output_may_be_a_symbolic_link_but_a_file_grown_in_place_may_not_dangle(tmp_path: Path) -> None:
    link = tmp_path / "out.jsonl"
    link.symlink_to(tmp_path / "missing.jsonl")
    assert jsonl.output_problem(link) is None  # an atomic write replaces the link, never writes through it
    assert jsonl.output_problem(link, in_place=True) == (
        "is a symbolic link to a missing file; remove it or choose another path")


def test_an_output_under_a_file_is_refused_naming_the_file_in_the_way(tmp_path: Path) -> None:
    (tmp_path / "notes").write_text("mine\n")
    for in_place in (False, True):
        problem = jsonl.output_problem(tmp_path / "notes" / "more" / "out.jsonl", in_place=in_place)
        assert problem == f"cannot create it, {tmp_path / 'notes'} is a file, not a directory"
