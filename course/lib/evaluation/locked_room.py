# Over 600 lines because the gate reads in order: Locked Room fields, paired tests, decision.
"""The Locked Room and the promotion decision, as a library: ``course.gate`` prints what this decides.

    base, cand = load_outcomes("runs/demo_eval_clean"), load_outcomes("runs/demo_eval_modified")
    result = decide(base, cand, min_delta=Fraction(0), require_significance=False)
    print("\n".join(render(result, base, cand)))

The command line is ``python -m course.gate --baseline A --candidate B --min-delta 0.00``.

Three questions, in this order:

1. **Locked Room.** Were both runs measured under the same conditions? Every
   manifest key listed in ``LOCKED_FIELDS`` must be equal (the dataset's sha256,
   the split, the rubric's name and version, the scorer version and source fingerprint, the sampling settings,
   the prompt template, and for selection runs the selection compute), compared by type as well as
   value (``same_value``: a seed of ``true`` is not a seed of ``1``). If any differs the gate
   REJECTs and lists each differing field with both values: the numbers are not
   comparable, so no delta is computed. The completions (the policy) are the one
   thing allowed to differ — they are what is being compared. A manifest's fingerprint is a
   claim, so the items are checked too: both runs must hold the same ids with the same
   per-item ``expected`` (``item_differences``), and when a dataset file with the recorded
   sha256 is at hand (the run's own, or the other run's: ``load_pair``), every id and expected
   answer is checked against it (``DatasetCheck``; a run that disagrees is unusable
   input). A recorded verdict is a claim too: every line of both runs is scored again from its
   own completion and expected (``course.lib.evaluation.rescoring``), and a line that records
   another reward or code, or a run that could not be re-scored, is a REJECT
   (``rescore_reasons``); summary.json must have its recorded sha256 and tally from the lines
   (``check_summary``). One line, ``Items checked: ...``, says which of these checks ran.
2. **The bar.** REJECT if candidate pass rate − baseline pass rate < ``--min-delta``
   (computed exactly, with fractions), else ACCEPT.
3. **Noise.** A paired comparison over the items both runs scored: the discordant
   counts b (baseline passed, candidate failed) and c (the reverse), the exact
   McNemar p-value and a 95 % Newcombe interval for the change, and one
   sentence on whether the change is distinguishable from noise.
   When either run has several samples per item (``course.eval`` on a selection pack),
   the items are the unit instead: each item's pass rate in both runs, a sign-flip test
   and the interval that agrees with it (``paired_rates``), each run's pass@1 with
   its item-clustered interval: the same measurement a multi-sample headline reports.
   ``--require-significance`` adds "p < 0.05" to the bar.

Unusable input (a missing or corrupt run directory, a run from a tool the gate cannot
compare, results.jsonl or summary.json edited after the run) is a ``CourseError``; ``course.gate`` turns
the three outcomes into its exit codes.

Everything printed that was read from a run directory (split, policy, seeds,
paths) goes through ``course.lib.visible``: a hand-edited manifest cannot put a raw
control or bidi character on the terminal, and ``--json`` escapes them too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable, Sequence

from course.errors import CourseError
from course.lib.evaluation.rescoring import Rescored, Rescorer
from course.lib.evaluation.summary import PASS_REWARD, Tally, pass_at_1_line, pass_rate_line, points
from course.lib.records.formats import RunDir, iter_results, read_run
from course.lib.records.jsonl import dumps_line, json_kind
from course.lib.records.manifest import sha256_file
from course.lib.records.shapes import value_at
from course.lib.stats import (
    clustered_interval,
    mcnemar_exact,
    paired_difference_interval,
    sign_flip_test,
)
from course.lib.visible import visible

SIGNIFICANCE = 0.05
# Tools whose run directories hold comparable results.jsonl/summary.json/manifest.json.
GATEABLE_TOOLS = ("course.eval", "course.selection_demo")


@dataclass(frozen=True)
class LockedField:
    key: str  # a manifest key; dots descend into objects ("selection.n")
    kind: str  # what a difference means
    meaning: str


# The Locked Room: every key here must be equal in both manifests (an absent key counts as a value).
# A tool that records a new condition of measurement adds its key here. Older manifests lack some keys;
# for a scoring tool an absent key takes the value it implicitly had (_value): selection.n is 1,
# rubric is "strict" with the run's scorer_version as rubric_version, prompt_template is plain's record.
# The selection rule and picker hash are compared only when both runs choose among several samples.
LOCKED_FIELDS: tuple[LockedField, ...] = (
    LockedField("dataset_fingerprint", "dataset", "sha256 of the dataset file: the items and their expected answers"),
    LockedField("split", "dataset", "which split was measured (dev, holdout)"),
    LockedField("rubric", "rubric", "which rubric scored the completions (strict = reward spec v1)"),
    LockedField("rubric_version", "rubric", "the version of that rubric"),
    LockedField("scorer_version", "instrument", "the reward spec the scorer implements"),
    LockedField("scorer_fingerprint", "instrument", "sha256 of the scorer's source code"),
    LockedField("sampling", "sampling", "how the completions were sampled (temperature, top_p, max_tokens, seed)"),
    LockedField("prompt_template", "environment",
                "how each item was put to the policy: the prompt template's name and sha256 (absent: the dataset "
                "prompt as-is)"),
    LockedField("selection.n", "selection compute", "samples per item the chosen output was picked from"),
    LockedField("selection.rule", "selection compute", "how the chosen sample was picked (compared when both n > 1)"),
    LockedField("selection.picker_sha256", "selection compute",
                "sha256 of the file defining pick_best: an edit changes how samples are chosen (compared "
                "when both n > 1)"),
)

KIND_EXPLANATION = {
    "dataset": "the runs measured different test sets (items or expected answers changed)",
    "rubric": (
        "the runs were scored by different rubrics: a pass under a hackable rubric is not a pass under the "
        "strict verifier, so the pass rates measure different things"
    ),
    "instrument": "the runs used different scorers: different instruments, different units",
    "sampling": "the completions were sampled differently, so the policy's outputs are not the same experiment",
    "environment": (
        "the policy was shown the items differently (another prompt template: a system prompt, worked examples): "
        "that changes the environment, not the policy, so a higher pass rate here is not learning"
    ),
    "selection compute": (
        "the runs spent different SELECTION compute (best-of-N over more samples) or chose among the samples "
        "differently (another rule or picker code): a higher pass rate here comes from choosing among "
        "samples (Loop B), not from the policy learning anything (Loop C)"
    ),
}

_ABSENT = object()


def same_value(a: Any, b: Any) -> bool:
    """Equality of two JSON values by type as well as value: the Locked Room's one comparison.

    A bool is never a number (``true`` is not ``1``, although Python says
    ``True == 1``); numbers compare by value (a temperature of 1 equals 1.0,
    whichever writer spelled it); objects compare key by key, arrays item by
    item. Iterative, so no nesting depth can make it raise.

    >>> same_value({"seed": 1, "temperature": 1}, {"seed": 1, "temperature": 1.0})
    True
    >>> same_value({"seed": 1}, {"seed": True}), same_value([0], [False]), same_value(None, 0)
    (False, False, False)
    """
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if isinstance(x, bool) or isinstance(y, bool):
            if not (type(x) is type(y) and x == y):
                return False
        elif isinstance(x, (int, float)) and isinstance(y, (int, float)):
            if x != y:
                return False
        elif isinstance(x, dict) and isinstance(y, dict):
            if x.keys() != y.keys():
                return False
            stack.extend((x[k], y[k]) for k in x)
        elif isinstance(x, list) and isinstance(y, list):
            if len(x) != len(y):
                return False
            stack.extend(zip(x, y))
        elif not (type(x) is type(y) and x == y):
            return False
    return True


def is_count(value: Any) -> bool:
    """An integer count as JSON means it: an int, never a bool (``true`` is not 1).

    >>> is_count(30), is_count(True), is_count("30"), is_count(30.0)
    (True, False, False, False)
    """
    return type(value) is int


def shown(value: Any, limit: int = 200) -> str:
    """A value read from a run directory, as safe terminal text: strings as they are, anything else as JSON.

    >>> shown("dev"), shown("dev\u202e"), shown(True), shown({"seed": 1})
    ('dev', 'dev⟨U+202E⟩', 'true', '{"seed": 1}')
    """
    return visible(value if isinstance(value, str) else dumps_line(value), limit=limit)


def _lookup(manifest: dict[str, Any], key: str) -> Any:
    return value_at(manifest, key, _ABSENT)


_IMPLICIT_ONE = "1 (implicit: course.eval scores one completion per item)"
_IMPLICIT_RUBRIC = " (implicit: written before runs recorded their rubric; all such runs were scored strictly)"
_IMPLICIT_TEMPLATE = " (implicit: the rollouts record no template; their policy was given the dataset prompt as-is)"


def _value(manifest: dict[str, Any], key: str) -> Any:
    value = _lookup(manifest, key)
    if value is not _ABSENT:
        return value
    if key == "selection.n" and manifest.get("tool") == "course.eval":
        return 1
    # A scoring run from before the rubric was recorded: the strict verifier scored it.
    if key == "rubric" and manifest.get("tool") in GATEABLE_TOOLS:
        return "strict"
    if key == "rubric_version" and manifest.get("tool") in GATEABLE_TOOLS and _lookup(manifest, "rubric") is _ABSENT:
        return _lookup(manifest, "scorer_version")
    # Rollouts without a prompt template: the dataset prompt as-is, i.e. the plain template.
    if key == "prompt_template" and manifest.get("tool") in GATEABLE_TOOLS:
        from course.lib.policy.templates import IMPLICIT  # standard library only

        return IMPLICIT.record()
    return value


def _show(manifest: dict[str, Any], key: str, value: Any) -> str:
    if value is _ABSENT:
        return "(absent)"
    if key == "selection.n" and _lookup(manifest, key) is _ABSENT:
        return _IMPLICIT_ONE
    if key in ("rubric", "rubric_version") and _lookup(manifest, key) is _ABSENT:
        return dumps_line(value) + _IMPLICIT_RUBRIC
    if key == "prompt_template" and _lookup(manifest, key) is _ABSENT:
        return dumps_line(value) + _IMPLICIT_TEMPLATE
    return dumps_line(value)


def rubric_of(manifest: dict[str, Any]) -> Any:
    """The rubric that scored a run: its manifest's ``rubric``, "strict" for a scoring run written before
    runs recorded it, or None when the manifest cannot say (another tool, no field).

    >>> rubric_of({"tool": "course.eval"}), rubric_of({"tool": "course.eval", "rubric": "last_number"})
    ('strict', 'last_number')
    """
    value = _value(manifest, "rubric")
    return None if value is _ABSENT else value


def locked_room_differences(baseline: dict[str, Any], candidate: dict[str, Any]) -> list[dict[str, Any]]:
    """Every LOCKED_FIELDS key whose values differ, in table order, with both values.

    Values compare with ``same_value``: by type and value (numbers by value, so a
    temperature of 1 equals 1.0; a bool is never a number).

    >>> locked_room_differences({"split": "dev"}, {"split": "holdout"})[0]["field"]
    'split'
    >>> locked_room_differences({"split": "dev"}, {"split": "dev"})
    []
    >>> [d["field"] for d in locked_room_differences({"sampling": {"seed": 1}}, {"sampling": {"seed": True}})]
    ['sampling']
    """
    keys = ("field", "kind", "meaning", "baseline", "candidate")
    return [{k: row[k] for k in keys} for row in locked_room_table(baseline, candidate)
            if row["compared"] and not row["same"]]


def locked_room_table(baseline: dict[str, Any], candidate: dict[str, Any]) -> list[dict[str, Any]]:
    """Every LOCKED_FIELDS key with both values shown, ``same``, and ``compared`` (False: skipped by rule).

    What ``course.report`` renders as the Locked Room table (a ✓ or ✗ per field).

    >>> [(r["field"], r["same"]) for r in locked_room_table({"split": "dev"}, {"split": "dev"})][:2]
    [('dataset_fingerprint', True), ('split', True)]
    """
    n_base, n_cand = _value(baseline, "selection.n"), _value(candidate, "selection.n")
    choosing = all(is_count(n) and n > 1 for n in (n_base, n_cand))
    out = []
    for f in LOCKED_FIELDS:
        a, b = _value(baseline, f.key), _value(candidate, f.key)
        out.append({
            "field": f.key, "kind": f.kind, "meaning": f.meaning,
            "baseline": _show(baseline, f.key, a), "candidate": _show(candidate, f.key, b),
            "same": (a is _ABSENT) == (b is _ABSENT) and (a is _ABSENT or same_value(a, b)),
            "compared": choosing or f.key not in ("selection.rule", "selection.picker_sha256"),
        })
    return out


# ---------------------------------------------------------------------------
# Reading the two runs
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Outcomes:
    """One scored run as the gate reads it: each id's outcome and expected answer, and what was checked.

    ``counts_by_id`` holds each item's (passing samples, samples): one sample per item for a
    one-sample run, several for a multi-sample ``course.eval`` run (a selection pack scored whole).
    """

    run: RunDir
    passed_by_id: dict[str, bool]  # one-sample runs: did the item pass; multi-sample: did every sample pass
    expected_by_id: dict[str, Any] = field(default_factory=dict)
    counts_by_id: dict[str, tuple[int, int]] = field(default_factory=dict)
    dataset_check: str = "not checked"
    rescored: Rescored | None = None  # what re-scoring every line found (None: not re-scored)

    @property
    def n(self) -> int:
        """Scored completions (results.jsonl lines): items x samples per item."""
        return sum(m for _, m in self.counts_by_id.values()) if self.counts_by_id else len(self.passed_by_id)

    @property
    def passed(self) -> int:
        """Passing completions."""
        return sum(k for k, _ in self.counts_by_id.values()) if self.counts_by_id else sum(self.passed_by_id.values())

    @property
    def items(self) -> int:
        return len(self.passed_by_id)

    @property
    def samples_per_item(self) -> int:
        """Samples per item (1 for a one-sample run; the same for every item of a multi-sample run)."""
        return self.n // self.items if self.items else 1


def _summary_count(summary: dict[str, Any], name: str, where: str) -> int:
    """summary.json's ``n`` or ``passed``, refused with the real reason when it is not an integer."""
    if name not in summary:
        raise CourseError(f"{where}: missing '{name}'; not a complete scoring run")
    value = summary[name]
    if not is_count(value):
        raise CourseError(
            f"{where}: '{name}' is {json_kind(value)} ({shown(value, 40)}), not an integer count; the file was edited "
            "or written by another program"
        )
    return value


def check_manifest(manifest: dict[str, Any], where: str) -> None:
    """Refuse a manifest whose compared fields have the wrong JSON type (``where`` names the file).

    ``selection.n`` must be a positive integer: a hand-edited ``true`` is not 1.

    >>> check_manifest({"selection": {"n": True}}, "m.json")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    course.errors.CourseError: m.json: 'selection.n' is a boolean (true), not a positive integer count of samples ...
    """
    n = _lookup(manifest, "selection.n")
    if n is not _ABSENT and not (is_count(n) and n >= 1):
        raise CourseError(
            f"{where}: 'selection.n' is {json_kind(n)} ({shown(n, 40)}), "
            "not a positive integer count of samples per item"
        )
    for key in ("results_sha256", "summary_sha256", "dataset_fingerprint", "scorer_version", "rubric",
                "rubric_version"):
        if key in manifest and not isinstance(manifest[key], str):
            raise CourseError(f"{where}: '{key}' is {json_kind(manifest[key])} ({shown(manifest[key], 40)}), not text")


def load_outcomes(path: str, dataset_file: DatasetFile | None = None) -> Outcomes:
    """A run the gate can trust: a scoring tool's directory whose results match its manifest and its summary,
    every line re-scored (``course.lib.evaluation.rescoring``) and, when a dataset file is at hand, its items
    checked against it: ``dataset_file``, or else the file its own manifest names (``dataset_at_hand``)."""
    return outcomes_of(read_run(path), dataset_file)


def load_pair(baseline: str, candidate: str) -> tuple[Outcomes, Outcomes]:
    """Both runs of a comparison. A run whose recorded dataset file is not at hand is checked against the other
    run's, when that one is at hand with the same sha256 as this run's fingerprint: one file serves both."""
    runs = (read_run(baseline), read_run(candidate))
    files = [dataset_at_hand(run) for run in runs]
    for i, run in enumerate(runs):
        other = files[1 - i]
        if files[i] is None and other is not None and other.sha256 == run.manifest.get("dataset_fingerprint"):
            files[i] = DatasetFile(other.path, other.name, other.sha256,
                                   f"the {('candidate', 'baseline')[i]}'s dataset file {other.name}")
    return outcomes_of(runs[0], files[0]), outcomes_of(runs[1], files[1])


def outcomes_of(run_dir: RunDir, dataset_file: DatasetFile | None = None) -> Outcomes:
    """``load_outcomes`` on a run already read."""
    where = f"{visible(str(run_dir.path))}/manifest.json"
    tool = run_dir.manifest.get("tool")
    if not isinstance(tool, str) or tool not in GATEABLE_TOOLS:
        raise CourseError(
            f"{where}: written by {shown(tool, 60) if tool else 'an unknown tool'}; the gate compares runs of "
            f"{' or '.join(GATEABLE_TOOLS)}"
        )
    shard = run_dir.manifest.get("shard")
    if shard is not None:  # a part measures the items of its shard, not the dataset its fingerprint names
        part = f"{shard.get('index')}/{shard.get('count')}" if isinstance(shard, dict) else shown(shard, 40)
        raise CourseError(
            f"{where}: is part {shown(part, 40)} of a sharded run, not a measurement of the whole dataset; "
            "merge its parts "
            "first (python -m course.eval merge PARTS... --outdir RUN) and gate the merged run"
        )
    for key in ("dataset_fingerprint", "scorer_version", "results_sha256", "summary_sha256"):
        if key not in run_dir.manifest:
            raise CourseError(f"{where}: missing '{key}'; not a complete scoring run")
    check_manifest(run_dir.manifest, where)
    _check_sealed(run_dir.results_path, run_dir.manifest["results_sha256"])
    rescorer = Rescorer(rubric_of(run_dir.manifest), run_dir.manifest.get("scorer_fingerprint"),
                        visible(str(run_dir.results_path)))
    tally = Tally()
    if dataset_file is None:
        dataset_file = dataset_at_hand(run_dir)
    against = DatasetCheck(run_dir, dataset_file) if dataset_file is not None else None
    # one pass over results.jsonl: each line re-scored, tallied and (a file at hand) checked against the dataset
    hooks: list[LineHook] = [rescorer.add, lambda r, _: tally.add(r)]
    if against is not None:
        hooks.append(against.add)
    counts, expected = _read_items(run_dir.results_path, hooks)
    check = against.finish() if against is not None else _not_at_hand(run_dir)
    outcomes = Outcomes(run_dir, {i: k == m for i, (k, m) in counts.items()}, expected, counts, check,
                        rescorer.result())
    check_summary(run_dir, tally)
    if outcomes.n == 0:
        raise CourseError(f"{visible(str(run_dir.results_path))}: no items; nothing to compare")
    return outcomes


# The figures of summary.json that every scoring run tallies from its results (``summary.Tally``).
TALLIED = ("n", "passed", "failed", "pass_rate", "mean_reward", "counts")


def check_summary(run_dir: RunDir, tally: Tally) -> None:
    """summary.json against its manifest and results.jsonl: ``n`` and ``passed`` must be integers, the file
    must have its recorded sha256, and every figure in ``TALLIED`` and each code's count in ``breakdown``
    must be what the results tally to (else ``CourseError``)."""
    where = f"{visible(str(run_dir.path))}/summary.json"
    n = _summary_count(run_dir.summary, "n", where)
    n_passed = _summary_count(run_dir.summary, "passed", where)
    _check_sealed(run_dir.path / "summary.json", run_dir.manifest["summary_sha256"])
    if (n, n_passed) != (tally.n, tally.passed):
        raise CourseError(
            f"{where}: says {n_passed}/{n} passed but results.jsonl has {tally.passed}/{tally.n}; "
            "the run directory is inconsistent (re-run the evaluation)"
        )
    if not tally.n:
        return
    want = tally.summary()
    for key in TALLIED:
        if key in run_dir.summary and not same_value(run_dir.summary[key], want[key]):
            raise CourseError(
                f"{where}: '{key}' is {shown(run_dir.summary[key], 80)} but results.jsonl tallies to "
                f"{shown(want[key], 80)}; the run directory is inconsistent (re-run the evaluation)"
            )
    rows = run_dir.summary.get("breakdown")
    if isinstance(rows, list):
        said = [(r.get("code"), r.get("count")) if isinstance(r, dict) else (r, None) for r in rows]
        tallied = [(r["code"], r["count"]) for r in want["breakdown"]]
        for i, (a, b) in enumerate(zip(said + [None] * len(tallied), tallied + [None] * len(said))):
            if a != b and not (a and b and a[0] == b[0] and same_value(a[1], b[1])):
                raise CourseError(
                    f"{where}: 'breakdown' row {i + 1} is {_row(a)} but results.jsonl tallies {_row(b)} there; "
                    "the run directory is inconsistent (re-run the evaluation)"
                )


def _check_sealed(file: Path, recorded: Any) -> None:
    """A run file has the sha256 its manifest recorded, or it was changed after the run."""
    if sha256_file(file) != recorded:
        raise CourseError(
            f"{visible(str(file))}: does not match the sha256 recorded in its manifest; it was "
            "changed after the run, so its numbers cannot be trusted (re-run the evaluation)"
        )


def _row(row: tuple[Any, Any] | None) -> str:
    return "absent" if row is None else f"{shown(row[0], 40)}: {shown(row[1], 20)}"


def _passes(result: dict[str, Any]) -> bool:
    # A reward of true is not 1.0: only a number equal to PASS_REWARD passes.
    return not isinstance(result["reward"], bool) and result["reward"] == PASS_REWARD


LineHook = Callable[[dict[str, Any], int], Any]  # called with each results line and its number


def _read_items(
    results: Path, hooks: Sequence[LineHook] = ()
) -> tuple[dict[str, tuple[int, int]], dict[str, Any]]:
    """Each id's (passing samples, samples) and its expected answer, from results.jsonl; every line is also
    handed to each of ``hooks`` (the re-score, the summary's tally, the dataset check), in the same pass.

    A one-sample run has one line per id; a multi-sample run (``course.eval`` on a selection
    pack) has one line per sample, the samples of an item on consecutive lines, each naming its
    ``sample_index`` 0..m-1, and every item the same m. Anything else is refused with its line.
    """
    counts: dict[str, tuple[int, int]] = {}
    expected: dict[str, Any] = {}
    where = visible(str(results))
    previous: str | None = None
    for lineno, r in enumerate(iter_results(results), 1):
        ident, index = r["id"], r.get("sample_index", 0)
        k, m = counts.get(ident, (0, 0))
        if ident in counts and ident != previous:
            raise CourseError(f"{where}:{lineno}: id {shown(ident, 80)} appears again after other ids; a run has "
                              "one line per item, or one line per sample with an item's samples together")
        if not is_count(index) or index != m:
            raise CourseError(f"{where}:{lineno}: id {shown(ident, 80)} has sample_index {shown(index, 40)}, "
                              f"expected {m} (samples numbered 0..m-1 in order)")
        if ident in expected and not same_value(expected[ident], r.get("expected")):
            raise CourseError(f"{where}:{lineno}: id {shown(ident, 80)}: its samples disagree on the expected answer")
        expected[ident] = r.get("expected")
        counts[ident] = (k + _passes(r), m + 1)
        previous = ident
        for hook in hooks:
            hook(r, lineno)
    sizes = {m for _, m in counts.values()}
    if len(sizes) > 1:
        raise CourseError(f"{where}: items have different numbers of samples ({', '.join(map(str, sorted(sizes)))}); "
                          "a multi-sample run scores the same number of samples for every item")
    return counts, expected


@dataclass(frozen=True)
class DatasetFile:
    """A dataset file at hand whose sha256 is the one a manifest records: ``name`` as the manifest gives it,
    ``label`` how the ``Items checked:`` line names it (another run's file says so)."""

    path: Path
    name: str
    sha256: str
    label: str = ""


def dataset_at_hand(run: RunDir) -> DatasetFile | None:
    """The dataset file a run's manifest names, when it is here with the recorded sha256 (else None)."""
    from course.lib.records.jsonl import input_problem
    from course.lib.records.manifest import shown_here

    record = run.manifest.get("dataset")
    path = record.get("path") if isinstance(record, dict) else None
    if not isinstance(path, str) or not path:
        return None
    local = Path(shown_here(path))
    if input_problem(local) is not None:
        return None
    digest = sha256_file(local)
    if digest != run.manifest.get("dataset_fingerprint"):
        return None
    return DatasetFile(local, visible(path), digest, visible(path))


def _not_at_hand(run: RunDir) -> str:
    """Why a run's items were not checked against a dataset file."""
    from course.lib.records.jsonl import input_problem
    from course.lib.records.manifest import shown_here

    record = run.manifest.get("dataset")
    path = record.get("path") if isinstance(record, dict) else None
    if not isinstance(path, str) or not path:
        return "its dataset file is not recorded, so its items were not checked against it"
    if input_problem(Path(shown_here(path))) is not None:
        return f"its dataset file {visible(path)} is not at hand, so its items were not checked against it"
    return (f"its dataset file {visible(path)} has changed since the run (another sha256), so its items were not "
            "checked against it")


class DatasetCheck:
    """A run's items against a dataset file at hand with the run's recorded sha256, line by line.

    A manifest's ``dataset_fingerprint`` is only a claim: copied from another run's manifest,
    it would let a run scored against a doctored dataset (expected answers set to what the
    completions say) pass the Locked Room. So every results line must name, in dataset order,
    that file's ids and expected answers (their rewards are re-scored from them by the
    ``Rescorer`` of ``outcomes_of``). Any disagreement is a ``CourseError`` naming the line:
    the run is unusable. ``finish`` returns one phrase saying what was checked.
    """

    def __init__(self, run: RunDir, dataset: DatasetFile) -> None:
        from course.lib.records.formats import iter_dataset_objects

        self.name = dataset.label or dataset.name
        self.where = visible(str(run.results_path))
        self.examples = iter_dataset_objects(dataset.path)
        self.example: dict[str, Any] | None = None

    def add(self, r: dict[str, Any], lineno: int) -> None:
        name = self.name
        if self.example is None or r.get("sample_index", 0) == 0:  # the next item (multi-sample: its first sample)
            self.example = next(self.examples, (0, None))[1]
        example = self.example
        if example is None or r["id"] != example["id"]:
            want = "no further item" if example is None else f"id {shown(example['id'], 80)}"
            raise CourseError(f"{self.where}:{lineno}: id {shown(r['id'], 80)} where the dataset file {name} (sha256 "
                              f"as recorded) has {want}; the run does not score the dataset its manifest names")
        if not same_value(r.get("expected"), example["expected_answer"]):
            raise CourseError(
                f"{self.where}:{lineno}: id {shown(r['id'], 80)} records expected {shown(r.get('expected'), 40)} but "
                f"the dataset file {name} (sha256 as recorded) says {shown(example['expected_answer'], 40)}; the run "
                "was not scored against the dataset its manifest names (re-run the evaluation)")

    def finish(self) -> str:
        if next(self.examples, None) is not None:
            raise CourseError(f"{self.where}: ends before the dataset file {self.name} does; the run does not score "
                              "every item")
        return f"{self.name} re-hashed (matches), every id and expected answer as in it"


# ---------------------------------------------------------------------------
# The decision
# ---------------------------------------------------------------------------
def paired_table(base: Outcomes, cand: Outcomes) -> dict[str, Any]:
    """Cross-tabulate the ids both runs scored, plus the McNemar test and Newcombe interval."""
    both = b = c = neither = 0
    for ident, base_pass in base.passed_by_id.items():
        cand_pass = cand.passed_by_id.get(ident)
        if cand_pass is None:
            continue
        if base_pass and cand_pass:
            both += 1
        elif base_pass:
            b += 1
        elif cand_pass:
            c += 1
        else:
            neither += 1
    shared = both + b + c + neither
    table: dict[str, Any] = {
        "shared": shared, "both": both, "b": b, "c": c, "neither": neither,
        "only_in_baseline": base.n - shared, "only_in_candidate": cand.n - shared,
    }
    if shared:
        lo, hi = paired_difference_interval(both, b, c, neither)
        p = mcnemar_exact(b, c)
        table.update({"mcnemar_p": p, "difference": (c - b) / shared, "difference_ci95": [lo, hi],
                      "significant": p < SIGNIFICANCE})
    return table


# The seed of the gate's resampling (the sign-flip test beyond its exact range) on multi-sample runs:
# fixed, so the same two runs always get the same decision.
RESAMPLING_SEED = 0
PER_ITEM = "per-item pass rates"


def paired_rates(base: Outcomes, cand: Outcomes) -> dict[str, Any]:
    """The paired comparison of multi-sample runs: each shared item's pass rate under both runs.

    The item is the unit (its samples are not independent): the change is the mean over items
    of (candidate rate - baseline rate), its p-value a sign-flip test over items, exact for up to
    16 items that differ (``EXACT_SIGN_FLIP_MAX``) (``course.lib.stats.sign_flip_test``, which on one sample
    per item asks what McNemar's test asks), its 95 % interval the one that agrees with that test
    (it excludes 0 exactly when p < SIGNIFICANCE).
    """
    ids = [i for i in base.counts_by_id if i in cand.counts_by_id]
    a = [k / m for k, m in (base.counts_by_id[i] for i in ids)]
    b = [k / m for k, m in (cand.counts_by_id[i] for i in ids)]
    table: dict[str, Any] = {
        "method": PER_ITEM, "shared": len(ids),
        "higher": sum(y > x for x, y in zip(a, b)), "lower": sum(y < x for x, y in zip(a, b)),
        "equal": sum(y == x for x, y in zip(a, b)),
        "samples_per_item": {"baseline": base.samples_per_item, "candidate": cand.samples_per_item},
        "only_in_baseline": base.items - len(ids), "only_in_candidate": cand.items - len(ids),
    }
    if ids:
        test = sign_flip_test(a, b, seed=RESAMPLING_SEED, confidence=1.0 - SIGNIFICANCE)
        p = test.p_value
        table.update({"p_value": p, "p_exact": test.exact,
                      "difference": math.fsum(y - x for x, y in zip(a, b)) / len(ids),
                      "difference_ci95": [test.low, test.high], "significant": p < SIGNIFICANCE})
    return table


def rate_line(o: Outcomes, label: str) -> str:
    """A run's headline: Wilson for one sample per item, the item-clustered interval for several."""
    if o.samples_per_item == 1:
        return pass_rate_line(o.passed, o.n, label)
    counts = list(o.counts_by_id.values())
    lo, hi = clustered_interval([k for k, _ in counts], [m for _, m in counts])
    return pass_at_1_line(o.passed, o.n, o.items, lo, hi, label)


def noise_sentence(table: dict[str, Any]) -> str:
    """One sentence: is the paired change distinguishable from noise?"""
    if not table["shared"]:
        return "The runs share no item ids, so no paired comparison is possible."
    if table.get("method") == PER_ITEM:
        up, down = table["higher"], table["lower"]
        if up + down == 0:
            return "Every item has the same pass rate in both runs: there is no difference to test."
        p = table["p_value"]
        verdict = "distinguishable" if table["significant"] else "not distinguishable"
        sign = "<" if table["significant"] else ">="
        return (f"The change is {verdict} from noise: sign-flip test over items p = {p:.3g} {sign} {SIGNIFICANCE} "
                f"({up} items pass more often, {down} less often).")
    b, c = table["b"], table["c"]
    if b + c == 0:
        return "Both runs pass and fail exactly the same items: there is no difference to test."
    p = table["mcnemar_p"]
    if table["significant"]:
        return (f"The change is distinguishable from noise: exact McNemar p = {p:.3g} < {SIGNIFICANCE} "
                f"({c} items newly pass, {b} newly fail).")
    return (f"The change is not distinguishable from noise: exact McNemar p = {p:.3g} >= {SIGNIFICANCE}; "
            f"{c} items newly pass and {b} newly fail, a split that fair coin flips on the {b + c} changed "
            "items would produce this often.")


def _points(x: float | Fraction, unit: str = " points") -> str:
    # The course's one rounding rule (summary.points), as every other printed rate.
    return points(x, signed=True, unit=unit)


def item_differences(base: Outcomes, cand: Outcomes) -> list[dict[str, Any]]:
    """The items themselves, compared between the runs: the same ids, each with the same expected answer.

    Equal ``dataset_fingerprint``s are a claim each manifest makes; the per-item ``expected`` in
    results.jsonl is what each run was actually scored against. Rows are shaped like
    ``locked_room_differences``' (kind "dataset"), so a difference is a Locked Room violation.
    """
    rows = []
    only_base = [i for i in base.expected_by_id if i not in cand.expected_by_id]
    only_cand = [i for i in cand.expected_by_id if i not in base.expected_by_id]
    if only_base or only_cand:
        def some(ids: list[str]) -> str:
            return f"{len(ids)} ids only here" + (f", first {shown(ids[0], 60)}" if ids else "")

        rows.append({"field": "items.id", "kind": "dataset",
                     "meaning": "the item ids in results.jsonl (the same dataset has the same ids)",
                     "baseline": some(only_base), "candidate": some(only_cand)})
    changed = [i for i, e in base.expected_by_id.items()
               if i in cand.expected_by_id and not same_value(e, cand.expected_by_id[i])]
    if changed:
        first = changed[0]
        rows.append({"field": "items.expected", "kind": "dataset",
                     "meaning": "the expected answer each item was scored against, in results.jsonl",
                     "baseline": f"{shown(first, 60)}: {shown(base.expected_by_id[first], 40)}",
                     "candidate": f"{shown(first, 60)}: {shown(cand.expected_by_id[first], 40)} "
                                  f"({len(changed)} of {len(base.expected_by_id)} items differ)"})
    return rows


def items_line(base: Outcomes, cand: Outcomes, differences: list[dict[str, Any]]) -> str:
    """The one line saying what the gate checked of the items, beyond the manifests (``differences``:
    what ``item_differences`` found): the ids and expected answers, the re-score of every line
    (``rescore_phrase``) and the dataset file."""
    if differences:
        head = "ids or expected answers DIFFER between the runs"
    else:
        head = f"the same {base.items} ids with the same expected answers in both runs"
    return (f"Items checked: {head}; {_for_both('re-scored', rescore_phrase(base), rescore_phrase(cand))}; "
            f"{_for_both('dataset file', base.dataset_check, cand.dataset_check)}.")


def _for_both(what: str, base: str, cand: str) -> str:
    return f"{what}, for both runs: {base}" if base == cand else f"{what}: baseline: {base}; candidate: {cand}"


def rescore_phrase(o: Outcomes) -> str:
    """What re-scoring found of one run's lines, as the ``Items checked:`` line says it."""
    return "NOT re-scored" if o.rescored is None else o.rescored.phrase()


def rescore_reasons(base: Outcomes, cand: Outcomes) -> list[str]:
    """A reason to REJECT for each run whose lines were not all re-scored to what they record.

    Every results line carries its completion and expected answer, so both runs can always be
    re-scored; a run that could not be (another scorer version, an unknown rubric, a line without
    its completion) or that records a verdict the rubric does not give is never accepted, whatever
    its numbers say: the baseline too, since a doctored baseline makes any candidate look better.
    """
    reasons = []
    for label, o in (("baseline", base), ("candidate", cand)):
        found = o.rescored
        if found is None:
            reasons.append(f"the {label}'s results were not re-scored")
        elif found.unscorable is not None:
            reasons.append(f"the {label} could not be re-scored ({found.unscorable}), and a comparison does not "
                           "accept what it could not re-score")
        elif found.differ:
            reasons.append(f"the {label}'s results record verdicts its rubric does not give ({found.differ} of "
                           f"{found.lines} lines; first {found.first})")
    return reasons


def decide(base: Outcomes, cand: Outcomes, min_delta: Fraction, require_significance: bool) -> dict[str, Any]:
    """The gate's verdict and everything it rests on (what --json prints)."""
    differences = locked_room_differences(base.run.manifest, cand.run.manifest)
    items = item_differences(base, cand)
    if not any(d["kind"] == "dataset" for d in differences):  # another dataset: its items differ, nothing to add
        differences += items
    result: dict[str, Any] = {
        "baseline": {"run": str(base.run.path), "n": base.n, "passed": base.passed, "pass_rate": base.passed / base.n},
        "candidate": {"run": str(cand.run.path), "n": cand.n, "passed": cand.passed, "pass_rate": cand.passed / cand.n},
        "locked_room": {"ok": not differences, "differences": differences},
        "items_checked": items_line(base, cand, items),
        "min_delta": float(min_delta),
        "require_significance": require_significance,
        "delta": None,
        "paired": None,
        "rescored": {"baseline": rescore_phrase(base), "candidate": rescore_phrase(cand)},
        "reasons": rescore_reasons(base, cand),
    }
    if differences:
        fields = [d["field"] for d in differences]
        reason = f"Locked Room violated: {', '.join(fields)} {'differs' if len(fields) == 1 else 'differ'}"
        if "rubric" in fields:  # the most common way to compare the incomparable: say it in the reason itself
            reason += (f" (scored by rubric {shown(rubric_of(base.run.manifest))} vs "
                       f"{shown(rubric_of(cand.run.manifest))})")
        result["reasons"].insert(0, reason)
        result["decision"] = "REJECT"
        return result
    delta = Fraction(cand.passed, cand.n) - Fraction(base.passed, base.n)
    result["delta"] = float(delta)
    several = base.samples_per_item > 1 or cand.samples_per_item > 1
    result["paired"] = paired_rates(base, cand) if several else paired_table(base, cand)
    if delta < min_delta:
        result["reasons"].append(f"the change {_points(delta)} is below the required {_points(min_delta)}")
    if require_significance and not (result["paired"].get("significant")):
        result["reasons"].append(f"the change is not significant at p < {SIGNIFICANCE} (--require-significance)")
    result["decision"] = "REJECT" if result["reasons"] else "ACCEPT"
    return result


def render(result: dict[str, Any], base: Outcomes, cand: Outcomes) -> list[str]:
    """The human report."""
    lines = []
    # Every value read from a run directory is shown through `shown`/`visible`: never raw.
    width = max(len(visible(str(base.run.path))), len(visible(str(cand.run.path))))
    for label, o in (("Baseline ", base), ("Candidate", cand)):
        m = o.run.manifest
        lines.append(f"{label}: {visible(str(o.run.path)):<{width}}  "
                     f"{rate_line(o, 'pass rate' if o.samples_per_item == 1 else 'pass@1')}"
                     f"  [{shown(m.get('tool'))}, split {shown(m.get('split') or 'unknown')}, "
                     f"policy {shown(m.get('policy', '?'))}]")
    lines.append("")
    room = result["locked_room"]
    if not room["ok"]:
        lines.append("Locked Room: VIOLATED. The runs were not measured under the same conditions:")
        for d in room["differences"]:
            lines.append(f"  {d['field']}  [{d['kind']}: {d['meaning']}]")
            lines.append(f"      baseline : {visible(d['baseline'])}")
            lines.append(f"      candidate: {visible(d['candidate'])}")
        for kind in dict.fromkeys(d["kind"] for d in room["differences"]):
            lines.append(f"  -> {KIND_EXPLANATION[kind]}.")
        lines.append("The pass rates above are not comparable, so no delta is computed. Measure both runs with the")
        lines.append("same dataset, split, rubric, scorer and sampling (and selection compute), changing "
                     "only the policy.")
        lines.append(result["items_checked"])
    else:
        m = base.run.manifest
        rubric = rubric_of(m)
        named = f"rubric {shown(rubric)}, " if rubric not in (None, "strict") else ""  # strict: as it always read
        lines.append(
            f"Locked Room: ok (same dataset sha256 {shown(str(m.get('dataset_fingerprint'))[:12])}…, split "
            f"{shown(m.get('split') or 'unknown')}, {named}scorer {shown(m.get('scorer_version'))} "
            f"{shown(str(m.get('scorer_fingerprint'))[:12])}…, sampling {shown(m.get('sampling'))})"
        )
        lines.append(result["items_checked"])
        lines.append(f"Change: {_points(result['delta'])} (candidate − baseline); "
                     f"the bar is {_points(result['min_delta'])}")
        t = result["paired"]
        if t.get("method") == PER_ITEM:
            sizes = t["samples_per_item"]
            lines.append(
                f"Paired over {t['shared']} shared items, each item's pass rate ({sizes['baseline']} baseline and "
                f"{sizes['candidate']} candidate samples per item): higher for {t['higher']} items, lower for "
                f"{t['lower']}, equal for {t['equal']}"
            )
        else:
            lines.append(
                f"Paired over {t['shared']} shared items: both pass {t['both']}, only baseline passes {t['b']} (b), "
                f"only candidate passes {t['c']} (c), neither {t['neither']}"
            )
        if t["only_in_baseline"] or t["only_in_candidate"]:
            lines.append(f"  ({t['only_in_baseline']} ids only in the baseline, {t['only_in_candidate']} only in "
                         "the candidate)")
        if t["shared"] and t.get("method") == PER_ITEM:
            lo, hi = t["difference_ci95"]
            lines.append(f"  sign-flip test over items p = {t['p_value']:.3g}; 95% interval for the change (from "
                         f"the same test): {_points(lo, '')} to {_points(hi)}")
        elif t["shared"]:
            lo, hi = t["difference_ci95"]
            lines.append(f"  exact McNemar p = {t['mcnemar_p']:.3g}; 95% interval for the change (Newcombe): "
                         f"{_points(lo, '')} to {_points(hi)}")
        lines.append("  " + noise_sentence(t))
    lines.append("")
    if result["decision"] == "ACCEPT":
        lines.append(f"Decision: ACCEPT (the change {_points(result['delta'])} clears the bar "
                     f"{_points(result['min_delta'])})")
        if result["paired"] and not result["paired"].get("significant") and not result["require_significance"]:
            lines.append("  Caution: the change is within noise; --require-significance would have rejected it.")
    elif len(result["reasons"]) == 1:
        lines.append(f"Decision: REJECT ({result['reasons'][0]})")
    else:
        lines.append("Decision: REJECT")
        lines += [f"  - {reason}" for reason in result["reasons"]]
    return lines


def gate_view(result: dict[str, Any], base: Outcomes, cand: Outcomes) -> dict[str, Any]:
    """Everything the HTML report shows of a decision (``course.lib.reporting.html.render_gate`` draws it)."""
    lines = render(result, base, cand)
    start = next(i for i, line in enumerate(lines) if line.startswith("Decision:"))
    kinds = dict.fromkeys(d["kind"] for d in result["locked_room"]["differences"])
    return {
        "baseline": str(base.run.path), "candidate": str(cand.run.path), "result": result,
        "rows": locked_room_table(base.run.manifest, cand.run.manifest),
        "explanations": [KIND_EXPLANATION[k] for k in kinds],
        "noise": noise_sentence(result["paired"]) if result["paired"] else None,
        "decision_lines": lines[start:], "text": "\n".join(lines),
    }



if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.evaluation.locked_room"))
