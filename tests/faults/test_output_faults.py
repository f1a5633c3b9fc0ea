"""Fault suite, issue #12 classes 7, 10, 11 and issue #16 item 1: hostile hand-edited inputs to gate,
inspect_run, token_inspect and kata.

Every case asserts the exit code, that an error is exactly one line on stderr, and that nothing a
terminal would act on (controls, bidi overrides, other format characters, lone surrogates, line
separators) reaches stdout or stderr raw. The tools run in-process: pytest's capture encodes as
strict UTF-8 like a real terminal, so a lone surrogate that would crash ``print`` crashes here too;
one subprocess case per tool proves it on a real pipe.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import unicodedata
from pathlib import Path

import hypothesis_text as ht  # st.text() without hypothesis's slow first-run codec table
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kata_keys import load_key

import course.eval as ev
from course import gate, inspect_run, kata, token_inspect
from course.lib import bundled
from course.lib.evaluation import locked_room
from course.lib.extras import missing
from course.lib.records.jsonl import dumps_line
from course.lib.records.manifest import sha256_file
from course.lib.reward_spec import kata_labels, tokens

# token_inspect's default view needs the tokenizer extra; without it, its tiny-LM view (no extra).
TOKEN_VOCAB: list[str] = [] if not missing("tokenizer") else ["--vocab", "tiny"]

# Characters a terminal acts on or cannot encode. A newline is the one control a report may hold.
UNSAFE_CATEGORIES = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}

HOSTILE = {
    "rlo": "dev\u202eved",  # RIGHT-TO-LEFT OVERRIDE: the rest of the line prints reversed
    "nul": "dev\x00x",
    "esc": "dev\x1b[2J\x1b]0;pwned\x07",  # clear screen, set the window title
    "lone_surrogate": "dev\udc00",  # cannot be encoded as UTF-8 at all
    "del_c1": "dev\x7f\x9b31m",  # DEL and the 8-bit CSI
    "line_separator": "dev\u2028x",
    "bidi_isolate": "\u2066dev\u2069",
}


def unsafe_characters(text: str) -> list[str]:
    return [f"U+{ord(ch):04X}" for ch in text if ch != "\n" and unicodedata.category(ch) in UNSAFE_CATEGORIES]


def assert_outcome(code: int, captured, expected: set[int]) -> None:
    assert code in expected, (code, captured.err)
    assert unsafe_characters(captured.out) == [], "raw control/bidi character on stdout"
    assert unsafe_characters(captured.err) == [], "raw control/bidi character on stderr"
    if code == 2:
        assert len(captured.err.strip().splitlines()) == 1, captured.err


# A lone surrogate in a JSON file: today's reader accepts it in a manifest; issue #12 class 6 may make
# the reader refuse it (path, exit 2). Either way the tool must not crash and must print nothing raw.
def expected_codes(name: str, code: int) -> set[int]:
    return {code, 2} if name == "lone_surrogate" else {code}


# ---------------------------------------------------------------------------
# Two real course.eval runs on one toy dataset, copied and hand-edited per case.
# ---------------------------------------------------------------------------
N = 20
ANSWERS = [(i * 37) % 211 - 50 for i in range(N)]
SAMPLING = {"max_tokens": 32, "seed": 1, "temperature": 0.8, "top_p": 1.0}


def _write_rollouts(path: Path, passing: set[int], policy: str) -> Path:
    path.write_text("".join(
        dumps_line({"id": f"d-{i:03d}", "completion": f"Final: {a if i in passing else a + 1}",
                    "policy": policy, "sampling": SAMPLING}) + "\n"
        for i, a in enumerate(ANSWERS)
    ))
    return path


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("faults_runs")
    dataset = root / "toy.jsonl"
    dataset.write_text("".join(
        dumps_line({"id": f"d-{i:03d}", "prompt": f"Item {i}", "expected_answer": a}) + "\n"
        for i, a in enumerate(ANSWERS)
    ))
    out = {}
    for name, passing in (("base", set(range(5))), ("cand", set(range(10)))):
        out[name] = root / name
        rollouts = _write_rollouts(root / f"{name}.jsonl", passing, f"policy_{name}")
        assert ev.main(["--dataset", str(dataset), "--completions", str(rollouts), "--outdir", str(out[name])]) == 0
    return out


def _copy(run: Path, tmp_path: Path, name: str) -> Path:
    dest = tmp_path / name
    shutil.copytree(run, dest)
    return dest


def _edit(run: Path, filename: str, change) -> None:
    path = run / filename
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")  # ensure_ascii: a surrogate survives as \udc00


def _set(key: str, value):
    def change(data):
        target = data
        parts = key.split(".")
        for part in parts[:-1]:
            target = target.setdefault(part, {})
        target[parts[-1]] = value
    return change


def _gate(base: Path, cand: Path, *extra: str) -> int:
    return gate.main(["--baseline", str(base), "--candidate", str(cand), "--min-delta", "0", *extra])


# ---------------------------------------------------------------------------
# Class 7: the Locked Room compares by type as well as value.
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("base_seed, cand_seed", [(1, True), (0, False), (True, 1), ("1", 1), (1, 1.5)])
def test_gate_rejects_a_seed_of_another_type_as_a_locked_room_difference(runs, tmp_path, capsys, base_seed, cand_seed):
    base, cand = _copy(runs["base"], tmp_path, "b"), _copy(runs["cand"], tmp_path, "c")
    _edit(base, "manifest.json", _set("sampling.seed", base_seed))
    _edit(cand, "manifest.json", _set("sampling.seed", cand_seed))
    code = _gate(base, cand, "--json")
    captured = capsys.readouterr()
    assert_outcome(code, captured, {1})
    result = json.loads(captured.out)
    assert [d["field"] for d in result["locked_room"]["differences"]] == ["sampling"]


def test_gate_still_equates_a_temperature_of_1_and_1_point_0(runs, tmp_path, capsys):
    base, cand = _copy(runs["base"], tmp_path, "b"), _copy(runs["cand"], tmp_path, "c")
    _edit(base, "manifest.json", _set("sampling.temperature", 1))
    _edit(cand, "manifest.json", _set("sampling.temperature", 1.0))
    assert_outcome(_gate(base, cand), capsys.readouterr(), {0})


@pytest.mark.parametrize("value", [True, False, 0, -3, "1", 1.0, None, [1]], ids=repr)
def test_gate_refuses_a_malformed_selection_n_naming_the_field(runs, tmp_path, capsys, value):
    cand = _copy(runs["cand"], tmp_path, "c")
    _edit(cand, "manifest.json", _set("selection.n", value))
    code = _gate(runs["base"], cand)
    captured = capsys.readouterr()
    assert_outcome(code, captured, {2})
    assert "'selection.n'" in captured.err and "manifest.json" in captured.err


def test_gate_compares_an_eval_run_with_an_explicit_selection_n_of_1(runs, tmp_path, capsys):
    cand = _copy(runs["cand"], tmp_path, "c")
    _edit(cand, "manifest.json", _set("selection.n", 1))
    assert_outcome(_gate(runs["base"], cand), capsys.readouterr(), {0})


@pytest.mark.parametrize("field, value, kind", [
    ("passed", "5", "a string"), ("n", "20", "a string"), ("n", True, "a boolean"), ("passed", 5.0, "a number"),
    ("passed", None, "null"),
])
def test_gate_names_a_summary_count_that_is_not_an_integer(runs, tmp_path, capsys, field, value, kind):
    base = _copy(runs["base"], tmp_path, "b")
    _edit(base, "summary.json", _set(field, value))
    code = _gate(base, runs["cand"])
    captured = capsys.readouterr()
    assert_outcome(code, captured, {2})
    assert f"'{field}' is {kind}" in captured.err and "not an integer count" in captured.err
    assert "says" not in captured.err  # not the old "says 5/20 passed but results.jsonl has 5/20"


@settings(max_examples=200, deadline=None)
@given(st.recursive(st.none() | st.integers(-3, 3) | st.floats(-3, 3) | ht.text(max_size=3),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(ht.text(max_size=2), inner, max_size=3),
                    max_leaves=8),
       st.recursive(st.none() | st.integers(-3, 3) | st.floats(-3, 3) | ht.text(max_size=3),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(ht.text(max_size=2), inner, max_size=3),
                    max_leaves=8))
def test_same_value_agrees_with_python_equality_on_json_values_without_bools(a, b):
    assert locked_room.same_value(a, b) == (a == b)
    assert locked_room.same_value(a, a)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.booleans(), min_size=1, max_size=5), st.sampled_from([int, float]))
def test_same_value_never_equates_a_bool_with_a_number(bools, number):
    numbers = [number(b) for b in bools]  # equal in Python: True == 1 == 1.0
    assert bools == numbers
    assert not locked_room.same_value(bools, numbers) and not locked_room.same_value({"seed": numbers}, {"seed": bools})
    assert locked_room.same_value(bools, list(bools))


def test_same_value_survives_deep_nesting():
    deep_a, deep_b = [], []
    for _ in range(100_000):
        deep_a, deep_b = [deep_a], [deep_b]
    assert locked_room.same_value(deep_a, deep_b)


# ---------------------------------------------------------------------------
# Class 10: terminal-safe output of everything read from a hand-edited file.
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["human", "json"])
@pytest.mark.parametrize("name", list(HOSTILE))
@pytest.mark.parametrize("field, both, code", [
    ("split", True, 0),  # same on both sides: printed in the run lines and the "Locked Room: ok" line
    ("split", False, 1),  # differs: printed as a Locked Room difference
    ("policy", False, 0),
    ("sampling.seed", False, 1),
])
def test_gate_prints_hostile_manifest_fields_escaped(runs, tmp_path, capsys, field, both, code, name, mode):
    base, cand = _copy(runs["base"], tmp_path, "b"), _copy(runs["cand"], tmp_path, "c")
    _edit(cand, "manifest.json", _set(field, HOSTILE[name]))
    if both:
        _edit(base, "manifest.json", _set(field, HOSTILE[name]))
    result = _gate(base, cand, *(["--json"] if mode == "json" else []))
    captured = capsys.readouterr()
    assert_outcome(result, captured, expected_codes(name, code))
    if result != 2 and mode == "json":  # the escapes decode back to exactly what the manifest holds
        decoded = json.loads(captured.out)
        if field == "sampling.seed":
            shown = decoded["locked_room"]["differences"][0]["candidate"]  # the value as one JSON line
            assert json.loads(shown)["seed"] == HOSTILE[name]


@pytest.mark.parametrize("name", list(HOSTILE))
def test_gate_error_naming_a_hostile_tool_is_escaped(runs, tmp_path, capsys, name):
    cand = _copy(runs["cand"], tmp_path, "c")
    _edit(cand, "manifest.json", _set("tool", HOSTILE[name]))
    assert_outcome(_gate(runs["base"], cand), capsys.readouterr(), {2})


@pytest.mark.parametrize("name", list(HOSTILE))
@pytest.mark.parametrize("field", ["split", "policy", "scorer_version", "tool"])
def test_inspect_run_prints_hostile_manifest_fields_escaped(runs, tmp_path, capsys, field, name):
    run = _copy(runs["base"], tmp_path, "r")
    _edit(run, "manifest.json", _set(field, HOSTILE[name]))
    code = inspect_run.main(["--run", str(run), "--show", "1"])
    assert_outcome(code, capsys.readouterr(), expected_codes(name, 0))


@pytest.mark.parametrize("name", list(HOSTILE))
def test_inspect_run_prints_hostile_result_ids_codes_and_reasons_escaped(runs, tmp_path, capsys, name):
    run = _copy(runs["base"], tmp_path, "r")
    lines = (run / "results.jsonl").read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    first["id"] = HOSTILE[name]
    first["details"]["error_code"] = HOSTILE[name]
    first["details"]["reason"] = HOSTILE[name]
    (run / "results.jsonl").write_text("\n".join([json.dumps(first)] + lines[1:]) + "\n", encoding="utf-8")
    _edit(run, "manifest.json", _set("results_sha256", sha256_file(run / "results.jsonl")))
    code = inspect_run.main(["--run", str(run), "--show", "3", "--top-k", "9"])
    assert_outcome(code, capsys.readouterr(), expected_codes(name, 0))


@pytest.mark.parametrize("mode", ["human", "json"])
@pytest.mark.parametrize("text", [r"Final: 3\udc0023", r"\ud800", r"Final: \u202e323", r"\x1b[2J\x00\x7f",
                                  r"Final:\u2028323", r"\U000e0001Final: 323"])
def test_token_inspect_prints_hostile_escapes_escaped(capsys, text, mode):
    code = token_inspect.main([*TOKEN_VOCAB, "--escapes", text, *(["--json"] if mode == "json" else [])])
    captured = capsys.readouterr()
    assert_outcome(code, captured, {0})
    if mode == "json":
        assert json.loads(captured.out)["inputs"][0]["text"] == tokens.unescape(text)


@pytest.mark.parametrize("name", list(HOSTILE))
def test_kata_show_prints_a_hostile_pack_escaped(tmp_path, capsys, name):
    record = json.loads(bundled.KATA_EXAMPLES.read_text(encoding="utf-8").splitlines()[0])
    record["id"] = record["prompt"] = HOSTILE[name]
    record["details"][HOSTILE[name]] = HOSTILE[name]
    path = tmp_path / "pack.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    assert_outcome(kata.main(["--examples", str(path)]), capsys.readouterr(), expected_codes(name, 0))


@pytest.mark.parametrize("name", list(HOSTILE))
@pytest.mark.parametrize("where", ["id", "label"])
def test_kata_check_refuses_a_hostile_label_file_in_one_escaped_line(tmp_path, capsys, name, where):
    ids = [ex.id for ex in kata_labels.load_examples()]
    items = {i: "" for i in ids}
    if where == "id":
        items[HOSTILE[name]] = "model_failure"
    else:
        items[ids[0]] = HOSTILE[name]
    path = tmp_path / "labels.json"
    path.write_text(json.dumps({"items": items}), encoding="utf-8")
    assert_outcome(kata.main(["--check", str(path)]), capsys.readouterr(), {2})


@pytest.mark.parametrize("tool, argv", [
    ("course.token_inspect", [*TOKEN_VOCAB, "--escapes", r"a\udc00\u202e", "--json"]),
    ("course.token_inspect", [*TOKEN_VOCAB, "--escapes", r"a\udc00\u202e"]),
])
def test_a_lone_surrogate_never_crashes_print_on_a_real_pipe(tool, argv):
    out = subprocess.run([sys.executable, "-m", tool, *argv], capture_output=True, timeout=120)
    assert out.returncode == 0, out.stderr.decode("utf-8", "replace")
    text = out.stdout.decode("utf-8")  # strict: the bytes are valid UTF-8
    assert unsafe_characters(text) == []


def test_gate_json_with_a_surrogate_split_prints_on_a_real_pipe(runs, tmp_path):
    base, cand = _copy(runs["base"], tmp_path, "b"), _copy(runs["cand"], tmp_path, "c")
    for run in (base, cand):
        _edit(run, "manifest.json", _set("split", HOSTILE["lone_surrogate"]))
    for extra in ([], ["--json"]):
        out = subprocess.run([sys.executable, "-m", "course.gate", "--baseline", str(base), "--candidate", str(cand),
                              "--min-delta", "0", *extra], capture_output=True, timeout=120)
        assert out.returncode in (0, 2), out.stderr.decode("utf-8", "replace")
        assert unsafe_characters(out.stdout.decode("utf-8")) == []
        assert unsafe_characters(out.stderr.decode("utf-8")) == []


# ---------------------------------------------------------------------------
# Class 11: kata on empty details and a reward too large for a float.
# ---------------------------------------------------------------------------
# --check never gives the key away: nothing of the key, nor a label per item.
# ---------------------------------------------------------------------------
KEY = load_key("basic")
IDS = [ex.id for ex in kata_labels.load_examples()]


def _key_texts() -> list[str]:
    """Every why and fix of the key, and a distinctive slice of each (a paraphrase would still leak)."""
    texts = []
    for entry in KEY.values():
        for text in (entry.justification, entry.fix):
            texts += [text, text[:40], text[-40:]]
    return texts


def _partly_right() -> dict[str, str]:
    others = list(kata_labels.LABELS)
    labels = {}
    for n, i in enumerate(IDS):
        if n % 3 == 0:
            labels[i] = KEY[i].label  # right
        elif n % 3 == 1:
            labels[i] = next(label for label in others if label != KEY[i].label)  # wrong
        else:
            labels[i] = ""  # blank
    return labels


@pytest.mark.parametrize("labels", ["blank_template", "partly_right", "all_wrong"])
def test_kata_check_output_never_contains_a_key_field(tmp_path, capsys, labels):
    if labels == "blank_template":
        data = kata_labels.template(kata_labels.load_examples())
    else:
        given = _partly_right() if labels == "partly_right" else {
            i: next(label for label in kata_labels.LABELS if label != KEY[i].label) for i in IDS}
        data = {"items": {i: {"label": label, "justification": "", "fix": ""} for i, label in given.items()}}
    path = tmp_path / "labels.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    code = kata.main(["--check", str(path)])
    captured = capsys.readouterr()
    assert_outcome(code, captured, {1})
    both = captured.out + captured.err
    for text in _key_texts():
        assert text not in both
    # No line names a label or a verdict: right and wrong are never told apart.
    assert not any(label in both for label in kata_labels.LABELS)
    assert "right" not in captured.out and "WRONG" not in captured.out and "Score" not in captured.out
