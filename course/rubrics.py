"""Command line of the rubric registry: list the rubrics, or score one string under one next to strict.

The rubrics themselves (strict and the deliberately hackable ones, each with
its loophole) live in ``course/instrument/rubric_registry.py``; this file only parses
arguments and prints what the registry returns.

    python -m course.rubrics                               # list names and loopholes
    python -m course.rubrics --rubric last_number --expected 323 "17*19 is 323, I think"
"""

from __future__ import annotations

from typing import Sequence

from course.cli import make_parser, run, stdin_text
from course.errors import CourseError
from course.instrument.rubric_registry import RUBRICS, get_rubric
from course.instrument.spec_v1 import score as strict_score
from course.lib.visible import dumps_safe


def _main(argv: Sequence[str] | None) -> int:
    parser = make_parser(
        "python -m course.rubrics",
        "List the reward rubrics (strict and the deliberately hackable ones), or score one "
        "completion under a rubric and under strict side by side.",
        "  python -m course.rubrics                     # names and loopholes\n"
        '  python -m course.rubrics --rubric lenient_int --expected 323 "Final: 3_23"\n'
        "      # lenient_int rewards it (1.0); strict gives 0.0 with error_code digit_separator",
    )
    parser.add_argument("--rubric", help="a rubric name (omit to list them all)")
    parser.add_argument("--expected", type=int, help="the example's expected_answer")
    parser.add_argument("completion", nargs="?", help="the completion text, or - to read stdin")
    args = parser.parse_args(argv)
    if args.rubric is None and args.completion is None:
        width = max(len(n) for n in RUBRICS)
        for name, rubric in RUBRICS.items():
            print(f"{name:<{width}}  {rubric.loophole}")
        return 0
    if args.rubric is None or args.completion is None or args.expected is None:
        raise CourseError("scoring needs --rubric NAME, --expected N and a completion")
    rubric = get_rubric(args.rubric)
    completion = stdin_text() if args.completion == "-" else args.completion
    example = {"expected_answer": args.expected}
    result = {args.rubric: rubric.score(example, completion), "strict": strict_score(example, completion)}
    print(dumps_safe(result, indent=2))  # the completion is data: nothing a terminal acts on is printed raw
    return 0


def main(argv: list[str] | None = None) -> int:
    """CLI: list the rubrics and their loopholes, or score one completion under one of them."""
    return run(_main, argv)


if __name__ == "__main__":
    raise SystemExit(main())
