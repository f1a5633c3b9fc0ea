"""Loop A, measurement: score a file of completions against a dataset and write a run directory.

Run it (no arguments = the bundled dev set and its frozen rollouts)::

    python -m course.eval
    python -m course.eval --dataset data/datasets/math_dev.jsonl \\
        --completions data/rollouts/frozen_rollouts_dev.jsonl --outdir runs/demo_eval_clean
    python -m course.eval --rubric contains_answer      # measure with a hackable rubric (not comparable with strict)

Past one process (docs/scaling.md): ``--shard K/N`` writes part K of N (K from 0), and
``python -m course.eval merge PARTS... --outdir RUN`` checks the parts and writes the run one
process would have written, byte for byte (``course.lib.evaluation.shards``)::

    python -m course.eval --shard 0/2 --outdir runs/part_0
    python -m course.eval --shard 1/2 --outdir runs/part_1
    python -m course.eval merge runs/part_0 runs/part_1 --outdir runs/merged

The pipeline (reading, scoring, the run directory and its files) is
``course.lib.evaluation.pipeline``; this module parses the command line and prints.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, Sequence

from course.cli import EXIT_OK, add_run_options, info, make_parser, run, shard
from course.instrument.rubric_registry import RUBRICS
from course.lib.bundled import FROZEN_ROLLOUTS_DEV, MATH_DEV
from course.lib.evaluation.inspection import inspect_failures_command
from course.lib.evaluation.pipeline import (
    Progress,
    evaluate,
    merge_eval_runs,
    resolve_inputs,
    rubric_line,
)
from course.lib.evaluation.summary import breakdown_lines, headline
from course.lib.records.manifest import shown_here
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
  python -m course.inspect_run --run runs/demo_eval_clean --only-fails --top-k 5 --show 2
  python -m course.eval --shard 0/2 --outdir runs/part_0 && python -m course.eval --shard 1/2 --outdir runs/part_1
  python -m course.eval merge runs/part_0 runs/part_1 --outdir runs/merged   # = the one-process run, byte for byte"""
MERGE = "merge"  # `python -m course.eval merge PARTS...`: the one subcommand; any other first argument is today's tool
MERGE_EXAMPLE = """\
  python -m course.eval --shard 0/2 --outdir runs/part_0
  python -m course.eval --shard 1/2 --outdir runs/part_1
  python -m course.eval merge runs/part_0 runs/part_1 --outdir runs/merged
  python -m course.gate --baseline runs/demo_eval_clean --candidate runs/merged --min-delta 0.00"""


def _counted(summary: dict[str, Any]) -> str:
    """``100 items``, or for a selection pack scored whole ``100 items x 8 samples``."""
    if "samples_per_item" in summary:
        return f"{summary['items']} items x {summary['samples_per_item']} samples"
    return f"{summary['n']} items"


def _main(args_in: Sequence[str] | None) -> int:
    given = list(sys.argv[1:] if args_in is None else args_in)
    if given[:1] == [MERGE]:  # a subcommand only by its first word: no dataset or flag is read as one
        return _merge(given[1:], args_in)
    parser = make_parser(
        "python -m course.eval",
        "Score every completion against its dataset item with the strict verifier (or another rubric, "
        "--rubric) and write a run directory (manifest.json, results.jsonl, summary.json, summary.md). "
        "With neither --dataset nor --completions it evaluates the bundled dev set and its frozen rollouts. "
        "`python -m course.eval merge PARTS... --outdir RUN` joins the parts of a --shard run (see its --help).",
        EXAMPLE,
    )
    parser.add_argument("--dataset", help=f"dataset JSONL (default: {MATH_DEV})")
    parser.add_argument("--completions", help=f"completions JSONL (default: {FROZEN_ROLLOUTS_DEV}); in dataset order "
                        "they are streamed (memory: one line); in any other order each item's line is found by an "
                        "index of about 60 bytes per item, and the run takes longer")
    add_run_options(parser, "run directory to create (default: the next free runs/eval_NNN)")
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
    parser.add_argument(
        "--shard", type=shard, metavar="K/N",
        help="score only part K of N (K from 0 to N-1): the items at dataset positions p with p mod N = K (and only "
             "their lines are parsed and checked, with line 1); the manifest records the shard, and "
             "`python -m course.eval merge` joins the N parts into the one-process run (docs/scaling.md)",
    )
    parser.add_argument("--json", action="store_true", help="print the run directory and summary as JSON")
    args = parser.parse_args(args_in)

    dataset, completions = resolve_inputs(args.dataset, args.completions)
    progress = _progress_printer()
    run_dir, manifest, summary = evaluate(
        dataset, completions, outdir=args.outdir, force=args.force, allow_missing=args.allow_missing,
        split=args.split, argv=args_in, progress=progress, rubric=args.rubric, shard=args.shard,
    )
    if progress is not None:
        print("\r\033[K", end="", file=sys.stderr, flush=True)
    if manifest["split"] is None:
        info("note: split unknown (not in the dataset file name); pass --split to record it")
    if args.json:
        print(dumps_safe({"run_dir": str(run_dir), "summary": summary}, sort_keys=True, indent=2))
        return EXIT_OK
    if args.shard is not None:
        print(f"Part {args.shard.label} of a sharded run: {summary['n']} items of its shard "
              f"(merge the {args.shard.count} parts with python -m course.eval merge PARTS... --outdir RUN)")
    _print_run(run_dir, manifest, summary)
    return EXIT_OK


def _merge(given: list[str], args_in: Sequence[str] | None) -> int:
    parser = make_parser(
        "python -m course.eval merge",
        "Join the parts of a sharded evaluation (course.eval --shard K/N, one run directory per part) into the run "
        "one process would have written: the same results.jsonl and summary.json, byte for byte. Refuses parts "
        "whose fingerprints or settings differ, a missing or repeated shard, and any id missing, repeated or not "
        "in the dataset.",
        MERGE_EXAMPLE,
    )
    parser.add_argument("parts", nargs="+", metavar="PART", help="the part run directories, in any order")
    add_run_options(parser, "run directory to create (default: the next free runs/eval_NNN)")
    parser.add_argument("--dataset", help="the dataset the parts measured, if not at the path their manifests record "
                        "(its sha256 must be the recorded one)")
    parser.add_argument("--json", action="store_true", help="print the run directory and summary as JSON")
    args = parser.parse_args(given)
    run_dir, manifest, summary = merge_eval_runs(args.parts, outdir=args.outdir, force=args.force,
                                                 dataset=args.dataset, argv=args_in)
    if args.json:
        print(dumps_safe({"run_dir": str(run_dir), "summary": summary}, sort_keys=True, indent=2))
        return EXIT_OK
    print(f"Merged {len(args.parts)} parts: every one of the {summary['n']} dataset items exactly once")
    _print_run(run_dir, manifest, summary)
    return EXIT_OK


def _print_run(run_dir: Path, manifest: dict, summary: dict) -> None:
    """What course.eval prints about a run it wrote (a whole run, a part, or parts merged)."""
    print(
        f"Evaluated {_counted(summary)}: {visible(shown_here(manifest['dataset']['path']))} "
        f"(split {visible(manifest['split'] or 'unknown')}) "
        f"x {visible(shown_here(manifest['completions']['path']))} (policy {visible(manifest['policy'])})"
    )
    print(f"Scorer {manifest['scorer_version']} (fingerprint {manifest['scorer_fingerprint'][:12]})")
    rubric = rubric_line(manifest)
    if rubric:
        print(rubric)
    if not summary["n"]:  # a part whose shard holds no item (more parts than items)
        print(f"Wrote {visible(str(run_dir))}/ (no items in this shard)")
        return
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


def main(argv: Sequence[str] | None = None) -> int:
    return run(_main, argv)


if __name__ == "__main__":
    raise SystemExit(main())
