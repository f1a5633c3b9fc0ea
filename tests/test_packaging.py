"""The committed poetry.lock: present, PyPI-shaped and fresh for pyproject.toml.

A fresh clone's first command is ``poetry install``; with a fresh lock Poetry
installs the locked versions without resolving (README "Installing"). These
tests read the two files only: no Poetry, no network.

Freshness is Poetry's own rule (poetry.packages.locker.Locker._get_content_hash):
``[metadata] content-hash`` is the sha256 of ``json.dumps(relevant, sort_keys=True)``
where ``relevant`` holds the ``[project]`` keys requires-python, dependencies and
optional-dependencies, ``[dependency-groups]`` if any, and ``[tool.poetry]``'s
dependency keys. Change one of them and the lock must be made again
(``poetry lock``), or ``poetry install`` refuses the stale lock.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "poetry.lock"

# poetry.packages.locker.Locker's lists, copied: the keys whose change makes a lock stale.
PROJECT_KEYS = ("requires-python", "dependencies", "optional-dependencies")
LEGACY_POETRY_KEYS = ("dependencies", "source", "extras", "dev-dependencies")
POETRY_KEYS = (*LEGACY_POETRY_KEYS, "group")


def content_hash(pyproject: dict[str, Any]) -> str:
    """Poetry 2's content hash of a parsed pyproject.toml (see the module docstring)."""
    project = pyproject.get("project", {})
    groups = pyproject.get("dependency-groups", {})
    poetry = pyproject.get("tool", {}).get("poetry", {})
    relevant_project = {key: project[key] for key in PROJECT_KEYS if project.get(key) is not None}
    relevant_poetry = {}
    for key in POETRY_KEYS:
        data = poetry.get(key)
        # Poetry keeps a missing legacy key (as null) only for a project without [project] content.
        if data is None and (key not in LEGACY_POETRY_KEYS or relevant_project or groups):
            continue
        relevant_poetry[key] = data
    relevant: dict[str, Any] = {}
    if relevant_project:
        relevant["project"] = relevant_project
    if groups:
        relevant["dependency-groups"] = groups
    if relevant:
        relevant["tool"] = {"poetry": relevant_poetry}
    else:
        relevant = relevant_poetry
    return hashlib.sha256(json.dumps(relevant, sort_keys=True).encode()).hexdigest()


def _toml(path: Path) -> dict[str, Any]:
    with path.open("rb") as handle:
        return tomllib.load(handle)


def test_poetry_lock_is_committed_beside_pyproject() -> None:
    assert LOCK.is_file(), "poetry.lock is missing: run `poetry lock` and commit it"
    assert "poetry.lock" not in (ROOT / ".gitignore").read_text(encoding="utf-8").split()


def test_poetry_lock_content_hash_matches_pyproject() -> None:
    lock = _toml(LOCK)
    expected = content_hash(_toml(ROOT / "pyproject.toml"))
    assert lock["metadata"]["content-hash"] == expected, "poetry.lock is stale: run `poetry lock` and commit it"


def test_content_hash_changes_when_an_extra_changes() -> None:
    # The freshness check above is only worth something if an edited extra changes the hash.
    pyproject = _toml(ROOT / "pyproject.toml")
    before = content_hash(pyproject)
    pyproject["project"]["optional-dependencies"]["dev"].append("pytest-xdist")
    assert content_hash(pyproject) != before


def test_poetry_lock_names_no_package_index() -> None:
    # PyPI-shaped: every package comes from the default index, whichever the reader's is
    # ("your index"); a lock made through another index must not carry its address.
    lock = _toml(LOCK)
    with_source = [package["name"] for package in lock["package"] if "source" in package]
    assert not with_source, f"packages locked to a named source: {with_source[:5]}"
    urls = [file for package in lock["package"] for file in package["files"] if "url" in file]
    assert not urls, f"files locked to an address: {urls[:3]}"


def test_poetry_lock_knows_every_extra() -> None:
    lock = _toml(LOCK)
    extras = _toml(ROOT / "pyproject.toml")["project"]["optional-dependencies"]
    assert sorted(lock["extras"]) == sorted(extras)
    locked = {package["name"] for package in lock["package"]}
    for extra, packages in lock["extras"].items():
        assert set(packages) <= locked, f"extra {extra} names a package the lock does not hold"
