"""lm-evaluation-harness bridge: the shipped tasks (course/integrations/lm_eval_tasks/) loaded by lm-eval's
own TaskManager from another folder, scored by the course scorer, and run for real on the tiny LM's
Hugging Face twin (pi0's weights, offline); the --log_samples files come back through
course.import_completions as frozen rollouts (repeats 1) and as a selection pack (repeats 3)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from course.instrument.spec_v1 import score

pytestmark = pytest.mark.skipif(importlib.util.find_spec("lm_eval") is None,
                                reason="the lmeval extra (lm-evaluation-harness) is not installed")

REPO = Path(__file__).resolve().parent.parent
DEV = REPO / "data" / "datasets" / "math_dev.jsonl"
TASKS = ("course_math", "course_math_tinylm")


def _tasks(**metadata):
    from lm_eval.tasks import TaskManager

    from course.integrations.lm_eval import TASKS_DIR

    manager = TaskManager(include_path=str(TASKS_DIR), include_defaults=False, metadata=metadata or None)
    return manager.load(list(TASKS))["tasks"]


def test_the_tasks_load_from_another_folder_and_their_metric_is_the_course_scorer(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the old task's data_files path was relative to the folder lm_eval ran in
    tasks = _tasks()
    for name in TASKS:
        docs = list(tasks[name].test_docs())
        assert len(docs) == 100 and docs[0]["id"] == "dev-0001"
        right = [tasks[name].process_results(d, [f"Final: {d['expected_answer']}"]) for d in docs]
        bare = [tasks[name].process_results(d, [str(d["expected_answer"])]) for d in docs]
        assert right == [{"course_strict": 1.0}] * 100  # exact_match gave 0 here: "Final: 323" is not "323"
        assert bare == [{"course_strict": 0.0}] * 100
    doc = next(iter(tasks["course_math"].test_docs()))
    assert tasks["course_math"].doc_to_text(doc) == doc["prompt"]
    assert tasks["course_math_tinylm"].doc_to_text(doc) == f"<bos>{doc['prompt']}<sep>"  # hf_twin.policy_prompt


def test_metadata_course_dataset_chooses_another_course_dataset(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    docs = list(_tasks(course_dataset="data/datasets/math_holdout.jsonl")["course_math"].test_docs())
    assert len(docs) == 50 and docs[0]["id"] == "holdout-0001"


def test_the_repeats_variants_load_from_the_one_folder_with_eight_sampled_generations(tmp_path, monkeypatch):
    from lm_eval.tasks import TaskManager

    from course.integrations.lm_eval import TASKS_DIR

    monkeypatch.chdir(tmp_path)
    names = ["course_math_x8", "course_math_tinylm_x8"]
    tasks = TaskManager(include_path=str(TASKS_DIR), include_defaults=False).load(names)["tasks"]
    for name, base in zip(names, TASKS):
        config = tasks[name].config
        assert config.repeats == 8 and config.generation_kwargs["do_sample"] is True
        doc = next(iter(tasks[name].test_docs()))
        assert tasks[name].doc_to_text(doc) == _tasks()[base].doc_to_text(doc)  # the same prompt as its base task


def test_process_results_scores_the_generation_as_course_score_does():
    from course.integrations.lm_eval import process_results

    for text in ("Final: 323", "Final:323", "final: 323", "Final: 323\nFinal: 324", "Final: ３２３"):
        verdict = score({"expected_answer": 323}, text)
        assert process_results({"id": "x", "expected_answer": 323}, [text]) == {"course_strict": verdict["reward"]}


def test_process_results_refuses_a_document_whose_answer_is_not_an_integer():
    from course.integrations.lm_eval import process_results

    with pytest.raises(ValueError, match="document 'x'.*not an integer"):
        process_results({"id": "x", "expected_answer": "3.5"}, ["Final: 3"])


# ---------------------------------------------------------------------------
# lm-eval's own run on the tiny LM's twin (generation on CPU: tens of seconds)
# ---------------------------------------------------------------------------
LIMIT = 6


@pytest.fixture(scope="module")
def lm_eval_run(tmp_path_factory):
    """simple_evaluate on pi0's twin: course_math_tinylm (greedy) and a repeats-3 variant (sampled), both
    written by lm-eval's EvaluationTracker as --log_samples does; returns (output dir, results)."""
    pytest.importorskip("transformers", reason="the trl extra (transformers) builds the twin")
    import os

    from lm_eval import simple_evaluate
    from lm_eval.loggers import EvaluationTracker
    from lm_eval.models.huggingface import HFLM
    from lm_eval.tasks import TaskManager

    from course.integrations.hf_twin import char_tokenizer, twin_from_gpt
    from course.integrations.lm_eval import TASKS_DIR
    from course.tinylm.model import load_checkpoint

    os.environ["HF_HUB_OFFLINE"] = "1"
    extra = tmp_path_factory.mktemp("tasks")
    (extra / "course_math_tinylm_x3.yaml").write_text(
        f"include: {TASKS_DIR / 'course_math_tinylm.yaml'}\ntask: course_math_tinylm_x3\nrepeats: 3\n"
        "generation_kwargs:\n  until: ['<eos>']\n  do_sample: true\n  temperature: 1.0\n  max_gen_toks: 32\n")
    gpt, _ = load_checkpoint(REPO / "data" / "tinylm" / "pi0.pt")
    model = HFLM(pretrained=twin_from_gpt(gpt).eval(), tokenizer=char_tokenizer(), batch_size=8, device="cpu")
    manager = TaskManager(include_path=[str(TASKS_DIR), str(extra)], include_defaults=False)
    out = tmp_path_factory.mktemp("lmeval")
    tracker = EvaluationTracker(output_path=str(out))
    results = simple_evaluate(model=model, tasks=["course_math_tinylm", "course_math_tinylm_x3"], limit=LIMIT,
                              task_manager=manager, log_samples=True, bootstrap_iters=0, evaluation_tracker=tracker)
    samples = results.pop("samples")
    tracker.save_results_aggregated(results=results, samples=samples)
    for task in samples:
        tracker.save_results_samples(task_name=task, samples=samples[task])
    return out, results


def _written(out: Path, pattern: str) -> Path:
    (found,) = sorted(out.rglob(pattern))
    return found


def _first_items(tmp_path: Path) -> Path:
    """The dev items lm-eval ran (its --limit takes the first ones), as a course dataset."""
    path = tmp_path / "dev_first.jsonl"
    path.write_text("".join(DEV.read_text().splitlines(keepends=True)[:LIMIT]))
    return path


@pytest.mark.slow
def test_lm_evals_table_shows_the_strict_pass_rate_of_its_logged_generations(lm_eval_run):
    out, results = lm_eval_run
    lines = [json.loads(x) for x in _written(out, "samples_course_math_tinylm_2*.jsonl").read_text().splitlines()]
    verdicts = [score({"expected_answer": line["doc"]["expected_answer"]}, line["resps"][0][0])["reward"]
                for line in lines]
    assert len(lines) == LIMIT
    assert results["results"]["course_math_tinylm"]["course_strict,none"] == pytest.approx(sum(verdicts) / LIMIT)
    # pi0 answers some of these in the strict format: a metric that can be 1, unlike exact_match
    assert sum(verdicts) > 0


@pytest.mark.slow
def test_the_logged_generations_import_as_frozen_rollouts_with_the_same_pass_rate(lm_eval_run, tmp_path):
    from course.eval import main as course_eval
    from course.import_completions import main as import_main

    out, results = lm_eval_run
    dataset, rollouts = _first_items(tmp_path), tmp_path / "rollouts.jsonl"
    assert import_main(["--format", "lm-eval", str(_written(out, "samples_course_math_tinylm_2*.jsonl")),
                        "--results", str(_written(out, "results_*.json")), "--dataset", str(dataset),
                        "--out", str(rollouts)]) == 0
    assert course_eval(["--dataset", str(dataset), "--completions", str(rollouts),
                        "--outdir", str(tmp_path / "run")]) in (0, 1)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["pass_rate"] == pytest.approx(results["results"]["course_math_tinylm"]["course_strict,none"])


@pytest.mark.slow
def test_repeats_import_as_a_selection_pack_whose_pass_at_k_is_the_samples(lm_eval_run, tmp_path, capsys):
    from course.import_completions import main as import_main
    from course.lib.records.formats import iter_samples
    from course.lib.selection.policy_comparison import compare_policies
    from course.lib.stats import pass_at_k

    out, _ = lm_eval_run
    samples_file = _written(out, "samples_course_math_tinylm_x3_*.jsonl")
    dataset, pack = _first_items(tmp_path), tmp_path / "pack.jsonl"
    assert import_main(["--format", "lm-eval", str(samples_file), "--dataset", str(dataset), "--policy", "pi0-twin",
                        "--out", str(tmp_path / "refused.jsonl")]) == 2
    assert "3 samples of item 'dev-0001'" in capsys.readouterr().err and not (tmp_path / "refused.jsonl").exists()
    assert import_main(["--format", "lm-eval", str(samples_file), "--dataset", str(dataset), "--policy", "pi0-twin",
                        "--pack", "--out", str(pack)]) == 0
    lines = {json.loads(x)["doc"]["id"]: json.loads(x) for x in samples_file.read_text().splitlines()}
    packs = list(iter_samples(pack))
    assert [p.id for p in packs] == sorted(lines) and all(len(p.samples) == 3 for p in packs)
    assert all([s.completion for s in p.samples] == lines[p.id]["resps"][0] for p in packs)
    passed = [sum(score({"expected_answer": lines[p.id]["doc"]["expected_answer"]}, s.completion)["reward"] == 1.0
                  for s in p.samples) for p in packs]
    column = compare_policies(str(dataset), [("pi0", str(pack))], k=3)["columns"][0]
    assert column["pass_at_k"] == pytest.approx(sum(pass_at_k(3, c, 3) for c in passed) / LIMIT)
    assert column["pass_at_1"] == pytest.approx(sum(c / 3 for c in passed) / LIMIT)
