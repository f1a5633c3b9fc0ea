"""Fault suite, issue 41 item 6: no flag, and no product of flags, asks for unbounded work.

The attack: a count that is each within its flag's range but whose product is hours of CPU
(1,001 noise rates x 10,000 seeds; a million Monte-Carlo samples; 20,000 logits enumerated; a lift
of 1e-9 points to plan for). Each tool refuses such a plan in one line naming the flags, before any
work and with nothing written, through ``course.cli.check_work``; work that is allowed but takes more
than a few seconds says so on stderr (``course.cli.with_progress``, a progress line on a terminal).
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from course import bandit_train, kl_estimators, kl_tradeoff_demo, passk_estimators, power
from course.lib.learning import kl_estimators as kl
from course.lib.learning.bandit import run_noise_sweep
from course.lib.stats import items_for_power
from course.tinylm import sft_data


def refused(capsys: pytest.CaptureFixture[str], code: int) -> str:
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "Traceback" not in err[0], err
    return err[0]


@pytest.fixture
def alarm():  # type: ignore[no-untyped-def]
    """Fail, instead of hanging the suite, when the code under test does not return within 20 s."""
    def ring(signum: int, frame: object) -> None:
        raise TimeoutError("still running after 20 s")

    old = signal.signal(signal.SIGALRM, ring)
    signal.alarm(20)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


# ---------------------------------------------------------------------------
# course.kl_estimators
# ---------------------------------------------------------------------------
def test_kl_estimators_refuses_more_logits_than_it_can_enumerate_and_print(capsys) -> None:
    line = refused(capsys, kl_estimators.main(["--policy", "categorical", "--logits", *["0.1"] * 101]))
    assert "--logits: 101 values" in line and "at most 100" in line


def test_kl_estimators_refuses_a_million_samples_naming_the_flags_and_the_bound(capsys) -> None:
    line = refused(capsys, kl_estimators.main(["--samples", "1000000"]))
    assert line.startswith("error: --samples x --logits x --policy: 24,000,000") and "bound of 2,000,000" in line


def test_kl_estimators_refuses_more_sample_sizes_than_table_rows(capsys) -> None:
    line = refused(capsys, kl_estimators.main(["--samples", *["2"] * 11]))
    assert "--samples: 11 sizes" in line


def test_kl_estimators_says_on_stderr_that_a_long_draw_is_under_way_and_prints_the_same_tables(
        capsys, monkeypatch) -> None:
    assert kl_estimators.main(["--samples", "10", "100"]) == 0
    quiet = capsys.readouterr()
    monkeypatch.setattr(kl_estimators, "PROGRESS_UNITS", 10)
    assert kl_estimators.main(["--samples", "10", "100"]) == 0
    loud = capsys.readouterr()
    assert quiet.err == "" and "kl_estimators: drawing 330 samples" in loud.err
    assert loud.out == quiet.out


def test_kl_estimators_sizes_drawn_one_at_a_time_are_the_rows_drawn_together() -> None:
    pol = kl.categorical([1.0, 0.5, -0.5], [0.0, 0.0, 0.0])
    together = kl_estimators.analyse(pol, True, [10, 100], 3)
    assert together["monte_carlo"] == [r.__dict__ for r in kl.monte_carlo(pol, [10, 100], 3)]


# ---------------------------------------------------------------------------
# course.power
# ---------------------------------------------------------------------------
def test_planning_for_a_lift_of_a_billionth_returns_at_once(alarm) -> None:
    assert items_for_power(0.3, 1e-9, samples=1, icc=0.3, item_correlation=0.5) > 10**17


def test_power_says_a_lift_too_small_for_any_benchmark_is_undetectable(capsys, alarm) -> None:
    assert power.main(["--baseline-rate", "0.3", "--lift", "1e-9"]) == 0
    out = capsys.readouterr().out
    assert "undetectable with any of these designs (at most 10,000,000 items)" in out
    assert out.count("undetectable in practice") == 8


def test_power_refuses_a_table_of_more_rows_than_its_bound(capsys) -> None:
    args = ["--baseline-rate", "0.3", "--lift", "0.1", "--samples", *map(str, range(1, 101)),
            "--seeds", *map(str, range(1, 12))]
    line = refused(capsys, power.main(args))
    assert line.startswith("error: --samples x --seeds: 1,100 table rows") and "bound of 1,000" in line


# ---------------------------------------------------------------------------
# course.bandit_train (the M3 lesson)
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("args, words", [
    (["--noise-sweep", *[f"{i / 1000:g}" for i in range(1001)]], "--noise-sweep: 1,001 rates; at most 101"),
    (["--noise-sweep", "0", "0.1", "--seeds", "10000"], "--noise-sweep x --seeds x --steps: 2,000,000 updates"),
    (["--ablation", "--seeds", "10000", "--steps", "100000"], "--ablation --seeds x --steps: 8,000,000,000 updates"),
])
def test_bandit_train_refuses_a_many_seed_plan_past_its_bound_before_any_work(
        capsys, tmp_path: Path, args: list[str], words: str) -> None:
    line = refused(capsys, bandit_train.main([*args, "--outdir", str(tmp_path / "run")]))
    assert words in line, line
    assert list(tmp_path.iterdir()) == []


def test_the_noise_sweep_run_a_rate_at_a_time_gives_the_rows_of_all_rates_at_once() -> None:
    common = dict(seeds=5, base_seed=0, steps=20, lr=0.5)
    together = run_noise_sweep([1.0, 0.0, 0.0], rates=[0.0, 0.3], **common)  # type: ignore[arg-type]
    apart = [row for rate in (0.0, 0.3) for row in run_noise_sweep([1.0, 0.0, 0.0], rates=[rate], **common)]  # type: ignore[arg-type]
    assert together == apart


def test_a_long_bandit_run_says_so_on_stderr(capsys, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(bandit_train, "PROGRESS_STEPS", 10)
    assert bandit_train.main(["--steps", "20", "--outdir", str(tmp_path / "run")]) == 0
    assert "bandit_train: steps: 20 to go" in capsys.readouterr().err


# ---------------------------------------------------------------------------
# The other tools with a list or a count that multiplies the work
# ---------------------------------------------------------------------------
def test_passk_estimators_refuses_a_table_past_its_work_bound(capsys) -> None:
    line = refused(capsys, passk_estimators.main(["--n", "1000", "--k", "1", "--p", "0.5", "--reps", "1000000"]))
    assert line.startswith("error: --reps x --n x --k x --p: 1,005,000,000") and "bound of 40,000,000" in line


def test_kl_tradeoff_demo_refuses_more_betas_than_rows_it_tabulates(capsys, tmp_path: Path) -> None:
    betas = [f"{0.01 * i:g}" for i in range(1, 102)]
    line = refused(capsys, kl_tradeoff_demo.main(["--betas", *betas, "--outdir", str(tmp_path / "run")]))
    assert "--betas: 101 values; at most 100" in line and not (tmp_path / "run").exists()


def test_sft_data_prints_at_most_a_hundred_thousand_examples(capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        sft_data.main(["--n", "100001"])
    assert exit_.value.code == 2 and "must be between 1 and 100,000" in capsys.readouterr().err
