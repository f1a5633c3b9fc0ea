"""Distribution shift: what pi0's frozen rollouts say, beside what the trained policy actually does now.

Loops A and B can live on frozen rollouts; Loop C cannot. Once the policy has
learned, the completions it produces are no longer the ones in the snapshot:
some failure modes vanish, others appear that the frozen file never contained.
This report scores both sides with the strict verifier and puts the error-code
distributions next to each other (counts and shares), and names the codes that
occur only in the fresh samples (the snapshot's blind spot).

The left side is ``data/tinylm/frozen_pi0_dev.jsonl`` (pi0 on math_dev, written
by ``course.tinylm.sample`` with the seed recorded in its lines); the right side
is sampled now from the trained checkpoint with the *same* sampling settings.

Run it on a finished ``course.tinylm.rl`` run (``course.tinylm.rl`` also writes it as shift.md)::

    python -m course.tinylm.shift --run runs/rl_strict
    python -m course.tinylm.shift --checkpoint runs/rl_goodhart/final.pt --out runs/shift_goodhart.md
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Sequence

from course.cli import int_in, make_parser, run, seed
from course.errors import CourseError
from course.lib.bundled import FROZEN_PI0_DEV
from course.lib.extras import require
from course.lib.records.jsonl import refuse_existing
from course.lib.records.temporaries import write_text_atomic

# More threads than a laptop has only oversubscribes the CPU (--threads 100000 had not finished a 3-item sample
# after 120 s).
THREADS = int_in(1, 64)



def main(argv: Sequence[str] | None = None) -> int:
    return run(_main, argv)


def _main(argv: Sequence[str] | None) -> int:
    p = make_parser(
        "python -m course.tinylm.shift",
        "Error codes of pi0's frozen dev rollouts beside fresh samples of a trained checkpoint"
        " (the distribution-shift report).",
        "  python -m course.tinylm.shift --run runs/rl_strict\n"
        "  python -m course.tinylm.shift --checkpoint runs/rl_goodhart/final.pt --out runs/shift_goodhart.md",
    )
    p.add_argument("--run", default=None, help="a course.tinylm.rl run directory (uses its final.pt)")
    p.add_argument("--checkpoint", default=None, help="a checkpoint to compare instead of --run")
    p.add_argument("--frozen", default=str(FROZEN_PI0_DEV),
                   help="frozen pi0 rollouts (default: the shipped data/tinylm/frozen_pi0_dev.jsonl)")
    p.add_argument("--seed", type=seed, default=None,
                   help="sampling seed for the fresh samples (default: the frozen file's seed)")
    p.add_argument("--out", default=None, help="also write the markdown table to this file")
    p.add_argument("--threads", type=THREADS, default=2, help="PyTorch threads (default 2)")
    args = p.parse_args(argv)
    require("lm", "the tiny LM")  # the one rule for a missing extra: one line, exit 2, before any work
    if (args.run is None) == (args.checkpoint is None):
        raise CourseError("pass exactly one of --run or --checkpoint")
    checkpoint = Path(args.checkpoint) if args.checkpoint else Path(args.run) / "final.pt"
    if args.out:
        # replaced if it is a file; a FIFO or a device is refused before sampling
        refuse_existing(args.out, force=True, inputs=(args.run, args.checkpoint, args.frozen))
    # torch-dependent imports stay here, not at the top: --help works without the lm extra
    from course.lib.evaluation.distribution_shift import shift_report
    from course.lib.policy.sampling import set_threads
    from course.tinylm.model import load_checkpoint
    from course.tinylm.policy import sample_items

    set_threads(args.threads)
    model, ck = load_checkpoint(checkpoint)
    report = shift_report(functools.partial(sample_items, model), ck["policy"], Path(args.frozen), args.seed)
    print(report["markdown"], end="")
    if args.out:
        write_text_atomic(args.out, report["markdown"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
