"""Train the reference policy pi0 by supervised fine-tuning (imitation of a format mixture).

The recipe is in ``course/tinylm/sft_data.py``: problems from the course's
generator (never a dev/holdout prompt), each answered with the correct number in
one of several formats, only ~40 % of them the strict ``Final: <int>``. The
model learns to continue ``<bos> prompt <sep>`` with such an answer and
``<eos>``; the loss is cross-entropy on the answer tokens only (the prompt is
given, not predicted).

Retrain the shipped pi0 (about 50 minutes on 2 cores: 49 measured on 2026-11-22) and compare it byte for byte::

    python -m course.tinylm.sft --check              # retrain into a temp dir, compare sha256 with the manifest
    python -m course.tinylm.sft --out data/tinylm/pi0.pt --force   # rewrite the shipped weights + manifest

Reproducibility: the data stream, the initialisation (torch.manual_seed) and the
thread count are fixed, so the same machine gives the same bytes.
"""

from __future__ import annotations

import math
import random
import re
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator, Sequence

from course.cli import MAX_COUNT, float_in, info, int_in, make_parser, run, seed
from course.errors import CourseError
from course.lib.bundled import DEFAULT_DATASETS, MATH_DEV, PI0_MANIFEST, PI0_PATH
from course.lib.extras import require
from course.lib.policy.progress import ProgressLine
from course.lib.policy.training_problems import read_prompts
from course.lib.records.jsonl import read_json, refuse_existing
from course.lib.records.manifest import environment, file_fingerprint
from course.lib.records.temporaries import write_json_atomic
from course.lib.visible import visible
from course.tinylm.sft_data import FORMAT_WEIGHTS, sft_stream
from course.tinylm.vocab import VOCAB

# PyTorch and the modules built on it (model, policy) are imported inside the functions that use
# them: --help and the one-line missing-extra message must work without the lm extra.

DEFAULTS = {
    "seed": 0,
    "steps": 10000,
    "batch_size": 64,
    "lr": 2e-3,
    "min_lr": 1e-4,
    "warmup": 200,
    "weight_decay": 0.01,
    "grad_clip": 1.0,
    "threads": 2,
    "n_layer": 4,
    "n_head": 4,
    "n_embd": 96,
    "eval_samples": 4,
    "eval_every": 1000,
}


# Every SFT hyperparameter is a finite number in a range a tiny LM can train with; NaN, infinity and
# sizes whose memory would grow without bound (--batch-size 100000000) are refused up front.
ARG_TYPES = {
    "seed": seed,
    "steps": int_in(1, 1_000_000),
    "batch_size": int_in(1, 512),  # activations grow with it: 512 rows of the default model is ~2 GB
    "lr": float_in(1e-8, 1.0),  # Adam's step is about lr per weight: beyond 1 it only diverges
    "min_lr": float_in(0.0, 1.0),  # and at most --lr (checked below)
    "warmup": int_in(0, 1_000_000),
    "weight_decay": float_in(0.0, 1.0),
    "grad_clip": float_in(1e-6, 1e6),
    "threads": int_in(1, 64),
    "n_layer": int_in(1, 12),
    "n_head": int_in(1, 16),
    "n_embd": int_in(1, 512),  # and a multiple of --n-head (checked below)
    "eval_samples": int_in(1, 1024),
    "eval_every": int_in(0, MAX_COUNT),  # 0 = off
}


def check_settings(s: dict) -> None:
    """Refuse settings no run can train with (CourseError: one line, exit 2), before any work."""
    if s["min_lr"] > s["lr"]:
        raise CourseError(f"--min-lr {s['min_lr']:g} is above --lr {s['lr']:g}: "
                          "the cosine schedule decays from --lr down to --min-lr")
    if s["n_embd"] % s["n_head"]:
        raise CourseError(f"--n-embd {s['n_embd']} is not a multiple of --n-head {s['n_head']}: "
                          "each head gets n_embd / n_head dimensions")


def build_parser():
    p = make_parser(
        "python -m course.tinylm.sft",
        "Train the tiny LM's reference policy pi0 by supervised fine-tuning on a seeded format mixture.",
        "  python -m course.tinylm.sft --check                      # reproduce the shipped pi0.pt bit for bit\n"
        "  python -m course.tinylm.sft --out runs/pi0_try.pt --steps 500   # a quick small retrain",
    )
    p.add_argument("--out", default=None,
                   help="where to write the weights (manifest goes next to it as <stem>_manifest.json)")
    p.add_argument("--force", action="store_true", help="overwrite an existing --out")
    p.add_argument("--check", action="store_true",
                   help="retrain with the shipped manifest's settings into a temp dir and compare sha256")
    for key, value in DEFAULTS.items():
        p.add_argument("--" + key.replace("_", "-"), type=ARG_TYPES[key], default=value, help=f"(default {value})")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    return run(_main, argv)


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    require("lm", "the tiny LM")  # the one rule for a missing extra: one line, exit 2, before any work

    if args.check:
        if not PI0_MANIFEST.exists():
            raise CourseError(f"{PI0_MANIFEST}: no manifest to check against")
        manifest = read_json(PI0_MANIFEST, "pi0 manifest")
        settings = manifest["settings"]
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / PI0_PATH.name
            result = train(settings, out, argv)
        same = result["sha256"] == manifest["sha256"]
        print(f"shipped  {manifest['sha256']}\nretrained {result['sha256']}\n" + ("IDENTICAL" if same else "DIFFERENT"))
        return 0 if same else 1

    if args.out is None:
        raise CourseError("--out is required (or use --check)")
    out = Path(args.out)
    for path in (out, manifest_path(out)):  # both outputs checked before training, not after it
        refuse_existing(path, args.force)
    settings = {k: getattr(args, k) for k in DEFAULTS}
    check_settings(settings)
    result = train(settings, out, argv)
    print(f"wrote {visible(str(out))} (sha256 {result['sha256'][:12]}) and {visible(str(result['manifest_path']))}")
    return 0


def _batches(s: dict[str, Any], excluded: Any, n_examples: int) -> Iterator[list[Any]]:
    """Batches of (problem, target, format), built lazily, 8 batches at a time.

    Length bucketing: inside each window of 8 batches, rows are sorted by length so
    a batch pads to similar lengths (short "Compute a + b." prompts do not pay for
    word problems); the order of the 8 batches is then shuffled by a seeded RNG.
    Everything is a function of the seed, so the data order is reproducible.
    """
    window = 8 * s["batch_size"]
    order_rng = random.Random(f"sft-order:{s['seed']}")
    stream = sft_stream(s["seed"], excluded)
    for _ in range(0, n_examples, window):
        rows = sorted((next(stream) for _ in range(window)), key=lambda e: len(e[0].prompt) + len(e[1]))
        chunk = [rows[i : i + s["batch_size"]] for i in range(0, window, s["batch_size"])]
        order_rng.shuffle(chunk)
        yield from chunk


def _batch(rows: Sequence[Any], cfg: Any, max_prompt: int) -> tuple[Any, Any, Any]:
    """Right-padded (B, L) tokens, valid mask, and a mask of the target positions."""
    import torch

    seqs, starts = [], []
    for problem, target, _fmt in rows:
        prompt = VOCAB.encode(problem.prompt)[-max_prompt:]
        seq = [VOCAB.BOS] + prompt + [VOCAB.SEP] + VOCAB.encode(target) + [VOCAB.EOS]
        seqs.append(seq[: cfg.block_size])
        starts.append(len(prompt) + 2)  # index of the first answer token
    L = max(len(x) for x in seqs)
    tokens = torch.full((len(seqs), L), VOCAB.PAD, dtype=torch.long)
    target_mask = torch.zeros((len(seqs), L), dtype=torch.bool)
    for i, (seq, start) in enumerate(zip(seqs, starts)):
        tokens[i, : len(seq)] = torch.tensor(seq)
        target_mask[i, start : len(seq)] = True  # answer tokens and <eos>
    return tokens, tokens != VOCAB.PAD, target_mask


def _optimizer(model: Any, s: dict[str, Any]) -> Any:
    """AdamW with weight decay on the matrices only (not on biases and norms)."""
    import torch

    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    return torch.optim.AdamW(
        [{"params": decay, "weight_decay": s["weight_decay"]}, {"params": no_decay, "weight_decay": 0.0}],
        lr=s["lr"],
        betas=(0.9, 0.95),
    )


def _lr_at(step: int, s: dict[str, Any]) -> float:
    """Linear warm-up, then cosine decay to min_lr (nanoGPT's schedule)."""
    if step < s["warmup"]:
        return s["lr"] * (step + 1) / s["warmup"]
    frac = (step - s["warmup"]) / max(1, s["steps"] - s["warmup"])
    return s["min_lr"] + 0.5 * (1 + math.cos(math.pi * frac)) * (s["lr"] - s["min_lr"])


def _manifest(settings: dict[str, Any], out: Path, digest: str, model: Any, cfg: Any, argv: Sequence[str] | None, *,
              excluded: Any, losses: list[float], train_seconds: float, threads: int, dev: dict[str, Any],
              torch_version: str) -> dict[str, Any]:
    """pi0's manifest: the weights, the settings and network, the data recipe, the result, the provenance."""
    s, n_examples = settings, settings["steps"] * settings["batch_size"]
    return {
        "what": "tiny LM reference policy pi0 (supervised on a seeded format mixture)",
        "weights": out.name,
        "sha256": digest,
        "policy": f"tinylm:{digest[:12]}",
        "settings": settings,
        "config": {"vocab_size": cfg.vocab_size, "block_size": cfg.block_size, "n_layer": cfg.n_layer,
                   "n_head": cfg.n_head, "n_embd": cfg.n_embd},
        "n_params": model.n_params(),
        "sft_data": {
            "recipe": "course.tinylm.sft_data.sft_stream(seed, exclude=dev+holdout prompts), "
                      "first steps*batch_size examples, bucketed by length in windows of 8 batches",
            "seed": s["seed"],
            "examples": n_examples,
            "format_weights": FORMAT_WEIGHTS,
            "excluded_prompts": len(excluded),
            "excluded_from": [file_fingerprint(p) for p in DEFAULT_DATASETS if Path(p).exists()],
        },
        "final_loss": round(sum(losses[-200:]) / len(losses[-200:]), 6),
        "train_seconds": round(train_seconds, 1),
        "torch": torch_version,
        "threads": threads,
        "dev_eval": dev,
        "provenance": environment("course.tinylm.sft", argv),
    }


def train(settings: dict, out: Path, argv: Sequence[str] | None) -> dict:
    """Train pi0 with ``settings``; write weights to ``out`` and the manifest beside it."""
    # --- boilerplate: threads, seeds, data --------------------------------------
    import torch
    import torch.nn.functional as F

    from course.lib.policy.sampling import set_threads
    from course.tinylm.model import GPT, GPTConfig, positions, save_checkpoint
    from course.tinylm.policy import DEFAULT_MAX_TOKENS

    s = settings
    threads = set_threads(s["threads"])
    torch.manual_seed(s["seed"])
    torch.use_deterministic_algorithms(True)
    cfg = GPTConfig(n_layer=s["n_layer"], n_head=s["n_head"], n_embd=s["n_embd"])
    model = GPT(cfg)
    info(f"pi0: {model.n_params():,} parameters, {cfg}")

    excluded = read_prompts(DEFAULT_DATASETS)
    n_examples = s["steps"] * s["batch_size"]
    info(f"data: {n_examples:,} fresh examples (seed {s['seed']}), {len(excluded)} dev/holdout prompts excluded")

    max_prompt = cfg.block_size - DEFAULT_MAX_TOKENS - 2

    opt = _optimizer(model, s)

    # --- the algorithm: next-token cross-entropy on the answer tokens ------------
    model.train()
    losses: list[float] = []
    t0 = time.time()
    progress = ProgressLine("sft step", s["steps"])
    for step, rows in zip(range(s["steps"]), _batches(s, excluded, n_examples)):
        tokens, valid, target_mask = _batch(rows, cfg, max_prompt)  # (B, L) each, right-padded
        logits, _ = model(tokens, positions(valid), None)  # (B, L, V); causal attention hides the right padding
        # position t predicts token t+1; score only answer tokens (the prompt is given, not imitated)
        loss_tok = F.cross_entropy(logits[:, :-1].reshape(-1, cfg.vocab_size), tokens[:, 1:].reshape(-1),
                                   reduction="none")
        mask = target_mask[:, 1:].reshape(-1).float()
        loss = (loss_tok * mask).sum() / mask.sum()
        value = loss.item()
        if not math.isfinite(value):
            raise diverged(f"the loss is {value} at step {step}", s)
        for group in opt.param_groups:
            group["lr"] = _lr_at(step, s)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), s["grad_clip"])
        opt.step()
        losses.append(value)
        if step % 200 == 0 or step == s["steps"] - 1:
            recent = sum(losses[-200:]) / len(losses[-200:])
            progress.info(f"step {step:5d}  loss {recent:.4f}  lr {_lr_at(step, s):.2e}  {time.time() - t0:.0f}s")
        if s["eval_every"] and step > 0 and step % s["eval_every"] == 0:
            model.eval()
            d = measure_dev(model, 1)
            progress.info(f"step {step:5d}  dev: strict pass {d['pass_at_1']:.2f}, "
                          f"right number written {d['number_right_share']:.2f} (1 sample/item)")
            model.train()
        progress.update(step + 1)
    progress.clear()
    train_seconds = time.time() - t0

    # --- boilerplate: save, measure, record ------------------------------------
    if not all(bool(torch.isfinite(p).all()) for p in model.parameters()):
        raise diverged("a weight is not finite after the last step", s)
    model.eval()
    out.parent.mkdir(parents=True, exist_ok=True)
    digest = save_checkpoint(model, out)
    dev = measure_dev(model, s["eval_samples"])
    manifest = _manifest(settings, out, digest, model, cfg, argv, excluded=excluded, losses=losses,
                         train_seconds=train_seconds, threads=threads, dev=dev, torch_version=torch.__version__)
    written = manifest_path(out)
    write_json_atomic(written, manifest)
    # Printed only now: a closed output pipe stops the tool at its next line, and the weights must
    # never be left without their manifest (or beside an older one that --force was replacing).
    info(f"dev pass@1 {dev['pass_at_1']:.3f} over {dev['samples']} samples; "
         f"right number anywhere {dev['number_right_share']:.3f}")
    return {"sha256": digest, "manifest_path": str(written)}


def manifest_path(out: Path) -> Path:
    """Where the manifest of the weights ``out`` goes: ``<stem>_manifest.json`` beside it."""
    return out.with_name(out.stem + "_manifest.json")


def diverged(what: str, s: dict) -> CourseError:
    """Training that diverged is refused, not recorded: weights holding NaN are no policy, and a
    manifest must not carry NaN (its own reader refuses it). Nothing is written; exit 2."""
    return CourseError(
        f"training diverged: {what} (lr {s['lr']:g}, batch size {s['batch_size']}); nothing was written. "
        f"Lower --lr (pi0 was trained with {DEFAULTS['lr']:g})"
    )


def measure_dev(model, n: int) -> dict:
    """pass@1 of a model on math_dev under the strict scorer (n samples per item, T = 1, seed 0)."""
    from collections import Counter

    from course.instrument.spec_v1 import score
    from course.lib.policy.training_problems import read_items
    from course.tinylm.policy import sample_items

    dev_path = DEFAULT_DATASETS[0]
    if not dev_path.exists():
        return {"note": f"{dev_path} not found; not measured"}
    items = read_items(dev_path)
    drawn = sample_items(model, [(it["id"], it["prompt"]) for it in items], n=n, seed=0, temperature=1.0)
    codes: Counter[str] = Counter()
    passed = right_number = total = 0
    for it, samples in zip(items, drawn):
        for text, _truncated in samples:
            r = score(it, text)
            codes[r["details"]["error_code"]] += 1
            passed += r["reward"] == 1.0
            right_number += it["expected_answer"] in [int(x) for x in re.findall(r"-?[0-9]+", text)]
            total += 1
    return {
        "dataset": MATH_DEV,
        "samples_per_item": n,
        "samples": total,
        "temperature": 1.0,
        "seed": 0,
        "pass_at_1": round(passed / total, 4),
        "number_right_share": round(right_number / total, 4),  # the expected integer appears among the numbers written
        "error_codes": dict(sorted(codes.items())),
    }


if __name__ == "__main__":
    raise SystemExit(main())
