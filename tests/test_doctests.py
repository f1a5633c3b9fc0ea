"""Run the doctests of every module in the ``course`` package, so documented examples cannot rot.

pytest's ``--doctest-modules`` only looks under ``tests/`` (the testpaths); this
file walks ``course`` itself. A module whose import fails because an optional
dependency (torch, matplotlib, tiktoken, openai, ...) is not installed is
skipped with the reason; any other import error fails the test.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import course


def _module_names() -> list[str]:
    names = [course.__name__]
    for info in pkgutil.walk_packages(course.__path__, prefix=course.__name__ + "."):
        if not info.name.endswith("__main__"):
            names.append(info.name)
    return sorted(names)


def _import_or_skip(name: str):
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        missing = getattr(exc, "name", None) or ""
        if missing and not missing.startswith(course.__name__):
            pytest.skip(f"{name} needs the optional dependency {missing!r}")
        raise


@pytest.mark.parametrize("name", _module_names())
def test_module_doctests_pass(name):
    module = _import_or_skip(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} doctest example(s) failed in {name}"


def test_the_scorer_has_doctested_examples():
    from course.instrument import spec_v1

    assert doctest.testmod(spec_v1).attempted >= 4
