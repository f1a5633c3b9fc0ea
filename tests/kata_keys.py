"""The teacher's kata keys, for the tests that need them: read from ``teacher/`` through the teacher's own tool.

The student's tools never read a key (``course/`` names no key file), so a test that compares a
pack with its key loads ``teacher/kata_mark.py`` as the teacher runs it.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parent.parent


def teacher_tool(name: str) -> ModuleType:
    """``teacher/<name>.py`` imported as a module (the teacher's tools are scripts, not a package)."""
    spec = importlib.util.spec_from_file_location(f"teacher_{name}", REPO / "teacher" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while being defined
    spec.loader.exec_module(module)
    return module


kata_mark = teacher_tool("kata_mark")


def load_key(pack: str = "basic") -> dict:
    """The pack's key: id -> KeyEntry(label, justification, fix)."""
    return kata_mark.load_key(kata_mark.KEYS[pack])
