"""The debugging kata: ten scored examples, each wrong for a different reason.

This tool shows the kata pack (``data/kata/kata_examples.jsonl``) and checks that a
student's label file is complete; the packs, the form check and the rendering live in
``course.lib.reward_spec.kata_labels``, the draft verifiers in ``course.lib.reward_spec.kata_drafts``. Every
example in the pack has a reward that looks suspicious or is plainly wrong;
the student's job is to say *why* -- the model failed, the verifier failed, the
task itself is ambiguous, or the reward was gamed -- and to propose one fix.

Run it::

    python -m course.kata                          # show every example with its score details
    python -m course.kata --template > my_labels.json
    python -m course.kata --check my_labels.json   # complete and well formed? exit 0 when every item is

Milestones 4-5 repeat the kata with a harder pack: ``--pack hard`` with any of
the commands above (``data/kata/kata_hard.jsonl``; its draft verifier is ``draft_v1``).

Each example records the scorer that produced its reward (``scorer``): one of
the rubrics in ``course.rubrics`` or a draft of ``course.lib.reward_spec.kata_drafts`` (``draft_v0``, ``draft_v1``).
``tests/test_kata.py`` re-scores every example with its named scorer, so the recorded rewards and
details are reproducible, not invented (without the ``loophole`` note of a hackable rubric, which
would name the reward hacks).

``--check`` says, per item, what is missing (a label, a justification of 2-3 sentences, a fix of
a few words) and exits 0 when nothing is. It never reads the answer key and prints nothing that
depends on which label was picked, so checking again after changing a label shows nothing new:
the labels are marked by the teacher (the key and the marking tool live under ``teacher/``).
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
    check_form,
    complete,
    format_form,
    format_listing,
    load_examples,
    load_labels,
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
        "(model_failure, verifier_bug, spec_ambiguity, reward_hack), then check that your file is complete.",
        "  python -m course.kata                              # read the ten examples\n"
        "  python -m course.kata --template > my_labels.json  # blank label file\n"
        "  python -m course.kata --check my_labels.json       # complete? (exit 0: all labelled, justified, fixed)\n"
        "  python -m course.kata --pack hard                  # the harder pack (Milestones 4-5)",
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--template", action="store_true", help="print a blank label file (JSON) on stdout")
    mode.add_argument("--check", metavar="FILE",
                      help="check that your label file is complete and well formed: every item labelled, "
                           "justified in 2-3 sentences, with a fix (whether a label is right is not checked: "
                           "your teacher marks it)")
    mode.add_argument(
        "--rescore",
        action="store_true",
        help="(teacher) re-score every example with its named scorer and rewrite the pack if a verdict changed",
    )
    parser.add_argument(
        "--pack", choices=sorted(PACKS), default="basic",
        help="which bundled pack: basic (Milestone 0) or hard (Milestones 4-5)",
    )
    parser.add_argument("--examples", default=None, help="the kata pack file (default: the --pack's bundled one)")
    args = parser.parse_args(args_in)
    args.examples = args.examples or str(PACKS[args.pack])

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
        results = check_form(load_labels(args.check, ids), ids)
        print(format_form(results, args.pack))
        return 0 if complete(results) else 1

    print(format_listing(examples, args.pack))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
