"""The layers of the house, checked from the source (docs/architecture.md describes them).

The instrument (``course/instrument``) is the bottom layer: the rules of reward
spec v1 must not depend on anything that could change without the scorer
fingerprint noticing. These tests read each module's imports with ``ast``
(every ``import``, including those inside functions) rather than importing it.
"""

from __future__ import annotations

import ast
import functools
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
COURSE = ROOT / "course"
INSTRUMENT = COURSE / "instrument"
STDLIB = frozenset(sys.stdlib_module_names)

# The one error type is shared by every layer (BRIEF: course/errors.py sits above
# them all); get_rubric raises it for an unknown name so each CLI exits 2.
SHARED = frozenset({"course.errors"})

# Command-line entry points of the instrument: tools, never imported by library code.
INSTRUMENT_TOOLS = frozenset({"course.score", "course.rubrics"})


@functools.lru_cache(maxsize=None)  # each module is parsed once, however many tests ask
def _imports(path: Path, package: str | None = None) -> list[str]:
    """Absolute names of every module ``path`` imports (relative imports resolved)."""
    if package is None:
        package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module or ""
            names.append(module)
            # `from course.instrument import spec_v1` imports the submodule spec_v1.
            names += [f"{module}.{alias.name}" for alias in node.names if module.startswith("course")]
    return names


def _within(name: str, module: str) -> bool:
    """True for the module itself and anything imported from it (course.errors.CourseError)."""
    return name == module or name.startswith(module + ".")


def _is_stdlib(name: str) -> bool:
    return name.split(".")[0] in STDLIB


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_the_import_reader_sees_lazy_and_from_imports(tmp_path):
    # Guard for the guards below: an import inside a function must not slip past them.
    module = tmp_path / "lazy.py"
    module.write_text("import re\n\ndef f():\n    from course import score\n", encoding="utf-8")
    assert {"re", "course.score"} <= set(_imports(module, package=""))


def test_spec_v1_imports_nothing_but_the_standard_library():
    imported = _imports(INSTRUMENT / "spec_v1.py")
    assert imported, "no imports found: the AST walk is broken"
    assert [name for name in imported if not _is_stdlib(name)] == []


@pytest.mark.parametrize("path", sorted(INSTRUMENT.glob("*.py")), ids=lambda p: p.name)
def test_the_instrument_imports_only_itself_the_shared_error_type_and_the_standard_library(path):
    outside = [
        name for name in _imports(path)
        if not (_is_stdlib(name) or any(_within(name, allowed) for allowed in (*SHARED, "course.instrument")))
    ]
    assert outside == [], f"{path.name} imports {outside}"


def test_the_shared_error_type_imports_only_the_standard_library():
    # So the instrument's whole import closure is the standard library.
    assert [name for name in _imports(COURSE / "errors.py") if not _is_stdlib(name)] == []


@pytest.mark.parametrize(
    "path",
    [p for p in sorted(COURSE.rglob("*.py")) if _module_name(p) not in INSTRUMENT_TOOLS],
    ids=lambda p: str(p.relative_to(COURSE)),
)
def test_no_course_module_imports_the_scorer_or_rubrics_command_line(path):
    # The rules are course.instrument.*; course.score and course.rubrics only parse arguments.
    used = sorted(set(_imports(path)) & INSTRUMENT_TOOLS)
    assert used == [], f"{path.relative_to(ROOT)} imports the tool module(s) {used}; use course.instrument"


# --- the library and the tools ------------------------------------------------------------------------
# pi0's supervised recipe is library code (the shipped pi0 manifest names its functions) that also
# prints a preview of itself (`python -m course.tinylm.sft_data --n 20`): both roles, on purpose.
LIBRARY_WITH_A_PREVIEW = frozenset({"course.tinylm.sft_data"})

# A tool that drives another tool's functions, and why (never its main: that is checked below).
TOOL_USES_TOOL = {
    ("course.tinylm.sweep", "course.tinylm.rl"): "the sweep is rl's train() run once per beta",
}


@functools.lru_cache(maxsize=None)
def _tool_modules() -> frozenset[str]:
    from course.lib.toolbox import TOOLS

    return frozenset(tool.module for tool in TOOLS) | INSTRUMENT_TOOLS


def _modules() -> list[Path]:
    return [p for p in sorted(COURSE.rglob("*.py")) if p.name != "__main__.py"]


# Exercise content that may import a tool module. None today: the corrected twin of the planted-bug
# loops is the teacher's (teacher/planted_bugs_solutions.py), outside the package.
EXERCISE_COMPANIONS: frozenset[str] = frozenset()


@pytest.mark.parametrize(
    "path",
    [p for p in _modules() if _module_name(p) not in _tool_modules() | EXERCISE_COMPANIONS],
    ids=lambda p: str(p.relative_to(COURSE)),
)
def test_the_library_never_imports_a_tool_module(path):
    tools = _tool_modules() - LIBRARY_WITH_A_PREVIEW
    used = sorted(t for t in tools if any(_within(name, t) for name in _imports(path)))
    assert used == [], f"{path.relative_to(ROOT)} (library) imports the tool module(s) {used}"


@pytest.mark.parametrize("path", [p for p in _modules() if _module_name(p) in _tool_modules()],
                         ids=lambda p: str(p.relative_to(COURSE)))
def test_a_tool_imports_no_other_tool_except_the_listed_ones(path):
    # Tools share work through library functions; the one listed exception says why.
    me = _module_name(path)
    others = _tool_modules() - {me} - LIBRARY_WITH_A_PREVIEW
    used = sorted(t for t in others
                  if any(_within(name, t) for name in _imports(path)) and (me, t) not in TOOL_USES_TOOL)
    assert used == [], f"{path.relative_to(ROOT)} imports the tool module(s) {used}; move what it needs to the library"


@pytest.mark.parametrize("path", [p for p in _modules() if _module_name(p) in _tool_modules()],
                         ids=lambda p: str(p.relative_to(COURSE)))
def test_no_tool_calls_another_tools_main(path):
    me = _module_name(path)
    mains = [n for n in _imports(path) if n.endswith(".main") and n.rsplit(".", 1)[0] in _tool_modules() - {me}]
    assert mains == [], f"{path.relative_to(ROOT)} imports {mains}: call the library function instead"


@pytest.mark.parametrize("path", sorted((COURSE / "lib").rglob("*.py")),
                         ids=lambda p: str(p.relative_to(COURSE / "lib")))
def test_library_modules_parse_no_command_line(path):
    names = _imports(path)
    assert "argparse" not in names and not any(_within(n, "course.cli") for n in names), path.name


# --- the library's map ------------------------------------------------------------------------------
# course/lib's folders are the course's map (docs/architecture.md draws it): each subpackage serves one
# part of the course, and only what every part uses sits at the root. A module dropped at the root
# would blur the map; give it the folder of what it serves (or, if every layer needs it, add it here).
LIBRARY_ROOT_MODULES = frozenset({"__init__.py", "stats.py", "extras.py", "visible.py", "toolbox.py", "bundled.py"})
LIBRARY_FOLDERS = frozenset(
    {"records", "external", "reward_spec", "evaluation", "selection", "learning", "policy", "reporting"}
)


def test_only_the_modules_every_layer_uses_sit_at_the_library_root():
    stray = sorted(p.name for p in (COURSE / "lib").glob("*.py") if p.name not in LIBRARY_ROOT_MODULES)
    assert stray == [], f"course/lib/{stray[0]} sits outside the map: move it into the folder of what it serves"


def test_the_library_folders_are_the_mapped_ones_and_each_is_a_package():
    # a new folder is a new region of the map: add it here and to docs/architecture.md together
    folders = {p.name for p in (COURSE / "lib").iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders == LIBRARY_FOLDERS
    for folder in sorted(folders):
        assert (COURSE / "lib" / folder / "__init__.py").is_file(), f"course/lib/{folder} has no __init__.py"


# --- the library depends on nothing above it ---------------------------------------------------------
# course/lib is what every tool and both policies stand on: it imports only itself, the instrument and
# the one error type. What it needs from above is passed in (the selection tool hands over pick_best,
# token_inspect its vocabulary), or the shared piece lives in lib (course/lib/policy).
LIBRARY_MAY_IMPORT = ("course.lib", "course.instrument", "course.errors")


@pytest.mark.parametrize("path", sorted((COURSE / "lib").rglob("*.py")),
                         ids=lambda p: str(p.relative_to(COURSE / "lib")))
def test_the_library_imports_only_itself_the_instrument_and_the_error_type(path):
    up = sorted({n for n in _imports(path) if _within(n, "course") and n != "course"
                 and not any(_within(n, allowed) for allowed in LIBRARY_MAY_IMPORT)})
    assert up == [], (f"course/lib/{path.relative_to(COURSE / 'lib')} imports {up}: "
                      "pass it in, or move the shared piece into lib")


@pytest.mark.parametrize("path", [p for p in _modules() if _module_name(p).startswith("course.llm")],
                         ids=lambda p: str(p.relative_to(COURSE)))
def test_the_real_llm_and_the_tiny_lm_are_peers(path):
    # both stand on course/lib/policy; neither leans on the other
    used = sorted({n for n in _imports(path) if _within(n, "course.tinylm")})
    assert used == [], f"{path.relative_to(ROOT)} imports {used}: what both policies share belongs in course/lib"


def _private_imports(path: Path) -> list[str]:
    """``module.name`` for every ``from course... import _name`` in ``path`` (a private name)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").startswith("course"):
            found += [f"{node.module}.{a.name}" for a in node.names
                      if a.name.startswith("_") and not a.name.startswith("__")]
    return found


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(COURSE)))
def test_no_module_imports_another_files_private_name(path):
    # a leading underscore says "only this file uses it": a second user makes it public (rename it)
    assert _private_imports(path) == [], f"{path.relative_to(ROOT)} imports private names {_private_imports(path)}"


def _module_graph(inside_functions: bool = False) -> dict[str, set[str]]:
    """Module-level imports (the order Python runs them in), or with ``inside_functions`` every import."""
    names = {_module_name(p): p for p in _modules()}
    graph: dict[str, set[str]] = {}
    for me, path in names.items():
        package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
        deps: set[str] = set()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree) if inside_functions else tree.body:
            imported: list[str] = []
            if isinstance(node, ast.Import):
                imported = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                module = (f"{base}.{node.module}" if node.module else base) if node.level else node.module or ""
                imported = [module] + [f"{module}.{a.name}" for a in node.names]
            for name in imported:
                while name and name not in names:
                    name = name.rpartition(".")[0]
                if name and name != me and name != "course":
                    deps.add(name)
        graph[me] = deps
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            members = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                members.append(w)
                if w == v:
                    break
            if len(members) > 1:
                found.append(sorted(members))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def test_the_circle_finder_finds_a_circle():
    assert _circles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]


def test_no_course_modules_import_each_other_in_a_circle():
    # A circle makes the import order matter and hides which module is the base; move the shared part down.
    assert _circles(_module_graph()) == []


def test_the_circle_finder_sees_an_import_inside_a_function():
    # course.lib.policy.training_problems reads a dataset through records.formats, imported inside read_items
    assert "course.lib.records.formats" not in _module_graph()["course.lib.policy.training_problems"]
    assert "course.lib.records.formats" in _module_graph(inside_functions=True)["course.lib.policy.training_problems"]


def test_no_course_modules_import_each_other_in_a_circle_even_inside_functions():
    # An import moved into a function to dodge the circle above is still a circle: each module needs the
    # other to work, so neither is the base. Move what both need into one of them, or into a third.
    assert _circles(_module_graph(inside_functions=True)) == []


# --- every run a tool writes has a view ---------------------------------------------------------------
# A tool whose run the page could not draw would end without its "View it:" line: the views
# (course.lib.reporting.views, one module per kind) must name every tool that writes one.
# course.ray_eval writes the one-process course.eval run byte for byte, so its manifests name course.eval.
WRITES_RUNS_AS = {"course.ray_eval": "course.eval"}


def _opens_a_run_directory(source: str, node: ast.AST) -> bool:
    return "atomic_run_dir(" in (ast.get_source_segment(source, node) or "")


def _writes_a_run_directory(tool: str) -> bool:
    """The tool's file, or a course.lib function it imports by name, opens a run directory (atomic_run_dir)."""
    path = COURSE.joinpath(*tool.split(".")[1:]).with_suffix(".py")
    if not path.is_file():
        path = COURSE.joinpath(*tool.split(".")[1:], "__init__.py")
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source)
    if any(_opens_a_run_directory(source, n) for n in tree.body if isinstance(n, ast.FunctionDef)):
        return True
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("course.lib."):
            lib = COURSE.joinpath(*node.module.split(".")[1:]).with_suffix(".py")
            if not lib.is_file():
                continue
            lib_source = lib.read_text(encoding="utf-8")
            wanted = {a.name for a in node.names}
            if any(isinstance(n, ast.FunctionDef) and n.name in wanted and _opens_a_run_directory(lib_source, n)
                   for n in ast.parse(lib_source).body):
                return True
    return False


@pytest.mark.parametrize("tool", sorted(_tool_modules()))
def test_every_tool_that_writes_a_run_directory_has_a_report_view(tool):
    from course.lib.reporting.views import TOOL_KIND, VIEWS

    if not _writes_a_run_directory(tool):
        return
    kind = TOOL_KIND.get(WRITES_RUNS_AS.get(tool, tool))
    assert kind is not None, f"{tool} writes a run directory but no module of course.lib.reporting.views claims it"
    assert kind in VIEWS, f"run kind {kind!r} ({tool}) has no view in course.lib.reporting.views"


def test_the_run_directory_finder_sees_a_tool_whose_library_writes_the_run():
    # guard for the guard above: selection_demo's run is written by course.lib.selection.pipeline
    assert _writes_a_run_directory("course.selection_demo") and not _writes_a_run_directory("course.score")


def test_each_run_kind_is_declared_in_the_one_view_module_named_for_it():
    from course.lib.reporting import views

    modules = sorted(p.stem for p in (COURSE / "lib" / "reporting" / "views").glob("*.py") if p.stem != "__init__")
    assert sorted(views.VIEWS) == modules
    assert all(view.kind.name == name for name, view in views.VIEWS.items())


# --- sizes a newcomer can take in --------------------------------------------------------------------
# spec_v1.py is frozen: its bytes are the scorer fingerprint, so its shape stays until the next spec version.
MAX_FUNCTION_LINES = 80
MAX_MODULE_LINES = 600
LONG_MODULE_REASON = "# Over 600 lines because "
SIZED = sorted(p for p in COURSE.rglob("*.py") if p != INSTRUMENT / "spec_v1.py")


def _long_functions(source: str) -> list[tuple[str, int]]:
    """Every function (methods and nested ones too) longer than MAX_FUNCTION_LINES, with its length."""
    return [(node.name, node.end_lineno - node.lineno + 1) for node in ast.walk(ast.parse(source))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES]


def test_the_length_check_counts_a_function_from_its_def_to_its_last_line():
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
    assert _long_functions(f"def f():\n{body}") == [("f", MAX_FUNCTION_LINES + 1)]
    assert _long_functions(f"def f():\n{body[body.index(chr(10)) + 1:]}") == []


@pytest.mark.parametrize("path", SIZED, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_function_in_course_is_longer_than_80_lines(path):
    assert _long_functions(path.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize("path", SIZED, ids=lambda p: str(p.relative_to(ROOT)))
def test_a_module_over_600_lines_says_why_in_its_first_line(path):
    lines = path.read_text(encoding="utf-8").splitlines()
    if len(lines) > MAX_MODULE_LINES:
        assert lines[0].startswith(LONG_MODULE_REASON), f"{len(lines)} lines and no '{LONG_MODULE_REASON}...' line"


@pytest.mark.parametrize("path", SIZED, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_type_ignore_names_its_error_code_and_its_reason(path):
    lines = path.read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        if "# type: ignore" not in line:
            continue
        assert "# type: ignore[" in line, f"line {i + 1}: a type: ignore without its error code"
        after = line.split("# type: ignore[", 1)[1].split("]", 1)[1]
        assert "#" in after or lines[i - 1].lstrip().startswith("#"), (
            f"line {i + 1}: a type: ignore without its reason (a comment after it or on the line above)")
