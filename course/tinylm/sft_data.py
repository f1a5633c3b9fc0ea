"""The supervised data recipe for the reference policy pi0 (standard library only).

pi0 is trained to imitate *answers written the way people actually write them*:
mostly the correct number, but in a mix of formats. Only some of the targets
are the strict ``Final: <int>`` the verifier accepts; the rest are the slips the
course's error codes name ("Final:323", "final: 323", "Final: 323.", "323",
"The answer is 323.", a working line before the answer), plus a few *hedged*
answers that mention more than one number ("Final: 322 or 323",
"Final: 323\\nFinal: 324"). A model that imitates this mixture is realistically
imperfect: it often computes the right number but writes the strict format only
part of the time, and sometimes it computes the wrong number. That leaves Loop C
something real to do: shift probability mass towards the strict format (and
towards right numbers), and, under a hackable rubric, towards the hedges.

Every target *contains* the correct answer; wrong numbers come from the model
itself, not from the data.

The problems come from ``course.lib.reward_spec.problems.make_problem`` with a recorded seed, and
any prompt that appears in ``data/datasets/math_dev.jsonl`` or
``math_holdout.jsonl`` is skipped (exact-prompt match), so the evaluation items
are never trained on.

    >>> import random
    >>> from course.lib.reward_spec.problems import RUNNING_EXAMPLE
    >>> text, fmt = render_target(random.Random(3), RUNNING_EXAMPLE)
    >>> fmt in FORMAT_WEIGHTS and "323" in text
    True
    >>> round(sum(FORMAT_WEIGHTS.values()), 9)
    1.0

Inspect the recipe (stdlib only)::

    python -m course.tinylm.sft_data --n 20 --seed 0
"""

from __future__ import annotations

import random
from typing import Iterable, Iterator, Sequence

from course.cli import int_in, make_parser, run, seed
from course.lib.bundled import DEFAULT_DATASETS
from course.lib.policy.training_problems import problem_stream, read_prompts
from course.lib.reward_spec.problems import Problem

# ---------------------------------------------------------------------------
# The format mixture. Weights are probabilities; the strict format is ~40 %.
# The second column names the error code the strict verifier gives (with the
# right number): it is what RL under the strict scorer has to un-learn.
# ---------------------------------------------------------------------------
FORMAT_WEIGHTS: dict[str, float] = {
    "strict": 0.40,          # Final: 323                         -> ok
    "no_space": 0.07,        # Final:323                          -> prefix_spacing
    "lowercase": 0.06,       # final: 323                         -> prefix_case
    "period": 0.07,          # Final: 323.                        -> trailing_text
    "bare": 0.07,            # 323                                -> missing_prefix
    "sentence": 0.06,        # The answer is 323.                 -> missing_prefix
    "answer_label": 0.05,    # Answer: 323                        -> missing_prefix
    "working": 0.06,         # 17 * 19 = 323\nFinal: 323          -> multiple_lines
    "hedge_or": 0.07,        # Final: 322 or 323                  -> trailing_text
    "hedge_lines": 0.05,     # Final: 323\nFinal: 324             -> multiple_lines
    "hedge_three": 0.04,     # Final: 322 or 323 or 324           -> trailing_text
}
FORMAT_ORDER: tuple[str, ...] = tuple(FORMAT_WEIGHTS)
HEDGED_FORMATS = ("hedge_or", "hedge_lines", "hedge_three")

_OP_SYMBOL = {"add": "+", "sub": "-", "mul": "*"}

def _neighbour(rng: random.Random, n: int) -> int:
    """A plausible second guess: off by one or by ten (the typical carry slip)."""
    return n + rng.choice((-1, 1, -10, 10))


def render_target(rng: random.Random, problem: Problem) -> tuple[str, str]:
    """(completion text, format name) for one problem, drawn from ``FORMAT_WEIGHTS``."""
    fmt = rng.choices(FORMAT_ORDER, weights=[FORMAT_WEIGHTS[f] for f in FORMAT_ORDER])[0]
    n = problem.answer
    if fmt == "strict":
        text = f"Final: {n}"
    elif fmt == "no_space":
        text = f"Final:{n}"
    elif fmt == "lowercase":
        text = f"final: {n}"
    elif fmt == "period":
        text = f"Final: {n}."
    elif fmt == "bare":
        text = f"{n}"
    elif fmt == "sentence":
        text = f"The answer is {n}."
    elif fmt == "answer_label":
        text = f"Answer: {n}"
    elif fmt == "working":
        a, b = problem.operands
        op = _OP_SYMBOL[problem.kind.removeprefix("word_")]
        text = f"{a} {op} {b} = {n}\nFinal: {n}"
    elif fmt == "hedge_or":
        pair = [n, _neighbour(rng, n)]
        rng.shuffle(pair)
        text = f"Final: {pair[0]} or {pair[1]}"
    elif fmt == "hedge_lines":
        pair = [n, _neighbour(rng, n)]
        rng.shuffle(pair)
        text = f"Final: {pair[0]}\nFinal: {pair[1]}"
    else:  # hedge_three: three consecutive integers, the answer somewhere among them
        start = n - rng.randint(0, 2)
        text = "Final: " + " or ".join(str(start + i) for i in range(3))
    return text, fmt


def sft_stream(seed: int, exclude: Iterable[str]) -> Iterator[tuple[Problem, str, str]]:
    """Endless (problem, target text, format name) triples; deterministic in ``seed``.

    Problems and formats use separate random streams (sub-seeds ``sft-problems:<seed>``
    and ``sft-formats:<seed>``), so changing the format mixture does not change
    which problems are drawn.
    """
    problems = problem_stream(f"sft-problems:{seed}", exclude)
    fmt_rng = random.Random(f"sft-formats:{seed}")
    for p in problems:
        text, fmt = render_target(fmt_rng, p)
        yield p, text, fmt


def sft_examples(seed: int, n: int, exclude: Iterable[str]) -> list[tuple[Problem, str, str]]:
    """The first ``n`` triples of ``sft_stream(seed, exclude)``."""
    stream = sft_stream(seed, exclude)
    return [next(stream) for _ in range(n)]


def main(argv: Sequence[str] | None = None) -> int:
    return run(_main, argv)


def _main(args_in: Sequence[str] | None) -> int:
    parser = make_parser(
        "python -m course.tinylm.sft_data",
        "Print examples of pi0's supervised training data (prompt -> target, format name).",
        "  python -m course.tinylm.sft_data --n 20 --seed 0",
    )
    # A preview of the recipe printed to the terminal: a hundred thousand lines is past any reading.
    parser.add_argument("--n", type=int_in(1, 100_000), default=20, help="how many examples, at most 100,000 "
                        "(default 20)")
    parser.add_argument("--seed", type=seed, default=0, help="recipe seed (pi0 uses the one in its manifest)")
    args = parser.parse_args(args_in)
    for p, text, fmt in sft_examples(args.seed, args.n, read_prompts(DEFAULT_DATASETS)):
        print(f"[{fmt}] {p.prompt}\n    -> {text!r}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
