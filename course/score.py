"""Command line of the strict verifier: score one completion and print the verdict as JSON.

The rules themselves live in ``course/instrument/spec_v1.py`` (reward spec v1,
``docs/reward_spec_v1.md``); this file only parses arguments and prints what
``score`` returns, so editing it never changes the scorer fingerprint.

    python -m course.score --expected 323 "Final: 323"
    python -m course.score --expected 323 "Final:323"      # prefix_spacing, reward 0
"""

from __future__ import annotations

import json
from typing import Sequence

from course.cli import make_parser, run, stdin_text
from course.instrument.rubric_registry import scorer_fingerprint
from course.instrument.spec_v1 import SCORER_VERSION, score
from course.lib.visible import dumps_safe


def _main(argv: Sequence[str] | None) -> int:
    parser = make_parser(
        "python -m course.score",
        "Score one completion with the strict verifier (reward spec v1) and print reward and "
        "details as JSON. Exit code 0 when the reward is 1.0, 1 when it is 0.0, 2 on bad usage.",
        '  python -m course.score --expected 323 "Final: 323"\n'
        '  python -m course.score --expected 323 "Final:323"   # reward 0.0, error_code prefix_spacing\n'
        '  printf "Final: -4\\n" | python -m course.score --expected -4 -   # read the completion from stdin',
    )
    parser.add_argument("--expected", type=int, required=True, help="the example's expected_answer")
    parser.add_argument("completion", help="the completion text, or - to read it (as UTF-8) from stdin")
    parser.add_argument("--version", action="version", version=f"{SCORER_VERSION} {scorer_fingerprint()[:12]}")
    args = parser.parse_args(argv)
    completion = stdin_text() if args.completion == "-" else args.completion
    result = score({"expected_answer": args.expected}, completion)
    try:
        print(dumps_safe(result, indent=2))  # the completion is data: nothing a terminal acts on is printed raw
    except UnicodeEncodeError:  # a terminal that cannot show the characters: escape them
        print(json.dumps(result, ensure_ascii=True, indent=2))
    return 0 if result["reward"] == 1.0 else 1


def main(argv: list[str] | None = None) -> int:
    """CLI: score one completion given on the command line (or stdin) and print the result as JSON."""
    return run(_main, argv)


if __name__ == "__main__":
    raise SystemExit(main())
