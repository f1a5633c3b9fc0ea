"""Add one new extra to poetry.lock by joining a lock of that extra alone (how the `ray` extra was locked).

Why: a full `poetry lock` of this project (scripts/poetry_relock.py's grouped copy) spends its time in
Poetry's marker arithmetic for torch's CUDA overrides, and with the `ray` extra added it ran for over
50 CPU-minutes here without finishing. An extra whose packages are few and mostly already locked can
instead be locked on its own and joined:

1. In a temporary directory, a pyproject.toml with the same requires-python and one extra,
   `g-ray = ["ray>=2.40"]` (your index as a source if Poetry needs it), and a copy of the committed
   poetry.lock, so Poetry prefers the versions already locked. `poetry lock` there takes seconds.
2. From Poetry's own environment, after the real pyproject.toml gained the extra (and `all` lists it):

       python scripts/poetry_join_lock.py poetry.lock TMP/poetry.lock pyproject.toml poetry.lock

   Each package of the small lock either gets `or (extra == "ray" or extra == "all")` (under its own
   Python condition) added to the committed entry's marker, which must be the same release (same
   files, same dependencies), or is added as a new entry with that marker. Where the committed lock
   holds other versions than the small one, SPLITS says which entry serves which Python, with the
   reason. Then [extras] and content-hash (Poetry's own Locker) are rewritten; package sources are
   dropped, so the lock stays PyPI-shaped.
3. Check it as Poetry reads it: `poetry check --lock` ("All set!"), and `poetry install --extras ray`
   in fresh environments of the oldest and a newer supported Python (3.10 and 3.11 resolve different
   entries of filelock and rpds-py), plus `poetry install --all-extras --dry-run` (no conflict).
   tests/test_packaging.py must pass.

Cross-checked against a full relock that did finish (a 14-group copy, Poetry run with the hashes of its
immutable marker and constraint objects cached, about 25 CPU-minutes): the same 230 packages at the same
versions with the same files and dependencies, the same [extras] and content-hash, and markers that select
the same packages for Python 3.10-3.15 on Linux, macOS and Windows under every extra, but one: the full
lock's rpds-py markers pick 2026.9.1 (which requires Python >= 3.11) on macOS with Python 3.10 under ray or
all, where this join picks 0.30.0. The join's marker is the one that installs, so it was kept.
"""
import re
import sys
from pathlib import Path

import tomllib
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version
from poetry.core.version.markers import parse_marker
from poetry.packages.locker import Locker

main_p, small_p, real_py, out = map(Path, sys.argv[1:])
real = tomllib.loads(real_py.read_text())
EXTRA = "ray"  # the extra joined; the small lock names it "g-ray"; `all` lists it too
RAY = f'(extra == "{EXTRA}" or extra == "all")'
# Packages whose committed entries are other versions than the small lock's: which entry ray takes, by Python.
SPLITS = {
    # the committed lock holds 4.1.0 for Python 3.10 and 4.2.12 from 3.11; ray (filelock, any version) takes either
    "filelock": {"small": "4.1.0", "existing": {"4.1.0": 'python_version == "3.10"',
                                                  "4.2.12": 'python_version >= "3.11"'}, "new": None},
    # the committed 2026.9.1 requires Python >= 3.11; on 3.10 ray's jsonschema (rpds-py >= 0.25) takes 0.30.0
    "rpds-py": {"small": "0.30.0", "existing": {"2026.9.1": 'python_version >= "3.11"'},
                "new": 'python_version == "3.10"'},
}


def split(text):
    i = text.index("[[package]]\n")
    j = text.index("\n[extras]\n")
    body = text[i:j + 1]
    blocks = ["[[package]]\n" + b for b in body.split("[[package]]\n")[1:]]
    assert "".join(blocks) == body
    return text[:i], blocks, text[j + 1:]


def nv(b):
    return re.search(r'^name = "([^"]+)"', b, re.M).group(1), re.search(r'^version = "([^"]+)"', b, re.M).group(1)


def esc(m):
    return m.replace('"', '\\"')


def add_marker(b, extra_or):
    m = re.search(r'^markers = "(.*)"$', b, re.M)
    old = m.group(1).replace('\\"', '"')
    new = f"{old} or {extra_or}"
    parse_marker(new)
    return b[:m.start()] + 'markers = "' + esc(new) + '"' + b[m.end():]


def with_marker(b, marker):
    parse_marker(marker)
    b = re.sub(r'\n\[package\.source\]\ntype = "legacy"\nurl = "[^"]*"\nreference = "[^"]*"\n', "\n", b)
    b, n = re.subn(r'^markers = ".*"$', 'markers = "' + esc(marker) + '"', b, flags=re.M)
    assert n == 1
    return b.rstrip("\n") + "\n\n"


text = main_p.read_text()
head, blocks, rest = split(text)
main = tomllib.loads(text)
small_text = small_p.read_text()
_, small_blocks, _ = split(small_text)
small = tomllib.loads(small_text)
by_name = {}
for i, b in enumerate(blocks):
    by_name.setdefault(nv(b)[0], {})[nv(b)[1]] = i
new_blocks = []
for sp, sb in zip(small["package"], small_blocks):
    name, version = sp["name"], sp["version"]
    assert nv(sb) == (name, version)
    assert sp["markers"].count(f'extra == "g-{EXTRA}"') == 1, sp["markers"]
    rm = sp["markers"].replace(f'extra == "g-{EXTRA}"', RAY)
    versions = by_name.get(name, {})
    if not versions:
        new_blocks.append(with_marker(sb, rm))
        print("new      ", name, version, rm)
    elif name in SPLITS:
        rule = SPLITS[name]
        assert version == rule["small"] and set(versions) == set(rule["existing"]), (name, versions, version)
        for v, python in rule["existing"].items():
            blocks[versions[v]] = add_marker(blocks[versions[v]], f"{python} and {rm}")
        if rule["new"]:
            new_blocks.append(with_marker(sb, f'{rule["new"]} and {rm}'))
        print("split    ", name, rule)
    else:
        assert set(versions) == {version}, (name, versions, version)
        mp = next(p for p in main["package"] if p["name"] == name and p["version"] == version)
        assert mp["files"] == sp["files"] and mp.get("dependencies") == sp.get("dependencies"), name
        blocks[versions[version]] = add_marker(blocks[versions[version]], rm)
        print("or       ", name, version)
allb = sorted(blocks + new_blocks, key=lambda b: (nv(b)[0].lower(), Version(nv(b)[1])))
assert allb[-1] is blocks[-1]  # the last block keeps its spacing before [extras]
ex = tomllib.loads(rest)["extras"]
names = sorted({canonicalize_name(Requirement(r).name) for r in real["project"]["optional-dependencies"][EXTRA]})
ex[EXTRA] = names
ex["all"] = sorted(set(ex["all"]) | set(names))
old_extras = re.search(r"\[extras\]\n(.*?)\n\n", rest, re.S)
new_extras = "\n".join(f'{k} = [' + ", ".join(f'"{x}"' for x in v) + "]" for k, v in sorted(ex.items()))
rest = rest[:old_extras.start(1)] + new_extras + rest[old_extras.end(1):]
merged = head + "".join(allb) + rest
h = Locker(out, real)._get_content_hash()
merged, n = re.subn(r'content-hash = "[0-9a-f]+"', f'content-hash = "{h}"', merged)
assert n == 1 and "[package.source]" not in merged and "/simple" not in merged
tomllib.loads(merged)
out.write_text(merged)
print("written", out, "content-hash", h)
