"""Fault suite, issue #23 item 4 (and item 3's csv): course.report trusts no file of a run.

The class: the report reads a run's manifest, summary, logs and table and draws them; a hand edit
(or a damaged copy) of any of those files must give a page, or ONE line ``path: what is wrong``
and exit 2, never a KeyError, TypeError or ValueError traceback. The root: every file the report
reads goes through ``course.lib.records.formats`` (its declared shapes, ``course.lib.records.shapes``), and the
hashes the manifest records are checked (a mismatch is a warning on the page, as for results.jsonl).

The property test mutates real runs of every kind (a value replaced by any JSON value, a key or a
line deleted, a csv cell changed, bytes that are not UTF-8) and asks exactly that.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import hypothesis_text as ht
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from report_runs import build_runs

from course import report

SCORING = ("eval", "sel_n4")
# Each kind and the files course.report reads in it (relative to the run directory).
FILES = {
    "eval": ("manifest.json", "summary.json", "results.jsonl"),
    "sel_n4": ("manifest.json", "summary.json", "results.jsonl"),
    "bandit": ("manifest.json", "bandit_log.jsonl"),
    "toy_mdp": ("manifest.json", "toy_mdp_log.jsonl"),
    "kl": ("manifest.json", "kl_tradeoff.csv"),
    "tinylm_rl": ("manifest.json", "summary.json", "rl_log.jsonl", "eval_pi0_holdout/summary.json",
                  "eval_final_holdout/manifest.json", "eval_final_holdout/results.jsonl"),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return build_runs(tmp_path_factory.mktemp("report_fault_runs"))


def _copy(run: Path, where: Path) -> Path:
    target = where / run.name
    shutil.copytree(run, target)
    return target


def render(capsys: pytest.CaptureFixture[str], *paths: Path, out: Path) -> tuple[int, str]:
    code = report.main([*map(str, paths), "--out", str(out), "--force"])
    captured = capsys.readouterr()
    return code, captured.err


def assert_page_or_one_line(code: int, err: str, out: Path) -> None:
    assert code in (0, 2), err
    assert "Traceback" not in err, err
    if code == 2:
        assert len(err.strip().splitlines()) == 1, err
    else:
        assert out.is_file()


def assert_refused(code: int, err: str, *fragments: str) -> str:
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def _edit_json(path: Path, change) -> None:  # type: ignore[no-untyped-def]
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")


def _edit_lines(path: Path, lineno: int, change) -> None:  # type: ignore[no-untyped-def]
    lines = path.read_text(encoding="utf-8").splitlines()
    obj = json.loads(lines[lineno - 1])
    change(obj)
    lines[lineno - 1] = json.dumps(obj)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


# ---------------------------------------------------------------------------
# The cases the attack found
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("breakdown", [
    [{"code": "ok"}],  # no count: KeyError
    [{"code": "ok", "count": "30"}],  # a string count: TypeError
    [{"code": "ok", "count": 0}],  # every count 0: ZeroDivisionError
    {"ok": 30},  # not an array
    ["ok"],  # an array of strings
])
def test_a_malformed_breakdown_in_summary_json_is_one_line_naming_it(runs, tmp_path, capsys, breakdown):
    run = _copy(runs["eval"], tmp_path)
    _edit_json(run / "summary.json", lambda s: s.__setitem__("breakdown", breakdown))
    code, err = render(capsys, run, out=tmp_path / "r.html")
    assert_refused(code, err, f"{run}/summary.json", "breakdown")


@pytest.mark.parametrize("min_delta", ["abc", "0.1", None, [0.1], 5, True])
def test_a_tinylm_summary_with_a_min_delta_that_is_not_a_rate_difference_is_one_line(runs, tmp_path, capsys, min_delta):
    run = _copy(runs["tinylm_rl"], tmp_path)
    _edit_json(run / "summary.json", lambda s: s["holdout"]["gate"].__setitem__("min_delta", min_delta))
    code, err = render(capsys, run, out=tmp_path / "r.html")
    assert_refused(code, err, f"{run}/summary.json", "min_delta")


@pytest.mark.parametrize("field", ["step", "reward", "kl_k3_per_token", "strict_pass_train", "entropy_per_token"])
def test_an_rl_log_line_missing_a_field_is_refused_with_file_and_line(runs, tmp_path, capsys, field):
    run = _copy(runs["tinylm_rl"], tmp_path)
    _edit_lines(run / "rl_log.jsonl", 4, lambda r: r.pop(field))
    code, err = render(capsys, run, out=tmp_path / "r.html")
    assert_refused(code, err, f"{run}/rl_log.jsonl:4", field)


def test_an_rl_log_eval_entry_that_is_not_an_object_of_numbers_is_refused_with_file_and_line(runs, tmp_path, capsys):
    run = _copy(runs["tinylm_rl"], tmp_path)
    _edit_lines(run / "rl_log.jsonl", 1, lambda r: r["eval"].__setitem__("slice_strict_pass", "high"))
    code, err = render(capsys, run, out=tmp_path / "r.html")
    assert_refused(code, err, f"{run}/rl_log.jsonl:1", "slice_strict_pass")


def test_a_bandit_log_with_fewer_probabilities_than_actions_is_refused(runs, tmp_path, capsys):
    run = _copy(runs["bandit"], tmp_path)
    _edit_lines(run / "bandit_log.jsonl", 3, lambda r: r.__setitem__("probs", r["probs"][:2]))
    code, err = render(capsys, run, out=tmp_path / "r.html")
    assert_refused(code, err, f"{run}/bandit_log.jsonl:3", "probs")


@pytest.mark.parametrize("damage", ["not_utf8", "short_row", "long_row", "text_cell", "no_header"])
def test_a_damaged_kl_table_is_refused_with_file_and_line(runs, tmp_path, capsys, damage):
    run = _copy(runs["kl"], tmp_path)
    table = run / "kl_tradeoff.csv"
    lines = table.read_bytes().split(b"\n")
    if damage == "not_utf8":
        lines[2] = lines[2] + b"\xff\xfe"
    elif damage == "short_row":
        lines[2] = lines[2].rsplit(b",", 1)[0]
    elif damage == "long_row":
        lines[2] = lines[2] + b",7"
    elif damage == "text_cell":
        lines[2] = b"beta?" + lines[2][lines[2].index(b","):]
    else:
        lines = lines[1:]
    table.write_bytes(b"\n".join(lines))
    code, err = render(capsys, run, out=tmp_path / "r.html")
    line = 1 if damage == "no_header" else 3
    assert_refused(code, err, f"{run}/kl_tradeoff.csv:{line}")


def test_a_summary_edited_after_the_run_is_flagged_against_its_recorded_sha256(runs, tmp_path, capsys):
    run = _copy(runs["eval"], tmp_path)
    _edit_json(run / "summary.json", lambda s: s.__setitem__("mean_reward", 0.99))
    code, err = render(capsys, run, out=tmp_path / "r.html")
    assert code == 0, err
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "summary.json does not match the sha256 recorded in manifest.json" in page


def test_an_unedited_run_has_no_hash_warning(runs, tmp_path, capsys):
    code, err = render(capsys, runs["eval"], out=tmp_path / "r.html")
    assert code == 0, err
    assert "does not match the sha256" not in (tmp_path / "r.html").read_text(encoding="utf-8")


# ---------------------------------------------------------------------------
# The property: any mutation of any file gives a page or one line
# ---------------------------------------------------------------------------
_INF = "\x00inf-sentinel\x00"  # written as 1e999 (read as an infinite float by the standard library)

_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=10**300, max_value=10**310),
    st.floats(allow_nan=False, allow_infinity=False), st.sampled_from([1e308, -1e308, 5e-324, -0.0, 0, 1, -1, 0.5]),
    st.just(_INF), ht.text(max_size=12), st.sampled_from(["", "ok", "1", "0.1", "\x1b[31m", "\u202e"]),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(ht.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)


def _dumps(value: Any, **kwargs: Any) -> str:
    return json.dumps(value, ensure_ascii=False, **kwargs).replace(json.dumps(_INF), "1e999")


def _mutate_value(data: st.DataObject, value: Any) -> Any:
    """``value`` with one place changed: a value replaced, a key deleted, an array cut or grown."""
    if isinstance(value, (dict, list)) and value and data.draw(st.booleans(), label="descend"):
        keys = list(value) if isinstance(value, dict) else list(range(len(value)))
        key = data.draw(st.sampled_from(keys), label="key")
        copy = dict(value) if isinstance(value, dict) else list(value)
        op = data.draw(st.sampled_from(["inner", "delete", "replace"]), label="op")
        if op == "inner":
            copy[key] = _mutate_value(data, copy[key])
        elif op == "delete":
            del copy[key]
        else:
            copy[key] = data.draw(_VALUES, label="new value")
        return copy
    return data.draw(_VALUES, label="new value")


def _mutate_file(data: st.DataObject, path: Path) -> None:
    raw = path.read_bytes()
    if data.draw(st.integers(0, 9), label="bytes?") == 0:  # rarely: raw bytes that are not UTF-8 or JSON
        at = data.draw(st.integers(0, len(raw)), label="at")
        path.write_bytes(raw[:at] + data.draw(st.binary(min_size=1, max_size=4), label="bytes") + raw[at:])
        return
    if path.suffix == ".json":
        path.write_text(_dumps(_mutate_value(data, json.loads(raw)), indent=2), encoding="utf-8")
    elif path.suffix == ".jsonl":
        lines = raw.decode("utf-8").splitlines()
        i = data.draw(st.integers(0, len(lines) - 1), label="line")
        op = data.draw(st.sampled_from(["edit", "edit", "edit", "delete", "duplicate"]), label="line op")
        if op == "edit":
            lines[i] = _dumps(_mutate_value(data, json.loads(lines[i])))
        elif op == "delete":
            del lines[i]
        else:
            lines.insert(i, lines[i])
        path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    else:  # the csv
        rows = [line.split(",") for line in raw.decode("utf-8").splitlines()]
        i = data.draw(st.integers(0, len(rows) - 1), label="row")
        j = data.draw(st.integers(0, len(rows[i]) - 1), label="cell")
        op = data.draw(st.sampled_from(["cell", "drop", "add"]), label="csv op")
        if op == "cell":
            rows[i][j] = data.draw(st.sampled_from(["", "x", "nan", "inf", "-inf", "1e999", "1e308", "-0", "0x10",
                                                    "p_9"])
                                   | ht.text(max_size=5).filter(lambda t: "," not in t and "\n" not in t
                                                                and "\r" not in t),
                                   label="cell text")
        elif op == "drop":
            del rows[i][j]
        else:
            rows[i].insert(j, "0.5")
        path.write_text("".join(",".join(r) + "\n" for r in rows), encoding="utf-8")


@pytest.mark.parametrize("kind", sorted(FILES))
@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_any_mutation_of_a_run_gives_a_page_or_one_line_and_exit_2(runs, capsys, kind, data):
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp)
        run = _copy(runs[kind], where)
        for name in data.draw(st.lists(st.sampled_from(FILES[kind]), min_size=1, max_size=2, unique=True),
                              label="files"):
            _mutate_file(data, run / name)
        out = where / "page.html"
        code, err = render(capsys, run, out=out)
        assert_page_or_one_line(code, err, out)
        if kind in SCORING:  # also as the candidate of a comparison (side by side, and the gate)
            code, err = render(capsys, runs[kind], run, out=out)
            assert_page_or_one_line(code, err, out)


# ---------------------------------------------------------------------------
# The page hides nothing (issue 30 item 8): every code left out of the item table is counted and
# named, and a summary.json that results.jsonl does not bear out is flagged
# ---------------------------------------------------------------------------
def _write_results(run: Path, codes: list[str], *, summary_of: list[str] | None = None) -> None:
    """results.jsonl with one item per entry of ``codes`` (each a failure of that code), and the summary
    course.eval would write for it (or, with ``summary_of``, for those codes: a summary that is
    consistent in itself but not with these results)."""
    from course.lib.evaluation.summary import Tally

    template = json.loads((run / "results.jsonl").read_text(encoding="utf-8").splitlines()[0])

    def line(i: int, code: str) -> dict[str, Any]:
        return {**template, "id": f"item-{i:04d}", "reward": 0.0,
                "details": {**template["details"], "error_code": code}}

    (run / "results.jsonl").write_text("".join(json.dumps(line(i, c)) + "\n" for i, c in enumerate(codes)),
                                       encoding="utf-8")
    tally = Tally()
    for i, code in enumerate(codes if summary_of is None else summary_of):
        tally.add(line(i, code))
    (run / "summary.json").write_text(json.dumps(tally.summary()), encoding="utf-8")


def test_a_code_past_the_tables_code_limit_is_counted_and_named_on_the_page(runs, tmp_path, capsys):
    run = _copy(runs["eval"], tmp_path)
    _write_results(run, [f"code_{i:03d}" for i in range(250)] + ["zz_hidden"] * 50)
    code, err = render(capsys, run, out=tmp_path / "r.html")
    assert code == 0, err
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    note = page.split('<p class="sample-note">', 1)[1].split("</p>", 1)[0]
    assert "Left out entirely: 100 items of the 51 codes past the first 200" in note
    assert "zz_hidden (50)" in note  # the most numerous left-out code, named first
    assert "not in the table below" in page  # its bar says where its items are instead


def test_a_summary_whose_n_disagrees_with_the_results_is_flagged_on_the_page(runs, tmp_path, capsys):
    run = _copy(runs["eval"], tmp_path)
    _write_results(run, ["wrong_answer"] * 300, summary_of=["wrong_answer"] * 100)
    code, err = render(capsys, run, out=tmp_path / "r.html")
    assert code == 0, err
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "warning: summary.json says n = 100 but results.jsonl holds 300 items" in page


def test_a_summary_whose_code_counts_disagree_with_the_results_is_flagged_naming_the_code(runs, tmp_path, capsys):
    run = _copy(runs["eval"], tmp_path)
    _write_results(run, ["wrong_answer"] * 5 + ["no_final_line"] * 5,
                   summary_of=["wrong_answer"] * 8 + ["no_final_line"] * 2)
    code, err = render(capsys, run, out=tmp_path / "r.html")
    assert code == 0, err
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert ("breakdown (and counts) by error code disagree with results.jsonl for 2 code(s): no_final_line: 2 in "
            "summary.json, 5 in results.jsonl; wrong_answer: 8 in summary.json, 5 in results.jsonl") in page


def test_a_run_whose_summary_matches_its_results_has_no_disagreement_warning(runs, tmp_path, capsys):
    code, err = render(capsys, runs["eval"], out=tmp_path / "r.html")
    assert code == 0, err
    assert "summary.json says" not in (tmp_path / "r.html").read_text(encoding="utf-8")


def test_a_reward_that_is_an_integer_too_large_for_a_float_is_one_line_not_a_traceback(runs, tmp_path, capsys):
    run = _copy(runs["eval"], tmp_path)
    _edit_lines(run / "results.jsonl", 1, lambda o: o.__setitem__("reward", 10**400))
    code, err = render(capsys, run, out=tmp_path / "r.html")
    assert_refused(code, err, "results.jsonl:1", "reward")
