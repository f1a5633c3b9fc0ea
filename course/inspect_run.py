"""Look inside a run: its most (and least) frequent outcome codes, and real examples of each, characters made visible.

Averages hide spec bugs and reward hacks; the examples do not. This is the
"top 5 / bottom 5" of measurement hygiene:

* ``--top-k K``    the K MOST frequent outcome codes (default 5): where most items land;
* ``--bottom-k K`` the K LEAST frequent codes present in the run: where a rare spec bug or a
  new loophole shows up first (with ``--top-k``, codes already listed above are left out);
* ``--only-fails`` leaves out ``ok``; ``--only-passes`` shows only ``ok`` (is each pass deserved?);
* ``--code C``     one code.

For each chosen code it prints its count and share, then ``--show S`` items: id,
prompt (read from the dataset the manifest names, when that file is still the
same), expected answer, what the scorer extracted, its reason, and the completion
with every invisible or look-alike character escaped (course/lib/visible.py:
``⟨\\n⟩`` newline, ``⟨\\t⟩`` tab, ``⟨U+XXXX⟩`` anything outside printable ASCII,
named underneath). The completion sits between ⟦ and ⟧ so leading and trailing
spaces show. Everything read from the run directory is escaped the same way.
The header names the rubric that scored the run (``course.eval --rubric``).

Only scoring runs (course.eval, course.selection_demo) have results to inspect. Pointed
at another kind of run (course.tinylm.rl, a sweep, bandit_train, toy_mdp,
kl_tradeoff_demo) or at a folder of runs, it exits 2 with one line saying what the
directory is and what to inspect instead (a tiny-LM run: its eval_final_holdout/ and
eval_pi0_holdout/ sub-runs).

    python -m course.inspect_run --run runs/demo_eval_clean --top-k 5 --show 2
    python -m course.inspect_run --run runs/demo_eval_clean --only-fails --top-k 5 --bottom-k 5 --show 1
    python -m course.inspect_run --run runs/demo_eval_clean --code lookalike_minus --show 10

The report itself is built by ``course.lib.evaluation.inspection``; this module parses and prints.
"""

from __future__ import annotations

import sys
from typing import Sequence

from course.cli import EXIT_OK, info, make_parser, non_negative_int, run
from course.lib.evaluation.inspection import inspect, open_scoring_run, render_example, results_warning

__all__ = ["main", "render_example"]  # render_example: course.report's tests compare its examples with this tool's

EXAMPLE = """\
  python -m course.inspect_run --run runs/demo_eval_clean --top-k 5 --show 2
  python -m course.inspect_run --run runs/demo_eval_clean --only-fails --top-k 5 --bottom-k 5 --show 1
  python -m course.inspect_run --run runs/demo_eval_clean --only-passes --show 3
  python -m course.inspect_run --run runs/demo_eval_clean --code multiple_lines --show 5"""

DESCRIPTION = (
    "Show the outcome codes of a scoring run (course.eval, course.selection_demo) and a few real examples of "
    "each, with invisible and look-alike characters escaped (⟨\\n⟩ newline, ⟨\\t⟩ tab, ⟨U+XXXX⟩ any non-ASCII "
    "character). 'Top K' = the K MOST frequent codes (count descending); 'bottom K' = the K LEAST frequent codes "
    "present (count ascending): together the 'top 5 / bottom 5' look of measurement hygiene. Ties follow the "
    "order in which the scorer checks its rules. Another kind of run (a tiny-LM run, a sweep, a bandit log) or "
    "a folder of runs: exit 2 with one line naming what to inspect instead."
)


def _main(args_in: Sequence[str] | None) -> int:
    parser = make_parser("python -m course.inspect_run", DESCRIPTION, EXAMPLE)
    parser.add_argument("--run", required=True, help="a run directory written by course.eval (or selection_demo)")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--only-fails", action="store_true", help="leave out the 'ok' category")
    which.add_argument("--only-passes", action="store_true",
                       help="show only the 'ok' category (items that passed): is each reward deserved?")
    parser.add_argument("--top-k", type=non_negative_int, default=None, metavar="K",
                        help="the K MOST frequent codes, count descending (default 5 unless --bottom-k is given)")
    parser.add_argument("--bottom-k", type=non_negative_int, default=None, metavar="K",
                        help="the K LEAST frequent codes present, count ascending "
                             "(with --top-k: those not already listed)")
    parser.add_argument("--show", type=non_negative_int, default=2, help="examples per category (default 2)")
    parser.add_argument("--code", help="show only this error code (e.g. lookalike_minus)")
    args = parser.parse_args(args_in)
    if args.code is not None and (args.only_fails or args.only_passes):
        parser.error("--code shows one code: it cannot be combined with --only-fails or --only-passes")
    top_k = 5 if args.top_k is None and args.bottom_k is None else args.top_k
    if hasattr(sys.stdout, "reconfigure"):  # a terminal that cannot show ⟨ still gets a readable escape
        sys.stdout.reconfigure(errors="backslashreplace")
    run_dir = open_scoring_run(args.run)
    warning = results_warning(run_dir)
    if warning:
        info(warning)
    lines = inspect(run_dir, top_k=top_k, bottom_k=args.bottom_k, show=args.show, only_fails=args.only_fails,
                    only_passes=args.only_passes, code=args.code)
    print("\n".join(lines))
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    return run(_main, argv)


if __name__ == "__main__":
    raise SystemExit(main())
