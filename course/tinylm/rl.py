"""Loop C for real on the tiny LM, on CPU: REINFORCE with a group baseline and a KL leash to pi0.

The loop itself is ``course.lib.learning.rl_loop`` (its docstring has the algorithm and
the loss); the same lines train the real LLM (``python -m course.llm.rl``). This
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

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from course.cli import OBJECTIVE, add_loop_options, check_args, info, make_parser, run
from course.instrument.rubric_registry import get_rubric
from course.lib.bundled import DEFAULT_DATASETS, PI0_PATH
from course.lib.extras import require
from course.lib.learning import rl_loop
from course.lib.learning.rl_loop import LoopSettings, Trained, goodhart_alarm, policy_loss  # noqa: F401  (the loss and the alarm: tested through this tool's name)
from course.lib.policy.progress import ProgressLine
from course.lib.policy.report import report_lines
from course.lib.records.manifest import environment, input_fingerprint
from course.lib.records.runs import atomic_run_dir, resolve_outdir
from course.lib.visible import visible
from course.tinylm import MAX_TOKENS_LIMIT

if TYPE_CHECKING:
    from course.tinylm.policy import TinyLMPolicy

# PyTorch, and the tiny-LM modules built on it (model, policy), are
# imported inside the functions that use them, never here: `--help` and the one-line
# missing-extra message (course.lib.extras) must work on an install without the lm extra.

DEFAULTS: dict[str, Any] = {
    "beta": 0.05,
    "steps": 60,
    "prompts_per_step": 8,
    "group_size": 8,
    "lr": 3e-4,
    "grad_clip": 1.0,
    "temperature": 1.0,
    "max_tokens": 32,
    "eval_every": 5,
    "eval_samples": 2,
    "slice_items": 100,
    "holdout_samples": 8,
    "eval_seed": 0,
    "save_every": 20,
    "gate_min_delta": 0.10,
    "threads": 2,
}


# ---------------------------------------------------------------------------
# The command: settings in, one run directory out (written in a temp dir, one rename)
# ---------------------------------------------------------------------------
def build_parser():  # type: ignore[no-untyped-def]
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
    add_loop_options(p, DEFAULTS, policy_options)
    return p


def policy_options(p: Any) -> None:
    """The tiny LM's own options: which pi0, and where training starts."""
    p.add_argument("--pi0", default=None, help="reference policy checkpoint (default: the shipped data/tinylm/pi0.pt)")
    p.add_argument("--init", default=None,
                   help="start from this checkpoint instead of pi0 (the KL reference stays pi0)")


def main(argv: Sequence[str] | None = None) -> int:
    return run(_main, argv)


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    require("lm", "the tiny LM")  # the one rule for a missing extra: one line, exit 2, before any work
    check_args(args, MAX_TOKENS_LIMIT)
    get_rubric(args.rubric)  # unknown name: exit 2 before any work
    t_start = time.time()
    final = resolve_outdir(args.outdir, force=args.force, prefix="rl", tool="course.tinylm.rl",
                           inputs=(args.init, args.pi0))
    info(f"run directory: {visible(str(final))}")
    with atomic_run_dir(final, force=args.force, prefix="rl") as tmp:
        trained = train(args, tmp)
        summary, _ = write_run(args, tmp, final, trained, argv, t_start)
    print_report(summary, final)
    return 0


def load_policy(args: Any) -> TinyLMPolicy:
    """pi0 (the frozen KL reference) and the policy to train (pi0, or --init), with the run's
    threads and seed fixed first (part of reproducibility)."""
    import torch  # torch-dependent imports: see the note at the top of the module

    from course.lib.policy.sampling import set_threads
    from course.tinylm.model import load_checkpoint
    from course.tinylm.policy import TinyLMPolicy

    threads = set_threads(args.threads)
    torch.manual_seed(args.seed)  # nothing in the loop draws from torch's RNG; set anyway, recorded
    torch.use_deterministic_algorithms(True)
    pi0_path = Path(args.pi0) if args.pi0 else PI0_PATH
    ref, ref_info = load_checkpoint(pi0_path)  # pi0: the KL reference, frozen
    for p in ref.parameters():
        p.requires_grad_(False)
    model, init_info = load_checkpoint(args.init or pi0_path)  # the policy we train, starts at pi0
    model.train()  # (no dropout in this model: train/eval modes compute the same function)
    return TinyLMPolicy(model, ref, init_info, ref_info, threads)


def train(args: Any, run_dir: Path, label: str = "rl step") -> Trained:
    """The training run (course.lib.learning.rl_loop.train on the tiny LM): rl_log.jsonl, checkpoints/ and final.pt in
    ``run_dir``."""
    policy = load_policy(args)
    return rl_loop.train(LoopSettings.from_args(args), policy, run_dir, progress=ProgressLine, say=info, label=label)


def write_run(args: Any, tmp: Path, final: Path, trained: Trained, argv: Sequence[str] | None,
              t_start: float) -> tuple[dict[str, Any], dict[str, Any]]:
    """Everything after training, into the temporary run directory ``tmp`` (which becomes ``final``):
    curves, the distribution-shift table, the holdout comparison and its gate, summary.json, manifest.json."""
    return rl_loop.write_run(LoopSettings.from_args(args), tmp, final, trained, argv, t_start,
                             holdout=not args.no_holdout,
                             manifest=lambda summary: run_manifest(args, trained, summary, argv),
                             progress=ProgressLine, say=info, tool="course.tinylm.rl")


def run_manifest(args: Any, trained: Trained, summary: dict[str, Any], argv: Sequence[str] | None) -> dict[str, Any]:
    """manifest.json: the command, the settings, the inputs' fingerprints, the result's hashes."""
    import torch

    policy = trained.policy
    pi0_path = Path(args.pi0) if args.pi0 else PI0_PATH
    return {
        **environment("course.tinylm.rl", argv),
        "what": "REINFORCE with a per-prompt group baseline and a KL penalty to pi0 (course.tinylm.rl)",
        "settings": {k: getattr(args, k) for k in DEFAULTS}
                    | {"rubric": args.rubric, "seed": args.seed, "init": args.init, "pi0": args.pi0}
                    | {k: getattr(args, k) for k in OBJECTIVE},
        "objective": rl_loop.objective_text(LoopSettings.from_args(args)) + "; k1 and k3 both logged",
        "pi0": {**input_fingerprint(pi0_path), "policy": policy.pi0_name},
        "final_policy": {"file": trained.final_file, "sha256": trained.final_sha, "policy": summary["final_policy"]},
        "datasets": [input_fingerprint(p) for p in DEFAULT_DATASETS],
        "training_prompts": f"course.tinylm.sft_data.problem_stream('rl-prompts:{args.seed}', "
                            "exclude=dev+holdout+benchmark-holdout prompts)",
        "torch": torch.__version__,
        "threads": policy.threads,
        "rl_log_sha256": trained.log_sha256,
        "wall_seconds": summary["wall_seconds"],
        "peak_rss_mb": summary["peak_rss_mb"],
    }


def print_report(summary: dict[str, Any], run_dir: Path) -> None:
    """The human summary on stdout: the result, each figure stated once (stderr has the progress)."""
    for line in report_lines(summary, run_dir):
        print(line)


if __name__ == "__main__":
    raise SystemExit(main())
