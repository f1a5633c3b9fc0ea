"""course.eval end to end: run directories, determinism, atomicity, and every bad input -> exit 2."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

import course.eval as ev
from course.lib import bundled
from course.lib.evaluation import pipeline
from course.lib.evaluation.summary import pass_rate_line
from course.lib.records.jsonl import dumps_line
from course.lib.records.manifest import PROJECT_ROOT

SAMPLING = {"max_tokens": 32, "seed": 1, "temperature": 0.8, "top_p": 1.0}
# (id, expected_answer, completion): 2 pass, 1 wrong answer, 1 format slip, 1 Unicode minus.
ITEMS = [
    ("t-1", 323, "Final: 323"),
    ("t-2", -4, "Final: -4"),
    ("t-3", 12, "Final: 13"),
    ("t-4", 7, "Final:7"),
    ("t-5", -9, "Final: \u22129"),
]


def write_dataset(path: Path, items=ITEMS) -> Path:
    path.write_text(
        "".join(dumps_line({"id": i, "prompt": f"Question {i}?", "expected_answer": e}) + "\n" for i, e, _ in items),
        encoding="utf-8",
    )
    return path


def write_completions(path: Path, items=ITEMS) -> Path:
    path.write_text(
        "".join(
            dumps_line({"id": i, "completion": c, "policy": "toy", "sampling": SAMPLING}) + "\n" for i, _, c in items
        ),
        encoding="utf-8",
    )
    return path


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    monkeypatch.chdir(tmp_path)
    return write_dataset(tmp_path / "toy_dev.jsonl"), write_completions(tmp_path / "toy_rollouts.jsonl")


def run_eval(dataset: Path, completions: Path, *extra: str) -> int:
    return ev.main(["--dataset", str(dataset), "--completions", str(completions), *extra])


def leftovers(root: Path) -> list[str]:
    runs = root / "runs"
    return sorted(p.name for p in runs.iterdir()) if runs.exists() else []


# --- the run directory ----------------------------------------------------------------------
def test_eval_writes_manifest_results_summary_and_markdown(files, tmp_path: Path, capsys) -> None:
    assert run_eval(*files, "--outdir", "runs/a") == 0
    assert sorted(p.name for p in (tmp_path / "runs/a").iterdir()) == [
        "manifest.json", "results.jsonl", "summary.json", "summary.md"
    ]


def test_console_prints_the_pass_rate_line_with_its_wilson_interval(files, capsys) -> None:
    run_eval(*files, "--outdir", "runs/a")
    out = capsys.readouterr().out
    assert pass_rate_line(2, 5) in out
    assert out.count("Pass rate: 2/5 = 40.0% (95% CI ") == 1


def test_console_lists_each_failure_code_with_count_and_share(files, capsys) -> None:
    run_eval(*files, "--outdir", "runs/a")
    out = capsys.readouterr().out
    for code in ("wrong_answer", "prefix_spacing", "lookalike_minus"):
        assert any(line.split()[:3] == [code, "1", "20.0%"] for line in out.splitlines())


def test_results_hold_one_line_per_item_with_id_completion_expected_reward_details(files, tmp_path: Path) -> None:
    run_eval(*files, "--outdir", "runs/a")
    lines = [json.loads(x) for x in (tmp_path / "runs/a/results.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in lines] == [i for i, _, _ in ITEMS]
    assert set(lines[0]) == {"id", "completion", "expected", "reward", "details"}
    assert (lines[0]["reward"], lines[0]["details"]["error_code"]) == (1.0, "ok")
    assert (lines[4]["reward"], lines[4]["details"]["error_code"]) == (0.0, "lookalike_minus")
    assert lines[4]["completion"] == "Final: \u22129"


def test_summary_counts_shares_and_interval(files, tmp_path: Path) -> None:
    run_eval(*files, "--outdir", "runs/a")
    summary = json.loads((tmp_path / "runs/a/summary.json").read_text(encoding="utf-8"))
    assert (summary["n"], summary["passed"], summary["pass_rate"], summary["mean_reward"]) == (5, 2, 0.4, 0.4)
    assert summary["counts"] == {"ok": 2, "wrong_answer": 1, "prefix_spacing": 1, "lookalike_minus": 1}
    assert [row["code"] for row in summary["breakdown"]] == ["ok", "prefix_spacing", "lookalike_minus", "wrong_answer"]
    assert sum(row["share"] for row in summary["breakdown"]) == pytest.approx(1.0)
    assert summary["pass_rate_ci95"]["method"] == "wilson"
    assert summary["pass_rate_ci95"]["low"] < 0.4 < summary["pass_rate_ci95"]["high"]


def test_summary_json_opens_with_the_pass_rate_then_its_interval_and_counts(files, tmp_path: Path) -> None:
    # A reader who opens summary.json sees the headline first, not the breakdown (sorted keys put
    # "breakdown" first); the rest follows by name, so the bytes still depend on the content only.
    run_eval(*files, "--outdir", "runs/a")
    text = (tmp_path / "runs/a/summary.json").read_text(encoding="utf-8")
    keys = list(json.loads(text))
    assert keys[:6] == ["pass_rate", "pass_rate_ci95", "passed", "failed", "n", "n_missing"]
    assert keys[keys.index("scorer_version") + 1:] == sorted(keys[keys.index("scorer_version") + 1:])
    assert text.splitlines()[1] == '  "pass_rate": 0.4,'


def test_manifest_records_inputs_instrument_policy_and_results_hash(files, tmp_path: Path) -> None:
    dataset, completions = files
    run_eval(dataset, completions, "--outdir", "runs/a")
    m = json.loads((tmp_path / "runs/a/manifest.json").read_text(encoding="utf-8"))
    assert m["dataset"]["sha256"] == hashlib.sha256(dataset.read_bytes()).hexdigest() == m["dataset_fingerprint"]
    assert m["dataset"]["bytes"] == dataset.stat().st_size
    assert m["completions"]["sha256"] == hashlib.sha256(completions.read_bytes()).hexdigest()
    assert m["results_sha256"] == hashlib.sha256((tmp_path / "runs/a/results.jsonl").read_bytes()).hexdigest()
    assert (m["split"], m["policy"], m["sampling"]) == ("dev", "toy", SAMPLING)
    assert m["scorer_version"] == "strict-final-v1" and len(m["scorer_fingerprint"]) == 64
    for key in ("course_version", "git_commit", "git_dirty", "python", "platform", "command", "created_utc"):
        assert key in m
    assert m["command"].startswith("python -m course.eval --dataset")


def test_split_flag_overrides_the_name_inferred_from_the_file(files, tmp_path: Path) -> None:
    run_eval(*files, "--outdir", "runs/a", "--split", "holdout")
    assert json.loads((tmp_path / "runs/a/manifest.json").read_text())["split"] == "holdout"


def test_summary_md_shows_example_failures_with_escaped_characters(files, tmp_path: Path) -> None:
    run_eval(*files, "--outdir", "runs/a")
    md = (tmp_path / "runs/a/summary.md").read_text(encoding="utf-8")
    assert "Pass rate: 2/5 = 40.0%" in md
    assert "`Final: ⟨U+2212⟩9`" in md
    assert "### `wrong_answer`" in md


def test_without_outdir_the_run_goes_to_the_next_free_runs_eval_name(files, tmp_path: Path, capsys) -> None:
    run_eval(*files)
    run_eval(*files)
    out = capsys.readouterr().out
    assert leftovers(tmp_path) == ["eval_001", "eval_002"]
    assert "runs/eval_002" in out


def test_json_flag_prints_the_run_dir_and_summary_as_json(files, capsys) -> None:
    run_eval(*files, "--outdir", "runs/a", "--json")
    payload = json.loads(capsys.readouterr().out)
    assert payload["run_dir"] == "runs/a" and payload["summary"]["passed"] == 2


# --- determinism and ordering ---------------------------------------------------------------------
def test_two_runs_give_byte_identical_results_and_summary(files, tmp_path: Path) -> None:
    run_eval(*files, "--outdir", "runs/a")
    run_eval(*files, "--outdir", "runs/b")
    for name in ("results.jsonl", "summary.json", "summary.md"):
        assert (tmp_path / "runs/a" / name).read_bytes() == (tmp_path / "runs/b" / name).read_bytes()


def test_the_bundled_run_is_byte_identical_with_orjson_reading_and_without(tmp_path: Path) -> None:
    import importlib.util

    from course.lib.records import jsonl

    if importlib.util.find_spec("orjson") is None:
        pytest.skip("orjson is not installed (the fast extra)")
    dataset, completions = PROJECT_ROOT / bundled.MATH_DEV, PROJECT_ROOT / bundled.FROZEN_ROLLOUTS_DEV
    try:
        for name, fast in (("fast", True), ("stdlib", False)):
            jsonl.use_fast_decoder(fast)
            assert run_eval(dataset, completions, "--outdir", str(tmp_path / name)) == 0
    finally:
        jsonl.use_fast_decoder(True)
    for name in ("results.jsonl", "summary.json", "summary.md"):
        assert (tmp_path / "fast" / name).read_bytes() == (tmp_path / "stdlib" / name).read_bytes()


def test_shuffled_completions_give_the_same_bytes_in_dataset_order(files, tmp_path: Path) -> None:
    dataset, completions = files
    shuffled = list(ITEMS)
    random.Random(0).shuffle(shuffled)
    write_completions(tmp_path / "shuffled.jsonl", shuffled)
    run_eval(dataset, completions, "--outdir", "runs/a")
    run_eval(dataset, tmp_path / "shuffled.jsonl", "--outdir", "runs/b")
    assert (tmp_path / "runs/a/results.jsonl").read_bytes() == (tmp_path / "runs/b/results.jsonl").read_bytes()
    assert (tmp_path / "runs/a/summary.json").read_bytes() == (tmp_path / "runs/b/summary.json").read_bytes()


# --- overwriting and atomicity ------------------------------------------------------------------
def test_an_existing_run_is_not_overwritten_without_force(files, tmp_path: Path, capsys) -> None:
    run_eval(*files, "--outdir", "runs/a")
    before = (tmp_path / "runs/a/manifest.json").read_bytes()
    assert run_eval(*files, "--outdir", "runs/a") == 2
    assert "already exists; pass --force" in capsys.readouterr().err
    assert (tmp_path / "runs/a/manifest.json").read_bytes() == before


def test_force_replaces_an_existing_run_and_keeps_the_file_the_user_added(files, tmp_path: Path) -> None:
    run_eval(*files, "--outdir", "runs/a")
    (tmp_path / "runs/a/results.jsonl").unlink()  # a file of the run: replaced by the new one
    (tmp_path / "runs/a/notes.txt").write_text("mine")  # the user's: kept (issue 30)
    assert run_eval(*files, "--outdir", "runs/a", "--force") == 0
    assert (tmp_path / "runs/a/results.jsonl").is_file() and (tmp_path / "runs/a/notes.txt").read_text() == "mine"
    assert leftovers(tmp_path) == ["a"]


def test_a_failure_mid_run_leaves_no_run_directory(files, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []

    def exploding_score(example, completion):
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("disk on fire")
        return real_score(example, completion)

    strict = pipeline.get_rubric("strict")
    real_score = strict.score
    exploding = dataclasses.replace(strict, score=exploding_score)
    monkeypatch.setattr(pipeline, "get_rubric", lambda name: exploding)
    with pytest.raises(RuntimeError):
        run_eval(*files, "--outdir", "runs/a")
    assert leftovers(tmp_path) == []  # neither runs/a nor a hidden temporary directory


# --- every bad input: exit 2, path:line, nothing written -------------------------------------------
def _dataset_lines() -> list[str]:
    return [dumps_line({"id": i, "prompt": "q", "expected_answer": e}) for i, e, _ in ITEMS]


def _completion_lines() -> list[str]:
    return [dumps_line({"id": i, "completion": c, "policy": "toy", "sampling": SAMPLING}) for i, _, c in ITEMS]


def _join(lines: list[str]) -> bytes:
    return ("\n".join(lines) + "\n").encode("utf-8")


BAD_INPUTS = {
    # name: (which file, bytes, line in the message, fragment of the message)
    "invalid JSON": ("completions",
                     lambda: _join(_completion_lines()[:2] + ['{"id": "t-3",'] + _completion_lines()[3:]),
                     3, "invalid JSON"),
    "not an object": ("dataset", lambda: _join(_dataset_lines()[:1] + ["[1, 2]"] + _dataset_lines()[2:]),
                      2, "expected a JSON object"),
    "missing field": ("dataset",
                      lambda: _join(_dataset_lines()[:3] + ['{"id": "t-4", "prompt": "q"}'] + _dataset_lines()[4:]),
                      4, "missing field 'expected_answer'"),
    "bool is not an int": ("dataset",
                           lambda: _join([_dataset_lines()[0].replace("323", "true")] + _dataset_lines()[1:]),
                           1, "must be an integer, got a boolean"),
    "completion not text": ("completions",
                            lambda: _join([_completion_lines()[0].replace('"Final: 323"', "323")]
                                          + _completion_lines()[1:]),
                            1, "field 'completion' must be a string"),
    "duplicate dataset id": ("dataset", lambda: _join(_dataset_lines() + [_dataset_lines()[1]]),
                             6, "duplicate id 't-2' (first seen on line 2)"),
    "duplicate completion id": ("completions", lambda: _join(_completion_lines() + [_completion_lines()[0]]),
                                6, "duplicate id 't-1' (first seen on line 1)"),
    "unknown completion id": ("completions",
                              lambda: _join(_completion_lines() + [_completion_lines()[0].replace("t-1", "t-99")]),
                              6, "id 't-99' is not in the dataset"),
    "missing completion": ("completions", lambda: _join(_completion_lines()[:2] + _completion_lines()[3:]),
                           None, "id 't-3' has no completion"),
    "empty file": ("completions", lambda: b"", 1, "empty file"),
    "BOM": ("dataset", lambda: b"\xef\xbb\xbf" + _join(_dataset_lines()), 1, "byte-order mark"),
    "CRLF": ("completions", lambda: _join(_completion_lines()).replace(b"\n", b"\r\n"), 1, "CRLF"),
    "not UTF-8": ("dataset", lambda: _join(_dataset_lines()).replace(b'"q"', b'"caf\xe9"', 1), 1, "not valid UTF-8"),
    "blank line": ("completions", lambda: _join(_completion_lines()[:2] + [""] + _completion_lines()[2:]),
                   3, "blank line"),
    "mixed sampling": ("completions",
                       lambda: _join(_completion_lines()[:4]
                                     + [_completion_lines()[4].replace('"seed": 1', '"seed": 2')]),
                       5, "sampling differs from line 1"),
}


@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_a_bad_input_exits_2_with_path_and_line_and_writes_nothing(files, tmp_path: Path, capsys, name: str) -> None:
    dataset, completions = files
    which, make, line, fragment = BAD_INPUTS[name]
    target = dataset if which == "dataset" else completions
    target.write_bytes(make())
    assert run_eval(dataset, completions, "--outdir", "runs/bad") == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0, "one line on stderr"
    if line is None:  # a missing completion is reported at the dataset line that lacks one
        assert err.startswith(f"error: {dataset}:3: ")
    else:
        assert err.startswith(f"error: {target}:{line}: ")
    assert fragment in err
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_a_bad_input_gets_the_same_message_when_ids_share_digests(files, tmp_path: Path, capsys, monkeypatch,
                                                                  name: str) -> None:
    # The indexed mode finds items by a 64-bit digest of their id; when digests collide it must still say exactly
    # what is wrong (here: t-1, t-3 and t-99 share one digest, so a lookup alone cannot tell them apart).
    monkeypatch.setattr(pipeline, "hash", lambda ident: 7 if ident in ("t-1", "t-3", "t-99") else hash(ident),
                        raising=False)
    dataset, completions = files
    which, make, line, fragment = BAD_INPUTS[name]
    (dataset if which == "dataset" else completions).write_bytes(make())
    assert run_eval(dataset, completions, "--outdir", "runs/bad") == 2
    monkeypatch.undo()
    err = capsys.readouterr().err
    (dataset if which == "dataset" else completions).write_bytes(make())
    assert run_eval(dataset, completions, "--outdir", "runs/bad") == 2
    assert err == capsys.readouterr().err


@pytest.mark.parametrize("digest", ["all equal", "two equal"])
def test_shuffled_completions_give_the_same_bytes_when_ids_share_digests(files, tmp_path: Path, monkeypatch,
                                                                         digest: str) -> None:
    dataset, completions = files
    shuffled = list(ITEMS)
    random.Random(1).shuffle(shuffled)
    write_completions(tmp_path / "shuffled.jsonl", shuffled)
    run_eval(dataset, completions, "--outdir", "runs/a")
    same = (lambda ident: 7) if digest == "all equal" else (lambda ident: 7 if ident in ("t-2", "t-4") else hash(ident))
    monkeypatch.setattr(pipeline, "hash", same, raising=False)
    run_eval(dataset, tmp_path / "shuffled.jsonl", "--outdir", "runs/b")
    for name in ("results.jsonl", "summary.json"):
        assert (tmp_path / "runs/a" / name).read_bytes() == (tmp_path / "runs/b" / name).read_bytes()


def test_a_completion_whose_unknown_id_shares_a_dataset_ids_digest_is_still_unknown(files, tmp_path: Path, capsys,
                                                                                    monkeypatch) -> None:
    monkeypatch.setattr(pipeline, "hash", lambda ident: 7 if ident in ("t-2", "t-99") else hash(ident), raising=False)
    dataset, completions = files
    lines = _completion_lines()
    completions.write_bytes(_join([lines[0], lines[1].replace("t-2", "t-99")] + lines[2:]))  # t-2 missing, t-99 unknown
    assert run_eval(dataset, completions, "--outdir", "runs/bad") == 2
    assert f"{completions}:2: id 't-99' is not in the dataset" in capsys.readouterr().err


def test_a_missing_input_file_exits_2(files, tmp_path: Path, capsys) -> None:
    assert run_eval(files[0], tmp_path / "nope.jsonl") == 2
    assert "nope.jsonl: no such file" in capsys.readouterr().err


def test_giving_only_one_of_dataset_and_completions_is_a_usage_error(files, capsys) -> None:
    assert ev.main(["--dataset", str(files[0])]) == 2
    assert "pass both --dataset and --completions" in capsys.readouterr().err


def test_allow_missing_scores_an_absent_completion_as_a_failure_with_its_own_code(files, tmp_path: Path,
                                                                                  capsys) -> None:
    dataset, completions = files
    write_completions(completions, ITEMS[:2] + ITEMS[3:])  # t-3 has no completion
    assert run_eval(dataset, completions, "--outdir", "runs/a", "--allow-missing") == 0
    results = [json.loads(x) for x in (tmp_path / "runs/a/results.jsonl").read_text().splitlines()]
    assert [r["id"] for r in results] == ["t-1", "t-2", "t-3", "t-4", "t-5"]
    assert (results[2]["reward"], results[2]["details"]["error_code"]) == (0.0, "missing_completion")
    assert results[2]["completion"] is None
    manifest = json.loads((tmp_path / "runs/a/manifest.json").read_text())
    assert (manifest["n_missing"], manifest["allow_missing"]) == (1, True)
    assert "Missing completions scored as failures: 1" in capsys.readouterr().out


def test_allow_missing_still_rejects_an_unknown_completion_id(files, tmp_path: Path) -> None:
    dataset, completions = files
    write_completions(completions, ITEMS + [("t-99", 0, "Final: 0")])
    assert run_eval(dataset, completions, "--outdir", "runs/a", "--allow-missing") == 2


# --- the bundled data (what the instructor runs) -----------------------------------------------------
BUNDLED = PROJECT_ROOT / bundled.MATH_DEV


@pytest.mark.skipif(not BUNDLED.exists(), reason="bundled data pack not present")
def test_no_arguments_evaluates_the_bundled_dev_set_with_repo_relative_paths(tmp_path: Path, monkeypatch,
                                                                             capsys) -> None:
    monkeypatch.chdir(tmp_path)  # any working directory: the manifest names the same files
    assert ev.main([]) == 0
    out = capsys.readouterr().out
    assert "Pass rate: " in out and "runs/eval_001" in out
    manifest = json.loads((tmp_path / "runs/eval_001/manifest.json").read_text())
    assert manifest["dataset"]["path"] == "data/datasets/math_dev.jsonl"
    assert manifest["completions"]["path"] == "data/rollouts/frozen_rollouts_dev.jsonl"
    assert manifest["split"] == "dev" and manifest["n_items"] == 100
    summary = json.loads((tmp_path / "runs/eval_001/summary.json").read_text())
    assert 0.20 <= summary["pass_rate"] <= 0.35  # the data pack's documented mix


@pytest.mark.skipif(not BUNDLED.exists(), reason="bundled data pack not present")
def test_the_instructors_command_runs_as_written_from_the_repo_root(tmp_path: Path) -> None:
    outdir = tmp_path / "demo_eval_clean"
    proc = subprocess.run(
        [sys.executable, "-m", "course.eval", "--dataset", "data/datasets/math_dev.jsonl",
         "--completions", "data/rollouts/frozen_rollouts_dev.jsonl", "--outdir", str(outdir)],
        cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[2].startswith("Pass rate: ")
    assert (outdir / "results.jsonl").read_text().count("\n") == 100


def test_help_shows_a_worked_example(capsys) -> None:
    with pytest.raises(SystemExit) as info:
        ev.main(["--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert "example:" in out and "python -m course.eval --dataset" in out and "--allow-missing" in out


def test_the_progress_line_is_shown_only_when_stderr_is_a_terminal(monkeypatch) -> None:
    class Tty:
        def __init__(self, tty: bool) -> None:
            self.tty, self.text = tty, ""

        def isatty(self) -> bool:
            return self.tty

        def write(self, s: str) -> None:
            self.text += s

        def flush(self) -> None:
            pass

    monkeypatch.setattr(sys, "stderr", Tty(False))
    assert ev._progress_printer() is None
    fake = Tty(True)
    monkeypatch.setattr(sys, "stderr", fake)
    show = ev._progress_printer()
    monkeypatch.setattr(ev.time, "perf_counter", lambda: 1e9)  # as if long past the first half second
    show(16384)
    assert "scored 16,384 lines" in fake.text


def test_the_manifest_says_whether_completions_came_in_dataset_order(files, tmp_path: Path) -> None:
    dataset, completions = files
    write_completions(tmp_path / "reversed.jsonl", ITEMS[::-1])
    run_eval(dataset, completions, "--outdir", "runs/a")
    run_eval(dataset, tmp_path / "reversed.jsonl", "--outdir", "runs/b")
    flags = [json.loads((tmp_path / f"runs/{r}/manifest.json").read_text())["completions_in_dataset_order"]
             for r in "ab"]
    assert flags == [True, False]


# --- the rubric (--rubric NAME; strict by default) ------------------------------------------------
@pytest.mark.skipif(not BUNDLED.exists(), reason="bundled data pack not present")
def test_a_hackable_rubric_gives_a_different_pass_rate_on_the_bundled_data(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    assert ev.main(["--outdir", "runs/strict"]) == 0
    assert ev.main(["--rubric", "contains_answer", "--outdir", "runs/contains"]) == 0
    strict = json.loads((tmp_path / "runs/strict/summary.json").read_text())
    contains = json.loads((tmp_path / "runs/contains/summary.json").read_text())
    # contains_answer rewards the right number anywhere: strict passes are a subset of its passes
    assert contains["passed"] > strict["passed"]
    assert contains["scorer_version"] == "hackable-contains-answer-v1"


def test_the_manifest_records_the_rubric_name_and_version(files, tmp_path: Path) -> None:
    assert run_eval(*files, "--outdir", "runs/s") == 0
    assert run_eval(*files, "--rubric", "last_number", "--outdir", "runs/l") == 0
    strict = json.loads((tmp_path / "runs/s/manifest.json").read_text())
    last = json.loads((tmp_path / "runs/l/manifest.json").read_text())
    assert (strict["rubric"], strict["rubric_version"]) == ("strict", strict["scorer_version"])
    assert (last["rubric"], last["rubric_version"]) == ("last_number", "hackable-last-number-v1")


def test_the_default_rubric_is_strict_and_writes_the_same_bytes_as_naming_it(files, tmp_path: Path) -> None:
    assert run_eval(*files, "--outdir", "runs/default") == 0
    assert run_eval(*files, "--rubric", "strict", "--outdir", "runs/named") == 0
    for name in ("results.jsonl", "summary.json", "summary.md"):
        assert (tmp_path / "runs/default" / name).read_bytes() == (tmp_path / "runs/named" / name).read_bytes()
    assert "Rubric" not in (tmp_path / "runs/default/summary.md").read_text()  # strict reads as it always did


def test_a_hackable_rubric_is_named_with_its_loophole_on_stdout_and_in_summary_md(files, tmp_path: Path,
                                                                                  capsys) -> None:
    capsys.readouterr()
    assert run_eval(*files, "--rubric", "contains_answer", "--outdir", "runs/c") == 0
    out = capsys.readouterr().out
    assert "Rubric: contains_answer (hackable-contains-answer-v1), NOT the strict verifier" in out
    assert "Rubric: contains_answer" in (tmp_path / "runs/c/summary.md").read_text()


def test_an_unknown_rubric_is_a_usage_error_listing_the_choices(files, tmp_path: Path, capsys) -> None:
    with pytest.raises(SystemExit) as info:
        run_eval(*files, "--rubric", "lenient", "--outdir", "runs/x")
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'lenient'" in err and "contains_answer" in err and "strict" in err
    assert leftovers(tmp_path) == []


def test_the_library_refuses_an_unknown_rubric_before_any_work(files, tmp_path: Path) -> None:
    from course.errors import CourseError

    with pytest.raises(CourseError, match="unknown rubric 'nope'; choose one of: strict, contains_answer"):
        pipeline.evaluate(*files, outdir="runs/x", rubric="nope")
    assert leftovers(tmp_path) == []


def test_a_hackable_rubrics_ok_is_not_described_as_the_strict_check(files, tmp_path: Path) -> None:
    assert run_eval(*files, "--rubric", "contains_answer", "--outdir", "runs/c") == 0
    summary = json.loads((tmp_path / "runs/c/summary.json").read_text())
    ok = next(row for row in summary["breakdown"] if row["code"] == "ok")
    assert ok["meaning"] == "rewarded by the contains_answer rubric, NOT the strict check of reward spec v1"


def test_run_from_another_directory_the_bundled_files_are_named_by_a_path_that_exists_there(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "course.eval"], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    first = proc.stdout.splitlines()[0]
    named = first.split("items: ", 1)[1].split(" (split")[0]
    assert Path(named).is_absolute() and (tmp_path / named).is_file()  # not a data/... that points nowhere here
    manifest = json.loads((tmp_path / "runs/eval_001/manifest.json").read_text(encoding="utf-8"))
    assert manifest["dataset"]["path"] == "data/datasets/math_dev.jsonl"  # the record stays project-relative
