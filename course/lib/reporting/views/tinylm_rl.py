"""course.tinylm.rl's runs (Loop C): the proxy reward against the strict goal, drift, the holdout and its gate.

``course.llm.rl`` writes the same run (``course.lib.reporting.views.llm_rl`` reuses this view)."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from course.lib.records.formats import RL_MANIFEST, RL_RECORD, RL_SUMMARY, read_checked_json, read_log
from course.lib.reporting.gate_section import render_gate
from course.lib.reporting.page_parts import (
    TABLE_COMPLETION_LIMIT,
    RunData,
    RunKind,
    RunSource,
    View,
    escape,
    num,
    numbers_table,
    read_text,
    thin,
)
from course.lib.reporting.scoring_sections import scoring_body
from course.lib.reporting.svg import Mark, Series, line_chart
from course.lib.visible import visible


def load_rl(src: RunSource) -> dict[str, Any]:
    """A learning run: summary.json, rl_log.jsonl, its small texts and its course.eval holdout sub-runs."""
    run, path = src.run, src.path
    data: dict[str, Any] = {}
    data["summary"] = read_checked_json(run / "summary.json", RL_SUMMARY, "summary")
    data["records"] = read_log(run / "rl_log.jsonl", RL_RECORD)
    data["texts"] = {name: read_text(run / name) for name in ("shift.md", "gate.txt") if (run / name).is_file()}
    subs = []
    for name in ("eval_pi0_holdout", "eval_final_holdout"):
        if (run / name / "manifest.json").is_file():
            subs.append(src.load_run(run / name, display=f"{path}/{name}"))
    data["sub_runs"] = tuple(subs)
    return data


def _alarm_marks(records: Sequence[Mapping[str, Any]]) -> list[Mark]:
    marks = []
    for r in records:
        ev = r.get("eval")
        if isinstance(ev, dict) and ev.get("goodhart_alarm"):
            marks.append(Mark(float(ev.get("step", r.get("step", 0))), "GOODHART ALARM"))
    return marks


def render_rl(run: RunData, prefix: str) -> str:
    """A learning run: proxy against the strict goal, drift, verdicts, the holdout and its gate, the sub-runs."""
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
            [Series(f"training reward ({rubric}), per step", thin([(r["step"], r["reward"]) for r in steps]),
                    color="#E69F00", dashed=True),
             Series(f"{rubric} reward, fixed dev slice", tuple((x["step"], x["slice_rubric_reward"]) for x in evals),
                    color="#D55E00", markers=True),
             Series("STRICT pass rate, fixed dev slice", tuple((x["step"], x["slice_strict_pass"]) for x in evals),
                    color="#0072B2", markers=True),
             Series("strict pass of the training samples", thin([(r["step"], r["strict_pass_train"]) for r in steps]),
                    color="#56B4E9")],
            title="Proxy reward vs the strict goal", x_label="step", y_label="rate", y_range=(0.0, 1.0), marks=marks))
        out.append(line_chart(
            [Series("KL to π0 per token (k3)", thin([(r["step"], r["kl_k3_per_token"]) for r in steps])),
             Series("KL to π0 per token (k1)", thin([(r["step"], r["kl_k1_per_token"]) for r in steps]), dashed=True),
             Series("entropy per token (nats)", thin([(r["step"], r["entropy_per_token"]) for r in steps]))],
            title="Drift from π0 and entropy", x_label="step", y_label="nats per token", marks=marks))
        codes = sorted({c for r in steps for c in r.get("strict_codes", {})})
        codes = sorted(codes, key=lambda c: -sum(r.get("strict_codes", {}).get(c, 0.0) for r in steps))[:7]
        out.append(line_chart(
            [Series(c, thin([(r["step"], r.get("strict_codes", {}).get(c, 0.0)) for r in steps])) for c in codes],
            title="Strict verdicts of the training samples (share per code)",
            x_label="step", y_label="share", y_range=(0.0, 1.0),
            marks=marks, height=320))
        out.append(numbers_table(
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
                             f"pass@1 {escape(num(x.get('pass_at_1')))} "
                             f"({method} {escape(num(lo))}–{escape(num(hi))}, {escape(x.get('samples'))} samples)")
        if "lift_pass_at_1" in h:
            lo, hi = (h.get("lift_paired_bootstrap95") or [None, None])[:2]
            lines.append(f"lift {escape(num(h['lift_pass_at_1']))} "
                         f"(paired bootstrap 95% {escape(num(lo))} to {escape(num(hi))}); "
                         f"gate as recorded: {escape((h.get('gate') or {}).get('verdict'))}")
        out.append("<h3>Holdout: π0 against the trained policy</h3><p>" + "<br>".join(lines) + "</p>")
    if run.gate is not None:
        out.append(render_gate(run.gate, f"{prefix}-gate"))
    for j, sub in enumerate(run.sub_runs):
        out.append(f'<section class="subrun" id="{prefix}-s{j}"><h3>{escape(sub.path)}</h3>'
                   f'{scoring_body(sub, f"{prefix}s{j}")}</section>')
    for name, text in run.texts.items():
        out.append(f"<details><summary>{escape(name)}</summary><pre>{escape(text)}</pre></details>")
    return "".join(out)


VIEW = View(RunKind("tinylm_rl", "Tiny LM RL", ("course.tinylm.rl",)), load_rl, render_rl, RL_MANIFEST,
            holdout_gate=True)


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.reporting.views.tinylm_rl"))
