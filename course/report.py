"""See a run: write one self-contained HTML page for one or several run directories.

    python -m course.report runs/demo_eval_clean
    python -m course.report runs/demo_sel_n1 runs/demo_sel_n4 --out runs/sel_n1_vs_n4.html

Works on the run directories of course.eval, course.selection_demo,
course.bandit_train, course.toy_mdp, course.kl_tradeoff_demo and
course.tinylm.rl (and shows the manifest of any other). The page opens offline
in any browser: header with the Locked Room fields and provenance, the pass
rate with its Wilson interval, the failure taxonomy whose bars open real
examples (characters made visible as course.inspect_run shows them), a
filterable, sortable, paged item table (every item; above 50,000 items a sample
spread over every outcome code, with the command that lists the rest), and each
kind's curves.

With several runs the first is the baseline: the page puts them side by side
and renders course.gate's decision for every other scoring run against it
(``--min-delta``, ``--require-significance`` as in course.gate). A tinylm.rl
run gets the gate of its own holdout runs (pi0 vs final) with the settings it
recorded.

Where it writes: one run -> RUN_DIR/report.html; several -> compare_<a>_vs_<b>.html
next to the first run; ``--out FILE`` anywhere. The file is written atomically.
A file that course.report wrote is simply replaced (it is a view, derived from
the run); any other existing file needs ``--force``. The last stdout line is the
path written. Exit codes: 0 written, 2 unusable input.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any, Sequence

from course.cli import EXIT_OK, make_parser, rate_difference, run
from course.errors import CourseError
from course.lib.evaluation import locked_room
from course.lib.reporting import html as report_html
from course.lib.reporting.views import RL_KINDS
from course.lib.visible import visible

EXAMPLE = """\
  python -m course.report runs/demo_eval_clean
  python -m course.report runs/demo_eval_clean runs/demo_eval_modified --out runs/clean_vs_modified.html
  python -m course.report runs/demo_sel_n1 runs/demo_sel_n4 --min-delta 0.05
  (then open the printed file in a browser; it needs no server and no network)"""


def gate_pair(
    baseline: str | Path, candidate: str | Path, min_delta: Fraction, require_significance: bool
) -> dict[str, Any]:
    """course.gate's decision for one pair, as the page renders it; an unusable pair becomes an ``error`` entry."""
    try:
        base, cand = locked_room.load_pair(str(baseline), str(candidate))  # as course.gate reads a pair
    except CourseError as exc:
        return {"baseline": str(baseline), "candidate": str(candidate), "error": str(exc)}
    return locked_room.gate_view(locked_room.decide(base, cand, min_delta, require_significance), base, cand)


def build(paths: Sequence[str], min_delta: Fraction, require_significance: bool) -> str:
    """The page for these run directories (the first is the baseline of every gate)."""
    runs = [report_html.load_run(p) for p in paths]
    for i, r in enumerate(runs):
        if r.kind in RL_KINDS and len(r.sub_runs) == 2:
            recorded = ((r.summary or {}).get("holdout") or {}).get("gate") or {}
            delta = Fraction(str(recorded.get("min_delta", r.manifest.get("settings", {}).get("gate_min_delta", 0))))
            view = gate_pair(Path(paths[i]) / "eval_pi0_holdout", Path(paths[i]) / "eval_final_holdout", delta,
                             bool(recorded.get("require_significance", True)))
            runs[i] = report_html.with_gate(r, view)
    scoring = ("eval", "selection")
    gates = [gate_pair(paths[0], p, min_delta, require_significance)
             for p, r in zip(paths[1:], runs[1:]) if runs[0].kind in scoring and r.kind in scoring]
    return report_html.render_report(runs, gates)


def main(argv: Sequence[str] | None = None) -> int:
    return run(_main, argv)


def _main(args_in: Sequence[str] | None) -> int:
    parser = make_parser(
        "python -m course.report",
        "Write one self-contained HTML report (no network, no server) for one or several run directories: "
        "Locked Room header, pass rate with Wilson interval, failure taxonomy with examples, a filterable item "
        "table, each kind's curves; with several runs, side by side and the gate's decision.",
        EXAMPLE,
    )
    parser.add_argument("runs", nargs="+", metavar="RUN_DIR",
                        help="run directories; with several, the first is the baseline")
    parser.add_argument("--out",
                        help="the HTML file (default: RUN_DIR/report.html, "
                             "or compare_<a>_vs_<b>.html beside the first run)")
    parser.add_argument("--force", action="store_true", help="overwrite --out even if course.report did not write it")
    parser.add_argument("--min-delta", type=rate_difference, default=Fraction(0),
                        help="the gate's bar for each comparison, as in course.gate (default 0: not worse)")
    parser.add_argument("--require-significance", action="store_true", help="as in course.gate")
    args = parser.parse_args(args_in)
    out = Path(args.out) if args.out else report_html.default_output(args.runs)
    report_html.check_output(out, force=args.force, runs=args.runs)  # before any run is read: the one output check
    page = build(args.runs, args.min_delta, args.require_significance)
    written = report_html.write_report(out, page, force=args.force, runs=args.runs)
    print(f"Wrote {visible(str(written))} ({len(page.encode('utf-8')):,} bytes); open it in a browser.")
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
