"""Bridges in: course.datasets import and course.import_completions, on real outside formats.

The lm-eval fixtures in tests/data/bridges/ were written by lm-evaluation-harness 0.4.13 itself
(``lm_eval --model dummy --tasks course_math --include_path <the task's folder then> --limit 5
--log_samples``; the dummy model answers "lol", so the five responses were replaced by
typical completions, and the results file was cut to the keys the importer reads, without the
machine's environment dump). The GSM8K samples are written in the release format.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from course.datasets import main as datasets_main
from course.import_completions import main as import_main

REPO = Path(__file__).resolve().parent.parent
BR = REPO / "tests" / "data" / "bridges"
DEV = str(REPO / "data" / "datasets" / "math_dev.jsonl")


def test_gsm8k_import_reads_the_answer_after_the_marks_and_thousands_commas(tmp_path, capsys):
    out = tmp_path / "ds.jsonl"
    assert datasets_main(["import", "--format", "gsm8k", str(BR / "gsm8k_sample.jsonl"), "--out", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["expected_answer"] for r in rows] == [38, 1245, -7, 126, 1300]
    assert rows[1]["id"] == "gsm8k_sample-00002"
    assert rows[0]["prompt"].endswith("Output exactly one line: Final: <int>")
    assert "dataset_fingerprint:" in capsys.readouterr().out


def test_imported_dataset_is_read_by_the_course_reader_and_is_byte_stable(tmp_path):
    from course.lib.records.formats import read_dataset

    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    for out in (a, b):
        datasets_main(["import", "--format", "gsm8k", str(BR / "gsm8k_sample.jsonl"), "--out", str(out)])
    assert a.read_bytes() == b.read_bytes()
    assert len(read_dataset(a)) == 5


def test_gsm8k_line_without_marks_is_path_line_exit_2_and_nothing_written(tmp_path, capsys):
    out = tmp_path / "ds.jsonl"
    assert datasets_main(["import", "--format", "gsm8k", str(BR / "gsm8k_no_mark.jsonl"), "--out", str(out)]) == 2
    assert "gsm8k_no_mark.jsonl:2: the answer has no '#### <n>' line" in capsys.readouterr().err
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_non_integer_answer_is_path_line_exit_2_by_default(tmp_path, capsys):
    out = tmp_path / "ds.jsonl"
    assert datasets_main(["import", "--format", "gsm8k", str(BR / "gsm8k_fraction.jsonl"), "--out", str(out)]) == 2
    assert "gsm8k_fraction.jsonl:2: the answer '3.5' is not an integer" in capsys.readouterr().err
    assert not out.exists()


def test_skip_non_integer_counts_and_lists_what_it_left_out(tmp_path, capsys):
    out = tmp_path / "ds.jsonl"
    argv = ["import", "--format", "gsm8k", str(BR / "gsm8k_fraction.jsonl"), "--out", str(out), "--skip-non-integer",
            "--json"]
    assert datasets_main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["items"] == 1 and report["skipped_non_integer"] == 1
    assert report["skipped"][0]["where"].endswith("gsm8k_fraction.jsonl:2")


def test_existing_output_is_not_replaced_without_force(tmp_path, capsys):
    out = tmp_path / "ds.jsonl"
    out.write_text("keep\n")
    assert datasets_main(["import", "--format", "gsm8k", str(BR / "gsm8k_sample.jsonl"), "--out", str(out)]) == 2
    assert out.read_text() == "keep\n"


def test_hf_jsonl_with_named_columns_and_a_missing_column(tmp_path, capsys):
    src = tmp_path / "src.jsonl"
    src.write_text('{"problem": "What is 2 + 3?", "solution": "5"}\n{"problem": "What is 1 + 1?"}\n')
    out = tmp_path / "ds.jsonl"
    argv = ["import", "--format", "hf", str(src), "--question-col", "problem", "--answer-col", "solution",
            "--out", str(out)]
    assert datasets_main(argv) == 2
    assert "src.jsonl:2: missing column 'solution'" in capsys.readouterr().err
    assert not out.exists()


def test_hf_saved_dataset_and_parquet_import_the_same_items(tmp_path):
    datasets = pytest.importorskip("datasets", reason="the hf extra (datasets, pyarrow) is not installed")
    rows = [{"q": "What is 6 * 7?", "a": "42"}, {"q": "What is 1,000 + 234?", "a": "1,234"},
            {"q": "Half of 3?", "a": "1.5"}]
    ds = datasets.Dataset.from_list(rows)
    ds.save_to_disk(str(tmp_path / "saved"))
    ds.to_parquet(str(tmp_path / "t.parquet"))
    outs = []
    for src, name in ((tmp_path / "saved", "saved"), (tmp_path / "t.parquet", "t")):
        out = tmp_path / f"{name}.jsonl"
        argv = ["import", "--format", "hf", str(src), "--question-col", "q", "--answer-col", "a",
                "--source-name", "toy", "--skip-non-integer", "--out", str(out)]
        assert datasets_main(argv) == 0
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]
    assert [json.loads(x)["expected_answer"] for x in outs[0].decode().splitlines()] == [42, 1234]


# ---------------------------------------------------------------------------
# course.import_completions
# ---------------------------------------------------------------------------
def test_plain_completions_need_a_stated_policy_and_sampling(tmp_path, capsys):
    out = tmp_path / "r.jsonl"
    assert import_main(["--format", "plain", str(BR / "plain_completions.jsonl"), "--out", str(out)]) == 2
    assert "never guessed" in capsys.readouterr().err
    assert not out.exists()


def test_plain_completions_become_a_rollouts_file_course_eval_reads(tmp_path):
    from course.lib.records.formats import iter_completions

    out = tmp_path / "r.jsonl"
    argv = ["--format", "plain", str(BR / "plain_completions.jsonl"), "--policy", "m",
            "--sampling", '{"temperature": 0}', "--dataset", DEV, "--out", str(out)]
    assert import_main(argv) == 0
    got = list(iter_completions(out))
    assert [c.id for c in got] == ["dev-0001", "dev-0002", "dev-0003", "dev-0004", "dev-0005"]
    assert got[0].policy == "m" and got[0].sampling == {"temperature": 0}


def test_lm_eval_samples_take_policy_and_sampling_from_the_log(tmp_path):
    from course.lib.records.formats import iter_completions

    out = tmp_path / "r.jsonl"
    argv = ["--format", "lm-eval", str(BR / "lmeval_samples_course_math.jsonl"),
            "--results", str(BR / "lmeval_results_course_math.json"), "--dataset", DEV, "--out", str(out)]
    assert import_main(argv) == 0
    got = list(iter_completions(out))
    assert got[0].completion == "Final: 323" and got[0].policy == "lm-eval:dummy"
    assert got[0].sampling["gen_kwargs"] == {"do_sample": False, "max_gen_toks": 32, "until": ["\n\n"]}
    assert got[0].sampling["random_seed"] == 0


def test_lm_eval_log_of_another_task_is_path_line_exit_2(tmp_path, capsys):
    out = tmp_path / "r.jsonl"
    argv = ["--format", "lm-eval", str(BR / "lmeval_samples_gsm8k.jsonl"),
            "--results", str(BR / "lmeval_results_course_math.json"), "--out", str(out)]
    assert import_main(argv) == 2
    assert "lmeval_samples_gsm8k.jsonl:1: the document has no string field 'id'" in capsys.readouterr().err
    assert not out.exists()


def test_lm_eval_target_that_disagrees_with_the_dataset_is_refused(tmp_path, capsys):
    src = tmp_path / "samples.jsonl"
    lines = (BR / "lmeval_samples_course_math.jsonl").read_text().splitlines()
    bad = json.loads(lines[1])
    bad["target"] = "64"
    src.write_text(lines[0] + "\n" + json.dumps(bad) + "\n")
    argv = ["--format", "lm-eval", str(src), "--policy", "x", "--dataset", DEV, "--out", str(tmp_path / "r.jsonl")]
    assert import_main(argv) == 2
    assert "samples.jsonl:2: the recorded target '64' is not dev-0002's expected_answer 63" in capsys.readouterr().err


def test_lm_eval_without_results_or_policy_does_not_guess_the_model(tmp_path, capsys):
    argv = ["--format", "lm-eval", str(BR / "lmeval_samples_course_math.jsonl"), "--out", str(tmp_path / "r.jsonl")]
    assert import_main(argv) == 2
    assert "does not name the model" in capsys.readouterr().err


def test_import_completions_help_ends_with_an_example(run_in_process):
    r = run_in_process("course.import_completions", ["--help"], cwd=REPO)
    assert r.returncode == 0 and "example:" in r.stdout


def test_an_output_under_a_runs_directory_that_does_not_exist_yet_is_written(tmp_path, monkeypatch, capsys):
    # A fresh directory has no runs/ until some tool makes one: `--out runs/x.jsonl` must not
    # depend on an earlier command having run (it exited 2 with "No such file or directory").
    monkeypatch.chdir(tmp_path)
    assert datasets_main(["import", "--format", "gsm8k", str(BR / "gsm8k_sample.jsonl"),
                          "--out", "runs/gsm8k.jsonl"]) == 0
    assert import_main(["--format", "plain", str(BR / "plain_completions.jsonl"), "--policy", "m",
                        "--sampling", '{"temperature": 0}', "--out", "runs/sub/plain.jsonl"]) == 0
    assert (tmp_path / "runs" / "gsm8k.jsonl").is_file() and (tmp_path / "runs" / "sub" / "plain.jsonl").is_file()
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == ["gsm8k.jsonl", "sub"]  # no temporary file left
