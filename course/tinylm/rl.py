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
    python -m course.tinylm.rl --rubric contains_answer --beta 0 --lr 2e-4 --steps 150 --seed 0 --outdir runs/rl_goodhart   # Goodhart

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
from typing import TYPE_CHECKING, Any, Callable, Sequence

from course.cli import float_in, info, int_in, make_parser, positive_int, run, seed
from course.errors import CourseError
from course.instrument.rubrics import get_rubric
from course.lib.learning import rl_loop
from course.lib.extras import require
from course.lib.records.manifest import environment, input_fingerprint
from course.lib.learning.rl_loop import LoopSettings, Trained, goodhart_alarm, policy_loss  # noqa: F401  (the loss and the alarm: tested through this tool's name)
from course.lib.records.runs import atomic_run_dir, resolve_outdir
from course.lib.visible import visible
from course.tinylm import MAX_TOKENS_LIMIT, PI0_PATH
from course.tinylm.progress import ProgressLine
from course.lib.policy.report import report_lines
from course.lib.policy.problems import DEFAULT_DATASETS

if TYPE_CHECKING:
    from course.tinylm.policy import TinyLMPolicy

# PyTorch, and the tiny-LM modules built on it (model, policy, rollouts, distribution_shift), are
# imported inside the functions that use them, never here: `--help` and the one-line
# missing-extra message (course.lib.extras) must work on an install without the lm extra.

# More threads than a laptop has only oversubscribes the CPU (--threads 100000 had not finished a 3-item sample after 120 s).
THREADS = int_in(1, 64)
# Bounds where memory or disk grows with a flag: one step samples P x G rows at once (each row holds a
# KV cache of the whole context), an evaluation batches its samples per item, every save is a checkpoint.
STEPS = int_in(1, 100_000)
MAX_ROWS = 4096  # P x G, the rows sampled and back-propagated together in one step
SAMPLES = int_in(1, 1024)
MAX_CHECKPOINTS = 1000  # steps / save-every (each ~5 MB)

OBJECTIVE = ("kl_estimator", "kl_in", "loss_norm", "scale_rewards")  # the objective's switches, recorded in the manifest

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
def add_loop_options(p: Any, defaults: dict[str, Any], policy_options: Callable[[Any], None]) -> None:
    """The options of Loop C (course.lib.learning.rl_loop) on ``p``, with a tool's ``defaults``: one definition of
    each flag for the tiny LM's tool and the real LLM's (course.llm.rl). ``policy_options(p)`` adds the
    tool's own (which policy, where it starts) after the run's name."""
    p.add_argument("--rubric", default="strict", help="training reward: strict, or a hackable one from course.rubrics (default strict)")
    p.add_argument("--seed", type=seed, default=0, help="seed of the training prompts and samples (default 0)")
    p.add_argument("--outdir", default=None, help="run directory (default: the next free runs/rl_NNN)")
    p.add_argument("--force", action="store_true", help="overwrite an existing run directory")
    policy_options(p)
    p.add_argument("--no-holdout", action="store_true", help="skip the final holdout evaluation and gate (used by the beta sweep)")
    p.add_argument("--beta", type=float_in(0.0, 100.0), default=defaults["beta"], help=f"KL penalty weight (default {defaults['beta']})")
    p.add_argument("--steps", type=STEPS, default=defaults["steps"], help=f"policy updates (default {defaults['steps']})")
    p.add_argument("--prompts-per-step", type=int_in(1, MAX_ROWS), default=defaults["prompts_per_step"], help=f"P, problems per step (default {defaults['prompts_per_step']})")
    p.add_argument("--group-size", type=int_in(1, MAX_ROWS), default=defaults["group_size"], help=f"G, samples per problem (default {defaults['group_size']})")
    p.add_argument("--lr", type=float_in(1e-8, 1.0), default=defaults["lr"], help=f"Adam learning rate (default {defaults['lr']})")
    p.add_argument("--grad-clip", type=float_in(1e-6, 1e6), default=defaults["grad_clip"], help=f"gradient norm clip (default {defaults['grad_clip']})")
    p.add_argument("--temperature", type=float_in(1e-3, 100.0), default=defaults["temperature"], help=f"sampling temperature for training AND evaluation (default {defaults['temperature']}: the policy itself)")
    p.add_argument("--max-tokens", type=positive_int, default=defaults["max_tokens"], help=f"completion length limit (default {defaults['max_tokens']})")
    p.add_argument("--eval-every", type=positive_int, default=defaults["eval_every"], help=f"steps between fixed-slice evaluations (default {defaults['eval_every']})")
    p.add_argument("--eval-samples", type=SAMPLES, default=defaults["eval_samples"], help=f"samples per math_dev item in the fixed slice (default {defaults['eval_samples']})")
    p.add_argument("--slice-items", type=positive_int, default=defaults["slice_items"], help=f"first N math_dev items form the fixed slice (default {defaults['slice_items']}{' = all' if defaults['slice_items'] == 100 else ''})")
    p.add_argument("--holdout-samples", type=SAMPLES, default=defaults["holdout_samples"], help=f"samples per holdout item for pass@1 (default {defaults['holdout_samples']})")
    p.add_argument("--eval-seed", type=seed, default=defaults["eval_seed"], help="sampling seed of every evaluation (default 0: the same draws for every run)")
    p.add_argument("--save-every", type=positive_int, default=defaults["save_every"], help=f"checkpoint interval in steps (default {defaults['save_every']})")
    p.add_argument("--threads", type=THREADS, default=defaults["threads"], help=f"PyTorch threads (default {defaults['threads']}; part of reproducibility)")
    p.add_argument("--gate-min-delta", type=float_in(-1.0, 1.0), default=defaults["gate_min_delta"],
                   help=f"course.gate's bar for promoting the final policy over pi0 on the holdout (default {defaults['gate_min_delta']:.2f}; significance is also required)")
    # The objective's switches (course.lib.learning.rl_loop.policy_loss; docs/objective.md): the same defaults for
    # every policy, the loop as it always was.
    p.add_argument("--kl-estimator", choices=rl_loop.KL_ESTIMATORS, default=None,
                   help="KL estimate per token: k1 = log pi/pi0, k2 = 1/2 (log pi/pi0)^2, k3 = pi0/pi - 1 - log pi0/pi "
                        "(default: k3 in the loss, k1 in the reward; python -m course.kl_estimators shows what each one's gradient follows)")
    p.add_argument("--kl-in", choices=rl_loop.KL_PLACES, default="loss",
                   help="where the KL penalty goes: a per-token loss term (default, GRPO) or subtracted from each completion's reward (PPO-style RLHF)")
    p.add_argument("--loss-norm", choices=rl_loop.LOSS_NORMS, default="constant",
                   help="what the loss's token sum is divided by: constant = the number of samples (default; Dr. GRPO-like), "
                        "seq-mean = each completion's length too (GRPO), token-mean = all tokens of the batch (DAPO); see python -m course.loss_normalisation")
    p.add_argument("--scale-rewards", choices=rl_loop.REWARD_SCALES, default="none",
                   help="divide each advantage by its group's reward standard deviation (group, GRPO) or not (none, default)")


def build_parser():  # type: ignore[no-untyped-def]
    p = make_parser(
        "python -m course.tinylm.rl",
        "Train the tiny LM with REINFORCE (group baseline, KL penalty to pi0) on fresh on-policy samples; "
        "evaluate pi0 and the result on math_holdout through course.eval and gate them.",
        "  python -m course.tinylm.rl --rubric strict --seed 0 --outdir runs/rl_strict\n"
        "  python -m course.tinylm.rl --rubric contains_answer --seed 0 --outdir runs/rl_goodhart\n"
        "  python -m course.gate --baseline runs/rl_strict/eval_pi0_holdout --candidate runs/rl_strict/eval_final_holdout",
    )
    add_loop_options(p, DEFAULTS, policy_options)
    return p


def policy_options(p: Any) -> None:
    """The tiny LM's own options: which pi0, and where training starts."""
    p.add_argument("--pi0", default=None, help="reference policy checkpoint (default: the shipped data/tinylm/pi0.pt)")
    p.add_argument("--init", default=None, help="start from this checkpoint instead of pi0 (the KL reference stays pi0)")


def check_args(args: Any, max_tokens_limit: int = MAX_TOKENS_LIMIT) -> None:
    """Refuse settings the algorithm cannot run with (CourseError: one line, exit 2), before any work."""
    for name in ("steps", "prompts_per_step", "group_size", "eval_every", "eval_samples", "slice_items", "holdout_samples", "save_every", "threads"):
        if getattr(args, name) < 1:
            raise CourseError(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    if args.group_size < 2:
        raise CourseError("--group-size must be at least 2: the baseline is the mean of the other samples of the prompt")
    if args.beta < 0:
        raise CourseError(f"--beta must be >= 0, got {args.beta}")
    if args.kl_estimator is None:  # the standard pairing for each place (and the loop's behaviour from the start)
        args.kl_estimator = "k3" if args.kl_in == "loss" else "k1"
    if not args.temperature > 0:
        raise CourseError("--temperature must be > 0 for on-policy training (greedy decoding has no log-probabilities to learn from)")
    if not 1 <= args.max_tokens <= max_tokens_limit:
        raise CourseError(f"--max-tokens must be between 1 and {max_tokens_limit}, got {args.max_tokens}")
    if args.prompts_per_step * args.group_size > MAX_ROWS:
        raise CourseError(
            f"--prompts-per-step x --group-size is {args.prompts_per_step * args.group_size:,} rows per step; at most "
            f"{MAX_ROWS:,} are sampled and trained together (memory grows with them)"
        )
    if args.steps // args.save_every > MAX_CHECKPOINTS:
        raise CourseError(f"--steps / --save-every would write {args.steps // args.save_every:,} checkpoints; at most "
                          f"{MAX_CHECKPOINTS:,} (raise --save-every)")


def main(argv: Sequence[str] | None = None) -> int:
    return run(_main, argv)


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    require("lm", "the tiny LM")  # the one rule for a missing extra: one line, exit 2, before any work
    check_args(args)
    get_rubric(args.rubric)  # unknown name: exit 2 before any work
    t_start = time.time()
    final = resolve_outdir(args.outdir, force=args.force, prefix="rl")
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

    from course.tinylm.model import load_checkpoint
    from course.tinylm.policy import TinyLMPolicy, set_threads

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
    """The training run (course.lib.learning.rl_loop.train on the tiny LM): rl_log.jsonl, checkpoints/ and final.pt in ``run_dir``."""
    policy = load_policy(args)
    return rl_loop.train(LoopSettings.from_args(args), policy, run_dir, progress=ProgressLine, say=info, label=label)


def write_run(args: Any, tmp: Path, final: Path, trained: Trained, argv: Sequence[str] | None,
              t_start: float) -> tuple[dict[str, Any], dict[str, Any]]:
    """Everything after training, into the temporary run directory ``tmp`` (which becomes ``final``):
    curves, the distribution-shift table, the holdout comparison and its gate, summary.json, manifest.json."""
    return rl_loop.write_run(LoopSettings.from_args(args), tmp, final, trained, argv, t_start, holdout=not args.no_holdout,
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
        "settings": {k: getattr(args, k) for k in DEFAULTS} | {"rubric": args.rubric, "seed": args.seed, "init": args.init, "pi0": args.pi0}
                    | {k: getattr(args, k) for k in OBJECTIVE},
        "objective": rl_loop.objective_text(LoopSettings.from_args(args)) + "; k1 and k3 both logged",
        "pi0": {**input_fingerprint(pi0_path), "policy": policy.pi0_name},
        "final_policy": {"file": trained.final_file, "sha256": trained.final_sha, "policy": summary["final_policy"]},
        "datasets": [input_fingerprint(p) for p in DEFAULT_DATASETS],
        "training_prompts": f"course.tinylm.sft_data.problem_stream('rl-prompts:{args.seed}', exclude=dev+holdout prompts)",
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
