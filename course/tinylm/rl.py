"""Loop C for real on the tiny LM, on CPU: REINFORCE with a group baseline and a KL leash to pi0.

The loop itself is ``course.lib.learning.rl_loop`` (read in order: ``rl_config``, ``rl_objective``,
``rl_loop``, ``rl_run``); the same lines train the real LLM (``python -m course.llm.rl``). This
tool loads the tiny LM's pi0 (and the policy to train, pi0 or --init) as a
``course.tinylm.policy.TinyLMPolicy``, runs the loop, and writes the run: each
step draws P fresh training problems (never a dev or holdout prompt), samples G
completions per problem from the current policy, scores them with the chosen
rubric, and updates every weight of the model. A fixed math_dev slice is
measured every few steps with the strict scorer; at the end pi0 and the final
policy are sampled on math_holdout with identical settings, scored by
``course.eval``'s pipeline and compared by the gate's logic. The headline is
strict pass@1 over --holdout-samples draws per holdout item.

Run it (defaults reach the course's target: a >= 15 point holdout lift in a few minutes)::

    python -m course.tinylm.rl --rubric strict --seed 0 --outdir runs/rl_strict
    python -m course.tinylm.rl --rubric contains_answer --beta 0 --lr 2e-4 --steps 150 --seed 0 \\
        --outdir runs/rl_goodhart   # Goodhart

The run directory: rl_log.jsonl (one line per step; identical for the same seed
on the same machine), curves.csv / curves.png, final.pt (+ checkpoints/),
eval_pi0_holdout/ and eval_final_holdout/ (course.eval runs), gate.txt,
holdout_*.jsonl (the rollouts), shift.md (error codes of frozen pi0 rollouts
beside the trained policy's), summary.json, manifest.json. All of it is written
into a temporary directory that appears under its name in one rename at the end.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from course.cli import add_run_options, add_settings_flags, info, make_parser, run, settings_from_args
from course.lib.bundled import PI0_PATH
from course.lib.extras import require
from course.lib.learning import rl_loop, rl_run
from course.lib.learning.goodhart import goodhart_alarm  # noqa: F401  (the alarm: tested through this tool's name)
from course.lib.learning.rl_config import TINYLM, RLConfig
from course.lib.learning.rl_loop import Trained
from course.lib.learning.rl_objective import policy_loss  # noqa: F401  (the loss: tested through this tool's name)
from course.lib.policy.progress import ProgressLine
from course.lib.records.manifest import input_fingerprint
from course.lib.records.runs import write_manifest
from course.lib.reporting.rl_report import report_lines
from course.tinylm import MAX_TOKENS_LIMIT

if TYPE_CHECKING:
    from course.tinylm.policy import TinyLMPolicy

# PyTorch, and the tiny-LM modules built on it (model, policy), are
# imported inside the functions that use them, never here: `--help` and the one-line
# missing-extra message (course.lib.extras) must work on an install without the lm extra.

TOOL = rl_run.RLTool("course.tinylm.rl", "rl",
                     "REINFORCE with a per-prompt group baseline and a KL penalty to pi0 (course.tinylm.rl)")


# ---------------------------------------------------------------------------
# The command: settings in, one run directory out (written in a temp dir, one rename)
# ---------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    p = make_parser(
        "python -m course.tinylm.rl",
        "Train the tiny LM with REINFORCE (group baseline, KL penalty to pi0) on fresh on-policy samples; "
        "evaluate pi0 and the result on math_holdout through course.eval and gate them.",
        "  python -m course.tinylm.rl --rubric strict --seed 0 --outdir runs/rl_strict\n"
        "  python -m course.tinylm.rl --rubric contains_answer --beta 0 --lr 2e-4 --steps 150 --seed 0"
        " --outdir runs/rl_goodhart\n"
        "  python -m course.gate --baseline runs/rl_strict/eval_pi0_holdout"
        " --candidate runs/rl_strict/eval_final_holdout",
    )
    add_settings_flags(p, TINYLM, after={"seed": run_options})
    return p


def run_options(p: Any) -> None:
    """The run's name, the tiny LM's own options (which pi0, where training starts), and --no-holdout."""
    add_run_options(p, "run directory (default: the next free runs/rl_NNN)")
    p.add_argument("--pi0", default=None, help="reference policy checkpoint (default: the shipped data/tinylm/pi0.pt)")
    p.add_argument("--init", default=None,
                   help="start from this checkpoint instead of pi0 (the KL reference stays pi0)")
    p.add_argument("--no-holdout", action="store_true",
                   help="skip the final holdout evaluation and gate (used by the beta sweep)")


def settings(args: Any) -> RLConfig:
    """The run's settings from its parsed arguments, checked (CourseError: one line, exit 2)."""
    s = settings_from_args(TINYLM, args)
    s.check_max_tokens(MAX_TOKENS_LIMIT)
    return s


def main(argv: Sequence[str] | None = None) -> int:
    return run(_main, argv)


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    require("lm", "the tiny LM")  # the one rule for a missing extra: one line, exit 2, before any work
    s = settings(args)
    t_start = time.time()
    with rl_run.run_directory(TOOL, args.outdir, force=args.force, inputs=(args.init, args.pi0), say=info) as (
            tmp, final):
        trained = train(s, args, tmp)
        summary = write_run(s, args, tmp, final, trained, argv, t_start)
    for line in report_lines(summary, final):  # the result on stdout, each figure once (stderr has the progress)
        print(line)
    return 0


def load_policy(s: RLConfig, args: Any) -> TinyLMPolicy:
    """pi0 (the frozen KL reference) and the policy to train (pi0, or --init), with the run's
    threads and seed fixed first (part of reproducibility)."""
    import torch  # torch-dependent imports: see the note at the top of the module

    from course.lib.policy.sampling import set_threads
    from course.tinylm.model import load_checkpoint
    from course.tinylm.policy import TinyLMPolicy

    threads = set_threads(s.threads)
    torch.manual_seed(s.seed)  # nothing in the loop draws from torch's RNG; set anyway, recorded
    torch.use_deterministic_algorithms(True)
    pi0_path = Path(args.pi0) if args.pi0 else PI0_PATH
    ref, ref_info = load_checkpoint(pi0_path)  # pi0: the KL reference, frozen
    for p in ref.parameters():
        p.requires_grad_(False)
    model, init_info = load_checkpoint(args.init or pi0_path)  # the policy we train, starts at pi0
    model.train()  # (no dropout in this model: train/eval modes compute the same function)
    return TinyLMPolicy(model, ref, init_info, ref_info, threads)


def train(s: RLConfig, args: Any, run_dir: Path, label: str = "rl step") -> Trained:
    """The training run (course.lib.learning.rl_loop.train on the tiny LM): rl_log.jsonl, checkpoints/ and final.pt in
    ``run_dir``."""
    return rl_loop.train(s, load_policy(s, args), run_dir, progress=ProgressLine, say=info, label=label)


def write_run(s: RLConfig, args: Any, tmp: Path, final: Path, trained: Trained, argv: Sequence[str] | None,
              t_start: float) -> dict[str, Any]:
    """Everything after training, into the temporary run directory ``tmp`` (which becomes ``final``):
    curves, the distribution-shift table, the holdout comparison and its gate, summary.json and, last,
    manifest.json. Returns the summary."""
    summary = rl_run.write_run(s, tmp, final, trained, argv, t_start, holdout=not args.no_holdout,
                               progress=ProgressLine, say=info, tool=TOOL.name)
    pi0_path = Path(args.pi0) if args.pi0 else PI0_PATH
    write_manifest(tmp, rl_run.manifest(
        TOOL, s, trained, summary, argv, settings_extra={"init": args.init, "pi0": args.pi0},
        fields={"pi0": {**input_fingerprint(pi0_path), "policy": trained.policy.pi0_name}}))
    return summary


if __name__ == "__main__":
    raise SystemExit(main())
