"""Re-make poetry.lock when pyproject.toml's dependencies change (a plain `poetry lock` does not finish).

Why: with every extra (torch, trl, transformers, inspect-ai, lm-eval, ...) Poetry 2.5's solver spends
its time in marker arithmetic whenever one requirement sits under two extras (the `all` extra repeats
every other one), and a plain `poetry lock` ran for over 50 minutes without finishing. The way round:

1. Copy the project to a temporary directory. In the copy's pyproject.toml, rewrite
   [project.optional-dependencies] so that each requirement sits in exactly one extra ("groups":
   e.g. `g-matplotlib = ["matplotlib>=3.7"]`, `lm = ["torch>=2.2", "numpy>=1.24"]`, no `all`), such
   that every real extra is a union of groups; add your index as a source if Poetry cannot read
   per-version metadata from it (`[[tool.poetry.source]] name = "simple" url = "<your index's simple
   URL>" priority = "primary"`).
2. `poetry lock` in the copy (about 9 minutes on a loaded 2-core machine; adding the llm extra took
   65 minutes of wall time, 30 of CPU, on a 2-core host at load average 5 to 16: do not put a timeout on it).
3. Run this script from Poetry's own environment (it imports poetry):

       python scripts/poetry_relock.py COPY/poetry.lock COPY/pyproject.toml pyproject.toml poetry.lock

   It removes every package source (the lock stays PyPI-shaped: no index address in the repository),
   rewrites each `extra == "group"` marker as the exact disjunction of the real extras that contain
   that group, rebuilds [extras], and sets content-hash from the real pyproject.toml with Poetry's own
   Locker. Then `poetry check --lock` must say "All set!" and tests/test_packaging.py must pass.
"""
import re
import sys
from pathlib import Path

import tomllib
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from poetry.core.version.markers import parse_marker
from poetry.packages.locker import Locker

src, temp_py, real_py, out = map(Path, sys.argv[1:])
text = src.read_text()
real = tomllib.loads(real_py.read_text())
temp = tomllib.loads(temp_py.read_text())
def reqs(d):
    return {name: {str(Requirement(r)) for r in rs} for name, rs in d["project"]["optional-dependencies"].items()}
R, G = reqs(real), reqs(temp)
mapping = {g: sorted(r for r in R if G[g] <= R[r]) for g in G}
for r in R:  # exact cover: each real extra is the union of the groups mapped to it
    assert set().union(*(G[g] for g in G if r in mapping[g])) == R[r], r
for g in G:  # groups are disjoint
    for h in G:
        assert g == h or not (G[g] & G[h]), (g, h)
print("mapping:", mapping)

text, n_src = re.subn(r'\n\[package\.source\]\ntype = "legacy"\nurl = "[^"]*"\nreference = "[^"]*"\n', "\n", text)

def on(g):
    rs = mapping[g]
    return rs[0] if len(rs) == 1 else None
def fix(line: str) -> str:
    def eq(m):
        rs = mapping[m.group(1)]
        body = " or ".join(f'extra == \\"{r}\\"' for r in rs)
        return body if len(rs) == 1 else f"({body})"
    def ne(m):
        rs = mapping[m.group(1)]
        body = " and ".join(f'extra != \\"{r}\\"' for r in rs)
        return body if len(rs) == 1 else f"({body})"
    line = re.sub(r'extra == \\"([a-z0-9-]+)\\"', eq, line)
    line = re.sub(r'extra != \\"([a-z0-9-]+)\\"', ne, line)
    return line
lines = text.split("\n")
n_mark = 0
for i, line in enumerate(lines):
    assert not line.startswith("markers = {"), "group-dict markers not handled"
    if line.startswith("markers = "):
        new = fix(line)
        parse_marker(tomllib.loads(new)["markers"])
        n_mark += new != line
        lines[i] = new
text = "\n".join(lines)

block = re.search(r"\n\[extras\]\n(.*?)\n\n", text, re.S)
entries = []
for r in sorted(R):
    names = sorted({canonicalize_name(Requirement(x).name) for x in real["project"]["optional-dependencies"][r]})
    entries.append(f"{r} = [" + ", ".join(f'"{n}"' for n in names) + "]")
text = text[: block.start(1)] + "\n".join(entries) + text[block.end(1):]

h = Locker(out, real)._get_content_hash()
text, n_hash = re.subn(r'content-hash = "[0-9a-f]+"', f'content-hash = "{h}"', text)
assert n_hash == 1 and "[package.source]" not in text and "\nurl = " not in text and "/simple" not in text
out.write_text(text)
print(f"sources stripped: {n_src}, markers rewritten: {n_mark}, hash {h}")
