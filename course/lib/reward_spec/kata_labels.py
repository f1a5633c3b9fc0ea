"""The debugging kata's packs, labels and their check: everything ``python -m course.kata`` shows.

This module owns the two bundled packs (``PACKS``: ``basic`` for Milestone 0, ``hard``
for Milestones 4-5) and where their teacher keys live, the fixed label set
(``LABELS``), the scorers an example may name (``SCORERS``: the course's rubrics plus
the drafts of ``course.lib.reward_spec.kata_drafts``), loading a pack, a key or a student's label
file (``load_examples``, ``load_key``, ``load_labels``; bad input is a ``CourseError``
naming the place), the check (``check`` -> ``CheckResult``), the template, re-scoring
(``rescore``, ``rescore_pack``) and the text the tools print: the student's (``format_example``,
``format_score``, ``format_listing``) and the teacher's (``format_marking``, ``format_key``, used
by ``teacher/kata_mark.py``). It returns strings and never prints; every text read from a file
goes through ``course.lib.visible``.

What a student's view never shows is part of the exercise: the key (label, why, fix), which of
their labels are wrong (a per-item right/wrong answers the kata in at most three tries per item),
and any field that names a label, such as the ``loophole`` a hackable rubric puts in its details
(``HIDDEN_DETAILS``: shown only on the items scored by a hackable rubric, it would point at
exactly the reward hacks). The score alone is shown; the per-item marking is the teacher's.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from course.errors import CourseError
from course.instrument.rubric_registry import RUBRICS
from course.instrument.spec_v1 import Verdict
from course.lib.bundled import KATA_EXAMPLES, KATA_HARD_EXAMPLES, KATA_HARD_KEY, KATA_KEY
from course.lib.records.jsonl import dumps_line, iter_objects, read_json
from course.lib.records.temporaries import write_text_atomic
from course.lib.reward_spec.kata_drafts import draft_score, draft_v1_score
from course.lib.visible import visible

# The packs by name (--pack): the examples file and the teacher's key for it.
# "basic" is Milestone 0's kata; "hard" repeats it for Milestones 4-5 with subtler
# cases (look-alike characters, rules nobody wrote down, bugs that only show on
# negative or huge numbers).
PACKS: dict[str, tuple[Path, Path]] = {
    "basic": (KATA_EXAMPLES, KATA_KEY),
    "hard": (KATA_HARD_EXAMPLES, KATA_HARD_KEY),
}

# The fixed label set. A student picks exactly one per example.
LABELS: dict[str, str] = {
    "model_failure": "the policy's answer is wrong or unusable, and the scorer judged it correctly",
    "verifier_bug": "an honest completion was mis-scored: the scorer's code does not do what the spec says",
    "spec_ambiguity": "the prompt or its expected answer allows more than one reasonable reading",
    "reward_hack": "the completion earns reward it does not deserve by gaming what the rubric fails to check",
}


# Every scorer a kata example may name: the course's rubrics plus the two drafts.
SCORERS: dict[str, Callable[[Any, Any], Verdict]] = {
    **RUBRICS, "draft_v0": draft_score, "draft_v1": draft_v1_score,
}
# Where each draft's code is, for the listing's last lines.
DRAFT_FUNCTIONS: dict[str, str] = {"draft_v0": "draft_score", "draft_v1": "draft_v1_score"}
DRAFTS_SOURCE = "course/lib/reward_spec/kata_drafts.py"


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
        shown = (
            f"an integer of {len(str(abs(value)))} digits" if type(value) is int and abs(value) > 10**15
            else repr(value)
        )
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


def load_examples(path: str | Path = KATA_EXAMPLES) -> list[KataExample]:
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


def load_key(path: str | Path = KATA_KEY) -> dict[str, KeyEntry]:
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


@dataclass(frozen=True)
class Answer:
    """A student's answer for one example: the label ('' = not answered yet) and its justification."""

    label: str
    justification: str = ""


# The kata asks for 2-3 sentences of justification per example. The check cannot judge an
# argument, but it can refuse a placeholder: a justification counts as (at least) a sentence when
# it has at least MIN_JUSTIFICATION_WORDS words and ends with a full stop, "!" or "?" (closing
# quotes or brackets after it allowed). A word is a run of non-space characters with a letter or
# digit in it, so "-" or "..." is not one.
MIN_JUSTIFICATION_WORDS = 6
SENTENCE_RULE = f"at least {MIN_JUSTIFICATION_WORDS} words, ending with . ! or ?"
_WORD = re.compile(r"\S*[^\W_]\S*")
_SENTENCE_END = re.compile(r"[.!?][\"'»”’)\]]*$")


def is_a_sentence(text: str) -> bool:
    """True when ``text`` is at least one sentence by the kata's rule (``SENTENCE_RULE``).

    >>> (is_a_sentence("x"), is_a_sentence("The scorer is wrong."),
    ...  is_a_sentence("The draft scorer drops the minus sign."))
    (False, False, True)
    >>> is_a_sentence("The draft scorer drops the minus sign, see details"), is_a_sentence("- - - - - - .")
    (False, False)
    """
    stripped = text.strip()
    return len(_WORD.findall(stripped)) >= MIN_JUSTIFICATION_WORDS and _SENTENCE_END.search(stripped) is not None


def load_labels(path: str | Path, ids: list[str]) -> dict[str, Answer]:
    """A student's label file: id -> its answer (label '' = not answered yet). Every id must be present.

    An entry is ``{"label", "justification", "fix"}`` (what ``--template`` writes) or, in the
    short form, just the label string (then it has no justification).
    """
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
        justification = entry.get("justification", "") if isinstance(entry, dict) else ""
        if not isinstance(justification, str):
            raise CourseError(f"{where}: the justification must be a string (2-3 sentences)")
        labels[kid] = Answer(label, justification)
    missing = [kid for kid in ids if kid not in labels]
    if missing:
        raise CourseError(f"{path}: items has no entry for {', '.join(missing)} (--template lists every id)")
    return labels


# ---------------------------------------------------------------------------
# Pure helpers: re-scoring, the template, the check.
# ---------------------------------------------------------------------------
# Details fields a pack never records: a hackable rubric's ``loophole`` describes the rubric, not
# the completion, and appears only on the items such a rubric scored, so showing it would label
# them ``reward_hack`` for the student. The rubric's name (``scorer``) stays: which instrument
# produced a verdict is evidence the student must weigh, and strict and the drafts score honest
# and dishonest completions alike.
HIDDEN_DETAILS = frozenset({"loophole"})


def rescore(example: KataExample) -> dict[str, Any]:
    """Score the example again with the scorer it names (what the recorded fields must equal),
    without the details a pack never records (``HIDDEN_DETAILS``)."""
    verdict = SCORERS[example.scorer]({"expected_answer": example.expected_answer}, example.completion)
    details = {k: v for k, v in verdict["details"].items() if k not in HIDDEN_DETAILS}
    return {"reward": verdict["reward"], "details": details}


def _pack_flag(pack: str) -> str:
    """What a command line adds to name the pack ('' for the default pack)."""
    return "" if pack == "basic" else f" --pack {pack}"


def label_file_name(pack: str) -> str:
    """The label file the tool suggests: one per pack, so the hard pack's never overwrites the first.

    >>> label_file_name("basic"), label_file_name("hard")
    ('my_labels.json', 'my_hard_labels.json')
    """
    return "my_labels.json" if pack == "basic" else f"my_{pack}_labels.json"


def template(examples: list[KataExample], pack: str = "basic") -> dict[str, Any]:
    """A blank label file: every id with an empty label, justification and fix."""
    return {
        "choices": dict(LABELS),
        "how_to": "Set each label to one of the choices; write 2-3 sentences of justification and one "
        f"concrete fix. Check with: python -m course.kata{_pack_flag(pack)} --check {label_file_name(pack)}",
        "items": {ex.id: {"label": "", "justification": "", "fix": ""} for ex in examples},
    }


@dataclass(frozen=True)
class CheckResult:
    id: str
    given: str
    correct: str
    entry: KeyEntry
    justified: bool = True  # the student's justification is at least a sentence (is_a_sentence)

    @property
    def right(self) -> bool:
        return self.given == self.correct

    @property
    def short_justification(self) -> bool:
        """Labelled, but justified with less than a sentence (a blank label is counted as blank instead)."""
        return bool(self.given) and not self.justified


def check(labels: Mapping[str, Answer], key: Mapping[str, KeyEntry], ids: list[str]) -> list[CheckResult]:
    """Compare labels with the key, in pack order, and mark justifications shorter than a sentence."""
    missing = [kid for kid in ids if kid not in key]
    if missing:
        raise CourseError(f"the answer key has no entry for {', '.join(missing)}")
    out = []
    for kid in ids:
        answer = labels.get(kid, Answer(""))
        out.append(CheckResult(kid, answer.label, key[kid].label, key[kid], is_a_sentence(answer.justification)))
    return out


def passed(results: list[CheckResult]) -> bool:
    """Full marks: every label right and every justification at least a sentence (exit 0 of --check)."""
    return all(r.right and not r.short_justification for r in results)


# ---------------------------------------------------------------------------
# Rendering: text the tool prints (escaped with course.lib.visible).
# ---------------------------------------------------------------------------
def _quoted(text: str, limit: int | None = None) -> str:
    """The text in quotes, with line breaks and every invisible or non-ASCII character escaped."""
    return '"' + visible(text, limit=limit) + '"'


def _show_value(value: Any) -> str:
    if isinstance(value, str):
        return _quoted(value)
    return json.dumps(value)


_DETAIL_ORDER = ("scorer_version", "error_code", "parsed", "extracted", "expected", "reason")


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
    shown = {k: v for k, v in ex.details.items() if k not in HIDDEN_DETAILS}  # a hand-made pack may still carry one
    if not shown:
        lines[-1] = "  details     {} (the scorer recorded no details)"
        return "\n".join(lines)
    keys = [k for k in _DETAIL_ORDER if k in shown] + sorted(k for k in shown if k not in _DETAIL_ORDER)
    width = max(len(visible(k)) for k in keys)
    for k in keys:
        lines.append(f"    {visible(k):<{width}}  {_show_value(shown[k])}")
    return "\n".join(lines)


def format_score(results: list[CheckResult], pack: str = "basic") -> str:
    """The student's check: the score, which items are still blank and which justifications are
    shorter than a sentence -- never which labels are wrong, and nothing of the key.

    A per-item right/wrong would let a student find every label by trying the four choices one
    item at a time; the score is the whole answer until the teacher marks the file
    (``format_marking``).
    """
    lines = []
    for r in results:
        if not r.given:
            lines.append(f"{visible(r.id)}  blank  (no label yet)")
        elif r.short_justification:
            lines.append(f"{visible(r.id)}  labelled  (justification shorter than a sentence)")
    n_right = sum(r.right for r in results)
    n_blank = sum(not r.given for r in results)
    if lines:
        lines.append("")
    lines.append(f"Score: {n_right}/{len(results)} ({len(results) - n_blank} labelled, {n_blank} blank)")
    short = [r.id for r in results if r.short_justification]
    if short:
        lines.append(f"Justification shorter than a sentence ({SENTENCE_RULE}) for {len(short)}: "
                     f"{', '.join(visible(kid) for kid in short)}. Each label needs 2-3 sentences saying why; "
                     "full marks need them.")
    if n_right < len(results):
        lines.append("Which labels are wrong is not shown: read each example's details against the spec "
                     f"again (python -m course.kata{_pack_flag(pack)}), then check again. Your teacher marks "
                     "the file you hand in, item by item.")
    return "\n".join(lines)


def format_marking(results: list[CheckResult]) -> str:
    """The teacher's marking of a label file: right, WRONG or blank per item, the key's label, why
    and fix under each miss, short justifications flagged, and the score."""
    lines = []
    for r in results:
        flag = "  (justification shorter than a sentence)" if r.short_justification else ""
        if r.right:
            lines.append(f"{visible(r.id)}  right{flag}")
            continue
        if not r.given:
            lines.append(f"{visible(r.id)}  blank  (no label yet)")
        else:
            lines.append(f"{visible(r.id)}  WRONG  student: {r.given}{flag}")
        lines.append(f"        key: {r.correct}")
        lines.append(f"        why: {visible(r.entry.justification)}")
        lines.append(f"        fix: {visible(r.entry.fix)}")
    n_right = sum(r.right for r in results)
    n_blank = sum(not r.given for r in results)
    lines.append("")
    lines.append(f"Score: {n_right}/{len(results)} ({len(results) - n_right - n_blank} wrong, {n_blank} blank)")
    short = [r.id for r in results if r.short_justification]
    if short:
        lines.append(f"Justification shorter than a sentence ({SENTENCE_RULE}) for {len(short)}: "
                     f"{', '.join(visible(kid) for kid in short)}.")
    return "\n".join(lines)


def format_key(key: Mapping[str, KeyEntry], ids: list[str]) -> str:
    """The teacher's key in pack order: label, why and fix per example (``teacher/kata_mark.py`` without a file)."""
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


def rescore_pack(path: Path, examples: list[KataExample]) -> list[str]:
    """Teacher maintenance after a deliberate scorer change: keep prompts and completions, refresh verdicts.

    Returns the ids whose verdict changed; the pack at ``path`` is rewritten (atomically) only then.
    """
    changed = []
    records = []
    for ex in examples:
        verdict = rescore(ex)
        if verdict["reward"] != ex.reward or verdict["details"] != ex.details:
            changed.append(ex.id)
        records.append(_record(ex, verdict))
    if changed:
        write_text_atomic(path, "".join(dumps_line(r) + "\n" for r in records))
    return changed


def format_listing(examples: list[KataExample], pack: str = "basic") -> str:
    """The default view: every example with its details, the label set, where to read the drafts, next steps."""
    lines = [f"The debugging kata: {len(examples)} scored examples. Something is wrong with each one.\n"]
    for ex in examples:
        lines += [format_example(ex), ""]
    lines.append("Label each example with one of:")
    width = max(len(k) for k in LABELS)
    for name, meaning in LABELS.items():
        lines.append(f"  {name:<{width}}  {meaning}")
    lines.append("")
    drafts = [name for name in DRAFT_FUNCTIONS if any(ex.scorer == name for ex in examples)]
    where = " and ".join(f"for scorer {name},\nread {DRAFT_FUNCTIONS[name]}" for name in drafts)
    where = f"; {where} in {DRAFTS_SOURCE}" if drafts else ""
    lines.append(f"Compare the details with the spec (docs/reward_spec_v1.md){where}. Then:")
    flag = _pack_flag(pack)
    name = label_file_name(pack)
    lines.append(f"  python -m course.kata{flag} --template > {name}   # fill in label, justification, fix")
    lines.append(f"  python -m course.kata{flag} --check {name}")
    return "\n".join(lines)


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.reward_spec.kata_labels"))
