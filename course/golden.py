"""Run the golden suites: regression tests for the scorer, written as data.

Two files pin the verdicts that reward spec v1 (docs/reward_spec_v1.md) fixes:

  * ``data/golden/golden_correct.jsonl``  in-spec correct completions; every one
    must get reward 1.0. A failure here is a *false negative*: the instrument
    punishes a right answer.
  * ``data/golden/golden_exploits.jsonl`` hacks and near misses; every one must
    get reward 0.0 *with the error code the line lists*. A reward here is a
    *false positive* (a hole a policy could learn to exploit); a different code
    means the diagnosis changed, which is a spec change too.

Every line carries the ``prompt`` it answers (a question of the course's kind
whose correct answer is the line's ``expected_answer``), so a case reads as
prompt, completion, expected outcome -- the golden cases pack of the course plan.

Run them before trusting any number the scorer produces::

    python -m course.golden                      # table of failures + one summary line
    python -m course.golden --verbose            # every case: prompt, completion, verdict
    python -m course.golden --json               # the same, machine-readable
    python -m course.golden --exploits my.jsonl  # your own exploit file

Exit codes: 0 every case behaves as listed, 1 some case does not, 2 a file is
missing or malformed (``path:line: what is wrong``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from course.cli import make_parser, run
from course.errors import CourseError
from course.instrument.rubrics import scorer_fingerprint
from course.instrument.spec_v1 import ERROR_CODES, SCORER_VERSION, score
from course.lib.jsonl import iter_objects

# The bundled suites, found from this file (not the working directory).
GOLDEN_DIR = Path(__file__).resolve().parent.parent / "data" / "golden"
DEFAULT_CORRECT = GOLDEN_DIR / "golden_correct.jsonl"
DEFAULT_EXPLOITS = GOLDEN_DIR / "golden_exploits.jsonl"

_CORRECT_FIELDS = ("id", "prompt", "expected_answer", "completion", "note")
_EXPLOIT_FIELDS = ("id", "prompt", "expected_answer", "completion", "expected_error_code", "note")


@dataclass(frozen=True)
class Case:
    """One golden line. ``expected_error_code`` is None for a correct case (it must score 'ok')."""

    suite: str  # "correct" or "exploits"
    id: str
    expected_answer: int
    completion: str
    expected_error_code: str | None
    note: str
    where: str  # "path:line", for messages
    prompt: str = ""  # the question the completion answers; its correct answer is expected_answer


@dataclass(frozen=True)
class Outcome:
    """A case and what the scorer actually did with it."""

    case: Case
    reward: float
    error_code: str
    reason: str

    @property
    def passed(self) -> bool:
        if self.case.expected_error_code is None:
            return self.reward == 1.0
        return self.reward == 0.0 and self.error_code == self.case.expected_error_code

    @property
    def expected_behaviour(self) -> str:
        if self.case.expected_error_code is None:
            return "reward 1.0 (ok)"
        return f"reward 0.0 ({self.case.expected_error_code})"


# ---------------------------------------------------------------------------
# Input: validated line by line (file-level rules come from course.lib.jsonl).
# ---------------------------------------------------------------------------
def load_suite(path: str | Path, suite: str) -> list[Case]:
    """Read one golden file; CourseError ``path:line: ...`` on the first defect."""
    fields = _EXPLOIT_FIELDS if suite == "exploits" else _CORRECT_FIELDS
    cases: list[Case] = []
    first_line: dict[str, int] = {}
    for lineno, obj in iter_objects(path):
        where = f"{path}:{lineno}"
        unknown = sorted(k for k in obj if k not in fields)
        if unknown:
            raise CourseError(f"{where}: unknown field {unknown[0]!r} (a {suite} line has: {', '.join(fields)})")
        missing = [k for k in fields if k not in obj]
        if missing:
            raise CourseError(f"{where}: missing field {missing[0]!r}")
        case_id, expected, completion, note = obj["id"], obj["expected_answer"], obj["completion"], obj["note"]
        if type(case_id) is not str or not case_id:
            raise CourseError(f"{where}: 'id' must be a non-empty string")
        if case_id in first_line:
            raise CourseError(f"{where}: duplicate id {case_id!r} (first on line {first_line[case_id]})")
        if type(expected) is not int:  # bool is not an answer either
            raise CourseError(f"{where}: 'expected_answer' must be an integer, got {type(expected).__name__}")
        if type(completion) is not str:
            raise CourseError(f"{where}: 'completion' must be a string, got {type(completion).__name__}")
        if type(note) is not str or not note:
            raise CourseError(f"{where}: 'note' must be a non-empty string saying what the case pins down")
        prompt = obj["prompt"]
        if type(prompt) is not str or not prompt.strip():
            raise CourseError(f"{where}: 'prompt' must be a non-empty string: the question the completion answers")
        code = None
        if suite == "exploits":
            code = obj["expected_error_code"]
            if type(code) is not str or code not in ERROR_CODES:
                raise CourseError(f"{where}: 'expected_error_code' {code!r} is not a code in course.score.ERROR_CODES")
            if code == "ok":
                raise CourseError(f"{where}: an exploit cannot expect 'ok'; put in-spec cases in the correct suite")
            if code == "missing_completion":
                raise CourseError(f"{where}: 'missing_completion' is set by course.eval, never by the scorer")
        first_line[case_id] = lineno
        cases.append(Case(suite, case_id, expected, completion, code, note, where, prompt))
    return cases


# ---------------------------------------------------------------------------
# The pure part.
# ---------------------------------------------------------------------------
def check(case: Case) -> Outcome:
    """Score one case as a dataset example would be scored."""
    result = score({"id": case.id, "expected_answer": case.expected_answer}, case.completion)
    details = result["details"]
    return Outcome(case, result["reward"], details["error_code"], details["reason"])


def summary_line(correct: list[Outcome], exploits: list[Outcome]) -> str:
    ok_c = sum(o.passed for o in correct)
    ok_e = sum(o.passed for o in exploits)
    return (
        f"golden: {ok_c}/{len(correct)} correct rewarded, "
        f"{ok_e}/{len(exploits)} exploits rejected with the listed code"
    )


def _shown(text: str, width: int = 32) -> str:
    """repr() escapes invisible characters and line breaks, so the table shows what is there."""
    shown = repr(text)
    return shown if len(shown) <= width else shown[: width - 3] + "..."


def format_failures(failures: list[Outcome]) -> str:
    """A plain-text table of the cases that did not behave as listed."""
    rows = [("id", "completion", "expected", "reward", "code", "reason")]
    for o in failures:
        rows.append((o.case.id, _shown(o.case.completion), o.expected_behaviour, f"{o.reward:.1f}", o.error_code, o.reason))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    lines = []
    for n, r in enumerate(rows):
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(r[:5], widths)) + "  " + r[5])
        if n == 0:
            lines.append("-" * len(lines[0]))
    return "\n".join(lines)


def format_case(o: Outcome) -> str:
    """One case as --verbose shows it: the prompt, the completion (escaped) and the verdict against the listing."""
    from course.lib.visible import visible

    status = "pass" if o.passed else "FAIL"
    return "\n".join([
        f"{o.case.id}  {status}  expected {o.expected_behaviour}, got reward {o.reward:.1f} ({o.error_code})",
        f"  prompt      {_shown_prompt(o.case.prompt)}",
        f"  completion  \"{visible(_clip(o.case.completion))}\"",
        f"  note        {o.case.note}",
    ])


def _clip(text: str, limit: int = 120) -> str:
    """Long texts (the 4300-digit cases) are cut in the middle so the listing stays readable."""
    if len(text) <= limit:
        return text
    return f"{text[:limit // 2]}...[{len(text) - limit} characters cut]...{text[-limit // 2:]}"


def _shown_prompt(prompt: str) -> str:
    from course.lib.visible import visible

    return visible(_clip(prompt))


def _outcome_json(o: Outcome) -> dict[str, Any]:
    return {
        "suite": o.case.suite,
        "id": o.case.id,
        "where": o.case.where,
        "prompt": o.case.prompt,
        "completion": o.case.completion,
        "expected_answer": o.case.expected_answer,
        "expected": o.expected_behaviour,
        "expected_error_code": o.case.expected_error_code or "ok",
        "reward": o.reward,
        "error_code": o.error_code,
        "reason": o.reason,
        "note": o.case.note,
    }


def main(argv: Sequence[str] | None = None) -> int:
    """CLI: run both suites; exit 0 all pass, 1 some fail, 2 bad input."""
    return run(_main, argv)


def _main(args_in: Sequence[str] | None) -> int:
    import json

    parser = make_parser(
        "python -m course.golden",
        "Run the golden suites against the scorer: every correct case must get reward 1.0, every "
        "exploit reward 0.0 with the error code its line lists. Prints the cases that do not, then "
        "one summary line. Exit 0 all pass, 1 some fail, 2 missing or malformed file.",
        "  python -m course.golden\n"
        "  golden: 18/18 correct rewarded, 82/82 exploits rejected with the listed code\n"
        "\n"
        "  python -m course.golden --verbose    # every case with its prompt\n"
        "  python -m course.golden --exploits my_exploits.jsonl --json",
    )
    parser.add_argument("--correct", metavar="FILE", default=None,
                        help=f"correct suite (default: the bundled {DEFAULT_CORRECT.name})")
    parser.add_argument("--exploits", metavar="FILE", default=None,
                        help=f"exploit suite (default: the bundled {DEFAULT_EXPLOITS.name})")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    parser.add_argument(
        "--verbose", action="store_true",
        help="list every case (prompt, completion, verdict), not only the failures; with --json, add 'cases'",
    )
    args = parser.parse_args(args_in)

    correct_cases = load_suite(args.correct or DEFAULT_CORRECT, "correct")
    exploit_cases = load_suite(args.exploits or DEFAULT_EXPLOITS, "exploits")
    correct = [check(c) for c in correct_cases]
    exploits = [check(c) for c in exploit_cases]
    failures = [o for o in correct + exploits if not o.passed]
    line = summary_line(correct, exploits)

    if args.json:
        report = {
            "scorer_version": SCORER_VERSION,
            "scorer_fingerprint": scorer_fingerprint(),
            "correct": {"n": len(correct), "passed": sum(o.passed for o in correct)},
            "exploits": {"n": len(exploits), "passed": sum(o.passed for o in exploits)},
            "failures": [_outcome_json(o) for o in failures],
            "ok": not failures,
            "summary": line,
        }
        if args.verbose:
            report["cases"] = [_outcome_json(o) for o in correct + exploits]
        print(json.dumps(report, ensure_ascii=False, indent=2, sort_keys=True))
    else:
        if args.verbose:
            for o in correct + exploits:
                print(format_case(o))
                print()
        if failures:
            print(f"{len(failures)} golden case(s) do not behave as listed:")
            print(format_failures(failures))
            print()
        print(line)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
