"""Loop C, written once for every policy: REINFORCE with a group baseline and a KL leash to pi0.

Each step: draw P fresh training problems (a seeded stream from the course's
generator, never a dev or holdout prompt), sample G completions per problem
from the *current* policy (on-policy data), score them with the chosen rubric,
and push up the log-probability of the tokens of completions that beat their
group's mean reward, push down the rest, while a KL penalty pulls the policy
back towards the reference pi0.

    loss = mean over samples i of [ -A_i * sum_t log pi(a_it)  +  beta * sum_t k3_it ]
    A_i  = r_i - mean(r of the G samples of the same prompt)       (group baseline)
    k3   = (pi0/pi - 1) - log(pi0/pi)  at each chosen token        (KL estimator, see policy_loss)

That is the default objective. Four switches change it, each a choice practitioners argue about
(``LoopSettings``' last four fields; docs/objective.md reads every formula): which KL estimator (k1, k2, k3),
where it goes (a loss term, or subtracted from the reward), what the token sum is divided by
(the number of samples B, the default; each completion's length, GRPO; all tokens of the batch,
DAPO) and whether advantages are divided by their group's standard deviation (GRPO) or not.
``python -m course.kl_estimators`` and ``python -m course.loss_normalisation`` show, exactly,
what each choice does to the gradient.

Every few steps the policy is measured on a fixed slice (math_dev, the same
random numbers every time) with the *strict* scorer, whatever rubric it is
trained on, and with that rubric on the same samples. At the end pi0 and the
final policy are sampled on math_holdout with identical settings, both scored by
``course.eval``'s pipeline into the run directory and compared by the gate's
logic (``course.lib.evaluation.locked_room``): a Locked-Room comparison where only the
policy differs.

Who the policy is does not matter to the loop. Anything that implements
:class:`RLPolicy` (sample a group with one seed per row, give the log-probabilities
of those completions under itself and under pi0, name its parameters, save
itself) is trained by the same lines: the course's tiny LM
(``course.tinylm.policy.TinyLMPolicy``, run by ``python -m course.tinylm.rl``) and
a real pretrained LLM (``course.llm.policy.LLMPolicy``, run by ``python -m course.llm.rl``).

One rule the loop adds, because a real LLM meets it on its first step: when a
step's gradient is exactly zero everywhere (every group's rewards equal, so every
advantage is 0, and the KL term has no slope: beta 0 or pi still equal to pi0),
the optimizer step is SKIPPED and the record says so (``update_skipped``).
Adam's running averages from earlier steps would otherwise keep moving the
weights with no evidence at all. Nothing learns from a reward that never varies.

Zero-signal accounting, every step: ``no_signal_groups`` is the share of groups whose
rewards are all equal (TRL logs it as ``frac_reward_zero_std``) and ``pg_samples`` the
number of samples whose advantage is non-zero, the only ones the reward's gradient comes
from. The policy-gradient loss's VALUE says nothing about learning: advantages sum to zero
in every group, so ``pg_loss`` hovers near 0 while its gradient is large. It means "not
learning" only when ``pg_samples`` is 0 (and then, with no KL slope, the update is skipped).

The library does no printing: the tool passes ``say`` (a diagnostic line on
stderr) and ``progress`` (a factory of progress lines, ``course.lib.policy.progress.ProgressLine``).
"""

from __future__ import annotations

import re
import time
from collections import Counter
from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable, Iterator, Protocol, Sequence

from course.instrument.rubric_registry import get_rubric
from course.instrument.spec_v1 import score as strict_score
from course.lib.bundled import DEFAULT_DATASETS, MATH_HOLDOUT, TRAINING_EXCLUDED
from course.lib.evaluation.locked_room import Outcomes, decide, load_outcomes, render
from course.lib.evaluation.pipeline import evaluate
from course.lib.policy.report import story_line, tail_means, write_curves
from course.lib.policy.training_problems import problem_stream, read_items, read_prompts
from course.lib.records.jsonl import JsonlWriter, dumps_line
from course.lib.records.manifest import peak_rss_kib
from course.lib.records.runs import write_json, write_manifest, write_text
from course.lib.stats import clustered_interval, paired_bootstrap

# PyTorch is imported inside the functions that use it: the tools' --help and the one-line
# missing-extra message (course.lib.extras) must work on an install without it.


# ---------------------------------------------------------------------------
# What the loop needs from a policy, and from its caller
# ---------------------------------------------------------------------------
class SampledBatchLike(Protocol):
    """G sampled completions for each of P prompts, B = P * G rows in prompt-major order.

    ``mask`` is a (B, K) bool tensor, True on the chosen tokens (the actions, the end token included);
    the rest (token ids, the prompts' encoding) is the policy's own business."""

    texts: list[str]
    truncated: list[bool]
    mask: Any


class RLPolicy(Protocol):
    """A policy the loop can train: the small interface both the tiny LM and the real LLM implement."""

    pi0_name: str  # pi0's name (the policy before any training: the holdout's baseline), as records name it

    def describe(self) -> str:
        """One line for the log: what is trained, how many parameters, what the reference is."""

    def generate(self, prompts: Sequence[str], row_seeds: Sequence[str], *, group: int, temperature: float,
                 max_tokens: int) -> SampledBatchLike:
        """Sample ``group`` completions per dataset prompt from the current policy (no gradients);
        row b draws its random numbers from ``row_seeds[b]`` alone."""

    def logprobs(self, rollouts: Any) -> tuple[Any, Any]:
        """log pi(chosen token) (B, K), carrying gradients, and the entropy there (B, K, no gradients);
        0 where the mask is False."""

    def reference_logprobs(self, rollouts: Any) -> Any:
        """log pi_ref(chosen token) (B, K), no gradients: the KL reference, pi0 unless a warm start
        moved the starting point (then the policy RL started from)."""

    def parameters(self) -> list[Any]:
        """The tensors the optimizer updates (all weights, or only adapters)."""

    def train_mode(self, training: bool) -> None:
        """Switch between sampling (eval) and updating (train) modes."""

    def sample_items(self, items: Sequence[tuple[str, str]], *, n: int, seed: int, temperature: float,
                     max_tokens: int) -> list[list[tuple[str, bool]]]:
        """``n`` completions (text, truncated) per (item id, prompt) from the current policy,
        each row seeded by (seed, item id, sample index)."""

    def rollout_records(self, items: Sequence[tuple[str, str]], *, pi0: bool, policy_name: str, n: int,
                        seed: int, temperature: float, top_p: float, max_tokens: int,
                        progress: Callable[[int], None] | None = None) -> tuple[list[dict[str, Any]], int]:
        """Frozen-rollouts (n = 1) or selection-pack records of pi0 (``pi0``) or of the current
        policy, in the course's formats, and the number of truncated samples."""

    def save(self, path: Path) -> str:
        """Write the trained weights (all, or the adapters) to ``path``; return the file's sha256."""

    def trained_name(self, sha256: str) -> str:
        """The trained policy's name in records, from the sha256 that ``save`` returned."""

    def shift_report(self, policy_name: str) -> dict[str, Any] | None:
        """The distribution-shift table (frozen pi0 rollouts beside fresh samples) or None when the
        policy has no frozen pi0 rollouts to compare with."""


class Progress(Protocol):
    """A progress line (``course.lib.policy.progress.ProgressLine``)."""

    def update(self, done: int) -> None: ...
    def clear(self) -> None: ...
    def info(self, message: str) -> None: ...


ProgressFactory = Callable[[str, int], Progress]
Say = Callable[[str], None]


@dataclass(frozen=True)
class LoopSettings:
    """The settings of one run of the loop (every tool maps its command line onto these)."""

    rubric: str
    seed: int
    beta: float
    steps: int
    prompts_per_step: int
    group_size: int
    lr: float
    grad_clip: float
    temperature: float
    max_tokens: int
    eval_every: int
    eval_samples: int
    slice_items: int
    holdout_samples: int
    eval_seed: int
    save_every: int
    gate_min_delta: float
    # The objective's four switches (defaults: the loop as it always was; see policy_loss)
    kl_estimator: str = "k3"  # k1 | k2 | k3
    kl_in: str = "loss"  # loss | reward
    loss_norm: str = "constant"  # constant | seq-mean | token-mean
    scale_rewards: str = "none"  # none | group
    # Dynamic sampling (DAPO): up to this many batches of P problems are drawn per step and the groups whose
    # rewards differ are trained on; 1 = off, the loop as it always was (see sample_step)
    dynamic_sampling: int = 1

    @classmethod
    def from_args(cls, args: Any) -> "LoopSettings":
        """The loop's settings from a tool's parsed arguments (the same names)."""
        return cls(**{name: getattr(args, name) for name in cls.__dataclass_fields__})


@dataclass(frozen=True)
class StartingPoint:
    """The policy the RL steps started from, when a warm start moved it off pi0: its name in records and
    a context in which the trained policy computes as it was then (the LLM's anchored adapters), so the
    holdout can measure RL's own part of the lift (final against its starting point, paired)."""

    name: str
    computing_as: Callable[[], Any]  # () -> a context manager


@dataclass
class Trained:
    """What the training loop leaves behind (besides rl_log.jsonl, checkpoints/ and the final weights)."""

    policy: Any  # the RLPolicy, trained
    final_file: str  # the final weights' file name in the run directory
    final_sha: str
    final_name: str  # the trained policy's name in records
    records: list[dict[str, Any]]  # the rl_log.jsonl lines
    evals: list[dict[str, Any]]  # the fixed-slice evaluations
    alarms: list[str]
    log_sha256: str
    train_seconds: float
    skipped_updates: int  # steps whose gradient was exactly zero (no update made)


# ---------------------------------------------------------------------------
# Training: the loop
# ---------------------------------------------------------------------------
def train(s: LoopSettings, policy: RLPolicy, run_dir: Path, *, progress: ProgressFactory, say: Say,
          label: str = "rl step", weights_suffix: str = ".pt") -> Trained:
    """The training run, top to bottom: rl_log.jsonl, checkpoints/ and final<suffix> in ``run_dir``."""
    import torch

    t_start = time.time()
    rubric = get_rubric(s.rubric)
    opt = torch.optim.Adam(policy.parameters(), lr=s.lr, betas=(0.9, 0.99))
    dev_slice, prompts = training_data(s)
    ckpt_dir = run_dir / "checkpoints"
    ckpt_dir.mkdir()
    line = progress(label, s.steps)
    line.info(
        f"{policy.describe()}; rubric {s.rubric!r}, beta {s.beta}, {s.steps} steps x {s.prompts_per_step} prompts x "
        f"{s.group_size} samples, lr {s.lr}"
    )
    line.info(f"objective: {objective_text(s)}")
    watch = SliceWatch(s, dev_slice, rubric, line)
    log = JsonlWriter(run_dir / "rl_log.jsonl")
    records: list[dict[str, Any]] = []
    skipped = 0

    def write(rec: dict[str, Any]) -> None:
        log.write(rec)
        records.append(rec)

    write({"step": 0, "eval": watch.evaluate(policy, 0)})
    for step in range(1, s.steps + 1):
        problems = [next(prompts) for _ in range(s.prompts_per_step)]
        more = lambda: [next(prompts) for _ in range(s.prompts_per_step)]  # noqa: E731  (dynamic sampling's next batch)
        rec = reinforce_step(s, step, policy, opt, rubric, problems, more=more)  # sample, score, update
        skipped += bool(rec.get("update_skipped"))
        # the policy's, unselected
        watch.train_rewards.append(rec.get("dynamic_sampling", {}).get("reward_drawn", rec["reward"]))
        if step % s.eval_every == 0 or step == s.steps:
            rec["eval"] = watch.evaluate(policy, step)
        write(rec)  # no wall-clock time in it: the log is byte-identical across reruns
        if step % s.save_every == 0 and step != s.steps:
            policy.save(ckpt_dir / f"step_{step:04d}{weights_suffix}")
        if step % s.eval_every == 0 or step == 1:
            line.info(story_line(rec, s.rubric, time.time() - t_start))
        line.update(step)
    line.clear()
    log.close()
    final_file = f"final{weights_suffix}"
    final_sha = policy.save(run_dir / final_file)
    final_name = policy.trained_name(final_sha)
    train_seconds = time.time() - t_start
    say(f"training done in {train_seconds:.0f}s; final policy {final_name}")
    if skipped:
        say(f"{skipped} of {s.steps} steps had a gradient of exactly zero (every group's rewards equal, no KL slope): "
            "no update was made on them")
    say(zero_signal_text(zero_signal(records, s)))
    return Trained(policy, final_file, final_sha, final_name, records, watch.evals, watch.alarms, log.sha256,
                   train_seconds, skipped)


def training_data(s: LoopSettings) -> tuple[list[dict[str, Any]], Iterator[Any]]:
    """The fixed evaluation slice (the first ``slice_items`` math_dev items) and the endless stream
    of training problems, seeded by ``seed``, that never repeats a dev, holdout or benchmark-holdout prompt."""
    dev_all = read_items(DEFAULT_DATASETS[0])
    excluded = read_prompts(TRAINING_EXCLUDED)
    return dev_all[: s.slice_items], problem_stream(f"rl-prompts:{s.seed}", excluded)


def has_gradient(params: Sequence[Any]) -> bool:
    """True when some parameter's gradient is non-zero (an update would carry evidence)."""
    return any(p.grad is not None and bool(p.grad.any()) for p in params)


@dataclass(frozen=True)
class StepBatch:
    """What one step trains on: the rollouts of P groups, their rubric rewards and strict codes (B,), and,
    with dynamic sampling, what was drawn to find them (``drawn``: None when it is off)."""

    rollouts: Any
    rewards: list[float]
    strict_codes: list[str]
    drawn: dict[str, Any] | None


def sample_step(s: LoopSettings, step: int, policy: RLPolicy, rubric: Any, problems: list[Any],
                more: Callable[[], list[Any]] | None = None) -> StepBatch:
    """Fresh on-policy samples for one step: G completions for each of P problems, scored.

    With ``s.dynamic_sampling`` = D > 1 (DAPO's dynamic sampling): a group whose G rewards are all
    equal has advantage 0 on every sample and teaches nothing, so while fewer than P groups have
    rewards that differ, another batch of P fresh problems (``more()``) is drawn, up to D batches.
    The step then trains on the first P groups with a signal, in the order drawn; if the cap came
    first, the rest of the batch is filled with the first draw's signal-less groups (they carry the
    KL term only; the batch keeps P x G samples, so the loss's scale does not depend on the luck of
    the draw). Draw 0 is seeded exactly as without dynamic sampling; draw d > 0 as
    ``rl:<seed>:<step>:d<d>:<problem>:<sample>``. Cost: up to D times the sampling of a step.
    What it does not do: make the POLICY's groups more informative. ``drawn`` records the share of
    signal-less groups among all drawn (the policy's own figure) beside the trained batch's.
    """
    P, G = s.prompts_per_step, s.group_size
    D = s.dynamic_sampling
    policy.train_mode(False)
    draws: list[tuple[Any, list[float], list[str]]] = []
    signal: list[tuple[int, int]] = []  # (draw, group) with rewards that differ, in the order drawn
    flat: list[tuple[int, int]] = []
    batch = problems
    for d in range(D):
        if d:
            if more is None:
                raise ValueError("dynamic sampling needs more(): the stream of fresh problems")
            batch = more()
        prefix = f"rl:{s.seed}:{step}" if d == 0 else f"rl:{s.seed}:{step}:d{d}"
        seeds = [f"{prefix}:{i}:{j}" for i in range(P) for j in range(G)]
        ro = policy.generate(
            [b.prompt for b in batch], seeds, group=G, temperature=s.temperature, max_tokens=s.max_tokens
        )
        # rewards from the training rubric; the strict verdict rides along for the log
        examples = [{"expected_answer": b.answer} for b in batch for _ in range(G)]
        rewards = [float(rubric(ex, t)["reward"]) for ex, t in zip(examples, ro.texts)]
        codes = [strict_score(ex, t)["details"]["error_code"] for ex, t in zip(examples, ro.texts)]
        draws.append((ro, rewards, codes))
        for i in range(P):
            r = rewards[i * G:(i + 1) * G]
            (signal if max(r) != min(r) else flat).append((d, i))
        if len(signal) >= P:
            break
    policy.train_mode(True)
    if D == 1:  # the loop as it always was: the one draw, untouched
        ro, rewards, codes = draws[0]
        return StepBatch(ro, rewards, codes, None)
    from course.lib.policy.sampling import take_groups

    picks = (signal + flat)[:P]
    ro = take_groups([(draws[d][0], i) for d, i in picks])
    rewards = [r for d, i in picks for r in draws[d][1][i * G:(i + 1) * G]]
    codes = [c for d, i in picks for c in draws[d][2][i * G:(i + 1) * G]]
    every = [r for _, rs, _ in draws for r in rs]
    every_codes = [c for _, _, cs in draws for c in cs]
    drawn = {"draws": len(draws), "groups_drawn": len(draws) * P,
             "no_signal_groups_drawn": round(len(flat) / (len(draws) * P), 6),
             "reward_drawn": round(sum(every) / len(every), 6),
             "strict_pass_drawn": round(every_codes.count("ok") / len(every_codes), 6)}
    return StepBatch(ro, rewards, codes, drawn)


def reinforce_step(s: LoopSettings, step: int, policy: RLPolicy, opt: Any, rubric: Any, problems: list[Any],
                   more: Callable[[], list[Any]] | None = None) -> dict[str, Any]:
    """One policy update on fresh on-policy samples; returns the step's log record."""
    import torch

    P, G = s.prompts_per_step, s.group_size
    # 1-2. fresh on-policy samples (G completions for each of P new problems), scored by the training
    # rubric (the strict verdict rides along for the log); with dynamic sampling, the groups with a signal
    got = sample_step(s, step, policy, rubric, problems, more)
    ro, strict_codes = got.rollouts, got.strict_codes
    rewards = torch.tensor(got.rewards)  # (B,)

    # 3. log-probabilities of the chosen tokens under the policy (with grad) and under pi0 (without)
    logp, entropy = policy.logprobs(ro)  # (B, K) each
    with torch.no_grad():
        logp_ref = policy.reference_logprobs(ro)  # (B, K)
    mask = ro.mask.float()  # (B, K): 1 on chosen tokens (the completion's tokens and its end token)
    n_tokens = mask.sum()

    # 4. group baseline: advantage = reward - mean reward of the same prompt's G samples.
    # (This is (G-1)/G times the leave-one-out advantage, so the policy-gradient estimate is an
    # unbiased estimate of (G-1)/G times grad E[r]. By default we do NOT divide by the group's
    # std: that would blow up nearly unanimous groups; --scale-rewards group does, as GRPO.)
    # With --kl-in reward the KL estimate, summed over the completion's tokens, is subtracted from
    # the reward first (PPO-style RLHF): REINFORCE then differentiates it through the score function.
    r = rewards.view(P, G)
    no_signal = float((r.max(dim=1).values == r.min(dim=1).values).float().mean())  # all G equal: zero gradient
    kl_penalty = None
    if s.kl_in == "reward":
        with torch.no_grad():
            kl_penalty = s.beta * kl_estimate(
                s.kl_estimator, (logp.detach() - logp_ref) * mask, mask
            ).sum(dim=1)  # (B,)
        r = (rewards - kl_penalty).view(P, G)
    adv = group_advantages(r, s.scale_rewards)  # (B,)
    flat = (r.max(dim=1).values == r.min(dim=1).values).repeat_interleave(G)  # (B,) the rewards used were all equal
    pg_samples = int(((adv != 0) & ~flat).sum())  # samples the reward's gradient comes from

    # 5. the loss: REINFORCE term + beta * KL penalty (see policy_loss for the choices and their reasons)
    loss, parts = policy_loss(logp, logp_ref, ro.mask, adv, s.beta, kl_estimator=s.kl_estimator, kl_in=s.kl_in,
                              loss_norm=s.loss_norm)
    k1, k3 = parts["k1"], parts["k3"]
    opt.zero_grad(set_to_none=True)
    loss.backward()  # advantage > 0: raise log pi of that completion's tokens; < 0: lower them
    params = policy.parameters()
    grad_norm = float(torch.nn.utils.clip_grad_norm_(params, s.grad_clip))
    # No evidence, no update: Adam's momentum would otherwise move the weights on a zero gradient.
    skip = not has_gradient(params)
    if not skip:
        opt.step()

    # 6. the step's record
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
        "pg_samples": pg_samples,
        "truncated_share": round(sum(ro.truncated) / len(ro.truncated), 6),
        "multi_number_share": round(sum(mentions_several_numbers(t) for t in ro.texts) / len(ro.texts), 6),
        "mean_tokens": round(float(n_tokens) / len(adv), 4),
        "mean_tokens_wrong": mean_or_none([n for n, c in zip(mask.sum(dim=1).tolist(), strict_codes) if c != "ok"]),
        "pg_loss": round(float(parts["pg_loss"]), 6),
        "kl_loss": round(float(parts["kl_loss"]), 6),
        "grad_norm": round(grad_norm, 6),
        "strict_codes": {k: round(codes[k] / len(strict_codes), 6) for k in sorted(codes)},
        "example": ro.texts[0],
    }
    if kl_penalty is not None:  # (only then: a default run logs what it always did, plus the zero-signal count)
        rec["kl_penalty_in_reward"] = round(float(kl_penalty.mean()), 6)
    # dynamic sampling: what was drawn to fill the batch (reward above: the batch's, selected)
    if got.drawn is not None:
        rec["dynamic_sampling"] = got.drawn
    if skip:
        rec["update_skipped"] = True  # only on such steps: a run where it never happens logs what it always did
    return rec


class SliceWatch:
    """The fixed-slice measurements during training, and the Goodhart alarm they feed.

    The same items and the same random numbers (``eval_seed``) at every evaluation:
    differences between evaluations come from the policy, not from sampling luck
    (common random numbers).
    """

    def __init__(self, s: LoopSettings, items: list[dict[str, Any]], rubric: Any, progress: Progress) -> None:
        self.s, self.items, self.rubric, self.progress = s, items, rubric, progress
        self.evals: list[dict[str, Any]] = []
        self.alarms: list[str] = []
        self.train_rewards: list[float] = []  # training rewards since the previous evaluation

    def evaluate(self, policy: RLPolicy, step: int) -> dict[str, Any]:
        """Measure, say it on stderr, check for Goodhart; return the record's "eval" entry."""
        e = {"step": step, **slice_scores(policy, self.items, self.rubric, self.s)}
        rewards = self.train_rewards
        e["train_reward_interval"] = (sum(rewards) / len(rewards)) if rewards else None
        rewards.clear()
        self.evals.append(e)
        line = f"[eval step {step:3d}] fixed dev slice: strict pass {e['slice_strict_pass']:.3f}"
        if self.s.rubric != "strict":
            line += f", {self.s.rubric} reward {e['slice_rubric_reward']:.3f}"
        self.progress.info(line)
        alarm = goodhart_alarm(self.evals)
        if alarm:
            self.alarms.append(f"step {step}: {alarm}")
            self.progress.info(f"  GOODHART ALARM: {alarm}")
        e["goodhart_alarm"] = alarm
        return e


def slice_scores(policy: RLPolicy, items: list[dict[str, Any]], rubric: Any, s: LoopSettings) -> dict[str, Any]:
    """Strict pass rate, and the training rubric's mean reward, of the policy's samples on the fixed slice."""
    drawn = policy.sample_items([(it["id"], it["prompt"]) for it in items], n=s.eval_samples, seed=s.eval_seed,
                                temperature=s.temperature, max_tokens=s.max_tokens)
    strict = proxy = 0.0
    codes: Counter[str] = Counter()
    n = 0
    for it, samples in zip(items, drawn):
        for text, _ in samples:
            v = strict_score(it, text)
            strict += v["reward"]
            proxy += rubric(it, text)["reward"]
            codes[v["details"]["error_code"]] += 1
            n += 1
    return {"slice_strict_pass": strict / n, "slice_rubric_reward": proxy / n, "slice_n": n,
            "slice_items": len(items), "slice_samples_per_item": s.eval_samples,
            "slice_codes": {k: codes[k] for k in sorted(codes)}}


# ---------------------------------------------------------------------------
# The loss and the alarm: the pieces of the algorithm, each readable (and tested) on its own
# ---------------------------------------------------------------------------
KL_ESTIMATORS = ("k1", "k2", "k3")  # (the maths of each: course.lib.learning.kl_estimators)
KL_PLACES = ("loss", "reward")
LOSS_NORMS = ("constant", "seq-mean", "token-mean")  # (each token's weight: course.lib.learning.loss_normalisation)
REWARD_SCALES = ("none", "group")
STD_EPS = 1e-4  # added to a group's std before dividing by it (TRL's constant; loss_normalisation.STD_EPS)


def policy_loss(logp: Any, logp_ref: Any, mask: Any, adv: Any, beta: float, *, kl_estimator: str = "k3",
                kl_in: str = "loss", loss_norm: str = "constant") -> tuple[Any, dict[str, Any]]:
    """REINFORCE with a KL penalty. Returns (loss, parts).

    logp, logp_ref: (B, K) log pi and log pi0 of the chosen tokens (logp carries gradients)
    mask:           (B, K) bool, True on chosen tokens
    adv:            (B,) advantages (reward minus the group mean, maybe scaled), no gradients
    parts:          k1, k3 (B, K) per-token KL estimates (0 off the mask), pg_loss, kl_loss (all detached, for logs)

    Per chosen token:  loss_it = -A_i log pi(a_it) + beta * k_it   (the KL term only with kl_in "loss"),
    and the sum over tokens is divided (``loss_norm``): by B, the number of samples ("constant", the
    default: a completion's tokens get no extra weight each, and the divisor never changes; Dr. GRPO
    divides by B x max_tokens instead, a fixed factor), by B x the completion's own length
    ("seq-mean", GRPO: a long completion's tokens share its advantage, so long wrong answers are
    punished less per token), or by all tokens of the batch ("token-mean", DAPO).
    ``python -m course.loss_normalisation`` prints each token's weight under each.

    KL to pi0, per chosen token, with r = pi0/pi (samples from pi, on-policy):
      k1 = -log r = log pi/pi0       its value is an unbiased estimate of KL(pi || pi0); one token's can be < 0
      k2 = 1/2 (log r)^2             its value is biased
      k3 = (r - 1) - log r           its value is an unbiased estimate of KL(pi || pi0), never < 0, lower
                                     variance (Schulman, 2020, "Approximating KL divergence")
    What the penalty's GRADIENT follows is another matter, and depends on where it goes:
      in the loss (differentiated through log pi), in expectation on one token: k1 gives 0, k2 gives
        grad KL(pi || pi0), and k3 (the default, as in GRPO) gives grad KL(pi0 || pi), the FORWARD KL,
        not the reverse KL the objective E[r] - beta KL(pi || pi0) names. Summed over the tokens of a
        sequence, k2 and k3 see only each token's own step: they miss how an earlier token changes
        the KL still to come.
      in the reward (kl_in "reward": the caller subtracts beta * sum_t k_t from the reward before the
        advantages; nothing is added here), k1 gives exactly grad KL(pi || pi0) of the whole sequence,
        through the noisier score function (as in PPO-style RLHF).
    ``python -m course.kl_estimators`` computes every one of these exactly. The default k3 in the loss
    stays because its value and its gradient are exactly zero while pi == pi0, it can never reward
    drifting away, and it adds no noise to the advantages; what it pulls towards is pi0's support
    (forward KL: mass-covering), which on a policy near pi0 is nearly the same direction.
    Both k1 and k3 are logged whatever the choice.

    The policy-gradient term is REINFORCE on whole sequences: the completion's advantage multiplies
    the sum of its token log-probabilities (one reward per completion, credited to every token that
    produced it). Advantage > 0 raises the log-probability of that completion's tokens; < 0 lowers it.
    """
    import torch

    for name, value, allowed in (("kl_estimator", kl_estimator, KL_ESTIMATORS), ("kl_in", kl_in, KL_PLACES),
                                 ("loss_norm", loss_norm, LOSS_NORMS)):
        if value not in allowed:
            raise ValueError(f"{name} must be one of {', '.join(allowed)}, got {value!r}")
    m = mask.float()
    log_ratio = (logp - logp_ref) * m  # (B, K): log pi/pi0 at chosen tokens, 0 elsewhere
    k1 = log_ratio
    k3 = (torch.exp(-log_ratio) - 1 + log_ratio) * m  # (B, K), >= 0
    pg_loss = normalised(adv[:, None] * logp * m, m, loss_norm, -1.0)
    if kl_in == "loss":
        k = {"k1": k1, "k3": k3}.get(kl_estimator)
        kl_loss = normalised(kl_estimate(kl_estimator, log_ratio, m) if k is None else k, m, loss_norm, beta)
    else:
        kl_loss = torch.zeros((), dtype=logp.dtype)
    parts = {"k1": k1.detach(), "k3": k3.detach(), "pg_loss": pg_loss.detach(), "kl_loss": kl_loss.detach()}
    return pg_loss + kl_loss, parts


def normalised(x: Any, m: Any, loss_norm: str, coef: float) -> Any:
    """coef x (the sum of the (B, K) per-token terms ``x``, 0 off the mask) / the divisor ``loss_norm`` names."""
    if loss_norm == "constant":
        return coef * x.sum() / x.shape[0]  # (this order of operations is the loop's from the start: same bits)
    if loss_norm == "token-mean":
        return coef * x.sum() / m.sum().clamp(min=1.0)
    return coef * (x.sum(dim=1) / m.sum(dim=1).clamp(min=1.0)).sum() / x.shape[0]  # seq-mean


def kl_estimate(name: str, log_ratio: Any, m: Any) -> Any:
    """The per-token KL estimate ``name`` from log_ratio = log pi/pi0 (B, K), 0 off the mask ``m``."""
    import torch

    if name == "k1":
        return log_ratio
    if name == "k2":
        return 0.5 * log_ratio * log_ratio
    if name == "k3":
        return (torch.exp(-log_ratio) - 1 + log_ratio) * m
    raise ValueError(f"kl_estimator must be one of {', '.join(KL_ESTIMATORS)}, got {name!r}")


def group_advantages(r: Any, scale: str) -> Any:
    """(B,) advantages from (P, G) rewards: minus the group's mean, and divided by the group's sample
    standard deviation + STD_EPS when ``scale`` is "group" (as TRL computes it)."""
    adv = r - r.mean(dim=1, keepdim=True)
    if scale == "group":
        adv = adv / (r.std(dim=1, keepdim=True) + STD_EPS)
    elif scale != "none":
        raise ValueError(f"scale_rewards must be one of {', '.join(REWARD_SCALES)}, got {scale!r}")
    return adv.view(-1)


def mean_or_none(xs: Sequence[float]) -> float | None:
    """The mean to 4 places, or None for no values (a step where every sample passed has no wrong answer to measure)."""
    return round(sum(xs) / len(xs), 4) if xs else None


def objective_text(s: LoopSettings) -> str:
    """The run's objective in one line, for the log and the manifest."""
    where = "per token in the loss" if s.kl_in == "loss" else "summed over each completion, subtracted from the reward"
    scale = "" if s.scale_rewards == "none" else ", divided by the group's std"
    divisor = dict(
        zip(LOSS_NORMS, ("the number of samples", "each completion length x samples", "all tokens of the batch"))
    )[s.loss_norm]
    return (f"advantage = reward - group mean{scale}; KL estimator {s.kl_estimator} {where} (beta {s.beta}); "
            f"token sum divided by {divisor}")


def zero_signal(records: Sequence[dict[str, Any]], s: LoopSettings) -> dict[str, Any]:
    """The run's zero-signal accounting from its step records: how often the reward gave no gradient."""
    steps = [r for r in records if "pg_samples" in r]
    samples = len(steps) * s.prompts_per_step * s.group_size
    out = {
        "no_signal_groups_mean": round(sum(r["no_signal_groups"] for r in steps) / max(len(steps), 1), 6),
        "steps_without_pg_signal": sum(r["pg_samples"] == 0 for r in steps),
        "pg_samples": sum(r["pg_samples"] for r in steps),
        "samples": samples,
    }
    drawn = [r["dynamic_sampling"] for r in steps if "dynamic_sampling" in r]
    if drawn:  # the policy's own share (every group drawn) beside the trained batches' above
        out["no_signal_groups_drawn_mean"] = round(sum(d["no_signal_groups_drawn"] for d in drawn) / len(drawn), 6)
        out["groups_drawn"] = sum(d["groups_drawn"] for d in drawn)
    return out


def zero_signal_text(z: dict[str, Any]) -> str:
    """The zero-signal accounting as one line for the log."""
    share = z["pg_samples"] / z["samples"] if z["samples"] else 0.0
    return (f"zero-signal accounting: {z['no_signal_groups_mean']:.0%} of groups had all-equal rewards on average; "
            f"{z['pg_samples']} of {z['samples']} samples ({share:.0%}) carried a policy-gradient signal (non-zero "
            "advantage); "
            f"{z['steps_without_pg_signal']} steps had none (pg_loss near 0 is normal: advantages sum to 0 in "
            "every group; "
            "only pg_samples 0 means the reward taught nothing)"
            + (f"; dynamic sampling drew {z['groups_drawn']} groups, {z['no_signal_groups_drawn_mean']:.0%} of them "
               "without a signal on average (the policy's own share)" if "groups_drawn" in z else ""))


def goodhart_alarm(evals: list[dict[str, Any]], window: int = 3, threshold: float = 0.03) -> str:
    """Words when, over the last ``window`` evaluations, training reward rose while strict pass fell.

    Compares the newest evaluation with the one ``window - 1`` evaluations earlier:
    the mean training reward of the steps before each (the interval since the
    evaluation before it) and the strict pass rate on the fixed slice. Both moves
    must exceed ``threshold`` so that sampling noise alone rarely trips it.

    >>> e = [{"step": 10, "train_reward_interval": 0.4, "slice_strict_pass": 0.30},
    ...      {"step": 15, "train_reward_interval": 0.5, "slice_strict_pass": 0.28},
    ...      {"step": 20, "train_reward_interval": 0.6, "slice_strict_pass": 0.22}]
    >>> goodhart_alarm(e)  # doctest: +NORMALIZE_WHITESPACE
    'training reward rose 0.400 -> 0.600 (steps 10 -> 20) while the strict pass rate on the fixed slice fell
     0.300 -> 0.220: the proxy is being optimised at the expense of the goal'
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
            f"pass rate on the fixed slice fell {s_old:.3f} -> {s_new:.3f}: the proxy is being optimised at the "
            "expense of the goal"
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
# After training: the shift table, the holdout comparison, its gate, the summary
# ---------------------------------------------------------------------------
def write_run(s: LoopSettings, tmp: Path, final: Path, trained: Trained, argv: Sequence[str] | None, t_start: float, *,
              holdout: bool, manifest: Callable[[dict[str, Any]], dict[str, Any]], progress: ProgressFactory,
              say: Say, tool: str, summary_extra: dict[str, Any] | None = None,
              start: StartingPoint | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """Everything after training, into the temporary run directory ``tmp`` (which becomes ``final``):
    curves, the distribution-shift table, the holdout comparison and its gate, summary.json and
    manifest.json (built by the tool's ``manifest(summary)``, written last: a manifest means the run is complete).
    ``start``: the warm start RL began from, measured on the holdout too (three policies, paired)."""
    write_curves(tmp, trained.records, s.rubric, title=tool)  # curves.csv, curves.png
    summary = run_summary(s, trained)
    summary.update(summary_extra or {})
    trained.policy.train_mode(False)
    shift = trained.policy.shift_report(trained.final_name)
    if shift is not None:
        write_text(tmp / "shift.md", shift["markdown"])
        summary["shift"] = {k: v for k, v in shift.items() if k != "markdown"}
    if holdout:
        summary["holdout"] = holdout_comparison(s, tmp, final, trained, argv, progress=progress, say=say, start=start)
    summary["wall_seconds"] = round(time.time() - t_start, 1)
    summary["peak_rss_mb"] = peak_rss_mb()
    written = manifest(summary)
    write_json(tmp / "summary.json", summary)
    write_manifest(tmp, written)
    return summary, written


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far, in MB (its own: ``manifest.peak_rss_kib``)."""
    return round(peak_rss_kib() / 1024, 1)


def holdout_comparison(s: LoopSettings, tmp: Path, final: Path, trained: Trained, argv: Sequence[str] | None, *,
                       progress: ProgressFactory, say: Say, start: StartingPoint | None = None) -> dict[str, Any]:
    """Sample pi0 and the final policy on math_holdout with identical settings, n samples per item;
    score each pack with course.eval (a multi-sample run), estimate pass@1 and the lift, and gate.

    With ``start`` (a warm start), its policy is the third, sampled with the same seeds: the total lift
    splits into the warm start's (``warm_start`` - pi0) and RL's own (final - ``warm_start``), each
    paired over items with its bootstrap interval, and RL's is gated on its own (``gate_rl.txt``:
    final against its starting point, min delta 0, significance required): did the RL steps add
    anything the warm start had not?

    One measurement for the headline and the decision: the packs' course.eval runs give the
    pass@1 (with its item-clustered interval: the samples of an item are not independent), the
    per-item rates the lift is paired over, and the gate's input. Files go to ``tmp``, the run
    directory being written; ``final`` is the name it will have, which the course.eval manifests
    and gate.txt record.
    """
    holdout_path = DEFAULT_DATASETS[1]
    items = read_items(holdout_path)
    pairs = [(it["id"], it["prompt"]) for it in items]
    settings = dict(seed=s.eval_seed, temperature=s.temperature, top_p=1.0, max_tokens=s.max_tokens)
    out: dict[str, Any] = {"dataset": MATH_HOLDOUT, "sampling": settings | {"n_for_pass_at_1": s.holdout_samples}}
    per_item: dict[str, list[float]] = {}
    policy = trained.policy
    import contextlib

    tags = [("pi0", True, policy.pi0_name, contextlib.nullcontext)]
    if start is not None:
        tags.append(("warm_start", False, start.name, start.computing_as))
    tags.append(("final", False, trained.final_name, contextlib.nullcontext))
    for tag, is_pi0, name, computing_as in tags:
        line = progress(f"holdout {tag}: items", len(items))
        # n samples per item (a selection pack; n = 1: a rollouts file), scored by course.eval as one run
        with computing_as():
            pack, trunc_n = policy.rollout_records(pairs, pi0=is_pi0, policy_name=name, n=s.holdout_samples, **settings,
                                                   progress=line.update)
        line.clear()
        pack_path = tmp / f"holdout_{tag}_pack.jsonl"
        write_text(pack_path, "".join(dumps_line(r) + "\n" for r in pack))
        eval_dir = tmp / f"eval_{tag}_holdout"
        # (the run is still in its temporary directory: its manifest names the pack where it will be)
        evaluate(holdout_path, pack_path, outdir=eval_dir, argv=argv, completions_recorded_as=final / pack_path.name)
        scored = load_outcomes(str(eval_dir))
        counts = list(scored.counts_by_id.values())  # dataset order
        per_item[tag] = [k / m for k, m in counts]
        lo, hi = clustered_interval([k for k, _ in counts], [m for _, m in counts])
        out[tag] = {
            "policy": name,
            "eval_dir": eval_dir.name,
            "pass_at_1": round(scored.passed / scored.n, 4),
            "pass_at_1_ci95": [round(lo, 4), round(hi, 4)],
            "pass_at_1_ci95_method": "item-clustered",
            "passed": scored.passed,
            "samples": scored.n,
            "truncated": trunc_n,
        }
        say(f"holdout {tag} ({name}): sampled and scored by course.eval ({scored.passed}/{scored.n} strict passes "
            f"over {len(items)} items x {s.holdout_samples})")
    lo, hi = paired_bootstrap(per_item["pi0"], per_item["final"], seed=s.eval_seed)
    # From the counts, not from the rounded rates: the one lift figure of the run.
    lift = (out["final"]["passed"] - out["pi0"]["passed"]) / out["final"]["samples"]
    out["items"] = len(items)
    out["lift_pass_at_1"] = round(lift, 4)
    out["lift_paired_bootstrap95"] = [round(lo, 4), round(hi, 4)]
    # (the lift is the run's result: the tool states it once, on stdout, through course.lib.policy.report.lift_text)
    out["gate"] = holdout_gate(tmp, final, s.gate_min_delta, say)
    if start is not None:
        for key, a, b in (("warm_start_over_pi0", "pi0", "warm_start"), ("rl_over_warm_start", "warm_start", "final")):
            lo, hi = paired_bootstrap(per_item[a], per_item[b], seed=s.eval_seed)
            out[key] = {"lift_pass_at_1": round((out[b]["passed"] - out[a]["passed"]) / out[b]["samples"], 4),
                        "lift_paired_bootstrap95": [round(lo, 4), round(hi, 4)]}
        # RL's own part, gated on its own: better than where RL started, and distinguishable from noise
        out["rl_over_warm_start"]["gate"] = holdout_gate(tmp, final, 0.0, say, base="warm_start", report="gate_rl.txt")
    return out


def holdout_gate(tmp: Path, final: Path, min_delta: float, say: Say, *, base: str = "pi0",
                 report: str = "gate.txt") -> dict[str, Any]:
    """The gate's decision on two holdout course.eval runs (``base``, pi0 by default = baseline, final =
    candidate), the same samples the headline pass@1 and lift come from (paired over items when n > 1);
    its report goes to ``report``, naming the runs where they will be.

    The bar: at least ``min_delta`` better, and distinguishable from noise (p < 0.05).
    """
    def outcomes(tag: str) -> Outcomes:
        o = load_outcomes(str(tmp / f"eval_{tag}_holdout"))
        return replace(o, run=replace(o.run, path=final / f"eval_{tag}_holdout"))

    b, cand = outcomes(base), outcomes("final")
    result = decide(b, cand, Fraction(f"{min_delta:g}"), require_significance=True)
    write_text(tmp / report, "\n".join(render(result, b, cand)) + "\n")
    verdict = result["decision"]
    say(f"course.gate, final against {base}, on the holdout course.eval runs (the same samples as the headline): "
        f"{verdict} (report: {report})")
    out = {"verdict": verdict, "exit_code": 0 if verdict == "ACCEPT" else 1, "min_delta": min_delta,
           "require_significance": True}
    if base != "pi0":  # (a new field only where it is new: the pi0 gate's record stays as it was)
        out["p_value"] = (
            round(result["paired"]["p_value"], 6) if result.get("paired") and "p_value" in result["paired"] else None
        )
    return out


def run_summary(s: LoopSettings, trained: Trained) -> dict[str, Any]:
    """summary.json before the tool's own fields, the shift table, the holdout and the wall time are added."""
    summary = {
        "rubric": s.rubric,
        "beta": s.beta,
        "seed": s.seed,
        "steps": s.steps,
        "pi0": trained.policy.pi0_name,
        "final_policy": trained.final_name,
        "first_eval": trained.evals[0],
        "last_eval": trained.evals[-1],
        "final_train": tail_means(trained.records, 5),
        "goodhart_alarms": trained.alarms,
        "objective": {"kl_estimator": s.kl_estimator, "kl_in": s.kl_in, "loss_norm": s.loss_norm,
                      "scale_rewards": s.scale_rewards},
        "zero_signal": zero_signal(trained.records, s),
        "train_seconds": round(trained.train_seconds, 1),
        "rl_log_sha256": trained.log_sha256,
    }
    if trained.skipped_updates:  # (only then: a run where it never happens summarises what it always did)
        summary["skipped_updates"] = trained.skipped_updates
    return summary


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.learning.rl_loop"))
