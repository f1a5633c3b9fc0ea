"""course.bandit_train: the instructor's demo works as written, the log is exact, runs repeat."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from course import bandit_train as bt
from course.lib.learning import policy_gradient as pg
from course.lib.learning.bandit_story import ADVANTAGE_SIGN

DEMO = ["--steps", "30", "--seed", "0", "--lr", "0.5", "--baseline", "--slow"]
CORRECT = bt.DEFAULT_ACTIONS.index("Final: 323")


def _log(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "bandit_log.jsonl").read_text(encoding="utf-8").splitlines()]


def _manifest(run: Path) -> dict:
    return json.loads((run / "manifest.json").read_text(encoding="utf-8"))


def _final_probs(run: Path) -> list[float]:
    return _manifest(run)["result"]["final_probs"]


def test_help_shows_the_instructor_demo_commands(run_in_process, tmp_path: Path) -> None:
    proc = run_in_process("course.bandit_train", ["--help"], cwd=tmp_path)
    assert proc.returncode == 0
    assert "--lr -0.5 --baseline --slow" in proc.stdout and "--ablation" in proc.stdout


def test_slow_demo_writes_log_story_and_manifest(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "demo_bandit_slow"
    assert bt.main([*DEMO, "--outdir", str(run)]) == 0
    assert sorted(p.name for p in run.iterdir()) == ["bandit_log.jsonl", "bandit_story.txt", "manifest.json"]
    log = _log(run)
    assert [r["step"] for r in log] == list(range(1, 31))
    required = {"step", "theta", "probs", "action", "action_text", "reward", "baseline", "advantage", "expected_reward",
                "grad"}
    assert required <= set(log[0])
    manifest = _manifest(run)
    assert manifest["actions"] == list(bt.DEFAULT_ACTIONS)
    assert manifest["rewards"][CORRECT] == 1.0 and sum(manifest["rewards"]) == 1.0
    assert manifest["error_codes"] == ["missing_prefix", "missing_prefix", "prefix_spacing", "prefix_case",
                                       "wrong_answer", "ok"]
    assert manifest["scorer_version"] == "strict-final-v1" and len(manifest["scorer_fingerprint"]) == 64
    assert (manifest["seed"], manifest["lr"], manifest["steps"]) == (0, 0.5, 30)


def test_slow_output_is_the_story_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    bt.main([*DEMO, "--outdir", str(run)])
    story = (run / "bandit_story.txt").read_text(encoding="utf-8")
    assert capsys.readouterr().out.startswith(story)
    assert ADVANTAGE_SIGN in story and story.count("step ") >= 30


def test_positive_lr_raises_and_negative_lr_lowers_the_rewarded_completion(tmp_path: Path) -> None:
    bt.main([*DEMO, "--outdir", str(tmp_path / "up")])
    bt.main(["--steps", "30", "--seed", "0", "--lr", "-0.5", "--baseline", "--slow",
             "--outdir", str(tmp_path / "down")])
    start = 1 / len(bt.DEFAULT_ACTIONS)
    assert _final_probs(tmp_path / "up")[CORRECT] > start
    assert _final_probs(tmp_path / "down")[CORRECT] < start


def test_same_seed_gives_byte_identical_logs(tmp_path: Path) -> None:
    bt.main([*DEMO, "--outdir", str(tmp_path / "a")])
    bt.main([*DEMO, "--outdir", str(tmp_path / "b")])
    assert (tmp_path / "a" / "bandit_log.jsonl").read_bytes() == (tmp_path / "b" / "bandit_log.jsonl").read_bytes()
    assert (tmp_path / "a" / "bandit_story.txt").read_bytes() == (tmp_path / "b" / "bandit_story.txt").read_bytes()


def test_a_different_seed_samples_a_different_run(tmp_path: Path) -> None:
    bt.main([*DEMO, "--outdir", str(tmp_path / "a")])
    bt.main([*DEMO[:2], "--seed", "1", *DEMO[4:], "--outdir", str(tmp_path / "b")])
    assert [r["action"] for r in _log(tmp_path / "a")] != [r["action"] for r in _log(tmp_path / "b")]


# J keeps its capital: it is the objective J(θ), as the course writes it
def test_logged_expected_reward_is_the_exact_J_of_the_logged_policy(tmp_path: Path) -> None:  # noqa: N802
    bt.main(["--steps", "40", "--outdir", str(tmp_path / "r")])
    rewards = _manifest(tmp_path / "r")["rewards"]
    for rec in _log(tmp_path / "r"):
        assert rec["probs"] == pg.softmax(rec["theta"])
        assert rec["expected_reward"] == pytest.approx(pg.expected_reward(rec["probs"], rewards), abs=1e-15)


def test_each_update_is_lr_times_advantage_times_onehot_minus_probs(tmp_path: Path) -> None:
    bt.main(["--steps", "40", "--lr", "0.7", "--outdir", str(tmp_path / "r")])
    log = _log(tmp_path / "r")
    for rec, nxt in zip(log, log[1:]):
        onehot = [1.0 if i == rec["action"] else 0.0 for i in range(len(rec["probs"]))]
        expected_grad = [rec["advantage"] * (o - p) for o, p in zip(onehot, rec["probs"])]
        assert rec["grad"] == pytest.approx(expected_grad, abs=1e-15)
        assert nxt["theta"] == pytest.approx([t + 0.7 * g for t, g in zip(rec["theta"], rec["grad"])], abs=1e-15)


def test_baseline_is_the_mean_of_earlier_rewards_only(tmp_path: Path) -> None:
    bt.main(["--steps", "40", "--outdir", str(tmp_path / "r")])
    log = _log(tmp_path / "r")
    assert log[0]["baseline"] == 0.0
    for t, rec in enumerate(log[1:], start=1):
        earlier = [r["reward"] for r in log[:t]]
        assert rec["baseline"] == pytest.approx(math.fsum(earlier) / t, abs=1e-15)
        assert rec["advantage"] == pytest.approx(rec["reward"] - rec["baseline"], abs=1e-15)


def test_without_baseline_a_zero_reward_leaves_theta_unchanged(tmp_path: Path) -> None:
    bt.main(["--steps", "40", "--no-baseline", "--outdir", str(tmp_path / "r")])
    log = _log(tmp_path / "r")
    assert all(r["baseline"] == 0.0 and r["advantage"] == r["reward"] for r in log)
    misses = [r for r in log if r["reward"] == 0.0]
    assert misses and all(g == 0.0 for r in misses for g in r["grad"])


def test_summary_every_prints_one_line_per_k_steps(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bt.main(["--steps", "50", "--summary-every", "10", "--outdir", str(tmp_path / "r")])
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("step ")]
    assert [line.split()[1] for line in lines] == ["10/50", "20/50", "30/50", "40/50", "50/50"]


def test_an_existing_run_directory_is_refused_without_force(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "r"
    bt.main(["--steps", "5", "--outdir", str(run)])
    before = (run / "bandit_log.jsonl").read_bytes()
    assert bt.main(["--steps", "7", "--outdir", str(run)]) == 2
    assert "--force" in capsys.readouterr().err
    assert (run / "bandit_log.jsonl").read_bytes() == before
    assert bt.main(["--steps", "7", "--outdir", str(run), "--force"]) == 0
    assert len(_log(run)) == 7


@pytest.mark.parametrize("args", [["--steps", "0"], ["--summary-every", "-1"], ["--lr", "nan"]])
def test_bad_numbers_are_usage_errors_and_write_nothing(tmp_path: Path, args: list[str]) -> None:
    assert _exit_code(bt.main, [*args, "--outdir", str(tmp_path / "r")]) == 2
    assert not (tmp_path / "r").exists()


def test_repeated_actions_are_rejected(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert bt.main(["--action", "Final: 323", "--action", "Final: 323", "--outdir", str(tmp_path / "r")]) == 2
    assert "distinct" in capsys.readouterr().err


def test_custom_actions_are_scored_by_the_strict_scorer(tmp_path: Path) -> None:
    bt.main(["--steps", "3", "--action", "Final: 323\n", "--action", "Final: 323.", "--outdir", str(tmp_path / "r")])
    manifest = _manifest(tmp_path / "r")
    assert manifest["rewards"] == [1.0, 0.0] and manifest["error_codes"] == ["ok", "trailing_text"]


def test_plot_writes_a_learning_curve_png(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    assert bt.main(["--steps", "20", "--plot", "--outdir", str(tmp_path / "r")]) == 0
    assert (tmp_path / "r" / "learning_curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_ablation_measures_both_settings_in_both_regimes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "abl"
    assert bt.main(["--ablation", "--seeds", "20", "--steps", "20", "--outdir", str(run)]) == 0
    data = json.loads((run / "ablation.json").read_text(encoding="utf-8"))
    rare, common = data["scenarios"]
    assert rare["actions"] == list(bt.DEFAULT_ACTIONS) and sum(common["rewards"]) == 4.0
    for scenario in (rare, common):
        res = scenario["result"]
        assert res["seeds"] == list(range(20))
        assert set(res["settings"]) == {"no_baseline", "baseline", "ema", "optimal"}
        for setting in res["settings"]:
            s = res["settings"][setting]
            assert s["fixed_policy_variance"] > 0 and s["training_variance"] > 0
            assert 0 < s["final_expected_reward_mean"] <= 1 and s["final_expected_reward_sd"] >= 0
    # With success the common event, subtracting the mean reward cuts the noise (exactly and sampled).
    fixed = common["result"]["fixed_policy"]
    assert fixed["exact_variance_bJ"] < fixed["exact_variance_b0"]
    settings = common["result"]["settings"]
    assert settings["baseline"]["fixed_policy_variance"] < settings["no_baseline"]["fixed_policy_variance"]
    assert "ratio" in (run / "ablation.txt").read_text(encoding="utf-8")
    assert "ratio" in capsys.readouterr().out


def test_the_ablation_shows_that_even_an_exact_b_equal_j_adds_variance_once_success_is_likely(tmp_path: Path) -> None:
    # Not the running mean's lag: at the trained policies, b = J itself is worse than b = 0,
    # and the variance-optimal b* is far below J.
    run = tmp_path / "abl"
    assert bt.main(["--ablation", "--seeds", "10", "--steps", "60", "--outdir", str(run)]) == 0
    rare = json.loads((run / "ablation.json").read_text(encoding="utf-8"))["scenarios"][0]["result"]
    end = rare["end_policies"]
    assert end["expected_reward_mean"] > 0.9 and end["optimal_baseline_mean"] < 0.2
    assert end["exact_variance_bJ"] > end["exact_variance_b0"] >= end["exact_variance_bstar"]
    assert "b* =" in (run / "ablation.txt").read_text(encoding="utf-8")


def test_the_ema_baseline_is_updated_after_its_use_as_computed_by_hand() -> None:
    # Every action earns 1, so the rewards are 1, 1, 1, ... whatever is sampled. With alpha = 0.5
    # and b starting at 0, by hand: b = 0, then 0.5*0 + 0.5*1 = 0.5, then 0.75, then 0.875.
    steps = list(bt.reinforce([1.0, 1.0], steps=4, lr=0.5, rng=bt.random.Random(0), baseline="ema", alpha=0.5))
    assert [s.baseline for s in steps] == [0.0, 0.5, 0.75, 0.875]
    assert [s.advantage for s in steps] == [1.0, 0.5, 0.25, 0.125]


def test_an_ema_run_logs_the_moving_average_of_earlier_rewards_and_records_alpha(tmp_path: Path) -> None:
    assert bt.main(["--steps", "40", "--baseline", "ema", "--alpha", "0.25", "--outdir", str(tmp_path / "r")]) == 0
    log = _log(tmp_path / "r")
    b = 0.0
    for rec in log:
        assert rec["baseline"] == pytest.approx(b, abs=1e-15)  # this step's reward is not in it yet
        b = 0.75 * b + 0.25 * rec["reward"]
    assert any(rec["reward"] == 1.0 for rec in log)  # so the baseline did move
    manifest = _manifest(tmp_path / "r")
    assert (manifest["baseline"], manifest["ema_alpha"], manifest["initial_baseline"]) == (
        "ema_of_earlier_rewards", 0.25, 0.0)
    assert "moving average" in (tmp_path / "r" / "bandit_story.txt").read_text(encoding="utf-8")


@pytest.mark.parametrize("alpha", ["0", "1.5", "nan"])
def test_an_alpha_outside_0_1_is_a_usage_error(tmp_path: Path, alpha: str) -> None:
    assert _exit_code(bt.main, ["--baseline", "ema", "--alpha", alpha, "--outdir", str(tmp_path / "r")]) == 2
    assert not (tmp_path / "r").exists()


def test_the_exact_ema_variance_matches_a_monte_carlo_estimate_at_a_fixed_policy() -> None:
    rewards = [1.0, 0.0, 0.0, 1.0, 0.0]
    result = bt.run_ablation(rewards, seeds=200, base_seed=0, steps=40, lr=0.5, alpha=0.3)
    exact = result["fixed_policy"]["exact_variance_warmup"]
    for key in ("no_baseline", "baseline", "ema", "optimal"):
        sampled = result["settings"][key]["fixed_policy_variance"]
        assert sampled == pytest.approx(exact[key], rel=0.05), key
    # The EMA's own noise is visible: settled, it costs more than the exact b = J.
    settled = result["fixed_policy"]["exact_variance_settled"]
    assert settled["ema"] > settled["baseline"] == pytest.approx(result["fixed_policy"]["exact_variance_bJ"])


def test_the_ablation_table_has_one_column_per_baseline(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert bt.main(["--ablation", "--seeds", "5", "--steps", "10", "--alpha", "0.2",
                    "--outdir", str(tmp_path / "a")]) == 0
    text = (tmp_path / "a" / "ablation.txt").read_text(encoding="utf-8")
    header = next(line for line in text.splitlines() if "running mean" in line and "EMA a=0.2" in line)
    assert header.split() == ["none", "running", "mean", "EMA", "a=0.2", "b*"]
    manifest = _manifest(tmp_path / "a")
    assert manifest["ema_alpha"] == 0.2 and manifest["initial_baseline"] == 0.0


def _truth(run: Path) -> list[str]:
    """Per step, one letter per action: did its probability go up (u), down (d) or stay (s)? From the log."""
    log = _log(run)
    probs = [r["probs"] for r in log] + [_manifest(run)["result"]["final_probs"]]
    return ["".join("u" if b - a > 1e-12 else "d" if a - b > 1e-12 else "s" for a, b in zip(p, q))
            for p, q in zip(probs, probs[1:])]


def test_predict_on_a_terminal_scores_the_students_answers(tmp_path: Path) -> None:
    import os

    args = ["--steps", "3", "--seed", "0", "--lr", "0.5"]
    assert bt.main([*args, "--outdir", str(tmp_path / "ref")]) == 0
    truth = _truth(tmp_path / "ref")
    # Step 1 all right; a malformed line is asked again; step 2 all "stays"; step 3 all "up".
    answers = [truth[0], "xyz", "s" * 6, "u" * 6]
    expected = 6 + truth[1].count("s") + truth[2].count("u")
    assert 0 < truth[2].count("u") < 6  # the seed gives a step where some rise and some fall
    master, slave = os.openpty()  # a pseudo-terminal: stdin.isatty() is True in the child
    proc = subprocess.Popen(
        [sys.executable, "-m", "course.bandit_train", *args, "--predict", "--outdir", str(tmp_path / "p")],
        stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        cwd=Path(__file__).resolve().parent.parent,
    )
    os.close(slave)
    os.write(master, ("\n".join(answers) + "\n").encode())
    out, err = proc.communicate(timeout=120)
    os.close(master)
    assert proc.returncode == 0, err
    assert f"prediction score: {expected}/18 right" in out
    assert "please type 6 letters" in out
    assert _manifest(tmp_path / "p")["prediction_score"] == {"right": expected, "asked": 18}
    assert (tmp_path / "p" / "bandit_log.jsonl").read_bytes() == (tmp_path / "ref" / "bandit_log.jsonl").read_bytes()


def test_predict_without_a_terminal_explains_in_one_line_and_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import io

    monkeypatch.setattr(sys, "stdin", io.StringIO("uuuuuu\n"))
    assert bt.main(["--steps", "3", "--predict", "--outdir", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "terminal" in err
    assert not (tmp_path / "r").exists()


def _exit_code(main, argv) -> int:  # type: ignore[no-untyped-def]
    """A tool's exit code whether argparse refused the flag (SystemExit) or main returned it."""
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code)


# ---------------------------------------------------------------------------------------------
# Reward noise (Milestone 3): a share of the rewards flipped, seeded, and what it does to learning.
# ---------------------------------------------------------------------------------------------
def test_a_noisy_run_logs_which_rewards_were_flipped_and_the_learner_saw_the_flip(tmp_path: Path) -> None:
    bt.main([*DEMO, "--reward-noise", "0.3", "--outdir", str(tmp_path / "n")])
    log = _log(tmp_path / "n")
    flipped = [r for r in log if r["reward_flipped"]]
    assert 0 < len(flipped) < len(log)
    assert all(r["reward"] == 1.0 - r["scorer_reward"] for r in flipped)
    assert all(r["reward"] == r["scorer_reward"] for r in log if not r["reward_flipped"])
    manifest = _manifest(tmp_path / "n")
    assert manifest["reward_noise"] == 0.3 and manifest["result"]["rewards_flipped"] == len(flipped)
    assert "FLIPPED by reward noise" in (tmp_path / "n" / "bandit_story.txt").read_text(encoding="utf-8")


def test_the_same_seed_and_noise_give_byte_identical_logs(tmp_path: Path) -> None:
    for name in ("a", "b"):
        bt.main([*DEMO, "--reward-noise", "0.3", "--outdir", str(tmp_path / name)])
    assert (tmp_path / "a" / "bandit_log.jsonl").read_bytes() == (tmp_path / "b" / "bandit_log.jsonl").read_bytes()


def test_without_noise_the_log_is_the_clean_runs_and_noise_draws_never_shift_the_sampler(tmp_path: Path) -> None:
    bt.main([*DEMO, "--outdir", str(tmp_path / "clean")])
    bt.main([*DEMO, "--reward-noise", "0", "--outdir", str(tmp_path / "zero")])
    assert ((tmp_path / "clean" / "bandit_log.jsonl").read_bytes()
            == (tmp_path / "zero" / "bandit_log.jsonl").read_bytes())
    bt.main([*DEMO, "--reward-noise", "0.3", "--outdir", str(tmp_path / "noisy")])
    clean, noisy = _log(tmp_path / "clean"), _log(tmp_path / "noisy")
    first_flip = next(i for i, r in enumerate(noisy) if r["reward_flipped"])
    # Up to and including the first flipped step, the two runs sampled the same actions.
    assert [r["action"] for r in clean[: first_flip + 1]] == [r["action"] for r in noisy[: first_flip + 1]]


def test_the_noise_sweep_learns_less_as_more_rewards_are_flipped_and_nothing_at_one_half(tmp_path: Path,
                                                                                          capsys) -> None:
    assert bt.main(["--noise-sweep", "0", "0.2", "0.4", "0.5", "--seeds", "40", "--steps", "100",
                    "--outdir", str(tmp_path / "s")]) == 0
    rows = json.loads((tmp_path / "s" / "noise_sweep.json").read_text(encoding="utf-8"))["rows"]
    means = [r["mean_final_expected_reward"] for r in rows]
    assert means == sorted(means, reverse=True)
    assert means[0] > 0.9 and means[-1] < 0.35  # clean: learned; a coin-flip grader: near the uniform 1/6
    out = capsys.readouterr().out
    assert "final J mean" in out and "wrote " in out


@pytest.mark.parametrize("args", [["--reward-noise", "1.5"], ["--reward-noise", "-0.1"],
                                  ["--noise-sweep", "0.2", "--ablation"], ["--reward-noise", "0.2", "--ablation"]])
def test_bad_reward_noise_settings_are_usage_errors_and_write_nothing(tmp_path: Path, args: list[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        rc = bt.main([*args, "--outdir", str(tmp_path / "x")])
        raise SystemExit(rc)
    assert exc.value.code == 2 and not (tmp_path / "x").exists()


# ---------------------------------------------------------------------------------------------
# A weak rubric pays the bandit (Milestone 3's format rewards); the strict verdict stays in view.
# ---------------------------------------------------------------------------------------------
FORMAT_ACTIONS = ["The answer is 323", "323", "Final:323", "Final: 324", "Final: 322", "Final: 0", "Final: 323"]


def _with_actions(actions: list[str]) -> list[str]:
    return [arg for text in actions for arg in ("--action", text)]


def test_a_format_only_bandit_learns_the_format_while_the_strict_reward_falls(tmp_path: Path, capsys) -> None:
    run = tmp_path / "f"
    assert bt.main(["--rubric", "format_only", *_with_actions(FORMAT_ACTIONS), "--steps", "100", "--seed", "1",
                    "--outdir", str(run)]) == 0
    out = capsys.readouterr().out
    manifest = _manifest(run)
    assert manifest["rubric"] == "format_only" and manifest["rewards"] == [0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0]
    assert manifest["strict_rewards"] == [0.0] * 6 + [1.0]
    probs = manifest["result"]["final_probs"]
    assert manifest["result"]["final_expected_reward"] > 0.9  # the format is learned ...
    assert probs[-1] < 0.2  # ... and the answer is not: seed 1 ends on a well-formed wrong number
    assert "exact expected STRICT reward (the goal): 0.1429 at the start -> " in out
    assert "(strict: 0.0 wrong_answer)" in (run / "bandit_story.txt").read_text(encoding="utf-8")


def test_over_seeds_a_format_only_bandit_ends_on_the_answer_by_chance_and_a_strict_one_always(tmp_path: Path) -> None:
    common = [*_with_actions(FORMAT_ACTIONS), "--steps", "100", "--noise-sweep", "0", "--seeds", "40"]
    bt.main(["--rubric", "format_only", *common, "--outdir", str(tmp_path / "f")])
    bt.main([*common, "--outdir", str(tmp_path / "s")])
    (weak,) = json.loads((tmp_path / "f" / "noise_sweep.json").read_text(encoding="utf-8"))["rows"]
    (strict,) = json.loads((tmp_path / "s" / "noise_sweep.json").read_text(encoding="utf-8"))["rows"]
    assert weak["mean_final_expected_reward"] > 0.9 and weak["mean_final_strict_expected_reward"] < 0.5
    assert weak["share_best_action_most_likely"] < 0.6 and strict["share_best_action_most_likely"] == 1.0


def test_the_default_rubric_is_strict_and_its_output_has_no_strict_column(tmp_path: Path, capsys) -> None:
    bt.main([*DEMO, "--outdir", str(tmp_path / "a")])
    assert "rubric" not in _manifest(tmp_path / "a") and "(strict:" not in capsys.readouterr().out


def test_an_unknown_rubric_is_a_usage_error_that_writes_nothing(tmp_path: Path) -> None:
    assert bt.main(["--rubric", "nope", "--outdir", str(tmp_path / "x")]) == 2
    assert not (tmp_path / "x").exists()
