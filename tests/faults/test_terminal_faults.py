"""Fault suite, issue #23 item 6: terminal injection through paths, policy names and hints.

The class: a path the user typed (``--outdir``, ``--out``, a dataset), a policy name read from a file
(rollouts, an lm-eval results file) or a completion reaches the terminal inside a sentence (``Wrote``,
``policy:``, ``error:``) or a suggested command (``View it:``, ``Inspect failures:``, ``next:``).
Raw, an ESC sequence recolours or clears the terminal, U+202E reverses the rest of the line, a
newline forges a line of its own, and a space or a quote breaks the command when it is pasted.

The roots: every value is printed through ``course.lib.visible.visible``; every suggested command is
built by ``course.lib.visible.command`` (shlex-quoted; readable characters kept, so it pastes);
``course.cli`` passes every error and progress line through ``terminal_line``. These tests give every
tool that prints such lines a hostile name (ESC[31m, U+202E, a newline, spaces, quotes, $, ;) and an
awkward but printable one (spaces, quotes, $, ;, ü), and check that nothing unsafe is printed raw,
that no line is forged, and that each printed command splits (``shlex.split``) into exactly the
arguments meant: the real paths for the printable name.
"""

from __future__ import annotations

import importlib.util
import json
import shlex
import shutil
import unicodedata
from pathlib import Path
from typing import Iterable

import pytest

from course.lib.records.jsonl import dumps_line
from course.lib.records.manifest import PROJECT_ROOT
from course.lib.visible import markdown_value, terminal_line, visible

DEV = PROJECT_ROOT / "data/datasets/math_dev.jsonl"
PACK = PROJECT_ROOT / "data/rollouts/selection_pack_dev.jsonl"
UNSAFE_CATEGORIES = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}
FORGED = "FORGED LINE"  # what follows the newline in the hostile name: it must never start a line
NAMES = {
    "hostile": "my run \x1b[31mred\u202e 'q' \"d\" $HOME;\n" + FORGED + " \u00fc",
    "printable": "my run 'q' \"d\" $HOME; `x` \u00fc",
}


def unsafe_characters(text: str) -> list[str]:
    return [f"U+{ord(ch):04X}" for ch in text if ch != "\n" and unicodedata.category(ch) in UNSAFE_CATEGORIES]


def printed_commands(text: str) -> list[list[str]]:
    """Every ``python -m ...`` a line of ``text`` suggests, split as a shell would (to the end of the line)."""
    return [shlex.split(line[line.index("python -m "):]) for line in text.splitlines() if "python -m " in line]


def check_terminal(text: str, name: str, paths: Iterable[Path]) -> list[list[str]]:
    """Nothing raw, no forged line, and each command names the ``paths`` exactly (escaped if they must be)."""
    assert unsafe_characters(text) == [], f"raw terminal control in: {text!r}"
    assert not any(line.startswith(FORGED) for line in text.splitlines()), f"a forged line in: {text!r}"
    meant = {terminal_line(str(p)) for p in paths}
    commands = printed_commands(text)
    for argv in commands:
        for arg in argv:
            if "my run" in arg:
                assert arg in meant, (arg, meant)
                if name == "printable":
                    assert Path(arg).exists(), arg  # pasting the command reaches the real file
    return commands


@pytest.fixture(params=sorted(NAMES))
def lab(request, tmp_path: Path) -> tuple[str, Path]:
    """A directory named hostile or awkward, holding a small dataset, its rollouts and a selection pack."""
    name = request.param
    root = tmp_path / NAMES[name]
    root.mkdir()
    rows = [json.loads(line) for line in DEV.read_text(encoding="utf-8").splitlines()[:6]]
    (root / "data.jsonl").write_text("".join(dumps_line(r) + "\n" for r in rows), encoding="utf-8")
    policy = "policy " + NAMES["hostile"]
    (root / "rollouts.jsonl").write_text("".join(
        dumps_line({"id": r["id"], "completion": f"Final: {r['expected_answer'] + i % 2}", "policy": policy,
                    "sampling": {"seed": 0, "note": NAMES["hostile"]}}) + "\n" for i, r in enumerate(rows)),
        encoding="utf-8")
    pack = [json.loads(line) for line in PACK.read_text(encoding="utf-8").splitlines()[:6]]
    (root / "pack.jsonl").write_text("".join(dumps_line({**p, "policy": policy}) + "\n" for p in pack),
                                     encoding="utf-8")
    return name, root


def run_tool(capsys: pytest.CaptureFixture[str], module: str, *argv: str) -> tuple[int, str]:
    import importlib

    code = importlib.import_module(module).main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out + captured.err


# ---------------------------------------------------------------------------
# Tools that write a run directory: Wrote ..., Inspect failures: ..., View it: ...
# ---------------------------------------------------------------------------
def test_eval_prints_the_paths_and_the_policy_escaped_and_commands_that_paste(lab, capsys):
    name, root = lab
    run = root / "run"
    code, text = run_tool(capsys, "course.eval", "--dataset", str(root / "data.jsonl"),
                          "--completions", str(root / "rollouts.jsonl"), "--outdir", str(run))
    assert code == 0, text
    commands = check_terminal(text, name, [run])
    assert [c[:3] for c in commands] == [["python", "-m", "course.inspect_run"], ["python", "-m", "course.report"]]


def test_selection_demo_prints_the_paths_and_the_policy_escaped_and_commands_that_paste(lab, capsys):
    name, root = lab
    run = root / "sel"
    code, text = run_tool(capsys, "course.selection_demo", "--dataset", str(root / "data.jsonl"),
                          "--samples", str(root / "pack.jsonl"), "--n", "2", "--outdir", str(run))
    assert code == 0, text
    commands = check_terminal(text, name, [run])
    assert ["python", "-m", "course.report", terminal_line(str(run))] in commands


# summary.md is a file, but one a user `cat`s in a terminal and a Markdown viewer renders: the same
# values (paths, policy, sampling, prompt template, ids) are escaped there as on the terminal, and each
# sits in a code span a backtick cannot close early, so no line is forged and no Markdown is injected.
HOSTILE_ID_TAIL = " \x1b[2J\u202e`|"  # a Markdown code span, a table cell and a terminal, all at once


def _hostile_template_and_ids(root: Path) -> dict[str, str]:
    template = {"name": "tpl " + NAMES["hostile"] + " `", "sha256": "0" * 64}
    for name in ("data.jsonl", "rollouts.jsonl", "pack.jsonl"):
        rows = [json.loads(line) for line in (root / name).read_text(encoding="utf-8").splitlines()]
        rows = [{**r, "id": r["id"] + HOSTILE_ID_TAIL,
                 **({} if name == "data.jsonl" else {"prompt_template": template})}
                for r in rows]
        (root / name).write_text("".join(dumps_line(r) + "\n" for r in rows), encoding="utf-8")
    return template


@pytest.mark.parametrize("module", ["course.eval", "course.selection_demo"])
def test_summary_md_shows_paths_policy_template_and_ids_escaped(lab, capsys, module):
    name, root = lab
    template = _hostile_template_and_ids(root)
    run = root / "run"
    inputs = (["--completions", str(root / "rollouts.jsonl")] if module == "course.eval" else
              ["--samples", str(root / "pack.jsonl"), "--n", "2"])
    code, text = run_tool(capsys, module, "--dataset", str(root / "data.jsonl"), *inputs, "--outdir", str(run))
    assert code == 0, text
    md = (run / "summary.md").read_text(encoding="utf-8")
    assert unsafe_characters(md) == [], f"raw terminal control in summary.md: {md!r}"
    assert not any(line.startswith(FORGED) for line in md.splitlines()), "a forged line in summary.md"
    for value in (str(root / "data.jsonl"), "policy " + NAMES["hostile"], template["name"],
                  "dev-0002" + HOSTILE_ID_TAIL):
        assert markdown_value(value) in md, value  # escaped, in a code span no backtick inside can close


@pytest.mark.parametrize("module", ["course.bandit_train", "course.toy_mdp", "course.kl_tradeoff_demo"])
def test_the_demos_print_their_run_directory_escaped_and_a_report_command_that_pastes(lab, capsys, module):
    name, root = lab
    run = root / "demo"
    code, text = run_tool(capsys, module, "--outdir", str(run))
    assert code == 0, text
    assert ["python", "-m", "course.report", terminal_line(str(run))] in check_terminal(text, name, [run])


def test_report_and_gate_html_print_the_page_they_wrote_escaped(lab, capsys):
    name, root = lab
    run = root / "run"
    assert run_tool(capsys, "course.eval", "--dataset", str(root / "data.jsonl"),
                    "--completions", str(root / "rollouts.jsonl"), "--outdir", str(run))[0] == 0
    code, text = run_tool(capsys, "course.report", str(run))
    assert code == 0, text
    check_terminal(text, name, [run / "report.html"])
    assert f"Wrote {visible(str(run / 'report.html'))} (" in text
    code, text = run_tool(capsys, "course.gate", "--baseline", str(run), "--candidate", str(run), "--min-delta", "0",
                          "--html", str(root / "gate page.html"))
    assert code in (0, 1), text
    check_terminal(text, name, [root / "gate page.html"])


def test_an_error_naming_a_hostile_path_is_one_escaped_line(lab, capsys):
    name, root = lab
    code, text = run_tool(capsys, "course.eval", "--dataset", str(root / "missing.jsonl"),
                          "--completions", str(root / "rollouts.jsonl"), "--outdir", str(root / "run2"))
    assert code == 2
    check_terminal(text, name, [])
    assert len(text.strip().splitlines()) == 1, text


# ---------------------------------------------------------------------------
# Tools that write a file: imported ... -> OUT, policy: ..., next: ...
# ---------------------------------------------------------------------------
def test_datasets_import_prints_source_and_output_escaped(lab, capsys):
    name, root = lab
    src = root / "gsm8k.jsonl"
    src.write_text(json.dumps({"question": "q?", "answer": "#### 4"}) + "\n", encoding="utf-8")
    code, text = run_tool(capsys, "course.datasets", "import", "--format", "gsm8k", str(src),
                          "--out", str(root / "ds.jsonl"))
    assert code == 0, text
    check_terminal(text, name, [root / "ds.jsonl"])


def test_import_completions_prints_a_policy_read_from_an_lm_eval_log_escaped(lab, capsys):
    name, root = lab
    samples = root / "samples.jsonl"
    samples.write_text("".join(json.dumps({
        "doc_id": i, "doc": {"id": r["id"]}, "resps": [["Final: 1"]], "filter": "none",
        "target": str(r["expected_answer"]),
        "arguments": {"gen_args_0": {"arg_0": "ctx", "arg_1": {"temperature": 0.0, "note": NAMES["hostile"]}}},
    }) + "\n" for i, r in enumerate(json.loads(line) for line in (root / "data.jsonl").read_text().splitlines())),
        encoding="utf-8")
    results = root / "results.json"
    results.write_text(json.dumps({"config": {"model": "hf", "model_args": "pretrained=" + NAMES["hostile"]}}),
                       encoding="utf-8")
    code, text = run_tool(capsys, "course.import_completions", "--format", "lm-eval", str(samples),
                          "--results", str(results), "--dataset", str(root / "data.jsonl"),
                          "--out", str(root / "imported.jsonl"))
    assert code == 0, text
    check_terminal(text, name, [root / "imported.jsonl"])
    assert "policy:" in text


@pytest.mark.skipif(importlib.util.find_spec("openai") is None, reason="the sampler needs the openai extra")
@pytest.mark.parametrize("n", [1, 2])
def test_rollout_sample_prints_paths_settings_and_the_next_command_so_that_it_pastes(lab, capsys, monkeypatch, n):
    import fake_openai_server as fake

    name, root = lab
    monkeypatch.setenv("GROQ_API_KEY", "gsk_TEST-KEY-terminal-faults")
    out = root / "sampled.jsonl"
    with fake.FakeOpenAIServer() as server:
        code, text = run_tool(capsys, "course.rollout_sample", "--dataset", str(root / "data.jsonl"),
                              "--model", "fake-model",
                              "--out", str(out), "--base-url", server.base_url, "--backoff", "0", "--n", str(n),
                              "--system-prompt", NAMES["hostile"], "--policy", "p " + NAMES["hostile"])
    assert code == 0, text
    commands = check_terminal(text, name, [root / "data.jsonl", out])
    tool = "course.eval" if n == 1 else "course.selection_demo"
    assert commands[-1][:5] == ["python", "-m", tool, "--dataset", terminal_line(str(root / "data.jsonl"))]


# ---------------------------------------------------------------------------
# Tools that print a verdict as JSON: the completion is data
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("module, extra", [("course.score", ["--expected", "3"]),
                                           ("course.rubrics", ["--rubric", "lenient_int", "--expected", "3"])])
@pytest.mark.parametrize("completion", ["Fina\u202el: 3", "Final:\x1b[2J 3", "Final: 3\x7f\x85"])
def test_a_verdict_quoting_a_hostile_completion_prints_escaped_json(capsys, module, extra, completion):
    code, text = run_tool(capsys, module, *extra, completion)
    assert code in (0, 1), text
    assert unsafe_characters(text) == []
    assert "found" not in text or "\\u" in text  # the verdict quotes the completion, escaped


def test_kata_rescore_prints_the_pack_path_escaped(tmp_path, capsys):
    from course.lib.reward_spec.kata_labels import PACKS

    folder = tmp_path / NAMES["hostile"]
    folder.mkdir()
    pack = folder / "pack.jsonl"
    shutil.copy(PACKS["basic"], pack)
    code, text = run_tool(capsys, "course.kata", "--examples", str(pack), "--rescore")
    assert code == 0, text
    check_terminal(text, "hostile", [])


def test_bandit_actions_given_on_the_command_line_are_told_escaped(tmp_path, capsys):
    actions = ["Final: 323", "Final: 323\x1b[2J\u202e", "Final:\u00a0323\u2028"]
    argv = [arg for a in actions for arg in ("--action", a)]
    code, text = run_tool(capsys, "course.bandit_train", *argv, "--steps", "3", "--slow",
                          "--outdir", str(tmp_path / "b"))
    assert code == 0, text
    assert unsafe_characters(text) == []
    assert '"Final: 323⟨U+001B⟩[2J⟨U+202E⟩"' in text
