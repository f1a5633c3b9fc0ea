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
both scored by ``course.eval`` into the run directory and compared by
``course.gate``: a Locked-Room comparison where only the policy differs. The
headline is strict pass@1 over --holdout-samples draws per holdout item.

Run it (defaults reach the course's target: a >= 15 point holdout lift in a few minutes)::

    python -m course.tinylm.rl --rubric strict --seed 0 --outdir runs/rl_strict
    python -m course.tinylm.rl --rubric contains_answer --beta 0 --lr 2e-4 --steps 150 --seed 0 --outdir runs/rl_goodhart   # Goodhart

The run directory: rl_log.jsonl (one line per step; identical for the same seed
on the same machine), curves.csv / curves.png, final.pt (+ checkpoints/),
eval_pi0_holdout/ and eval_final_holdout/ (course.eval runs), gate.txt,
holdout_*.jsonl (the rollouts), shift.md (error codes of frozen pi0 rollouts
beside the trained policy's), summary.json, manifest.json.
"""

from __future__ import annotations

import re
import resource
import time
from collections import Counter
from pathlib import Path
from typing import Any, Sequence

from course.cli import float_in, info, int_in, make_parser, non_negative_int, positive_int, run

# More threads than a laptop has only oversubscribes the CPU (--threads 100000 had not finished a 3-item sample after 120 s).
THREADS = int_in(1, 64)
from course.errors import CourseError
from course.tinylm import MAX_TOKENS_LIMIT

# Codes shown as curves (strict scorer, share of training samples); the rest are summed as "other".
CURVE_CODES = ("ok", "wrong_answer", "trailing_text", "multiple_lines", "missing_prefix", "prefix_spacing", "prefix_case")

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
    p.add_argument("--seed", type=non_negative_int, default=0, help="seed of the training prompts and samples (default 0)")
    p.add_argument("--outdir", default=None, help="run directory (default: the next free runs/rl_NNN)")
    p.add_argument("--force", action="store_true", help="overwrite an existing run directory")
    p.add_argument("--pi0", default=None, help="reference policy checkpoint (default: the shipped data/tinylm/pi0.pt)")
    p.add_argument("--init", default=None, help="start from this checkpoint instead of pi0 (the KL reference stays pi0)")
    p.add_argument("--no-holdout", action="store_true", help="skip the final holdout evaluation and gate (used by the beta sweep)")
    p.add_argument("--beta", type=float_in(0.0, 100.0), default=DEFAULTS["beta"], help=f"KL penalty weight (default {DEFAULTS['beta']})")
    p.add_argument("--steps", type=positive_int, default=DEFAULTS["steps"], help=f"policy updates (default {DEFAULTS['steps']})")
    p.add_argument("--prompts-per-step", type=positive_int, default=DEFAULTS["prompts_per_step"], help=f"P, problems per step (default {DEFAULTS['prompts_per_step']})")
    p.add_argument("--group-size", type=positive_int, default=DEFAULTS["group_size"], help=f"G, samples per problem (default {DEFAULTS['group_size']})")
    p.add_argument("--lr", type=float_in(1e-8, 1.0), default=DEFAULTS["lr"], help=f"Adam learning rate (default {DEFAULTS['lr']})")
    p.add_argument("--grad-clip", type=float_in(1e-6, 1e6), default=DEFAULTS["grad_clip"], help=f"gradient norm clip (default {DEFAULTS['grad_clip']})")
    p.add_argument("--temperature", type=float_in(1e-3, 100.0), default=DEFAULTS["temperature"], help="sampling temperature for training AND evaluation (default 1.0: the policy itself)")
    p.add_argument("--max-tokens", type=positive_int, default=DEFAULTS["max_tokens"], help=f"completion length limit (default {DEFAULTS['max_tokens']})")
    p.add_argument("--eval-every", type=positive_int, default=DEFAULTS["eval_every"], help=f"steps between fixed-slice evaluations (default {DEFAULTS['eval_every']})")
    p.add_argument("--eval-samples", type=positive_int, default=DEFAULTS["eval_samples"], help=f"samples per math_dev item in the fixed slice (default {DEFAULTS['eval_samples']})")
    p.add_argument("--slice-items", type=positive_int, default=DEFAULTS["slice_items"], help="first N math_dev items form the fixed slice (default 100 = all)")
    p.add_argument("--holdout-samples", type=positive_int, default=DEFAULTS["holdout_samples"], help=f"samples per holdout item for pass@1 (default {DEFAULTS['holdout_samples']})")
    p.add_argument("--eval-seed", type=non_negative_int, default=DEFAULTS["eval_seed"], help="sampling seed of every evaluation (default 0: the same draws for every run)")
    p.add_argument("--save-every", type=positive_int, default=DEFAULTS["save_every"], help=f"checkpoint interval in steps (default {DEFAULTS['save_every']})")
    p.add_argument("--threads", type=THREADS, default=DEFAULTS["threads"], help="PyTorch threads (default 2; part of reproducibility)")
    p.add_argument("--gate-min-delta", type=float_in(-1.0, 1.0), default=DEFAULTS["gate_min_delta"],
                   help="course.gate's bar for promoting the final policy over pi0 on the holdout (default 0.10; significance is also required)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    return run(_main, argv)


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    check_args(args)
    from course.instrument.rubrics import get_rubric
    from course.lib.runs import atomic_run_dir, resolve_outdir
    from course.tinylm import require_torch

    get_rubric(args.rubric)  # unknown name: exit 2 before any work
    require_torch()
    from course.lib.jsonl import write_json_atomic

    t_start = time.time()
    final = resolve_outdir(args.outdir, force=args.force, prefix="rl")
    info(f"run directory: {final}")
    # Phase 1, atomic: training, logs, curves, checkpoints, shift report.
    with atomic_run_dir(final, force=args.force, prefix="rl") as tmp:
        state = train(args, tmp, argv)
    summary, manifest = state["summary"], state["manifest"]
    # Phase 2, inside the finished run directory (so the course.eval manifests name real paths):
    # sample both policies on the holdout, evaluate them with course.eval, gate them.
    if not args.no_holdout:
        summary["holdout"] = holdout_comparison(args, final, state["ref"], summary["pi0"], state["policy"], summary["final_policy"], argv)
    summary["wall_seconds"] = manifest["wall_seconds"] = round(time.time() - t_start, 1)
    summary["peak_rss_mb"] = manifest["peak_rss_mb"] = peak_rss_mb()
    write_json_atomic(final / "summary.json", summary)
    write_json_atomic(final / "manifest.json", manifest)
    print_report(summary, final)
    return 0


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far, in MB (Linux reports KiB)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def check_args(args: Any) -> None:
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


def train(args: Any, run_dir: Path, argv: Sequence[str] | None) -> dict[str, Any]:
    """The training run, top to bottom, written into ``run_dir``.

    Returns {"summary", "manifest", "ref", "policy"} (the last two: pi0 and the trained model).
    """
    # --- boilerplate: determinism, models, data ------------------------------------------
    import torch

    from course.instrument.rubrics import get_rubric
    from course.instrument.spec_v1 import score as strict_score
    from course.lib.jsonl import JsonlWriter
    from course.lib.manifest import environment, input_fingerprint
    from course.lib.runs import write_json
    from course.tinylm import PI0_PATH
    from course.tinylm.model import load_checkpoint, save_checkpoint
    from course.tinylm.policy import completion_logprobs, generate, sample_items, set_threads
    from course.tinylm.sft_data import DEFAULT_DATASETS, problem_stream, read_items

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

    dev_path, holdout_path = DEFAULT_DATASETS
    dev_all = read_items(dev_path)
    holdout_items = read_items(holdout_path)
    excluded = [it["prompt"] for it in dev_all + holdout_items]
    dev_items = dev_all[: args.slice_items]  # the fixed evaluation slice
    prompts = problem_stream(f"rl-prompts:{args.seed}", excluded)  # training problems: never dev/holdout
    P, G = args.prompts_per_step, args.group_size
    ckpt_dir = run_dir / "checkpoints"
    ckpt_dir.mkdir()
    info(
        f"policy {init_info['policy']} ({init_info['n_params']:,} params), reference pi0 {ref_info['policy']}; "
        f"rubric {args.rubric!r}, beta {args.beta}, {args.steps} steps x {P} prompts x {G} samples, lr {args.lr}, {threads} threads"
    )

    def eval_slice(step: int) -> dict[str, Any]:
        """Strict pass rate (and the training rubric's reward) on the fixed math_dev slice.

        The same items and the same random numbers (eval_seed) at every evaluation:
        differences between evaluations come from the policy, not from sampling luck
        (common random numbers).
        """
        drawn = sample_items(
            policy, [(it["id"], it["prompt"]) for it in dev_items], n=args.eval_samples,
            seed=args.eval_seed, temperature=args.temperature, max_tokens=args.max_tokens,
        )
        strict = proxy = 0.0
        codes: Counter[str] = Counter()
        n = 0
        for it, samples in zip(dev_items, drawn):
            for text, _ in samples:
                s = strict_score(it, text)
                strict += s["reward"]
                proxy += rubric(it, text)["reward"]
                codes[s["details"]["error_code"]] += 1
                n += 1
        return {"step": step, "slice_strict_pass": strict / n, "slice_rubric_reward": proxy / n, "slice_n": n,
                "slice_items": len(dev_items), "slice_samples_per_item": args.eval_samples,
                "slice_codes": {k: codes[k] for k in sorted(codes)}}

    log_path = run_dir / "rl_log.jsonl"
    log = JsonlWriter(log_path)
    evals: list[dict[str, Any]] = []
    interval_rewards: list[float] = []  # training rewards since the previous evaluation
    alarms: list[str] = []

    def evaluate_and_report(step: int) -> dict[str, Any]:
        e = eval_slice(step)
        e["train_reward_interval"] = (sum(interval_rewards) / len(interval_rewards)) if interval_rewards else None
        interval_rewards.clear()
        evals.append(e)
        line = f"[eval step {step:3d}] fixed dev slice: strict pass {e['slice_strict_pass']:.3f}"
        if args.rubric != "strict":
            line += f", {args.rubric} reward {e['slice_rubric_reward']:.3f}"
        info(line)
        alarm = goodhart_alarm(evals)
        if alarm:
            alarms.append(f"step {step}: {alarm}")
            info(f"  GOODHART ALARM: {alarm}")
        e["goodhart_alarm"] = alarm
        return e

    # --- the algorithm ---------------------------------------------------------------------
    first_eval = evaluate_and_report(0)
    log.write({"step": 0, "eval": first_eval})
    for step in range(1, args.steps + 1):
        # 1. fresh on-policy samples: G completions for each of P new problems
        batch = [next(prompts) for _ in range(P)]
        seeds = [f"rl:{args.seed}:{step}:{i}:{j}" for i in range(P) for j in range(G)]
        policy.eval()
        ro = generate(policy, [b.prompt for b in batch], seeds, group=G, temperature=args.temperature, max_tokens=args.max_tokens)
        policy.train()

        # 2. rewards from the training rubric; the strict verdict rides along for the log
        examples = [{"expected_answer": b.answer} for b in batch for _ in range(G)]
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
        k1, k3, pg_loss, kl_loss = parts["k1"], parts["k3"], parts["pg_loss"], parts["kl_loss"]
        opt.zero_grad(set_to_none=True)
        loss.backward()  # advantage > 0: raise log pi of that completion's tokens; < 0: lower them
        grad_norm = float(torch.nn.utils.clip_grad_norm_(policy.parameters(), args.grad_clip))
        opt.step()

        # 6. the step's record (no wall-clock time in it: the log is byte-identical across reruns)
        codes = Counter(strict_codes)
        rec = {
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
            "pg_loss": round(float(pg_loss), 6),
            "kl_loss": round(float(kl_loss), 6),
            "grad_norm": round(grad_norm, 6),
            "strict_codes": {k: round(codes[k] / len(strict_codes), 6) for k in sorted(codes)},
            "example": ro.texts[0],
        }
        interval_rewards.append(rec["reward"])
        if step % args.eval_every == 0 or step == args.steps:
            rec["eval"] = evaluate_and_report(step)
        log.write(rec)
        if step % args.save_every == 0 and step != args.steps:
            save_checkpoint(policy, ckpt_dir / f"step_{step:04d}.pt")
        if step % args.eval_every == 0 or step == 1:
            info(story_line(rec, args.rubric, time.time() - t_start))
    log.close()
    final_sha = save_checkpoint(policy, run_dir / "final.pt")
    train_seconds = time.time() - t_start
    info(f"training done in {train_seconds:.0f}s; final policy tinylm:{final_sha[:12]}")

    # --- boilerplate: curves, holdout comparison, distribution shift, summary ----------------
    records = [r for r in map_log(log_path)]
    write_curves(run_dir, records, args.rubric)

    summary: dict[str, Any] = {
        "rubric": args.rubric,
        "beta": args.beta,
        "seed": args.seed,
        "steps": args.steps,
        "pi0": ref_info["policy"],
        "final_policy": f"tinylm:{final_sha[:12]}",
        "first_eval": evals[0],
        "last_eval": evals[-1],
        "final_train": tail_means(records, 5),
        "goodhart_alarms": alarms,
        "train_seconds": round(train_seconds, 1),
        "rl_log_sha256": log.sha256,
    }
    from course.tinylm.shift import shift_report

    policy.eval()
    shift = shift_report(policy, summary["final_policy"], run_dir)  # writes shift.md
    summary["shift"] = {k: v for k, v in shift.items() if k != "markdown"}
    summary["wall_seconds"] = round(time.time() - t_start, 1)
    summary["peak_rss_mb"] = peak_rss_mb()
    write_json(run_dir / "summary.json", summary)
    manifest = {
        **environment("course.tinylm.rl", argv),
        "what": "REINFORCE with a per-prompt group baseline and a k3 KL penalty to pi0 (course.tinylm.rl)",
        "settings": {k: getattr(args, k) for k in DEFAULTS} | {"rubric": args.rubric, "seed": args.seed, "init": args.init, "pi0": args.pi0},
        "kl_estimator_in_loss": "k3 per token (GRPO-style); k1 and k3 both logged",
        "pi0": {**input_fingerprint(pi0_path), "policy": ref_info["policy"]},
        "final_policy": {"file": "final.pt", "sha256": final_sha, "policy": f"tinylm:{final_sha[:12]}"},
        "datasets": [input_fingerprint(p) for p in (dev_path, holdout_path)],
        "training_prompts": f"course.tinylm.sft_data.problem_stream('rl-prompts:{args.seed}', exclude=dev+holdout prompts)",
        "torch": torch.__version__,
        "threads": threads,
        "rl_log_sha256": log.sha256,
        "wall_seconds": summary["wall_seconds"],
        "peak_rss_mb": summary["peak_rss_mb"],
    }
    write_json(run_dir / "manifest.json", manifest)
    return {"summary": summary, "manifest": manifest, "ref": ref, "policy": policy}


# ---------------------------------------------------------------------------
# Pieces of the run that are easier to read (and test) on their own.
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


def story_line(rec: dict[str, Any], rubric: str, elapsed: float) -> str:
    """One readable stderr line per few steps."""
    codes = rec["strict_codes"]
    top = sorted(((v, k) for k, v in codes.items() if k != "ok"), reverse=True)[:2]
    slips = ", ".join(f"{k} {v:.0%}" for v, k in top) or "none"
    return (
        f"step {rec['step']:3d} | {rubric} reward {rec['reward']:.2f} | strict ok {rec['strict_pass_train']:.0%} "
        f"| KL/token k1 {rec['kl_k1_per_token']:+.4f} k3 {rec['kl_k3_per_token']:.4f} | entropy/token {rec['entropy_per_token']:.3f} "
        f"| no-signal groups {rec['no_signal_groups']:.0%} | truncated {rec['truncated_share']:.0%} "
        f"| several numbers {rec['multi_number_share']:.0%} | top slips: {slips} "
        f"| e.g. {rec['example']!r} | {elapsed:.0f}s"
    )


def map_log(path: Path) -> list[dict[str, Any]]:
    import json

    with open(path, encoding="utf-8") as f:  # our own freshly written file: plain json is enough
        return [json.loads(line) for line in f]


def tail_means(records: list[dict[str, Any]], k: int) -> dict[str, float]:
    """Means of the last ``k`` training steps (one step is noisy)."""
    steps = [r for r in records if "reward" in r][-k:]
    keys = ("reward", "strict_pass_train", "kl_k1_per_token", "kl_k3_per_token", "kl_k1_per_sample", "entropy_per_token",
            "no_signal_groups", "truncated_share", "multi_number_share")
    return {key: round(sum(r[key] for r in steps) / len(steps), 6) for key in keys} | {"over_last_steps": len(steps)}


# Smoothing of the per-step training reward: a trailing mean, so that step t's value uses only
# steps <= t (what a person watching the log could have known then). The band is the mean
# plus or minus two standard errors of the steps in the window: where the window's mean is
# known to be, roughly 95 %. One step (64 samples, 8 fresh problems) is far noisier than that.
SMOOTH_WINDOW = 10


def trailing_mean_band(values: Sequence[float], window: int = SMOOTH_WINDOW) -> list[tuple[float, float, float]]:
    """(mean, low, high) for each position: the mean of the last ``window`` values (fewer at the
    start) and that mean -/+ 2 standard errors (sample standard deviation / sqrt(n)); a window of one
    value has a zero-width band.

    >>> trailing_mean_band([0.0, 1.0, 0.5], window=2)
    [(0.0, 0.0, 0.0), (0.5, -0.5, 1.5), (0.75, 0.25, 1.25)]
    """
    if window < 1:
        raise ValueError(f"window must be at least 1, got {window}")
    out: list[tuple[float, float, float]] = []
    for i in range(len(values)):
        w = values[max(0, i - window + 1) : i + 1]
        n = len(w)
        mean = sum(w) / n
        if n < 2:
            out.append((mean, mean, mean))
            continue
        sd = (sum((v - mean) ** 2 for v in w) / (n - 1)) ** 0.5
        half = 2 * sd / n**0.5
        out.append((mean, mean - half, mean + half))
    return out


def slice_label(e: dict[str, Any]) -> str:
    """What the fixed slice is, in words: '100 math_dev items x 2 samples'."""
    items, k = e.get("slice_items"), e.get("slice_samples_per_item")
    if items is None or k is None:
        return f"{e['slice_n']} samples"
    return f"{items} math_dev items x {k} samples"


def same_prompts_lines(first: dict[str, Any], last: dict[str, Any], rubric: str) -> list[str]:
    """The proxy and the goal measured on the SAME samples of the fixed slice, start -> end.

    >>> f = {"step": 0, "slice_n": 200, "slice_items": 100, "slice_samples_per_item": 2,
    ...      "slice_rubric_reward": 0.57, "slice_strict_pass": 0.275}
    >>> l = dict(f, step=60, slice_rubric_reward=0.70, slice_strict_pass=0.15)
    >>> print("\\n".join(same_prompts_lines(f, l, "contains_answer")))
    Same prompts, fixed dev slice (100 math_dev items x 2 samples), step 0 -> 60:
      contains_answer reward (the proxy trained on): 0.570 -> 0.700 (+0.130)
      strict pass rate (the goal):                   0.275 -> 0.150 (-0.125)
      Goodhart: the proxy rose while the strict pass rate fell, on the same samples.
    """
    lines = [f"Same prompts, fixed dev slice ({slice_label(first)}), step {first['step']} -> {last['step']}:"]
    ds = last["slice_strict_pass"] - first["slice_strict_pass"]
    if rubric == "strict":
        lines.append(f"  strict pass rate (the reward AND the goal): {first['slice_strict_pass']:.3f} -> {last['slice_strict_pass']:.3f} ({ds:+.3f})")
        return lines
    dp = last["slice_rubric_reward"] - first["slice_rubric_reward"]
    name = f"{rubric} reward (the proxy trained on):"
    goal = "strict pass rate (the goal):"
    width = max(len(name), len(goal))
    lines.append(f"  {name:<{width}} {first['slice_rubric_reward']:.3f} -> {last['slice_rubric_reward']:.3f} ({dp:+.3f})")
    lines.append(f"  {goal:<{width}} {first['slice_strict_pass']:.3f} -> {last['slice_strict_pass']:.3f} ({ds:+.3f})")
    lines.append("  " + divergence_verdict(dp, ds))
    return lines


def divergence_verdict(proxy_change: float, strict_change: float) -> str:
    """One sentence on how the proxy and the goal moved on the same samples (no threshold: read the
    seed-to-seed spread in the README before calling a small move real).

    >>> divergence_verdict(0.13, -0.125)
    'Goodhart: the proxy rose while the strict pass rate fell, on the same samples.'
    >>> divergence_verdict(-0.03, -0.05)
    'The strict pass rate fell and the proxy did not rise: the updates moved the policy where the proxy does not look, without buying proxy reward on unseen prompts.'
    """
    if proxy_change > 0 and strict_change < 0:
        return "Goodhart: the proxy rose while the strict pass rate fell, on the same samples."
    if proxy_change > 0:
        return "The proxy rose and the strict pass rate did not fall: no divergence in this run."
    if strict_change < 0:
        return ("The strict pass rate fell and the proxy did not rise: the updates moved the policy where the proxy "
                "does not look, without buying proxy reward on unseen prompts.")
    return "Neither the proxy nor the strict pass rate rose on these prompts."


def points(x: float) -> str:
    """A rate in percent with one decimal, rounded half up from its shortest decimal form, so that
    89/400 = 0.2225 reads 22.3 as a person would round it (binary floating point prints 22.2).

    >>> points(0.2225), points(0.4775), points(-0.0175)
    ('22.3', '47.8', '-1.8')
    """
    from decimal import ROUND_HALF_UP, Decimal

    d = (Decimal(repr(float(x))) * 100).copy_abs().quantize(Decimal("0.1"), rounding=ROUND_HALF_UP)
    return f"-{d}" if x < 0 and d != 0 else f"{d}"


def signed(x: float) -> str:
    """points() with its sign always shown: 0.0175 -> '+1.8'."""
    p = points(x)
    return p if p.startswith("-") else f"+{p}"


def pct(x: float) -> str:
    """0.2225 -> '22.3%'."""
    return f"{points(x)}%"


def lift_text(h: dict[str, Any]) -> str:
    """THE lift figure of a run, in points of strict pass@1 on the holdout, with its paired interval.

    Computed once (from the pass counts, in ``holdout_comparison``) and formatted only here,
    so no two outputs can state it differently.

    >>> lift_text({"lift_pass_at_1": 0.0175, "lift_paired_bootstrap95": [-0.025, 0.0625], "items": 50})
    '+1.8 points (paired bootstrap over the 50 holdout items, 95% -2.5 to +6.3)'
    """
    lo, hi = h["lift_paired_bootstrap95"]
    return (f"{signed(h['lift_pass_at_1'])} points (paired bootstrap over the {h.get('items', '?')} holdout items, "
            f"95% {signed(lo)} to {signed(hi)})")


def holdout_lines(h: dict[str, Any]) -> list[str]:
    """The holdout headline (strict pass@1 over n samples per item, pi0 -> final, the lift) and,
    labelled as such, the gate's one-sample course.eval figures.

    >>> h = {"items": 50, "sampling": {"temperature": 1.0, "seed": 0, "n_for_pass_at_1": 8},
    ...      "pi0": {"pass_at_1": 0.2225, "pass_at_1_wilson95": [0.184, 0.266], "eval_passed": 16, "eval_n": 50},
    ...      "final": {"pass_at_1": 0.4775, "pass_at_1_wilson95": [0.429, 0.526], "eval_passed": 27, "eval_n": 50},
    ...      "lift_pass_at_1": 0.255, "lift_paired_bootstrap95": [0.165, 0.345], "gate": {"verdict": "ACCEPT"}}
    >>> print("\\n".join(holdout_lines(h)))
    Holdout headline: strict pass@1 on math_holdout (50 items x 8 samples each, temperature 1.0, eval seed 0)
      pi0 22.3% [18.4, 26.6] -> final 47.8% [42.9, 52.6] (Wilson 95%)
      Lift: +25.5 points (paired bootstrap over the 50 holdout items, 95% +16.5 to +34.5)
    Gate input (course.eval, ONE sample per item, so noisier): pi0 16/50 -> final 27/50; course.gate: ACCEPT (gate.txt)
    """
    smp = h["sampling"]
    p, f = h["pi0"], h["final"]

    def rate(x: dict[str, Any]) -> str:
        lo, hi = x["pass_at_1_wilson95"]
        return f"{pct(x['pass_at_1'])} [{points(lo)}, {points(hi)}]"

    return [
        f"Holdout headline: strict pass@1 on math_holdout ({h.get('items', '?')} items x {smp['n_for_pass_at_1']} samples each, "
        f"temperature {smp['temperature']}, eval seed {smp['seed']})",
        f"  pi0 {rate(p)} -> final {rate(f)} (Wilson 95%)",
        f"  Lift: {lift_text(h)}",
        f"Gate input (course.eval, ONE sample per item, so noisier): pi0 {p['eval_passed']}/{p['eval_n']} -> final "
        f"{f['eval_passed']}/{f['eval_n']}; course.gate: {h['gate'].get('verdict')} (gate.txt)",
    ]


def write_curves(run_dir: Path, records: list[dict[str, Any]], rubric: str) -> None:
    """curves.csv (one row per step; eval columns filled on evaluation steps) and curves.png."""
    import csv

    cols = ["step", "reward", "strict_pass_train", "kl_k1_per_token", "kl_k3_per_token", "entropy_per_token",
            "no_signal_groups", "truncated_share", "multi_number_share", "mean_tokens"]
    code_cols = [f"share_{c}" for c in CURVE_CODES] + ["share_other"]
    eval_cols = ["slice_strict_pass", "slice_rubric_reward"]
    smooth_cols = [f"reward_mean{SMOOTH_WINDOW}", f"reward_mean{SMOOTH_WINDOW}_lo", f"reward_mean{SMOOTH_WINDOW}_hi",
                   f"strict_pass_train_mean{SMOOTH_WINDOW}"]
    steps = [r for r in records if "reward" in r]
    reward_band = trailing_mean_band([r["reward"] for r in steps])
    strict_band = trailing_mean_band([r["strict_pass_train"] for r in steps])
    smooth = {r["step"]: [round(m, 6), round(lo, 6), round(hi, 6), round(s[0], 6)]
              for r, (m, lo, hi), s in zip(steps, reward_band, strict_band)}
    with open(run_dir / "curves.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(cols + code_cols + eval_cols + smooth_cols)
        for r in records:
            row = [r.get(c, "") for c in cols]
            codes = r.get("strict_codes", {})
            row += [codes.get(c, 0.0) if codes else "" for c in CURVE_CODES]
            row += [round(sum(v for k, v in codes.items() if k not in CURVE_CODES), 6) if codes else ""]
            e = r.get("eval", {})
            row += [e.get(c, "") for c in eval_cols]
            row += smooth.get(r["step"], [""] * len(smooth_cols))
            w.writerow(row)

    from course.lib.plotting import plot_to

    ev = [r["eval"] for r in records if "eval" in r]
    xs = [r["step"] for r in steps]
    what = "strict" if rubric == "strict" else f"{rubric} (proxy)"

    def draw(plt):  # type: ignore[no-untyped-def]
        fig, axes = plt.subplots(2, 2, figsize=(13, 8.5))
        # (a) the story: proxy and goal on the same fixed prompts and samples
        ax = axes[0][0]
        if rubric != "strict":
            ax.plot([e["step"] for e in ev], [e["slice_rubric_reward"] for e in ev], "o-", color="tab:orange", label=f"{rubric} reward (proxy)")
        ax.plot([e["step"] for e in ev], [e["slice_strict_pass"] for e in ev], "s-", color="tab:blue", label="strict pass rate (goal)")
        ax.set_xlabel("step (policy updates)"); ax.set_ylabel("mean reward / pass rate (0-1)"); ax.set_ylim(0, 1)
        ax.set_title(f"Same prompts: fixed dev slice ({slice_label(ev[0]) if ev else ''})", fontsize=10)
        ax.legend(fontsize=8, loc="lower left")
        # (b) the training samples: per step (faint) and a trailing mean with its band
        ax = axes[0][1]
        ax.plot(xs, [r["reward"] for r in steps], ".", alpha=0.35, color="tab:orange", label=f"{what} reward, mean of one step's samples")
        if steps:
            ax.plot(xs, [m for m, _, _ in reward_band], "-", color="tab:orange", label=f"{what} reward, trailing mean of {SMOOTH_WINDOW} steps")
            ax.fill_between(xs, [lo for _, lo, _ in reward_band], [hi for _, _, hi in reward_band], color="tab:orange", alpha=0.2,
                            label="band: trailing mean +/- 2 standard errors")
            if rubric != "strict":
                ax.plot(xs, [m for m, _, _ in strict_band], "-", color="tab:blue", label=f"strict pass rate of the same samples, trailing mean of {SMOOTH_WINDOW}")
        ax.set_xlabel("step (policy updates)"); ax.set_ylabel("mean reward / pass rate (0-1)"); ax.set_ylim(0, 1)
        ax.set_title("Training samples (fresh prompts each step)", fontsize=10)
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2)  # below: the curves fill the box
        # (c) drift from pi0 and entropy
        ax = axes[1][0]
        ax.plot(xs, [r["kl_k3_per_token"] for r in steps], label="KL to pi0 per token (k3)")
        ax.plot(xs, [r["kl_k1_per_token"] for r in steps], label="KL to pi0 per token (k1)", alpha=0.6)
        ax.plot(xs, [r["entropy_per_token"] for r in steps], label="policy entropy per token")
        ax.set_xlabel("step (policy updates)"); ax.set_ylabel("nats per token"); ax.set_ylim(bottom=min(0.0, *[r["kl_k1_per_token"] for r in steps]) if steps else 0)
        ax.set_title("Drift from pi0 and entropy", fontsize=10); ax.legend(fontsize=8)
        # (d) what the training samples became, by strict verdict
        ax = axes[1][1]
        for c in CURVE_CODES:
            ax.plot(xs, [r["strict_codes"].get(c, 0.0) for r in steps], label=c)
        ax.plot(xs, [r["multi_number_share"] for r in steps], "k--", label="mentions several numbers")
        ax.set_xlabel("step (policy updates)"); ax.set_ylabel("share of the step's training samples (0-1)"); ax.set_ylim(0, 1)
        ax.set_title("Strict verdicts of the training samples", fontsize=10); ax.legend(fontsize=7, ncol=2)
        fig.suptitle(f"course.tinylm.rl, trained on {what} reward")
        fig.tight_layout()
        return fig

    plot_to(run_dir / "curves.png", draw)


def holdout_comparison(args: Any, run_dir: Path, ref: Any, ref_name: str, final: Any, final_name: str,
                       argv: Sequence[str] | None) -> dict[str, Any]:
    """Sample pi0 and the final policy on math_holdout with identical settings, evaluate, gate, estimate pass@1."""
    from course.lib.eval_pipeline import evaluate
    from course.instrument.spec_v1 import score as strict_score
    from course.lib.jsonl import dumps_line, write_text_atomic
    from course.lib.stats import paired_bootstrap, wilson_interval
    from course.tinylm.sample import sample_records
    from course.tinylm.sft_data import DEFAULT_DATASETS, read_items

    holdout_path = DEFAULT_DATASETS[1]
    items = read_items(holdout_path)
    pairs = [(it["id"], it["prompt"]) for it in items]
    settings = dict(seed=args.eval_seed, temperature=args.temperature, top_p=1.0, max_tokens=args.max_tokens)
    out: dict[str, Any] = {"dataset": "data/datasets/math_holdout.jsonl", "sampling": settings | {"n_for_pass_at_1": args.holdout_samples}}
    per_item: dict[str, list[float]] = {}
    for tag, model, name in (("pi0", ref, ref_name), ("final", final, final_name)):
        # (a) one sample per item, written as frozen rollouts and scored by course.eval (the gate's input)
        recs, trunc1 = sample_records(model, name, pairs, n=1, **settings)
        frozen = run_dir / f"holdout_{tag}_rollouts.jsonl"
        write_text_atomic(frozen, "".join(dumps_line(r) + "\n" for r in recs))
        eval_dir = run_dir / f"eval_{tag}_holdout"
        _, _, eval_summary = evaluate(holdout_path, frozen, outdir=eval_dir, argv=argv)
        # (b) n samples per item (a selection pack) for a pass@1 estimate that is not one draw per item
        pack, trunc_n = sample_records(model, name, pairs, n=args.holdout_samples, **settings)
        pack_path = run_dir / f"holdout_{tag}_pack.jsonl"
        write_text_atomic(pack_path, "".join(dumps_line(r) + "\n" for r in pack))
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
    out["gate"] = run_gate(run_dir, args.gate_min_delta)
    return out


def run_gate(run_dir: Path, min_delta: float) -> dict[str, Any]:
    """course.gate on the two course.eval runs (pi0 = baseline, final = candidate); its report goes to gate.txt.

    The bar: at least ``min_delta`` better, and distinguishable from noise (McNemar p < 0.05).
    """
    import io
    from contextlib import redirect_stdout

    try:
        from course.gate import main as gate_main
    except ImportError:
        note = "course.gate is not available in this checkout; compare eval_pi0_holdout and eval_final_holdout by hand"
        (run_dir / "gate.txt").write_text(note + "\n", encoding="utf-8")
        info(f"note: {note}")
        return {"verdict": None, "note": note}
    buf = io.StringIO()
    with redirect_stdout(buf):
        code = gate_main(["--baseline", str(run_dir / "eval_pi0_holdout"), "--candidate", str(run_dir / "eval_final_holdout"),
                          "--min-delta", f"{min_delta:g}", "--require-significance"])
    text = buf.getvalue()
    (run_dir / "gate.txt").write_text(text, encoding="utf-8")
    verdict = {0: "ACCEPT", 1: "REJECT"}.get(code, f"exit {code}")
    # Its report stays in gate.txt: its one-sample delta is a different figure from the pass@1 lift
    # on stdout, and two unlabelled lifts side by side mislead.
    info(f"course.gate on the one-sample course.eval runs: {verdict} (report: gate.txt)")
    return {"verdict": verdict, "exit_code": code, "min_delta": min_delta, "require_significance": True}


def print_report(summary: dict[str, Any], run_dir: Path) -> None:
    """The human summary on stdout: the result, each figure stated once (stderr has the progress)."""
    for line in report_lines(summary, run_dir):
        print(line)


def report_lines(summary: dict[str, Any], run_dir: Path | str) -> list[str]:
    """The lines of the stdout summary (pure: a test reads them without a run)."""
    lines = [f"Run {run_dir}: rubric {summary['rubric']}, beta {summary['beta']}, seed {summary['seed']}, {summary['steps']} steps"]
    lines += same_prompts_lines(summary["first_eval"], summary["last_eval"], summary["rubric"])
    t = summary["final_train"]
    lines.append(f"Training samples, last {t['over_last_steps']} steps: {summary['rubric']} reward {t['reward']:.3f}, "
                 f"strict pass {t['strict_pass_train']:.3f}; KL/token k1 {t['kl_k1_per_token']:.4f} k3 {t['kl_k3_per_token']:.4f}, "
                 f"KL/sample (k1) {t['kl_k1_per_sample']:.3f}, entropy/token {t['entropy_per_token']:.3f}")
    h = summary.get("holdout")
    if h:
        lines += holdout_lines(h)
    for a in summary["goodhart_alarms"]:
        lines.append(f"GOODHART ALARM at {a}")
    lines.append(f"Wall time {summary['wall_seconds']:.0f}s, peak RSS {summary['peak_rss_mb']:.0f} MB")
    return lines


if __name__ == "__main__":
    raise SystemExit(main())
