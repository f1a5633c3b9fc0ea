"""Red-team a reward rubric: which known exploits does it pay for, and does strict hold?

This is milestone 5's harness (its logic lives in ``course.lib.reward_spec.exploit_suites``). It scores every exploit in
the golden exploit suite (``data/golden/golden_exploits.jsonl``) and, optionally, a file of
the student's own exploits, under a chosen rubric from ``course.rubrics`` and
under the strict verifier, and prints them side by side::

    python -m course.red_team --rubric last_number
    python -m course.red_team --rubric lenient_int --exploits my_exploits.jsonl
    python -m course.red_team --rubric first_final --json      # machine-readable

An exploit file has the golden suite's shape, one JSON object per line::

    {"id": "my-001", "expected_answer": 323, "completion": "Final: 3_23",
     "expected_error_code": "digit_separator", "note": "int() reads 3_23 as 323"}

(``expected_error_code``, ``note`` and ``prompt`` are optional in a student file;
the golden suite always lists the code and the prompt.) An exploit is a completion that must *not*
earn reward under the spec; a weak rubric that rewards it has a hole.

Exit codes: 0 when the strict verifier rejects every exploit (whatever the weak
rubric did -- finding its holes is the exercise), 1 when the strict verifier
rewards any exploit (a hole in the spec itself, or an exploit that is actually
correct), 2 for unusable input (``path:line: what is wrong``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from course.cli import make_parser, run
from course.errors import CourseError
from course.instrument.rubric_registry import RUBRICS, get_rubric
from course.lib.bundled import GOLDEN_EXPLOITS
from course.lib.reward_spec.exploit_suites import (
    Exploit,
    format_rubric_list,
    format_table,
    load_exploits,
    red_team,
    red_team_json,
    summarise,
)


def main(argv: Sequence[str] | None = None) -> int:
    return run(_main, argv)


def _main(args_in: Sequence[str] | None) -> int:
    parser = make_parser(
        "python -m course.red_team",
        "Score the golden exploit suite (and your own exploits) under a hackable rubric and under "
        "the strict verifier, side by side. Exit 1 if the strict verifier rewards any exploit.",
        "  python -m course.red_team --rubric last_number\n"
        "  python -m course.red_team --rubric lenient_int --exploits my_exploits.jsonl\n"
        "  python -m course.red_team --list                 # rubric names and their loopholes",
    )
    parser.add_argument("--rubric", help=f"the rubric to red-team: {', '.join(RUBRICS)}")
    parser.add_argument("--exploits", metavar="FILE", help="your exploit file (JSONL, golden-suite shape)")
    parser.add_argument("--golden", metavar="FILE", default=None, help="the golden exploit suite (default: bundled)")
    parser.add_argument("--no-golden", action="store_true", help="score only the --exploits file")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    parser.add_argument("--list", action="store_true", help="list the rubrics and their loopholes")
    args = parser.parse_args(args_in)

    if args.list:
        print(format_rubric_list())
        return 0
    if args.rubric is None:
        raise CourseError(f"--rubric is required; choose one of: {', '.join(RUBRICS)}")
    get_rubric(args.rubric)  # fail on a bad name before reading anything

    exploits: list[Exploit] = []
    if not args.no_golden:
        golden = Path(args.golden) if args.golden else GOLDEN_EXPLOITS
        if not golden.exists():  # a directory or FIFO is refused by the reader, by name
            raise CourseError(f"{golden}: golden exploit suite not found (pass --golden FILE or --no-golden)")
        exploits += load_exploits(golden, "golden", require_code=True)
    if args.exploits:
        exploits += load_exploits(args.exploits, str(args.exploits))
    if not exploits:
        raise CourseError("nothing to score: --no-golden needs --exploits FILE")

    rows = red_team(exploits, args.rubric)
    summary = summarise(rows, args.rubric)
    if args.json:
        print(red_team_json(rows, summary))
    else:
        print(format_table(rows, summary))
    return 1 if summary["strict_rewarded"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
