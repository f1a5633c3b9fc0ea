"""course.report: the HTML page of every run kind, parsed with the standard library's parser.

Checks each section per kind, the escaping of hostile completions, that the page
references nothing outside itself, the gate's rendering for an ACCEPT and a
REJECT pair, determinism, the overwrite rule, --help and a smoke run. The page in
a real browser is tests/test_report_browser.py.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shutil
from fractions import Fraction
from html.parser import HTMLParser
from pathlib import Path

import pytest
from report_runs import BIG, build_runs

import course.gate as gate
import course.report as report
from course.inspect_run import render_example
from course.lib.evaluation import locked_room
from course.lib.records.formats import iter_results
from course.lib.reporting import html as report_html
from course.lib.reporting import scoring_sections

VOID = {"meta", "br", "input", "img", "link", "hr", "area", "base", "col", "embed", "source", "track", "wbr"}


class Page(HTMLParser):
    """Every element (tag, attrs, text inside it), the scripts, and the whole text."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[dict] = []
        self.stack: list[dict] = []
        self.scripts: list[tuple[dict, str]] = []
        self.text: list[str] = []
        self.feed(html)
        self.close()

    def handle_starttag(self, tag, attrs):
        el = {"tag": tag, "attrs": dict(attrs), "text": []}
        self.elements.append(el)
        if tag not in VOID:
            self.stack.append(el)

    def handle_startendtag(self, tag, attrs):
        self.elements.append({"tag": tag, "attrs": dict(attrs), "text": []})

    def handle_endtag(self, tag):
        while self.stack:
            el = self.stack.pop()
            if el["tag"] == tag:
                if tag == "script":
                    self.scripts.append((el["attrs"], "".join(el["text"])))
                break

    def handle_data(self, data):
        self.text.append(data)
        for el in self.stack:
            el["text"].append(data)

    def all_text(self) -> str:
        return "".join(self.text)

    def find(self, tag: str, **attrs: str) -> list[dict]:
        def match(el):
            if el["tag"] != tag:
                return False
            for k, v in attrs.items():
                k = k.rstrip("_")
                if k == "class":
                    if v not in (el["attrs"].get("class") or "").split():
                        return False
                elif el["attrs"].get(k) != v:
                    return False
            return True

        return [el for el in self.elements if match(el)]

    def text_of(self, el: dict) -> str:
        return "".join(el["text"])


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    return build_runs(tmp_path_factory.mktemp("report_runs"))


def page_of(*paths: Path, min_delta: Fraction = Fraction(0)) -> tuple[str, Page]:
    html = report.build([str(p) for p in paths], min_delta, False)
    return html, Page(html)


# ---------------------------------------------------------------------------
# One run of each kind
# ---------------------------------------------------------------------------
def test_eval_report_header_shows_the_locked_room_fields_command_and_git_state(runs):
    _, page = page_of(runs["eval"])
    manifest = json.loads((runs["eval"] / "manifest.json").read_text())
    text = page.all_text()
    for key in ("dataset_fingerprint", "scorer_fingerprint", "scorer_version", "split"):
        assert key in text and str(manifest[key]) in text
    assert '"temperature": 0.8' in text  # sampling
    assert "1 (implicit: course.eval scores one completion per item)" in text  # selection compute
    assert manifest["command"] in text
    if manifest["git_commit"] is None:  # the tests run from a copy outside git (an archive, an sdist)
        assert "git commit(not recorded)" in text
    else:
        assert manifest["git_commit"] in text and ("clean" in text or "dirty" in text)


def test_eval_report_says_the_commit_was_not_recorded_for_a_run_made_outside_git(runs, tmp_path):
    run = shutil.copytree(runs["eval"], tmp_path / "eval_outside_git")
    manifest = json.loads((run / "manifest.json").read_text())
    manifest.update(git_commit=None, git_dirty=None)  # what course.lib.records.manifest records outside git
    (run / "manifest.json").write_text(json.dumps(manifest))
    html, page = page_of(run)
    assert "git commit(not recorded)" in page.all_text()
    assert '<span class="good">clean</span>' not in html and "dirty (uncommitted changes)" not in html


def test_eval_report_shows_the_pass_rate_with_its_wilson_interval(runs):
    _, page = page_of(runs["eval"])
    figure = page.find("p", class_="passrate")
    assert [page.text_of(p) for p in figure] == ["Pass rate: 30/100 = 30.0% (95% CI 21.9%–39.6%)"]
    assert page.find("svg", class_="cibar")


def test_taxonomy_has_one_bar_per_error_code_each_opening_its_examples(runs):
    _, page = page_of(runs["eval"])
    summary = json.loads((runs["eval"] / "summary.json").read_text())
    bars = page.find("details", class_="bar")
    assert len(bars) == len(summary["breakdown"])
    first = page.text_of(bars[0])
    assert summary["breakdown"][0]["code"] in first and summary["breakdown"][0]["example_ids"][0] in first


def test_examples_make_characters_visible_exactly_as_inspect_run_does(runs):
    _, page = page_of(runs["eval"])
    text = page.all_text()
    minus = [r for r in iter_results(runs["eval"] / "results.jsonl")
             if r["details"]["error_code"] == "lookalike_minus"][0]
    lines = render_example(minus, None)
    completion_line = next(line for line in lines if "completion:" in line).split("completion:", 1)[1].strip()
    assert "⟨U+2212⟩" in completion_line and completion_line in text
    assert "⟨U+2212⟩ MINUS SIGN" in text  # the key naming the escaped character


def test_item_table_has_a_static_first_page_and_the_whole_run_as_json(runs):
    html, page = page_of(runs["eval"])
    table = page.find("table", class_="itemtable")[0]
    assert [page.text_of(th) for th in page.find("th") if "data-col" in th["attrs"]] == \
        ["id", "expected", "extracted", "code", "reason", "completion"]
    body_rows = [el for el in page.elements if el["tag"] == "tr"]
    assert sum(1 for r in body_rows if "dev-00" in page.text_of(r)) >= 50
    data = [json.loads(s) for a, s in page.scripts if a.get("type") == "application/json"]
    assert len(data) == 1 and len(data[0]["rows"]) == 100
    assert data[0]["rows"][0][:4] == ["dev-0001", 323, 304, "wrong_answer"]
    assert table


def test_a_run_larger_than_the_table_embeds_a_bounded_sample_and_says_how_to_see_every_item(runs, monkeypatch):
    monkeypatch.setattr(scoring_sections, "TABLE_ROWS", 40)  # the eval run has 100 items
    html, page = page_of(runs["eval"])
    rows = [json.loads(s) for a, s in page.scripts if a.get("type") == "application/json"][0]["rows"]
    results = list(iter_results(runs["eval"] / "results.jsonl"))
    order = [r["id"] for r in results]
    assert len(rows) <= 40
    assert [r[0] for r in rows] == sorted((r[0] for r in rows), key=order.index)  # dataset order
    counts: dict[str, int] = {}
    for r in results:
        counts[r["details"]["error_code"]] = counts.get(r["details"]["error_code"], 0) + 1
    kept = {code: sum(1 for r in rows if r[3] == code) for code in counts}
    thinned = [c for c in counts if kept[c] < counts[c]]
    assert thinned and all(kept[c] == counts[c] for c in counts if counts[c] <= min(kept[t] for t in thinned))
    common = max(counts, key=counts.get)  # its kept items span the whole dataset, not just its start
    assert order.index([r[0] for r in rows if r[3] == common][-1]) > len(order) // 2
    note = page.text_of(page.find("p", class_="sample-note")[0])
    assert f"{len(rows)} of the run's 100 items" in note
    assert (f"python -m course.inspect_run --run {runs['eval'].as_posix()} --code CODE" in note
            and "results.jsonl" in note)
    options = [page.text_of(o) for o in page.find("option") if o["attrs"].get("value") == common]
    assert options == [f"{common} ({kept[common]} of {counts[common]})"]


def test_a_run_within_the_table_size_embeds_every_item_and_no_sample_note(runs):
    _, page = page_of(runs["eval"])
    assert not page.find("p", class_="sample-note")


@pytest.mark.parametrize("limit", [1, 7, 50])
def test_the_item_sample_never_holds_more_than_its_limit_and_keeps_whole_strides(limit):
    import random

    rng = random.Random(limit)
    sample = scoring_sections.ItemSample(limit=limit)
    codes = [rng.choice("aaaaaaaabbbbccd") for _ in range(500)]
    for i, code in enumerate(codes):
        sample.add({"id": f"x{i}", "reward": 0.0, "details": {"error_code": code, "reason": ""}, "completion": "c"})
        assert sample._total == sum(map(len, sample._kept.values())) <= max(limit, len(sample.counts))
    rows = sample.rows()
    for code, stride in sample._stride.items():  # each code: exactly its items whose rank is a multiple of its stride
        ranks = [k for k, c in enumerate(x for x in codes if x == code)]
        ids = [f"x{i}" for i, c in enumerate(codes) if c == code]
        assert [r[0] for r in rows if r[3] == code] == [ids[k] for k in ranks if k % stride == 0]


def test_item_table_controls_are_hidden_until_the_script_runs(runs):
    _, page = page_of(runs["eval"])
    controls = page.find("div", class_="controls")
    assert controls and all("hidden" in c["attrs"] for c in controls)


def test_selection_report_draws_pass_at_k_pass_hat_k_and_first_k(runs):
    _, page = page_of(runs["sel_n4"])
    titles = [page.text_of(t) for t in page.find("title")]
    assert any(t.startswith("pass@k, pass^k and first-k") for t in titles)
    legend = {page.text_of(t) for t in page.find("text", class_="leg")}
    assert {"pass@k (unbiased)", "pass^k (all k pass)", "first-k (stored order)"} <= legend
    assert "Pass rate: 68/100 = 68.0%" in page.all_text()


def test_bandit_report_draws_j_and_the_probabilities_over_steps(runs):
    _, page = page_of(runs["bandit"])
    titles = [page.text_of(t) for t in page.find("title")]
    assert any(t.startswith("Expected reward J over steps") for t in titles)
    assert any(t.startswith("Probability of each action") for t in titles)
    assert len(page.find("polyline")) >= 7  # J + six actions


def test_toy_mdp_report_shows_the_reward_table_and_both_decisions(runs):
    _, page = page_of(runs["toy_mdp"])
    titles = [page.text_of(t) for t in page.find("title")]
    assert any(t.startswith("Expected return over episodes") for t in titles)
    assert any("first action learns" in t for t in titles)
    assert "Reward R(a1, a2)" in page.all_text()


def test_kl_report_draws_the_frontier_with_each_beta_labelled(runs):
    _, page = page_of(runs["kl"])
    titles = [page.text_of(t) for t in page.find("title")]
    assert any(t.startswith("The KL frontier") for t in titles)
    labels = {page.text_of(t) for t in page.find("text", class_="pl")}
    assert {"β=0.01", "β=100.0"} <= labels


def test_tinylm_rl_report_marks_the_goodhart_alarm_on_the_curves(runs):
    _, page = page_of(runs["tinylm_rl"])
    marks = [t for t in page.find("text", class_="mark") if page.text_of(t) == "GOODHART ALARM"]
    assert len(marks) == 3  # reward, KL/entropy and verdict charts
    titles = [page.text_of(t) for t in page.find("title")]
    for start in ("Proxy reward vs the strict goal", "Drift from π0 and entropy", "Strict verdicts"):
        assert any(t.startswith(start) for t in titles)
    assert page.find("div", class_="alarm")


def test_tinylm_rl_report_renders_its_holdout_runs_and_their_gate(runs):
    _, page = page_of(runs["tinylm_rl"])
    subs = page.find("section", class_="subrun")
    assert len(subs) == 2 and "eval_pi0_holdout" in page.text_of(subs[0])
    gates = page.find("section", class_="gate")
    assert len(gates) == 1 and "Decision: REJECT" in page.text_of(gates[0])  # +0 points under a +10 point bar
    assert len(page.find("table", class_="itemtable")) == 2


FAKE_VIEW = """
from course.lib.records.jsonl import read_json
from course.lib.reporting.page_parts import RunKind, View, escape

VIEW = View(RunKind("fake", "Fake kind", ("course.fake",)),
            lambda src: {"summary": read_json(src.run / "summary.json", "summary")},
            lambda run, prefix: f'<p id="{prefix}-fake">fake answer {escape(run.summary["answer"])}</p>')
"""


def test_a_new_run_kind_is_one_new_view_module_and_the_page_draws_it(tmp_path, monkeypatch):
    from course.lib.reporting import views

    extra = tmp_path / "more_views"
    extra.mkdir()
    (extra / "fake.py").write_text(FAKE_VIEW, encoding="utf-8")
    monkeypatch.setattr(views, "__path__", [*views.__path__, str(extra)])
    monkeypatch.delitem(__import__("sys").modules, "course.lib.reporting.views.fake", raising=False)
    monkeypatch.setattr(views, "VIEWS", views.discover(views.__path__))
    run = tmp_path / "run"
    run.mkdir()
    (run / "manifest.json").write_text(json.dumps({"tool": "course.fake"}), encoding="utf-8")
    (run / "summary.json").write_text(json.dumps({"answer": "<42>"}), encoding="utf-8")
    loaded = report_html.load_run(run)
    assert loaded.kind == "fake"
    page = Page(report_html.render_report([loaded]))
    assert any(page.text_of(h).startswith("Fake kind: ") for h in page.find("h2"))
    assert [page.text_of(p) for p in page.find("p", id="r0-fake")] == ["fake answer <42>"]


def test_a_real_llm_rl_run_gets_the_rl_view_with_its_own_title(runs, tmp_path):
    # course.llm.rl writes the same run as course.tinylm.rl (course.lib.learning.rl_loop): one view, its own kind
    import shutil

    llm_run = tmp_path / "llm_rl"
    shutil.copytree(runs["tinylm_rl"], llm_run)
    manifest = json.loads((llm_run / "manifest.json").read_text(encoding="utf-8"))
    (llm_run / "manifest.json").write_text(json.dumps({**manifest, "tool": "course.llm.rl"}), encoding="utf-8")
    assert report_html.load_run(llm_run).kind == "llm_rl"
    _, page = page_of(llm_run)
    assert any(page.text_of(h).startswith("Real LLM RL: ") for h in page.find("h2"))
    assert len(page.find("section", class_="subrun")) == 2


# ---------------------------------------------------------------------------
# Hostile content and self-containment
# ---------------------------------------------------------------------------
def test_hostile_completions_are_shown_as_text_never_as_markup(runs):
    html, page = page_of(runs["hostile"])
    assert [a for a, _ in page.scripts] == [{"type": "application/json", "id": "r0-data"}, {}]
    assert not page.find("img") and not page.find("b")
    assert not any(k.startswith("on") for el in page.elements for k in el["attrs"])
    text = page.all_text()
    assert "⟦<script>document.title='PWNED'</script>⟧" in text
    assert "⟦<img src=x onerror=\"document.title='PWNED'\">Final: 3⟧" in text
    rows = json.loads(page.scripts[0][1])["rows"]
    assert rows[1][6] == "</script><script>document.title='PWNED'</script>"  # intact as data
    assert "</script><script>document" not in html


def test_a_ten_megabyte_completion_is_cut_and_its_length_shown(runs):
    html, page = page_of(runs["hostile"])
    assert len(html) < 200_000
    assert f"{BIG:,} characters; the first 600 are shown" in page.all_text()
    assert f"… [{BIG - 600} more characters]" in page.all_text()
    rows = json.loads(page.scripts[0][1])["rows"]
    big = next(r for r in rows if r[0] == "h-5")
    assert big[7] == BIG and len(big[6]) < 200


@pytest.mark.parametrize("kind", ["eval", "sel_n4", "bandit", "toy_mdp", "kl", "tinylm_rl", "hostile"])
def test_the_page_references_nothing_outside_itself(runs, kind):
    html, page = page_of(runs[kind])
    for el in page.elements:
        assert "src" not in el["attrs"], el
        for name in ("href", "xlink:href", "action", "formaction", "poster", "data"):
            value = el["attrs"].get(name)
            assert value is None or value.startswith("#"), el
    assert not re.search(r"https?:", html, re.I)
    assert "url(" not in html and "@import" not in html
    csp = page.find("meta", **{"http-equiv": "Content-Security-Policy"})[0]["attrs"]["content"]
    assert "default-src 'none'" in csp


def test_the_content_security_policy_allows_exactly_the_inline_script(runs):
    _, page = page_of(runs["eval"])
    code = [s for a, s in page.scripts if a.get("type") != "application/json"]
    digest = base64.b64encode(hashlib.sha256(code[0].encode()).digest()).decode()
    csp = page.find("meta", **{"http-equiv": "Content-Security-Policy"})[0]["attrs"]["content"]
    assert f"script-src 'sha256-{digest}'" in csp and len(code) == 1


def test_the_same_runs_give_the_same_bytes(runs):
    assert page_of(runs["eval"], runs["sel_n4"])[0] == page_of(runs["eval"], runs["sel_n4"])[0]


# ---------------------------------------------------------------------------
# Several runs: side by side and the gate
# ---------------------------------------------------------------------------
def test_gate_rendering_of_an_accept_pair_shows_every_field_equal_and_mcnemar(runs):
    _, page = page_of(runs["eval"], runs["eval_better"])
    section = page.find("section", class_="gate")[0]
    assert page.text_of(page.find("p", class_="accept")[0]).startswith("Decision: ACCEPT (the change +20.0 points")
    rows = [el for el in page.find("tr") if el["attrs"].get("class") in ("same", "differs", "skip")]
    # selection.rule and picker_sha256 are shown but not compared when n = 1 (course.gate's rule)
    # 9: rubric, rubric_version, prompt_template too
    assert [el["attrs"]["class"] for el in rows] == ["same"] * 9 + ["skip"] * 2
    base, cand = locked_room.load_outcomes(str(runs["eval"])), locked_room.load_outcomes(str(runs["eval_better"]))
    p = locked_room.decide(base, cand, Fraction(0), False)["paired"]["mcnemar_p"]
    assert page.text_of(page.find("strong", class_="mcnemar")[0]) == format(p, ".3g")
    assert "(c)" in page.text_of(section) and "(b)" in page.text_of(section)


def test_gate_rendering_of_a_reject_pair_marks_the_differing_field_with_both_values(runs):
    _, page = page_of(runs["eval"], runs["eval_modified"])
    decision = page.text_of(page.find("p", class_="reject")[0])
    assert decision == "Decision: REJECT (Locked Room violated: dataset_fingerprint differs)"
    differs = [el for el in page.find("tr") if el["attrs"].get("class") == "differs"]
    assert len(differs) == 1
    row = page.text_of(differs[0])
    fp = [json.loads((runs[k] / "manifest.json").read_text())["dataset_fingerprint"] for k in ("eval", "eval_modified")]
    assert "✗" in row and "dataset_fingerprint" in row and fp[0] in row and fp[1] in row


def test_several_runs_are_shown_side_by_side_with_differences_marked(runs):
    _, page = page_of(runs["sel_n1"], runs["sel_n4"])
    compare = page.find("table", class_="compare")
    assert (compare and "Pass rate: 30/100" in page.text_of(compare[0])
            and "Pass rate: 68/100" in page.text_of(compare[0]))
    assert [page.text_of(c) for c in page.find("code", class_="diff")] == ["1", "4"]  # selection.n
    assert len(page.find("section", class_="run")) == 2


def test_gate_html_writes_the_same_page_as_course_report(runs, tmp_path, capsys):
    a, b = tmp_path / "gate.html", tmp_path / "report.html"
    code = gate.main(["--baseline", str(runs["eval"]), "--candidate", str(runs["eval_modified"]), "--min-delta", "0",
                      "--html", str(a)])
    assert code == 1
    assert report.main([str(runs["eval"]), str(runs["eval_modified"]), "--out", str(b)]) == 0
    assert a.read_bytes() == b.read_bytes()
    assert "Decision: REJECT" in capsys.readouterr().out  # the terminal output is unchanged


def test_header_keys_include_every_locked_room_field_of_the_gate():
    assert {f.key for f in locked_room.LOCKED_FIELDS} <= set(report_html.HEADER_KEYS)


# ---------------------------------------------------------------------------
# The command line
# ---------------------------------------------------------------------------
def test_help_ends_with_a_worked_example(capsys):
    with pytest.raises(SystemExit) as exc:
        report.main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "example:" in out and out.rstrip().splitlines()[-1].strip().startswith("(then open")


def test_smoke_run_writes_report_html_inside_the_run_and_prints_its_path(runs, capsys):
    assert report.main([str(runs["kl"])]) == 0
    out = capsys.readouterr().out.strip().splitlines()[-1]
    written = runs["kl"] / "report.html"
    assert out.startswith(f"Wrote {written} (") and report_html.is_report_file(written)
    assert report.main([str(runs["kl"])]) == 0  # its own file: replaced without --force


def test_an_existing_file_the_tool_did_not_write_is_not_overwritten_without_force(runs, tmp_path, capsys):
    target = tmp_path / "notes.html"
    target.write_text("my notes")
    assert report.main([str(runs["kl"]), "--out", str(target)]) == 2
    assert target.read_text() == "my notes" and "--force" in capsys.readouterr().err
    assert report.main([str(runs["kl"]), "--out", str(target), "--force"]) == 0
    assert report_html.is_report_file(target)


def test_a_directory_that_is_not_a_run_is_a_usage_error(tmp_path, capsys):
    assert report.main([str(tmp_path)]) == 2
    assert "manifest.json: no such file" in capsys.readouterr().err
    assert not (tmp_path / "report.html").exists()


def test_a_results_file_edited_after_the_run_is_flagged_in_the_header(runs, tmp_path):
    import shutil

    copy = tmp_path / "edited"
    shutil.copytree(runs["eval"], copy)
    results = copy / "results.jsonl"
    results.write_text(results.read_text().replace('"reward": 0.0', '"reward": 1.0', 1))
    _, page = page_of(copy)
    assert any("changed after the run" in page.text_of(p) for p in page.find("p", class_="alarm"))
    _, clean = page_of(runs["eval"])
    assert not clean.find("p", class_="alarm")


def test_a_tool_that_writes_a_run_names_the_report_command_on_its_last_line(tmp_path):
    import subprocess
    import sys

    repo = Path(__file__).resolve().parents[1]
    proc = subprocess.run(
        [sys.executable, "-m", "course.eval", "--dataset", str(repo / "data/datasets/math_dev.jsonl"),
         "--completions", str(repo / "data/rollouts/frozen_rollouts_dev.jsonl"), "--outdir", "runs/e"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    last = proc.stdout.rstrip("\n").splitlines()[-1]
    assert last == "View it: python -m course.report runs/e"
    view = subprocess.run([sys.executable, *last.split("python ", 1)[1].split()], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert view.returncode == 0, view.stderr
    assert (tmp_path / "runs/e/report.html").is_file()


def test_a_tool_whose_input_is_refused_prints_no_report_command(tmp_path):
    import subprocess
    import sys

    (tmp_path / "empty.jsonl").write_text("", encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "course.eval", "--dataset", "empty.jsonl",
                           "--completions", "empty.jsonl"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "course.report" not in proc.stdout
