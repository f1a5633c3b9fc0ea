"""The debugging kata: ten scored examples, each wrong for a different reason.

This tool shows the kata pack (``data/kata/kata_examples.jsonl``) and checks a
student's labels; the packs, the label check and the rendering live in
``course.lib.reward_spec.kata_labels``, the draft verifiers in ``course.lib.reward_spec.kata_drafts``. Every
example in the pack has a reward that looks suspicious or is plainly wrong;
the student's job is to say *why* -- the model failed, the verifier failed, the
task itself is ambiguous, or the reward was gamed -- and to propose one fix.

Run it::

    python -m course.kata                          # show every example with its score details
    python -m course.kata --template > my_labels.json
    python -m course.kata --check my_labels.json   # N/10; exit 0 only if all ten are right and justified

Milestones 4-5 repeat the kata with a harder pack: ``--pack hard`` with any of
the commands above (``data/kata/kata_hard.jsonl``, key
``teacher/kata_hard_answer_key.json``; its draft verifier is ``draft_v1``).

Each example records the scorer that produced its reward (``scorer``): one of
the rubrics in ``course.rubrics`` or a draft of ``course.lib.reward_spec.kata_drafts`` (``draft_v0``, ``draft_v1``).
``tests/test_kata.py`` re-scores every example with its named scorer, so the recorded rewards and
details are reproducible, not invented (without the ``loophole`` note of a hackable rubric, which
would name the reward hacks). The teacher's answer key, with a justification and a proposed fix
per example, lives apart from the pack in ``teacher/kata_answer_key.json``.

``--check`` prints the score, the blank items and the justifications shorter than a sentence
(fewer than 6 words, or no closing . ! ?); it never says which labels are wrong, because a
per-item verdict gives the key away in a few tries per item. Full marks (exit 0) need every label
right *and* justified. Marking a file item by item against the key, and printing the key, are the
teacher's: ``python teacher/kata_mark.py``, which this tool does not advertise.
Every text read from the pack or a label file is printed through
``course.lib.visible``, so a hand-edited file cannot put control characters on the
terminal.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from course.cli import info, make_parser, run
from course.lib.reward_spec.kata_labels import (
    PACKS,
    check,
    format_listing,
    format_score,
    load_examples,
    load_key,
    load_labels,
    passed,
    rescore_pack,
    template,
)
from course.lib.visible import dumps_safe, visible


def main(argv: Sequence[str] | None = None) -> int:
    return run(_main, argv)


def _main(args_in: Sequence[str] | None) -> int:
    parser = make_parser(
        "python -m course.kata",
        "The debugging kata: label why each of ten scored examples went wrong "
        "(model_failure, verifier_bug, spec_ambiguity, reward_hack), then check your labels.",
        "  python -m course.kata                              # read the ten examples\n"
        "  python -m course.kata --template > my_labels.json  # blank label file\n"
        "  python -m course.kata --check my_labels.json       # Score: N/10 (exit 0: 10/10, each justified)\n"
        "  python -m course.kata --pack hard                  # the harder pack (Milestones 4-5)",
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--template", action="store_true", help="print a blank label file (JSON) on stdout")
    mode.add_argument("--check", metavar="FILE",
                      help="score your label file: N/10, the blank items and the short justifications "
                           "(which labels are wrong is not shown)")
    mode.add_argument(
        "--rescore",
        action="store_true",
        help="(teacher) re-score every example with its named scorer and rewrite the pack if a verdict changed",
    )
    parser.add_argument(
        "--pack", choices=sorted(PACKS), default="basic",
        help="which bundled pack: basic (Milestone 0) or hard (Milestones 4-5); picks the examples and the key",
    )
    parser.add_argument("--examples", default=None, help="the kata pack file (default: the --pack's bundled one)")
    parser.add_argument("--key", default=None, help="the answer key --check scores against (default: the --pack's key)")
    args = parser.parse_args(args_in)
    args.examples = args.examples or str(PACKS[args.pack][0])
    args.key = args.key or str(PACKS[args.pack][1])

    examples = load_examples(args.examples)
    ids = [ex.id for ex in examples]
    if args.template:
        print(dumps_safe(template(examples, args.pack), indent=2))
        return 0
    if args.rescore:
        path = Path(args.examples)
        changed = rescore_pack(path, examples)
        if not changed:
            print(f"{visible(str(path))}: all {len(examples)} recorded verdicts reproduce; nothing written")
            return 0
        shown = ", ".join(visible(ident) for ident in changed)
        info(f"re-scored {shown}: check that each label in the answer key still holds")
        print(f"{visible(str(path))}: rewrote {len(changed)} verdict(s): {shown}")
        return 0
    if args.check:
        labels = load_labels(args.check, ids)
        results = check(labels, load_key(args.key), ids)
        print(format_score(results, args.pack))
        return 0 if passed(results) else 1

    print(format_listing(examples, args.pack))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
