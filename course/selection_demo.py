"""Loop B, selection: best-of-N over a pack of samples, with exact pass@k. No learning happens here.

Run it (the instructor's live demo; --dataset/--samples default to the bundled dev files)::

    python -m course.selection_demo --dataset data/datasets/math_dev.jsonl \\
        --samples data/rollouts/selection_pack_dev.jsonl --n 1 --outdir runs/demo_sel_n1
    python -m course.selection_demo --dataset data/datasets/math_dev.jsonl \\
        --samples data/rollouts/selection_pack_dev.jsonl --n 4 --outdir runs/demo_sel_n4
    python -m course.gate --baseline runs/demo_sel_n1 --candidate runs/demo_sel_n4 --min-delta 0  # REJECT: selection.n

For every dataset item the tool scores ALL samples of the item's pack line with
the strict verifier, hands the FIRST N (stored order) to ``pick_best``
(``course/assignments/pick_best.py``, the student exercise), and records which
sample was chosen (``dev-0001#3``). The same policy produced every sample: a
higher best-of-N pass rate is bought with N times the sampling compute, and
says nothing about the policy having learned anything.

The run directory is the same kind ``course.eval`` writes (formats in docs/formats.md):
  manifest.json   course.eval's Locked Room fields + a "selection" block (n, rule, picker, picker_sha256)
  results.jsonl   one line per dataset item, dataset order: the chosen sample, the N considered, pack counts
  summary.json    pass@1 (sample 0), best-of-N, the gain (labelled selection), pass@k / pass^k curves,
                  chosen samples by error code, items where selection still fails
  summary.json and results.jsonl carry no time or path: a rerun is byte-identical (``diff`` them).

Memory: the dataset is held (small); the pack is streamed one line at a time.
A pack in dataset order (every course tool writes one) is written through as
it is read; a pack in another order still works, holding only the results that
arrived early until their turn comes.

The pipeline and the report are ``course.lib.selection.pipeline``; the maths (pure,
tested by hand calculation) ``course/lib/selection/best_of_n.py``; the estimators ``course/lib/stats.py``.
This module parses the command line and prints.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import course.assignments.pick_best as assignment
from course.cli import EXIT_OK, add_run_options, info, make_parser, positive_int, run
from course.errors import CourseError
from course.lib.bundled import MATH_DEV, PROJECT_ROOT, SELECTION_PACK_DEV
from course.lib.selection.pipeline import report_lines, select
from course.lib.visible import dumps_safe

EXAMPLE = (
    """\
  python -m course.selection_demo --n 4                  # bundled dev set + its selection pack
  python -m course.selection_demo --dataset data/datasets/math_dev.jsonl \\
      --samples data/rollouts/selection_pack_dev.jsonl --n 1 --outdir runs/demo_sel_n1
  python -m course.selection_demo --dataset data/datasets/math_dev.jsonl \\
      --samples data/rollouts/selection_pack_dev.jsonl --n 4 --outdir runs/demo_sel_n4
  diff runs/demo_sel_n4/results.jsonl runs/demo_sel_n4_repeat/results.jsonl   # after a repeat: no output
  python -m course.gate --baseline runs/demo_sel_n1 --candidate runs/demo_sel_n4 --min-delta 0"""
    "   # REJECT: selection compute"
)


def _resolve_inputs(dataset: str | None, samples: str | None) -> tuple[Path, Path]:
    if (dataset is None) != (samples is None):
        raise CourseError("pass both --dataset and --samples, or neither (to use the bundled dev set and its pack)")
    if dataset is None or samples is None:
        return PROJECT_ROOT / MATH_DEV, PROJECT_ROOT / SELECTION_PACK_DEV
    return Path(dataset), Path(samples)


def _main(args_in: Sequence[str] | None) -> int:
    parser = make_parser(
        "python -m course.selection_demo",
        "Best-of-N selection (Loop B): for every dataset item, score the first N samples of its pack "
        "line with the strict verifier, let pick_best (course/assignments/pick_best.py) choose one, and "
        "write a run directory like course.eval's. Also reports pass@1, the selection gain (more "
        "compute, not learning), the unbiased pass@k curve from all samples, pass^k, and the items "
        "where selection still fails. With neither --dataset nor --samples it uses the bundled dev set.",
        EXAMPLE,
    )
    parser.add_argument("--dataset", help=f"dataset JSONL (default: {MATH_DEV})")
    parser.add_argument(
        "--samples", "--pack", dest="samples", help=f"selection pack JSONL (default: {SELECTION_PACK_DEV})"
    )
    parser.add_argument(
        "--n", type=positive_int, required=True, metavar="N",
        help="choose among the first N samples of each item (N=1: just sample 0, as course.eval scores)",
    )
    add_run_options(parser, "run directory to create (default: the next free runs/sel_nN_NNN)")
    parser.add_argument("--split", help="split name for the manifest (default: inferred from the dataset file name)")
    parser.add_argument("--json", action="store_true", help="print the run directory and summary as JSON")
    args = parser.parse_args(args_in)

    dataset, samples = _resolve_inputs(args.dataset, args.samples)
    run_dir, manifest, summary = select(
        dataset, samples, n=args.n, outdir=args.outdir, force=args.force, split=args.split, argv=args_in,
        picker=assignment.pick_best, rule=assignment.SELECTION_RULE,
    )
    if manifest["split"] is None:
        info("note: split unknown (not in the dataset file name); pass --split to record it")
    if args.json:
        print(dumps_safe({"run_dir": str(run_dir), "summary": summary}, sort_keys=True, indent=2))
        return EXIT_OK
    print("\n".join(report_lines(run_dir, manifest, summary)))
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    return run(_main, argv)


if __name__ == "__main__":
    raise SystemExit(main())
