"""The training problem stream every policy learns from, and the bundled datasets it never repeats.

``problem_stream`` draws seeded generator problems (``course.lib.reward_spec.problems``) whose prompts
are in none of ``course.lib.bundled.DEFAULT_DATASETS`` (dev and holdout), so a learning run never trains on an
item it is measured on; ``read_items`` and ``read_prompts`` read those files.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Iterable, Iterator

from course.lib.reward_spec.problems import Problem, make_problem


def read_items(path: str | Path) -> list[dict]:
    """The items of one dataset file (through ``course.lib.records.formats.read_dataset``) as score()-ready dicts."""
    from course.lib.records.formats import read_dataset

    return [example.as_dict() for example in read_dataset(path)]


def read_prompts(paths: Iterable[str | Path]) -> list[str]:
    """Every prompt in the given dataset files (missing files are skipped), in file order."""
    prompts: list[str] = []
    for path in paths:
        if Path(path).exists():
            prompts.extend(item["prompt"] for item in read_items(path))
    return prompts


def problem_stream(seed: int | str, exclude: Iterable[str]) -> Iterator[Problem]:
    """An endless seeded stream of generator problems whose prompts are not in ``exclude``."""
    banned = frozenset(exclude)
    rng = random.Random(seed)
    while True:
        problem = make_problem(rng)
        if problem.prompt not in banned:
            yield problem
