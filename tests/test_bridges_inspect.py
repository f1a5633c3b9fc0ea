"""inspect_ai bridge: the course scorer and task run through inspect's own eval() with its mock model,
and the log comes back through course.import_completions and course.gate."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

# A skip mark, not an import: inspect_ai takes seconds to import, and every pytest-xdist worker collects this file.
pytestmark = pytest.mark.skipif(importlib.util.find_spec("inspect_ai") is None,
                                reason="the inspect extra (inspect_ai) is not installed")

REPO = Path(__file__).resolve().parent.parent
DEV = str(REPO / "data" / "datasets" / "math_dev.jsonl")
FROZEN = str(REPO / "data" / "rollouts" / "frozen_rollouts_dev.jsonl")


def test_scorer_carries_the_verdicts_evidence():
    from course.instrument.spec_v1 import score
    from course.integrations.inspect_ai import verdict_to_score

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

    from course.instrument.spec_v1 import score
    from course.lib.records.formats import iter_completions, read_dataset

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


# ---------------------------------------------------------------------------
# epochs > 1: several samples per item, imported as a selection pack (Loop B's pass@k)
# ---------------------------------------------------------------------------
EPOCHS = 3


@pytest.fixture(scope="module")
def inspect_epochs_log(tmp_path_factory):
    """A real inspect eval with epochs=3 over the first 6 dev items: the mock model answers each prompt
    in turn with its frozen rollout, the right line and a bare number. Returns (dataset, log dir)."""
    import inspect_ai
    from inspect_ai.model import ModelOutput, ModelUsage

    from course.integrations.inspect_ai import course_math
    from course.lib.records.formats import iter_completions, read_dataset

    root = tmp_path_factory.mktemp("epochs")
    dataset = root / "dev_first.jsonl"
    dataset.write_text("".join(Path(DEV).read_text().splitlines(keepends=True)[:6]))
    frozen = {c.id: c.completion for c in iter_completions(FROZEN)}
    replies = {ex.prompt: [frozen[ex.id], f"Final: {ex.expected_answer}", str(ex.expected_answer)]
               for ex in read_dataset(dataset)}
    calls: dict[str, int] = {}

    def respond(messages, tools, tool_choice, config):
        prompt = messages[-1].text
        k = calls[prompt] = calls.get(prompt, -1) + 1
        out = ModelOutput.from_content(model="mockllm/model", content=replies[prompt][k % EPOCHS])
        out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        return out

    log = inspect_ai.eval(course_math(str(dataset)), model="mockllm/model", model_args={"custom_outputs": respond},
                          epochs=EPOCHS, log_dir=str(root / "logs"), display="none", log_format="eval")[0]
    assert log.status == "success" and len(log.samples) == 6 * EPOCHS
    return dataset, root / "logs"


def test_inspect_epochs_are_refused_as_frozen_rollouts_and_name_the_pack_route(inspect_epochs_log, tmp_path, capsys):
    from course.import_completions import main as import_main

    dataset, logs = inspect_epochs_log
    out = tmp_path / "x.jsonl"
    assert import_main(["--format", "inspect", str(logs), "--dataset", str(dataset), "--out", str(out)]) == 2
    assert "3 samples of item 'dev-0001'" in capsys.readouterr().err and not out.exists()


def test_inspect_epochs_import_as_a_pack_in_epoch_order_and_give_loop_b_its_pass_at_k(inspect_epochs_log, tmp_path):
    from inspect_ai.log import read_eval_log

    from course.import_completions import main as import_main
    from course.instrument.spec_v1 import score
    from course.lib.records.formats import iter_samples, read_dataset
    from course.lib.selection.policy_comparison import compare_policies
    from course.lib.stats import pass_at_k
    from course.selection_demo import main as selection_main

    dataset, logs = inspect_epochs_log
    pack = tmp_path / "pack.jsonl"
    assert import_main(["--format", "inspect", str(logs), "--pack", "--dataset", str(dataset), "--out", str(pack)]) == 0
    (log_path,) = list(logs.iterdir())
    by_epoch = {(s.id, s.epoch): s.output.completion for s in read_eval_log(str(log_path)).samples}
    answers = {ex.id: ex.expected_answer for ex in read_dataset(dataset)}
    packs = list(iter_samples(pack))
    assert [p.id for p in packs] == list(answers) and packs[0].policy == "inspect:mockllm/model"
    assert all([s.completion for s in p.samples] == [by_epoch[(p.id, e)] for e in range(1, EPOCHS + 1)] for p in packs)
    passed = [sum(score({"expected_answer": answers[p.id]}, s.completion)["reward"] == 1.0 for s in p.samples)
              for p in packs]
    column = compare_policies(str(dataset), [("inspect", str(pack))], k=EPOCHS)["columns"][0]
    assert column["pass_at_k"] == pytest.approx(sum(pass_at_k(EPOCHS, c, EPOCHS) for c in passed) / len(packs))
    assert column["pass_at_k"] == 1.0  # every item got its right line in one of the epochs
    assert selection_main(["--dataset", str(dataset), "--samples", str(pack), "--n", str(EPOCHS),
                           "--outdir", str(tmp_path / "best_of_3")]) == 0


# ---------------------------------------------------------------------------
# The offline replay of a pack (--pack, --epochs), and the prompt the import records
# ---------------------------------------------------------------------------
PACK = str(REPO / "data" / "rollouts" / "selection_pack_dev.jsonl")


def test_the_replay_of_a_pack_imports_back_as_the_packs_first_samples_in_order(tmp_path):
    from course.import_completions import main as import_main
    from course.integrations.inspect_ai import main
    from course.lib.records.formats import iter_samples

    os.environ.setdefault("INSPECT_DISPLAY", "none")
    logs, out = tmp_path / "logs", tmp_path / "pack.jsonl"
    assert main(["--pack", PACK, "--epochs", "3", "--limit", "8", "--log-dir", str(logs)]) == 0
    assert import_main(["--format", "inspect", str(logs), "--pack", "--dataset", DEV, "--out", str(out)]) == 0
    source = {p.id: [s.completion for s in p.samples] for p in iter_samples(PACK)}
    back = list(iter_samples(out))
    assert len(back) == 8
    assert all([s.completion for s in p.samples] == source[p.id][:3] for p in back)


def test_an_inspect_import_records_the_sha256_of_the_messages_each_item_was_sent(inspect_log, tmp_path):
    import json

    from course.import_completions import main as import_main
    from course.lib.external.prompt_records import prompts_sha256
    from course.lib.records.formats import read_dataset

    out = tmp_path / "inspect.jsonl"
    assert import_main(["--format", "inspect", str(inspect_log), "--dataset", DEV, "--out", str(out)]) == 0
    items = read_dataset(DEV)[:20]  # the fixture's --limit 20: the first items, each sent as its only user message
    expected = prompts_sha256((ex.id, [{"role": "user", "content": ex.prompt}]) for ex in items)
    records = {json.dumps(json.loads(line)["prompt_template"]) for line in out.read_text().splitlines()}
    assert records == {json.dumps({"name": "rendered", "sha256": expected})}
