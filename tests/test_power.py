"""course.power: the planning calculator's table, its JSON and its refusals (the maths:
tests/test_stats_clustered.py)."""

from __future__ import annotations

import json

from course.lib.stats import items_for_power


def test_the_worked_example_prints_a_row_per_samples_and_seeds(run_in_process, tmp_path):  # type: ignore[no-untyped-def]
    proc = run_in_process("course.power", ["--baseline-rate", "0.05", "--lift", "0.10", "--icc", "0.3",
                                           "--item-correlation", "0.5", "--seed-sd", "0.03"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Var(lift) = (V_b + V_c - 2 C) / items + seed_sd^2 / seeds" in proc.stdout
    assert len([line for line in proc.stdout.splitlines() if line.strip().startswith(("1 ", "4 ", "8 ", "16 "))]) == 8


def test_the_json_table_holds_what_items_for_power_computes(run_in_process, tmp_path):  # type: ignore[no-untyped-def]
    proc = run_in_process("course.power", ["--baseline-rate", "0.3", "--lift", "0.1", "--samples", "8", "--seeds", "1",
                                           "--icc", "0.2", "--item-correlation", "0.8", "--json"], cwd=tmp_path)
    row = json.loads(proc.stdout)["rows"][0]
    assert row["items"] == items_for_power(0.3, 0.1, samples=8, icc=0.2, item_correlation=0.8) == 50
    assert row["completions"] == 50 * 8 * 2


def test_a_lift_no_number_of_items_can_detect_says_add_seeds(run_in_process, tmp_path):  # type: ignore[no-untyped-def]
    proc = run_in_process("course.power", ["--baseline-rate", "0.3", "--lift", "0.1", "--seed-sd", "0.08",
                                           "--seeds", "1"], cwd=tmp_path)
    assert proc.returncode == 0
    assert "add seeds" in proc.stdout


def test_without_a_baseline_rate_or_a_run_it_says_which_flag(run_in_process, tmp_path):  # type: ignore[no-untyped-def]
    proc = run_in_process("course.power", ["--lift", "0.1"], cwd=tmp_path)
    assert proc.returncode == 2 and "pass --baseline-rate (or --from-run DIR)" in proc.stderr


def test_a_lift_beyond_one_hundred_percent_is_refused(run_in_process, tmp_path):  # type: ignore[no-untyped-def]
    proc = run_in_process("course.power", ["--baseline-rate", "0.95", "--lift", "0.1"], cwd=tmp_path)
    assert proc.returncode == 2 and "--lift 0.1 must be non-zero and keep" in proc.stderr
