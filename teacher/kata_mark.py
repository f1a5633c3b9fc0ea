"""The teacher's kata tool: the answer keys, marking a student's label file against them, printing a key.

The student's ``python -m course.kata --check FILE`` says only whether the file is complete and
well formed; it never reads a key. Which labels are right, and the key's why and fix, live here,
where only a teacher looks. Run it from the top of the checkout::

    python teacher/kata_mark.py their_labels.json                 # right/WRONG/blank per item, key under each miss
    python teacher/kata_mark.py --pack hard their_hard_labels.json
    python teacher/kata_mark.py                                   # the whole key: label, why, fix

Exit 0 when the file has every label right and every item complete (or when only the key is
printed), 1 otherwise, 2 on a bad file or flag (one line naming it).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

if __name__ == "__main__":  # run as a script from a checkout: the course package is one folder up
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from course.cli import make_parser, run
from course.errors import CourseError
from course.lib.records.jsonl import read_json
from course.lib.reward_spec.kata_labels import (
    LABELS,
    PACKS,
    SENTENCE_RULE,
    Answer,
    check_form,
    load_examples,
    load_labels,
)
from course.lib.visible import visible

TEACHER = Path(__file__).resolve().parent
# Each pack's key, beside this tool: label, justification and fix per example id.
KEYS: dict[str, Path] = {
    "basic": TEACHER / "kata_answer_key.json",
    "hard": TEACHER / "kata_hard_answer_key.json",
}


@dataclass(frozen=True)
class KeyEntry:
    """The teacher's verdict on one example."""

    label: str
    justification: str
    fix: str


def _text(entry: Mapping[str, object], name: str, where: str) -> str:
    value = entry.get(name)
    if not isinstance(value, str):
        raise CourseError(f"{where}: {name!r} must be a string")
    return value


def load_key(path: str | Path) -> dict[str, KeyEntry]:
    """An answer key: id -> KeyEntry. Bad input is a CourseError naming the file and the item."""
    path = Path(path)
    items = read_json(path, "kata answer key").get("items")
    if not isinstance(items, dict):
        raise CourseError(f"{path}: expected an object with an 'items' object (id -> label, justification, fix)")
    key = {}
    for kid, entry in items.items():
        where = f"{path}: items.{visible(kid, limit=40)}"
        if not isinstance(entry, dict):
            raise CourseError(f"{where}: expected an object")
        label = _text(entry, "label", where)
        if label not in LABELS:
            raise CourseError(f"{where}: label {visible(label, limit=40)!r} is not one of {', '.join(LABELS)}")
        key[kid] = KeyEntry(label, _text(entry, "justification", where), _text(entry, "fix", where))
    return key


@dataclass(frozen=True)
class Mark:
    """One item marked: the student's label, the key's entry, and what the form check found missing."""

    id: str
    given: str
    entry: KeyEntry
    problems: tuple[str, ...]

    @property
    def right(self) -> bool:
        return self.given == self.entry.label


def mark(labels: Mapping[str, Answer], key: Mapping[str, KeyEntry], ids: list[str]) -> list[Mark]:
    """Every item in pack order, compared with the key, with the student check's form problems."""
    missing = [kid for kid in ids if kid not in key]
    if missing:
        raise CourseError(f"the answer key has no entry for {', '.join(visible(m) for m in missing)}")
    forms = {r.id: r for r in check_form(labels, ids)}
    return [Mark(kid, labels.get(kid, Answer("")).label, key[kid], forms[kid].problems) for kid in ids]


def full_marks(marks: list[Mark]) -> bool:
    """Every label right and every item complete."""
    return all(m.right and not m.problems for m in marks)


def format_marking(marks: list[Mark]) -> str:
    """Right, WRONG or blank per item, the key's label, why and fix under each miss, form problems, the score."""
    lines = []
    for m in marks:
        form = f"  ({'; '.join(p for p in m.problems if p != 'no label yet')})" if m.given and m.problems else ""
        if m.right:
            lines.append(f"{visible(m.id)}  right{form}")
            continue
        lines.append(f"{visible(m.id)}  blank  (no label yet)" if not m.given
                     else f"{visible(m.id)}  WRONG  student: {m.given}{form}")
        lines += [f"        key: {m.entry.label}", f"        why: {visible(m.entry.justification)}",
                  f"        fix: {visible(m.entry.fix)}"]
    n_right = sum(m.right for m in marks)
    n_blank = sum(not m.given for m in marks)
    lines += ["", f"Score: {n_right}/{len(marks)} ({len(marks) - n_right - n_blank} wrong, {n_blank} blank)"]
    short = [m.id for m in marks if m.given and m.problems]
    if short:
        lines.append(f"Incomplete ({SENTENCE_RULE}; a fix) for {len(short)}: "
                     f"{', '.join(visible(kid) for kid in short)}.")
    return "\n".join(lines)


def format_key(key: Mapping[str, KeyEntry], ids: list[str]) -> str:
    """The key in pack order: label, why and fix per example."""
    missing = [kid for kid in ids if kid not in key]
    if missing:
        raise CourseError(f"the answer key has no entry for {', '.join(visible(m) for m in missing)}")
    lines = []
    for kid in ids:
        entry = key[kid]
        lines += [f"{visible(kid)}  {entry.label}", f"        why: {visible(entry.justification)}",
                  f"        fix: {visible(entry.fix)}"]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    return run(_main, argv)


def _main(args_in: Sequence[str] | None) -> int:
    parser = make_parser(
        "python teacher/kata_mark.py",
        "(teacher) Mark a kata label file item by item against the answer key, with the key's label, "
        "why and fix under each miss; without a file, print the whole key.",
        "  python teacher/kata_mark.py their_labels.json\n"
        "  python teacher/kata_mark.py --pack hard their_hard_labels.json\n"
        "  python teacher/kata_mark.py --pack hard        # the hard pack's key",
    )
    parser.add_argument("labels", nargs="?", default=None, help="the student's label file (omit it to print the key)")
    parser.add_argument("--pack", choices=sorted(PACKS), default="basic",
                        help="basic (Milestone 0) or hard (Milestones 4-5)")
    parser.add_argument("--key", default=None, help="the answer key (default: the --pack's key beside this tool)")
    args = parser.parse_args(args_in)
    ids = [ex.id for ex in load_examples(PACKS[args.pack])]
    key = load_key(args.key or KEYS[args.pack])
    if args.labels is None:
        print(format_key(key, ids))
        return 0
    marks = mark(load_labels(args.labels, ids), key, ids)
    print(format_marking(marks))
    return 0 if full_marks(marks) else 1


if __name__ == "__main__":
    raise SystemExit(main())
