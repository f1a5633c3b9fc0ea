"""The normalisation microscope: each token's weight in the loss under GRPO, DAPO and Dr. GRPO choices.

Give it a batch of completions (their rewards, their lengths in tokens, G per prompt)
and it prints, for each reward scaling (none: the course's default; group: divide by
the group's standard deviation, GRPO's), every completion's advantage and the weight
each of its tokens gets in the loss under the three divisors (constant: the course's
default; seq-mean: GRPO; token-mean: DAPO), with the completion's total (length x
weight). Read it as: which completions does one update push, and how hard.

The arithmetic is ``course.lib.learning.loss_normalisation`` (its docstring has the
formulas); the loop takes the same choices as ``--loss-norm`` and ``--scale-rewards``
(``python -m course.tinylm.rl``, ``python -m course.llm.rl``). Prints only.

    python -m course.loss_normalisation
    python -m course.loss_normalisation --rewards 1 0 0 0 --lengths 5 5 40 5 --group-size 4
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, Sequence

from course.cli import EXIT_OK, finite_float, int_in, make_parser, non_negative_int, run
from course.errors import CourseError
from course.lib.learning import loss_normalisation as ln
from course.lib.visible import dumps_safe

# Two prompts, four completions each: a hard prompt (one success; its wrong answers short and long)
# and an easy one (three successes, one long wrong answer).
DEFAULT_REWARDS: tuple[float, ...] = (1, 0, 0, 0, 1, 1, 1, 0)
DEFAULT_LENGTHS: tuple[int, ...] = (8, 30, 12, 20, 10, 9, 11, 32)
DEFAULT_GROUP = 4


def render(rows_by_scale: dict[str, list[ln.Completion]]) -> list[str]:
    """One table per reward scaling."""
    lines = ["Per-token weight w = A / divisor (d loss / d log pi = -w); "
             "total = length x w, the push on the whole completion.",
             "Divisors: " + "; ".join(f"{n}: {ln.NORM_NAMES[n]}" for n in ln.NORMS), ""]
    for scale, rows in rows_by_scale.items():
        head = ("advantage A = r - group mean" if scale == "none"
                else f"advantage A = (r - group mean) / (group std + {ln.STD_EPS:g})")
        lines += [f"scale-rewards {scale}: {head}",
                  "   #  group  length  reward   advantage | "
                  + " | ".join(f"{n:>10} per token {'total':>7}" for n in ln.NORMS)]
        for r in rows:
            cells = " | ".join(f"{r.per_token[n]:+20.5f} {r.total[n]:+7.3f}" for n in ln.NORMS)
            lines.append(f"  {r.index:2d}  {r.group:5d}  {r.length:6d}  {r.reward:6g}  {r.advantage:+10.4f} | {cells}")
        lines.append("")
    return lines


def build_parser():
    p = make_parser(
        "python -m course.loss_normalisation",
        "Each token's effective weight in a GRPO-style loss for a batch of completions of known rewards and lengths: "
        "constant divisor (the course, Dr. GRPO), sequence mean (GRPO), token mean (DAPO), with and without "
        "dividing advantages by the group's standard deviation.",
        "  python -m course.loss_normalisation\n"
        "  python -m course.loss_normalisation --rewards 1 0 0 0 --lengths 5 5 40 5 --group-size 4",
    )
    p.add_argument("--rewards", type=finite_float, nargs="+", default=list(DEFAULT_REWARDS), metavar="R",
                   help="one reward per completion, prompt-major (default "
                        + " ".join(f"{r:g}" for r in DEFAULT_REWARDS) + ")")
    p.add_argument("--lengths", type=non_negative_int, nargs="+", default=list(DEFAULT_LENGTHS), metavar="L",
                   help="tokens of each completion, same order (default " + " ".join(map(str, DEFAULT_LENGTHS)) + ")")
    p.add_argument("--group-size", type=int_in(2, 4096), default=DEFAULT_GROUP,
                   help=f"G, completions per prompt (default {DEFAULT_GROUP})")
    p.add_argument("--json", action="store_true", help="print the numbers as JSON")
    return p


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    if len(args.rewards) != len(args.lengths):
        raise CourseError(
            f"--rewards has {len(args.rewards)} values but --lengths has {len(args.lengths)}: "
            "one of each per completion"
        )
    if len(args.rewards) % args.group_size:
        raise CourseError(f"{len(args.rewards)} completions do not split into groups of --group-size {args.group_size}")
    tables = {
        scale: ln.weights_table(args.rewards, args.lengths, group=args.group_size, scale=scale) for scale in ln.SCALES
    }
    if args.json:
        doc: dict[str, Any] = {"group_size": args.group_size, "norms": ln.NORM_NAMES,
                               "tables": {s: [asdict(r) for r in rows] for s, rows in tables.items()}}
        print(dumps_safe(doc, sort_keys=True, indent=2))
    else:
        print("\n".join(render(tables)).rstrip())
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    return run(_main, argv)


if __name__ == "__main__":
    raise SystemExit(main())
