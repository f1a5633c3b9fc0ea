"""course.bandit_train's step-by-step runs: J over steps, each action's probability, the steps."""

from __future__ import annotations

from typing import Any

from course.lib.records.formats import BANDIT_MANIFEST, read_bandit_log
from course.lib.reporting.page_parts import RunData, RunKind, RunSource, View, escape, num, numbers_table, thin
from course.lib.reporting.svg import Series, line_chart
from course.lib.visible import visible


def _load(src: RunSource) -> dict[str, Any]:
    actions = src.manifest.get("actions")
    return {"records": read_bandit_log(src.run / "bandit_log.jsonl", None if actions is None else len(actions))}


def _render(run: RunData, prefix: str) -> str:
    recs = [r for r in run.records if "probs" in r]
    if not recs:
        return "<p>The log holds no steps.</p>"
    actions = run.manifest.get("actions") or [f"action {i}" for i in range(len(recs[0]["probs"]))]
    rewards = run.manifest.get("rewards") or []
    j = thin([(r["step"], r["expected_reward"]) for r in recs])
    last = recs[-1]
    end = (last["step"], last.get("expected_reward_after", last["expected_reward"]))
    sampled = thin([(r["step"], r["reward"]) for r in recs])
    chart_j = line_chart(
        [Series("exact J(θ) = Σ π(a) R(a)", j + (end,)), Series("sampled reward R", sampled, line=False)],
        title="Expected reward J over steps (the quantity REINFORCE climbs)",
        x_label="step", y_label="reward", y_range=(0.0, 1.0))
    probs = [
        Series(f"π({visible(str(a))}) R={rewards[i] if i < len(rewards) else '?'}",
               thin([(r["step"], r["probs"][i]) for r in recs]), dashed=bool(i < len(rewards) and not rewards[i]))
        for i, a in enumerate(actions)
    ]
    chart_p = line_chart(probs, title="Probability of each action over steps", x_label="step", y_label="probability",
                         y_range=(0.0, 1.0), height=320)
    res = run.manifest.get("result") or {}
    text = ""
    if res:
        text = (f"<p>J(θ) {num(res.get('initial_expected_reward'))} at the start → "
                f"{num(res.get('final_expected_reward'))} after {len(recs)} steps "
                f"(lr {escape(run.manifest.get('lr'))}, "
                f"baseline {escape(run.manifest.get('baseline'))}).</p>")
    table = numbers_table(["step", "action", "reward", "baseline", "advantage", "J before", "J after"],
                           [[r["step"], visible(str(r.get("action_text", r.get("action")))), r["reward"],
                             r.get("baseline"), r.get("advantage"), r["expected_reward"],
                             r.get("expected_reward_after")] for r in recs[:500]],
                           summary="the steps (first 500)")
    return text + chart_j + chart_p + table


VIEW = View(RunKind("bandit", "Bandit (REINFORCE)", ("course.bandit_train",)), _load, _render, BANDIT_MANIFEST)


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.reporting.views.bandit"))
