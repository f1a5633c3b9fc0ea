"""Benchmark: the course's own RL loop (course.tinylm.rl's algorithm) beside TRL's GRPOTrainer, same everything.

    python benchmarks/bench_grpo.py                      # 20 steps x 4 prompts x 8 samples each side
    python benchmarks/bench_grpo.py --steps 40 --prompts 8 --json

Same policy: pi0 (data/tinylm/pi0.pt). TRL cannot train ``course.tinylm.model.GPT`` (it needs a
``transformers`` causal LM), so its side trains the *HF twin*: a GPT-NeoX built from config with
pi0's weights copied in (``course.integrations.hf_twin``; identical logits, 457,248 parameters)
and the course's character vocabulary as a tokenizer. Same prompts: the first steps x prompts
problems of course.tinylm.rl's training stream for the seed, in order (TRL's shuffling off).
Same reward: the strict scorer (``course.integrations.trl.strict_reward``). Same group size,
steps, learning rate (3e-4, constant), gradient clip (1.0), temperature (1.0), max 32 new
tokens, KL weight (beta 0.05, k3 estimator in both), <pad>/<bos>/<sep> never sampled.
Different by design, and printed: the course's loss is sequence-level REINFORCE with a group
mean baseline (advantage not divided by the std), Adam(0.9, 0.99); TRL's is its default
(``loss_type="dapo"``, token-level, clipped ratio; ``scale_rewards="none"`` to match the
course's baseline), AdamW(0.9, 0.999) with weight decay 0.

Each side runs in its own child process (so peak RSS is that side's alone), with 2 torch
threads. After training, both final policies are converted to the course GPT and measured
by the *same* sampler with the same seeds: strict pass rate on the first 50 math_dev items,
2 samples each (common random numbers), beside pi0's.

Reported per side: wall time per step (mean over the steps, model loading excluded), peak RSS,
mean training reward over the last 5 steps, and the fixed-slice pass rate after N steps.
The machine may be shared; the load average is printed with the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SEED = 0
LR, CLIP, BETA, TEMP, MAX_TOKENS = 3e-4, 1.0, 0.05, 1.0, 32
EVAL_ITEMS, EVAL_SAMPLES, EVAL_SEED = 50, 2, 0


def slice_pass_rate(gpt) -> float:  # type: ignore[no-untyped-def]
    from course.instrument.spec_v1 import score
    from course.tinylm.policy import sample_items
    from course.tinylm.sft_data import DEFAULT_DATASETS, read_items

    items = read_items(DEFAULT_DATASETS[0])[:EVAL_ITEMS]
    gpt.eval()
    drawn = sample_items(gpt, [(it["id"], it["prompt"]) for it in items], n=EVAL_SAMPLES, seed=EVAL_SEED,
                         temperature=TEMP, max_tokens=MAX_TOKENS)
    scores = [score(it, text)["reward"] for it, samples in zip(items, drawn) for text, _ in samples]
    return sum(scores) / len(scores)


def training_problems(steps: int, prompts: int) -> list:  # type: ignore[type-arg]
    """The problems course.tinylm.rl draws for --seed SEED, in its order."""
    from course.tinylm.sft_data import DEFAULT_DATASETS, problem_stream, read_items

    excluded = [it["prompt"] for p in DEFAULT_DATASETS for it in read_items(p)]
    stream = problem_stream(f"rl-prompts:{SEED}", excluded)
    return [next(stream) for _ in range(steps * prompts)]


def run_course(steps: int, P: int, G: int) -> dict:  # type: ignore[type-arg]
    """course.tinylm.rl's update, step for step (see that module for why each line is there)."""
    import torch

    from course.instrument.spec_v1 import score
    from course.tinylm import PI0_PATH
    from course.tinylm.model import load_checkpoint
    from course.tinylm.policy import completion_logprobs, generate, set_threads
    from course.tinylm.rl import policy_loss

    set_threads(2)
    torch.manual_seed(SEED)
    ref, _ = load_checkpoint(PI0_PATH)
    for p in ref.parameters():
        p.requires_grad_(False)
    policy, _ = load_checkpoint(PI0_PATH)
    opt = torch.optim.Adam(policy.parameters(), lr=LR, betas=(0.9, 0.99))
    problems = training_problems(steps, P)
    rewards_per_step, step_times = [], []
    for step in range(1, steps + 1):
        t0 = time.perf_counter()
        batch = problems[(step - 1) * P : step * P]
        seeds = [f"rl:{SEED}:{step}:{i}:{j}" for i in range(P) for j in range(G)]
        policy.eval()
        ro = generate(policy, [b.prompt for b in batch], seeds, group=G, temperature=TEMP, max_tokens=MAX_TOKENS)
        policy.train()
        rewards = torch.tensor([score({"expected_answer": batch[k // G].answer}, t)["reward"] for k, t in enumerate(ro.texts)])
        r = rewards.view(P, G)
        adv = (r - r.mean(dim=1, keepdim=True)).view(-1)
        logp, _ = completion_logprobs(policy, ro)
        with torch.no_grad():
            logp_ref, _ = completion_logprobs(ref, ro)
        loss, _ = policy_loss(logp, logp_ref, ro.mask, adv, BETA)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(policy.parameters(), CLIP)
        opt.step()
        step_times.append(time.perf_counter() - t0)
        rewards_per_step.append(float(rewards.mean()))
    return {"step_times": step_times, "rewards": rewards_per_step, "slice_pass": slice_pass_rate(policy)}


def run_trl(steps: int, P: int, G: int) -> dict:  # type: ignore[type-arg]
    os.environ["HF_HUB_OFFLINE"] = "1"
    import torch
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from course.integrations.hf_twin import char_tokenizer, gpt_from_twin, policy_prompt, twin_from_gpt
    from course.integrations.trl import strict_reward
    from course.tinylm import PI0_PATH
    from course.tinylm.model import load_checkpoint
    from course.tinylm.vocab import VOCAB

    torch.set_num_threads(2)
    gpt, _ = load_checkpoint(PI0_PATH)
    tmp = Path(tempfile.mkdtemp(prefix="bench_grpo_twin_"))
    twin_dir = tmp / "pi0_twin"
    twin_from_gpt(gpt).save_pretrained(twin_dir)  # TRL builds its KL reference model from a path
    tok = char_tokenizer()
    tok.save_pretrained(twin_dir)
    rows = [{"prompt": policy_prompt(b.prompt), "expected_answer": b.answer} for b in training_problems(steps, P)]

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
        num_iterations=1, max_completion_length=MAX_TOKENS, max_steps=steps, learning_rate=LR,
        lr_scheduler_type="constant", warmup_steps=0, weight_decay=0.0, max_grad_norm=CLIP, beta=BETA, temperature=TEMP,
        scale_rewards="none", shuffle_dataset=False, logging_steps=1, report_to=[], save_strategy="no", use_cpu=True,
        seed=SEED, disable_tqdm=True, generation_kwargs={"suppress_tokens": [VOCAB.PAD, VOCAB.BOS, VOCAB.SEP]},
    )
    trainer = GRPOTrainer(model=str(twin_dir), reward_funcs=strict_reward, args=args,
                          train_dataset=Dataset.from_list(rows), processing_class=tok, callbacks=[timer])
    trainer.train()
    rewards = [h["reward"] for h in trainer.state.log_history if "reward" in h]
    final = gpt_from_twin(trainer.model.float())
    return {"step_times": timer.times, "rewards": rewards, "slice_pass": slice_pass_rate(final),
            "loss_type": args.loss_type}


CHILD = """
import json, resource, sys
sys.path.insert(0, {bench!r})
import bench_grpo
out = getattr(bench_grpo, "run_" + sys.argv[1])(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print("RESULT " + json.dumps(out))
"""


def child(side: str, steps: int, P: int, G: int) -> dict:  # type: ignore[type-arg]
    code = CHILD.format(bench=str(Path(__file__).resolve().parent))
    load_before = os.getloadavg()[0]
    t0 = time.time()
    proc = subprocess.run([sys.executable, "-c", code, side, str(steps), str(P), str(G)], cwd=ROOT,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr[-4000:])
        raise SystemExit(f"{side} side failed (exit {proc.returncode})")
    out = json.loads(next(line[7:] for line in proc.stdout.splitlines() if line.startswith("RESULT ")))
    out["process_wall_s"] = time.time() - t0
    out["loadavg_1min_before_after"] = [round(load_before, 2), round(os.getloadavg()[0], 2)]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--prompts", type=int, default=4, help="P, prompts per step")
    ap.add_argument("--group", type=int, default=8, help="G, samples per prompt")
    ap.add_argument("--json", action="store_true")
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from record import Recorder, add_arguments

    add_arguments(ap)
    a = ap.parse_args()
    rec = Recorder.from_args("bench_grpo", a)
    load = os.getloadavg()
    sys.path.insert(0, str(ROOT))
    from course.tinylm import PI0_PATH
    from course.tinylm.model import load_checkpoint

    pi0_pass = slice_pass_rate(load_checkpoint(PI0_PATH)[0])
    results = {side: child(side, a.steps, a.prompts, a.group) for side in ("course", "trl")}
    import transformers
    import trl

    summary = {
        "steps": a.steps, "prompts_per_step": a.prompts, "group_size": a.group, "threads": 2,
        "loadavg_at_start": [round(x, 2) for x in load], "pi0_slice_pass": pi0_pass,
        "trl": trl.__version__, "transformers": transformers.__version__,
    }
    for side, r in results.items():
        last = r["rewards"][-5:]
        summary[side] = {
            "s_per_step": round(sum(r["step_times"]) / len(r["step_times"]), 3),
            "peak_rss_mb": round(r["peak_rss_mb"], 1),
            "train_reward_last5": round(sum(last) / len(last), 4),
            "slice_pass_after": r["slice_pass"],
            "process_wall_s": round(r["process_wall_s"], 1),
            "loadavg_1min_before_after": r["loadavg_1min_before_after"],
        }
    shape = f"{a.steps} steps x {a.prompts} prompts x {a.group} samples"
    rec.figure("pi0_slice_pass", pi0_pass, "", "pi0 before training: strict pass rate on the dev slice", digits=3)
    for side, label in (("course", "course `tinylm.rl` loop"), ("trl", "TRL `GRPOTrainer` (HF twin)")):
        s = summary[side]
        rec.figure(f"{side}_s_per_step", s["s_per_step"], "s", f"{label}: seconds per step ({shape})", digits=2)
        rec.figure(f"{side}_peak_rss_mb", s["peak_rss_mb"], "MB", f"{label}: peak memory", digits=0)
        rec.figure(f"{side}_reward_last5", s["train_reward_last5"], "", f"{label}: training reward, last 5 steps", digits=3)
        rec.figure(f"{side}_slice_pass", s["slice_pass_after"], "", f"{label}: dev slice strict pass rate after training", digits=3)
    rec.figure("trl_over_course_s_per_step", summary["trl"]["s_per_step"] / summary["course"]["s_per_step"], "×",
               "TRL's seconds per step / the course loop's", digits=2)
    rec.remark(f"trl {trl.__version__}, transformers {transformers.__version__}; 1-minute load average before/after each "
               f"side: course {summary['course']['loadavg_1min_before_after']}, trl {summary['trl']['loadavg_1min_before_after']} "
               "(the two sides ran one after the other: their per-step times compare only at similar load).")
    rec.save()
    if a.json:
        print(json.dumps(summary, indent=2, sort_keys=True))
        return 0
    n = EVAL_ITEMS * EVAL_SAMPLES
    print(f"GRPO side by side: {a.steps} steps x {a.prompts} prompts x {a.group} samples, pi0 start, 2 threads, "
          f"load average {summary['loadavg_at_start'][0]} at start (trl {trl.__version__}, transformers {transformers.__version__})")
    print(f"{'':22s}{'s/step':>8s}{'peak RSS MB':>13s}{'reward last 5':>15s}{'dev slice pass':>16s}")
    print(f"{'pi0 (before)':22s}{'':>8s}{'':>13s}{'':>15s}{pi0_pass:>16.3f}")
    for side, label in (("course", "course tinylm.rl"), ("trl", "TRL GRPOTrainer")):
        s = summary[side]
        print(f"{label:22s}{s['s_per_step']:>8.2f}{s['peak_rss_mb']:>13.0f}{s['train_reward_last5']:>15.3f}{s['slice_pass_after']:>16.3f}")
    for side in ("course", "trl"):
        print(f"  {side}: 1-min load average {summary[side]['loadavg_1min_before_after'][0]} before, "
              f"{summary[side]['loadavg_1min_before_after'][1]} after its run (2 cores): timings are only comparable at similar load")
    print(f"(dev slice: strict pass rate over the first {EVAL_ITEMS} math_dev items x {EVAL_SAMPLES} samples = {n} draws, "
          "same sampler and seeds for every policy)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
