"""Rows from reasoning-gym's procedural generators, for ``course.datasets import --format reasoning-gym``.

reasoning-gym (``reasoning_gym.create_dataset(name, seed=, size=, **config)``) generates tasks from
a seed instead of reading a file: the same name, seed, size and config always give the same
questions and answers, with no network. This module owns reading one generator's entries as the
``(where, row)`` pairs ``course.lib.external.dataset_readers.convert`` takes (``question``, and the
``answer`` as the generator's text), and the record of how they were made (``generation``),
written beside the dataset so the import can be made again. Only generators whose answers are
integers suit the strict scorer (``basic_arithmetic``, ``chain_sum``, ``gcd``, ``lcm``, ...);
an entry whose answer is not one is refused at its ``reasoning-gym:<name>:<n>`` like any row.
"""

from __future__ import annotations

from typing import Any, Iterator

from course.errors import CourseError
from course.lib.records.jsonl import loads_document

SIZE_LIMIT = 100_000  # items per import: a generator is unbounded, a dataset file is not


def parse_config(text: str | None) -> dict[str, Any]:
    """``--rg-config``: the generator's keyword settings as a JSON object (``{"max_num_terms": 3}``)."""
    if text is None:
        return {}
    if not text.lstrip().startswith("{"):
        raise CourseError("--rg-config: must be a JSON object of the generator's settings, e.g. '{\"min_terms\": 2}'")
    config = loads_document(text, "--rg-config", "generator settings")
    for reserved in ("seed", "size"):
        if reserved in config:
            raise CourseError(f"--rg-config: '{reserved}' is given with --{reserved}, not in the settings")
    return config


def generation(name: str, seed: int, size: int, config: dict[str, Any]) -> dict[str, Any]:
    """How the items were made: enough to make them again (recorded beside the dataset)."""
    from importlib.metadata import version

    return {"library": "reasoning-gym", "version": version("reasoning-gym"), "generator": name, "seed": seed,
            "size": size, "config": config}


def reasoning_gym_rows(name: str, seed: int, size: int, config: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(where, {"question", "answer"})`` for each entry of the seeded generator ``name``."""
    if not 1 <= size <= SIZE_LIMIT:
        raise CourseError(f"--size {size}: must be between 1 and {SIZE_LIMIT:,}")
    try:
        import reasoning_gym
    except ImportError:
        raise CourseError("--format reasoning-gym needs reasoning-gym: pip install reasoning-gym==0.1.25 "
                          "(docs/bridges.md)") from None
    from reasoning_gym.factory import DATASETS

    if name not in DATASETS:
        raise CourseError(f"reasoning-gym has no generator {name!r} (e.g. basic_arithmetic, chain_sum, gcd, lcm)")
    try:
        dataset = reasoning_gym.create_dataset(name, seed=seed, size=size, **config)
    except (TypeError, ValueError, AssertionError) as exc:  # reasoning-gym checks its config with asserts
        raise CourseError(f"reasoning-gym {name}: the settings {config} are refused ({exc or type(exc).__name__})")
    for k in range(size):
        entry = dataset[k]
        answer = entry.get("answer")
        yield f"reasoning-gym:{name}:{k + 1}", {"question": entry.get("question"),
                                               "answer": answer if isinstance(answer, str) else str(answer)}


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.external.procedural"))
