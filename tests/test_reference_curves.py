"""Reference learning curves as regression tests: a rerun of a stored run must learn as it did.

tests/data/reference_curves/<name>.json holds a command, its reward / KL / no-signal curves for a few
seeds and the bands (course.lib.learning.reference_curves says why those bands: twice the spread
between seeds, at least a floor). scripts/make_reference_curves.py writes them; re-record only on
purpose. The tiny LM's default run is in the fast set, the short real-LLM run in the slow set.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from course.lib.learning.reference_curves import compare, curves_of, statistics

DATA = Path(__file__).resolve().parent / "data" / "reference_curves"
PROJECT_ROOT = Path(__file__).resolve().parent.parent
needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                                 reason="the lm extra (PyTorch) is not installed")


def reference(name: str) -> dict:
    return json.loads((DATA / f"{name}.json").read_text(encoding="utf-8"))


def rerun_and_compare(run_in_process, name: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    ref = reference(name)
    out = tmp_path / "rerun"
    proc = run_in_process(ref["tool"], [*ref["argv"], "--seed", str(ref["rerun_seed"]), "--outdir", str(out)],
                          cwd=PROJECT_ROOT)
    assert proc.returncode == 0, proc.stderr
    log = [json.loads(line) for line in (out / "rl_log.jsonl").read_text(encoding="utf-8").splitlines()]
    checks = compare(curves_of(log), ref["checks"])
    assert all(c.ok for c in checks), "learning changed:\n" + "\n".join(c.line() for c in checks)


@needs_torch
def test_the_tiny_lms_default_run_learns_as_its_reference_curves_say(run_in_process, tmp_path,
                                                                     figures_not_rendered) -> None:
    rerun_and_compare(run_in_process, "tinylm", tmp_path)


@pytest.mark.slow
def test_a_short_real_llm_run_learns_as_its_reference_curves_say(run_in_process, real_llm, llm_cache_dir, tmp_path,
                                                                  monkeypatch) -> None:
    monkeypatch.setenv("COURSE_LLM_CACHE", str(llm_cache_dir))  # the session's cache, never the user's
    rerun_and_compare(run_in_process, "llm_short", tmp_path)


@pytest.mark.parametrize("name", ["tinylm", "llm_short"])
def test_every_reference_seed_is_inside_the_bands_it_set(name: str) -> None:
    """The bands are built to hold every recorded seed (twice their range): a rerun on another machine,
    which is another draw of the same recipe, has room."""
    ref = reference(name)
    for seed in ref["seeds"]:
        assert all(c.ok for c in compare(ref["curves"][str(seed)], ref["checks"])), seed


def test_a_run_that_stopped_learning_halfway_is_outside_the_tiny_lms_bands() -> None:
    """The test can fail: the reference seed's curves with the reward frozen at its first third's level
    (learning that stopped early) fall below the band of the late reward and of the gain."""
    ref = reference("tinylm")
    curves = dict(ref["curves"][str(ref["rerun_seed"])])
    r = curves["reward"]
    third = len(r) // 3
    early = sum(r[:third]) / third
    curves["reward"] = r[:third] + [early] * (len(r) - third)
    failed = {c.statistic for c in compare(curves, ref["checks"]) if not c.ok}
    assert {"reward_late", "reward_gain"} <= failed


def test_a_run_whose_policy_never_moved_is_outside_the_kl_band() -> None:
    ref = reference("tinylm")
    curves = dict(ref["curves"][str(ref["rerun_seed"])])
    curves["kl_k3_per_token"] = [0.0] * len(curves["kl_k3_per_token"])
    assert not next(c for c in compare(curves, ref["checks"]) if c.statistic == "kl_late").ok


def test_the_stored_statistics_are_those_of_the_stored_curves() -> None:
    for name in ("tinylm", "llm_short"):
        ref = reference(name)
        for seed in ref["seeds"]:
            got = statistics(ref["curves"][str(seed)])
            assert {k: round(v, 6) for k, v in got.items()} == ref["statistics_per_seed"][str(seed)]
