"""Fault suite, issue #23 items 3 and 9: another project's reader, int() or a decode meeting bad input.

The class: wherever the course hands a user's bytes to a third-party library (pyarrow, datasets,
inspect_ai), to ``int()`` (Python refuses more than 4300 digits) or to a UTF-8 decode, a bad
input must end as ONE line ``path: what is wrong`` on stderr and exit 2, never a traceback, and
nothing is written. The library calls go through ``course.errors.foreign_reader``; answers go
through ``course.lib.external.dataset_readers.parse_integer``, bounded by reward spec v1's ``MAX_DIGITS``.

Also here: ``--help`` of every tool works when none of the optional extras is installed (the
extras are hidden from a fresh interpreter by an import hook), and the GSM8K importer refuses a
solution with two ``####`` lines instead of silently taking the last.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from course import datasets
from course.instrument.spec_v1 import MAX_DIGITS
from course.lib.extras import EXTRAS
from course.lib.toolbox import TOOLS

ROOT = Path(__file__).resolve().parents[2]
needs_pyarrow = pytest.mark.skipif(importlib.util.find_spec("pyarrow") is None, reason="needs the hf extra (pyarrow)")
needs_datasets = pytest.mark.skipif(importlib.util.find_spec("datasets") is None,
                                    reason="needs the hf extra (datasets)")


def _import(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = datasets.main(["import", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def assert_one_line(code: int, err: str, *fragments: str) -> str:
    assert code == 2, err
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def _gsm8k(path: Path, *answers: str) -> Path:
    path.write_text("".join(json.dumps({"question": f"q{i}?", "answer": a}) + "\n" for i, a in enumerate(answers)),
                    encoding="utf-8")
    return path


# ---------------------------------------------------------------------------
# Third-party readers: pyarrow and datasets
# ---------------------------------------------------------------------------
def _good_parquet(path: Path) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"question": ["What is 2+2?", "And 3+3?"], "answer": ["4", "6"]}), path)
    return path


@needs_pyarrow
@pytest.mark.parametrize("damage", ["garbage", "magic_only", "empty", "truncated", "footer_flipped"])
def test_a_parquet_file_pyarrow_cannot_read_is_one_line_naming_it(tmp_path, capsys, damage):
    src = tmp_path / "data.parquet"
    good = _good_parquet(tmp_path / "good.parquet").read_bytes()
    src.write_bytes({
        "garbage": b"this is not parquet at all\n" * 10,
        "magic_only": b"PAR1garbagePAR1",
        "empty": b"",
        "truncated": good[: len(good) // 2],
        "footer_flipped": good[:-12] + bytes(b ^ 0xFF for b in good[-12:-4]) + good[-4:],
    }[damage])
    out = tmp_path / "out.jsonl"
    code, _, err = _import(capsys, "--format", "hf", str(src), "--out", str(out))
    assert_one_line(code, err, str(src), "parquet")
    assert not out.exists()


@needs_datasets
@pytest.mark.parametrize("damage", ["arrow_truncated", "state_not_an_object", "features_not_an_object"])
def test_a_damaged_saved_dataset_is_one_line_naming_it(tmp_path, capsys, damage):
    import datasets as hf

    saved = tmp_path / "saved"
    hf.Dataset.from_dict({"question": ["What is 2+2?"] * 50, "answer": ["4"] * 50}).save_to_disk(str(saved))
    capsys.readouterr()  # datasets' own progress bar
    arrow = next(saved.glob("*.arrow"))
    if damage == "arrow_truncated":  # the schema reads; the rows do not (an error that named no path)
        arrow.write_bytes(arrow.read_bytes()[: arrow.stat().st_size // 2])
    elif damage == "state_not_an_object":  # a TypeError inside datasets
        (saved / "state.json").write_text("[]", encoding="utf-8")
    else:
        (saved / "dataset_info.json").write_text('{"features": 3}', encoding="utf-8")
    code, _, err = _import(capsys, "--format", "hf", str(saved), "--out", str(tmp_path / "o.jsonl"))
    assert_one_line(code, err, str(saved))


# ---------------------------------------------------------------------------
# torch.load: a checkpoint is the file's word about the network
# ---------------------------------------------------------------------------
@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs the lm extra (torch)")
@pytest.mark.parametrize("damage", ["config_text", "config_floats", "config_short", "no_heads", "ten_million_channels",
                                    "a_weight_missing"])
def test_a_checkpoint_whose_config_does_not_describe_its_weights_is_one_line(tmp_path, capsys, damage):
    import torch

    from course.lib.bundled import PI0_PATH
    from course.tinylm import sample

    state = torch.load(PI0_PATH, map_location="cpu", weights_only=True)
    config = state["_config"].clone()
    if damage == "config_text":
        state["_config"] = "abc"  # AttributeError before
    elif damage == "config_floats":
        state["_config"] = torch.full((5,), float("nan"))  # ValueError before
    elif damage == "config_short":
        state["_config"] = config[:2]  # KeyError before
    elif damage == "no_heads":
        config[3] = 0
        state["_config"] = config
    elif damage == "ten_million_channels":  # the allocator's RuntimeError (10**15 bytes) before
        config[4] = 10**7
        state["_config"] = config
    else:
        del state["wte.weight"]
    bad = tmp_path / "bad.pt"
    torch.save(state, bad)
    data = tmp_path / "data.jsonl"
    data.write_text((ROOT / "data/datasets/math_dev.jsonl").read_text(encoding="utf-8").splitlines()[0] + "\n",
                    encoding="utf-8")
    out = tmp_path / "out.jsonl"
    code = sample.main(["--dataset", str(data), "--checkpoint", str(bad), "--out", str(out)])
    assert_one_line(code, capsys.readouterr().err, str(bad))
    assert not out.exists()


# ---------------------------------------------------------------------------
# int(): answers longer than reward spec v1 accepts
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("digits", [MAX_DIGITS + 1, 5000, 100_000])
def test_a_gsm8k_answer_with_more_digits_than_the_spec_allows_is_refused_with_file_and_line(tmp_path, capsys, digits):
    src = _gsm8k(tmp_path / "big.jsonl", "2 + 2 = 4\n#### 4", "long\n#### " + "7" * digits)
    out = tmp_path / "out.jsonl"
    code, _, err = _import(capsys, "--format", "gsm8k", str(src), "--out", str(out))
    line = assert_one_line(code, err, f"{src}:2", f"{digits:,} digits", str(MAX_DIGITS))
    assert len(line) < 400, "the number itself is never printed"
    assert not out.exists()


def test_a_plain_answer_with_more_digits_than_the_spec_allows_is_refused_even_when_skipping(tmp_path, capsys):
    src = tmp_path / "plain.jsonl"
    src.write_text(json.dumps({"question": "q?", "answer": "-" + "9" * 5000}) + "\n", encoding="utf-8")
    code, _, err = _import(capsys, "--format", "hf", str(src), "--out", str(tmp_path / "o.jsonl"), "--skip-non-integer")
    assert_one_line(code, err, f"{src}:1", "5,000 digits")


def test_an_answer_of_exactly_the_spec_limit_is_imported_and_read_back(tmp_path, capsys):
    from course.lib.records.formats import read_dataset

    src = _gsm8k(tmp_path / "limit.jsonl", "#### -" + "9" * MAX_DIGITS)
    out = tmp_path / "out.jsonl"
    code, _, err = _import(capsys, "--format", "gsm8k", str(src), "--out", str(out))
    assert code == 0, err
    assert read_dataset(out)[0].expected_answer == -(10**MAX_DIGITS - 1)


# ---------------------------------------------------------------------------
# Item 9: two '####' lines
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("answer", ["3 + 4 = 7\n#### 7\nwait, no\n#### 8", "#### 1\n#### 1", "#### 5 #### 6"])
def test_a_gsm8k_solution_with_two_answer_marks_is_refused_with_file_and_line(tmp_path, capsys, answer):
    src = _gsm8k(tmp_path / "two.jsonl", "#### 2", answer)
    out = tmp_path / "out.jsonl"
    code, _, err = _import(capsys, "--format", "gsm8k", str(src), "--out", str(out))
    assert_one_line(code, err, f"{src}:2", "####")
    assert not out.exists()


# ---------------------------------------------------------------------------
# --help without the extras
# ---------------------------------------------------------------------------
# A fresh interpreter in which the top-level packages named in argv[1] (comma-separated) cannot be imported.
_HIDE = r"""
import importlib.abc, runpy, sys
HIDDEN = set(sys.argv[1].split(","))

class Hidden(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in HIDDEN:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, Hidden())
"""
_HIDE_EXTRAS = _HIDE + r"""
import io, json, contextlib
results = {}
for module in sys.argv[2:]:
    out, err = io.StringIO(), io.StringIO()
    sys.argv = [module, "--help"]
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            runpy.run_module(module, run_name="__main__", alter_sys=True)
        except SystemExit as exc:
            code = exc.code or 0
        except BaseException as exc:
            import traceback
            traceback.print_exc(file=err)
            code = 1
    results[module] = [code, out.getvalue(), err.getvalue()]
print(json.dumps(results))
"""


def test_every_tool_answers_help_when_no_extra_is_installed():
    hidden = sorted({name.split(".")[0] for extra in EXTRAS.values() for name in extra.modules} | {"lm_eval"})
    modules = [tool.module for tool in TOOLS]
    proc = subprocess.run([sys.executable, "-c", _HIDE_EXTRAS, ",".join(hidden), *modules],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    results = json.loads(proc.stdout)
    broken = {m: err.strip().splitlines()[-1:] for m, (code, out, err) in results.items()
              if code != 0 or "Traceback" in err or "example:" not in out}
    assert broken == {}


# ---------------------------------------------------------------------------
# Real work (not --help) without an extra, or with an extra whose import is broken
# ---------------------------------------------------------------------------
_HIDE_AND_RUN = _HIDE + r"""
sys.argv = sys.argv[2:]
runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
"""


def run_hiding(hidden: str, module: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python -m MODULE ARGS`` in a fresh interpreter where the packages ``hidden`` cannot be imported."""
    return subprocess.run([sys.executable, "-c", _HIDE_AND_RUN, hidden, module, *args], capture_output=True, text=True,
                          cwd=cwd, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})


INSPECT_RUN = ("course.integrations.inspect_ai", "--completions", str(ROOT / "data/rollouts/frozen_rollouts_dev.jsonl"),
               "--dataset", str(ROOT / "data/datasets/math_dev.jsonl"), "--log-dir", "logs", "--limit", "2")


def test_the_inspect_bridge_run_without_its_extra_is_one_line_and_exit_2(tmp_path: Path) -> None:
    proc = run_hiding("inspect_ai", *INSPECT_RUN, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines() == ["error: python -m course.integrations.inspect_ai needs the inspect extra "
                                        "(inspect_ai not installed): pip install -e '.[inspect]'"]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(importlib.util.find_spec("inspect_ai") is None, reason="needs the inspect extra")
def test_the_inspect_bridge_with_a_broken_inspect_install_never_reports_success(tmp_path: Path) -> None:
    # inspect_ai is there but one of its own dependencies is not: before the fix the tool printed
    # nothing, wrote nothing and exited 0.
    proc = run_hiding("openai", *INSPECT_RUN, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    [line] = proc.stderr.splitlines()
    assert line.startswith("error: the package 'openai' cannot be imported") and "reinstall" in line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs the lm extra")
def test_a_tool_whose_extra_is_installed_but_broken_says_so_in_one_line(tmp_path: Path) -> None:
    # torch is found but cannot be imported (its own dependency sympy is gone): one line, not a traceback.
    proc = run_hiding("sympy", "course.tinylm.sample", "--checkpoint", str(ROOT / "data/tinylm/pi0.pt"),
                      "--dataset", str(ROOT / "data/datasets/math_dev.jsonl"), "--out", "s.jsonl", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    [line] = proc.stderr.splitlines()
    assert line.startswith("error: the package 'sympy' cannot be imported") and "reinstall" in line
    assert list(tmp_path.iterdir()) == []
