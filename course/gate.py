"""The promotion gate: is the candidate run really better than the baseline, under the same conditions?

    python -m course.gate --baseline runs/demo_eval_clean --candidate runs/demo_eval_modified --min-delta 0.00

Three questions, in this order: the Locked Room (were both runs measured under the same
conditions: dataset, split, rubric, scorer, sampling, prompt template, selection compute?), the bar
(candidate - baseline >= --min-delta, computed exactly) and the noise (a paired exact McNemar
test and a Newcombe interval; for runs with several samples per item, a sign-flip test on the
items' pass rates and the interval that agrees with it). Beyond the manifests it checks the items: the same
ids and expected answers in both runs; every line of both runs scored again from its own completion
and expected answer (a line recording another reward or code, or a run that cannot be re-scored, is
a REJECT); summary.json tallied again from the lines; and, when a dataset file is at hand, every id
and expected answer checked against it (one ``Items checked:`` line says what ran).
``course.lib.evaluation.locked_room`` decides and renders; this module parses the command line and prints.

Exit codes: 0 ACCEPT, 1 REJECT, 2 unusable input (missing or corrupt run
directory, a run from a tool the gate cannot compare, results.jsonl or summary.json edited
after the run, a summary its results do not tally to, a count in summary.json or manifest.json
that is not an integer).

What it prints from a run directory is made visible first (the library's docstring says how).
"""

from __future__ import annotations

from typing import Sequence

from course.cli import EXIT_FAIL, EXIT_OK, info, make_parser, rate_difference, run
from course.lib.evaluation.locked_room import (
    SIGNIFICANCE,
    decide,
    gate_view,
    load_pair,
    render,
)
from course.lib.visible import dumps_safe, visible

EXAMPLE = """\
  python -m course.gate --baseline runs/demo_eval_clean --candidate runs/demo_eval_modified --min-delta 0.00
  python -m course.gate --baseline runs/eval_001 --candidate runs/eval_002 --min-delta 0.05 --require-significance
  (exit code 0 = ACCEPT, 1 = REJECT, 2 = unusable input)"""


def _main(args_in: Sequence[str] | None) -> int:
    parser = make_parser(
        "python -m course.gate",
        "Accept or reject a candidate run against a baseline: Locked Room check of the manifests first, "
        "then candidate pass rate - baseline pass rate >= --min-delta, with a paired test over items (McNemar; "
        "for multi-sample runs a sign-flip test on the items' pass rates).",
        EXAMPLE,
    )
    parser.add_argument("--baseline", required=True, help="run directory of the current best (course.eval output)")
    parser.add_argument("--candidate", required=True, help="run directory of the challenger")
    parser.add_argument(
        "--min-delta", required=True, type=rate_difference,
        help="minimum pass-rate gain as a fraction (0.05 = 5 percentage points; 0 = not worse); decide it "
             "before looking at the numbers",
    )
    parser.add_argument("--require-significance", action="store_true",
                        help=f"also require p < {SIGNIFICANCE} on the paired items (exact McNemar; multi-sample runs: "
                             "the sign-flip test over items)")
    parser.add_argument("--json", action="store_true", help="print the decision and its evidence as JSON")
    parser.add_argument("--html", metavar="FILE",
                        help="also write the decision and both runs as one self-contained HTML page (as course.report)")
    parser.add_argument("--force", action="store_true", help="let --html overwrite a file course.report did not write")
    args = parser.parse_args(args_in)
    if args.html:  # the one output check of a page, before any run is read
        from course.lib.reporting.html import check_output

        check_output(args.html, force=args.force, runs=(args.baseline, args.candidate))
    base, cand = load_pair(args.baseline, args.candidate)
    result = decide(base, cand, args.min_delta, args.require_significance)
    if args.html:
        from course.lib.reporting import html as report_html

        page = report_html.render_report([report_html.load_run(args.baseline), report_html.load_run(args.candidate)],
                                         [gate_view(result, base, cand)])
        html_path = report_html.write_report(args.html, page, force=args.force, runs=(args.baseline, args.candidate))
        info(f"wrote {visible(str(html_path))}")
    if args.json:
        print(dumps_safe(result, sort_keys=True, indent=2))
    else:
        print("\n".join(render(result, base, cand)))
    return EXIT_OK if result["decision"] == "ACCEPT" else EXIT_FAIL


def main(argv: Sequence[str] | None = None) -> int:
    return run(_main, argv)


if __name__ == "__main__":
    raise SystemExit(main())
