"""Run the golden suites: regression tests for the scorer, written as data.

Two files pin the verdicts that reward spec v1 (docs/reward_spec_v1.md) fixes:

  * ``data/golden/golden_correct.jsonl``  in-spec correct completions; every one
    must get reward 1.0. A failure here is a *false negative*: the instrument
    punishes a right answer.
  * ``data/golden/golden_exploits.jsonl`` hacks and near misses; every one must
    get reward 0.0 *with the error code the line lists*. A reward here is a
    *false positive* (a hole a policy could learn to exploit); a different code
    means the diagnosis changed, which is a spec change too.

Every line carries the ``prompt`` it answers (a question of the course's kind
whose correct answer is the line's ``expected_answer``), so a case reads as
prompt, completion, expected outcome -- the golden cases pack of the course plan.

The suites and their check live in ``course.lib.reward_spec.exploit_suites``; this tool
parses the options and prints. Run them before trusting any number the scorer produces::

    python -m course.golden                      # table of failures + one summary line
    python -m course.golden --verbose            # every case: prompt, completion, verdict
    python -m course.golden --json               # the same, machine-readable
    python -m course.golden --exploits my.jsonl  # your own exploit file

Exit codes: 0 every case behaves as listed, 1 some case does not, 2 a file is
missing or malformed (``path:line: what is wrong``).
"""

from __future__ import annotations

from typing import Sequence

from course.cli import make_parser, run
from course.lib.bundled import GOLDEN_CORRECT, GOLDEN_EXPLOITS
from course.lib.reward_spec.exploit_suites import (
    golden_report,
    golden_run,
    golden_text,
    load_suite,
)
from course.lib.visible import dumps_safe


def main(argv: Sequence[str] | None = None) -> int:
    """CLI: run both suites; exit 0 all pass, 1 some fail, 2 bad input."""
    return run(_main, argv)


def _main(args_in: Sequence[str] | None) -> int:
    parser = make_parser(
        "python -m course.golden",
        "Run the golden suites against the scorer: every correct case must get reward 1.0, every "
        "exploit reward 0.0 with the error code its line lists. Prints the cases that do not, then "
        "one summary line. Exit 0 all pass, 1 some fail, 2 missing or malformed file.",
        "  python -m course.golden\n"
        "  golden: 18/18 correct rewarded, 82/82 exploits rejected with the listed code\n"
        "\n"
        "  python -m course.golden --verbose    # every case with its prompt\n"
        "  python -m course.golden --exploits my_exploits.jsonl --json",
    )
    parser.add_argument("--correct", metavar="FILE", default=None,
                        help=f"correct suite (default: the bundled {GOLDEN_CORRECT.name})")
    parser.add_argument("--exploits", metavar="FILE", default=None,
                        help=f"exploit suite (default: the bundled {GOLDEN_EXPLOITS.name})")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    parser.add_argument(
        "--verbose", action="store_true",
        help="list every case (prompt, completion, verdict), not only the failures; with --json, add 'cases'",
    )
    args = parser.parse_args(args_in)

    correct_cases = load_suite(args.correct or GOLDEN_CORRECT, "correct")
    exploit_cases = load_suite(args.exploits or GOLDEN_EXPLOITS, "exploits")
    correct, exploits, failures = golden_run(correct_cases, exploit_cases)
    if args.json:
        print(dumps_safe(golden_report(correct, exploits, verbose=args.verbose), indent=2, sort_keys=True))
    else:
        print(golden_text(correct, exploits, verbose=args.verbose))
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
