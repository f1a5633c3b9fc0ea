"""Re-scoring a run's own lines: what the gate and ``course.eval merge`` check before they trust a reward.

Every results.jsonl line carries its ``completion`` and its ``expected`` answer, and the rubric needs
nothing else, so a line can always be scored again and compared with what it records: its ``reward``
and its ``details.error_code``. A results file whose sha256 was re-sealed in its manifest, or a part
edited before a merge, records verdicts the instrument does not give; re-scoring finds the first
such line and counts them all. A run that cannot be re-scored (a rubric this version does not know,
a scorer whose source has changed since the run, a line without its completion or expected answer)
is said to be so, never passed over: a comparison or a merge does not accept what it could not
re-score.

    rescorer = Rescorer(rubric_of(manifest), manifest.get("scorer_fingerprint"), "runs/x/results.jsonl")
    for lineno, line in enumerate(iter_results(path), 1):
        rescorer.add(line, lineno)                       # or rescorer.add(line, lineno, example=dataset_item)
    found = rescorer.result()                            # Rescored: lines, differ, first, unscorable

A line with no completion (``course.eval --allow-missing``) re-scores to what ``missing_result``
records: reward 0.0, code ``missing_completion``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from course.lib.visible import visible

MISSING = "missing_completion"


def _shown(value: Any, limit: int = 40) -> str:
    from course.lib.records.jsonl import dumps_line

    return visible(value if isinstance(value, str) else dumps_line(value), limit=limit)


@dataclass(frozen=True)
class Rescored:
    """What re-scoring one run's lines found.

    ``lines``: lines re-scored; ``differ``: how many record a reward or code the rubric does not give;
    ``first``: the first of them, named (``path:line: id ... records ... but ... gives ...``);
    ``unscorable``: why the lines could not be re-scored (None when they were).
    """

    rubric: str
    lines: int = 0
    differ: int = 0
    first: str | None = None
    unscorable: str | None = None

    @property
    def ok(self) -> bool:
        """Every line was re-scored and records what the rubric gives."""
        return self.unscorable is None and self.differ == 0

    def phrase(self) -> str:
        """What was re-scored, as the gate's ``Items checked:`` line says it.

        >>> Rescored("strict", 100).phrase()
        'all 100 lines by rubric strict from their own completion and expected: rewards and codes as recorded'
        """
        if self.unscorable is not None:
            return f"NOT re-scored: {self.unscorable}"
        if self.differ:
            return (f"{self.differ} of {self.lines} lines record a reward or code that rubric {self.rubric} does "
                    f"not give (first {self.first})")
        return (f"all {self.lines} lines by rubric {self.rubric} from their own completion and expected: "
                "rewards and codes as recorded")


def _reward_matches(recorded: Any, rescored: float) -> bool:
    # A reward of true is not 1.0 (bool is an int in Python); numbers compare by value.
    return not isinstance(recorded, bool) and isinstance(recorded, (int, float)) and recorded == rescored


class Rescorer:
    """Re-scores results lines one at a time (memory does not grow with the run) under a run's rubric.

    ``rubric_name`` and ``fingerprint`` are what the run's manifest records; ``where`` names its
    results file in messages. When the rubric is unknown or its source differs from the recorded
    fingerprint, nothing is scored and ``result().unscorable`` says why.
    """

    def __init__(self, rubric_name: Any, fingerprint: Any, where: str) -> None:
        from course.instrument.rubric_registry import RUBRICS

        self.where = where
        self.name = rubric_name if isinstance(rubric_name, str) else _shown(rubric_name)
        rubric = RUBRICS.get(rubric_name) if isinstance(rubric_name, str) else None
        self.unscorable: str | None = None
        if rubric is None:
            self.unscorable = f"its rubric {_shown(rubric_name)} is not one this version knows"
        elif rubric.fingerprint() != fingerprint:
            recorded = _shown(fingerprint[:12] if isinstance(fingerprint, str) else fingerprint)
            self.unscorable = (f"it was scored by another version of rubric {rubric.name} (scorer fingerprint "
                               f"{recorded}… is not this code's {rubric.fingerprint()[:12]}…)")
        self.score = None if rubric is None else rubric.score
        self.lines = self.differ = 0
        self.first: str | None = None

    def add(
        self, line: Mapping[str, Any], lineno: int, example: Mapping[str, Any] | None = None, where: str | None = None
    ) -> str | None:
        """Re-score one line (against ``example`` when given, else its own ``expected``); return the line's
        disagreement, named (``where``: its file, when not the one given at construction), or None when it
        records what the rubric gives (or nothing could be scored)."""
        if self.unscorable is not None or self.score is None:
            return None
        where = self.where if where is None else where
        if "completion" not in line or "expected" not in line:
            missing = "completion" if "completion" not in line else "expected"
            self.unscorable = f"{where}:{lineno} has no '{missing}' to re-score from"
            return None
        code = line["details"]["error_code"]
        if line["completion"] is None and code == MISSING:
            reward, want = 0.0, MISSING
        else:
            item = example if example is not None else {"id": line["id"], "expected_answer": line["expected"]}
            verdict = self.score(item, line["completion"])
            reward, want = verdict["reward"], verdict["details"]["error_code"]
        self.lines += 1
        if _reward_matches(line["reward"], reward) and code == want:
            return None
        self.differ += 1
        found = (f"{where}:{lineno}: id {_shown(line['id'], 80)} records reward {_shown(line['reward'])}, code "
                 f"{_shown(code)}, but rubric {self.name} gives {_shown(reward)}, {_shown(want)}")
        if self.first is None:
            self.first = found
        return found

    def result(self) -> Rescored:
        return Rescored(self.name, self.lines, self.differ, self.first, self.unscorable)


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.evaluation.rescoring"))
