"""The teacher's kata tool: mark a student's label file against the key, or print the key.

The student's ``python -m course.kata --check FILE`` gives a score only: which labels are wrong,
and the key's why and fix, stay here, where only a teacher looks. Run it from the top of the
checkout::

    python teacher/kata_mark.py their_labels.json                 # right/WRONG/blank per item, key under each miss
    python teacher/kata_mark.py --pack hard their_hard_labels.json
    python teacher/kata_mark.py                                   # the whole key: label, why, fix

Exit 0 when the file has every label right and justified (or when only the key is printed),
1 otherwise, 2 on a bad file or flag (one line naming it).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Sequence

if __name__ == "__main__":  # run as a script from a checkout: the course package is one folder up
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from course.cli import make_parser, run
from course.lib.reward_spec.kata_labels import (
    PACKS,
    check,
    format_key,
    format_marking,
    load_examples,
    load_key,
    load_labels,
    passed,
)


def main(argv: Sequence[str] | None = None) -> int:
    return run(_main, argv)


def _main(args_in: Sequence[str] | None) -> int:
    parser = make_parser(
        "python teacher/kata_mark.py",
        "(teacher) Mark a kata label file item by item against the answer key, with the key's label, "
        "why and fix under each miss; without a file, print the whole key.",
        "  python teacher/kata_mark.py their_labels.json\n"
        "  python teacher/kata_mark.py --pack hard their_hard_labels.json\n"
        "  python teacher/kata_mark.py --pack hard        # the hard pack's key",
    )
    parser.add_argument("labels", nargs="?", default=None, help="the student's label file (omit it to print the key)")
    parser.add_argument("--pack", choices=sorted(PACKS), default="basic",
                        help="basic (Milestone 0) or hard (Milestones 4-5)")
    parser.add_argument("--key", default=None, help="the answer key (default: the --pack's key under teacher/)")
    args = parser.parse_args(args_in)
    examples_path, key_path = PACKS[args.pack]
    ids = [ex.id for ex in load_examples(examples_path)]
    key = load_key(args.key or key_path)
    if args.labels is None:
        print(format_key(key, ids))
        return 0
    results = check(load_labels(args.labels, ids), key, ids)
    print(format_marking(results))
    return 0 if passed(results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
