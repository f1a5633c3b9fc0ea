"""Tests for the bundled data pack (data/datasets, data/rollouts) and its generator.

The pack must be exactly what ``scripts/make_data.py`` produces from its recorded
seed, keep the formats of docs/formats.md, and have the measured properties the
course relies on (a frozen pass rate in the target band, items where selection
helps and items where it cannot). Pass rates are measured with course.score.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from course.instrument.spec_v1 import score
from course.lib.records.jsonl import dumps_line
from course.lib.reward_spec.problems import FORMAT_INSTRUCTION

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "scripts" / "make_data.py"
SPLITS = ("dev", "holdout")
N_ITEMS = {"dev": 100, "holdout": 50}


def path(kind: str, split: str) -> Path:
    return {
        "dataset": REPO / "data" / "datasets" / f"math_{split}.jsonl",
        "frozen": REPO / "data" / "rollouts" / f"frozen_rollouts_{split}.jsonl",
        "pack": REPO / "data" / "rollouts" / f"selection_pack_{split}.jsonl",
    }[kind]


def load(kind: str, split: str) -> list[dict]:
    with open(path(kind, split), encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def passes(split: str) -> list[list[bool]]:
    """Per item, whether each of its 8 pack samples passes the strict scorer."""
    examples = {ex["id"]: ex for ex in load("dataset", split)}
    return [
        [score(examples[line["id"]], s["completion"])["reward"] == 1.0 for s in line["samples"]]
        for line in load("pack", split)
    ]


def run_script(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=60
    )


# ---------------------------------------------------------------------------
# Reproducibility
# ---------------------------------------------------------------------------
def test_bundled_files_are_exactly_what_the_generator_produces():
    # A different PYTHONHASHSEED must not matter: sub-seeds are strings hashed by random itself.
    env = dict(os.environ, PYTHONHASHSEED="12345")
    result = run_script("--check", "--quiet", env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "7 files match seed" in result.stdout


def test_check_fails_and_names_the_file_when_one_byte_differs(tmp_path):
    for rel in ("data/datasets", "data/rollouts"):
        shutil.copytree(REPO / rel, tmp_path / rel)
    frozen = tmp_path / "data" / "rollouts" / "frozen_rollouts_holdout.jsonl"
    frozen.write_bytes(frozen.read_bytes().replace(b"Final: ", b"Final:  ", 1))
    result = run_script("--check", "--quiet", "--root", str(tmp_path))
    assert result.returncode == 1
    assert "DIFFERS: data/rollouts/frozen_rollouts_holdout.jsonl" in result.stdout
    assert "math_dev.jsonl" not in result.stdout


def test_generator_writes_the_same_bytes_into_a_fresh_directory_and_reports_the_targets(tmp_path):
    result = run_script("--root", str(tmp_path))
    assert result.returncode == 0, result.stderr
    for split in SPLITS:
        for kind in ("dataset", "frozen", "pack"):
            rel = path(kind, split).relative_to(REPO)
            assert (tmp_path / rel).read_bytes() == path(kind, split).read_bytes(), rel
    assert "frozen rollouts (= sample 0) pass: 30/100 = 30.0%" in result.stderr
    assert "MISSED" not in result.stderr


# ---------------------------------------------------------------------------
# Formats (docs/formats.md)
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("split", SPLITS)
@pytest.mark.parametrize("kind", ["dataset", "frozen", "pack"])
def test_files_are_canonical_utf8_jsonl_with_lf_line_ends(kind, split):
    data = path(kind, split).read_bytes()
    assert not data.startswith(b"\xef\xbb\xbf") and b"\r" not in data and data.endswith(b"\n")
    for line in data.decode("utf-8").splitlines():
        assert dumps_line(json.loads(line)) == line


@pytest.mark.parametrize("split", SPLITS)
def test_dataset_lines_have_id_prompt_and_integer_answer(split):
    items = load("dataset", split)
    assert len(items) == N_ITEMS[split]
    assert [ex["id"] for ex in items] == [f"{split}-{i:04d}" for i in range(1, N_ITEMS[split] + 1)]
    for ex in items:
        assert sorted(ex) == ["expected_answer", "id", "prompt"]
        assert type(ex["expected_answer"]) is int
        assert ex["prompt"].endswith(FORMAT_INSTRUCTION)


def test_dev_opens_with_the_running_example():
    first = load("dataset", "dev")[0]
    assert first == {
        "id": "dev-0001",
        "prompt": "Compute 17 * 19. Output exactly one line: Final: <int>",
        "expected_answer": 323,
    }


def test_dev_and_holdout_prompts_are_disjoint_and_unique():
    dev = [ex["prompt"] for ex in load("dataset", "dev")]
    holdout = [ex["prompt"] for ex in load("dataset", "holdout")]
    assert len(set(dev)) == len(dev) and len(set(holdout)) == len(holdout)
    assert not set(dev) & set(holdout)


def test_both_splits_contain_negative_answers():
    for split in SPLITS:
        assert any(ex["expected_answer"] < 0 for ex in load("dataset", split))


@pytest.mark.parametrize("split", SPLITS)
def test_rollout_and_pack_ids_follow_the_dataset_in_order(split):
    ids = [ex["id"] for ex in load("dataset", split)]
    assert [r["id"] for r in load("frozen", split)] == ids
    assert [r["id"] for r in load("pack", split)] == ids


@pytest.mark.parametrize("split", SPLITS)
def test_every_pack_line_has_eight_samples_indexed_0_to_7(split):
    for line in load("pack", split):
        assert sorted(line) == ["id", "policy", "samples", "sampling"]
        assert [s["sample_index"] for s in line["samples"]] == list(range(8))
        assert all(sorted(s) == ["completion", "sample_index"] for s in line["samples"])
        assert all(isinstance(s["completion"], str) for s in line["samples"])


@pytest.mark.parametrize("split", SPLITS)
def test_the_frozen_rollout_is_sample_0_of_the_pack(split):
    for frozen, pack in zip(load("frozen", split), load("pack", split)):
        assert sorted(frozen) == ["completion", "id", "policy", "sampling"]
        assert frozen["completion"] == pack["samples"][0]["completion"]


def test_one_policy_and_one_sampling_setting_on_every_line_of_every_file():
    seen = {
        (line["policy"], json.dumps(line["sampling"], sort_keys=True))
        for split in SPLITS
        for kind in ("frozen", "pack")
        for line in load(kind, split)
    }
    assert len(seen) == 1
    policy, sampling = seen.pop()
    assert policy == "sim-policy-v1"
    assert json.loads(sampling) == {"max_tokens": 32, "seed": 3, "temperature": 0.8, "top_p": 0.95}


# ---------------------------------------------------------------------------
# Measured properties (course.score over the bundled files)
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("split", SPLITS)
def test_frozen_pass_rate_is_between_20_and_35_percent(split):
    examples = {ex["id"]: ex for ex in load("dataset", split)}
    rewards = [score(examples[r["id"]], r["completion"])["reward"] for r in load("frozen", split)]
    assert 0.20 <= sum(rewards) / len(rewards) <= 0.35


@pytest.mark.parametrize("split", SPLITS)
def test_best_of_n_beats_the_first_sample_and_grows_with_n(split):
    p = passes(split)
    first = sum(item[0] for item in p)
    best4 = sum(any(item[:4]) for item in p)
    best8 = sum(any(item) for item in p)
    assert first + 0.15 * len(p) <= best4 < best8


@pytest.mark.parametrize("split", SPLITS)
def test_the_pack_has_hopeless_items_lucky_items_and_easy_items(split):
    counts = [sum(item) for item in passes(split)]
    n = len(counts)
    assert sum(c == 0 for c in counts) >= 0.10 * n  # selection cannot help
    assert sum(c == 1 for c in counts) >= 0.05 * n  # one of eight: selection finds it
    assert sum(c >= 6 for c in counts) >= 0.05 * n  # the policy mostly knows these


def test_the_frozen_dev_rollouts_show_every_kind_of_slip_the_course_teaches():
    examples = {ex["id"]: ex for ex in load("dataset", "dev")}
    codes = {score(examples[r["id"]], r["completion"])["details"]["error_code"] for r in load("frozen", "dev")}
    assert {
        "ok", "wrong_answer", "missing_prefix", "prefix_spacing", "trailing_text", "prefix_case",
        "multiple_lines", "digit_separator", "leading_zero", "lookalike_minus", "non_ascii_digit",
    } <= codes
