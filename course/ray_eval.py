"""Loop A on Ray: score a completions file as N Ray tasks (one part each), then merge into one run.

The merged run is the run ``python -m course.eval`` writes in one process, byte for byte
(results.jsonl, summary.json), so ``course.gate`` compares it as that run. On this machine a local
Ray is started; ``--address`` runs the same code on a cluster (docs/scaling.md)::

    python -m course.ray_eval --shards 2 --outdir runs/ray_eval
    python -m course.ray_eval --dataset big_dev.jsonl --completions big_rollouts.jsonl --shards 64 \\
        --address auto --parts-dir /shared/parts --outdir /shared/runs/big_eval

The work is ``course.integrations.ray.evaluate_on_ray``; this module parses and prints.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from course.cli import EXIT_OK, int_in, make_parser, positive_int, run
from course.instrument.rubric_registry import RUBRICS
from course.lib.bundled import FROZEN_ROLLOUTS_DEV, MATH_DEV
from course.lib.evaluation.inspection import inspect_failures_command
from course.lib.evaluation.pipeline import resolve_inputs
from course.lib.evaluation.shards import check_parts_outside
from course.lib.evaluation.summary import pass_rate_line
from course.lib.extras import require
from course.lib.visible import dumps_safe, visible

EXAMPLE = """\
  python -m course.ray_eval --shards 2 --outdir runs/ray_eval        # a local Ray, the bundled dev set
  python -m course.gate --baseline runs/demo_eval_clean --candidate runs/ray_eval --min-delta 0.00
  python -m course.ray_eval --dataset /shared/big_dev.jsonl --completions /shared/big_rollouts.jsonl \\
      --shards 64 --address auto --parts-dir /shared/parts --outdir /shared/runs/big_eval   # on a cluster"""
MAX_SHARDS = 100_000


def _main(argv: Sequence[str] | None) -> int:
    parser = make_parser(
        "python -m course.ray_eval",
        "Score completions against a dataset as Ray tasks, one part of the dataset each (course.eval --shard K/N), "
        "then merge the parts into the run one process would have written (course.eval merge): the same "
        "results.jsonl and summary.json, byte for byte. Needs the ray extra.",
        EXAMPLE,
    )
    parser.add_argument("--dataset", help=f"dataset JSONL (default: {MATH_DEV})")
    parser.add_argument("--completions", help=f"completions JSONL (default: {FROZEN_ROLLOUTS_DEV})")
    parser.add_argument("--shards", type=int_in(1, MAX_SHARDS), required=True,
                        help=f"how many parts (Ray tasks), 1 to {MAX_SHARDS:,}")
    parser.add_argument("--outdir", help="the merged run directory (default: the next free runs/eval_NNN)")
    parser.add_argument("--parts-dir", help="where the part runs go (default: OUTDIR_parts); on a cluster, storage "
                        "every node shares")
    parser.add_argument("--force", action="store_true", help="overwrite the merged run and the part runs")
    parser.add_argument("--allow-missing", action="store_true",
                        help="score dataset items without a completion as failures (as course.eval)")
    parser.add_argument("--split", help="split name for the manifest (default: inferred from the file name)")
    parser.add_argument("--rubric", default="strict", choices=tuple(RUBRICS), metavar="NAME",
                        help=f"the rubric that scores the completions (default strict; {', '.join(RUBRICS)})")
    parser.add_argument("--address", help="a running Ray cluster (auto, or ray://HOST:10001); default: start a "
                        "local Ray on this machine")
    parser.add_argument("--num-cpus", type=positive_int, default=None,
                        help="CPUs of the local Ray (default: Ray's own count); ignored with --address")
    parser.add_argument("--json", action="store_true", help="print the merged run, its summary and the parts as JSON")
    args = parser.parse_args(argv)
    check_parts_outside(args.outdir, args.parts_dir)  # a usage error: before Ray starts, before any work
    require("ray", "course.ray_eval")  # before any work: one line naming the extra

    from course.integrations.ray import evaluate_on_ray

    dataset, completions = resolve_inputs(args.dataset, args.completions)
    run_dir, manifest, summary, parts = evaluate_on_ray(
        dataset, completions, shards=args.shards, outdir=args.outdir, parts_dir=args.parts_dir, force=args.force,
        rubric=args.rubric, allow_missing=args.allow_missing, split=args.split, address=args.address,
        num_cpus=args.num_cpus, argv=argv,
    )
    if args.json:
        print(dumps_safe({"run_dir": str(run_dir), "summary": summary,
                          "parts": [p.__dict__ for p in parts]}, sort_keys=True, indent=2))
        return EXIT_OK
    hosts = sorted({p.host for p in parts})
    slowest = max(parts, key=lambda p: p.seconds)
    print(f"Ray ran {len(parts)} parts on {len(hosts)} host{'s' if len(hosts) != 1 else ''} "
          f"(slowest part {slowest.shard}: {slowest.n_items} items in {slowest.seconds:.2f}s)")
    print(f"Merged {summary['n']} items, each exactly once: {visible(str(run_dir))}/ "
          f"(parts in {visible(str(Path(parts[0].run_dir).parent))}/)")
    print(pass_rate_line(summary["passed"], summary["n"]))
    print(f"Scorer {manifest['scorer_version']} (fingerprint {manifest['scorer_fingerprint'][:12]})")
    print(f"Inspect failures: {inspect_failures_command(run_dir)}")
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    return run(_main, argv)


if __name__ == "__main__":
    raise SystemExit(main())
