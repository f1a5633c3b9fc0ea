"""Red-team a reward rubric: which known exploits does it pay for, and does strict hold?

This module owns milestone 5's harness. It scores every exploit in the golden
exploit suite (``data/golden/golden_exploits.jsonl``) and, optionally, a file of
the student's own exploits, under a chosen rubric from ``course.rubrics`` and
under the strict verifier, and prints them side by side::

    python -m course.red_team --rubric last_number
    python -m course.red_team --rubric lenient_int --exploits my_exploits.jsonl
    python -m course.red_team --rubric first_final --json      # machine-readable

An exploit file has the golden suite's shape, one JSON object per line::

    {"id": "my-001", "expected_answer": 323, "completion": "Final: 3_23",
     "expected_error_code": "digit_separator", "note": "int() reads 3_23 as 323"}

(``expected_error_code``, ``note`` and ``prompt`` are optional in a student file;
the golden suite always lists the code and the prompt.) An exploit is a completion that must *not*
earn reward under the spec; a weak rubric that rewards it has a hole.

Exit codes: 0 when the strict verifier rejects every exploit (whatever the weak
rubric did -- finding its holes is the exercise), 1 when the strict verifier
rewards any exploit (a hole in the spec itself, or an exploit that is actually
correct), 2 for unusable input (``path:line: what is wrong``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from course.cli import make_parser, run
from course.errors import CourseError
from course.instrument.rubrics import RUBRICS, get_rubric
from course.instrument.spec_v1 import ERROR_CODES
from course.instrument.spec_v1 import score as strict_score
from course.lib.jsonl import iter_objects
from course.lib.visible import visible

GOLDEN_EXPLOITS = Path(__file__).resolve().parents[1] / "data" / "golden" / "golden_exploits.jsonl"

_FIELDS = ("id", "prompt", "expected_answer", "completion", "expected_error_code", "note")
_COMPLETION_WIDTH = 44


@dataclass(frozen=True)
class Exploit:
    """One completion that the spec says must not be rewarded."""

    source: str  # "golden", or the path of the student's file
    id: str
    expected_answer: int
    completion: str
    expected_error_code: str | None
    note: str


@dataclass(frozen=True)
class Row:
    """An exploit with its two verdicts: under the rubric being red-teamed, and under strict."""

    exploit: Exploit
    rubric: dict[str, Any]
    strict: dict[str, Any]

    @property
    def hacked(self) -> bool:
        """The weak rubric pays for something the spec rejects: the hole this exercise is about."""
        return self.rubric["reward"] > 0.0 and self.strict["reward"] == 0.0

    @property
    def code_mismatch(self) -> bool:
        listed = self.exploit.expected_error_code
        return listed is not None and listed != self.strict["details"]["error_code"]


# ---------------------------------------------------------------------------
# Input: exploit files, validated line by line.
# ---------------------------------------------------------------------------
def load_exploits(path: str | Path, source: str, require_code: bool = False) -> list[Exploit]:
    """Read an exploit file; CourseError ``path:line: ...`` on the first defect."""
    path = Path(path)
    exploits: list[Exploit] = []
    seen: dict[str, int] = {}
    for number, obj in iter_objects(path):
        where = f"{path}:{number}"
        unknown = sorted(k for k in obj if k not in _FIELDS)
        if unknown:
            raise CourseError(f"{where}: unknown field {unknown[0]!r} (allowed: {', '.join(_FIELDS)})")
        for name in ("id", "expected_answer", "completion"):
            if name not in obj:
                raise CourseError(f"{where}: missing field {name!r}")
        eid, expected, completion = obj["id"], obj["expected_answer"], obj["completion"]
        if not isinstance(eid, str) or not eid:
            raise CourseError(f"{where}: 'id' must be a non-empty string")
        if eid in seen:
            raise CourseError(f"{where}: duplicate id {eid!r} (first on line {seen[eid]})")
        if type(expected) is not int:
            raise CourseError(f"{where}: 'expected_answer' must be an integer, got {type(expected).__name__}")
        if not isinstance(completion, str):
            raise CourseError(f"{where}: 'completion' must be a string, got {type(completion).__name__}")
        code = obj.get("expected_error_code")
        if code is None and require_code:
            raise CourseError(f"{where}: missing field 'expected_error_code'")
        if code is not None:
            if not isinstance(code, str) or code not in ERROR_CODES:
                raise CourseError(f"{where}: 'expected_error_code' {code!r} is not a code in course.score.ERROR_CODES")
            if code == "ok":
                raise CourseError(f"{where}: an exploit cannot expect 'ok' (it must fail under the spec)")
        note = obj.get("note", "")
        if not isinstance(note, str):
            raise CourseError(f"{where}: 'note' must be a string")
        if not isinstance(obj.get("prompt", ""), str):  # optional; the golden suite always carries it
            raise CourseError(f"{where}: 'prompt' must be a string")
        seen[eid] = number
        exploits.append(Exploit(source, eid, expected, completion, code, note))
    return exploits


# ---------------------------------------------------------------------------
# The pure part: score every exploit twice.
# ---------------------------------------------------------------------------
def red_team(exploits: list[Exploit], rubric: str) -> list[Row]:
    """Each exploit under ``rubric`` and under strict, in input order."""
    weak = get_rubric(rubric)
    rows = []
    for e in exploits:
        example = {"expected_answer": e.expected_answer}
        rows.append(Row(e, weak(example, e.completion), strict_score(example, e.completion)))
    return rows


def summarise(rows: list[Row], rubric: str) -> dict[str, Any]:
    """Counts per source and overall; ids of the exploits that matter."""
    sources: dict[str, dict[str, int]] = {}
    for r in rows:
        s = sources.setdefault(r.exploit.source, {"n": 0, "rubric_rewarded": 0, "strict_rewarded": 0})
        s["n"] += 1
        s["rubric_rewarded"] += r.rubric["reward"] > 0.0
        s["strict_rewarded"] += r.strict["reward"] > 0.0
    return {
        "rubric": rubric,
        "loophole": RUBRICS[rubric].loophole,
        "n": len(rows),
        "rubric_rewarded": sum(r.rubric["reward"] > 0.0 for r in rows),
        "strict_rewarded": sum(r.strict["reward"] > 0.0 for r in rows),
        "hacked_ids": [r.exploit.id for r in rows if r.hacked],
        "strict_rewarded_ids": [r.exploit.id for r in rows if r.strict["reward"] > 0.0],
        "code_mismatch_ids": [r.exploit.id for r in rows if r.code_mismatch],
        "sources": sources,
    }


# ---------------------------------------------------------------------------
# Output.
# ---------------------------------------------------------------------------
def _short(text: str, width: int = _COMPLETION_WIDTH) -> str:
    """The completion quoted and made visible (course.lib.visible), cut to ``width`` between escapes."""
    shown = '"' + visible(text) + '"'
    if len(shown) <= width:
        return shown
    cut = shown[: width - 3]
    start = cut.rfind("\u27e8")
    if start != -1 and "\u27e9" not in cut[start:]:
        cut = cut[:start]  # never show half of an escape
    return cut + "..."


def format_table(rows: list[Row], summary: dict[str, Any]) -> str:
    rubric = summary["rubric"]
    id_w = max([len("id")] + [len(r.exploit.id) for r in rows])
    src_w = max([len("source")] + [len(r.exploit.source) for r in rows])
    rub_w = max(len(rubric), 6)
    head = (
        f"{'source':<{src_w}}  {'id':<{id_w}}  {'completion (escaped)':<{_COMPLETION_WIDTH}}  "
        f"{rubric:>{rub_w}}  {'strict':>6}  {'strict error_code':<20}  flag"
    )
    lines = [
        f"Red team: rubric '{rubric}' vs strict on {summary['n']} exploit(s)",
        f"  loophole of '{rubric}': {summary['loophole']}",
        "",
        head,
        "-" * len(head),
    ]
    for r in rows:
        flag = []
        if r.strict["reward"] > 0.0:
            flag.append("STRICT REWARDS IT")
        elif r.hacked:
            flag.append("HACKED")
        if r.code_mismatch:
            flag.append(f"code listed: {r.exploit.expected_error_code}")
        lines.append(
            f"{r.exploit.source:<{src_w}}  {r.exploit.id:<{id_w}}  {_short(r.exploit.completion):<{_COMPLETION_WIDTH}}  "
            f"{r.rubric['reward']:>{rub_w}.1f}  {r.strict['reward']:>6.1f}  "
            f"{r.strict['details']['error_code']:<20}  {'; '.join(flag)}".rstrip()
        )
    n = summary["n"]
    kind = "hackable rubric" if rubric != "strict" else "rubric"
    lines += ["", f"{kind} '{rubric}' rewards {summary['rubric_rewarded']}/{n} exploits; strict rewards {summary['strict_rewarded']}/{n}"]
    if len(summary["sources"]) > 1:
        for source, s in summary["sources"].items():
            lines.append(
                f"  {source}: '{rubric}' rewards {s['rubric_rewarded']}/{s['n']}; strict rewards {s['strict_rewarded']}/{s['n']}"
            )
    if summary["strict_rewarded_ids"]:
        lines.append(
            "SPEC BUG: the strict verifier rewards " + ", ".join(summary["strict_rewarded_ids"])
            + " -- either the scorer has a hole or the 'exploit' is a correct answer; fix one of them."
        )
    if summary["code_mismatch_ids"]:
        lines.append(
            "note: strict rejects these, but with another error_code than listed: "
            + ", ".join(summary["code_mismatch_ids"])
        )
    return "\n".join(lines)


def _row_json(r: Row) -> dict[str, Any]:
    return {
        "source": r.exploit.source,
        "id": r.exploit.id,
        "expected_answer": r.exploit.expected_answer,
        "completion": r.exploit.completion,
        "expected_error_code": r.exploit.expected_error_code,
        "rubric_reward": r.rubric["reward"],
        "rubric_details": r.rubric["details"],
        "strict_reward": r.strict["reward"],
        "strict_details": r.strict["details"],
        "hacked": r.hacked,
    }


def main(argv: Sequence[str] | None = None) -> int:
    return run(_main, argv)


def _main(args_in: Sequence[str] | None) -> int:
    from course.lib.jsonl import dumps_line

    parser = make_parser(
        "python -m course.red_team",
        "Score the golden exploit suite (and your own exploits) under a hackable rubric and under "
        "the strict verifier, side by side. Exit 1 if the strict verifier rewards any exploit.",
        "  python -m course.red_team --rubric last_number\n"
        "  python -m course.red_team --rubric lenient_int --exploits my_exploits.jsonl\n"
        "  python -m course.red_team --list                 # rubric names and their loopholes",
    )
    parser.add_argument("--rubric", help=f"the rubric to red-team: {', '.join(RUBRICS)}")
    parser.add_argument("--exploits", metavar="FILE", help="your exploit file (JSONL, golden-suite shape)")
    parser.add_argument("--golden", metavar="FILE", default=None, help="the golden exploit suite (default: bundled)")
    parser.add_argument("--no-golden", action="store_true", help="score only the --exploits file")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    parser.add_argument("--list", action="store_true", help="list the rubrics and their loopholes")
    args = parser.parse_args(args_in)

    if args.list:
        width = max(len(n) for n in RUBRICS)
        for name in RUBRICS:
            print(f"{name:<{width}}  {RUBRICS[name].loophole}")
        return 0
    if args.rubric is None:
        raise CourseError(f"--rubric is required; choose one of: {', '.join(RUBRICS)}")
    get_rubric(args.rubric)  # fail on a bad name before reading anything

    exploits: list[Exploit] = []
    if not args.no_golden:
        golden = Path(args.golden) if args.golden else GOLDEN_EXPLOITS
        if not golden.exists():  # a directory or FIFO is refused by the reader, by name
            raise CourseError(f"{golden}: golden exploit suite not found (pass --golden FILE or --no-golden)")
        exploits += load_exploits(golden, "golden", require_code=True)
    if args.exploits:
        exploits += load_exploits(args.exploits, str(args.exploits))
    if not exploits:
        raise CourseError("nothing to score: --no-golden needs --exploits FILE")

    rows = red_team(exploits, args.rubric)
    summary = summarise(rows, args.rubric)
    if args.json:
        print(dumps_line({**summary, "rows": [_row_json(r) for r in rows]}))
    else:
        print(format_table(rows, summary))
    return 1 if summary["strict_rewarded"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
