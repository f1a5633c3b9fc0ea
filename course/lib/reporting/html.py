"""See a run: one self-contained HTML page for one or several run directories (``course.report`` writes it).

    python -m course.report runs/demo_eval_clean                    # -> runs/demo_eval_clean/report.html
    python -m course.report runs/demo_sel_n1 runs/demo_sel_n4       # side by side, with the gate's decision

What this module owns (the page frame; each kind of run is drawn by its module in
``course.lib.reporting.views``):

  * ``load_run(path) -> RunData``: read a run directory of any course tool (or anything
    with a manifest.json) into one frozen record, through the loader of its kind's view;
  * ``render_report(runs, gates) -> str``: the page, a pure function of its
    arguments (the same runs give the same bytes: no clock, no randomness): the
    header of each run, the side-by-side table, the gates, the styles and the script;
  * ``write_report(path, html, force=...)`` and the overwrite rule live in
    ``course.lib.reporting.report_files`` and are named here too.

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
import os
from dataclasses import replace
from pathlib import Path
from typing import Any, Mapping, Sequence

from course.errors import CourseError
from course.lib.evaluation.summary import ordered_codes, pass_rate_line, percent
from course.lib.records.jsonl import read_json
from course.lib.records.manifest import sha256_file
from course.lib.records.shapes import check, value_at
from course.lib.reporting import views
from course.lib.reporting.gate_section import render_gate
from course.lib.reporting.page_parts import COMPLETION_LIMIT, RunData, RunSource, dl, escape, show
from course.lib.reporting.report_files import (
    GENERATOR,
    REPORT_NAME,
    check_output,
    default_output,
    is_report_file,
    write_report,
)
from course.lib.reporting.scoring_sections import clustered_line

__all__ = [
    "RunData", "load_run", "render_report", "write_report", "is_report_file", "default_output", "check_output",
    "with_gate", "render_gate", "HEADER_KEYS", "COMPLETION_LIMIT", "GENERATOR", "REPORT_NAME",
]


# The manifest keys shown in the header: course.gate's Locked Room (LOCKED_FIELDS; a test checks
# they agree) plus what else fixes a measurement (the policy, the rubric, the selection picker).
HEADER_KEYS: tuple[str, ...] = (
    "dataset_fingerprint", "split", "scorer_version", "scorer_fingerprint", "sampling", "prompt_template",
    "selection.n", "selection.rule", "selection.picker_sha256", "rubric", "rubric_version", "policy",
)


# ===========================================================================
# Reading a run directory
# ===========================================================================
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
    kind = views.kind_of(manifest)
    view = views.view_for(kind)
    if view.manifest_shape is not None:
        check(manifest, view.manifest_shape, f"{run}/manifest.json")
    files = tuple(sorted(p.name + ("/" if p.is_dir() else "") for p in run.iterdir() if not p.name.startswith(".")))
    data: dict[str, Any] = {"path": display if display is not None else run.as_posix(), "kind": kind,
                            "manifest": manifest, "files": files}
    data.update(view.load(RunSource(run, kind, manifest, data["path"], load_run)))
    data["warnings"] = _edited_after_the_run(run, manifest) + data.get("warnings", ())
    return RunData(**data)


def with_gate(run: RunData, gate: Mapping[str, Any]) -> RunData:
    """The same run with its internal gate decision attached (tinylm.rl: pi0 vs final on the holdout)."""
    return replace(run, gate=dict(gate))


# ===========================================================================
# Sections
# ===========================================================================
def _header(run: RunData) -> str:
    m = run.manifest
    pairs: list[tuple[str, str]] = []
    for key in HEADER_KEYS:
        value = value_at(m, key)
        if value is None and key == "rubric":
            value = value_at(m, "settings.rubric")
        if value is None and key == "selection.n" and m.get("tool") == "course.eval":
            value = "1 (implicit: course.eval scores one completion per item)"
        if value is not None:
            pairs.append((key, f"<code>{escape(show(value))}</code>"))
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
            pairs.append((key, f"<code>{escape(show(m[key]))}</code>"))
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
        f'<div class="header">{warn}<h3>Locked Room</h3>' + dl(pairs) + "<h3>Provenance</h3>" + dl(prov)
        + f'<details><summary>manifest.json</summary><pre>{escape(manifest_text)}</pre></details>'
        + f'<p class="files">files: {escape(", ".join(run.files))}</p></div>'
    )


def _run_body(run: RunData, prefix: str) -> str:
    return views.view_for(run.kind).render(run, prefix)


def _scoring_summary(run: RunData) -> Mapping[str, Any]:
    """The summary of a scoring run (its shape checked by course.lib.records.formats); ``{}`` for any other kind."""
    return (run.summary or {}) if run.kind in ("eval", "selection") else {}


def _headline(run: RunData) -> str:
    s = _scoring_summary(run)
    if s.get("n"):
        return clustered_line(s) or pass_rate_line(s["passed"], s["n"])
    return ""


def render_run(run: RunData, prefix: str) -> str:
    """One run's section: header, then the view of its kind."""
    title = f"{views.label_of(run.kind)}: {run.path}"
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
        values = [value_at(r.manifest, key) for r in runs]
        if all(v is None for v in values):
            continue
        shown = [show(v) if v is not None else "(absent)" for v in values]
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
        return f"{views.label_of(r.kind)} report: {r.path}" + (f" — {head.split(' (')[0]}" if head else "")
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
    nav += [f'<li><a href="#r{i}">{escape(views.label_of(r.kind))}: {escape(r.path)}</a></li>'
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



if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.reporting.html"))
