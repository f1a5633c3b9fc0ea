"""Loop A, measurement: score a file of completions against a dataset and write a run directory.

Run it (no arguments = the bundled dev set and its frozen rollouts)::

    python -m course.eval
    python -m course.eval --dataset data/datasets/math_dev.jsonl \\
        --completions data/rollouts/frozen_rollouts_dev.jsonl --outdir runs/demo_eval_clean
    python -m course.eval --rubric contains_answer      # measure with a hackable rubric (not comparable with strict)

The pipeline (reading, scoring, the run directory and its files) is
``course.lib.evaluation.pipeline``; this module parses the command line and prints.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, Sequence

from course.cli import EXIT_OK, info, make_parser, run
from course.errors import CourseError
from course.instrument.rubrics import RUBRICS
from course.lib.evaluation.pipeline import BUNDLED_COMPLETIONS, BUNDLED_DATASET, Progress, evaluate, rubric_line
from course.lib.evaluation.summary import breakdown_lines, headline
from course.lib.evaluation.inspection import inspect_failures_command
from course.lib.records.manifest import PROJECT_ROOT, shown_here
from course.lib.visible import dumps_safe, visible

def _progress_printer() -> Progress | None:
    """A self-overwriting progress line on stderr, only when stderr is a terminal."""
    if not sys.stderr.isatty():
        return None
    start = time.perf_counter()
    last = [start]

    def show(n: int) -> None:
        now = time.perf_counter()
        if now - last[0] >= 0.5:
            last[0] = now
            print(f"\rscored {n:,} lines ({n / (now - start):,.0f} lines/s)", end="", file=sys.stderr, flush=True)

    return show



# ===========================================================================
# Command line
# ===========================================================================
EXAMPLE = """\
  python -m course.eval                                   # bundled dev set + frozen rollouts
  python -m course.eval --dataset data/datasets/math_dev.jsonl \\
      --completions data/rollouts/frozen_rollouts_dev.jsonl --outdir runs/demo_eval_clean
  python -m course.eval --rubric contains_answer --outdir runs/demo_eval_contains
  python -m course.inspect_run --run runs/demo_eval_clean --only-fails --top-k 5 --show 2"""


def _resolve_inputs(dataset: str | None, completions: str | None) -> tuple[Path, Path]:
    if (dataset is None) != (completions is None):
        raise CourseError("pass both --dataset and --completions, or neither (to use the bundled dev set)")
    if dataset is None or completions is None:
        return PROJECT_ROOT / BUNDLED_DATASET, PROJECT_ROOT / BUNDLED_COMPLETIONS
    return Path(dataset), Path(completions)


def _counted(summary: dict[str, Any]) -> str:
    """``100 items``, or for a selection pack scored whole ``100 items x 8 samples``."""
    if "samples_per_item" in summary:
        return f"{summary['items']} items x {summary['samples_per_item']} samples"
    return f"{summary['n']} items"


def _main(args_in: Sequence[str] | None) -> int:
    parser = make_parser(
        "python -m course.eval",
        "Score every completion against its dataset item with the strict verifier (or another rubric, "
        "--rubric) and write a run directory (manifest.json, results.jsonl, summary.json, summary.md). "
        "With neither --dataset nor --completions it evaluates the bundled dev set and its frozen rollouts.",
        EXAMPLE,
    )
    parser.add_argument("--dataset", help=f"dataset JSONL (default: {BUNDLED_DATASET})")
    parser.add_argument("--completions", help=f"completions JSONL (default: {BUNDLED_COMPLETIONS}); in dataset order "
                        "they are streamed (memory: one line); in any other order each item's line is found by an "
                        "index of about 60 bytes per item, and the run takes longer")
    parser.add_argument("--outdir", help="run directory to create (default: the next free runs/eval_NNN)")
    parser.add_argument("--force", action="store_true", help="overwrite an existing run directory")
    parser.add_argument(
        "--allow-missing", action="store_true",
        help="score dataset items without a completion as failures (error code missing_completion)",
    )
    parser.add_argument("--split", help="split name for the manifest (default: inferred from the file name)")
    parser.add_argument(
        "--rubric", default="strict", choices=tuple(RUBRICS), metavar="NAME",
        help="the rubric that scores the completions: strict (default, reward spec v1) or a hackable one, "
             f"to measure what a weak reward would report ({', '.join(RUBRICS)}; see python -m course.rubrics). "
             "The rubric is a Locked Room field: course.gate refuses to compare runs scored by different rubrics",
    )
    parser.add_argument("--json", action="store_true", help="print the run directory and summary as JSON")
    args = parser.parse_args(args_in)

    dataset, completions = _resolve_inputs(args.dataset, args.completions)
    progress = _progress_printer()
    run_dir, manifest, summary = evaluate(
        dataset, completions, outdir=args.outdir, force=args.force, allow_missing=args.allow_missing,
        split=args.split, argv=args_in, progress=progress, rubric=args.rubric,
    )
    if progress is not None:
        print("\r\033[K", end="", file=sys.stderr, flush=True)
    if manifest["split"] is None:
        info("note: split unknown (not in the dataset file name); pass --split to record it")
    if args.json:
        print(dumps_safe({"run_dir": str(run_dir), "summary": summary}, sort_keys=True, indent=2))
        return EXIT_OK
    print(
        f"Evaluated {_counted(summary)}: {visible(shown_here(manifest['dataset']['path']))} "
        f"(split {visible(manifest['split'] or 'unknown')}) "
        f"x {visible(shown_here(manifest['completions']['path']))} (policy {visible(manifest['policy'])})"
    )
    print(f"Scorer {manifest['scorer_version']} (fingerprint {manifest['scorer_fingerprint'][:12]})")
    rubric = rubric_line(manifest)
    if rubric:
        print(rubric)
    print(headline(summary))
    print(f"Mean reward: {summary['mean_reward']:.3f}")
    lines = breakdown_lines(summary)
    if lines:
        print(f"Failures by error code ({summary['failed']} of {summary['n']}):")
        print("\n".join(lines))
    if summary["n_missing"]:
        print(f"Missing completions scored as failures: {summary['n_missing']}")
    print(f"Wrote {visible(str(run_dir))}/ (manifest.json, results.jsonl, summary.json, summary.md)")
    print(f"Inspect failures: {inspect_failures_command(run_dir)}")
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    return run(_main, argv)


if __name__ == "__main__":
    raise SystemExit(main())
