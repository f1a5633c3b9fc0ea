"""Rejection-sampling fine-tuning (RFT): best-of-N on fresh problems, keep the passing samples, clone them.

Seed 001's question "why not just train on the best-of-N?", made concrete on the real LLM:

  1. the pool (Loop B on training problems): for each of ``problems`` fresh problems (the
     seeded stream ``rft-prompts:<seed>`` of the course's generator, never a dev or holdout
     prompt) pi0 draws N completions; the strict scorer keeps the FIRST passing one (best-of-N
     with a 0/1 verifier: any pass is the best). Problems with no pass contribute nothing.
  2. the clone (supervised learning): a few passes over the kept (prompt, completion) pairs,
     minimising the negative log-likelihood of each completion's tokens. That is
     ``course.lib.learning.rl_objective.policy_loss`` with advantage +1 on every kept sample and beta 0:
     REINFORCE on frozen, filtered data, with no baseline and no negative signal. The failures
     are simply dropped, and the data never changes as the policy does (off-policy, offline).

What it can and cannot do: it copies trajectories pi0 could already produce (its coverage is
pi0's best-of-N), so it cannot discover anything pi0 never sampled, and it clones everything
in a kept completion, luck included. Its use here is a warm start: when every reward of the
policy's own samples is 0 (the plain template), RL has nothing to reinforce, and RFT moves the
policy to where some rewards are 1. The pool may be drawn under a different prompt template
than the one trained (``sampler``: e.g. the few-shot prompt as a teacher for the plain
environment: context distillation); the kept completions are then trained after the
*training* template's prompt, and the environment of every evaluation stays the training one.

Not a CLI; ``python -m course.llm.rl --warm-start rft`` runs it (``warm_start``: the pool, the clone and
their files in the run directory) before the RL steps.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from course.instrument.spec_v1 import score as strict_score
from course.lib.bundled import TRAINING_EXCLUDED
from course.lib.learning.rl_objective import policy_loss
from course.lib.policy.training_problems import problem_stream, read_prompts
from course.lib.records.jsonl import JsonlWriter


@dataclass(frozen=True)
class RFTSettings:
    """One warm start: how many problems, samples each, which sampler template, and the cloning recipe."""

    seed: int
    problems: int
    samples: int  # N of best-of-N
    sampler: str  # template name the pool is drawn under
    temperature: float
    max_tokens: int
    epochs: int
    batch_size: int
    lr: float
    grad_clip: float


@dataclass(frozen=True)
class Kept:
    """One pool entry: a training problem and the first of its N samples the strict scorer passed."""

    prompt: str
    answer: int
    completion: str
    tokens: tuple[int, ...]  # the completion's sampled token ids, its end token included
    sample_index: int


def training_problems(seed: int, n: int) -> list[Any]:
    """The first ``n`` problems of the RFT stream: seeded, never a dev, holdout or benchmark-holdout
    prompt, and a different stream from the RL steps' (``rl-prompts:<seed>``)."""
    excluded = read_prompts(TRAINING_EXCLUDED)
    stream = problem_stream(f"rft-prompts:{seed}", excluded)
    return [next(stream) for _ in range(n)]


def build_pool(
    policy: Any, s: RFTSettings, progress: Callable[[int], None] | None = None
) -> tuple[list[Kept], dict[str, Any]]:
    """Best-of-N under the sampler template for each problem; the kept samples and the pool's statistics."""
    from course.llm.sampler import WIDE_BATCH_ROWS

    problems = training_problems(s.seed, s.problems)
    kept: list[Kept] = []
    passes = 0
    per_batch = max(1, WIDE_BATCH_ROWS // s.samples)  # more rows than course.llm.sample's: faster, no file to match
    for start in range(0, len(problems), per_batch):
        chunk = problems[start : start + per_batch]
        seeds = [f"rft:{s.seed}:{start + i}:{j}" for i in range(len(chunk)) for j in range(s.samples)]
        ro = policy.generate([b.prompt for b in chunk], seeds, group=s.samples, temperature=s.temperature,
                             max_tokens=s.max_tokens, template=s.sampler)
        for i, b in enumerate(chunk):
            first = None
            for j in range(s.samples):
                row = i * s.samples + j
                if strict_score({"expected_answer": b.answer}, ro.texts[row])["reward"] == 1.0:
                    passes += 1
                    if first is None:
                        first = row
            if first is not None:
                ids = tuple(int(t) for t in ro.tokens[first][ro.mask[first]].tolist())
                kept.append(Kept(b.prompt, b.answer, ro.texts[first], ids, first - i * s.samples))
        if progress is not None:
            progress(start + len(chunk))
    stats = {"problems": len(problems), "samples_per_problem": s.samples, "sampler_template": s.sampler,
             "samples": len(problems) * s.samples, "strict_passes": passes, "problems_kept": len(kept),
             "pass_rate": round(passes / (len(problems) * s.samples), 6),
             "best_of_n_coverage": round(len(kept) / len(problems), 6)}
    return kept, stats


def clone(
    policy: Any, pool: Sequence[Kept], s: RFTSettings, progress: Callable[[int], None] | None = None
) -> list[dict[str, Any]]:
    """Supervised passes over the pool (shuffled per epoch with a seeded stream); one log record per batch.

    The loss is the RL loss with advantage +1 and no KL term: the mean over the batch of
    -sum_t log pi(token t of a kept completion | its prompt, earlier tokens).
    """
    import torch

    opt = torch.optim.Adam(policy.parameters(), lr=s.lr, betas=(0.9, 0.99))
    records: list[dict[str, Any]] = []
    done = 0
    for epoch in range(1, s.epochs + 1):
        order = list(range(len(pool)))
        random.Random(f"rft-shuffle:{s.seed}:{epoch}").shuffle(order)
        for start in range(0, len(order), s.batch_size):
            batch = [pool[k] for k in order[start : start + s.batch_size]]
            ro = policy.teacher_batch([k.prompt for k in batch], [k.tokens for k in batch])
            policy.train_mode(True)
            logp, _ = policy.logprobs(ro)
            loss, _ = policy_loss(logp, logp.detach(), ro.mask, torch.ones(len(batch)), beta=0.0)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            grad_norm = float(torch.nn.utils.clip_grad_norm_(policy.parameters(), s.grad_clip))
            opt.step()
            n_tokens = float(ro.mask.sum())
            records.append({"epoch": epoch, "batch": start // s.batch_size + 1, "samples": len(batch),
                            "nll_per_token": round(float(loss.detach()) * len(batch) / n_tokens, 6),
                            "grad_norm": round(grad_norm, 6)})
            done += len(batch)
            if progress is not None:
                progress(done)
    policy.train_mode(False)
    return records


def warm_start(policy: Any, s: RFTSettings, run_dir: Path, *, progress: Callable[[str, int], Any],
               say: Callable[[str], None]) -> dict[str, Any]:
    """RFT before the RL steps: rft_pool.jsonl (the kept samples), rft_log.jsonl and warm_start.safetensors
    in ``run_dir``; returns the pool's statistics and the cloning's last losses for summary.json.
    ``progress`` makes a progress line (``course.lib.policy.progress.ProgressLine``), ``say`` writes a diagnostic."""
    t0 = time.time()
    line = progress("rft pool: problems", s.problems)
    pool, stats = build_pool(policy, s, progress=line.update)
    line.clear()
    say(f"RFT pool: {stats['strict_passes']}/{stats['samples']} strict passes over {s.problems} fresh problems "
        f"x {s.samples} (sampled under the {s.sampler!r} template); best-of-{s.samples} kept {len(pool)} problems")
    with JsonlWriter(run_dir / "rft_pool.jsonl") as w:
        for k in pool:
            w.write({"prompt": k.prompt, "expected_answer": k.answer, "completion": k.completion,
                     "sample_index": k.sample_index, "sampler_template": s.sampler})
    records: list[dict[str, Any]] = []
    sha = ""
    if not pool:
        say("RFT: not one sample passed, so there is nothing to clone (the same wall RL meets); "
            "the policy is unchanged")
    else:
        line = progress("rft clone: samples", len(pool) * s.epochs)
        records = clone(policy, pool, s, progress=line.update)
        line.clear()
        with JsonlWriter(run_dir / "rft_log.jsonl") as w:
            for r in records:
                w.write(r)
        sha = policy.save(run_dir / "warm_start.safetensors")  # the RFT policy alone: compare it with the final one
        say(f"RFT policy: {policy.trained_name(sha)} (warm_start.safetensors)")
    seconds = time.time() - t0
    last = [r["nll_per_token"] for r in records if r["epoch"] == s.epochs]
    say(f"RFT done in {seconds:.0f}s"
        + (f": NLL/token of the kept samples, last epoch {sum(last) / len(last):.3f}" if last else ""))
    return {"method": "rft", **stats, "policy": policy.trained_name(sha) if records else None, "epochs": s.epochs,
            "batch_size": s.batch_size, "lr": s.lr,
            "first_nll_per_token": records[0]["nll_per_token"] if records else None,
            "last_epoch_nll_per_token": round(sum(last) / len(last), 6) if last else None, "seconds": round(seconds, 1)}


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.llm.rft"))
