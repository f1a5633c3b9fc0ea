"""Sample the tiny LM on a dataset and write rollouts the rest of the course can read.

With ``--n 1`` the output is a frozen-rollouts file (one completion per item,
``course.eval`` scores it); with ``--n 2`` or more it is a selection pack (n
samples per item, ``course.selection_demo`` reads it). Every line records the
policy (``tinylm:<first 12 hex of the checkpoint's sha256>``) and the sampling
settings, so ``course.gate`` can check that two runs differ only in the policy.
Each completion also records ``truncated`` (true when it hit ``--max-tokens``
without the end-of-sequence token), an extra field the readers ignore.

Run it (pi0 unless --checkpoint names another policy)::

    python -m course.tinylm.sample --dataset data/datasets/math_dev.jsonl --n 1 \\
        --temperature 1.0 --seed 0 --out runs/pi0_dev.jsonl
    python -m course.eval --dataset data/datasets/math_dev.jsonl --completions runs/pi0_dev.jsonl

Same checkpoint + dataset + settings + seed => byte-identical output (on the same
machine and thread count). Sample j of item i is drawn from its own random
stream seeded by (seed, item id, j), so sample 0 of an ``--n 8`` pack is the same
draw as the ``--n 1`` rollout.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Sequence

from course.cli import info, int_in, make_parser, nucleus_mass, positive_int, run, sampling_temperature, seed
from course.errors import CourseError
from course.lib.bundled import PI0_PATH
from course.lib.extras import require
from course.lib.policy.progress import ProgressLine
from course.lib.records.formats import read_dataset
from course.lib.records.jsonl import dumps_line, refuse_existing
from course.lib.records.temporaries import write_text_atomic
from course.lib.visible import visible
from course.tinylm import MAX_TOKENS_LIMIT

# More threads than a laptop has only oversubscribes the CPU (--threads 100000 had not finished a 3-item sample
# after 120 s).
THREADS = int_in(1, 64)


def build_parser():
    p = make_parser(
        "python -m course.tinylm.sample",
        "Sample completions from the tiny LM (pi0 by default) into frozen-rollouts (n=1) or selection-pack (n>1)"
        " JSONL.",
        "  python -m course.tinylm.sample --dataset data/datasets/math_dev.jsonl --n 1 --temperature 1.0 \\\n"
        "      --seed 0 --out runs/pi0_dev.jsonl\n"
        "  python -m course.tinylm.sample --dataset data/datasets/math_holdout.jsonl --n 8 --seed 0 \\\n"
        "      --checkpoint runs/rl_001/final.pt --out runs/final_holdout_pack.jsonl",
    )
    p.add_argument("--dataset", required=True, help="dataset JSONL (id, prompt, expected_answer)")
    p.add_argument("--out", required=True, help="output JSONL file")
    p.add_argument("--n", type=int_in(1, 1024), default=1,
                   help="samples per item, at most 1024 (sampled together): 1 = frozen rollouts, >1 = selection pack "
                        "(default 1)")
    p.add_argument("--temperature", type=sampling_temperature, default=1.0,
                   help="softmax temperature, 0 = greedy or in [0.001, 100] (default 1.0)")
    p.add_argument("--top-p", type=nucleus_mass, default=1.0,
                   help="nucleus sampling mass in (0, 1], 1.0 = off (default 1.0)")
    p.add_argument("--seed", type=seed, default=0, help="sampling seed, recorded in every line (default 0)")
    p.add_argument("--max-tokens", type=positive_int, default=32,
                   help="completion length limit in tokens = characters (default 32)")
    p.add_argument("--checkpoint", default=None, help="weights file (default: the shipped pi0, data/tinylm/pi0.pt)")
    p.add_argument("--threads", type=THREADS, default=2,
                   help="PyTorch intra-op threads (default 2; part of reproducibility)")
    p.add_argument("--force", action="store_true", help="overwrite an existing --out")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    return run(_main, argv)


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    require("lm", "the tiny LM")  # the one rule for a missing extra: one line, exit 2, before any work
    if args.n < 1:
        raise CourseError(f"--n must be at least 1, got {args.n}")
    if args.temperature < 0:
        raise CourseError(f"--temperature must be >= 0, got {args.temperature}")
    if not 0 < args.top_p <= 1:
        raise CourseError(f"--top-p must be in (0, 1], got {args.top_p}")
    if not 1 <= args.max_tokens <= MAX_TOKENS_LIMIT:
        raise CourseError(f"--max-tokens must be between 1 and {MAX_TOKENS_LIMIT}, got {args.max_tokens}")
    out = Path(args.out)
    # a FIFO, a device or a directory is refused here, before any sampling
    refuse_existing(out, args.force, inputs=(args.dataset, args.checkpoint))
    out.parent.mkdir(parents=True, exist_ok=True)  # a bad --out fails here, before minutes of sampling

    items = read_dataset(args.dataset)  # validated: bad input stops here, before anything is written

    # torch-dependent imports stay here, not at the top: --help works without the lm extra
    from course.lib.policy.sampling import set_threads
    from course.tinylm.model import load_checkpoint
    from course.tinylm.policy import sample_records

    threads = set_threads(args.threads)
    model, ck = load_checkpoint(args.checkpoint or PI0_PATH)
    t0 = time.time()
    progress = ProgressLine("sampled items", len(items))
    records, n_truncated = sample_records(
        model,
        ck["policy"],
        [(it.id, it.prompt) for it in items],
        n=args.n,
        seed=args.seed,
        temperature=args.temperature,
        top_p=args.top_p,
        max_tokens=args.max_tokens,
        progress=progress.update,
    )
    progress.clear()
    room = model.cfg.block_size - args.max_tokens - 2
    cropped = sum(len(it.prompt) > room for it in items)
    if cropped:
        info(f"note: {cropped} prompts are longer than the {room} characters the context leaves; "
             "their beginnings were cropped")
    write_text_atomic(out, "".join(dumps_line(r) + "\n" for r in records))
    total = len(items) * args.n
    info(
        f"{ck['policy']}: {total} completions for {len(items)} items in {time.time() - t0:.1f}s "
        f"({threads} threads); {n_truncated} truncated at {args.max_tokens} tokens without <eos>"
    )
    print(f"wrote {visible(str(out))} ({'frozen rollouts' if args.n == 1 else f'selection pack, n={args.n}'}, "
          f"policy {ck['policy']})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
