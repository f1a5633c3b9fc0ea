"""Several policies on the same items: strict pass@1, pass@k and error codes, side by side.

Give it a dataset and rollout files in the course's formats (frozen rollouts or
selection packs; any mix). It scores every sample of every file with the strict
verifier and prints one column per file: the unbiased pass@1 and pass@k from all
samples of each item, the pass rate of sample 0 (what ``course.eval`` reports on the
frozen rollouts) and the share of every error code. Each file is named
``LABEL=PATH`` (or just PATH: its file name is the label).

    python -m course.compare_policies --dataset data/datasets/math_dev.jsonl \\
        sim=data/rollouts/selection_pack_dev.jsonl tinylm=data/tinylm/frozen_pi0_dev.jsonl \\
        llm-plain=data/llm/pack_plain_dev.jsonl llm-fewshot=data/llm/pack_fewshot_dev.jsonl

Every file must hold exactly the dataset's items. Nothing is written; ``--json``
prints the numbers for a script. The comparison itself is ``course.lib.selection.policy_comparison``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from course.cli import EXIT_OK, make_parser, positive_int, run
from course.lib.selection.policy_comparison import compare_policies, render
from course.lib.visible import dumps_safe

EXAMPLE = """\
  python -m course.compare_policies --dataset data/datasets/math_dev.jsonl \\
      sim=data/rollouts/selection_pack_dev.jsonl tinylm=data/tinylm/frozen_pi0_dev.jsonl \\
      llm-plain=data/llm/pack_plain_dev.jsonl llm-fewshot=data/llm/pack_fewshot_dev.jsonl"""


def _labelled(text: str) -> tuple[str, str]:
    """``LABEL=PATH`` -> (LABEL, PATH); a bare PATH is labelled by its file name without .jsonl."""
    label, sep, path = text.partition("=")
    if sep and label and path:
        return label, path
    return Path(text).name.removesuffix(".jsonl"), text


def _main(argv: Sequence[str] | None) -> int:
    parser = make_parser(
        "python -m course.compare_policies",
        "Score several rollout files (frozen rollouts or selection packs) on the same dataset with the strict "
        "verifier and print them side by side: unbiased pass@1 and pass@k, sample 0's pass rate, error codes.",
        EXAMPLE,
    )
    parser.add_argument("files", nargs="+", metavar="[LABEL=]PATH", help="rollout files to compare, one column each")
    parser.add_argument("--dataset", required=True, help="the dataset every file answers (id, prompt, expected_answer)")
    parser.add_argument("--k", type=positive_int, default=8, help="the k of pass@k (default 8)")
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    args = parser.parse_args(argv)
    table = compare_policies(args.dataset, [_labelled(f) for f in args.files], k=args.k)
    if args.json:
        print(dumps_safe(table, sort_keys=True, indent=2))
    else:
        print("\n".join(render(table)))
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    return run(_main, argv)


if __name__ == "__main__":
    raise SystemExit(main())
