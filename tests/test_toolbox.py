"""`python -m course` lists every tool; library modules say they are not tools."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from course.lib.toolbox import TOOLS, listing

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "course"


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def _runnable_modules() -> list[str]:
    names = []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if path.name != "__main__.py" and 'if __name__ == "__main__"' in text and "not_a_tool(" not in text:
            names.append(_module_name(path))
    return names


def _library_modules() -> list[str]:
    return [_module_name(p) for p in sorted(PACKAGE.rglob("*.py"))
            if "raise SystemExit(not_a_tool(" in p.read_text(encoding="utf-8")]


def test_every_runnable_module_is_listed_exactly_once():
    listed = [tool.module for tool in TOOLS]
    assert sorted(listed) == sorted(set(listed))
    assert sorted(listed) == _runnable_modules()


def test_python_dash_m_course_prints_every_tool_grouped_by_loop():
    out = subprocess.run([sys.executable, "-m", "course"], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    for tool in TOOLS:
        assert f"python -m {tool.module} " in out
    assert out.index("Loop A - evaluation:") < out.index("Loop B - selection:") < out.index("Loop C - learning:")


@pytest.mark.parametrize("package", ["course.tinylm", "course.llm", "course.exercises"])
def test_subpackage_listing_shows_only_its_own_tools(package):
    out = subprocess.run([sys.executable, "-m", package], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    assert out.strip() == listing(package + ".").strip()
    assert "course.eval " not in out


def test_library_modules_refuse_to_run_with_a_pointer_to_the_list():
    modules = _library_modules()
    assert "course.lib.stats" in modules and "course.cli" in modules
    for module in ("course.lib.stats", "course.lib.records.runs", "course.tinylm.vocab"):
        proc = subprocess.run([sys.executable, "-m", module], capture_output=True, text=True, cwd=ROOT)
        assert proc.returncode == 2
        assert f"{module} is a library module, not a tool" in proc.stderr
        assert proc.stdout == ""


def test_a_library_module_answers_help_with_what_it_is_and_exit_0():
    proc = subprocess.run([sys.executable, "-m", "course.cli", "--help"], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0
    assert "course.cli is a library module, not a tool" in proc.stdout and proc.stderr == ""


def test_every_bundled_file_a_tools_help_example_names_exists() -> None:
    # A worked example that names a missing file fails for the first student who pastes it
    # (course.datasets' example once pointed at tests/data/gsm8k_sample.jsonl, which never existed).
    import importlib
    import re
    from pathlib import Path

    repo = Path(__file__).resolve().parent.parent
    missing = []
    for tool in TOOLS:
        try:
            module = importlib.import_module(tool.module)
        except ImportError:  # its extra is not installed: checked where it is (CI installs every extra)
            continue
        parser = getattr(module, "build_parser", None)
        if parser is None:
            continue
        text = parser().format_help()
        for path in re.findall(r"(?<![\w/.])((?:data|tests)/[\w./-]+\.(?:jsonl|json|csv|txt))", text):
            if not (repo / path).is_file():
                missing.append(f"{tool.module}: {path}")
    assert not missing, missing
