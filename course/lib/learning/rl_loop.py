"""Loop C, written once for every policy: sampling, the step, and the fixed-slice watch.

Third of four files (``rl_config`` -> ``rl_objective`` -> ``rl_loop`` -> ``rl_run``). Each step
(``reinforce_step``): draw P fresh training problems (a seeded stream from the course's generator,
never a dev or holdout prompt), sample G completions per problem from the *current* policy (on-policy
data), score them with the chosen rubric, and update the policy on ``rl_objective.policy_loss``:
the tokens of completions that beat their group's mean reward are pushed up, the rest down, while a
KL penalty pulls the policy back towards the reference pi0.

Every few steps the policy is measured on a fixed slice (math_dev, the same random numbers every
time) with the *strict* scorer, whatever rubric it is trained on, and with that rubric on the same
samples (``SliceWatch``, whose Goodhart alarm fires when the reward rises while strict passes fall).
What happens after training (the holdout comparison, its gate, the run's files) is ``rl_run``'s.

Who the policy is does not matter to the loop. Anything that implements :class:`RLPolicy` (sample a
group with one seed per row, give the log-probabilities of those completions under itself and under
pi0, name its parameters, save itself) is trained by the same lines: the course's tiny LM
(``course.tinylm.policy.TinyLMPolicy``, run by ``python -m course.tinylm.rl``) and a real pretrained
LLM (``course.llm.policy.LLMPolicy``, run by ``python -m course.llm.rl``).

One rule the loop adds, because a real LLM meets it on its first step: when a step's gradient is
exactly zero everywhere (every group's rewards equal, so every advantage is 0, and the KL term has no
slope: beta 0 or pi still equal to pi0), the optimizer step is SKIPPED and the record says so
(``update_skipped``). Adam's running averages from earlier steps would otherwise keep moving the
weights with no evidence at all. Nothing learns from a reward that never varies.

Zero-signal accounting, every step: ``no_signal_groups`` is the share of groups whose rewards are all
equal (TRL logs it as ``frac_reward_zero_std``) and ``pg_samples`` the number of samples whose
advantage is non-zero, the only ones the reward's gradient comes from. The policy-gradient loss's
VALUE says nothing about learning: advantages sum to zero in every group, so ``pg_loss`` hovers near
0 while its gradient is large. It means "not learning" only when ``pg_samples`` is 0 (and then, with
no KL slope, the update is skipped).

The library does no printing: the tool passes ``say`` (a diagnostic line on stderr) and ``progress``
(a factory of progress lines, ``course.lib.policy.progress.ProgressLine``).
"""

from __future__ import annotations

import math
import re
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Protocol, Sequence

from course.instrument.rubric_registry import get_rubric
from course.instrument.spec_v1 import score as strict_score
from course.lib.bundled import DEFAULT_DATASETS
from course.lib.learning.goodhart import goodhart_alarm
from course.lib.learning.rl_config import RLConfig
from course.lib.learning.rl_objective import group_advantages, kl_reward_penalty, objective_text, policy_loss
from course.lib.policy.training_problems import problem_stream, read_items, read_prompts
from course.lib.records.jsonl import JsonlWriter
from course.lib.reporting.rl_report import story_line

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
def train(s: RLConfig, policy: RLPolicy, run_dir: Path, *, progress: ProgressFactory, say: Say,
          label: str = "rl step", weights_suffix: str = ".pt", excluded: Sequence[Path] = DEFAULT_DATASETS) -> Trained:
    """The training run, top to bottom: rl_log.jsonl, checkpoints/ and final<suffix> in ``run_dir``.
    ``excluded``: the dataset files whose prompts the training stream never draws."""
    import torch

    t_start = time.time()
    rubric = get_rubric(s.rubric)
    opt = torch.optim.Adam(policy.parameters(), lr=s.lr, betas=(0.9, 0.99))
    dev_slice, prompts = training_data(s, excluded)
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
    source = ProblemSource(prompts, s.prompts_per_step)
    signal_share: float | None = None  # the last step's share of drawn groups with a signal (how far to draw ahead)
    for step in range(1, s.steps + 1):
        rec = reinforce_step(s, step, policy, opt, rubric, source.take(), more=source.take,  # sample, score, update
                             give_back=source.give_back, signal_share=signal_share)
        if "dynamic_sampling" in rec:
            signal_share = 1 - rec["dynamic_sampling"]["no_signal_groups_drawn"]
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


def training_data(s: RLConfig,
                  excluded: Sequence[Path] = DEFAULT_DATASETS) -> tuple[list[dict[str, Any]], Iterator[Any]]:
    """The fixed evaluation slice (the first ``slice_items`` math_dev items) and the endless stream
    of training problems, seeded by ``seed``, that never repeats a prompt of the ``excluded`` files
    (dev and holdout; the real LLM's tool adds its benchmark holdout: ``bundled.TRAINING_EXCLUDED``)."""
    dev_all = read_items(DEFAULT_DATASETS[0])
    return dev_all[: s.slice_items], problem_stream(f"rl-prompts:{s.seed}", read_prompts(excluded))


class ProblemSource:
    """The training stream, P problems at a time, with a way back for what a step drew but did not use.

    Dynamic sampling may sample several draws in one batch (``sample_step``); the draws it did not
    need are given back, and the next ``take`` returns them first, so every step sees exactly the
    problems it would have seen had the draws been made one at a time."""

    def __init__(self, stream: Iterator[Any], per_draw: int) -> None:
        self._stream, self._per_draw = stream, per_draw
        self._returned: list[list[Any]] = []

    def take(self) -> list[Any]:
        """The next P problems: those given back first, in their order, then fresh ones."""
        if self._returned:
            return self._returned.pop(0)
        return [next(self._stream) for _ in range(self._per_draw)]

    def give_back(self, batches: list[list[Any]]) -> None:
        """Draws taken but not used, in the order they were taken: the next ``take`` calls return them."""
        self._returned[:0] = batches


def draws_ahead(left: int, missing: int, per_draw: int, signal_share: float | None) -> int:
    """How many draws to sample together: enough, at the last step's share of groups with a signal, to
    find the ``missing`` groups (never more than the ``left`` the cap allows; one when nothing is known).

    Sampling k draws in one batch costs the same tokens as k batches one after the other, and takes
    less time: a matrix product of more rows runs nearer the machine's peak (bench_llm_sampling).
    What a draw that turns out not to be needed costs is its sampling; the record counts it.

    >>> draws_ahead(4, 8, 8, None), draws_ahead(4, 8, 8, 0.25), draws_ahead(2, 8, 8, 0.25), draws_ahead(4, 3, 8, 0.5)
    (1, 4, 2, 1)
    """
    if signal_share is None:
        return 1
    if signal_share <= 0:  # no group had a signal: every draw the cap allows
        return left
    return max(1, min(left, math.ceil(missing / (per_draw * signal_share) - 1e-9)))


def next_problems(more: Callable[[], list[Any]] | None) -> list[Any]:
    """Dynamic sampling's next batch of P fresh problems."""
    if more is None:
        raise ValueError("dynamic sampling needs more(): the stream of fresh problems")
    return more()


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


def sample_step(s: RLConfig, step: int, policy: RLPolicy, rubric: Any, problems: list[Any],
                more: Callable[[], list[Any]] | None = None, *,
                give_back: Callable[[list[list[Any]]], None] | None = None,
                signal_share: float | None = None) -> StepBatch:
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

    Drawing ahead (only with ``give_back``): the draws are sampled several at a time, as many as the
    last step's ``signal_share`` says are needed (``draws_ahead``), in one batch. Each row keeps its
    own seed, so the step trains on the groups the one-at-a-time rule picks (up to float rounding: a
    batch of other rows sums its products in another order); a draw that rule would not have made is
    handed back unscored (``give_back``: the next step takes its problems) and counted in ``drawn``'s
    ``unused_draws``.
    """
    P, G = s.prompts_per_step, s.group_size
    D = s.dynamic_sampling
    policy.train_mode(False)
    draws: list[tuple[Any, int, list[float], list[str]]] = []  # per draw: (rollouts, its first group, rewards, codes)
    signal: list[tuple[int, int]] = []  # (draw, group) with rewards that differ, in the order drawn
    flat: list[tuple[int, int]] = []
    unused: list[list[Any]] = []  # draws sampled ahead that the one-at-a-time rule would not have made
    while len(draws) < D and len(signal) < P:
        d0 = len(draws)
        # how far to draw ahead: the last step's share of groups with a signal, else this step's so far
        share = signal_share if signal_share is not None or not draws else len(signal) / (len(draws) * P)
        k = 1 if give_back is None else draws_ahead(D - d0, P - len(signal), P, share)
        batches = [problems if d0 + t == 0 else next_problems(more) for t in range(k)]
        seeds = [f"rl:{s.seed}:{step}{f':d{d0 + t}' if d0 + t else ''}:{i}:{j}"
                 for t in range(k) for i in range(P) for j in range(G)]
        ro = policy.generate([b.prompt for batch in batches for b in batch], seeds, group=G,
                             temperature=s.temperature, max_tokens=s.max_tokens)
        for t, batch in enumerate(batches):
            if len(signal) >= P:  # enough already: this draw goes back to the stream, unscored
                unused.append(batch)
                continue
            # rewards from the training rubric; the strict verdict rides along for the log
            examples = [{"expected_answer": b.answer} for b in batch for _ in range(G)]
            texts = ro.texts[t * P * G:(t + 1) * P * G]
            rewards = [float(rubric(ex, x)["reward"]) for ex, x in zip(examples, texts)]
            codes = [strict_score(ex, x)["details"]["error_code"] for ex, x in zip(examples, texts)]
            draws.append((ro, t * P, rewards, codes))
            for i in range(P):
                r = rewards[i * G:(i + 1) * G]
                (signal if max(r) != min(r) else flat).append((len(draws) - 1, i))
    if unused and give_back is not None:  # (only drawn ahead when given)
        give_back(unused)
    policy.train_mode(True)
    if D == 1:  # dynamic sampling off: the one draw, untouched
        ro, _, rewards, codes = draws[0]
        return StepBatch(ro, rewards, codes, None)
    from course.lib.policy.sampling import take_groups

    picks = (signal + flat)[:P]
    ro = take_groups([(draws[d][0], draws[d][1] + i) for d, i in picks])
    rewards = [r for d, i in picks for r in draws[d][2][i * G:(i + 1) * G]]
    codes = [c for d, i in picks for c in draws[d][3][i * G:(i + 1) * G]]
    every = [r for _, _, rs, _ in draws for r in rs]
    every_codes = [c for _, _, _, cs in draws for c in cs]
    drawn = {"draws": len(draws), "groups_drawn": len(draws) * P,
             "no_signal_groups_drawn": round(len(flat) / (len(draws) * P), 6),
             "reward_drawn": round(sum(every) / len(every), 6),
             "strict_pass_drawn": round(every_codes.count("ok") / len(every_codes), 6)}
    if unused:
        drawn["unused_draws"] = len(unused)
    return StepBatch(ro, rewards, codes, drawn)


def reinforce_step(s: RLConfig, step: int, policy: RLPolicy, opt: Any, rubric: Any, problems: list[Any],
                   more: Callable[[], list[Any]] | None = None, *,
                   give_back: Callable[[list[list[Any]]], None] | None = None,
                   signal_share: float | None = None) -> dict[str, Any]:
    """One policy update on fresh on-policy samples; returns the step's log record. ``more``, ``give_back``
    and ``signal_share``: dynamic sampling's stream and how far to draw ahead (``sample_step``)."""
    import torch

    P, G = s.prompts_per_step, s.group_size
    # 1-2. fresh on-policy samples (G completions for each of P new problems), scored by the training
    # rubric (the strict verdict rides along for the log); with dynamic sampling, the groups with a signal
    got = sample_step(s, step, policy, rubric, problems, more, give_back=give_back, signal_share=signal_share)
    ro = got.rollouts
    rewards = torch.tensor(got.rewards)  # (B,)

    # 3. log-probabilities of the chosen tokens under pi0 (no gradients; first, so that its pass's temporaries
    # are gone before the policy's pass keeps its activations for backward)
    with torch.no_grad():
        logp_ref = policy.reference_logprobs(ro)  # (B, K)
    mask = ro.mask.float()  # (B, K): 1 on chosen tokens (the completion's tokens and its end token)
    r0 = rewards.view(P, G)
    no_signal = float((r0.max(dim=1).values == r0.min(dim=1).values).float().mean())  # all G equal: zero gradient

    # 4-5. log pi with gradients, the group baseline, the loss and its backward (gradient_pass), then the update
    opt.zero_grad(set_to_none=True)
    entropy, r, adv, kl_penalty, parts = gradient_pass(s, policy, ro, rewards, logp_ref)
    flat = (r.max(dim=1).values == r.min(dim=1).values).repeat_interleave(G)  # (B,) the rewards used were all equal
    pg_samples = int(((adv != 0) & ~flat).sum())  # samples the reward's gradient comes from
    params = policy.parameters()
    grad_norm = float(torch.nn.utils.clip_grad_norm_(params, s.grad_clip))
    # No evidence, no update: Adam's momentum would otherwise move the weights on a zero gradient.
    skip = not has_gradient(params)
    if not skip:
        opt.step()

    # 6. the step's record
    rec = {"step": step, **step_record(got, rewards, mask, entropy, parts), "no_signal_groups": round(no_signal, 6),
           "pg_samples": pg_samples, "grad_norm": round(grad_norm, 6)}
    if kl_penalty is not None:  # (only then: a default run's record has no such field)
        rec["kl_penalty_in_reward"] = round(float(kl_penalty.mean()), 6)
    # dynamic sampling: what was drawn to fill the batch (reward above: the batch's, selected)
    if got.drawn is not None:
        rec["dynamic_sampling"] = got.drawn
    if skip:
        rec["update_skipped"] = True  # only on such steps
    return rec


def gradient_pass(s: RLConfig, policy: RLPolicy, ro: Any, rewards: Any, logp_ref: Any) -> tuple[Any, ...]:
    """log pi of the chosen tokens (with gradients), the advantages, the loss and its ``backward()``, in
    ``s.grad_chunks`` parts of whole groups. Returns (entropy (B, K), the rewards used (P, G), the advantages
    (B,), the KL penalty subtracted from the rewards (B,) or None, the loss's parts for the log).

    Group baseline: advantage = reward - the mean reward of the same prompt's G samples
    (rl_objective.group_advantages); with --kl-in reward, the KL penalty is subtracted from the reward first.
    A group's advantages need only its own samples, and the loss is a sum over samples divided by a divisor
    of the whole batch, so each part's loss is weighted by its share of that divisor (its samples, or its
    tokens under token-mean) and the parts' gradients add up to the one-pass gradient (up to float rounding).
    One part (the default) is exactly the one-pass computation."""
    import torch

    from course.lib.policy.sampling import take_groups

    P, G = s.prompts_per_step, s.group_size
    bounds = [P * k // s.grad_chunks for k in range(s.grad_chunks + 1)]  # parts of whole groups, as equal as can be
    tokens = ro.mask.float().sum().clamp(min=1.0)
    got: dict[str, list[Any]] = {k: [] for k in ("entropy", "r", "adv", "kl_penalty", "k1", "k3")}
    pg_loss = kl_loss = torch.zeros(())
    for lo, hi in zip(bounds, bounds[1:]):
        part = ro if s.grad_chunks == 1 else take_groups([(ro, p) for p in range(lo, hi)])
        rows = slice(lo * G, hi * G)
        logp, entropy = policy.logprobs(part)  # (b, K) each, b = (hi - lo) * G
        r = rewards[rows].view(hi - lo, G)
        kl_penalty = None
        if s.kl_in == "reward":
            kl_penalty = kl_reward_penalty(logp, logp_ref[rows], part.mask.float(), s.beta, s.kl_estimator)  # (b,)
            r = (rewards[rows] - kl_penalty).view(hi - lo, G)
        adv = group_advantages(r, s.scale_rewards)  # (b,)
        # the loss (rl_objective.policy_loss: REINFORCE term + beta * KL penalty) of this part, at its share
        loss, parts = policy_loss(logp, logp_ref[rows], part.mask, adv, s.beta, kl_estimator=s.kl_estimator,
                                  kl_in=s.kl_in, loss_norm=s.loss_norm)
        share = (part.mask.float().sum() / tokens if s.loss_norm == "token-mean" else (hi - lo) / P)
        # advantage > 0: raise log pi of that completion's tokens; < 0: lower them. (The real LLM: a backward
        # spends the cached prompt prefix's graph, course.llm.prefix_cache, and the next part reads the
        # prefix again with a graph of its own, under the same weights.)
        (loss if s.grad_chunks == 1 else loss * share).backward()
        del logp, loss  # this part's graph goes before the next part's forward
        pg_loss = parts["pg_loss"] if s.grad_chunks == 1 else pg_loss + parts["pg_loss"] * share
        kl_loss = parts["kl_loss"] if s.grad_chunks == 1 else kl_loss + parts["kl_loss"] * share
        for name, value in (("entropy", entropy), ("r", r), ("adv", adv), ("kl_penalty", kl_penalty),
                            ("k1", parts["k1"]), ("k3", parts["k3"])):
            got[name].append(value)
    penalty = torch.cat(got["kl_penalty"]) if s.kl_in == "reward" else None
    return (torch.cat(got["entropy"]), torch.cat(got["r"]), torch.cat(got["adv"]), penalty,
            {"k1": torch.cat(got["k1"]), "k3": torch.cat(got["k3"]), "pg_loss": pg_loss, "kl_loss": kl_loss})


def step_record(got: StepBatch, rewards: Any, mask: Any, entropy: Any, parts: dict[str, Any]) -> dict[str, Any]:
    """What a step's samples and loss parts say, for its rl_log.jsonl line: the reward, the strict
    verdicts, the KL to pi0 (k1 and k3 whatever the estimator), the entropy, the lengths, the loss terms."""
    B, n_tokens = len(got.rewards), mask.sum()
    codes = Counter(got.strict_codes)
    k1, k3 = parts["k1"], parts["k3"]
    texts = got.rollouts.texts
    return {
        "reward": round(float(rewards.mean()), 6),  # (B,) tensor: its float32 mean is the recorded figure
        "strict_pass_train": round(codes["ok"] / B, 6),
        "kl_k1_per_token": round(float(k1.sum() / n_tokens), 6),
        "kl_k3_per_token": round(float(k3.sum() / n_tokens), 6),
        "kl_k1_per_sample": round(float(k1.sum() / B), 6),
        "entropy_per_token": round(float((entropy * mask).sum() / n_tokens), 6),
        "truncated_share": round(sum(got.rollouts.truncated) / len(got.rollouts.truncated), 6),
        "multi_number_share": round(sum(mentions_several_numbers(t) for t in texts) / len(texts), 6),
        "mean_tokens": round(float(n_tokens) / B, 4),
        "mean_tokens_wrong": mean_or_none(
            [n for n, c in zip(mask.sum(dim=1).tolist(), got.strict_codes) if c != "ok"]),
        "pg_loss": round(float(parts["pg_loss"]), 6),
        "kl_loss": round(float(parts["kl_loss"]), 6),
        "strict_codes": {k: round(codes[k] / B, 6) for k in sorted(codes)},
        "example": texts[0],
    }


class SliceWatch:
    """The fixed-slice measurements during training, and the Goodhart alarm they feed.

    The same items and the same random numbers (``eval_seed``) at every evaluation:
    differences between evaluations come from the policy, not from sampling luck
    (common random numbers).
    """

    def __init__(self, s: RLConfig, items: list[dict[str, Any]], rubric: Any, progress: Progress) -> None:
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


def slice_scores(policy: RLPolicy, items: list[dict[str, Any]], rubric: Any, s: RLConfig) -> dict[str, Any]:
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



def mean_or_none(xs: Sequence[float]) -> float | None:
    """The mean to 4 places, or None for no values (a step where every sample passed has no wrong answer to measure)."""
    return round(sum(xs) / len(xs), 4) if xs else None


def zero_signal(records: Sequence[dict[str, Any]], s: RLConfig) -> dict[str, Any]:
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


_INTEGER = re.compile(r"(?<![0-9])-?[0-9]+")


def mentions_several_numbers(text: str) -> bool:
    r"""True when a completion names two or more different integers (hedges, lists, working lines).

    >>> mentions_several_numbers("Final: 322 or 323"), mentions_several_numbers("Final: 323\nFinal: 323")
    (True, False)
    """
    return len(set(_INTEGER.findall(text))) >= 2



if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.learning.rl_loop"))
