"""The course's task: small arithmetic and word problems with one integer answer.

This module owns the problem generator that every part of the course draws from:
the bundled datasets (``scripts/make_data.py`` writes ``data/datasets/*.jsonl``
from it) and the training set of the tiny language model. Keeping one generator
means the tiny model is trained on the same *distribution* it is evaluated on,
while the evaluation items themselves stay fixed files.

Every prompt states the output format the verifier (``course.score``) checks::

    Compute 17 * 19. Output exactly one line: Final: <int>

Numbers are small on purpose: a character-level transformer trained on a laptop
CPU must be able to get many of them right. Some answers are negative
(``Compute 12 - 30.`` is -18; a temperature can drop below zero), so the
verifier's handling of signs is exercised by real items.

Use it with an explicit ``random.Random`` (never the global RNG)::

    >>> import random
    >>> p = make_problem(random.Random("demo"), "sub")
    >>> p.kind, p.prompt.endswith(FORMAT_INSTRUCTION)
    ('sub', True)
    >>> p.answer == p.operands[0] - p.operands[1]
    True
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from course.errors import CourseError

FORMAT_INSTRUCTION = "Output exactly one line: Final: <int>"

KINDS: tuple[str, ...] = ("add", "sub", "mul", "word_add", "word_sub", "word_mul")

# Prompts stay short so a character-level model's context is mostly the question.
MAX_PROMPT_CHARS = 140


@dataclass(frozen=True)
class Problem:
    """One task item.

    ``prompt`` is the full text shown to the policy (it ends with
    ``FORMAT_INSTRUCTION``), ``answer`` the one correct integer, ``kind`` one of
    ``KINDS``. ``operands`` are the two numbers the answer is computed from, in
    the order of the kind's operation (``add``: a + b, ``sub``: a - b, ``mul``:
    a * b; the ``word_*`` kinds use the same operations), so a test can recompute
    the answer without reading the prompt text.
    """

    prompt: str
    answer: int
    kind: str
    operands: tuple[int, ...] = ()


# The course's running example (17 * 19 = 323): the first item of the dev set.
RUNNING_EXAMPLE = Problem(
    prompt=f"Compute 17 * 19. {FORMAT_INSTRUCTION}",
    answer=323,
    kind="mul",
    operands=(17, 19),
)

_OPERATION = {"add": "+", "sub": "-", "mul": "*"}


def solve(kind: str, operands: tuple[int, ...]) -> int:
    """The answer of a problem of ``kind`` over ``operands`` (the reference arithmetic).

    >>> solve("word_sub", (5, 12))
    -7
    """
    op = kind.removeprefix("word_")
    a, b = operands
    if op == "add":
        return a + b
    if op == "sub":
        return a - b
    if op == "mul":
        return a * b
    raise CourseError(f"unknown problem kind {kind!r}; expected one of {', '.join(KINDS)}")


# ---------------------------------------------------------------------------
# Word-problem templates. Each takes (a, b) in operation order; the numbers are
# drawn so that every template reads naturally (no "1 apples", no giving away
# more than you have). Negative answers only come from templates where a value
# below zero is ordinary: temperatures and game scores.
# ---------------------------------------------------------------------------
_NAMES: tuple[tuple[str, str], ...] = (
    ("Mia", "she"), ("Leo", "he"), ("Ava", "she"), ("Sam", "he"),
    ("Zoe", "she"), ("Ben", "he"), ("Lily", "she"), ("Omar", "he"),
)
_THINGS: tuple[str, ...] = ("apples", "marbles", "stickers", "cards", "shells", "coins")

_WORD_ADD = (
    "{name} has {a} {things} and buys {b} more. How many {things} does {pron} have now?",
    "A shelf holds {a} books. {name} puts {b} more books on it. How many books are on the shelf?",
    "The temperature is {a} degrees and rises by {b} degrees. What is the temperature now?",
)
_WORD_SUB = (
    "{name} has {a} {things} and gives away {b}. How many {things} are left?",
    "A bus has {a} passengers. At the stop, {b} get off. How many passengers are on the bus now?",
    "The temperature is {a} degrees and drops by {b} degrees. What is the temperature now?",
    "In a game, {name} has {a} points and loses {b} points. What is the score now?",
)
_WORD_MUL = (
    "There are {a} boxes with {b} pencils in each box. How many pencils are there in total?",
    "{name} reads {b} pages every day for {a} days. How many pages does {pron} read in total?",
    "A hall has {a} rows of {b} chairs. How many chairs are in the hall?",
)


def _arithmetic(rng: random.Random, kind: str) -> tuple[int, int]:
    """Operands for the bare ``Compute a op b.`` kinds."""
    if kind == "add":
        if rng.random() < 0.08:  # a rare harder item: three-digit operands, sums up to ~2000
            return rng.randint(100, 999), rng.randint(100, 999)
        return rng.randint(1, 99), rng.randint(1, 99)
    if kind == "sub":
        # About a third of subtractions go below zero: "Compute 12 - 30." is -18.
        a, b = rng.randint(1, 99), rng.randint(1, 99)
        return (a, b) if rng.random() < 0.35 else (max(a, b), min(a, b))
    # mul: mostly one digit times one or two digits; about one in ten is harder
    # (two digits by two, like the running example 17 * 19, or three digits by one).
    hard = rng.random()
    if hard < 0.06:
        return rng.randint(11, 25), rng.randint(11, 25)
    if hard < 0.10:
        return rng.randint(101, 499), rng.randint(3, 9)
    return rng.randint(2, 9), rng.randint(2, 19)


def _word(rng: random.Random, kind: str) -> tuple[str, tuple[int, int]]:
    """(question text, operands) for the ``word_*`` kinds."""
    name, pron = rng.choice(_NAMES)
    things = rng.choice(_THINGS)
    if kind == "word_add":
        template = rng.choice(_WORD_ADD)
        if "temperature" in template:
            a, b = -rng.randint(2, 15), rng.randint(2, 20)  # from below zero, may stay below
        else:
            a, b = rng.randint(2, 60), rng.randint(2, 40)
    elif kind == "word_sub":
        template = rng.choice(_WORD_SUB)
        if "temperature" in template or "game" in template:
            a, b = rng.randint(2, 30), rng.randint(2, 40)  # may end below zero
        else:
            a = rng.randint(5, 60)
            b = rng.randint(2, a - 1)  # nobody gives away more than they have
    else:
        template = rng.choice(_WORD_MUL)
        a, b = rng.randint(2, 9), rng.randint(2, 12)
    text = template.format(name=name, pron=pron, things=things, a=a, b=b)
    return text, (a, b)


def make_problem(rng: random.Random, kind: str | None = None) -> Problem:
    """Draw one problem; deterministic given the state of ``rng``.

    ``kind=None`` lets ``rng`` choose uniformly among ``KINDS``.

    >>> make_problem(random.Random(0), "mul") == make_problem(random.Random(0), "mul")
    True
    >>> make_problem(random.Random(0), "div")
    Traceback (most recent call last):
    ...
    course.errors.CourseError: unknown problem kind 'div'; expected one of add, sub, mul, word_add, word_sub, word_mul
    """
    if kind is None:
        kind = rng.choice(KINDS)
    if kind not in KINDS:
        raise CourseError(f"unknown problem kind {kind!r}; expected one of {', '.join(KINDS)}")
    if kind in _OPERATION:
        a, b = _arithmetic(rng, kind)
        question = f"Compute {a} {_OPERATION[kind]} {b}."
    else:
        question, (a, b) = _word(rng, kind)
    return Problem(
        prompt=f"{question} {FORMAT_INSTRUCTION}",
        answer=solve(kind, (a, b)),
        kind=kind,
        operands=(a, b),
    )


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.reward_spec.problems"))
