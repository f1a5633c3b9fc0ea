"""course.datasets import --format reasoning-gym: seeded generators in, course datasets out, offline.

reasoning-gym is installed beside verifiers in a venv of its own in CI (.ci/run says why); where it is
missing the tool's one-line message is checked instead.
"""

from __future__ import annotations

import importlib.util
import json
import socket
from pathlib import Path

import pytest

from course.datasets import main
from course.instrument.spec_v1 import score
from course.lib.records.formats import read_dataset
from course.lib.records.manifest import sha256_file

HAVE_RG = importlib.util.find_spec("reasoning_gym") is not None
needs_rg = pytest.mark.skipif(not HAVE_RG, reason="reasoning-gym is not installed (CI: the verifiers venv)")


@pytest.fixture
def no_network(monkeypatch):
    """Any connection attempt fails the test: the generators must run offline."""
    def refuse(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError(f"a network connection was attempted: {args}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def run(tmp_path: Path, capsys, name: str, *argv: str) -> tuple[int, str, str]:
    code = main(["import", "--format", "reasoning-gym", *argv, "--out", str(tmp_path / name)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@needs_rg
def test_a_seeded_generator_imports_the_same_bytes_twice_and_records_how(tmp_path, capsys, no_network):
    import reasoning_gym

    for name in ("a.jsonl", "b.jsonl"):
        code, out, _ = run(tmp_path, capsys, name, "basic_arithmetic", "--seed", "7", "--size", "20")
        assert code == 0 and "generation (seed 7, size 20) recorded" in out
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
    record = json.loads((tmp_path / "a.manifest.json").read_text())
    assert record["generation"] == {"library": "reasoning-gym", "version": "0.1.25", "generator": "basic_arithmetic",
                                    "seed": 7, "size": 20, "config": {}}
    assert record["dataset_fingerprint"] == sha256_file(tmp_path / "a.jsonl")
    items = read_dataset(tmp_path / "a.jsonl")
    entries = list(reasoning_gym.create_dataset("basic_arithmetic", seed=7, size=20))
    assert [ex.id for ex in items] == [f"rg-basic_arithmetic-{k:05d}" for k in range(1, 21)]
    assert [ex.expected_answer for ex in items] == [int(e["answer"]) for e in entries]
    assert all(ex.prompt.startswith(e["question"]) and ex.prompt.endswith("Final: <int>")
               for ex, e in zip(items, entries))
    verdict = score(items[0].as_dict(), f"Final: {items[0].expected_answer}")
    assert verdict["reward"] == 1.0 and verdict["details"]["error_code"] == "ok"


@needs_rg
def test_another_seed_gives_other_items(tmp_path, capsys, no_network):
    run(tmp_path, capsys, "a.jsonl", "chain_sum", "--seed", "1", "--size", "10")
    run(tmp_path, capsys, "b.jsonl", "chain_sum", "--seed", "2", "--size", "10")
    assert (tmp_path / "a.jsonl").read_bytes() != (tmp_path / "b.jsonl").read_bytes()


@needs_rg
def test_a_generator_whose_answers_are_not_integers_is_refused_at_its_item(tmp_path, capsys, no_network):
    code, _, err = run(tmp_path, capsys, "f.jsonl", "fraction_simplification", "--size", "3")
    assert code == 2 and "reasoning-gym:fraction_simplification:1: the answer" in err and "not an integer" in err
    assert not (tmp_path / "f.jsonl").exists() and not (tmp_path / "f.manifest.json").exists()


@needs_rg
def test_an_unknown_generator_and_a_refused_setting_are_one_line(tmp_path, capsys):
    code, _, err = run(tmp_path, capsys, "x.jsonl", "no_such_generator")
    assert code == 2 and "reasoning-gym has no generator 'no_such_generator'" in err
    code, _, err = run(tmp_path, capsys, "x.jsonl", "basic_arithmetic", "--rg-config", '{"seed": 3}')
    assert code == 2 and "'seed' is given with --seed" in err


@pytest.mark.skipif(HAVE_RG, reason="checks the message given where reasoning-gym is not installed")
def test_without_reasoning_gym_the_import_says_how_to_install_it(tmp_path, capsys):
    code, _, err = run(tmp_path, capsys, "x.jsonl", "basic_arithmetic")
    assert code == 2 and "needs reasoning-gym: pip install reasoning-gym==0.1.25" in err


def test_the_generator_options_are_refused_for_a_file_format(tmp_path, capsys):
    code = main(["import", "--format", "gsm8k", "x.jsonl", "--seed", "3", "--out", str(tmp_path / "o.jsonl")])
    assert code == 2 and "--seed: only for --format reasoning-gym" in capsys.readouterr().err
