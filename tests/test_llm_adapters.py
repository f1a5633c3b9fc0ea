"""Trained LoRA adapters outside their run: ``course.llm.sample --adapters`` and ``course.llm.rl --init``.

Both read an adapter file with ``course.llm.policy.read_adapter`` (the project's one input opener,
the course's metadata checked). The default suite runs on the tiny random Llama of conftest.py
(``tiny_llm_dir``); one short ``course.llm.rl`` run on it (module-scoped) provides the files a
student would sample: its ``final.safetensors`` and the holdout files the run sampled itself.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any, Iterator

import pytest

from course.lib.records.manifest import PROJECT_ROOT, sha256_file

HAVE_LLM = all(importlib.util.find_spec(m) is not None for m in ("torch", "transformers", "safetensors"))
pytestmark = pytest.mark.skipif(not HAVE_LLM, reason="the llm extra is not installed")
DEV = PROJECT_ROOT / "data" / "datasets" / "math_dev.jsonl"
HOLDOUT = PROJECT_ROOT / "data" / "datasets" / "math_holdout.jsonl"
# The short run's settings that its holdout sampling uses (course.lib.learning.rl_run.holdout_comparison:
# seed = --eval-seed, temperature, top_p 1.0, --max-tokens, n = 1 and n = --holdout-samples).
MAX_TOKENS, HOLDOUT_SAMPLES = "4", "2"


class Hung(BaseException):
    """Raised by the alarm: not an OSError (which a tool would report as one line), so a hang is a traceback."""


def call(run_in_process: Any, module: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m MODULE ARGS`` in this process, with a 60 s alarm: a read that waits on a FIFO fails, never hangs."""
    def hang(signum: int, frame: object) -> None:
        raise Hung(f"{module} hung")

    previous = signal.signal(signal.SIGALRM, hang)
    signal.alarm(60)
    try:
        return run_in_process(module, list(args), cwd=PROJECT_ROOT)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    """The refusal: exit 2, one error line, last on stderr (progress lines may come before it), no traceback."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr and "hung" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert [line for line in lines if line.startswith("error:")] == [lines[-1]], proc.stderr
    return lines[-1]


def sample_args(model: Path, dataset: Path, out: Path, *extra: str) -> list[str]:
    return ["--model", str(model), "--dataset", str(dataset), "--template", "fewshot", "--max-tokens", MAX_TOKENS,
            "--threads", "1", "--out", str(out), *extra]


def rl_args(model: Path, out: Path, *extra: str) -> list[str]:
    return ["--model", str(model), "--template", "fewshot", "--steps", "1", "--prompts-per-step", "2",
            "--group-size", "2", "--max-tokens", MAX_TOKENS, "--slice-items", "2", "--eval-samples", "1",
            "--eval-every", "1", "--threads", "1", "--outdir", str(out), *extra]


def trained_policy(model_dir: Path) -> Any:
    """An LLMPolicy (rank 4, alpha 8) on the tiny model whose adapters are far from zero: a policy unlike pi0."""
    import torch

    from course.lib.policy.sampling import set_threads
    from course.lib.policy.templates import FEWSHOT
    from course.llm.load import load_llm
    from course.llm.policy import LLMPolicy

    set_threads(1)
    policy = LLMPolicy(load_llm(str(model_dir)), FEWSHOT, rank=4, alpha=8.0, adapter_seed=0, threads=1)
    with torch.no_grad():
        for p in policy.parameters():
            p.add_(torch.randn(p.shape, generator=torch.Generator().manual_seed(p.numel())) * 0.5)
    return policy


@pytest.fixture(scope="module")
def tiny_run(tiny_llm_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One short course.llm.rl run on the tiny model, with its holdout evaluation (figures not rasterised).

    The tiny model never earns a reward, so RL makes no update: the run starts (--init) from adapters
    far from zero, so that its final policy, and the holdout files it samples, are not pi0's.
    """
    import course.lib.reporting.plotting as plotting
    from course.llm.rl import main

    base = tmp_path_factory.mktemp("llm-rl")
    trained_policy(tiny_llm_dir).save(base / "init.safetensors")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(plotting, "save_figure",
                   lambda fig, path: (Path(path).write_bytes(b""), plotting.load_pyplot().close(fig)))
        assert main(rl_args(tiny_llm_dir, base / "run", "--holdout-samples", HOLDOUT_SAMPLES, "--lora-rank", "4",
                            "--lora-alpha", "8", "--init", str(base / "init.safetensors"))) == 0
    yield base / "run"


@pytest.fixture
def trained_adapters(tiny_llm_dir: Path, tmp_path: Path) -> tuple[Any, Path]:
    """``trained_policy`` and its adapters, saved."""
    policy = trained_policy(tiny_llm_dir)
    path = tmp_path / "adapters.safetensors"
    policy.save(path)
    return policy, path


# --- sampling a trained policy ---------------------------------------------------------------------------
def test_sampling_a_runs_final_adapters_reproduces_its_holdout_files_byte_for_byte_under_its_policy_name(
        run_in_process, tiny_llm_dir, tiny_run, tmp_path) -> None:
    final = tiny_run / "final.safetensors"
    summary = json.loads((tiny_run / "summary.json").read_text(encoding="utf-8"))
    pack = tmp_path / "pack.jsonl"
    proc = call(run_in_process, "course.llm.sample", *sample_args(tiny_llm_dir, HOLDOUT, pack, "--n", HOLDOUT_SAMPLES,
                                                                 "--adapters", str(final)))
    assert proc.returncode == 0, proc.stderr
    assert f"policy {summary['final_policy']}," in proc.stdout
    assert pack.read_bytes() == (tiny_run / "holdout_final_pack.jsonl").read_bytes()
    texts = lambda p: [json.loads(line).get("samples") or json.loads(line)["completion"]  # noqa: E731
                       for line in p.read_text().splitlines()]
    assert texts(pack) != texts(tiny_run / "holdout_pi0_pack.jsonl")  # the adapters changed what is sampled
    run_manifest = json.loads((tiny_run / "manifest.json").read_text(encoding="utf-8"))
    assert (run_manifest["final_policy"]["policy"] == summary["final_policy"]
            == json.loads(pack.read_text().splitlines()[0])["policy"])


def test_saved_adapters_sample_exactly_what_the_policy_in_memory_samples_and_not_what_pi0_samples(
        run_in_process, tiny_llm_dir, trained_adapters, tmp_path) -> None:
    from course.lib.records.formats import read_dataset
    from course.lib.records.jsonl import dumps_line

    policy, path = trained_adapters
    name = policy.trained_name(sha256_file(path))
    items = [(it.id, it.prompt) for it in read_dataset(DEV)[:3]]
    records, _ = policy.rollout_records(items, pi0=False, policy_name=name, n=2, seed=0, temperature=1.0, top_p=1.0,
                                        max_tokens=int(MAX_TOKENS))
    trained, pi0 = tmp_path / "trained.jsonl", tmp_path / "pi0.jsonl"
    assert call(run_in_process, "course.llm.sample",
                *sample_args(tiny_llm_dir, DEV, trained, "--limit", "3", "--n", "2",
                             "--adapters", str(path))).returncode == 0
    assert call(run_in_process, "course.llm.sample",
                *sample_args(tiny_llm_dir, DEV, pi0, "--limit", "3", "--n", "2")).returncode == 0
    assert trained.read_text(encoding="utf-8") == "".join(dumps_line(r) + "\n" for r in records)
    completions = lambda p: [s["completion"]  # noqa: E731
                             for line in p.read_text().splitlines() for s in json.loads(line)["samples"]]
    assert completions(trained) != completions(pi0)


def test_the_manifest_records_the_adapters_fingerprint_rank_alpha_targets_and_base_policy(
        run_in_process, tiny_llm_dir, trained_adapters, tmp_path) -> None:
    from course.llm.lora import TARGETS

    policy, path = trained_adapters
    out = tmp_path / "r.jsonl"
    assert call(run_in_process, "course.llm.sample", *sample_args(tiny_llm_dir, DEV, out, "--limit", "1", "--n", "1",
                                                                  "--adapters", str(path))).returncode == 0
    manifest = json.loads((tmp_path / "r.manifest.json").read_text(encoding="utf-8"))
    assert manifest["adapters"] == {"path": str(path), "sha256": sha256_file(path), "bytes": path.stat().st_size,
                                    "base_policy": policy.pi0_name, "rank": 4, "alpha": 8.0, "targets": list(TARGETS)}
    assert manifest["policy"] == policy.trained_name(sha256_file(path)) != policy.pi0_name


def test_without_adapters_the_manifest_has_no_adapters_field(run_in_process, tiny_llm_dir, tmp_path) -> None:
    out = tmp_path / "r.jsonl"
    assert call(run_in_process, "course.llm.sample",
                *sample_args(tiny_llm_dir, DEV, out, "--limit", "1", "--n", "1")).returncode == 0
    assert "adapters" not in json.loads((tmp_path / "r.manifest.json").read_text(encoding="utf-8"))


# --- refusals: one line, exit 2, nothing written, never a hang ------------------------------------------------
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
def test_a_fifo_as_adapters_is_refused_at_once_without_waiting_for_a_writer(run_in_process, tiny_llm_dir,
                                                                            tmp_path) -> None:
    fifo = tmp_path / "final.safetensors"
    os.mkfifo(fifo)
    proc = call(run_in_process, "course.llm.sample",
                *sample_args(tiny_llm_dir, DEV, tmp_path / "r.jsonl", "--adapters", str(fifo)))
    assert f"{fifo}: is not a regular file (a FIFO (named pipe)), expected a LoRA adapter file" in one_error_line(proc)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["final.safetensors"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
def test_a_fifo_as_rl_init_is_refused_at_once_without_waiting_for_a_writer(run_in_process, tiny_llm_dir,
                                                                           tmp_path) -> None:
    fifo = tmp_path / "final.safetensors"
    os.mkfifo(fifo)
    proc = call(run_in_process, "course.llm.rl", *rl_args(tiny_llm_dir, tmp_path / "run", "--init", str(fifo)))
    assert f"{fifo}: is not a regular file (a FIFO (named pipe)), expected a LoRA adapter file" in one_error_line(proc)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["final.safetensors"]


# Each bad adapter file: how to make it from a good one (rank 4, alpha 8), and what the refusal says.
BAD: dict[str, tuple[str, str]] = {
    "text": ("plain text", "not a safetensors file"),
    "empty": ("0 bytes", "not a safetensors file (0 bytes"),
    "truncated": ("the good file without its last 100 bytes", "not a readable safetensors file"),
    "no course metadata": ("the good tensors, no metadata", "without the course's 'course.llm.lora' metadata"),
    "malformed metadata": ("rank 'four'", "metadata is malformed: rank must be an integer between 1 and 256"),
    "wrong shapes": ("rank-4 tensors, metadata rank 2", "shape (4, 32), the model needs (2, 32)"),
    "wrong names": ("layer 1's tensors named layer 7's", "adapter file does not fit the model"),
}


def write_bad_file(case: str, policy: Any, good: Path, path: Path) -> None:
    """Write the bad adapter file ``BAD[case]`` describes at ``path``, from ``policy``'s saved adapters ``good``."""
    from safetensors.torch import load_file, save_file

    from course.lib.records.jsonl import dumps_line
    from course.llm.lora import TARGETS

    about = {"base_policy": policy.pi0_name, "rank": 4, "alpha": 8.0, "targets": list(TARGETS)}
    state = load_file(str(good))
    metadata = lambda **change: {"course.llm.lora": dumps_line(about | change)}  # noqa: E731
    writers = {
        "text": lambda: path.write_text("these are not adapters\n"),
        "empty": lambda: path.write_bytes(b""),
        "truncated": lambda: path.write_bytes(good.read_bytes()[:-100]),
        "no course metadata": lambda: save_file(state, str(path)),
        "malformed metadata": lambda: save_file(state, str(path), metadata=metadata(rank="four")),
        "wrong shapes": lambda: save_file(state, str(path), metadata=metadata(rank=2, alpha=4.0)),
        "wrong names": lambda: save_file({k.replace("layers.1.", "layers.7."): v for k, v in state.items()}, str(path),
                                         metadata=metadata()),
    }
    writers[case]()


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_bad_adapter_file_is_refused_with_one_line_naming_it(case, run_in_process, tiny_llm_dir, trained_adapters,
                                                               tmp_path) -> None:
    bad = tmp_path / "bad.safetensors"
    write_bad_file(case, *trained_adapters, bad)
    out = tmp_path / "out" / "r.jsonl"
    proc = call(run_in_process, "course.llm.sample",
                *sample_args(tiny_llm_dir, DEV, out, "--limit", "1", "--adapters", str(bad)))
    line = one_error_line(proc)
    assert line.startswith(f"error: {bad}: ") and BAD[case][1] in line, line
    assert not out.exists()


def test_adapters_trained_on_another_model_are_refused_naming_both_models(run_in_process, tiny_llm_dir,
                                                                          trained_adapters, tmp_path) -> None:
    policy, _ = trained_adapters
    loaded = policy.pi0_name
    policy.pi0_name = "SmolLM2-135M-Instruct.Q4_1:0123456789ab"  # as if trained on the packaged model
    other = tmp_path / "other.safetensors"
    policy.save(other)
    out = tmp_path / "r.jsonl"
    line = one_error_line(call(run_in_process, "course.llm.sample",
                               *sample_args(tiny_llm_dir, DEV, out, "--adapters", str(other))))
    assert (f"{other}: these adapters were trained on SmolLM2-135M-Instruct.Q4_1:0123456789ab, "
            f"but the loaded model is {loaded}") in line
    assert not out.exists()


# --- course.llm.rl --init reads through the same function ---------------------------------------------------
def test_a_run_can_start_from_another_runs_final_adapters(run_in_process, tiny_llm_dir, tiny_run, tmp_path) -> None:
    final = tiny_run / "final.safetensors"
    out = tmp_path / "again"
    proc = call(run_in_process, "course.llm.rl", *rl_args(tiny_llm_dir, out, "--no-holdout", "--lora-rank", "4",
                                                          "--lora-alpha", "8", "--init", str(final)))
    assert proc.returncode == 0, proc.stderr
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["init"]["sha256"] == sha256_file(final) and manifest["settings"]["init"] == str(final)


def test_rl_init_with_adapters_of_another_rank_is_refused_before_the_run_directory_exists(
        run_in_process, tiny_llm_dir, trained_adapters, tmp_path) -> None:
    _, path = trained_adapters  # rank 4, alpha 8
    out = tmp_path / "run"
    line = one_error_line(call(run_in_process, "course.llm.rl",
                               *rl_args(tiny_llm_dir, out, "--no-holdout", "--init", str(path))))
    assert f"{path}: adapters of rank 4, alpha 8; this policy has rank 8, alpha 16 (--lora-rank, --lora-alpha)" in line
    assert not out.exists()
