"""The debugging kata: ten scored examples, each wrong for a different reason.

This module owns the kata pack (``data/kata/kata_examples.jsonl``), the draft
verifier some of its examples were scored with, and the label check. Every
example in the pack has a reward that looks suspicious or is plainly wrong;
the student's job is to say *why* -- the model failed, the verifier failed, the
task itself is ambiguous, or the reward was gamed -- and to propose one fix.

Run it::

    python -m course.kata                          # show every example with its score details
    python -m course.kata --template > my_labels.json
    python -m course.kata --check my_labels.json   # N/10; exit 0 only if all ten are right
    python -m course.kata --reveal                 # (teacher) the key: label, why and fix per example

Milestones 4-5 repeat the kata with a harder pack: ``--pack hard`` with any of
the commands above (``data/kata/kata_hard.jsonl``, key
``teacher/kata_hard_answer_key.json``; its draft verifier is ``draft_v1``).

Each example records the scorer that produced its reward (``scorer``): one of
the rubrics in ``course.rubrics`` or a draft below (``draft_v0``, ``draft_v1``).
``tests/test_kata.py`` re-scores every example with its named scorer, so the recorded rewards and
details are reproducible, not invented. The teacher's answer key, with a
justification and a proposed fix per example, lives apart from the pack in
``teacher/kata_answer_key.json``.

``--check`` marks each label right, wrong or blank and never shows the key: a
wrong label is only said to be wrong, so the student goes back to the details
and the spec instead of copying an answer. Showing the key (alone, or beside a
student's file with ``--check FILE --reveal``) is the teacher's explicit action.
Every text read from the pack or a label file is printed through
``course.lib.visible``, so a hand-edited file cannot put control characters on the
terminal.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from course.cli import info, make_parser, run
from course.errors import CourseError
from course.instrument.rubrics import RUBRICS
from course.instrument.spec_v1 import (
    ASCII_WHITESPACE, MAX_DIGITS, Verdict, read_expected, shown_expected, verdict,
)
from course.lib.jsonl import iter_objects, read_json
from course.lib.visible import visible

_REPO = Path(__file__).resolve().parents[1]
EXAMPLES_PATH = _REPO / "data" / "kata" / "kata_examples.jsonl"
KEY_PATH = _REPO / "teacher" / "kata_answer_key.json"
HARD_EXAMPLES_PATH = _REPO / "data" / "kata" / "kata_hard.jsonl"
HARD_KEY_PATH = _REPO / "teacher" / "kata_hard_answer_key.json"

# The packs by name (--pack): the examples file and the teacher's key for it.
# "basic" is Milestone 0's kata; "hard" repeats it for Milestones 4-5 with subtler
# cases (look-alike characters, rules nobody wrote down, bugs that only show on
# negative or huge numbers).
PACKS: dict[str, tuple[Path, Path]] = {
    "basic": (EXAMPLES_PATH, KEY_PATH),
    "hard": (HARD_EXAMPLES_PATH, HARD_KEY_PATH),
}

# The fixed label set. A student picks exactly one per example.
LABELS: dict[str, str] = {
    "model_failure": "the policy's answer is wrong or unusable, and the scorer judged it correctly",
    "verifier_bug": "an honest completion was mis-scored: the scorer's code does not do what the spec says",
    "spec_ambiguity": "the prompt or its expected answer allows more than one reasonable reading",
    "reward_hack": "the completion earns reward it does not deserve by gaming what the rubric fails to check",
}


# ---------------------------------------------------------------------------
# The draft verifier: an earlier, shorter implementation of the Final: <int> check.
# Part of the pack (some examples were scored with it), so it stays byte-stable.
# ---------------------------------------------------------------------------
DRAFT_VERSION = "draft-final-v0"
_DRAFT_PREFIX = "Final: "
_DRAFT_INT = re.compile("[0-9]{1,%d}" % MAX_DIGITS, re.ASCII)


def _draft_verdict(code: str, reason: str, expected: Any, extracted: int | None = None, **extra: Any) -> Verdict:
    return verdict(code, reason, expected, extracted, scorer_version=DRAFT_VERSION, **extra)


def draft_score(example: Any, completion: Any) -> dict[str, Any]:
    """A draft of the ``Final: <int>`` verifier, written before reward spec v1 was final.

    Same contract and same details fields as ``course.score.score``; a compact
    implementation (trim, check the prefix, read the digits, compare). Read it
    next to the rules in ``docs/reward_spec_v1.md`` when an example's
    ``scorer`` is ``draft_v0``.

    >>> draft_score({"expected_answer": 323}, "Final: 323")["reward"]
    1.0
    >>> draft_score({"expected_answer": 323}, "The answer is 323")["details"]["error_code"]
    'missing_prefix'
    """
    expected, problem = read_expected(example)
    if problem is not None:
        return _draft_verdict("bad_example", problem[0].upper() + problem[1:] + ".", shown_expected(example))
    if not isinstance(completion, str):
        return _draft_verdict("not_a_string", f"The completion is a {type(completion).__name__}, not text.", expected)
    text = completion.strip(" ")
    if not text:
        return _draft_verdict("empty", "The completion is empty after trimming.", expected)
    if not text.startswith(_DRAFT_PREFIX):
        return _draft_verdict("missing_prefix", "The line does not start with 'Final: '.", expected, found=text[:40])
    rest = text[len(_DRAFT_PREFIX):]
    m = _DRAFT_INT.match(rest)
    if m is None:
        return _draft_verdict(
            "no_integer", "'Final: ' is not followed by an integer.", expected, found=rest[:40]
        )
    value = int(m.group())
    if m.end() != len(rest):
        return _draft_verdict(
            "trailing_text", "Something follows the integer.", expected, value, found=rest[:40]
        )
    if value != expected:
        return _draft_verdict("wrong_answer", f"Read {value}, but the expected answer is {expected}.", expected, value)
    return _draft_verdict("ok", f"Read {value}, the expected answer.", expected, value)


# ---------------------------------------------------------------------------
# The second draft: the hard pack's verifier, a rewrite of draft v0 for the run
# logger, which stored every parsed answer in a signed 64-bit column.
# Part of the hard pack (data/kata/kata_hard.jsonl), so it stays byte-stable.
# ---------------------------------------------------------------------------
DRAFT_V1_VERSION = "draft-final-v1"
_DRAFT_V1_LINE = re.compile(r"Final: -?(0|[1-9][0-9]*)", re.ASCII)
_INT64_SPAN = 2**64


def _as_int64(value: int) -> int:
    """The value a signed 64-bit column holds after storing ``value`` (two's complement)."""
    return (value + _INT64_SPAN // 2) % _INT64_SPAN - _INT64_SPAN // 2


def _draft_v1_verdict(code: str, reason: str, expected: Any, extracted: int | None = None, **extra: Any) -> Verdict:
    return verdict(code, reason, expected, extracted, scorer_version=DRAFT_V1_VERSION, **extra)


def draft_v1_score(example: Any, completion: Any) -> dict[str, Any]:
    """The second draft of the ``Final: <int>`` verifier (the hard pack's ``draft_v1``).

    Same contract and same details fields as ``course.score.score``. It trims
    ASCII whitespace at both ends, requires one line, matches the prefix and a
    canonical integer with one regex, and keeps the number as the run logger's
    64-bit column stores it. Read it next to the rules in
    ``docs/reward_spec_v1.md`` when an example's ``scorer`` is ``draft_v1``.

    >>> draft_v1_score({"expected_answer": 323}, "Final: 323\\n")["reward"]
    1.0
    >>> draft_v1_score({"expected_answer": 323}, "Final: 0323")["details"]["error_code"]
    'trailing_text'
    """
    expected, problem = read_expected(example)
    if problem is not None:
        return _draft_v1_verdict("bad_example", problem[0].upper() + problem[1:] + ".", shown_expected(example))
    if not isinstance(completion, str):
        return _draft_v1_verdict("not_a_string", f"The completion is a {type(completion).__name__}, not text.", expected)
    text = completion.strip(ASCII_WHITESPACE)
    if not text:
        return _draft_v1_verdict("empty", "The completion is empty after trimming.", expected)
    if "\n" in text or "\r" in text:
        return _draft_v1_verdict("multiple_lines", "More than one line.", expected, found=text[:40])
    if not text.startswith(_DRAFT_PREFIX):
        return _draft_v1_verdict("missing_prefix", "The line does not start with 'Final: '.", expected, found=text[:40])
    m = _DRAFT_V1_LINE.match(text)
    if m is None:
        return _draft_v1_verdict(
            "no_integer", "'Final: ' is not followed by an integer.", expected, found=text[len(_DRAFT_PREFIX):][:40]
        )
    if m.end() != len(text):
        return _draft_v1_verdict(
            "trailing_text", "Something follows the integer.", expected, found=text[len(_DRAFT_PREFIX):][:40]
        )
    if len(m.group(1)) > MAX_DIGITS:
        return _draft_v1_verdict("integer_too_long", f"More than {MAX_DIGITS} digits.", expected)
    value = _as_int64(int(m.group(1)))
    if value != expected:
        return _draft_v1_verdict("wrong_answer", f"Read {value}, but the expected answer is {expected}.", expected, value)
    return _draft_v1_verdict("ok", f"Read {value}, the expected answer.", expected, value)


# Every scorer a kata example may name: the course's rubrics plus the two drafts.
SCORERS: dict[str, Callable[[Any, Any], dict[str, Any]]] = {
    **RUBRICS, "draft_v0": draft_score, "draft_v1": draft_v1_score,
}
# Where each draft's code is, for the listing's last lines.
DRAFT_FUNCTIONS: dict[str, str] = {"draft_v0": "draft_score", "draft_v1": "draft_v1_score"}


# ---------------------------------------------------------------------------
# Loading the pack, the key and a student's labels. Bad input -> CourseError(path:line: ...).
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class KataExample:
    """One scored example as the student sees it (no label)."""

    id: str
    prompt: str
    expected_answer: int
    completion: str
    scorer: str
    reward: float
    details: dict[str, Any]


@dataclass(frozen=True)
class KeyEntry:
    """The teacher's verdict on one example."""

    label: str
    justification: str
    fix: str


def _field(obj: Mapping[str, Any], name: str, kind: type, where: str) -> Any:
    if name not in obj:
        raise CourseError(f"{where}: missing field {name!r}")
    value = obj[name]
    if kind is int and (type(value) is not int):
        raise CourseError(f"{where}: {name!r} must be an integer, got {type(value).__name__}")
    if kind is float and (type(value) not in (int, float)):
        raise CourseError(f"{where}: {name!r} must be a number, got {type(value).__name__}")
    if kind is float and not _is_reward(value):
        # Every scorer returns a reward in [0, 1]; 10**400 cannot even become a float.
        shown = f"an integer of {len(str(abs(value)))} digits" if type(value) is int and abs(value) > 10**15 else repr(value)
        raise CourseError(f"{where}: {name!r} must be a number between 0 and 1, got {shown}")
    if kind in (str, dict) and not isinstance(value, kind):
        raise CourseError(f"{where}: {name!r} must be a {kind.__name__}, got {type(value).__name__}")
    return value


def _is_reward(value: int | float) -> bool:
    """A finite number in [0, 1] (compared without float(), which overflows on 10**400).

    >>> _is_reward(1), _is_reward(0.5), _is_reward(10**400), _is_reward(float("nan"))
    (True, True, False, False)
    """
    return (type(value) is int or math.isfinite(value)) and 0 <= value <= 1


def load_examples(path: str | Path = EXAMPLES_PATH) -> list[KataExample]:
    """The kata pack in file order."""
    path = Path(path)
    examples: list[KataExample] = []
    seen: set[str] = set()
    for number, obj in iter_objects(path):
        where = f"{path}:{number}"
        ex = KataExample(
            id=_field(obj, "id", str, where),
            prompt=_field(obj, "prompt", str, where),
            expected_answer=_field(obj, "expected_answer", int, where),
            completion=_field(obj, "completion", str, where),
            scorer=_field(obj, "scorer", str, where),
            reward=float(_field(obj, "reward", float, where)),
            details=_field(obj, "details", dict, where),
        )
        if ex.id in seen:
            raise CourseError(f"{where}: duplicate id {_quoted(ex.id)}")
        if ex.scorer not in SCORERS:
            raise CourseError(f"{where}: unknown scorer {_quoted(ex.scorer)}; known: {', '.join(SCORERS)}")
        seen.add(ex.id)
        examples.append(ex)
    return examples


def load_key(path: str | Path = KEY_PATH) -> dict[str, KeyEntry]:
    """The teacher's answer key: id -> KeyEntry."""
    path = Path(path)
    items = read_json(path, "kata answer key").get("items")
    if not isinstance(items, dict):
        raise CourseError(f"{path}: expected an object with an 'items' object (id -> label, justification, fix)")
    key = {}
    for kid, entry in items.items():
        where = f"{path}: items.{visible(kid, limit=40)}"
        if not isinstance(entry, dict):
            raise CourseError(f"{where}: expected an object")
        label = _field(entry, "label", str, where)
        if label not in LABELS:
            raise CourseError(f"{where}: label {_quoted(label, 40)} is not one of {', '.join(LABELS)}")
        key[kid] = KeyEntry(label, _field(entry, "justification", str, where), _field(entry, "fix", str, where))
    return key


def load_labels(path: str | Path, ids: list[str]) -> dict[str, str]:
    """A student's label file: id -> label ('' = not answered yet). Every id must be present."""
    path = Path(path)
    items = read_json(path, "label file").get("items")
    if not isinstance(items, dict):
        raise CourseError(
            f"{path}: expected an object with an 'items' object; "
            "start from: python -m course.kata --template > my_labels.json"
        )
    labels = {}
    for kid, entry in items.items():
        # The ids and labels come from the student's file: shown escaped, never raw.
        where = f"{path}: items.{visible(kid, limit=40)}"
        if kid not in ids:
            raise CourseError(f"{where}: no such kata example (ids are {visible(ids[0])} ... {visible(ids[-1])})")
        label = entry.get("label") if isinstance(entry, dict) else entry
        if not isinstance(label, str):
            raise CourseError(f"{where}: the label must be a string (one of {', '.join(LABELS)})")
        label = label.strip()
        if label and label not in LABELS:
            raise CourseError(f"{where}: label {_quoted(label, 40)} is not one of {', '.join(LABELS)}")
        labels[kid] = label
    missing = [kid for kid in ids if kid not in labels]
    if missing:
        raise CourseError(f"{path}: items has no entry for {', '.join(missing)} (--template lists every id)")
    return labels


# ---------------------------------------------------------------------------
# Pure helpers: re-scoring, the template, the check.
# ---------------------------------------------------------------------------
def rescore(example: KataExample) -> dict[str, Any]:
    """Score the example again with the scorer it names (what the recorded fields must equal)."""
    return SCORERS[example.scorer]({"expected_answer": example.expected_answer}, example.completion)


def _pack_flag(pack: str) -> str:
    """What a command line adds to name the pack ('' for the default pack)."""
    return "" if pack == "basic" else f" --pack {pack}"


def template(examples: list[KataExample], pack: str = "basic") -> dict[str, Any]:
    """A blank label file: every id with an empty label, justification and fix."""
    return {
        "choices": dict(LABELS),
        "how_to": "Set each label to one of the choices; write 2-3 sentences of justification and one "
        f"concrete fix. Check with: python -m course.kata{_pack_flag(pack)} --check my_labels.json",
        "items": {ex.id: {"label": "", "justification": "", "fix": ""} for ex in examples},
    }


@dataclass(frozen=True)
class CheckResult:
    id: str
    given: str
    correct: str
    entry: KeyEntry

    @property
    def right(self) -> bool:
        return self.given == self.correct


def check(labels: Mapping[str, str], key: Mapping[str, KeyEntry], ids: list[str]) -> list[CheckResult]:
    """Compare labels with the key, in pack order."""
    missing = [kid for kid in ids if kid not in key]
    if missing:
        raise CourseError(f"the answer key has no entry for {', '.join(missing)}")
    return [CheckResult(kid, labels.get(kid, ""), key[kid].label, key[kid]) for kid in ids]


# ---------------------------------------------------------------------------
# Printing.
# ---------------------------------------------------------------------------
def _quoted(text: str, limit: int | None = None) -> str:
    """The text in quotes, with line breaks and every invisible or non-ASCII character escaped."""
    return '"' + visible(text, limit=limit) + '"'


def _show_value(value: Any) -> str:
    if isinstance(value, str):
        return _quoted(value)
    return json.dumps(value)


_DETAIL_ORDER = ("scorer_version", "error_code", "parsed", "extracted", "expected", "reason", "loophole")


def format_example(ex: KataExample) -> str:
    lines = [
        f"{visible(ex.id)}  (scored with {ex.scorer})",
        f"  prompt      {visible(ex.prompt)}",
        f"  expected    {ex.expected_answer}",
        f"  completion  {_quoted(ex.completion)}",
        f"  reward      {ex.reward}",
    ]
    if not ex.details:
        lines.append("  details     {} (the scorer recorded no details)")
        return "\n".join(lines)
    lines.append("  details")
    # The contract's fields first, in the order a reader needs them; extras after, by name.
    keys = [k for k in _DETAIL_ORDER if k in ex.details] + sorted(k for k in ex.details if k not in _DETAIL_ORDER)
    width = max(len(visible(k)) for k in keys)
    for k in keys:
        lines.append(f"    {visible(k):<{width}}  {_show_value(ex.details[k])}")
    return "\n".join(lines)


def format_check(results: list[CheckResult], *, reveal: bool = False) -> str:
    """Right, wrong or blank per example, and the score.

    Without ``reveal`` nothing of the key is printed: not the right label, not
    its why, not its fix (a wrong label is only said to be wrong; the student's
    own label is echoed, and it is never the key's). ``reveal`` is the teacher's
    marking view: the key's label, why and fix under each miss.
    """
    lines = []
    for r in results:
        if r.right:
            lines.append(f"{visible(r.id)}  right")
            continue
        if not r.given:
            lines.append(f"{visible(r.id)}  blank  (no label yet)")
        else:
            lines.append(f"{visible(r.id)}  WRONG  you: {r.given}")
        if reveal:
            lines.append(f"        key: {r.correct}")
            lines.append(f"        why: {visible(r.entry.justification)}")
            lines.append(f"        fix: {visible(r.entry.fix)}")
    n_right = sum(r.right for r in results)
    n_blank = sum(not r.given for r in results)
    lines.append("")
    lines.append(f"Score: {n_right}/{len(results)}"
                 f" ({len(results) - n_right - n_blank} wrong, {n_blank} blank)")
    if n_right < len(results) and not reveal:
        lines.append("For each wrong or blank one, read its details against the spec again "
                     "(python -m course.kata) and check again.")
    return "\n".join(lines)


def format_key(key: Mapping[str, KeyEntry], ids: list[str]) -> str:
    """The teacher's key in pack order: label, why and fix per example (what --reveal prints)."""
    missing = [kid for kid in ids if kid not in key]
    if missing:
        raise CourseError(f"the answer key has no entry for {', '.join(visible(m) for m in missing)}")
    lines = []
    for kid in ids:
        entry = key[kid]
        lines += [f"{visible(kid)}  {entry.label}", f"        why: {visible(entry.justification)}",
                  f"        fix: {visible(entry.fix)}"]
    return "\n".join(lines)


def _record(ex: KataExample, verdict: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": ex.id,
        "prompt": ex.prompt,
        "expected_answer": ex.expected_answer,
        "completion": ex.completion,
        "scorer": ex.scorer,
        "reward": verdict["reward"],
        "details": verdict["details"],
    }


def _rescore_pack(path: Path, examples: list[KataExample]) -> int:
    """Teacher maintenance after a deliberate scorer change: keep prompts and completions, refresh verdicts."""
    from course.lib.jsonl import dumps_line, write_text_atomic

    changed = []
    records = []
    for ex in examples:
        verdict = rescore(ex)
        if verdict["reward"] != ex.reward or verdict["details"] != ex.details:
            changed.append(ex.id)
        records.append(_record(ex, verdict))
    if not changed:
        print(f"{path}: all {len(examples)} recorded verdicts reproduce; nothing written")
        return 0
    write_text_atomic(path, "".join(dumps_line(r) + "\n" for r in records))
    info(f"re-scored {', '.join(changed)}: check that each label in the answer key still holds")
    print(f"{path}: rewrote {len(changed)} verdict(s): {', '.join(changed)}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run(_main, argv)


def _main(args_in: Sequence[str] | None) -> int:
    parser = make_parser(
        "python -m course.kata",
        "The debugging kata: label why each of ten scored examples went wrong "
        "(model_failure, verifier_bug, spec_ambiguity, reward_hack), then check your labels.",
        "  python -m course.kata                              # read the ten examples\n"
        "  python -m course.kata --template > my_labels.json  # blank label file\n"
        "  python -m course.kata --check my_labels.json       # Score: N/10 (exit 0 only at 10/10)\n"
        "  python -m course.kata --pack hard                  # the harder pack (Milestones 4-5)\n"
        "  python -m course.kata --reveal                     # (teacher) print the key, why and fix",
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--template", action="store_true", help="print a blank label file (JSON) on stdout")
    mode.add_argument("--check", metavar="FILE",
                      help="mark your label file: right, wrong or blank per example (the key is not shown)")
    mode.add_argument(
        "--rescore",
        action="store_true",
        help="(teacher) re-score every example with its named scorer and rewrite the pack if a verdict changed",
    )
    parser.add_argument(
        "--pack", choices=sorted(PACKS), default="basic",
        help="which bundled pack: basic (Milestone 0) or hard (Milestones 4-5); picks the examples and the key",
    )
    parser.add_argument("--examples", default=None, help="the kata pack file (default: the --pack's bundled one)")
    parser.add_argument(
        "--reveal", action="store_true",
        help="(for teachers) print the answer key: each example's label, why and fix; with --check FILE, "
             "the key's label, why and fix under each miss of that file. Students: label first.",
    )
    parser.add_argument("--key", default=None, help="the answer key used by --check and --reveal (default: the --pack's key)")
    args = parser.parse_args(args_in)
    if args.reveal and (args.template or args.rescore):
        parser.error("--reveal goes alone or with --check FILE")
    args.examples = args.examples or str(PACKS[args.pack][0])
    args.key = args.key or str(PACKS[args.pack][1])

    examples = load_examples(args.examples)
    ids = [ex.id for ex in examples]
    if args.template:
        print(json.dumps(template(examples, args.pack), ensure_ascii=False, indent=2))
        return 0
    if args.rescore:
        return _rescore_pack(Path(args.examples), examples)
    if args.check:
        labels = load_labels(args.check, ids)
        results = check(labels, load_key(args.key), ids)
        print(format_check(results, reveal=args.reveal))
        return 0 if all(r.right for r in results) else 1
    if args.reveal:
        print(format_key(load_key(args.key), ids))
        return 0

    print(f"The debugging kata: {len(examples)} scored examples. Something is wrong with each one.\n")
    for ex in examples:
        print(format_example(ex))
        print()
    print("Label each example with one of:")
    width = max(len(k) for k in LABELS)
    for name, meaning in LABELS.items():
        print(f"  {name:<{width}}  {meaning}")
    print()
    drafts = [name for name in DRAFT_FUNCTIONS if any(ex.scorer == name for ex in examples)]
    where = " and ".join(f"for scorer {name},\nread {DRAFT_FUNCTIONS[name]}" for name in drafts)
    where = f"; {where} in course/kata.py" if drafts else ""
    print(f"Compare the details with the spec (docs/reward_spec_v1.md){where}. Then:")
    flag = _pack_flag(args.pack)
    print(f"  python -m course.kata{flag} --template > my_labels.json   # fill in label, justification, fix")
    print(f"  python -m course.kata{flag} --check my_labels.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
