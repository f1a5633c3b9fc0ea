"""What a Loop C run tells a person: the stdout report, the stderr story line, curves.csv and curves.png.

The runs of ``course.lib.learning.rl_loop`` (``python -m course.tinylm.rl`` on the tiny LM,
``python -m course.llm.rl`` on the real LLM) share these, so both read the same.

Pure functions of the run's records (``rl_log.jsonl`` lines, the summary), so a
test reads them without training anything::

    from course.lib.reporting.rl_report import report_lines, write_curves
    print("\n".join(report_lines(summary, "runs/rl_strict")))
    write_curves(run_dir, records, "strict")      # curves.csv, and curves.png

The command is ``python -m course.tinylm.rl`` (it calls these). Every figure is
formatted in one place here, so no two outputs can state it differently.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any, Sequence

from course.lib.evaluation.summary import points
from course.lib.reporting.plotting import plot_to
from course.lib.visible import visible

# Codes shown as curves (strict scorer, share of training samples); the rest are summed as "other".
CURVE_CODES = (
    "ok", "wrong_answer", "trailing_text", "multiple_lines", "missing_prefix", "prefix_spacing", "prefix_case"
)


def story_line(rec: dict[str, Any], rubric: str, elapsed: float) -> str:
    """One readable stderr line per few steps."""
    codes = rec["strict_codes"]
    top = sorted(((v, k) for k, v in codes.items() if k != "ok"), reverse=True)[:2]
    slips = ", ".join(f"{k} {v:.0%}" for v, k in top) or "none"
    return (
        f"step {rec['step']:3d} | {rubric} reward {rec['reward']:.2f} | strict ok {rec['strict_pass_train']:.0%} "
        f"| KL/token k1 {rec['kl_k1_per_token']:+.4f} k3 {rec['kl_k3_per_token']:.4f} | entropy/token "
        f"{rec['entropy_per_token']:.3f} "
        f"| no-signal groups {rec['no_signal_groups']:.0%} (samples with signal {rec.get('pg_samples', '?')}) | "
        f"truncated {rec['truncated_share']:.0%} "
        f"| several numbers {rec['multi_number_share']:.0%} | top slips: {slips} "
        f"| e.g. {rec['example']!r} | {elapsed:.0f}s"
    )


def tail_means(records: list[dict[str, Any]], k: int) -> dict[str, float]:
    """Means of the last ``k`` training steps (one step is noisy)."""
    steps = [r for r in records if "reward" in r][-k:]
    keys = ("reward", "strict_pass_train", "kl_k1_per_token", "kl_k3_per_token", "kl_k1_per_sample",
            "entropy_per_token", "no_signal_groups", "truncated_share", "multi_number_share")
    return {key: round(sum(r[key] for r in steps) / len(steps), 6) for key in keys} | {"over_last_steps": len(steps)}


# Smoothing of the per-step training reward: a trailing mean, so that step t's value uses only
# steps <= t (what a person watching the log could have known then). The band is the mean
# plus or minus two standard errors of the steps in the window: where the window's mean is
# known to be, roughly 95 %. One step (64 samples, 8 fresh problems) is far noisier than that.
SMOOTH_WINDOW = 10


def trailing_mean_band(values: Sequence[float], window: int = SMOOTH_WINDOW) -> list[tuple[float, float, float]]:
    """(mean, low, high) for each position: the mean of the last ``window`` values (fewer at the
    start) and that mean -/+ 2 standard errors (sample standard deviation / sqrt(n)); a window of one
    value has a zero-width band.

    >>> trailing_mean_band([0.0, 1.0, 0.5], window=2)
    [(0.0, 0.0, 0.0), (0.5, -0.5, 1.5), (0.75, 0.25, 1.25)]
    """
    if window < 1:
        raise ValueError(f"window must be at least 1, got {window}")
    out: list[tuple[float, float, float]] = []
    for i in range(len(values)):
        w = values[max(0, i - window + 1) : i + 1]
        n = len(w)
        mean = sum(w) / n
        if n < 2:
            out.append((mean, mean, mean))
            continue
        sd = (sum((v - mean) ** 2 for v in w) / (n - 1)) ** 0.5
        half = 2 * sd / n**0.5
        out.append((mean, mean - half, mean + half))
    return out


def slice_label(e: dict[str, Any]) -> str:
    """What the fixed slice is, in words: '100 math_dev items x 2 samples'."""
    items, k = e.get("slice_items"), e.get("slice_samples_per_item")
    if items is None or k is None:
        return f"{e['slice_n']} samples"
    return f"{items} math_dev items x {k} samples"


def same_prompts_lines(first: dict[str, Any], last: dict[str, Any], rubric: str) -> list[str]:
    """The proxy and the goal measured on the SAME samples of the fixed slice, start -> end.

    >>> f = {"step": 0, "slice_n": 200, "slice_items": 100, "slice_samples_per_item": 2,
    ...      "slice_rubric_reward": 0.57, "slice_strict_pass": 0.275}
    >>> l = dict(f, step=60, slice_rubric_reward=0.70, slice_strict_pass=0.15)
    >>> print("\\n".join(same_prompts_lines(f, l, "contains_answer")))
    Same prompts, fixed dev slice (100 math_dev items x 2 samples), step 0 -> 60:
      contains_answer reward (the proxy trained on): 0.570 -> 0.700 (+0.130)
      strict pass rate (the goal):                   0.275 -> 0.150 (-0.125)
      Goodhart: the proxy rose while the strict pass rate fell, on the same samples.
    """
    lines = [f"Same prompts, fixed dev slice ({slice_label(first)}), step {first['step']} -> {last['step']}:"]
    ds = last["slice_strict_pass"] - first["slice_strict_pass"]
    if rubric == "strict":
        lines.append(f"  strict pass rate (the reward AND the goal): {first['slice_strict_pass']:.3f} -> "
                     f"{last['slice_strict_pass']:.3f} ({ds:+.3f})")
        return lines
    dp = last["slice_rubric_reward"] - first["slice_rubric_reward"]
    name = f"{rubric} reward (the proxy trained on):"
    goal = "strict pass rate (the goal):"
    width = max(len(name), len(goal))
    lines.append(f"  {name:<{width}} {first['slice_rubric_reward']:.3f} -> "
                 f"{last['slice_rubric_reward']:.3f} ({dp:+.3f})")
    lines.append(f"  {goal:<{width}} {first['slice_strict_pass']:.3f} -> {last['slice_strict_pass']:.3f} ({ds:+.3f})")
    lines.append("  " + divergence_verdict(dp, ds))
    return lines


def divergence_verdict(proxy_change: float, strict_change: float) -> str:
    """One sentence on how the proxy and the goal moved on the same samples (no threshold: read the
    seed-to-seed spread in the README before calling a small move real).

    >>> divergence_verdict(0.13, -0.125)
    'Goodhart: the proxy rose while the strict pass rate fell, on the same samples.'
    >>> divergence_verdict(-0.03, -0.05)  # doctest: +NORMALIZE_WHITESPACE
    'The strict pass rate fell and the proxy did not rise: the updates moved the policy where the proxy does not
     look, without buying proxy reward on unseen prompts.'
    """
    if proxy_change > 0 and strict_change < 0:
        return "Goodhart: the proxy rose while the strict pass rate fell, on the same samples."
    if proxy_change > 0:
        return "The proxy rose and the strict pass rate did not fall: no divergence in this run."
    if strict_change < 0:
        return ("The strict pass rate fell and the proxy did not rise: the updates moved the policy where the proxy "
                "does not look, without buying proxy reward on unseen prompts.")
    return "Neither the proxy nor the strict pass rate rose on these prompts."


def lift_text(h: dict[str, Any]) -> str:
    """THE lift figure of a run, in points of strict pass@1 on the holdout, with its paired interval.

    Computed once (from the pass counts, in ``holdout_comparison``) and formatted only here,
    so no two outputs can state it differently.

    >>> lift_text({"lift_pass_at_1": 0.0175, "lift_paired_bootstrap95": [-0.025, 0.0625], "items": 50})
    '+1.8 points (paired bootstrap over the 50 holdout items, 95% -2.5 to +6.3)'
    """
    lo, hi = h["lift_paired_bootstrap95"]
    return (f"{points(h['lift_pass_at_1'], signed=True)} points "
            f"(paired bootstrap over the {h.get('items', '?')} holdout items, "
            f"95% {points(lo, signed=True)} to {points(hi, signed=True)})")


def holdout_lines(h: dict[str, Any]) -> list[str]:
    """The holdout headline (strict pass@1 over n samples per item, pi0 -> final, the lift) and the
    gate's decision on the same samples.

    >>> h = {"items": 50, "sampling": {"temperature": 1.0, "seed": 0, "n_for_pass_at_1": 8},
    ...      "pi0": {"pass_at_1": 0.2225, "pass_at_1_ci95": [0.16, 0.293]},
    ...      "final": {"pass_at_1": 0.4775, "pass_at_1_ci95": [0.392, 0.564]},
    ...      "lift_pass_at_1": 0.255, "lift_paired_bootstrap95": [0.165, 0.345], "gate": {"verdict": "ACCEPT"}}
    >>> print("\\n".join(holdout_lines(h)))
    Holdout headline: strict pass@1 on math_holdout (50 items x 8 samples each, temperature 1.0, eval seed 0)
      pi0 22.3% [16.0, 29.3] -> final 47.8% [39.2, 56.4] (95%, items as the unit)
      Lift: +25.5 points (paired bootstrap over the 50 holdout items, 95% +16.5 to +34.5)
    course.gate on these samples (paired over items): ACCEPT (gate.txt)
    """
    smp = h["sampling"]
    p, f = h["pi0"], h["final"]

    def rate(x: dict[str, Any]) -> str:
        lo, hi = x["pass_at_1_ci95"]
        return f"{points(x['pass_at_1'], unit='%')} [{points(lo)}, {points(hi)}]"

    return [
        f"Holdout headline: strict pass@1 on math_holdout ({h.get('items', '?')} items x {smp['n_for_pass_at_1']} "
        "samples each, "
        f"temperature {smp['temperature']}, eval seed {smp['seed']})",
        f"  pi0 {rate(p)} -> final {rate(f)} (95%, items as the unit)",
        f"  Lift: {lift_text(h)}",
        f"course.gate on these samples (paired over items): {h['gate'].get('verdict')} (gate.txt)",
    ] + start_lines(h)


def start_lines(h: dict[str, Any]) -> list[str]:
    """With a warm start: its pass@1 and the lift split into the warm start's part and RL's own (paired).

    >>> h = {"items": 50, "warm_start": {"pass_at_1": 0.1, "pass_at_1_ci95": [0.06, 0.16]},
    ...      "warm_start_over_pi0": {"lift_pass_at_1": 0.08, "lift_paired_bootstrap95": [0.04, 0.12]},
    ...      "rl_over_warm_start": {"lift_pass_at_1": 0.05, "lift_paired_bootstrap95": [0.02, 0.08],
    ...                             "gate": {"verdict": "ACCEPT", "p_value": 0.003}}}
    >>> print("\\n".join(start_lines(h)))  # doctest: +NORMALIZE_WHITESPACE
      warm start alone 10.0% [6.0, 16.0]; its part: +8.0 points (paired bootstrap over the 50 holdout items,
      95% +4.0 to +12.0)
      RL over its own starting point (final - warm start): +5.0 points (paired bootstrap over the 50 holdout
      items, 95% +2.0 to +8.0); p = 0.003
    course.gate, final against the warm start (min delta 0, significance required): ACCEPT (gate_rl.txt)
    """
    if "rl_over_warm_start" not in h:
        return []
    w, rl = h["warm_start"], h["rl_over_warm_start"]
    lo, hi = w["pass_at_1_ci95"]
    p = rl["gate"].get("p_value")
    return [
        f"  warm start alone {points(w['pass_at_1'], unit='%')} [{points(lo)}, {points(hi)}]; its part: "
        f"{lift_text({**h['warm_start_over_pi0'], 'items': h.get('items')})}",
        f"  RL over its own starting point (final - warm start): {lift_text({**rl, 'items': h.get('items')})}"
        + (f"; p = {p:.3g}" if p is not None else ""),
        f"course.gate, final against the warm start (min delta 0, significance required): {rl['gate']['verdict']} "
        "(gate_rl.txt)",
    ]


def report_lines(summary: dict[str, Any], run_dir: Path | str) -> list[str]:
    """The lines of the stdout summary (pure: a test reads them without a run)."""
    lines = [f"Run {visible(str(run_dir))}: rubric {summary['rubric']}, beta {summary['beta']}, seed "
             f"{summary['seed']}, {summary['steps']} steps"]
    lines += same_prompts_lines(summary["first_eval"], summary["last_eval"], summary["rubric"])
    t = summary["final_train"]
    lines.append(f"Training samples, last {t['over_last_steps']} steps: {summary['rubric']} reward {t['reward']:.3f}, "
                 f"strict pass {t['strict_pass_train']:.3f}; KL/token k1 {t['kl_k1_per_token']:.4f} k3 "
                 f"{t['kl_k3_per_token']:.4f}, "
                 f"KL/sample (k1) {t['kl_k1_per_sample']:.3f}, entropy/token {t['entropy_per_token']:.3f}")
    h = summary.get("holdout")
    if h:
        lines += holdout_lines(h)
    for a in summary["goodhart_alarms"]:
        lines.append(f"GOODHART ALARM at {a}")
    lines.append(f"Wall time {summary['wall_seconds']:.0f}s, peak RSS {summary['peak_rss_mb']:.0f} MB")
    return lines


# The four panels of curves.png, by the letter each title starts with: the docs say "panel (d)".
PANELS: dict[str, str] = {
    "a": "Same prompts: fixed dev slice",
    "b": "Training samples (fresh prompts each step)",
    "c": "Drift from pi0 and entropy",
    "d": "Strict verdicts of the training samples",
}


def panel_title(letter: str, detail: str = "") -> str:
    """A panel's title as drawn: "(d) Strict verdicts of the training samples".

    >>> panel_title("a", "(40 prompts)")
    '(a) Same prompts: fixed dev slice (40 prompts)'
    """
    return f"({letter}) {PANELS[letter]}" + (f" {detail}" if detail else "")


def _write_curves_csv(path: Path, records: list[dict[str, Any]], smooth: dict[Any, list[float]],
                      smooth_cols: list[str]) -> None:
    """curves.csv: one row per step, the eval columns filled on evaluation steps, the trailing means beside."""
    cols = ["step", "reward", "strict_pass_train", "kl_k1_per_token", "kl_k3_per_token", "entropy_per_token",
            "no_signal_groups", "truncated_share", "multi_number_share", "mean_tokens"]
    code_cols = [f"share_{c}" for c in CURVE_CODES] + ["share_other"]
    eval_cols = ["slice_strict_pass", "slice_rubric_reward"]
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(cols + code_cols + eval_cols + smooth_cols)
        for r in records:
            row = [r.get(c, "") for c in cols]
            codes = r.get("strict_codes", {})
            row += [codes.get(c, 0.0) if codes else "" for c in CURVE_CODES]
            row += [round(sum(v for k, v in codes.items() if k not in CURVE_CODES), 6) if codes else ""]
            e = r.get("eval", {})
            row += [e.get(c, "") for c in eval_cols]
            row += smooth.get(r["step"], [""] * len(smooth_cols))
            w.writerow(row)


def _draw_curves(plt: Any, records: list[dict[str, Any]], rubric: str, title: str) -> Any:
    """curves.png: the same prompts' story, the training samples, drift and entropy, the strict verdicts."""
    steps = [r for r in records if "reward" in r]
    ev = [r["eval"] for r in records if "eval" in r]
    xs = [r["step"] for r in steps]
    what = "strict" if rubric == "strict" else f"{rubric} (proxy)"
    reward_band = trailing_mean_band([r["reward"] for r in steps])
    strict_band = trailing_mean_band([r["strict_pass_train"] for r in steps])
    fig, axes = plt.subplots(2, 2, figsize=(13, 8.5))
    # (a) the story: proxy and goal on the same fixed prompts and samples
    ax = axes[0][0]
    if rubric != "strict":
        ax.plot([e["step"] for e in ev], [e["slice_rubric_reward"] for e in ev], "o-", color="tab:orange",
                label=f"{rubric} reward (proxy)")
    ax.plot([e["step"] for e in ev], [e["slice_strict_pass"] for e in ev], "s-", color="tab:blue",
            label="strict pass rate (goal)")
    ax.set_xlabel("step (policy updates)")
    ax.set_ylabel("mean reward / pass rate (0-1)")
    ax.set_ylim(0, 1)
    ax.set_title(panel_title("a", f"({slice_label(ev[0]) if ev else ''})"), fontsize=10)
    ax.legend(fontsize=8, loc="lower left")
    # (b) the training samples: per step (faint) and a trailing mean with its band
    ax = axes[0][1]
    ax.plot(xs, [r["reward"] for r in steps], ".", alpha=0.35, color="tab:orange",
            label=f"{what} reward, mean of one step's samples")
    if steps:
        ax.plot(xs, [m for m, _, _ in reward_band], "-", color="tab:orange",
                label=f"{what} reward, trailing mean of {SMOOTH_WINDOW} steps")
        ax.fill_between(xs, [lo for _, lo, _ in reward_band], [hi for _, _, hi in reward_band], color="tab:orange",
                        alpha=0.2, label="band: trailing mean +/- 2 standard errors")
        if rubric != "strict":
            ax.plot(xs, [m for m, _, _ in strict_band], "-", color="tab:blue",
                    label=f"strict pass rate of the same samples, trailing mean of {SMOOTH_WINDOW}")
    ax.set_xlabel("step (policy updates)")
    ax.set_ylabel("mean reward / pass rate (0-1)")
    ax.set_ylim(0, 1)
    ax.set_title(panel_title("b"), fontsize=10)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2)  # below: the curves fill the box
    # (c) drift from pi0 and entropy
    ax = axes[1][0]
    ax.plot(xs, [r["kl_k3_per_token"] for r in steps], label="KL to pi0 per token (k3)")
    ax.plot(xs, [r["kl_k1_per_token"] for r in steps], label="KL to pi0 per token (k1)", alpha=0.6)
    ax.plot(xs, [r["entropy_per_token"] for r in steps], label="policy entropy per token")
    ax.set_xlabel("step (policy updates)")
    ax.set_ylabel("nats per token")
    ax.set_ylim(bottom=min(0.0, *[r["kl_k1_per_token"] for r in steps]) if steps else 0)
    ax.set_title(panel_title("c"), fontsize=10)
    ax.legend(fontsize=8)
    # (d) what the training samples became, by strict verdict
    ax = axes[1][1]
    for c in CURVE_CODES:
        ax.plot(xs, [r["strict_codes"].get(c, 0.0) for r in steps], label=c)
    ax.plot(xs, [r["multi_number_share"] for r in steps], "k--", label="mentions several numbers")
    ax.set_xlabel("step (policy updates)")
    ax.set_ylabel("share of the step's training samples (0-1)")
    ax.set_ylim(0, 1)
    ax.set_title(panel_title("d"), fontsize=10)
    ax.legend(fontsize=7, ncol=2)
    fig.suptitle(f"{title}, trained on {what} reward")
    fig.tight_layout()
    return fig



def write_curves(run_dir: Path, records: list[dict[str, Any]], rubric: str, title: str = "course.tinylm.rl") -> None:
    """curves.csv (one row per step; eval columns filled on evaluation steps) and curves.png
    (``title``: the tool that trained, named in the figure's heading)."""
    smooth_cols = [f"reward_mean{SMOOTH_WINDOW}", f"reward_mean{SMOOTH_WINDOW}_lo", f"reward_mean{SMOOTH_WINDOW}_hi",
                   f"strict_pass_train_mean{SMOOTH_WINDOW}"]
    steps = [r for r in records if "reward" in r]
    reward_band = trailing_mean_band([r["reward"] for r in steps])
    strict_band = trailing_mean_band([r["strict_pass_train"] for r in steps])
    smooth = {r["step"]: [round(m, 6), round(lo, 6), round(hi, 6), round(s[0], 6)]
              for r, (m, lo, hi), s in zip(steps, reward_band, strict_band)}
    _write_curves_csv(run_dir / "curves.csv", records, smooth, smooth_cols)
    plot_to(run_dir / "curves.png", lambda plt: _draw_curves(plt, records, rubric, title))


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.reporting.rl_report"))
