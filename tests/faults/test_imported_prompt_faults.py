"""Fault suite: an imported run keeps what its policy was shown, and the gate refuses two prompt setups.

The class: the same model run with and without lm-eval's ``--apply_chat_template`` (or through
another prompt form) imported with identical policy and sampling, and ``course.gate`` said
"Locked Room: ok" across two environments. Every importer now records the prompt as the lines'
``prompt_template`` (lm-eval and inspect: the sha256 of the prompts they logged; plain: a
``prompt`` field or ``--prompt-template``), a Locked Room field.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import course.eval as ev
import course.gate as gate
from course.import_completions import main as import_main
from course.lib.external.prompt_records import prompts_sha256
from course.lib.policy.templates import FEWSHOT, PLAIN
from course.lib.records.jsonl import dumps_line

ROOT = Path(__file__).resolve().parents[2]
BRIDGES = ROOT / "tests" / "data" / "bridges"
SAMPLES = BRIDGES / "lmeval_samples_course_math.jsonl"
RESULTS = BRIDGES / "lmeval_results_course_math.json"
DEV = ROOT / "data" / "datasets" / "math_dev.jsonl"
CHAT = "<|im_start|>user\n{}<|im_end|>\n<|im_start|>assistant\n"


def chat_rendered(dst: Path) -> Path:
    """The same lm-eval log, as if run with --apply_chat_template: each request's prompt in a chat template."""
    lines = []
    for raw in SAMPLES.read_text(encoding="utf-8").splitlines():
        obj = json.loads(raw)
        request = obj["arguments"]["gen_args_0"]
        request["arg_0"] = CHAT.format(request["arg_0"])
        lines.append(dumps_line(obj) + "\n")
    dst.write_text("".join(lines), encoding="utf-8")
    return dst


def imported_run(tmp_path: Path, name: str, *argv: str) -> Path:
    rollouts = tmp_path / f"{name}.jsonl"
    assert import_main([*argv, "--out", str(rollouts)]) == 0
    out = tmp_path / "runs" / name
    assert ev.main(["--dataset", str(DEV), "--completions", str(rollouts), "--allow-missing",
                    "--outdir", str(out)]) in (0, 1)
    return out


def lm_eval_run(tmp_path: Path, name: str, samples: Path) -> Path:
    return imported_run(tmp_path, name, "--format", "lm-eval", str(samples), "--results", str(RESULTS),
                        "--dataset", str(DEV))


def plain_run(tmp_path: Path, name: str, *argv: str) -> Path:
    return imported_run(tmp_path, name, "--format", "plain", str(BRIDGES / "plain_completions.jsonl"),
                        "--policy", "m", "--sampling", "{}", *argv)


def gate_output(capsys: pytest.CaptureFixture[str], base: Path, cand: Path) -> tuple[int, str]:
    capsys.readouterr()
    code = gate.main(["--baseline", str(base), "--candidate", str(cand), "--min-delta", "0"])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_the_gate_refuses_an_lm_eval_run_with_a_chat_template_against_one_without(tmp_path, capsys):
    raw = lm_eval_run(tmp_path, "raw", SAMPLES)
    chat = lm_eval_run(tmp_path, "chat", chat_rendered(tmp_path / "samples_chat.jsonl"))
    code, out = gate_output(capsys, raw, chat)
    assert code == 1
    assert "Locked Room violated: prompt_template differs" in out


def test_the_same_lm_eval_log_imported_twice_passes_the_locked_room(tmp_path, capsys):
    code, out = gate_output(capsys, lm_eval_run(tmp_path, "a", SAMPLES), lm_eval_run(tmp_path, "b", SAMPLES))
    assert code == 0 and "Locked Room violated" not in out


def test_an_lm_eval_import_records_the_sha256_of_the_prompts_it_logged(tmp_path):
    out = tmp_path / "r.jsonl"
    assert import_main(["--format", "lm-eval", str(SAMPLES), "--results", str(RESULTS), "--out", str(out)]) == 0
    logged = [json.loads(x) for x in SAMPLES.read_text(encoding="utf-8").splitlines()]
    expected = prompts_sha256((o["doc"]["id"], o["arguments"]["gen_args_0"]["arg_0"]) for o in logged)
    records = {json.loads(x)["prompt_template"]["sha256"] for x in out.read_text(encoding="utf-8").splitlines()}
    assert records == {expected}
    manifest = json.loads((lm_eval_run(tmp_path, "m", SAMPLES) / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["prompt_template"] == {"name": "rendered", "sha256": expected}


def test_the_gate_refuses_two_plain_imports_stated_with_different_templates(tmp_path, capsys):
    code, out = gate_output(capsys, plain_run(tmp_path, "p", "--prompt-template", "plain"),
                            plain_run(tmp_path, "f", "--prompt-template", "fewshot"))
    assert code == 1 and "prompt_template differs" in out
    assert FEWSHOT.fingerprint[:12] in out or FEWSHOT.fingerprint in out


def test_a_plain_import_stated_as_plain_compares_with_the_courses_own_rollouts(tmp_path, capsys):
    stated = plain_run(tmp_path, "p", "--prompt-template", "plain")
    assert json.loads((stated / "manifest.json").read_text())["prompt_template"] == PLAIN.record()
    unstated = plain_run(tmp_path, "u")  # no template: the Locked Room counts it as the dataset prompt as-is
    code, out = gate_output(capsys, unstated, stated)
    assert code == 0 and "Locked Room violated" not in out


def test_a_plain_line_without_the_prompt_that_line_1_has_is_refused_at_its_line(tmp_path, capsys):
    src = tmp_path / "p.jsonl"
    src.write_text(dumps_line({"id": "dev-0001", "completion": "Final: 323", "prompt": "Compute 17 * 19."}) + "\n"
                   + dumps_line({"id": "dev-0002", "completion": "Final: 63"}) + "\n", encoding="utf-8")
    code = import_main(["--format", "plain", str(src), "--policy", "m", "--sampling", "{}",
                        "--out", str(tmp_path / "o.jsonl")])
    err = capsys.readouterr().err
    assert code == 2 and f"{src}:2: no field 'prompt'" in err
    assert not (tmp_path / "o.jsonl").exists()


def test_plain_lines_with_different_prompts_import_with_different_records(tmp_path):
    records = []
    for k, prompt in enumerate(("Compute 17 * 19.", [{"role": "system", "content": "Be brief."},
                                                      {"role": "user", "content": "Compute 17 * 19."}])):
        src, out = tmp_path / f"p{k}.jsonl", tmp_path / f"o{k}.jsonl"
        src.write_text(dumps_line({"id": "dev-0001", "completion": "Final: 323", "prompt": prompt}) + "\n")
        assert import_main(["--format", "plain", str(src), "--policy", "m", "--sampling", "{}",
                            "--out", str(out)]) == 0
        records.append(json.loads(out.read_text())["prompt_template"])
    assert records[0]["name"] == records[1]["name"] == "rendered" and records[0]["sha256"] != records[1]["sha256"]


@pytest.mark.parametrize("fmt", ["lm-eval", "inspect"])
def test_a_log_format_refuses_a_stated_prompt_template(tmp_path, capsys, fmt):
    code = import_main(["--format", fmt, str(SAMPLES), "--prompt-template", "plain", "--policy", "m",
                        "--out", str(tmp_path / "o.jsonl")])
    err = capsys.readouterr().err
    assert code == 2 and "--prompt-template: the" in err and "records the prompts it sent" in err


def test_a_plain_import_refuses_an_unknown_template_name(tmp_path, capsys):
    code = import_main(["--format", "plain", str(BRIDGES / "plain_completions.jsonl"), "--policy", "m",
                        "--sampling", "{}", "--prompt-template", "chatml", "--out", str(tmp_path / "o.jsonl")])
    err = capsys.readouterr().err
    assert code == 2 and "unknown prompt template 'chatml'" in err
