"""See a run: one self-contained HTML page for one or several run directories (``course.report`` writes it).

    python -m course.report runs/demo_eval_clean                    # -> runs/demo_eval_clean/report.html
    python -m course.report runs/demo_sel_n1 runs/demo_sel_n4       # side by side, with the gate's decision

What this module owns:

  * ``load_run(path) -> RunData``: read a run directory of any course tool
    (course.eval, selection_demo, bandit_train, toy_mdp, kl_tradeoff_demo,
    tinylm.rl, or anything with a manifest.json) into one frozen record;
  * ``render_report(runs, gates) -> str``: the page, a pure function of its
    arguments (the same runs give the same bytes: no clock, no randomness);
  * ``write_report(path, html, force=...)``: the atomic write, and the one
    overwrite rule (a file this tool wrote may be replaced; anything else needs
    ``force``).

The page references nothing outside itself: styles and the small table script
are inline, charts are inline SVG (``course.lib.reporting.svg``), and a Content Security
Policy forbids every network or file load and every script but the one whose
sha256 it names. Every piece of run data is HTML-escaped; completions are shown
as ``course.inspect_run`` shows them (``course.lib.visible``: ``⟨\\n⟩``,
``⟨U+XXXX⟩`` ...), cut to ``COMPLETION_LIMIT`` characters with the full length
stated, so a ``<script>`` in a completion is text and a 10 MB completion costs
600 characters. The summary, the failure taxonomy (each bar a ``<details>``
that opens its examples), the charts and the first page of the item table work
without JavaScript; the script only filters, sorts and pages the table, over an
inline JSON block (``type="application/json"``: data, never executed).

Gate decisions are computed by ``course.gate`` and passed in as plain dicts
(``course.lib.evaluation.locked_room.gate_view``): the library renders them and never imports a tool.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import os
from dataclasses import dataclass, field, replace
from html import escape as escape_html
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from course.errors import CourseError
from course.instrument.spec_v1 import ERROR_CODES
from course.lib.evaluation.summary import PASS_REWARD, ordered_codes, pass_at_1_line, pass_rate_line, percent, points
from course.lib.records.formats import (
    BANDIT_MANIFEST,
    EVAL_SUMMARY,
    KL_MANIFEST,
    RL_MANIFEST,
    RL_RECORD,
    RL_SUMMARY,
    SELECTION_SUMMARY,
    TOY_MDP_EPISODE,
    TOY_MDP_MANIFEST,
    iter_results,
    read_bandit_log,
    read_checked_json,
    read_kl_table,
    read_log,
)
from course.lib.records.jsonl import open_input, output_problem, read_json, writes_into
from course.lib.records.manifest import sha256_file
from course.lib.records.shapes import check
from course.lib.records.temporaries import write_text_atomic
from course.lib.reporting.run_kinds import BANDIT_MODES, KIND_LABEL, TOOL_KIND
from course.lib.reporting.svg import Mark, Series, line_chart
from course.lib.stats import wilson_interval
from course.lib.visible import command, legend, visible

__all__ = [
    "RunData", "load_run", "render_report", "write_report", "is_report_file", "default_output",
    "HEADER_KEYS", "COMPLETION_LIMIT", "GENERATOR",
]

GENERATOR = "course.report"
REPORT_NAME = "report.html"
COMPLETION_LIMIT = 600  # characters of a completion shown in an example, as course.inspect_run shows
TABLE_COMPLETION_LIMIT = 120  # per row in the item table (the examples show more)
EXAMPLES_PER_CODE = 5
PAGE_SIZE = 50
# The item table holds at most TABLE_ROWS items (see _ItemSample): every item of a run up to that
# size, beyond it every item of the rare outcome codes and an evenly spaced subset of the common ones.
# A page embedding every item of a million-item run was too heavy to use (in Chromium, many seconds
# to open, and every filter over a million rows), and building it held every row in memory three
# times; a page of this many rows opens and filters without a wait, and the report's memory stays
# flat in the run's size (benchmarks/bench_report.py measures both, at 100,000 and 1,000,000 items).
# Every item stays in results.jsonl, and the page says how to see the rest.
TABLE_ROWS = 50_000
MAX_TABLE_CODES = 200  # codes beyond these (a hand-made results.jsonl) are counted and named, not embedded
# Items are counted per code for this many distinct codes (a real run has a few dozen); the items of
# any further code are counted together, and the page says how many (memory stays bounded).
MAX_COUNTED_CODES = 100_000
NAMED_CODES = 20  # a note names this many codes left out of the table, then says how many more
MAX_CHART_POINTS = 600  # longer logs are thinned evenly for drawing (the last point always kept)

# The manifest keys shown in the header: course.gate's Locked Room (LOCKED_FIELDS; a test checks
# they agree) plus what else fixes a measurement (the policy, the rubric, the selection picker).
HEADER_KEYS: tuple[str, ...] = (
    "dataset_fingerprint", "split", "scorer_version", "scorer_fingerprint", "sampling", "prompt_template",
    "selection.n", "selection.rule", "selection.picker_sha256", "rubric", "rubric_version", "policy",
)
SCORING_TOOLS = ("course.eval", "course.selection_demo")


# ===========================================================================
# Reading a run directory
# ===========================================================================
@dataclass(frozen=True)
class RunData:
    """Everything the page shows about one run directory (read once, rendered by pure functions)."""

    path: str
    kind: str
    manifest: dict[str, Any]
    summary: dict[str, Any] | None = None
    # scoring runs: the item table's rows, [id, expected, extracted, code, reason, passed, completion, length],
    # in dataset order: every item, or an evenly spread sample of each code's items (_ItemSample)
    rows: tuple[list[Any], ...] = ()
    n_items: int = 0  # scoring runs: the items in results.jsonl (len(rows) unless the table is a sample)
    item_counts: dict[str, int] = field(default_factory=dict)  # scoring runs: items per outcome code, all of them
    # scoring runs: codes with no row in the item table, their counts
    left_out: dict[str, int] = field(default_factory=dict)
    uncounted: int = 0  # scoring runs: items of codes past MAX_COUNTED_CODES (in n_items, in no code's count)
    examples: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    records: tuple[dict[str, Any], ...] = ()  # bandit / toy_mdp / tinylm.rl logs
    table: tuple[dict[str, str], ...] = ()  # kl_tradeoff.csv
    texts: dict[str, str] = field(default_factory=dict)  # small text files shown as they are
    sub_runs: tuple["RunData", ...] = ()  # tinylm.rl: its course.eval runs
    gate: dict[str, Any] | None = None  # tinylm.rl: the holdout gate (course.lib.evaluation.locked_room.gate_view)
    files: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()  # e.g. results.jsonl edited after the run


def _kind(manifest: Mapping[str, Any]) -> str:
    kind = TOOL_KIND.get(str(manifest.get("tool")), "other")
    if kind == "bandit" and manifest.get("mode") in BANDIT_MODES:
        return str(manifest["mode"])
    return kind


def _item_row(result: Mapping[str, Any]) -> list[Any]:
    details = result["details"]
    completion = result.get("completion")
    expected = result.get("expected", details.get("expected"))
    extracted = details.get("extracted")
    if isinstance(completion, str):
        shown: str | None = visible(completion, limit=TABLE_COMPLETION_LIMIT)
        length: int | None = len(completion)
    else:
        shown, length = None, None
    return [
        str(result["id"]),
        expected if isinstance(expected, int) else (None if expected is None else str(expected)),
        extracted if isinstance(extracted, int) else (None if extracted is None else str(extracted)),
        str(details["error_code"]),
        str(details.get("reason", "")),
        1 if result["reward"] == PASS_REWARD else 0,
        shown,
        length,
    ]


def _example(result: Mapping[str, Any]) -> dict[str, Any]:
    """What an example needs, with the completion already cut (a 10 MB completion is not kept)."""
    details = result["details"]
    completion = result.get("completion")
    return {
        "id": result["id"],
        "reward": result["reward"],
        "expected": result.get("expected", details.get("expected")),
        "extracted": details.get("extracted"),
        "reason": details.get("reason", ""),
        "completion": completion[: COMPLETION_LIMIT + 1] if isinstance(completion, str) else completion,
        "length": len(completion) if isinstance(completion, str) else None,
    }


def _read_text(path: Path, limit: int = 200_000) -> str:
    with open_input(path, "a text file") as f:  # the one opener: a FIFO or a device is refused, never waited on
        data = f.read(limit + 1)
    text = data[:limit].decode("utf-8", errors="replace")
    return text + (f"\n… [file cut at {limit} bytes]" if len(data) > limit else "")


# What each kind's manifest must hold where a view draws from it (course.lib.records.formats declares them).
_MANIFEST_SHAPES = {"bandit": BANDIT_MANIFEST, "toy_mdp": TOY_MDP_MANIFEST, "kl": KL_MANIFEST, "tinylm_rl": RL_MANIFEST,
                    "llm_rl": RL_MANIFEST}
# The sha256 a manifest records of a file of its run: a file that no longer matches was edited after the run.
RECORDED_HASHES = (
    ("results_sha256", "results.jsonl"), ("summary_sha256", "summary.json"), ("rl_log_sha256", "rl_log.jsonl")
)


def _edited_after_the_run(run: Path, manifest: Mapping[str, Any]) -> tuple[str, ...]:
    """A warning for each file whose sha256 differs from the one manifest.json recorded (files already read)."""
    warnings = []
    for key, name in RECORDED_HASHES:
        recorded = manifest.get(key)
        if recorded is not None and (run / name).is_file() and sha256_file(run / name) != recorded:
            warnings.append(f"{name} does not match the sha256 recorded in manifest.json: it was changed after the run")
    return tuple(warnings)


class _ItemSample:
    """The item table's rows, read in one pass in memory bounded by ``limit`` rows (or one per code, for
    at most ``max_codes`` codes, if there are more codes than that), however many items.

    Every item while there are at most ``limit``. Beyond that the most frequent codes are thinned,
    each as a systematic sample: item k of a code (k = 0, 1, 2, ...) is kept while k is a multiple
    of the code's stride, and whenever the table would exceed ``limit`` the code holding the most
    rows doubles its stride (every other kept row goes). So rare codes keep all their items, common
    ones an evenly spaced subset spread over the whole dataset (not just its start), with no random
    numbers: the same run gives the same page. Only the first ``max_codes`` codes (in order of first
    appearance) have rows at all; every code is still counted (``counts``, up to
    ``MAX_COUNTED_CODES`` codes, then ``uncounted``), so the page names what the table leaves out
    (issue 30: a 251st code's 50 items vanished without a word).
    """

    def __init__(self, limit: int | None = None, max_codes: int = MAX_TABLE_CODES,
                 max_counted: int = MAX_COUNTED_CODES) -> None:
        self.limit, self.max_codes, self.max_counted = TABLE_ROWS if limit is None else limit, max_codes, max_counted
        self.n = 0
        self.passed = 0  # items whose reward is PASS_REWARD: checked against summary.json's "passed"
        self.uncounted = 0  # items of codes beyond max_counted distinct ones (counted only here)
        self.counts: dict[str, int] = {}
        self._kept: dict[str, list[tuple[int, int, list[Any]]]] = {}  # code -> (item index, rank in code, row)
        self._stride: dict[str, int] = {}
        self._total = 0  # rows kept, all codes

    def add(self, result: Mapping[str, Any]) -> None:
        index, self.n = self.n, self.n + 1
        self.passed += result["reward"] == PASS_REWARD
        code = result["details"]["error_code"]
        rank = self.counts.get(code)
        if rank is None:
            if len(self.counts) >= self.max_counted:
                self.uncounted += 1
                return
            rank = 0
            if len(self._kept) < self.max_codes:
                self._kept[code], self._stride[code] = [], 1
        self.counts[code] = rank + 1
        if code not in self._kept:  # counted, named on the page, never embedded
            return
        if rank % self._stride[code] == 0:
            self._kept[code].append((index, rank, _item_row(result)))
            self._total += 1
            while self._total > self.limit:
                biggest = max(self._kept, key=lambda c: len(self._kept[c]))
                if len(self._kept[biggest]) < 2:  # one row per code: a code's first item always stays
                    break
                self._thin(biggest)

    def _thin(self, code: str) -> None:
        stride = self._stride[code] = 2 * self._stride[code]
        kept = [k for k in self._kept[code] if k[1] % stride == 0]
        self._total -= len(self._kept[code]) - len(kept)
        self._kept[code] = kept

    def rows(self) -> tuple[list[Any], ...]:
        return tuple(row for _, _, row in sorted(k for kept in self._kept.values() for k in kept))

    def sampled(self) -> bool:
        return self._total < self.n

    def left_out(self) -> dict[str, int]:
        """The codes with no row in the table (beyond the first ``max_codes``), with their item counts."""
        return {code: count for code, count in self.counts.items() if code not in self._kept}


def _summary_disagrees(summary: Mapping[str, Any], sample: _ItemSample) -> tuple[str, ...]:
    """A warning for each figure of summary.json that results.jsonl does not bear out.

    The page's pass rate and code bars come from summary.json, its table from results.jsonl: a
    summary saying n = 100 beside 300 results (hand-edited, or the files of two runs) would show
    numbers that describe neither (issue 30). Compared: n, passed, and the count of every code.
    """
    warnings = []
    n, passed = summary.get("n"), summary.get("passed")
    if n != sample.n:
        warnings.append(f"summary.json says n = {n:,} but results.jsonl holds {sample.n:,} items: the pass rate and "
                        "the code counts shown come from summary.json and do not describe these results")
    if passed != sample.passed:
        warnings.append(f"summary.json says {passed:,} passed but {sample.passed:,} items of results.jsonl have "
                        f"reward {PASS_REWARD:g}")
    if sample.uncounted:
        warnings.append(f"results.jsonl holds more than {MAX_COUNTED_CODES:,} distinct error codes; the items of the "
                        f"codes past them ({sample.uncounted:,}) are counted in n only, not code by code")
        return tuple(warnings)
    # Both of summary.json's tallies by code (checked for shape by formats.EVAL_SUMMARY): the bars show "breakdown".
    tallies: dict[str, dict[str, int]] = {}
    if "breakdown" in summary:
        tallies["breakdown"] = {str(r["code"]): r["count"] for r in summary["breakdown"]}
    if "counts" in summary:
        if tallies.get("breakdown") == dict(summary["counts"]):
            tallies = {"breakdown (and counts)": tallies["breakdown"]}
        else:
            tallies["counts"] = dict(summary["counts"])
    for key, claimed in tallies.items():
        wrong = sorted(((c, claimed.get(c, 0), sample.counts.get(c, 0)) for c in set(claimed) | set(sample.counts)
                        if claimed.get(c, 0) != sample.counts.get(c, 0)),
                       key=lambda w: (-abs(w[1] - w[2]), w[0]))  # the largest gap named first
        if wrong:
            named = "; ".join(f"{visible(c)}: {s:,} in summary.json, {r:,} in results.jsonl"
                              for c, s, r in wrong[:NAMED_CODES])
            more = f"; and {len(wrong) - NAMED_CODES:,} more codes" if len(wrong) > NAMED_CODES else ""
            warnings.append(f"summary.json's {key} by error code disagree with results.jsonl for "
                            f"{len(wrong):,} code(s): "
                            f"{named}{more}")
    return tuple(warnings)


def _load_scoring(run: Path, kind: str) -> dict[str, Any]:
    sample = _ItemSample()
    examples: dict[str, list[dict[str, Any]]] = {}
    for result in iter_results(run / "results.jsonl"):
        sample.add(result)
        code = result["details"]["error_code"]
        if code not in sample.counts:  # past MAX_COUNTED_CODES: counted in n only (and said so)
            continue
        bucket = examples.setdefault(code, [])
        if len(bucket) < EXAMPLES_PER_CODE:
            bucket.append(_example(result))
    summary = read_checked_json(run / "summary.json", EVAL_SUMMARY if kind == "eval" else SELECTION_SUMMARY, "summary")
    return {"rows": sample.rows(), "n_items": sample.n, "item_counts": dict(sample.counts), "examples": examples,
            "summary": summary, "left_out": sample.left_out(), "uncounted": sample.uncounted,
            "warnings": _summary_disagrees(summary, sample)}


# ---------------------------------------------------------------------------
# Each kind's loader: the run's files -> RunData fields (the files' shapes checked on the way in)
# ---------------------------------------------------------------------------
def _load_bandit(run: Path, kind: str, manifest: Mapping[str, Any], path: str) -> dict[str, Any]:
    actions = manifest.get("actions")
    return {"records": read_bandit_log(run / "bandit_log.jsonl", None if actions is None else len(actions))}


def _load_ablation(run: Path, kind: str, manifest: Mapping[str, Any], path: str) -> dict[str, Any]:
    """The ablation's and the noise sweep's table: ``<kind>.txt``."""
    return {"texts": {f"{kind}.txt": _read_text(run / f"{kind}.txt")}}


def _load_sweep(run: Path, kind: str, manifest: Mapping[str, Any], path: str) -> dict[str, Any]:
    return {"texts": {"sweep.md": _read_text(run / "sweep.md")} if (run / "sweep.md").is_file() else {}}


def _load_toy_mdp(run: Path, kind: str, manifest: Mapping[str, Any], path: str) -> dict[str, Any]:
    return {"records": read_log(run / "toy_mdp_log.jsonl", TOY_MDP_EPISODE)}


def _load_kl(run: Path, kind: str, manifest: Mapping[str, Any], path: str) -> dict[str, Any]:
    return {"table": read_kl_table(run / "kl_tradeoff.csv")}


def _load_rl(run: Path, kind: str, manifest: Mapping[str, Any], path: str) -> dict[str, Any]:
    data: dict[str, Any] = {}
    data["summary"] = read_checked_json(run / "summary.json", RL_SUMMARY, "summary")
    data["records"] = read_log(run / "rl_log.jsonl", RL_RECORD)
    data["texts"] = {name: _read_text(run / name) for name in ("shift.md", "gate.txt") if (run / name).is_file()}
    subs = []
    for name in ("eval_pi0_holdout", "eval_final_holdout"):
        if (run / name / "manifest.json").is_file():
            subs.append(load_run(run / name, display=f"{path}/{name}"))
    data["sub_runs"] = tuple(subs)
    return data


def _load_other(run: Path, kind: str, manifest: Mapping[str, Any], path: str) -> dict[str, Any]:
    return {"summary": read_json(run / "summary.json", "summary")} if (run / "summary.json").is_file() else {}


def _load_scoring_run(run: Path, kind: str, manifest: Mapping[str, Any], path: str) -> dict[str, Any]:
    return _load_scoring(run, kind)


def load_run(path: str | os.PathLike[str], *, display: str | None = None) -> RunData:
    """Read a run directory written by any course tool; ``CourseError`` if it is not one.

    Every file goes through ``course.lib.records.formats`` with the shape its view relies on, so
    a hand-edited or damaged file is refused here (``path: field ...``), never met by a
    view as a KeyError or a division by zero; recorded sha256s are checked (a warning).
    """
    run = Path(path)
    if not run.is_dir():
        raise CourseError(f"{run}: no such run directory")
    if not (run / "manifest.json").is_file():
        raise CourseError(f"{run}/manifest.json: no such file; {run} is not a finished run directory")
    manifest = read_json(run / "manifest.json", "manifest")
    kind = _kind(manifest)
    if kind in _MANIFEST_SHAPES:
        check(manifest, _MANIFEST_SHAPES[kind], f"{run}/manifest.json")
    files = tuple(sorted(p.name + ("/" if p.is_dir() else "") for p in run.iterdir() if not p.name.startswith(".")))
    data: dict[str, Any] = {"path": display if display is not None else run.as_posix(), "kind": kind,
                            "manifest": manifest, "files": files}
    data.update(VIEWS.get(kind, VIEWS["other"]).load(run, kind, manifest, data["path"]))
    data["warnings"] = _edited_after_the_run(run, manifest) + data.get("warnings", ())
    return RunData(**data)


def with_gate(run: RunData, gate: Mapping[str, Any]) -> RunData:
    """The same run with its internal gate decision attached (tinylm.rl: pi0 vs final on the holdout)."""
    return replace(run, gate=dict(gate))


# ===========================================================================
# Small HTML helpers (every piece of data goes through escape())
# ===========================================================================
def escape(value: Any) -> str:
    """Escape any value for HTML text or a quoted attribute."""
    return escape_html(str(value), quote=True)


def _json_block(obj: Any) -> str:
    """JSON safe inside <script type="application/json">: no '<', '>' or '&' survives, so no '</script>'."""
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    return (text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def _value(manifest: Mapping[str, Any], key: str) -> Any:
    value: Any = manifest
    for part in key.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def _show(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _pct(x: float | None) -> str:
    return "–" if x is None else percent(x)


def _num(x: Any, digits: int = 4) -> str:
    if isinstance(x, bool) or x is None:
        return str(x)
    if isinstance(x, float):
        return f"{x:.{digits}g}"
    return str(x)


def _dl(pairs: Iterable[tuple[str, str]], cls: str = "kv") -> str:
    return f'<dl class="{cls}">' + "".join(f"<dt>{escape(k)}</dt><dd>{v}</dd>" for k, v in pairs) + "</dl>"


def _thin(points: Sequence[tuple[float, float]], limit: int = MAX_CHART_POINTS) -> tuple[tuple[float, float], ...]:
    if len(points) <= limit:
        return tuple(points)
    step = math.ceil(len(points) / limit)
    kept = list(points[::step])
    if kept[-1] != points[-1]:
        kept.append(points[-1])
    return tuple(kept)


def _numbers_table(headers: Sequence[str], rows: Iterable[Sequence[Any]], summary: str = "the numbers") -> str:
    body = "".join("<tr>" + "".join(f"<td>{escape(_num(c))}</td>" for c in row) + "</tr>" for row in rows)
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    return (f'<details class="numbers"><summary>{escape(summary)}</summary>'
            f'<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></details>')


# ===========================================================================
# Sections
# ===========================================================================
def _header(run: RunData) -> str:
    m = run.manifest
    pairs: list[tuple[str, str]] = []
    for key in HEADER_KEYS:
        value = _value(m, key)
        if value is None and key == "rubric":
            value = _value(m, "settings.rubric")
        if value is None and key == "selection.n" and m.get("tool") == "course.eval":
            value = "1 (implicit: course.eval scores one completion per item)"
        if value is not None:
            pairs.append((key, f"<code>{escape(_show(value))}</code>"))
    if isinstance(m.get("datasets"), list):
        for d in m["datasets"]:
            if isinstance(d, dict):
                pairs.append(("dataset", f"<code>{escape(d.get('path'))}</code> sha256 "
                                         f"<code>{escape(d.get('sha256'))}</code>"))
    elif isinstance(m.get("dataset"), dict):
        pairs.append(("dataset file", f"<code>{escape(m['dataset'].get('path'))}</code>"))
    for key in ("completions", "samples"):
        if isinstance(m.get(key), dict):
            pairs.append((f"{key} file", f"<code>{escape(m[key].get('path'))}</code> sha256 "
                                         f"<code>{escape(m[key].get('sha256'))}</code>"))
    for key in ("seed", "lr", "steps"):
        if key in m and not isinstance(m[key], (dict, list)):
            pairs.append((key, f"<code>{escape(_show(m[key]))}</code>"))
    prov: list[tuple[str, str]] = [
        ("tool", f"<code>{escape(m.get('tool', 'unknown'))}</code>"),
        ("command", f'<code class="cmd">{escape(m.get("command", "(not recorded)"))}</code>'),
    ]
    commit = m.get("git_commit")
    dirty = m.get("git_dirty")
    state = "" if dirty is None else (
        ' <span class="bad">dirty (uncommitted changes)</span>' if dirty else ' <span class="good">clean</span>'
    )
    prov.append(("git commit", f"<code>{escape(commit or '(not recorded)')}</code>{state}"))
    for key in ("created_utc", "course_version", "python", "platform"):
        if key in m:
            prov.append((key, escape(m[key])))
    manifest_text = json.dumps(m, ensure_ascii=False, sort_keys=True, indent=2)
    warn = "".join(f'<p class="alarm">warning: {escape(w)}</p>' for w in run.warnings)
    return (
        f'<div class="header">{warn}<h3>Locked Room</h3>' + _dl(pairs) + "<h3>Provenance</h3>" + _dl(prov)
        + f'<details><summary>manifest.json</summary><pre>{escape(manifest_text)}</pre></details>'
        + f'<p class="files">files: {escape(", ".join(run.files))}</p></div>'
    )


def _ci_bar(passed: int, n: int) -> str:
    lo, hi = wilson_interval(passed, n)
    rate = passed / n
    w, x0, pw = 440, 14, 400

    def px(v: float) -> str:
        return f"{x0 + v * pw:.1f}"

    ticks = "".join(
        f'<line x1="{px(t / 4)}" x2="{px(t / 4)}" y1="10" y2="30" class="grid"/>'
        f'<text x="{px(t / 4)}" y="44" text-anchor="middle" class="tick">{t * 25}%</text>' for t in range(5)
    )
    label = f"pass rate {percent(rate)}, 95% Wilson interval {percent(lo)} to {percent(hi)}"
    return (
        f'<svg class="cibar" viewBox="0 0 {w} 50" width="{w}" height="50" role="img" aria-label="{escape(label)}">'
        f"<title>{escape(label)}</title>{ticks}"
        f'<rect x="{x0}" y="16" width="{pw}" height="8" class="track"/>'
        f'<rect x="{px(lo)}" y="12" width="{(hi - lo) * pw:.1f}" height="16" class="ci"/>'
        f'<circle cx="{px(rate)}" cy="20" r="5" class="pt"/></svg>'
    )


def _clustered(summary: Mapping[str, Any]) -> str | None:
    """The headline of a multi-sample course.eval run (None for any other run, or one whose fields do not fit)."""
    items, m, ci = summary.get("items"), summary.get("samples_per_item"), summary.get("pass_rate_ci95")
    if not (type(items) is int and type(m) is int and items > 0 and m > 0 and items * m == summary.get("n")
            and isinstance(ci, dict) and ci.get("method") == "item-clustered"
            and all(isinstance(ci.get(k), (int, float)) and not isinstance(ci.get(k), bool) for k in ("low", "high"))):
        return None
    return pass_at_1_line(summary["passed"], summary["n"], items, ci["low"], ci["high"])


def _pass_rate(summary: Mapping[str, Any]) -> str:
    n = summary.get("n") or 0
    if not n:
        return '<p class="passrate">No items were scored.</p>'
    passed = summary["passed"]
    mean = summary.get("mean_reward")
    clustered = _clustered(summary)
    if clustered is not None:  # a multi-sample run: the samples of an item are not independent
        return (
            f'<p class="passrate"><strong>{escape(clustered)}</strong></p>'
            + (f"<p>Mean reward {mean:.3f}. " if isinstance(mean, (int, float)) else "<p>")
            + "Several samples per item: the interval treats the items as the unit of sampling "
            "(course.lib.stats.clustered_interval); as if the samples were independent it would be too narrow. "
            "Compare runs with course.gate, which pairs the items.</p>"
        )
    return (
        f'<p class="passrate"><strong>{escape(pass_rate_line(passed, n))}</strong></p>'
        + _ci_bar(passed, n)
        + (f"<p>Mean reward {mean:.3f}. " if isinstance(mean, (int, float)) else "<p>")
        + "The interval is the 95 % Wilson score interval (course.lib.stats.wilson_interval): the policy's true "
        "pass rate on items like these is plausibly anywhere inside it. Compare runs with course.gate.</p>"
    )


def _render_example(ex: Mapping[str, Any]) -> str:
    """One item as course.inspect_run prints it: completion between ⟦ ⟧, every invisible character escaped."""
    extracted = "nothing" if ex["extracted"] is None else ex["extracted"]
    pairs = [("expected", escape(ex["expected"])), ("extracted", escape(extracted)), ("reason", escape(ex["reason"]))]
    completion = ex["completion"]
    if isinstance(completion, str):
        length = ex["length"]
        shown = visible(completion, break_lines=True, limit=COMPLETION_LIMIT)
        if length is not None and length > COMPLETION_LIMIT:
            # the stored copy is cut; say how long the real one is
            shown = shown.rsplit("… [", 1)[0] + f"… [{length - COMPLETION_LIMIT} more characters]"
        pairs.append(("completion", f'<pre class="completion">⟦{escape(shown)}⟧</pre>'))
        if length is not None and length > COMPLETION_LIMIT:
            pairs.append(("length", f'<span class="bad">{length:,} characters; the first {COMPLETION_LIMIT} are '
                                    'shown</span>'))
        names = legend(completion[:COMPLETION_LIMIT])
        if names:
            pairs.append(("characters", "<br>".join(escape(name) for name in names)))
    else:
        not_text = f"not text ({type(completion).__name__})"
        pairs.append(("completion", "none" if completion is None else escape(not_text)))
    return (f'<div class="ex"><div class="exid">{escape(visible(str(ex["id"])))} (reward {escape(ex["reward"])})</div>'
            f'{_dl(pairs)}</div>')


def _taxonomy(run: RunData, prefix: str) -> str:
    summary = run.summary or {}
    n = summary.get("n") or 0
    rows = summary.get("breakdown") or []
    if not n or not rows:
        return ""
    top = max(r["count"] for r in rows)
    out = ['<div class="taxonomy">']
    for i, r in enumerate(rows):
        code = str(r["code"])
        share = r["count"] / n
        examples = run.examples.get(code, [])
        cls = "ok" if code == "ok" else "fail"
        body = "".join(_render_example(x) for x in examples)
        more = r["count"] - len(examples)
        if more > 0 and (code in run.left_out or code not in run.item_counts):  # no row of it in the table
            inspect_command = command(
                ["python", "-m", "course.inspect_run", "--run", run.path, "--code", code, "--show", "20"]
            )
            body += (f'<p class="more">… and {more:,} more item(s) with this code, not in the table below (see its '
                     f'note): <code>{escape(inspect_command)}</code></p>')
        elif more > 0:
            body += f'<p class="more">… and {more:,} more item(s) with this code: filter the table below by code.</p>'
        out.append(
            f'<details class="bar {cls}" id="{prefix}-code-{i}"><summary>'
            f'<span class="code">{escape(code)}</span>'
            f'<span class="track"><span class="fill" style="width:{100 * r["count"] / top:.1f}%"></span></span>'
            f'<span class="num">{r["count"]:,} ({escape(percent(share))})</span>'
            f'<span class="meaning">{escape(r.get("meaning", ERROR_CODES.get(code, "")))}</span></summary>'
            f'{body}</details>'
        )
    out.append("</div>")
    return ("<h3>Outcomes by error code</h3><p class=\"hint\">Each bar opens its first examples "
            f"(up to {EXAMPLES_PER_CODE}), completions shown as course.inspect_run shows them: ⟨\\n⟩ newline, "
            "⟨\\t⟩ tab, ⟨U+XXXX⟩ any character outside printable ASCII, named underneath.</p>" + "".join(out))


_COLUMNS = (("id", 0), ("expected", 1), ("extracted", 2), ("code", 3), ("reason", 4), ("completion", 6))


def _row_cells(row: Sequence[Any]) -> str:
    cells = []
    for name, i in _COLUMNS:
        v = row[i]
        if name == "extracted" and v is None:
            v = "nothing"
        elif name == "completion":
            v = "none" if v is None else "⟦" + v + "⟧"
        cls = ' class="pass"' if name == "code" and row[5] else (' class="fail"' if name == "code" else "")
        cells.append(f"<td{cls}>{escape('' if v is None else v)}</td>")
    return "<tr>" + "".join(cells) + "</tr>"


def _sample_note(run: RunData) -> str:
    """What the item table holds when it is not every item: how the rows were chosen, every code it
    leaves out named with its count, and how to see every item."""
    if len(run.rows) == run.n_items:
        return ""
    left = run.left_out
    left_items = sum(left.values()) + run.uncounted
    parts = [f"This table holds {len(run.rows):,} of the run's {run.n_items:,} items."]
    if len(run.rows) < run.n_items - left_items:
        parts.append(
            f"A page holds at most {TABLE_ROWS:,} rows (every item of a larger run would make it too heavy for a "
            "browser): rare outcome codes keep all their items, the most frequent ones an evenly spaced subset "
            "(every 2nd, 4th, 8th... item of the code, in dataset order), so the rows span the whole dataset."
        )
    if left or run.uncounted:
        order = ordered_codes(left)
        named = ", ".join(f"{visible(c)} ({left[c]:,})" for c in order[:NAMED_CODES])
        more = f" and {len(order) - NAMED_CODES:,} more codes" if len(order) > NAMED_CODES else ""
        past = (f"; and {run.uncounted:,} items of codes past the first {MAX_COUNTED_CODES:,} distinct ones, not "
                "counted code by code") if run.uncounted else ""
        parts.append(
            f"Left out entirely: {left_items:,} items of the {len(left):,} codes past the first {MAX_TABLE_CODES:,} "
            f"(a page lists at most that many codes): {named}{more}{past}."
        )
    parts.append("The pass rate above is over every item, and the code list below gives both figures for each code "
                 "it lists.")
    return (
        f'<p class="sample-note">{escape(" ".join(parts))} All items are in '
        f'<code>{escape(run.path)}/results.jsonl</code>, one '
        f"per line; the items of one code, with the scorer's details: "
        f"<code>python -m course.inspect_run --run {escape(run.path)} --code CODE --show 20</code>.</p>"
    )


def _items_table(run: RunData, prefix: str) -> str:
    rows = run.rows
    if not rows:
        return ""
    counts = run.item_counts
    shown_per_code: dict[str, int] = {}
    for r in rows:
        shown_per_code[r[3]] = shown_per_code.get(r[3], 0) + 1
    codes = [c for c in ordered_codes(counts) if c in shown_per_code]

    def option(c: str) -> str:
        label = f"{counts[c]:,}" if shown_per_code[c] == counts[c] else f"{shown_per_code[c]:,} of {counts[c]:,}"
        return f'<option value="{escape(c)}">{escape(c)} ({label})</option>'

    options = "".join(option(c) for c in codes)
    head = "".join(f'<th data-col="{i}" scope="col">{escape(name)}</th>' for name, i in _COLUMNS)
    first = "".join(_row_cells(r) for r in rows[:PAGE_SIZE])
    shown = min(PAGE_SIZE, len(rows))
    of = (
        f"{len(rows):,} (dataset order)" if len(rows) == run.n_items
        else f"the {len(rows):,} in this table (dataset order)"
    )
    return (
        f'<h3>Items</h3>{_sample_note(run)}<div class="items" id="{prefix}-items" data-src="{prefix}-data">'
        '<div class="controls" hidden><label>filter <input class="q" type="search" placeholder="id, answer, code, '
        'reason, completion text"></label> '
        f'<label>code <select class="code"><option value="">all</option>{options}</select></label> '
        '<label>outcome <select class="outcome"><option value="">all</option><option value="pass">pass</option>'
        '<option value="fail">fail</option></select></label> '
        '<button type="button" class="prev">previous</button> <button type="button" class="next">next</button> '
        '<span class="pageinfo"></span> <span class="hint">(click a column heading to sort)</span></div>'
        f'<p class="static-note">Items 1–{shown} of {of}. Filtering, sorting and paging need JavaScript.</p>'
        f'<table class="itemtable"><thead><tr>{head}</tr></thead><tbody>{first}</tbody></table></div>'
        '<script type="application/json" '
        f'id="{prefix}-data">{_json_block({"rows": list(rows), "page": PAGE_SIZE})}</script>'
    )


def _selection(run: RunData) -> str:
    s = run.summary or {}
    out = ["<h3>Selection: more sampling compute, same policy</h3>"]
    p1, bn, gain = s.get("pass_at_1"), s.get("best_of_n"), s.get("selection_gain")
    lines = []
    if isinstance(p1, dict) and p1.get("n"):
        lines.append(escape(pass_rate_line(p1["passed"], p1["n"], "pass@1 (sample 0)")))
    if isinstance(bn, dict) and bn.get("n"):
        lines.append(escape(pass_rate_line(bn["passed"], bn["n"], f"best-of-{s.get('N', '?')}")))
    if isinstance(gain, dict):
        lines.append(escape(f"gain {points(gain.get('pass_rate', 0), signed=True)} points: {gain.get('label', '')}; "
                       f"{gain.get('items_rescued', 0)} items rescued, {gain.get('items_lost', 0)} lost"))
    if lines:
        out.append("<p>" + "<br>".join(lines) + "</p>")
    curve = s.get("pass_at_k_curve")
    if isinstance(curve, dict) and curve.get("rows"):
        rows = curve["rows"]
        keys = (("pass_at_k", "pass@k (unbiased)", False), ("pass_hat_k", "pass^k (all k pass)", False),
                ("first_k", "first-k (stored order)", True), ("plug_in", "plug-in 1-(1-c/n)^k (biased)", True))
        series = [Series(label, tuple((r["k"], r[key]) for r in rows), dashed=dashed, markers=True)
                  for key, label, dashed in keys if all(key in r for r in rows)]
        out.append(line_chart(series, title=f"pass@k, pass^k and first-k over k (from {curve.get('samples_per_item')} "
                                            "samples per item)",
                              x_label="k (samples)", y_label="share of items", y_range=(0.0, 1.0)))
        out.append(_numbers_table(["k"] + [k for k, _, _ in keys],
                                  [[r["k"]] + [r.get(k) for k, _, _ in keys] for r in rows]))
        est = curve.get("estimators")
        if isinstance(est, dict):
            out.append(_dl([(k, escape(v)) for k, v in sorted(est.items())]))
    still = s.get("still_failing")
    if isinstance(still, dict) and still.get("count"):
        out.append(f"<p>{still['count']} items ({escape(_pct(still.get('share')))}) have no passing sample "
                   "among the N; first examples:</p>")
        body = "".join(
            f"<tr><td>{escape(x.get('id'))}</td><td>{escape(x.get('expected'))}</td>"
            f"<td>{escape(', '.join(map(str, x.get('codes', []))))}</td>"
            f"<td><code>⟦{escape(visible(x.get('chosen_completion'), limit=TABLE_COMPLETION_LIMIT))}⟧</code></td>"
            f"<td>{escape(x.get('first_passing_index'))}</td></tr>" for x in still.get("examples", [])
        )
        out.append("<table><thead><tr><th>id</th><th>expected</th><th>codes of the N</th><th>chosen completion</th>"
                   f"<th>first passing sample in the pack</th></tr></thead><tbody>{body}</tbody></table>")
    return "".join(out)


def _bandit(run: RunData) -> str:
    recs = [r for r in run.records if "probs" in r]
    if not recs:
        return "<p>The log holds no steps.</p>"
    actions = run.manifest.get("actions") or [f"action {i}" for i in range(len(recs[0]["probs"]))]
    rewards = run.manifest.get("rewards") or []
    j = _thin([(r["step"], r["expected_reward"]) for r in recs])
    last = recs[-1]
    end = (last["step"], last.get("expected_reward_after", last["expected_reward"]))
    sampled = _thin([(r["step"], r["reward"]) for r in recs])
    chart_j = line_chart(
        [Series("exact J(θ) = Σ π(a) R(a)", j + (end,)), Series("sampled reward R", sampled, line=False)],
        title="Expected reward J over steps (the quantity REINFORCE climbs)",
        x_label="step", y_label="reward", y_range=(0.0, 1.0))
    probs = [
        Series(f"π({visible(str(a))}) R={rewards[i] if i < len(rewards) else '?'}",
               _thin([(r["step"], r["probs"][i]) for r in recs]), dashed=bool(i < len(rewards) and not rewards[i]))
        for i, a in enumerate(actions)
    ]
    chart_p = line_chart(probs, title="Probability of each action over steps", x_label="step", y_label="probability",
                         y_range=(0.0, 1.0), height=320)
    res = run.manifest.get("result") or {}
    text = ""
    if res:
        text = (f"<p>J(θ) {_num(res.get('initial_expected_reward'))} at the start → "
                f"{_num(res.get('final_expected_reward'))} after {len(recs)} steps "
                f"(lr {escape(run.manifest.get('lr'))}, "
                f"baseline {escape(run.manifest.get('baseline'))}).</p>")
    table = _numbers_table(["step", "action", "reward", "baseline", "advantage", "J before", "J after"],
                           [[r["step"], visible(str(r.get("action_text", r.get("action")))), r["reward"],
                             r.get("baseline"), r.get("advantage"), r["expected_reward"],
                             r.get("expected_reward_after")] for r in recs[:500]],
                           summary="the steps (first 500)")
    return text + chart_j + chart_p + table


def _toy_mdp(run: RunData) -> str:
    recs = [r for r in run.records if "pi1" in r]
    if not recs:
        return "<p>The log holds no episodes.</p>"
    m = run.manifest
    out = []
    rewards = m.get("rewards")
    if isinstance(rewards, list) and len(rewards) == 2:
        out.append("<table class=\"small\"><caption>Reward R(a1, a2), given only at the "
                   "end</caption><thead><tr><th></th>"
                   "<th>a2 = 0</th><th>a2 = 1</th></tr></thead><tbody>"
                   + "".join(f"<tr><th>a1 = {i}</th>" + "".join(f"<td>{escape(_num(v))}</td>" for v in row) + "</tr>"
                             for i, row in enumerate(rewards)) + "</tbody></table>")
    last = recs[-1]
    j = _thin([(r["episode"], r["expected_return"]) for r in recs]) + (
        (last["episode"], last.get("expected_return_after", last["expected_return"])),)
    out.append(line_chart(
        [Series("exact J(θ) (expected return)", j),
         Series("sampled return G", _thin([(r["episode"], r["return"]) for r in recs]), line=False)],
        title="Expected return over episodes", x_label="episode", y_label="return", y_range=(0.0, 1.0)))
    series = [Series("π1(a1=1): first decision", _thin([(r["episode"], r["pi1"][1]) for r in recs]))]
    for a1 in (0, 1):
        series.append(
            Series(f"π2(a2=0 | a1={a1})", _thin([(r["episode"], r["pi2"][a1][0]) for r in recs]), dashed=True)
        )
    out.append(line_chart(series, title="Probabilities over episodes: the first action learns from the final reward",
                          x_label="episode", y_label="probability", y_range=(0.0, 1.0)))
    res = m.get("result") or {}
    if res:
        out.append(f"<p>Expected return {_num(res.get('initial_expected_return'))} → "
                   f"{_num(res.get('final_expected_return'))} "
                   f"after {len(recs)} episodes (lr {escape(m.get('lr'))}, baseline {escape(m.get('baseline'))}).</p>")
    return "".join(out)


def _kl(run: RunData) -> str:
    rows = run.table
    if not rows:
        return "<p>kl_tradeoff.csv is empty.</p>"

    def f(row: Mapping[str, str], key: str) -> float:
        try:
            return float(row[key])
        except (KeyError, ValueError):
            return math.nan

    rows_sorted = sorted(rows, key=lambda r: f(r, "kl"))
    frontier = Series("closed-form optimum π ∝ π_ref·exp(r/β)",
                      tuple((f(r, "kl"), f(r, "expected_reward")) for r in rows_sorted),
                      markers=True, labels=tuple(f"β={r.get('beta')}" for r in rows_sorted))
    out = [line_chart([frontier], title="The KL frontier: expected reward against KL(π‖π_ref)",
                      x_label="KL(π‖π_ref) in nats", y_label="E_π[r]", height=320)]
    cols = run.manifest.get("columns") or {}
    pcols = [k for k in rows[0] if k.startswith("p_")]
    betas = [r for r in rows if f(r, "beta") > 0]
    series = [Series(f"π({visible(str(cols.get(k, k)))})", tuple((f(r, "beta"), f(r, k)) for r in betas), markers=True)
              for k in pcols]
    out.append(line_chart(series, title="Probability of each completion at the optimum, by β", x_label="β",
                          y_label="probability", y_range=(0.0, 1.0), x_log=True, height=320))
    headers = list(rows[0].keys())
    out.append(_numbers_table(headers, [[r[h] for h in headers] for r in rows], summary="kl_tradeoff.csv"))
    return "".join(out)


def _alarm_marks(records: Sequence[Mapping[str, Any]]) -> list[Mark]:
    marks = []
    for r in records:
        ev = r.get("eval")
        if isinstance(ev, dict) and ev.get("goodhart_alarm"):
            marks.append(Mark(float(ev.get("step", r.get("step", 0))), "GOODHART ALARM"))
    return marks


def _rl_run(run: RunData, prefix: str) -> str:
    s = run.summary or {}
    steps = [r for r in run.records if "reward" in r]
    evals = [r["eval"] for r in run.records if isinstance(r.get("eval"), dict)]
    rubric = str(s.get("rubric", run.manifest.get("settings", {}).get("rubric", "?")))
    marks = _alarm_marks(run.records)
    out = [f"<p>Rubric <code>{escape(rubric)}</code>, β {escape(s.get('beta'))}, seed {escape(s.get('seed'))}, "
           f"{escape(s.get('steps'))} steps; "
           f"π0 <code>{escape(s.get('pi0'))}</code> → <code>{escape(s.get('final_policy'))}</code>.</p>"]
    alarms = s.get("goodhart_alarms") or []
    if alarms:
        items = "".join(f"<li>{escape(a)}</li>" for a in alarms)
        out.append('<div class="alarm"><strong>GOODHART ALARM</strong>: the training reward rose while the strict pass '
                   "rate on the fixed slice fell.<ul>" + items + "</ul></div>")
    else:
        out.append('<p class="good">No Goodhart alarm was raised.</p>')
    if steps:
        out.append(f'<span id="{prefix}-curves"></span>')
        out.append(line_chart(
            [Series(f"training reward ({rubric}), per step", _thin([(r["step"], r["reward"]) for r in steps]),
                    color="#E69F00", dashed=True),
             Series(f"{rubric} reward, fixed dev slice", tuple((x["step"], x["slice_rubric_reward"]) for x in evals),
                    color="#D55E00", markers=True),
             Series("STRICT pass rate, fixed dev slice", tuple((x["step"], x["slice_strict_pass"]) for x in evals),
                    color="#0072B2", markers=True),
             Series("strict pass of the training samples", _thin([(r["step"], r["strict_pass_train"]) for r in steps]),
                    color="#56B4E9")],
            title="Proxy reward vs the strict goal", x_label="step", y_label="rate", y_range=(0.0, 1.0), marks=marks))
        out.append(line_chart(
            [Series("KL to π0 per token (k3)", _thin([(r["step"], r["kl_k3_per_token"]) for r in steps])),
             Series("KL to π0 per token (k1)", _thin([(r["step"], r["kl_k1_per_token"]) for r in steps]), dashed=True),
             Series("entropy per token (nats)", _thin([(r["step"], r["entropy_per_token"]) for r in steps]))],
            title="Drift from π0 and entropy", x_label="step", y_label="nats per token", marks=marks))
        codes = sorted({c for r in steps for c in r.get("strict_codes", {})})
        codes = sorted(codes, key=lambda c: -sum(r.get("strict_codes", {}).get(c, 0.0) for r in steps))[:7]
        out.append(line_chart(
            [Series(c, _thin([(r["step"], r.get("strict_codes", {}).get(c, 0.0)) for r in steps])) for c in codes],
            title="Strict verdicts of the training samples (share per code)",
            x_label="step", y_label="share", y_range=(0.0, 1.0),
            marks=marks, height=320))
        out.append(_numbers_table(
            ["step", "reward", "strict pass (train)", "KL k3/token", "entropy/token", "example completion"],
            [[r["step"], r["reward"], r.get("strict_pass_train"), r.get("kl_k3_per_token"), r.get("entropy_per_token"),
              "⟦" + visible(r.get("example", ""), limit=TABLE_COMPLETION_LIMIT) + "⟧"] for r in steps],
            summary="every step, with one sampled completion"))
    h = s.get("holdout")
    if isinstance(h, dict):
        lines = []
        for tag in ("pi0", "final"):
            x = h.get(tag)
            if isinstance(x, dict):
                # runs written before the item-clustered interval recorded a Wilson one over the samples
                clustered = "pass_at_1_ci95" in x
                lo, hi = (x.get("pass_at_1_ci95" if clustered else "pass_at_1_wilson95") or [None, None])[:2]
                method = "95%, items as the unit" if clustered else "Wilson 95% as if the samples were independent"
                lines.append(f"holdout {tag}: <code>{escape(x.get('policy'))}</code> "
                             f"pass@1 {escape(_num(x.get('pass_at_1')))} "
                             f"({method} {escape(_num(lo))}–{escape(_num(hi))}, {escape(x.get('samples'))} samples)")
        if "lift_pass_at_1" in h:
            lo, hi = (h.get("lift_paired_bootstrap95") or [None, None])[:2]
            lines.append(f"lift {escape(_num(h['lift_pass_at_1']))} "
                         f"(paired bootstrap 95% {escape(_num(lo))} to {escape(_num(hi))}); "
                         f"gate as recorded: {escape((h.get('gate') or {}).get('verdict'))}")
        out.append("<h3>Holdout: π0 against the trained policy</h3><p>" + "<br>".join(lines) + "</p>")
    if run.gate is not None:
        out.append(render_gate(run.gate, f"{prefix}-gate"))
    for j, sub in enumerate(run.sub_runs):
        out.append(f'<section class="subrun" id="{prefix}-s{j}"><h3>{escape(sub.path)}</h3>'
                   f'{_scoring(sub, f"{prefix}s{j}")}</section>')
    for name, text in run.texts.items():
        out.append(f"<details><summary>{escape(name)}</summary><pre>{escape(text)}</pre></details>")
    return "".join(out)


def _scoring(run: RunData, prefix: str) -> str:
    parts = [f'<div id="{prefix}-result">' + _pass_rate(run.summary or {}) + "</div>"]
    if run.kind == "selection":
        parts.append(f'<div id="{prefix}-selection">' + _selection(run) + "</div>")
    parts.append(_taxonomy(run, prefix))
    parts.append(_items_table(run, prefix))
    return "".join(parts)


def _ablation(run: RunData, prefix: str) -> str:
    return "<h3>Baseline ablation</h3>" + "".join(f"<pre>{escape(t)}</pre>" for t in run.texts.values())


def _noise_sweep(run: RunData, prefix: str) -> str:
    return "<h3>Reward-noise sweep</h3>" + "".join(f"<pre>{escape(t)}</pre>" for t in run.texts.values())


def _sweep(run: RunData, prefix: str) -> str:
    return "<h3>Beta sweep</h3>" + "".join(f"<pre>{escape(t)}</pre>" for t in run.texts.values())


def _other(run: RunData, prefix: str) -> str:
    if run.summary is not None:
        return ("<details open><summary>summary.json</summary>"
                f"<pre>{escape(json.dumps(run.summary, ensure_ascii=False, sort_keys=True, indent=2))}</pre></details>")
    return "<p>No view for this kind of run yet; its manifest is above.</p>"


@dataclass(frozen=True)
class View:
    """How the page shows one kind of run (course.lib.reporting.run_kinds names the kinds and their tools)."""

    # (run dir, kind, manifest, shown path) -> fields
    load: Callable[[Path, str, Mapping[str, Any], str], dict[str, Any]]
    render: Callable[[RunData, str], str]  # (run, its section's id) -> HTML


# The one registry of views: adding a run kind is a RunKind in run_kinds.py and one line here.
VIEWS: dict[str, View] = {
    "eval": View(_load_scoring_run, _scoring),
    "selection": View(_load_scoring_run, _scoring),
    "bandit": View(_load_bandit, lambda run, prefix: _bandit(run)),
    "ablation": View(_load_ablation, _ablation),
    "noise_sweep": View(_load_ablation, _noise_sweep),
    "toy_mdp": View(_load_toy_mdp, lambda run, prefix: _toy_mdp(run)),
    "kl": View(_load_kl, lambda run, prefix: _kl(run)),
    "tinylm_rl": View(_load_rl, _rl_run),
    "llm_rl": View(_load_rl, _rl_run),
    "sweep": View(_load_sweep, _sweep),
    "other": View(_load_other, _other),
}


def _run_body(run: RunData, prefix: str) -> str:
    return VIEWS.get(run.kind, VIEWS["other"]).render(run, prefix)


def _scoring_summary(run: RunData) -> Mapping[str, Any]:
    """The summary of a scoring run (its shape checked by course.lib.records.formats); ``{}`` for any other kind."""
    return (run.summary or {}) if run.kind in ("eval", "selection") else {}


def _headline(run: RunData) -> str:
    s = _scoring_summary(run)
    if s.get("n"):
        return _clustered(s) or pass_rate_line(s["passed"], s["n"])
    return ""


def render_run(run: RunData, prefix: str) -> str:
    """One run's section: header, then the view of its kind."""
    title = f"{KIND_LABEL.get(run.kind, 'Run')}: {run.path}"
    return (f'<section class="run" id="{prefix}"><h2>{escape(title)}</h2>'
            f'{_header(run)}{_run_body(run, prefix)}</section>')


# ---------------------------------------------------------------------------
# Several runs: side by side, and the gate
# ---------------------------------------------------------------------------
def render_comparison(runs: Sequence[RunData]) -> str:
    """A table with one column per run: conditions, pass rate, and every outcome code's count."""
    head = "<th></th>" + "".join(
        f'<th scope="col"><a href="#r{i}">{escape(r.path)}</a></th>' for i, r in enumerate(runs)
    )
    rows: list[tuple[str, list[str]]] = [("tool", [escape(r.manifest.get("tool", "?")) for r in runs])]
    for key in HEADER_KEYS:
        values = [_value(r.manifest, key) for r in runs]
        if all(v is None for v in values):
            continue
        shown = [_show(v) if v is not None else "(absent)" for v in values]
        same = len(set(shown)) == 1
        mark = "" if same else ' class="diff"'
        rows.append((key, [f"<code{mark}>{escape(v if len(v) <= 80 else v[:77] + '…')}</code>" for v in shown]))
    rows.append(("pass rate", [escape(_headline(r) or "–") for r in runs]))
    codes: dict[str, int] = {}
    for r in runs:
        for c, n in (_scoring_summary(r).get("counts") or {}).items():
            codes[c] = codes.get(c, 0) + n
    for c in ordered_codes(codes):
        cells = []
        for r in runs:
            s = _scoring_summary(r)
            n = (s.get("counts") or {}).get(c)
            cells.append("–" if n is None else f"{n:,} ({escape(percent(n / s['n']))})" if s.get("n") else str(n))
        rows.append((c, cells))
    body = "".join(f"<tr><th>{escape(k)}</th>" + "".join(f"<td>{v}</td>" for v in vals) + "</tr>" for k, vals in rows)
    return (f'<section id="compare"><h2>Side by side</h2><table class="compare"><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table><p class=\"hint\">Values that differ between runs are marked.</p></section>")


def render_gate(gate: Mapping[str, Any], anchor: str) -> str:
    """The gate's decision as course.gate reaches it: Locked Room fields, the paired table, McNemar p, the decision."""
    title = f"Gate: candidate {gate.get('candidate')} against baseline {gate.get('baseline')}"
    if gate.get("error"):
        return (f'<section class="gate" id="{escape(anchor)}"><h2>{escape(title)}</h2>'
                f'<p class="bad">The gate cannot compare these runs: {escape(gate["error"])}</p></section>')
    result = gate["result"]
    decision = str(result.get("decision"))
    cls = "accept" if decision == "ACCEPT" else "reject"
    out = [f'<section class="gate" id="{escape(anchor)}"><h2>{escape(title)}</h2>',
           f'<p class="decision {cls}">'
           + "<br>".join(escape(line) for line in gate.get("decision_lines", [f"Decision: {decision}"]))
           + "</p>",
           "<h3>Locked Room</h3><table class=\"locked\"><thead><tr><th></th><th>field</th><th>baseline</th>"
           "<th>candidate</th>"
           "<th>what it means</th></tr></thead><tbody>"]
    for row in gate.get("rows", []):
        if not row.get("compared", True):
            sym, rcls = "–", "skip"
        elif row.get("same"):
            sym, rcls = "✓", "same"
        else:
            sym, rcls = "✗", "differs"
        out.append(f'<tr class="{rcls}"><td class="sym">{sym}</td><td><code>{escape(row["field"])}</code></td>'
                   f'<td><code>{escape(row["baseline"])}</code></td><td><code>{escape(row["candidate"])}</code></td>'
                   f'<td>{escape(row["meaning"])}'
                   f'{" (not compared here)" if not row.get("compared", True) else ""}</td></tr>')
    out.append("</tbody></table>")
    for text in gate.get("explanations", []):
        out.append(f'<p class="bad">→ {escape(text)}.</p>')
    base, cand = result.get("baseline", {}), result.get("candidate", {})
    out.append("<p>" + "<br>".join(
        escape(pass_rate_line(x["passed"], x["n"], label))
        for label, x in (("baseline", base), ("candidate", cand)) if x.get("n")) + "</p>")
    t = result.get("paired")
    if t and t.get("method") == "per-item pass rates":  # multi-sample runs: the items are the unit
        facts = [("shared items", escape(t["shared"])),
                 ("items whose pass rate is higher / lower / equal",
                  escape(f"{t['higher']} / {t['lower']} / {t['equal']}")),
                 ("change (candidate − baseline)",
                  escape(points(result['delta'], signed=True, unit=" points"))
                  if result.get("delta") is not None else "–"),
                 ("the bar (--min-delta)", escape(points(result['min_delta'], signed=True, unit=" points"))),
                 ("require significance", escape(result.get("require_significance")))]
        if t.get("shared"):
            lo, hi = t["difference_ci95"]
            facts.append(("sign-flip test over items, p",
                          f'<strong class="mcnemar">{escape(format(t["p_value"], ".3g"))}</strong>'))
            facts.append(("95% interval for the change (from the same test)",
                          escape(f"{points(lo, signed=True)} to {points(hi, signed=True)} points")))
        out.append("<h3>Paired over the shared items (each item's pass rate)</h3>" + _dl(facts))
        if gate.get("noise"):
            out.append(f"<p>{escape(gate['noise'])}</p>")
    elif t:
        out.append(
            "<h3>Paired over the shared items</h3><table class=\"paired\"><thead><tr><th></th><th>candidate passes</th>"
            "<th>candidate fails</th></tr></thead><tbody>"
            f"<tr><th>baseline passes</th><td>{t['both']} (both)</td><td>{t['b']} (b)</td></tr>"
            f"<tr><th>baseline fails</th><td>{t['c']} (c)</td><td>{t['neither']} (neither)</td></tr></tbody></table>")
        facts = [("shared items", escape(t["shared"])),
                 ("change (candidate − baseline)",
                  escape(points(result['delta'], signed=True, unit=" points"))
                  if result.get("delta") is not None else "–"),
                 ("the bar (--min-delta)", escape(points(result['min_delta'], signed=True, unit=" points"))),
                 ("require significance", escape(result.get("require_significance")))]
        if t.get("shared"):
            lo, hi = t["difference_ci95"]
            facts.append(("exact McNemar p",
                          f'<strong class="mcnemar">{escape(format(t["mcnemar_p"], ".3g"))}</strong>'))
            facts.append(("95% interval for the change (Newcombe)",
                          escape(f"{points(lo, signed=True)} to {points(hi, signed=True)} points")))
        if t.get("only_in_baseline") or t.get("only_in_candidate"):
            facts.append(("ids in one run only", escape(f"{t['only_in_baseline']} baseline, "
                                                   f"{t['only_in_candidate']} candidate")))
        out.append(_dl(facts))
        if gate.get("noise"):
            out.append(f"<p>{escape(gate['noise'])}</p>")
    else:
        out.append("<p>No delta is computed: the Locked Room is violated, so the pass rates are not comparable.</p>")
    if gate.get("text"):
        out.append(f"<details><summary>as course.gate prints it</summary><pre>{escape(gate['text'])}</pre></details>")
    out.append("</section>")
    return "".join(out)


# ===========================================================================
# The page
# ===========================================================================
# A backslash at the end of a line joins the next one on: long rules wrap in the source, the page's bytes do not change.
_CSS = """
:root{--fg:#1b1b1b;--muted:#5a5a5a;--line:#d0d0d0;--ok:#1a7f37;--bad:#b3261e;--accent:#0072B2;--bg2:#f5f6f8}
*{box-sizing:border-box}body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);\
margin:0 auto;max-width:1100px;padding:16px 20px 60px}
h1{font-size:1.5em;margin:.2em 0}h2{font-size:1.25em;border-bottom:2px solid var(--line);padding-bottom:4px;margin-top:\
1.8em}h3{font-size:1.05em;margin:1.2em 0 .4em}
code,pre,.completion{font-family:ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:13px}
pre{background:var(--bg2);padding:8px;overflow:auto;max-height:420px;white-space:pre-wrap;word-break:break-all}
dl.kv{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:.3em 0}dl.kv dt{color:var(--muted)}\
dl.kv dd{margin:0;word-break:break-all}
.passrate{font-size:1.35em;margin:.6em 0 .2em}.good{color:var(--ok)}.bad{color:var(--bad)}\
.hint,.files,.static-note,.more{color:var(--muted);font-size:.9em}
svg{max-width:100%;height:auto;display:block;margin:8px 0}svg .grid{stroke:#e3e3e3}svg .frame{fill:none;stroke:#999}\
svg text{font:11px system-ui,sans-serif;fill:#333}
svg .ct{font-size:13px;font-weight:600}svg .axis{font-size:12px}svg .leg{font-size:11px}\
svg .pl{font-size:10px;fill:#555}svg .mark{font-size:11px;font-weight:700}
.cibar .track{fill:#e8e8e8}.cibar .ci{fill:#9ecae1}.cibar .pt{fill:var(--accent)}
.taxonomy details.bar{border-bottom:1px solid #eee}\
.taxonomy summary{display:grid;grid-template-columns:190px 1fr 120px;gap:10px;align-items:center;cursor:pointer;\
padding:3px 0}
.taxonomy .meaning{grid-column:1/4;color:var(--muted);font-size:.85em;margin:-2px 0 2px 20px}\
.taxonomy .code{font-family:ui-monospace,monospace;font-size:13px}
.track{display:block;background:#f0f0f0;height:14px;border-radius:2px}\
.fill{display:block;height:14px;border-radius:2px;background:var(--bad)}.bar.ok .fill{background:var(--ok)}
.num{text-align:right;font-variant-numeric:tabular-nums}\
.ex{margin:6px 0 10px 20px;padding:6px 10px;border-left:3px solid var(--line)}.exid{font-weight:600}
.ex pre{margin:0;max-height:200px}
table{border-collapse:collapse;margin:6px 0;font-size:13.5px}\
th,td{border:1px solid var(--line);padding:3px 7px;text-align:left;vertical-align:top}thead th{background:var(--bg2)}
.itemtable{width:100%;table-layout:fixed}.itemtable td{overflow:hidden;text-overflow:ellipsis;word-break:break-all}\
.itemtable td:nth-child(6){font-family:ui-monospace,monospace;font-size:12.5px}
.itemtable th{cursor:pointer;user-select:none}.itemtable th[aria-sort=ascending]::after{content:" ▲"}\
.itemtable th[aria-sort=descending]::after{content:" ▼"}
.itemtable th:nth-child(1){width:11%}.itemtable th:nth-child(2),.itemtable th:nth-child(3){width:8%}\
.itemtable th:nth-child(4){width:13%}.itemtable th:nth-child(5){width:30%}
td.pass{color:var(--ok)}td.fail{color:var(--bad)}\
.controls{margin:6px 0;display:flex;flex-wrap:wrap;gap:8px;align-items:center}.controls input{width:22em}
.decision{font-size:1.2em;font-weight:700;padding:8px 12px;border-radius:4px}\
.decision.accept{background:#e6f4ea;color:var(--ok)}.decision.reject{background:#fce8e6;color:var(--bad)}
.locked td.sym{font-weight:700;text-align:center}.locked tr.same td.sym{color:var(--ok)}\
.locked tr.differs td.sym{color:var(--bad)}.locked tr.differs{background:#fff4f2}.locked tr.skip{color:var(--muted)}
table.locked,table.compare{width:100%;table-layout:fixed}\
table.locked code,table.compare code,table.compare td{word-break:break-all}.locked th:nth-child(1){width:2.2em}\
.locked th:nth-child(2){width:17%}.locked th:nth-child(3),.locked th:nth-child(4){width:28%}\
.compare th:first-child{width:190px}
code.diff{background:#fff1c2}.alarm{background:#fce8e6;border:1px solid var(--bad);padding:8px 12px;border-radius:4px}
nav ul{margin:.2em 0;padding-left:1.2em}section.subrun{border-left:3px solid var(--line);padding-left:12px}
"""

# The table script: reads the JSON block, filters/sorts/pages, writes cells with textContent only (no HTML from data).
# Adjacent raw strings make one script (split only to keep source lines short; raw, so "\u2013" reaches the browser).
_JS = (r"""(function(){"use strict";
function cell(tr,text,cls){var td=document.createElement("td");td.textContent=text;if(cls){td.className=cls;}"""
r"""tr.appendChild(td);}
function cmp(x,y){if(x===y){return 0;}if(x===null){return 1;}if(y===null){return -1;}
if(typeof x==="number"&&typeof y==="number"){return x-y;}x=String(x);y=String(y);return x<y?-1:(x>y?1:0);}
var boxes=document.querySelectorAll("div.items");
Array.prototype.forEach.call(boxes,function(box){
var src=document.getElementById(box.getAttribute("data-src"));if(!src){return;}
var data=JSON.parse(src.textContent),rows=data.rows,size=data.page||50;
var tbody=box.querySelector("tbody"),q=box.querySelector("input.q"),code=box.querySelector("select.code"),
outcome=box.querySelector("select.outcome"),info=box.querySelector(".pageinfo"),prev=box.querySelector("button.prev"),
next=box.querySelector("button.next"),ths=box.querySelectorAll("th[data-col]");
var hay=null,view=[],sortCol=-1,sortDir=1,page=0;
function haystack(){if(hay===null){hay=rows.map(function(r){return [r[0],r[1],r[2]===null?"nothing":r[2],r[3],r[4],"""
r"""r[6]].join("\u0001").toLowerCase();});}return hay;}
function draw(){var frag=document.createDocumentFragment(),start=page*size,end=Math.min(view.length,start+size);
for(var i=start;i<end;i++){var r=rows[view[i]],tr=document.createElement("tr");
cell(tr,r[0]);cell(tr,r[1]===null?"":String(r[1]));cell(tr,r[2]===null?"nothing":String(r[2]));"""
r"""cell(tr,r[3],r[5]?"pass":"fail");
cell(tr,r[4]);cell(tr,r[6]===null?"none":"\u27e6"+r[6]+"\u27e7");frag.appendChild(tr);}
tbody.textContent="";tbody.appendChild(frag);
info.textContent=view.length?("items "+(start+1)+"\u2013"+end+" of "+view.length+"""
r"""(view.length<rows.length?" (filtered from "+rows.length+")":"")):"no item matches";
prev.disabled=page===0;next.disabled=end>=view.length;}
function compute(){var t=q.value.toLowerCase(),c=code.value,o=outcome.value,h=t?haystack():null,out=[];
for(var i=0;i<rows.length;i++){var r=rows[i];if(c&&r[3]!==c){continue;}if(o==="pass"&&!r[5]){continue;}"""
r"""if(o==="fail"&&r[5]){continue;}
if(t&&h[i].indexOf(t)<0){continue;}out.push(i);}
if(sortCol>=0){out.sort(function(a,b){return cmp(rows[a][sortCol],rows[b][sortCol])*sortDir||a-b;});}
view=out;page=0;draw();}
q.addEventListener("input",compute);code.addEventListener("change",compute);outcome.addEventListener("change",compute);
prev.addEventListener("click",function(){if(page>0){page--;draw();}});
next.addEventListener("click",function(){if((page+1)*size<view.length){page++;draw();}});
Array.prototype.forEach.call(ths,function(th){th.tabIndex=0;function go(){var col=+th.getAttribute("data-col");
sortDir=(sortCol===col)?-sortDir:1;sortCol=col;"""
r"""Array.prototype.forEach.call(ths,function(o){o.removeAttribute("aria-sort");});
th.setAttribute("aria-sort",sortDir>0?"ascending":"descending");compute();}
th.addEventListener("click",go);th.addEventListener("keydown",function(ev){if(ev.key==="Enter"){go();}});});
box.querySelector(".controls").hidden=false;var note=box.querySelector(".static-note");if(note){note.hidden=true;}
box.setAttribute("data-ready","1");compute();});
})();""")

_SCRIPT_HASH = base64.b64encode(hashlib.sha256(_JS.encode("utf-8")).digest()).decode("ascii")
# Nothing may load: no network, no file, no frame; only the inline styles and the one script above (by hash).
CSP = (f"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{_SCRIPT_HASH}'; img-src data:; "
       "base-uri 'none'; form-action 'none'")


def page_title(runs: Sequence[RunData]) -> str:
    """The <title>: what the page shows, with the headline figure of a single run."""
    if len(runs) == 1:
        r = runs[0]
        head = _headline(r)
        return f"{KIND_LABEL.get(r.kind, 'Run')} report: {r.path}" + (f" — {head.split(' (')[0]}" if head else "")
    return f"Comparison of {len(runs)} runs: " + " vs ".join(r.path for r in runs)


def render_report(runs: Sequence[RunData], gates: Sequence[Mapping[str, Any]] = ()) -> str:
    """The whole page as one string (pure: equal arguments give equal bytes)."""
    if not runs:
        raise CourseError("render_report needs at least one run")
    title = page_title(runs)
    nav = []
    if len(runs) > 1:
        nav.append('<li><a href="#compare">Side by side</a></li>')
    nav += [f'<li><a href="#gate-{i}">Gate: {escape(g.get("candidate"))} vs '
            f'{escape(g.get("baseline"))}</a></li>' for i, g in enumerate(gates)]
    nav += [f'<li><a href="#r{i}">{escape(KIND_LABEL.get(r.kind, "Run"))}: {escape(r.path)}</a></li>'
            for i, r in enumerate(runs)]
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{escape(CSP)}">',
        f'<meta name="generator" content="{GENERATOR}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{escape(title)}</h1>",
        '<p class="hint">Written by <code>python -m course.report</code>. Self-contained: it loads nothing, '
        'and it reads '
        "without JavaScript (the script only filters, sorts and pages the item tables).</p>",
        "<nav><ul>" + "".join(nav) + "</ul></nav>" if len(nav) > 1 else "",
    ]
    if len(runs) > 1:
        parts.append(render_comparison(runs))
    for i, g in enumerate(gates):
        parts.append(render_gate(g, f"gate-{i}"))
    for i, r in enumerate(runs):
        parts.append(render_run(r, f"r{i}"))
    parts.append(f"<script>{_JS}</script></body></html>\n")
    return "\n".join(p for p in parts if p)


# ===========================================================================
# Writing
# ===========================================================================
def default_output(run_paths: Sequence[str | os.PathLike[str]]) -> Path:
    """One run: ``RUN_DIR/report.html``. Several: ``compare_<a>_vs_<b>.html`` beside the first run.

    >>> default_output(["runs/eval_001"]).as_posix()
    'runs/eval_001/report.html'
    >>> default_output(["runs/a", "runs/b"]).as_posix()
    'runs/compare_a_vs_b.html'
    """
    paths = [Path(p) for p in run_paths]
    if len(paths) == 1:
        return paths[0] / REPORT_NAME
    name = "compare_" + "_vs_".join(p.resolve().name if p.name in ("", ".", "..") else p.name for p in paths)
    return paths[0].parent / (name[:200] + ".html")


def is_report_file(path: str | os.PathLike[str]) -> bool:
    """True when the file at ``path`` was written by this tool (its generator tag is in the first 2 KB)."""
    try:
        with open_input(path, "a report") as f:  # never blocks: a FIFO is not a report
            head = f.read(2048)
    except (OSError, CourseError):
        return False
    return f'<meta name="generator" content="{GENERATOR}">'.encode() in head


def check_output(path: str | os.PathLike[str], *, force: bool = False,
                 runs: Sequence[str | os.PathLike[str]] = ()) -> Path:
    """Refuse an output the page may not be written to; called before any run is read, and again
    by ``write_report``. A page course.report wrote is replaced; any other file needs ``force``,
    and a file inside one of the ``runs`` shown (``results.jsonl``, a user's ``README.md``) is
    never replaced, even with ``force``: the report would destroy what it shows."""
    out = Path(path)
    if out.is_dir():
        raise CourseError(f"{out}: is a directory; give a file name such as {out / REPORT_NAME}")
    if not out.parent.is_dir():
        return out  # nothing there to protect; a missing run is named by the reader, a missing folder by write_report
    problem = output_problem(out)  # a FIFO or a device is never written into, even with --force
    if problem is not None:
        raise CourseError(f"{out}: {problem}")
    if os.path.lexists(out) and not is_report_file(out):
        for run in runs:
            if writes_into(out, run):
                raise CourseError(f"{out}: is a file of the run {run} shown in the report, not a page course.report "
                                  "wrote; the report never replaces it, even with --force; choose another --out")
        if not force:
            raise CourseError(f"{out}: exists and was not written by course.report; pass --force to overwrite it")
    return out


def write_report(path: str | os.PathLike[str], html: str, *, force: bool = False,
                 runs: Sequence[str | os.PathLike[str]] = ()) -> Path:
    """Write atomically (temp file, then rename), after ``check_output`` (again: things may have changed)."""
    out = check_output(path, force=force, runs=runs)
    if not out.parent.is_dir():  # here, not before the work: a missing run is named as such first
        raise CourseError(f"{out.parent}: no such directory")
    write_text_atomic(out, html)  # marked temporary, then one rename (course.lib.records.temporaries)
    return out


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.reporting.html"))
