"""What course.tinylm.rl tells a person: the smoothed reward, the same-prompts story, the one lift, the plot.

The reporting functions are pure and need no PyTorch; the last test runs a tiny RL run with its
holdout comparison (skipped without PyTorch) and checks that stdout and stderr never state
two different lift figures.
"""

from __future__ import annotations

import re

import pytest

from course.lib.evaluation.summary import points
from course.lib.reporting import rl_report
from course.tinylm import rl

FIRST = {"step": 0, "slice_n": 200, "slice_items": 100, "slice_samples_per_item": 2,
         "slice_rubric_reward": 0.57, "slice_strict_pass": 0.275}
HOLDOUT = {
    "items": 50, "sampling": {"temperature": 1.0, "seed": 0, "n_for_pass_at_1": 8},
    "pi0": {"pass_at_1": 0.2225, "pass_at_1_ci95": [0.184, 0.266], "passed": 89, "samples": 400},
    "final": {"pass_at_1": 0.24, "pass_at_1_ci95": [0.201, 0.284], "passed": 96, "samples": 400},
    "lift_pass_at_1": 0.0175, "lift_paired_bootstrap95": [-0.025, 0.0625], "gate": {"verdict": "REJECT"},
}


def summary(**holdout):
    return {"rubric": "contains_answer", "beta": 0.05, "seed": 0, "steps": 60, "first_eval": FIRST,
            "last_eval": dict(FIRST, step=60, slice_rubric_reward=0.70, slice_strict_pass=0.15),
            "final_train": {"over_last_steps": 5, "reward": 0.7, "strict_pass_train": 0.2, "kl_k1_per_token": 0.1,
                            "kl_k3_per_token": 0.09, "kl_k1_per_sample": 1.3, "entropy_per_token": 0.25},
            "holdout": HOLDOUT | holdout, "goodhart_alarms": [], "wall_seconds": 30.0, "peak_rss_mb": 700.0}


# --- smoothing ------------------------------------------------------------------------------------
def test_the_trailing_mean_uses_only_the_last_window_steps():
    band = rl_report.trailing_mean_band([1.0, 1.0, 0.0, 0.0, 0.0], window=3)
    assert [round(m, 6) for m, _, _ in band] == [1.0, 1.0, round(2 / 3, 6), round(1 / 3, 6), 0.0]


def test_the_band_is_two_standard_errors_wide_on_each_side_and_zero_for_one_value():
    (m0, lo0, hi0), (m1, lo1, hi1) = rl_report.trailing_mean_band([0.0, 1.0], window=2)
    assert lo0 == hi0 == m0 == 0.0
    # sd of {0, 1} is sqrt(1/2); standard error sqrt(1/2)/sqrt(2) = 0.5; two of them = 1.0
    assert (lo1, m1, hi1) == pytest.approx((-0.5, 0.5, 1.5))


def test_a_constant_reward_has_a_zero_width_band():
    assert all(lo == m == hi == 0.25 for m, lo, hi in rl_report.trailing_mean_band([0.25] * 12))


# --- the same-prompts story and the holdout headline ----------------------------------------------
def test_the_same_prompts_lines_name_proxy_and_goal_and_call_the_divergence_goodhart():
    lines = rl_report.same_prompts_lines(FIRST, dict(FIRST, step=60, slice_rubric_reward=0.70, slice_strict_pass=0.15),
                                         "contains_answer")
    text = "\n".join(lines)
    assert "100 math_dev items x 2 samples" in lines[0]
    assert "0.570 -> 0.700 (+0.130)" in text and "0.275 -> 0.150 (-0.125)" in text
    assert "Goodhart" in lines[-1]


def test_the_same_prompts_lines_do_not_claim_goodhart_when_the_proxy_fell():
    lines = rl_report.same_prompts_lines(FIRST, dict(FIRST, step=60, slice_rubric_reward=0.52, slice_strict_pass=0.21),
                                         "contains_answer")
    assert "Goodhart" not in "\n".join(lines)
    assert "strict pass rate fell and the proxy did not rise" in lines[-1]


def test_the_holdout_headline_says_what_it_measures_and_that_the_gate_decided_on_the_same_samples():
    lines = rl_report.holdout_lines(HOLDOUT)
    assert lines[0].startswith("Holdout headline: strict pass@1 on math_holdout (50 items x 8 samples each")
    assert "pi0 22.3% [18.4, 26.6] -> final 24.0% [20.1, 28.4]" in lines[1]
    assert lines[3] == "course.gate on these samples (paired over items): REJECT (gate.txt)"


def test_rates_round_half_up_from_their_decimal_form_so_rounded_rates_subtract_like_the_lift():
    assert points(0.2225) == "22.3" and points(0.4775) == "47.8" and points(0.255, signed=True) == "+25.5"
    assert points(-0.0175, signed=True) == "-1.8" and points(0.0, signed=True) == "+0.0"


def test_the_lift_is_stated_exactly_once_in_the_report():
    text = "\n".join(rl_report.report_lines(summary(), "runs/x"))
    assert len(re.findall(r"(?i)lift", text)) == 1
    assert "Lift: +1.8 points (paired bootstrap over the 50 holdout items, 95% -2.5 to +6.3)" in text


# --- the plot ---------------------------------------------------------------------------------------
def records(n: int = 12) -> list[dict]:
    out: list[dict] = [{"step": 0, "eval": dict(FIRST)}]
    for s in range(1, n + 1):
        rec = {"step": s, "reward": 0.5 + 0.02 * s, "strict_pass_train": 0.3 - 0.01 * s,
               "kl_k1_per_token": -0.01 + 0.01 * s, "kl_k3_per_token": 0.01 * s, "entropy_per_token": 0.3,
               "no_signal_groups": 0.2, "truncated_share": 0.0, "multi_number_share": 0.1 + 0.02 * s,
               "mean_tokens": 9.0, "strict_codes": {"ok": 0.3 - 0.01 * s, "wrong_answer": 0.7 + 0.01 * s}}
        if s % 4 == 0:
            rec["eval"] = dict(FIRST, step=s, slice_rubric_reward=0.57 + 0.01 * s, slice_strict_pass=0.275 - 0.01 * s)
        out.append(rec)
    return out


def test_curves_csv_has_the_smoothed_reward_and_both_slice_measures_on_one_row(tmp_path, figures_not_rendered):
    pytest.importorskip("matplotlib")
    rl_report.write_curves(tmp_path, records(), "contains_answer")
    rows = (tmp_path / "curves.csv").read_text().splitlines()
    header = rows[0].split(",")
    assert header[:2] == ["step", "reward"]
    for col in ("slice_strict_pass", "slice_rubric_reward", "reward_mean10", "reward_mean10_lo", "reward_mean10_hi"):
        assert col in header, col
    row4 = dict(zip(header, rows[5].split(",")))  # step 4: an evaluation step
    assert (float(row4["slice_rubric_reward"]) == pytest.approx(0.61)
            and float(row4["slice_strict_pass"]) == pytest.approx(0.235))
    assert float(row4["reward_mean10"]) == pytest.approx((0.52 + 0.54 + 0.56 + 0.58) / 4)


def test_every_curves_panel_has_a_title_axis_labels_a_full_legend_and_rates_from_zero(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    import course.lib.reporting.plotting

    figures = []
    monkeypatch.setattr(course.lib.reporting.plotting, "save_figure", lambda fig, path: figures.append(fig))
    rl_report.write_curves(tmp_path, records(), "contains_answer")
    (fig,) = figures
    axes = fig.get_axes()
    assert len(axes) == 4
    for ax in axes:
        assert ax.get_title() and ax.get_xlabel() and ax.get_ylabel()
        assert "(" in ax.get_ylabel() or "per token" in ax.get_ylabel()  # a unit or a scale
        legend = ax.get_legend()
        assert legend is not None
        assert len(legend.get_texts()) == len(ax.get_lines()) + len(ax.collections)  # no line left out
        assert ax.get_ylim()[0] <= 0.0
    proxy_and_goal = {t.get_text() for t in axes[0].get_legend().get_texts()}
    assert proxy_and_goal == {"contains_answer reward (proxy)", "strict pass rate (goal)"}
    import matplotlib.pyplot as plt

    plt.close(fig)


# --- a real (tiny) run: stdout and stderr agree ----------------------------------------------------
def test_a_run_with_a_holdout_states_its_lift_once_on_stdout_and_never_on_stderr(tmp_path, capsys,
                                                                                 figures_not_rendered):
    torch = pytest.importorskip("torch")
    from course.lib.policy.sampling import set_threads
    from course.tinylm.model import GPT, GPTConfig, save_checkpoint

    set_threads(1)
    torch.manual_seed(0)
    ck = tmp_path / "tiny.pt"
    save_checkpoint(GPT(GPTConfig(n_layer=1, n_head=2, n_embd=32, block_size=96)).eval(), ck)
    argv = ["--pi0", str(ck), "--rubric", "contains_answer", "--steps", "1", "--prompts-per-step", "2",
            "--group-size", "2", "--eval-every", "1", "--eval-samples", "1", "--slice-items", "2",
            "--holdout-samples", "1", "--max-tokens", "3", "--threads", "1", "--outdir", str(tmp_path / "run")]
    assert rl.main(argv) == 0
    out, err = capsys.readouterr()
    assert len(re.findall(r"(?i)lift", out)) == 1 and "Holdout headline: strict pass@1" in out
    assert not re.search(r"(?i)lift", err)
