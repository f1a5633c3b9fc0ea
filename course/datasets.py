"""Bring outside question/answer data into the course's dataset format.

The course measures on files of ``{"id", "prompt", "expected_answer"}`` lines
(docs/formats.md). Practitioners hold their data elsewhere: the GSM8K release
files (``question``, and an ``answer`` that is a worked solution ending in
``#### <n>``), or a Hugging Face ``datasets`` dataset. This tool converts them,
and refuses to guess:

  * ids are stable: ``<source>-<row>`` (row 1-based, five digits at least), so the
    same file always gives the same ids, and the same bytes;
  * the answer must be an integer (thousands commas as in ``1,234`` are read);
    an item whose answer is not (``3.5``, ``1/2``, ``x``) is an error at its
    ``path:line`` — or, with ``--skip-non-integer``, left out, counted and listed
    (never dropped silently);
  * a GSM8K answer without ``####``, a missing column or an unreadable line is
    ``path:line: what is wrong`` and exit 2; nothing is written, and an existing
    output file is only replaced with ``--force`` (the write is atomic).

The prompt is the question followed by the course's instruction
(`` Output exactly one line: Final: <int>``), the line the strict scorer rewards.
The sha256 printed at the end is the dataset fingerprint ``course.eval`` records
and ``course.gate`` locks.

The readers and the conversion live in ``course.lib.external.dataset_readers``; this tool
parses the options, writes the file and prints. Run it::

    python -m course.datasets import --format gsm8k gsm8k_test.jsonl --out runs/gsm8k_test.jsonl
    python -m course.datasets import --format hf data.parquet --question-col problem --answer-col solution \\
        --out runs/ds.jsonl
    python -m course.datasets import --format reasoning-gym basic_arithmetic --seed 0 --size 200 \\
        --out runs/rg_arith.jsonl

With ``--format reasoning-gym`` the source is the name of one of reasoning-gym's generators with
integer answers (``course.lib.external.procedural``): seeded (``--seed``, ``--size``,
``--rg-config``), offline, and recorded in ``OUT.manifest.json`` beside the dataset (the library's
version, the generator, seed, size and settings, and the dataset fingerprint).
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Sequence

from course.cli import EXIT_OK, info, make_parser, run
from course.errors import CourseError
from course.lib.external.dataset_readers import (
    INSTRUCTION,
    convert,
    hf_rows,
    import_report,
    import_summary,
    jsonl_rows,
    render,
    skipped_notes,
)
from course.lib.external.procedural import generation, parse_config, reasoning_gym_rows
from course.lib.records.jsonl import refuse_existing
from course.lib.records.manifest import sha256_file
from course.lib.records.temporaries import write_text_atomic
from course.lib.visible import dumps_safe


# ---------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------
def build_parser():
    p = make_parser(
        "python -m course.datasets",
        "Import outside question/answer data (GSM8K release files, Hugging Face datasets, parquet, JSONL) "
        "into the course's dataset format, with stable ids and integer answers.",
        "  python -m course.datasets import --format gsm8k tests/data/bridges/gsm8k_sample.jsonl "
        "--out runs/gsm8k_sample.jsonl\n"
        "  python -m course.datasets import --format reasoning-gym basic_arithmetic --seed 0 --size 200 "
        "--out runs/rg_arith.jsonl\n"
        "  python -m course.eval --dataset runs/gsm8k_sample.jsonl --completions ROLLOUTS.jsonl",
    )
    sub = p.add_subparsers(dest="command", required=True)
    imp = sub.add_parser("import", help="convert one file or saved dataset")
    imp.add_argument("source", help="the file (GSM8K JSONL, parquet, JSONL) or save_to_disk directory; "
                                    "for reasoning-gym, the generator's name (basic_arithmetic, chain_sum, gcd, ...)")
    imp.add_argument("--format", required=True, choices=("gsm8k", "hf", "reasoning-gym"),
                     help="gsm8k: question/answer with '#### n'; hf: named columns; "
                          "reasoning-gym: a seeded generator")
    imp.add_argument("--seed", type=int, default=None, help="reasoning-gym: the generator's seed (default 0)")
    imp.add_argument("--size", type=int, default=None, help="reasoning-gym: how many items (default 100)")
    imp.add_argument("--rg-config", default=None, help="reasoning-gym: the generator's settings as a JSON object")
    imp.add_argument("--out", required=True, help="the dataset file to write")
    imp.add_argument("--question-col", default="question", help="column holding the question (default question)")
    imp.add_argument("--answer-col", default="answer", help="column holding the answer (default answer)")
    imp.add_argument("--answer-style", choices=("gsm8k", "plain"), default=None,
                     help="gsm8k: the answer is the text after '####'; plain: the whole value "
                          "(default: gsm8k for --format gsm8k, plain for hf)")
    imp.add_argument("--split", default=None, help="split of a saved DatasetDict (e.g. test)")
    imp.add_argument("--source-name", default=None, help="id prefix (default: the source's file name without suffix)")
    imp.add_argument("--no-instruction", action="store_true",
                     help="keep the question as the prompt, without the 'Final: <int>' instruction")
    imp.add_argument("--skip-non-integer", action="store_true",
                     help="leave out (and list) items whose answer is not an integer instead of failing")
    imp.add_argument("--force", action="store_true", help="replace an existing output file")
    imp.add_argument("--json", action="store_true", help="print the result as JSON")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    return run(_main, argv)


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    if args.format == "reasoning-gym":
        return _generated(args)
    for name in ("seed", "size", "rg_config"):
        if getattr(args, name) is not None:
            raise CourseError(f"--{name.replace('_', '-')}: only for --format reasoning-gym (a file is read as it is)")
    out = Path(args.out)
    refuse_existing(out, args.force, inputs=(args.source,))
    source = Path(args.source)
    if not source.exists():
        raise CourseError(f"{source}: no such file or directory")
    name = args.source_name or (source.name if source.is_dir() else source.stem)
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
        raise CourseError(f"--source-name {name!r}: use letters, digits, '_', '.', '-' (it becomes part of every id)")
    style = args.answer_style or ("gsm8k" if args.format == "gsm8k" else "plain")
    rows = (
        jsonl_rows(source) if args.format == "gsm8k"
        else hf_rows(source, args.split, (args.question_col, args.answer_col))
    )
    result = convert(
        rows, source=name, question_col=args.question_col, answer_col=args.answer_col, answer_style=style,
        skip_non_integer=args.skip_non_integer, instruction="" if args.no_instruction else INSTRUCTION,
    )
    if not result.items:
        raise CourseError(f"{source}: no item with an integer answer; nothing written")
    write_text_atomic(out, render(result.items))  # everything was checked first: no half-written file
    fingerprint = sha256_file(out)
    if args.json:
        print(dumps_safe(import_report(source, args.format, out, result, fingerprint), sort_keys=True, indent=2))
        return EXIT_OK
    for note in skipped_notes(result.skipped):
        info(note)
    print(import_summary(result, source, out, fingerprint))
    return EXIT_OK


def _generated(args) -> int:
    """``--format reasoning-gym``: a seeded generator's items, and how they were made beside them."""
    out = Path(args.out)
    record = out.with_name(out.name.removesuffix(".jsonl") + ".manifest.json")
    refuse_existing(out, args.force)
    refuse_existing(record, args.force)
    config = parse_config(args.rg_config)
    args.seed = 0 if args.seed is None else args.seed
    args.size = 100 if args.size is None else args.size
    result = convert(
        reasoning_gym_rows(args.source, args.seed, args.size, config), source=f"rg-{args.source}",
        question_col="question", answer_col="answer", answer_style=args.answer_style or "plain",
        skip_non_integer=args.skip_non_integer, instruction="" if args.no_instruction else INSTRUCTION,
    )
    if not result.items:
        raise CourseError(f"reasoning-gym {args.source}: no item with an integer answer; nothing written")
    text = render(result.items)
    fingerprint = hashlib.sha256(text.encode("utf-8")).hexdigest()  # what sha256_file gives for the written file
    report = {**import_report(Path(args.source), args.format, out, result, fingerprint),
              "source": f"reasoning-gym:{args.source}", "generation": generation(args.source, args.seed, args.size,
                                                                                 config)}
    write_text_atomic(out, text)
    write_text_atomic(record, dumps_safe(report, sort_keys=True, indent=2) + "\n")
    if args.json:
        print(dumps_safe(report, sort_keys=True, indent=2))
        return EXIT_OK
    for note in skipped_notes(result.skipped):
        info(note)
    print(import_summary(result, Path(f"reasoning-gym:{args.source}"), out, fingerprint))
    print(f"generation (seed {args.seed}, size {args.size}) recorded in {record}")
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
