"""Run the doctests of every module in the ``course`` package, so documented examples cannot rot.

pytest's ``--doctest-modules`` only looks under ``tests/`` (the testpaths); this
file walks ``course`` itself. A module whose source holds no ``>>>`` has no example
to run and is not imported here (importing all of them would load torch and
inspect_ai for nothing; each tool's own tests import it). A module whose import
fails because an optional dependency (torch, matplotlib, tiktoken, openai, ...) is
not installed is skipped with the reason; any other import error fails the test.
"""

from __future__ import annotations

import doctest
import importlib
import importlib.util
import pkgutil
from pathlib import Path

import pytest

import course


def _module_names() -> list[str]:
    names = [course.__name__]
    for info in pkgutil.walk_packages(course.__path__, prefix=course.__name__ + "."):
        if not info.name.endswith("__main__"):
            names.append(info.name)
    return sorted(names)


def _has_examples(name: str) -> bool:
    spec = importlib.util.find_spec(name)
    assert spec is not None and spec.origin is not None, name
    return ">>>" in Path(spec.origin).read_text(encoding="utf-8")


WITH_EXAMPLES = [name for name in _module_names() if _has_examples(name)]


def _import_or_skip(name: str):
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        missing = getattr(exc, "name", None) or ""
        if missing and not missing.startswith(course.__name__):
            pytest.skip(f"{name} needs the optional dependency {missing!r}")
        raise


@pytest.mark.parametrize("name", WITH_EXAMPLES)
def test_module_doctests_pass(name):
    module = _import_or_skip(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} doctest example(s) failed in {name}"


def test_the_modules_with_examples_are_found():
    # a finder that found nothing would make every test above vanish, not fail
    assert (len(WITH_EXAMPLES) >= 30 and "course.instrument.spec_v1" in WITH_EXAMPLES
            and "course.lib.stats" in WITH_EXAMPLES)


def test_the_scorer_has_doctested_examples():
    from course.instrument import spec_v1

    assert doctest.testmod(spec_v1).attempted >= 4
