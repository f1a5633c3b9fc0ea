"""Turn outside model outputs into a frozen-rollouts file that course.eval and course.gate accept.

A frozen-rollouts line is ``{"id", "completion", "policy", "sampling"}`` (docs/formats.md):
the policy and sampling are part of the measurement, so this tool never invents them.
Three sources:

  * ``--format plain``: ``{"id", "completion"}`` JSONL, what most tools write. It records
    neither model nor settings, so ``--policy NAME`` and ``--sampling JSON`` are required.
  * ``--format lm-eval``: lm-evaluation-harness ``--log_samples`` output (``samples_<task>_*.jsonl``).
    The completion is the raw generation (``resps[0][0]``; ``filtered_resps`` are the harness's
    regex-extracted answers, which would hide exactly the format errors the strict scorer
    measures). Sampling = the ``gen_kwargs`` each line records (plus the seeds from
    ``--results results_*.json``); policy = the results file's ``model`` and ``model_args``
    (or ``--policy``). The item id comes from the document's ``id`` field: a log of a task
    over another dataset (GSM8K's documents have none) is refused at its ``path:line``.
  * ``--format inspect``: an inspect_ai eval log (``.eval`` or ``.json``, or a directory
    holding exactly one), read with ``inspect_ai.log.read_eval_log``. Policy = the log's
    model; sampling = its generate config (temperature, top_p, max_tokens, seed, ...).

Every source also says what the policy was shown, recorded on every line as ``prompt_template``
(a Locked Room field, so ``course.gate`` refuses to compare runs whose prompts differ): an
lm-eval log's rendered requests (``arguments``: with ``--apply_chat_template`` they hold the chat
template's output) and an inspect log's messages before the reply are hashed as
``{"name": "rendered", "sha256": ...}``; a plain file's ``prompt`` field (the text or messages sent,
on every line) likewise, or ``--prompt-template NAME`` states a course template.

Several samples per item (lm-eval ``repeats > 1``: every generation of a document; inspect
``epochs > 1``: every epoch of a sample, epoch 1 first) are a selection pack, written with
``--pack`` (docs/formats.md): ``course.selection_demo`` and ``course.compare_policies`` then
give Loop B's best-of-N and pass@k on an outside model's samples. Without ``--pack`` they are
refused: a frozen-rollouts file holds one completion per item.

With ``--dataset`` every id must be an item of it, and for lm-eval and inspect logs the
recorded target must equal the item's ``expected_answer`` (else: a log of another task).
Output is written atomically, in dataset order when ``--dataset`` is given (source order
otherwise), and an existing file is only replaced with ``--force``.

The readers and checks live in ``course.lib.external.rollout_readers``; this tool parses the
options, writes the file and prints. Run it::

    python -m course.import_completions --format plain outputs.jsonl --policy my-model \\
        --sampling '{"temperature": 0}' --out runs/mine.jsonl
    python -m course.import_completions --format lm-eval samples_course_math_2026.jsonl \\
        --results results_2026.json --dataset data/datasets/math_dev.jsonl --out runs/lmeval.jsonl
    python -m course.import_completions --format inspect runs/inspect_logs \\
        --dataset data/datasets/math_dev.jsonl --out runs/inspect_dev.jsonl
    python -m course.import_completions --format inspect runs/inspect_epochs --pack \\
        --dataset data/datasets/math_dev.jsonl --out runs/inspect_pack.jsonl
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from course.cli import EXIT_OK, make_parser, run
from course.lib.external.rollout_readers import import_completions, import_summary, render, render_pack
from course.lib.records.jsonl import refuse_existing
from course.lib.records.temporaries import write_text_atomic


def build_parser():
    p = make_parser(
        "python -m course.import_completions",
        "Convert outside model outputs (plain id/completion JSONL, lm-evaluation-harness --log_samples, "
        "inspect_ai eval logs) into a frozen-rollouts file, with the policy and sampling the source recorded.",
        "  # plain {id, completion} lines: the model, its settings and its prompt are stated\n"
        "  python -m course.import_completions --format plain tests/data/bridges/plain_completions.jsonl "
        "--policy my-model --sampling '{\"temperature\": 0}' --prompt-template plain --out runs/plain.jsonl\n"
        "  python -m course.eval --dataset data/datasets/math_dev.jsonl --completions runs/plain.jsonl "
        "--allow-missing\n"
        "  # lm-eval --log_samples (+ the run's results_*.json for the model and seeds)\n"
        "  python -m course.import_completions --format lm-eval tests/data/bridges/lmeval_samples_course_math.jsonl "
        "--results tests/data/bridges/lmeval_results_course_math.json --dataset data/datasets/math_dev.jsonl "
        "--out runs/lmeval_dev.jsonl\n"
        "  # an inspect log (a file, or a folder holding one), made offline by the replay\n"
        "  python -m course.integrations.inspect_ai --completions data/rollouts/frozen_rollouts_dev.jsonl "
        "--log-dir runs/inspect_logs\n"
        "  python -m course.import_completions --format inspect runs/inspect_logs "
        "--dataset data/datasets/math_dev.jsonl --out runs/inspect_dev.jsonl\n"
        "  # several samples per item (inspect --epochs, lm-eval repeats) as a selection pack\n"
        "  python -m course.integrations.inspect_ai --pack data/rollouts/selection_pack_dev.jsonl "
        "--log-dir runs/inspect_x8\n"
        "  python -m course.import_completions --format inspect runs/inspect_x8 --pack "
        "--dataset data/datasets/math_dev.jsonl --out runs/inspect_pack_dev.jsonl\n"
        "  python -m course.compare_policies --dataset data/datasets/math_dev.jsonl "
        "inspect=runs/inspect_pack_dev.jsonl",
    )
    p.add_argument("source",
                   help="the outputs: a JSONL file, an lm-eval samples_*.jsonl, or an inspect log (file or directory)")
    p.add_argument("--format", required=True, choices=("plain", "lm-eval", "inspect"))
    p.add_argument("--out", required=True, help="the frozen-rollouts file to write")
    p.add_argument("--policy", default=None, help="policy name (required for plain; overrides what a log records)")
    p.add_argument("--sampling", default=None, help="sampling settings as a JSON object (required for plain)")
    p.add_argument("--prompt-template", default=None, metavar="NAME",
                   help="plain: the course template the policy was shown (plain = the dataset prompt as-is, fewshot, "
                        "gsm8k_final); lm-eval and inspect logs record their prompts")
    p.add_argument("--results", default=None, help="lm-eval: the results_*.json of the same run (model, seeds)")
    p.add_argument("--id-field", default="id", help="lm-eval: the document field holding the item id (default id)")
    p.add_argument("--dataset", default=None,
                   help="check ids and targets against this course dataset and write in its order")
    p.add_argument("--pack", action="store_true",
                   help="write a selection pack: every sample of an item (lm-eval repeats, inspect epochs) in order")
    p.add_argument("--force", action="store_true", help="replace an existing output file")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    return run(_main, argv)


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    out = Path(args.out)
    refuse_existing(out, args.force, inputs=(args.source, args.results, args.dataset))
    imported, rows = import_completions(
        args.format, args.source, policy=args.policy, sampling=args.sampling, results=args.results,
        id_field=args.id_field, dataset=args.dataset, pack=args.pack, prompt_template=args.prompt_template,
    )
    write = render_pack if args.pack else render
    # all checked first: nothing half-written
    write_text_atomic(out, write(rows, imported.policy, imported.sampling, imported.prompt_template))
    print(import_summary(len(rows), out, imported, sum(len(r.samples) for r in rows) if args.pack else None))
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
