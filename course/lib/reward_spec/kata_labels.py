"""The debugging kata's packs, labels and the form check: everything ``python -m course.kata`` shows.

This module owns the two bundled packs (``PACKS``: ``basic`` for Milestone 0, ``hard``
for Milestones 4-5), the fixed label set (``LABELS``), the scorers an example may name
(``SCORERS``: the course's rubrics plus the drafts of ``course.lib.reward_spec.kata_drafts``),
loading a pack or a student's label file (``load_examples``, ``load_labels``; bad input is a
``CourseError`` naming the place), the form check (``check_form`` -> ``FormResult``), the
template, re-scoring (``rescore``, ``rescore_pack``) and the text the tool prints
(``format_example``, ``format_form``, ``format_listing``). It returns strings and never prints;
every text read from a file goes through ``course.lib.visible``.

The answer key is not here, and nothing here reads it: the student's check says whether a label
file is complete and well formed (every item has an allowed label, a justification of 2-3
sentences and a fix) and nothing about which labels are right, so no sequence of checks can
recover the key. Marking against the key is the teacher's, under ``teacher/``. For the
same reason a pack never records a field that names a label, such as the ``loophole`` a hackable
rubric puts in its details (``HIDDEN_DETAILS``), and the packs are chosen so that no single
recorded field (scorer, reward, error code) separates one label from the others.
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
from course.lib.bundled import KATA_EXAMPLES, KATA_HARD_EXAMPLES
from course.lib.records.jsonl import dumps_line, iter_objects, read_json
from course.lib.records.temporaries import write_text_atomic
from course.lib.reward_spec.kata_drafts import draft_score, draft_v1_score
from course.lib.visible import visible

# The packs by name (--pack): the examples file of each. "basic" is Milestone 0's kata;
# "hard" repeats it for Milestones 4-5 with subtler cases (look-alike characters, rules
# nobody wrote down, bugs that only show on signed zeros or huge numbers).
PACKS: dict[str, Path] = {
    "basic": KATA_EXAMPLES,
    "hard": KATA_HARD_EXAMPLES,
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


@dataclass(frozen=True)
class Answer:
    """A student's answer for one example: the label ('' = not answered yet), its justification and fix."""

    label: str
    justification: str = ""
    fix: str = ""


# The kata asks for 2-3 sentences of justification and one concrete fix per example. The check
# cannot judge an argument, but it can refuse a placeholder. A sentence is a stretch of at least
# MIN_SENTENCE_WORDS words ending with a full stop, "!" or "?" (closing quotes or brackets after it
# allowed) and followed by a space or the end; a justification needs at least MIN_SENTENCES of
# them. A fix needs at least MIN_FIX_WORDS words. A word is a run of non-space characters with a
# letter or digit in it, so "-" or "..." is not one.
MIN_SENTENCES = 2
MIN_SENTENCE_WORDS = 3
MIN_FIX_WORDS = 3
SENTENCE_RULE = (f"at least {MIN_SENTENCES} sentences of {MIN_SENTENCE_WORDS} or more words, "
                 "each ending with . ! or ?")
FIX_RULE = f"at least {MIN_FIX_WORDS} words"
_WORD = re.compile(r"\S*[^\W_]\S*")
_SENTENCE_END = re.compile(r"[.!?][\"'»”’)\]]*$")
# A sentence ends at . ! or ? (closing quotes or brackets allowed) before a space; "2.5" is no end.
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+|(?<=[.!?][\"'»”’)\]])\s+")


def count_sentences(text: str) -> int:
    """How many sentences ``text`` has by the kata's rule (``SENTENCE_RULE``).

    >>> count_sentences("x"), count_sentences("The scorer is wrong."), count_sentences("Verifier bug.")
    (0, 1, 0)
    >>> count_sentences("The draft drops the sign. 5 / 2 is 2.5, a tie. So what now?")
    3
    >>> count_sentences("The draft scorer drops the minus sign, see details"), count_sentences("- - - - .")
    (0, 0)
    """
    pieces = _SENTENCE_BREAK.split(text.strip())
    return sum(len(_WORD.findall(p)) >= MIN_SENTENCE_WORDS and _SENTENCE_END.search(p) is not None
               for p in pieces)


def count_words(text: str) -> int:
    """Words in ``text`` (runs of non-space characters with a letter or digit).

    >>> count_words("Allow an optional '-'."), count_words(" - ... ")
    (3, 0)
    """
    return len(_WORD.findall(text))


def load_labels(path: str | Path, ids: list[str]) -> dict[str, Answer]:
    """A student's label file: id -> its answer (label '' = not answered yet). Every id must be present.

    An entry is ``{"label", "justification", "fix"}`` (what ``--template`` writes) or, in the
    short form, just the label string (then it has no justification and no fix).
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
        fix = entry.get("fix", "") if isinstance(entry, dict) else ""
        if not isinstance(fix, str):
            raise CourseError(f"{where}: the fix must be a string (one concrete change)")
        labels[kid] = Answer(label, justification, fix)
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
class FormResult:
    """The form of one answer: labelled or not, how many sentences justify it, how long its fix is."""

    id: str
    labelled: bool
    sentences: int
    fix_words: int

    @property
    def problems(self) -> tuple[str, ...]:
        """What is missing, in words ('' nowhere): a blank label, a short justification, no fix."""
        out = []
        if not self.labelled:
            out.append("no label yet")
        if self.sentences < MIN_SENTENCES:
            out.append(f"justification has {self.sentences} sentence{'s' * (self.sentences != 1)} "
                       f"(2-3 asked)")
        if self.fix_words < MIN_FIX_WORDS:
            out.append("no fix" if self.fix_words == 0 else f"fix of {self.fix_words} word(s)")
        return tuple(out)


def check_form(labels: Mapping[str, Answer], ids: list[str]) -> list[FormResult]:
    """The form of every answer, in pack order. It never sees a key: which label was picked is
    not an input, only whether one was."""
    out = []
    for kid in ids:
        answer = labels.get(kid, Answer(""))
        out.append(FormResult(kid, bool(answer.label), count_sentences(answer.justification),
                              count_words(answer.fix)))
    return out


def complete(results: list[FormResult]) -> bool:
    """Every item labelled, justified and with a fix (exit 0 of --check)."""
    return all(not r.problems for r in results)


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


def format_form(results: list[FormResult], pack: str = "basic") -> str:
    """The student's check: each incomplete item with what it lacks, then one summary line.

    It says nothing about which labels are right: the text depends only on which answers are
    blank or short, never on the label picked, so changing labels and checking again shows nothing.
    """
    lines = [f"{visible(r.id)}  {'; '.join(r.problems)}" for r in results if r.problems]
    n_ok = sum(not r.problems for r in results)
    if lines:
        lines.append("")
    lines.append(f"Complete and well formed: {n_ok} of {len(results)} items "
                 "(a label, a justification of 2-3 sentences, a fix of a few words).")
    if n_ok < len(results):
        lines.append(f"A justification needs {SENTENCE_RULE}; a fix needs {FIX_RULE}. "
                     f"Read the examples again: python -m course.kata{_pack_flag(pack)}")
    else:
        lines.append(f"Hand in {label_file_name(pack)}: your teacher marks the labels. This check does not "
                     "say which are right.")
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
