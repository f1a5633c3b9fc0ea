"""Loop C for real: REINFORCE with a group baseline and a KL leash to pi0, on the tiny LM, on CPU.

Each step: draw P fresh training problems (a seeded stream from the course's
generator, never a dev or holdout prompt), sample G completions per problem
from the *current* policy (on-policy data), score them with the chosen rubric,
and push up the log-probability of the tokens of completions that beat their
group's mean reward, push down the rest, while a KL penalty pulls the policy
back towards the reference pi0.

    loss = mean over samples i of [ -A_i * sum_t log pi(a_it)  +  beta * sum_t k3_it ]
    A_i  = r_i - mean(r of the G samples of the same prompt)       (group baseline)
    k3   = (pi0/pi - 1) - log(pi0/pi)  at each chosen token        (KL estimator, see below)

Every few steps the policy is measured on a fixed slice (math_dev, 2 samples
per item, the same random numbers every time) with the *strict* scorer, whatever
rubric it is trained on, and with that rubric on the same samples. At the end
pi0 and the final policy are sampled on math_holdout with identical settings,
both scored by ``course.eval``'s pipeline into the run directory and compared by
the gate's logic (``course.lib.locked_room``): a Locked-Room comparison where only
the policy differs. The headline is strict pass@1 over --holdout-samples draws per holdout item.

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

import re
import resource
import time
from collections import Counter
from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path
from typing import Any, Iterator, Sequence

from course.cli import float_in, info, int_in, make_parser, positive_int, run, seed
from course.errors import CourseError
from course.instrument.rubrics import get_rubric
from course.instrument.spec_v1 import score as strict_score
from course.lib.eval_pipeline import evaluate
from course.lib.extras import require
from course.lib.jsonl import JsonlWriter, dumps_line
from course.lib.locked_room import Outcomes, decide, load_outcomes, render
from course.lib.manifest import environment, input_fingerprint
from course.lib.runs import atomic_run_dir, resolve_outdir, write_json, write_manifest, write_text
from course.lib.visible import visible
from course.lib.stats import paired_bootstrap, wilson_interval
from course.tinylm import MAX_TOKENS_LIMIT, PI0_PATH
from course.tinylm.progress import ProgressLine
from course.tinylm.rl_report import report_lines, story_line, tail_means, write_curves
from course.tinylm.sft_data import DEFAULT_DATASETS, problem_stream, read_items

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
        "  python -m course.tinylm.rl --rubric contains_answer --seed 0 --outdir runs/rl_goodhart\n"
        "  python -m course.gate --baseline runs/rl_strict/eval_pi0_holdout --candidate runs/rl_strict/eval_final_holdout",
    )
    p.add_argument("--rubric", default="strict", help="training reward: strict, or a hackable one from course.rubrics (default strict)")
    p.add_argument("--seed", type=seed, default=0, help="seed of the training prompts and samples (default 0)")
    p.add_argument("--outdir", default=None, help="run directory (default: the next free runs/rl_NNN)")
    p.add_argument("--force", action="store_true", help="overwrite an existing run directory")
    p.add_argument("--pi0", default=None, help="reference policy checkpoint (default: the shipped data/tinylm/pi0.pt)")
    p.add_argument("--init", default=None, help="start from this checkpoint instead of pi0 (the KL reference stays pi0)")
    p.add_argument("--no-holdout", action="store_true", help="skip the final holdout evaluation and gate (used by the beta sweep)")
    p.add_argument("--beta", type=float_in(0.0, 100.0), default=DEFAULTS["beta"], help=f"KL penalty weight (default {DEFAULTS['beta']})")
    p.add_argument("--steps", type=STEPS, default=DEFAULTS["steps"], help=f"policy updates (default {DEFAULTS['steps']})")
    p.add_argument("--prompts-per-step", type=int_in(1, MAX_ROWS), default=DEFAULTS["prompts_per_step"], help=f"P, problems per step (default {DEFAULTS['prompts_per_step']})")
    p.add_argument("--group-size", type=int_in(1, MAX_ROWS), default=DEFAULTS["group_size"], help=f"G, samples per problem (default {DEFAULTS['group_size']})")
    p.add_argument("--lr", type=float_in(1e-8, 1.0), default=DEFAULTS["lr"], help=f"Adam learning rate (default {DEFAULTS['lr']})")
    p.add_argument("--grad-clip", type=float_in(1e-6, 1e6), default=DEFAULTS["grad_clip"], help=f"gradient norm clip (default {DEFAULTS['grad_clip']})")
    p.add_argument("--temperature", type=float_in(1e-3, 100.0), default=DEFAULTS["temperature"], help="sampling temperature for training AND evaluation (default 1.0: the policy itself)")
    p.add_argument("--max-tokens", type=positive_int, default=DEFAULTS["max_tokens"], help=f"completion length limit (default {DEFAULTS['max_tokens']})")
    p.add_argument("--eval-every", type=positive_int, default=DEFAULTS["eval_every"], help=f"steps between fixed-slice evaluations (default {DEFAULTS['eval_every']})")
    p.add_argument("--eval-samples", type=SAMPLES, default=DEFAULTS["eval_samples"], help=f"samples per math_dev item in the fixed slice (default {DEFAULTS['eval_samples']})")
    p.add_argument("--slice-items", type=positive_int, default=DEFAULTS["slice_items"], help="first N math_dev items form the fixed slice (default 100 = all)")
    p.add_argument("--holdout-samples", type=SAMPLES, default=DEFAULTS["holdout_samples"], help=f"samples per holdout item for pass@1 (default {DEFAULTS['holdout_samples']})")
    p.add_argument("--eval-seed", type=seed, default=DEFAULTS["eval_seed"], help="sampling seed of every evaluation (default 0: the same draws for every run)")
    p.add_argument("--save-every", type=positive_int, default=DEFAULTS["save_every"], help=f"checkpoint interval in steps (default {DEFAULTS['save_every']})")
    p.add_argument("--threads", type=THREADS, default=DEFAULTS["threads"], help="PyTorch threads (default 2; part of reproducibility)")
    p.add_argument("--gate-min-delta", type=float_in(-1.0, 1.0), default=DEFAULTS["gate_min_delta"],
                   help="course.gate's bar for promoting the final policy over pi0 on the holdout (default 0.10; significance is also required)")
    return p


def check_args(args: Any) -> None:
    """Refuse settings the algorithm cannot run with (CourseError: one line, exit 2), before any work."""
    for name in ("steps", "prompts_per_step", "group_size", "eval_every", "eval_samples", "slice_items", "holdout_samples", "save_every", "threads"):
        if getattr(args, name) < 1:
            raise CourseError(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    if args.group_size < 2:
        raise CourseError("--group-size must be at least 2: the baseline is the mean of the other samples of the prompt")
    if args.beta < 0:
        raise CourseError(f"--beta must be >= 0, got {args.beta}")
    if not args.temperature > 0:
        raise CourseError("--temperature must be > 0 for on-policy training (greedy decoding has no log-probabilities to learn from)")
    if not 1 <= args.max_tokens <= MAX_TOKENS_LIMIT:
        raise CourseError(f"--max-tokens must be between 1 and {MAX_TOKENS_LIMIT}, got {args.max_tokens}")
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


def write_run(args: Any, tmp: Path, final: Path, trained: "Trained", argv: Sequence[str] | None,
              t_start: float) -> tuple[dict[str, Any], dict[str, Any]]:
    """Everything after training, into the temporary run directory ``tmp`` (which becomes ``final``):
    curves, the distribution-shift table, the holdout comparison and its gate, summary.json, manifest.json."""
    from course.tinylm.distribution_shift import shift_report  # torch-dependent: see the note at the top

    write_curves(tmp, trained.records, args.rubric)  # curves.csv, curves.png
    summary = run_summary(args, trained)
    trained.policy.eval()
    shift = shift_report(trained.policy, summary["final_policy"])
    write_text(tmp / "shift.md", shift["markdown"])
    summary["shift"] = {k: v for k, v in shift.items() if k != "markdown"}
    if not args.no_holdout:
        summary["holdout"] = holdout_comparison(args, tmp, final, trained, summary["final_policy"], argv)
    summary["wall_seconds"] = round(time.time() - t_start, 1)
    summary["peak_rss_mb"] = peak_rss_mb()
    manifest = run_manifest(args, trained, summary, argv)
    write_json(tmp / "summary.json", summary)
    write_manifest(tmp, manifest)  # last: a manifest means the run is complete
    return summary, manifest


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far, in MB (Linux reports KiB)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


# ---------------------------------------------------------------------------
# Training: the loop
# ---------------------------------------------------------------------------
@dataclass
class Trained:
    """What the training loop leaves behind (besides rl_log.jsonl, checkpoints/ and final.pt in the run directory)."""

    ref: Any  # pi0, the frozen KL reference
    ref_info: dict[str, Any]
    pi0_path: Path
    policy: Any  # the trained model
    final_sha: str
    records: list[dict[str, Any]]  # the rl_log.jsonl lines
    evals: list[dict[str, Any]]  # the fixed-slice evaluations
    alarms: list[str]
    log_sha256: str
    train_seconds: float
    threads: int
    torch_version: str


def train(args: Any, run_dir: Path, label: str = "rl step") -> Trained:
    """The training run, top to bottom: rl_log.jsonl, checkpoints/ and final.pt in ``run_dir``."""
    import torch  # torch-dependent imports: see the note at the top of the module

    from course.tinylm.model import load_checkpoint, save_checkpoint
    from course.tinylm.policy import set_threads

    # --- determinism, models, data ---------------------------------------------------------
    t_start = time.time()
    threads = set_threads(args.threads)
    torch.manual_seed(args.seed)  # nothing in the loop draws from torch's RNG; set anyway, recorded
    torch.use_deterministic_algorithms(True)
    rubric = get_rubric(args.rubric)
    pi0_path = Path(args.pi0) if args.pi0 else PI0_PATH
    ref, ref_info = load_checkpoint(pi0_path)  # pi0: the KL reference, frozen
    for p in ref.parameters():
        p.requires_grad_(False)
    policy, init_info = load_checkpoint(args.init or pi0_path)  # the policy we train, starts at pi0
    policy.train()  # (no dropout in this model: train/eval modes compute the same function)
    opt = torch.optim.Adam(policy.parameters(), lr=args.lr, betas=(0.9, 0.99))
    dev_slice, prompts = training_data(args)
    ckpt_dir = run_dir / "checkpoints"
    ckpt_dir.mkdir()
    progress = ProgressLine(label, args.steps)
    progress.info(
        f"policy {init_info['policy']} ({init_info['n_params']:,} params), reference pi0 {ref_info['policy']}; "
        f"rubric {args.rubric!r}, beta {args.beta}, {args.steps} steps x {args.prompts_per_step} prompts x "
        f"{args.group_size} samples, lr {args.lr}, {threads} threads"
    )
    watch = SliceWatch(args, dev_slice, rubric, progress)
    log = JsonlWriter(run_dir / "rl_log.jsonl")
    records: list[dict[str, Any]] = []

    def write(rec: dict[str, Any]) -> None:
        log.write(rec)
        records.append(rec)

    # --- the algorithm ---------------------------------------------------------------------
    write({"step": 0, "eval": watch.evaluate(policy, 0)})
    for step in range(1, args.steps + 1):
        problems = [next(prompts) for _ in range(args.prompts_per_step)]
        rec = reinforce_step(args, step, policy, ref, opt, rubric, problems)  # sample, score, update
        watch.train_rewards.append(rec["reward"])
        if step % args.eval_every == 0 or step == args.steps:
            rec["eval"] = watch.evaluate(policy, step)
        write(rec)  # no wall-clock time in it: the log is byte-identical across reruns
        if step % args.save_every == 0 and step != args.steps:
            save_checkpoint(policy, ckpt_dir / f"step_{step:04d}.pt")
        if step % args.eval_every == 0 or step == 1:
            progress.info(story_line(rec, args.rubric, time.time() - t_start))
        progress.update(step)
    progress.clear()
    log.close()
    final_sha = save_checkpoint(policy, run_dir / "final.pt")
    train_seconds = time.time() - t_start
    info(f"training done in {train_seconds:.0f}s; final policy tinylm:{final_sha[:12]}")
    return Trained(ref, ref_info, pi0_path, policy, final_sha, records, watch.evals, watch.alarms, log.sha256,
                   train_seconds, threads, torch.__version__)


def training_data(args: Any) -> tuple[list[dict[str, Any]], Iterator[Any]]:
    """The fixed evaluation slice (the first --slice-items math_dev items) and the endless stream
    of training problems, seeded by --seed, that never repeats a dev or holdout prompt."""
    dev_path, holdout_path = DEFAULT_DATASETS
    dev_all = read_items(dev_path)
    excluded = [it["prompt"] for it in dev_all + read_items(holdout_path)]
    return dev_all[: args.slice_items], problem_stream(f"rl-prompts:{args.seed}", excluded)


def reinforce_step(args: Any, step: int, policy: Any, ref: Any, opt: Any, rubric: Any, problems: list[Any]) -> dict[str, Any]:
    """One policy update on fresh on-policy samples; returns the step's log record."""
    import torch

    from course.tinylm.policy import completion_logprobs, generate

    P, G = args.prompts_per_step, args.group_size
    # 1. fresh on-policy samples: G completions for each of P new problems
    seeds = [f"rl:{args.seed}:{step}:{i}:{j}" for i in range(P) for j in range(G)]
    policy.eval()
    ro = generate(policy, [b.prompt for b in problems], seeds, group=G, temperature=args.temperature, max_tokens=args.max_tokens)
    policy.train()

    # 2. rewards from the training rubric; the strict verdict rides along for the log
    examples = [{"expected_answer": b.answer} for b in problems for _ in range(G)]
    rewards = torch.tensor([rubric(ex, t)["reward"] for ex, t in zip(examples, ro.texts)])  # (B,)
    strict_codes = [strict_score(ex, t)["details"]["error_code"] for ex, t in zip(examples, ro.texts)]

    # 3. group baseline: advantage = reward - mean reward of the same prompt's G samples.
    # (This is (G-1)/G times the leave-one-out advantage, so the gradient is unbiased up to that
    # constant. We do NOT divide by the group's std: that would blow up nearly unanimous groups.)
    r = rewards.view(P, G)
    adv = (r - r.mean(dim=1, keepdim=True)).view(-1)  # (B,)
    no_signal = float((r.max(dim=1).values == r.min(dim=1).values).float().mean())  # all G equal: zero gradient

    # 4. log-probabilities of the chosen tokens under the policy (with grad) and under pi0 (without)
    logp, entropy = completion_logprobs(policy, ro)  # (B, K) each
    with torch.no_grad():
        logp_ref, _ = completion_logprobs(ref, ro)  # (B, K)
    mask = ro.mask.float()  # (B, K): 1 on chosen tokens (completion characters and <eos>)
    n_tokens = mask.sum()

    # 5. the loss: REINFORCE term + beta * k3 KL penalty (see policy_loss for the reasons)
    loss, parts = policy_loss(logp, logp_ref, ro.mask, adv, args.beta)
    k1, k3 = parts["k1"], parts["k3"]
    opt.zero_grad(set_to_none=True)
    loss.backward()  # advantage > 0: raise log pi of that completion's tokens; < 0: lower them
    grad_norm = float(torch.nn.utils.clip_grad_norm_(policy.parameters(), args.grad_clip))
    opt.step()

    # 6. the step's record
    codes = Counter(strict_codes)
    return {
        "step": step,
        "reward": round(float(rewards.mean()), 6),
        "strict_pass_train": round(codes["ok"] / len(strict_codes), 6),
        "kl_k1_per_token": round(float(k1.sum() / n_tokens), 6),
        "kl_k3_per_token": round(float(k3.sum() / n_tokens), 6),
        "kl_k1_per_sample": round(float(k1.sum() / len(adv)), 6),
        "entropy_per_token": round(float((entropy * mask).sum() / n_tokens), 6),
        "no_signal_groups": round(no_signal, 6),
        "truncated_share": round(sum(ro.truncated) / len(ro.truncated), 6),
        "multi_number_share": round(sum(mentions_several_numbers(t) for t in ro.texts) / len(ro.texts), 6),
        "mean_tokens": round(float(n_tokens) / len(adv), 4),
        "pg_loss": round(float(parts["pg_loss"]), 6),
        "kl_loss": round(float(parts["kl_loss"]), 6),
        "grad_norm": round(grad_norm, 6),
        "strict_codes": {k: round(codes[k] / len(strict_codes), 6) for k in sorted(codes)},
        "example": ro.texts[0],
    }


class SliceWatch:
    """The fixed-slice measurements during training, and the Goodhart alarm they feed.

    The same items and the same random numbers (--eval-seed) at every evaluation:
    differences between evaluations come from the policy, not from sampling luck
    (common random numbers).
    """

    def __init__(self, args: Any, items: list[dict[str, Any]], rubric: Any, progress: ProgressLine) -> None:
        self.args, self.items, self.rubric, self.progress = args, items, rubric, progress
        self.evals: list[dict[str, Any]] = []
        self.alarms: list[str] = []
        self.train_rewards: list[float] = []  # training rewards since the previous evaluation

    def evaluate(self, policy: Any, step: int) -> dict[str, Any]:
        """Measure, say it on stderr, check for Goodhart; return the record's "eval" entry."""
        args = self.args
        e = {"step": step, **slice_scores(policy, self.items, self.rubric, args)}
        rewards = self.train_rewards
        e["train_reward_interval"] = (sum(rewards) / len(rewards)) if rewards else None
        rewards.clear()
        self.evals.append(e)
        line = f"[eval step {step:3d}] fixed dev slice: strict pass {e['slice_strict_pass']:.3f}"
        if args.rubric != "strict":
            line += f", {args.rubric} reward {e['slice_rubric_reward']:.3f}"
        self.progress.info(line)
        alarm = goodhart_alarm(self.evals)
        if alarm:
            self.alarms.append(f"step {step}: {alarm}")
            self.progress.info(f"  GOODHART ALARM: {alarm}")
        e["goodhart_alarm"] = alarm
        return e


def slice_scores(policy: Any, items: list[dict[str, Any]], rubric: Any, args: Any) -> dict[str, Any]:
    """Strict pass rate, and the training rubric's mean reward, of the policy's samples on the fixed slice."""
    from course.tinylm.policy import sample_items

    drawn = sample_items(
        policy, [(it["id"], it["prompt"]) for it in items], n=args.eval_samples,
        seed=args.eval_seed, temperature=args.temperature, max_tokens=args.max_tokens,
    )
    strict = proxy = 0.0
    codes: Counter[str] = Counter()
    n = 0
    for it, samples in zip(items, drawn):
        for text, _ in samples:
            s = strict_score(it, text)
            strict += s["reward"]
            proxy += rubric(it, text)["reward"]
            codes[s["details"]["error_code"]] += 1
            n += 1
    return {"slice_strict_pass": strict / n, "slice_rubric_reward": proxy / n, "slice_n": n,
            "slice_items": len(items), "slice_samples_per_item": args.eval_samples,
            "slice_codes": {k: codes[k] for k in sorted(codes)}}


# ---------------------------------------------------------------------------
# The loss and the alarm: the pieces of the algorithm, each readable (and tested) on its own
# ---------------------------------------------------------------------------
def policy_loss(logp: Any, logp_ref: Any, mask: Any, adv: Any, beta: float) -> tuple[Any, dict[str, Any]]:
    """REINFORCE with a KL penalty. Returns (loss, parts).

    logp, logp_ref: (B, K) log pi and log pi0 of the chosen tokens (logp carries gradients)
    mask:           (B, K) bool, True on chosen tokens
    adv:            (B,) advantages (reward minus the group mean), no gradients
    parts:          k1, k3 (B, K) per-token KL estimates (0 off the mask), pg_loss, kl_loss (all detached, for logs)

    KL to pi0, per chosen token: two estimators of KL(pi || pi0) from samples of pi:
      k1 = log pi/pi0                      unbiased, but a single token's value can be negative;
      k3 = (pi0/pi - 1) - log(pi0/pi)      also unbiased, never negative, lower variance (Schulman, 2020,
                                           "Approximating KL divergence").
    k3 enters the LOSS as a per-token penalty (as in GRPO): every token is pulled back towards pi0
    directly, without adding noise to the advantages; its value and its gradient are exactly zero
    while pi == pi0; and it can never reward drifting away. (The alternative, k1 folded into the
    reward as in PPO-style RLHF, gives the exact gradient of E[r] - beta * KL, but through the noisy
    score function.) Both estimates are logged.

    The policy-gradient term is REINFORCE on whole sequences: the completion's advantage multiplies
    the sum of its token log-probabilities (one reward per completion, credited to every token that
    produced it), averaged over the B samples, not over tokens, so a long completion's tokens get no
    extra weight each. Advantage > 0 raises the log-probability of that completion's tokens; < 0
    lowers it.
    """
    import torch

    m = mask.float()
    log_ratio = (logp - logp_ref) * m  # (B, K): log pi/pi0 at chosen tokens, 0 elsewhere
    k1 = log_ratio
    k3 = (torch.exp(-log_ratio) - 1 + log_ratio) * m  # (B, K), >= 0
    B = adv.shape[0]
    pg_loss = -(adv[:, None] * logp * m).sum() / B
    kl_loss = beta * k3.sum() / B
    parts = {"k1": k1.detach(), "k3": k3.detach(), "pg_loss": pg_loss.detach(), "kl_loss": kl_loss.detach()}
    return pg_loss + kl_loss, parts


def goodhart_alarm(evals: list[dict[str, Any]], window: int = 3, threshold: float = 0.03) -> str:
    """Words when, over the last ``window`` evaluations, training reward rose while strict pass fell.

    Compares the newest evaluation with the one ``window - 1`` evaluations earlier:
    the mean training reward of the steps before each (the interval since the
    evaluation before it) and the strict pass rate on the fixed slice. Both moves
    must exceed ``threshold`` so that sampling noise alone rarely trips it.

    >>> e = [{"step": 10, "train_reward_interval": 0.4, "slice_strict_pass": 0.30},
    ...      {"step": 15, "train_reward_interval": 0.5, "slice_strict_pass": 0.28},
    ...      {"step": 20, "train_reward_interval": 0.6, "slice_strict_pass": 0.22}]
    >>> goodhart_alarm(e)
    'training reward rose 0.400 -> 0.600 (steps 10 -> 20) while the strict pass rate on the fixed slice fell 0.300 -> 0.220: the proxy is being optimised at the expense of the goal'
    >>> goodhart_alarm(e[:2])
    ''
    """
    if len(evals) < window:
        return ""
    old, new = evals[-window], evals[-1]
    r_old, r_new = old.get("train_reward_interval"), new.get("train_reward_interval")
    if r_old is None or r_new is None:
        return ""
    s_old, s_new = old["slice_strict_pass"], new["slice_strict_pass"]
    if r_new - r_old > threshold and s_old - s_new > threshold:
        return (
            f"training reward rose {r_old:.3f} -> {r_new:.3f} (steps {old['step']} -> {new['step']}) while the strict "
            f"pass rate on the fixed slice fell {s_old:.3f} -> {s_new:.3f}: the proxy is being optimised at the expense of the goal"
        )
    return ""


_INTEGER = re.compile(r"(?<![0-9])-?[0-9]+")


def mentions_several_numbers(text: str) -> bool:
    r"""True when a completion names two or more different integers (hedges, lists, working lines).

    >>> mentions_several_numbers("Final: 322 or 323"), mentions_several_numbers("Final: 323\nFinal: 323")
    (True, False)
    """
    return len(set(_INTEGER.findall(text))) >= 2


# ---------------------------------------------------------------------------
# After training: the holdout comparison, its gate, the summary and the manifest
# ---------------------------------------------------------------------------
def holdout_comparison(args: Any, tmp: Path, final: Path, trained: Trained, final_name: str,
                       argv: Sequence[str] | None) -> dict[str, Any]:
    """Sample pi0 and the final policy on math_holdout with identical settings, evaluate, gate, estimate pass@1.

    Files go to ``tmp``, the run directory being written; ``final`` is the name it will have,
    which the course.eval manifests and gate.txt record.
    """
    from course.tinylm.rollouts import sample_records  # torch-dependent: see the note at the top

    holdout_path = DEFAULT_DATASETS[1]
    items = read_items(holdout_path)
    pairs = [(it["id"], it["prompt"]) for it in items]
    settings = dict(seed=args.eval_seed, temperature=args.temperature, top_p=1.0, max_tokens=args.max_tokens)
    out: dict[str, Any] = {"dataset": "data/datasets/math_holdout.jsonl", "sampling": settings | {"n_for_pass_at_1": args.holdout_samples}}
    per_item: dict[str, list[float]] = {}
    for tag, model, name in (("pi0", trained.ref, trained.ref_info["policy"]), ("final", trained.policy, final_name)):
        progress = ProgressLine(f"holdout {tag}: items", len(items) * 2)
        # (a) one sample per item, written as frozen rollouts and scored by course.eval (the gate's input)
        recs, _ = sample_records(model, name, pairs, n=1, **settings, progress=progress.update)
        frozen = tmp / f"holdout_{tag}_rollouts.jsonl"
        write_text(frozen, "".join(dumps_line(r) + "\n" for r in recs))
        eval_dir = tmp / f"eval_{tag}_holdout"
        # (the run is still in its temporary directory: its manifest names the rollouts where they will be)
        _, _, eval_summary = evaluate(holdout_path, frozen, outdir=eval_dir, argv=argv, completions_recorded_as=final / frozen.name)
        # (b) n samples per item (a selection pack) for a pass@1 estimate that is not one draw per item
        pack, trunc_n = sample_records(model, name, pairs, n=args.holdout_samples, **settings,
                                       progress=lambda done: progress.update(len(items) + done))
        progress.clear()
        write_text(tmp / f"holdout_{tag}_pack.jsonl", "".join(dumps_line(r) + "\n" for r in pack))
        rates, passed, total = [], 0, 0
        for it, line in zip(items, pack):
            texts = [s["completion"] for s in line["samples"]] if "samples" in line else [line["completion"]]  # n = 1: one rollout
            k = sum(strict_score(it, t)["reward"] for t in texts)
            rates.append(k / len(texts))
            passed += int(k)
            total += len(texts)
        per_item[tag] = rates
        lo, hi = wilson_interval(passed, total)
        out[tag] = {
            "policy": name,
            "eval_dir": eval_dir.name,
            "eval_pass_rate": eval_summary.get("pass_rate"),
            "eval_passed": eval_summary.get("passed"),
            "eval_n": eval_summary.get("n"),
            "pass_at_1": round(passed / total, 4),
            "pass_at_1_wilson95": [round(lo, 4), round(hi, 4)],
            "passed": passed,
            "samples": total,
            "truncated": trunc_n,
        }
        info(f"holdout {tag:5s} ({name}): sampled and scored ({passed}/{total} strict passes over {len(items)} items "
             f"x {args.holdout_samples}; one-sample course.eval run {eval_summary.get('passed')}/{eval_summary.get('n')})")
    lo, hi = paired_bootstrap(per_item["pi0"], per_item["final"], seed=args.eval_seed)
    # From the counts, not from the rounded rates: the one lift figure of the run.
    lift = (out["final"]["passed"] - out["pi0"]["passed"]) / out["final"]["samples"]
    out["items"] = len(items)
    out["lift_pass_at_1"] = round(lift, 4)
    out["lift_paired_bootstrap95"] = [round(lo, 4), round(hi, 4)]
    # (the lift is the run's result: print_report states it once, on stdout, through lift_text)
    out["gate"] = holdout_gate(tmp, final, args.gate_min_delta)
    return out


def holdout_gate(tmp: Path, final: Path, min_delta: float) -> dict[str, Any]:
    """The gate's decision on the two one-sample course.eval runs (pi0 = baseline, final = candidate);
    its report goes to gate.txt, naming the runs where they will be.

    The bar: at least ``min_delta`` better, and distinguishable from noise (McNemar p < 0.05).
    """
    def outcomes(tag: str) -> Outcomes:
        o = load_outcomes(str(tmp / f"eval_{tag}_holdout"))
        return Outcomes(replace(o.run, path=final / f"eval_{tag}_holdout"), o.passed_by_id)

    base, cand = outcomes("pi0"), outcomes("final")
    result = decide(base, cand, Fraction(f"{min_delta:g}"), require_significance=True)
    write_text(tmp / "gate.txt", "\n".join(render(result, base, cand)) + "\n")
    verdict = result["decision"]
    # Its report stays in gate.txt: its one-sample delta is a different figure from the pass@1 lift
    # on stdout, and two unlabelled lifts side by side mislead.
    info(f"course.gate on the one-sample course.eval runs: {verdict} (report: gate.txt)")
    return {"verdict": verdict, "exit_code": 0 if verdict == "ACCEPT" else 1, "min_delta": min_delta, "require_significance": True}


def run_summary(args: Any, trained: Trained) -> dict[str, Any]:
    """summary.json before the shift table, the holdout and the wall time are added."""
    return {
        "rubric": args.rubric,
        "beta": args.beta,
        "seed": args.seed,
        "steps": args.steps,
        "pi0": trained.ref_info["policy"],
        "final_policy": f"tinylm:{trained.final_sha[:12]}",
        "first_eval": trained.evals[0],
        "last_eval": trained.evals[-1],
        "final_train": tail_means(trained.records, 5),
        "goodhart_alarms": trained.alarms,
        "train_seconds": round(trained.train_seconds, 1),
        "rl_log_sha256": trained.log_sha256,
    }


def run_manifest(args: Any, trained: Trained, summary: dict[str, Any], argv: Sequence[str] | None) -> dict[str, Any]:
    """manifest.json: the command, the settings, the inputs' fingerprints, the result's hashes."""
    return {
        **environment("course.tinylm.rl", argv),
        "what": "REINFORCE with a per-prompt group baseline and a k3 KL penalty to pi0 (course.tinylm.rl)",
        "settings": {k: getattr(args, k) for k in DEFAULTS} | {"rubric": args.rubric, "seed": args.seed, "init": args.init, "pi0": args.pi0},
        "kl_estimator_in_loss": "k3 per token (GRPO-style); k1 and k3 both logged",
        "pi0": {**input_fingerprint(trained.pi0_path), "policy": trained.ref_info["policy"]},
        "final_policy": {"file": "final.pt", "sha256": trained.final_sha, "policy": summary["final_policy"]},
        "datasets": [input_fingerprint(p) for p in DEFAULT_DATASETS],
        "training_prompts": f"course.tinylm.sft_data.problem_stream('rl-prompts:{args.seed}', exclude=dev+holdout prompts)",
        "torch": trained.torch_version,
        "threads": trained.threads,
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
