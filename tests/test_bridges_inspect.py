"""inspect_ai bridge: the course scorer and task run through inspect's own eval() with its mock model,
and the log comes back through course.import_completions and course.gate."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

# A skip mark, not an import: inspect_ai takes seconds to import, and every pytest-xdist worker collects this file.
pytestmark = pytest.mark.skipif(importlib.util.find_spec("inspect_ai") is None, reason="the inspect extra (inspect_ai) is not installed")

REPO = Path(__file__).resolve().parent.parent
DEV = str(REPO / "data" / "datasets" / "math_dev.jsonl")
FROZEN = str(REPO / "data" / "rollouts" / "frozen_rollouts_dev.jsonl")


def test_scorer_carries_the_verdicts_evidence():
    from course.integrations.inspect_ai import verdict_to_score
    from course.instrument.spec_v1 import score

    s = verdict_to_score(score({"expected_answer": 323}, "Final:323"))
    assert s.value == 0.0 and s.answer is None
    assert s.metadata["error_code"] == "prefix_spacing" and s.explanation == s.metadata["reason"]


@pytest.fixture(scope="module")
def inspect_log(tmp_path_factory):
    """One real inspect eval: course_math over 20 dev items, mockllm/model replaying the frozen rollouts."""
    from course.integrations.inspect_ai import main

    os.environ.setdefault("INSPECT_DISPLAY", "none")
    log_dir = tmp_path_factory.mktemp("inspect_logs")
    assert main(["--completions", FROZEN, "--log-dir", str(log_dir), "--limit", "20"]) == 0
    return log_dir


def test_inspect_log_scores_match_course_score_item_by_item(inspect_log):
    from inspect_ai.log import read_eval_log

    from course.lib.records.formats import read_dataset, iter_completions
    from course.instrument.spec_v1 import score

    (path,) = list(inspect_log.iterdir())
    log = read_eval_log(str(path))
    frozen = {c.id: c.completion for c in iter_completions(FROZEN)}
    items = {ex.id: ex.as_dict() for ex in read_dataset(DEV)}
    assert log.status == "success" and len(log.samples) == 20
    for s in log.samples:
        (sc,) = s.scores.values()
        assert s.output.completion == frozen[s.id]
        assert sc.value == score(items[s.id], frozen[s.id])["reward"]
        assert sc.metadata["error_code"] == score(items[s.id], frozen[s.id])["details"]["error_code"]


def test_inspect_log_imports_back_and_passes_the_gate_against_itself(inspect_log, tmp_path, capsys):
    from course.eval import main as eval_main
    from course.gate import main as gate_main
    from course.import_completions import main as import_main
    from course.lib.records.formats import iter_completions

    out = tmp_path / "inspect.jsonl"
    assert import_main(["--format", "inspect", str(inspect_log), "--dataset", DEV, "--out", str(out)]) == 0
    rows = list(iter_completions(out))
    assert len(rows) == 20 and rows[0].policy == "inspect:mockllm/model"
    run = tmp_path / "run"
    assert eval_main(["--dataset", DEV, "--completions", str(out), "--outdir", str(run), "--allow-missing"]) == 0
    assert gate_main(["--baseline", str(run), "--candidate", str(run), "--min-delta", "0.00"]) == 0
    assert "Decision: ACCEPT" in capsys.readouterr().out


def test_inspect_log_against_another_dataset_is_refused(inspect_log, tmp_path, capsys):
    from course.import_completions import main as import_main

    holdout = str(REPO / "data" / "datasets" / "math_holdout.jsonl")
    out = tmp_path / "x.jsonl"
    assert import_main(["--format", "inspect", str(inspect_log), "--dataset", holdout, "--out", str(out)]) == 2
    assert ":sample 1: id 'dev-0001' is not an item of" in capsys.readouterr().err
    assert not out.exists()
