"""Look inside a run: the most common outcome codes, and real examples of each, characters made visible.

Averages hide spec bugs and reward hacks; the examples do not. For each of the
top K codes this prints its count and share, then S items: id, prompt (read from
the dataset the manifest names, when that file is still the same), expected
answer, what the scorer extracted, its reason, and the completion with every
invisible or look-alike character escaped (course/lib/visible.py: ``⟨\\n⟩`` newline,
``⟨\\t⟩`` tab, ``⟨U+XXXX⟩`` anything outside printable ASCII, named underneath).
The completion sits between ⟦ and ⟧ so leading and trailing spaces show.
Everything else read from the run directory (its path, split, policy, ids,
error codes, reasons) is escaped the same way: a hand-edited manifest or result
cannot put a raw control or bidi character on the terminal.

    python -m course.inspect_run --run runs/demo_eval_clean --top-k 5 --show 2
    python -m course.inspect_run --run runs/demo_eval_clean --only-fails --top-k 5 --show 2
    python -m course.inspect_run --run runs/demo_eval_clean --code lookalike_minus --show 10
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Sequence

from course.cli import EXIT_OK, info, make_parser, run
from course.errors import CourseError
from course.lib.evaluation import Tally, ordered_codes, pass_rate_line, percent
from course.instrument.spec_v1 import ERROR_CODES
from course.lib.formats import RunDir, iter_results, read_dataset, read_run
from course.lib.jsonl import dumps_line
from course.lib.manifest import PROJECT_ROOT, sha256_file
from course.lib.visible import legend, visible

_FIELD_LIMIT = 200  # characters shown of any other field read from the run


def _shown(value: Any) -> str:
    """A value read from the run directory as safe terminal text (strings as they are, else as JSON)."""
    if isinstance(value, str):
        return visible(value, limit=_FIELD_LIMIT)
    return visible(dumps_line(value), limit=_FIELD_LIMIT)

COMPLETION_LIMIT = 600  # characters shown per completion; the rest is counted, not printed


def _dataset_path(run: RunDir) -> Path | None:
    recorded = run.manifest.get("dataset", {}).get("path") if isinstance(run.manifest.get("dataset"), dict) else None
    if not isinstance(recorded, str):
        return None
    path = Path(recorded)
    if path.is_absolute():
        return path
    for base in (PROJECT_ROOT, Path.cwd()):  # manifests name bundled files relative to the repo
        if (base / path).is_file():
            return base / path
    return None


def load_prompts(run: RunDir) -> tuple[dict[str, str], str | None]:
    """Prompts by id from the run's dataset, or ``({}, why not)`` when they cannot be trusted."""
    path = _dataset_path(run)
    if path is None or not path.is_file():
        return {}, "the dataset named in the manifest is not readable here; prompts not shown"
    expected_sha = run.manifest.get("dataset", {}).get("sha256")
    if sha256_file(path) != expected_sha:
        return {}, f"{visible(str(path))} has changed since the run (sha256 differs); prompts not shown"
    try:
        return {ex.id: ex.prompt for ex in read_dataset(path)}, None
    except CourseError as exc:
        return {}, f"the dataset could not be read ({exc}); prompts not shown"


def _field(label: str, value: Any) -> str:
    return f"   {label + ':':<12}{value}"


def render_example(result: dict[str, Any], prompt: str | None) -> list[str]:
    """The lines describing one item, completion made visible."""
    details = result["details"]
    lines = [f"-- {_shown(result['id'])}  (reward {_shown(result['reward'])})"]
    if prompt is not None:
        lines.append(_field("prompt", visible(prompt, limit=300)))
    expected = result.get("expected", details.get("expected"))
    extracted = details.get("extracted")
    lines.append(_field("expected", _shown(expected)))
    lines.append(_field("extracted", "nothing" if extracted is None else _shown(extracted)))
    lines.append(_field("reason", _shown(details.get("reason", ""))))
    completion = result.get("completion")
    if isinstance(completion, str):
        shown = visible(completion, break_lines=True, limit=COMPLETION_LIMIT).split("\n")
        lines.append(_field("completion", "⟦" + shown[0] + ("⟧" if len(shown) == 1 else "")))
        for i, more in enumerate(shown[1:], start=2):
            lines.append(" " * 15 + more + ("⟧" if i == len(shown) else ""))
        names = legend(completion[:COMPLETION_LIMIT])
        if names:
            lines.append(_field("characters", names[0]))
            lines += [" " * 15 + name for name in names[1:]]
    else:
        lines.append(_field("completion", "none" if completion is None else f"not text ({type(completion).__name__})"))
    return lines


def inspect(run: RunDir, *, only_fails: bool, top_k: int, show: int, code: str | None) -> list[str]:
    """The whole report as lines (pure apart from reading the run's results and dataset)."""
    tally = Tally(examples_per_code=0)
    for result in iter_results(run.results_path):
        tally.add(result)
    if code is not None and code not in tally.counts and code not in ERROR_CODES:
        present = ", ".join(_shown(c) for c in ordered_codes(tally.counts))
        raise CourseError(f"--code {_shown(code)}: not an error code of this scorer; codes in this run: {present}")
    summary = tally.summary()
    codes = [c for c in ordered_codes(tally.counts) if not (only_fails and c == "ok")]
    if code is not None:
        codes = [code] if code in tally.counts else []
    codes = codes[:top_k]

    m = run.manifest
    head = [
        f"Run: {visible(str(run.path))} ({_shown(run.tool)}, split {_shown(m.get('split') or 'unknown')}, "
        f"scorer {_shown(m.get('scorer_version', '?'))}, policy {_shown(m.get('policy', '?'))})",
        pass_rate_line(summary["passed"], summary["n"]) if summary["n"] else "No items in this run.",
    ]
    if code is not None and not codes:
        return head + [f"No item has error code {_shown(code)}."]
    if code is not None:
        head.append(f"Error code {_shown(code)}:")
    elif only_fails:
        head.append(f"Top {len(codes)} failure categories ({summary['failed']} of {summary['n']} items failed):")
    else:
        head.append(f"Top {len(codes)} outcome categories (all {summary['n']} items, 'ok' = passed):")
    width = max((len(_shown(c)) for c in codes), default=0)
    for c in codes:
        n = tally.counts[c]
        head.append(f"  {_shown(c):<{width}}  {n:>5}  {percent(n / summary['n']):>6}  {ERROR_CODES.get(c, '(unknown code)')}")

    if show <= 0 or not codes:
        return head
    # Second pass: the first `show` items of each chosen code, in dataset order.
    wanted = {c: [] for c in codes}  # type: dict[str, list[dict[str, Any]]]
    for result in iter_results(run.results_path):
        bucket = wanted.get(result["details"]["error_code"])
        if bucket is not None and len(bucket) < show:
            bucket.append(result)
    prompts, why_not = load_prompts(run)
    out = head
    if why_not:
        out.append(f"(note: {why_not})")
    for c in codes:
        n = tally.counts[c]
        out += ["", f"== {_shown(c)}: {n} of {summary['n']} items ({percent(n / summary['n'])}) — {ERROR_CODES.get(c, '')}"]
        for result in wanted[c]:
            out += render_example(result, prompts.get(result["id"]) if prompts else None)
    return out


EXAMPLE = """\
  python -m course.inspect_run --run runs/demo_eval_clean --top-k 5 --show 2
  python -m course.inspect_run --run runs/demo_eval_clean --only-fails --top-k 5 --show 2
  python -m course.inspect_run --run runs/demo_eval_clean --code multiple_lines --show 5"""


def _positive(text: str) -> int:
    import argparse

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected 0 or more, got {value}")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    def _main(args_in: Sequence[str] | None) -> int:
        parser = make_parser(
            "python -m course.inspect_run",
            "Show the most common outcome codes of a run and a few real examples of each, with invisible "
            "and look-alike characters escaped (⟨\\n⟩ newline, ⟨\\t⟩ tab, ⟨U+XXXX⟩ any non-ASCII character).",
            EXAMPLE,
        )
        parser.add_argument("--run", required=True, help="a run directory written by course.eval (or selection_demo)")
        parser.add_argument("--only-fails", action="store_true", help="leave out the 'ok' category")
        parser.add_argument("--top-k", type=_positive, default=5, help="how many categories (default 5)")
        parser.add_argument("--show", type=_positive, default=2, help="examples per category (default 2)")
        parser.add_argument("--code", help="show only this error code (e.g. lookalike_minus)")
        args = parser.parse_args(args_in)
        if hasattr(sys.stdout, "reconfigure"):  # a terminal that cannot show ⟨ still gets a readable escape
            sys.stdout.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
        run_dir = read_run(args.run)
        recorded = run_dir.manifest.get("results_sha256")
        if recorded is not None and sha256_file(run_dir.results_path) != recorded:
            info(f"warning: {visible(str(run_dir.results_path))} does not match the sha256 in its manifest (edited after the run?)")
        lines = inspect(run_dir, only_fails=args.only_fails, top_k=args.top_k, show=args.show, code=args.code)
        print("\n".join(lines))
        return EXIT_OK

    return run(_main, argv)


if __name__ == "__main__":
    raise SystemExit(main())
