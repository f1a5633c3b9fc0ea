"""Benchmark: where the real LLM's RL step holds its memory, phase by phase, under two settings of the C heap.

    python benchmarks/bench_llm_memory.py                  # 4 recipe steps per setting, 2 threads
    python benchmarks/bench_llm_memory.py --steps 2 --settings default
    python benchmarks/bench_llm_memory.py --settings default --grad-chunks 2 --precision float32 bfloat16
    python benchmarks/bench_llm_memory.py --record --note "how busy the machine was"

The recipe's run (``bench_llm_rl.py``) prints one peak for a whole run; this says which phase makes it and
how much of it is live tensors. Each setting runs in its own child process (a heap setting is for a whole
process): the model is loaded, the policy is anchored as after a warm start (its KL reference is then the
adapters as they were, as in the recipe), and ``--steps`` real steps of ``course.lib.learning.rl_loop.
reinforce_step`` run with the recipe's settings (8 problems x 8 samples, dynamic sampling up to 4 draws
ahead, 16 tokens, seed 0). A thread reads the resident size every 5 ms; each phase (sampling, the policy's
log-probability pass with gradients, the reference pass, backward + Adam) prints its seconds, the most
resident memory while it ran, and what stayed resident after it.

The settings:

  * ``default``: glibc's malloc as it comes. It raises its mmap threshold each time a large block is freed
    (up to 32 MiB), so most activation tensors are then carved from the heap, and freed memory below a live
    block is kept by the process.
  * ``mmap_1mib``: ``mallopt(M_MMAP_THRESHOLD, 1 MiB)`` and ``M_TRIM_THRESHOLD`` likewise: every block of
    1 MiB or more is its own mapping, given back when freed. Resident memory then follows the live tensors
    closely, at the price of fresh pages for every large tensor. The course does not use it (the slower passes
    cost more than the memory is worth to the recipe's time target); it is measured to show how much of the
    default's peak is the heap's, not the tensors'.

``--precision bfloat16`` measures the same steps with the policy's products in bfloat16 (``course.llm.precision``):
its figures are named ``<setting>_bfloat16_...``.

The same steps draw the same tokens under both settings (where bytes live does not change the numbers).
Linux with glibc only (``/proc/self/statm``, ``mallopt``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from record import Recorder, add_arguments  # noqa: E402

sys.path.insert(0, str(ROOT))
from course.llm import PRECISIONS  # noqa: E402

SETTINGS = ("default", "mmap_1mib")

CHILD = r"""
import ctypes, ctypes.util, json, sys, threading, time
setting, steps, threads, chunks, precision = (sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]),
                                              sys.argv[5])
if setting == "mmap_1mib":  # M_MMAP_THRESHOLD = -3, M_TRIM_THRESHOLD = -1 (glibc's malloc.h)
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    assert libc.mallopt(-3, 1 << 20) == 1 and libc.mallopt(-1, 1 << 20) == 1
PAGE = 4096

def resident_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE / 2**20

watch = {"max": 0.0}
def watcher():
    while True:
        watch["max"] = max(watch["max"], resident_mb())
        time.sleep(0.005)
threading.Thread(target=watcher, daemon=True).start()
phases, clock = [], {"t": time.perf_counter()}
def mark(step, name):
    now = time.perf_counter()
    phases.append({"step": step, "phase": name, "seconds": now - clock["t"],
                   "max_mb": max(watch["max"], resident_mb()), "after_mb": resident_mb()})
    clock["t"], watch["max"] = time.perf_counter(), resident_mb()

from dataclasses import replace
import torch
from course.lib.bundled import TRAINING_EXCLUDED
from course.lib.learning import rl_loop
from course.lib.learning.rl_config import LLM
from course.lib.policy.sampling import set_threads
from course.lib.policy.templates import get_template
from course.llm.load import load_llm
from course.llm.policy import LLMPolicy
from course.instrument.rubric_registry import get_rubric

set_threads(threads); torch.use_deterministic_algorithms(True)
s = replace(LLM, steps=40, prompts_per_step=8, group_size=8, lr=5e-4, beta=0.05, max_tokens=16, dynamic_sampling=4,
            threads=threads, seed=0, grad_chunks=chunks)
llm = load_llm(None)
policy = LLMPolicy(llm, get_template("fewshot"), rank=8, alpha=16.0, adapter_seed=0, threads=threads,
                   precision=precision)
policy.anchor_reference()  # as after the recipe's warm start: the KL reference is a frozen copy of the adapters
opt = torch.optim.Adam(policy.parameters(), lr=s.lr, betas=(0.9, 0.99))
_, stream = rl_loop.training_data(s, TRAINING_EXCLUDED)
source = rl_loop.ProblemSource(stream, s.prompts_per_step)
mark(0, "load")
step_no = {"n": 0}
def timed(fn, name):
    def run(*a, **k):
        mark(step_no["n"], "before " + name)
        out = fn(*a, **k)
        mark(step_no["n"], name)
        return out
    return run
policy.generate = timed(policy.generate, "sampling")
policy.logprobs = timed(policy.logprobs, "policy log-probs (with gradients)")
policy.reference_logprobs = timed(policy.reference_logprobs, "reference log-probs")
tokens, share = [], None
for step in range(1, steps + 1):
    step_no["n"] = step
    rec = rl_loop.reinforce_step(s, step, policy, opt, get_rubric(s.rubric), source.take(), more=source.take,
                                 give_back=source.give_back, signal_share=share)
    share = 1 - rec["dynamic_sampling"]["no_signal_groups_drawn"] if "dynamic_sampling" in rec else None
    mark(step, "backward + Adam")
    tokens.append(rec["example"])
for p in phases:  # the time between two timed calls: scoring, selecting the groups, the loss's arithmetic
    if p["phase"].startswith("before "):
        p["phase"] = "(between)"
print(json.dumps({"phases": phases, "examples": tokens}))
"""


def run_setting(setting: str, steps: int, threads: int, chunks: int, precision: str = "float32") -> dict:
    """One child process: ``steps`` recipe steps under ``setting``, the gradient pass in ``chunks`` parts, the
    policy computing in ``precision`` (course.llm.precision)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}  # no heap tuning from outside
    argv = [setting, str(steps), str(threads), str(chunks), precision]
    proc = subprocess.run([sys.executable, "-c", CHILD, *argv], cwd=ROOT, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr[-4000:])
        raise SystemExit(f"the {setting} child failed with exit code {proc.returncode}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=4, help="recipe steps per setting (default 4)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--settings", nargs="+", choices=SETTINGS, default=list(SETTINGS))
    ap.add_argument("--grad-chunks", type=int, default=1,
                    help="the gradient pass in this many parts of whole groups (course.llm.rl --grad-chunks; "
                         "default 1)")
    ap.add_argument("--precision", nargs="+", choices=PRECISIONS, default=["float32"],
                    help="what the policy computes in (course.llm.rl --precision), each measured under every "
                         "setting (default float32)")
    add_arguments(ap)
    args = ap.parse_args()
    rec = Recorder.from_args("bench_llm_memory", args)
    print(f"{os.cpu_count()} CPUs, {args.threads} threads, load average (1 min) at start {os.getloadavg()[0]:.2f}")
    examples = {}
    for setting, precision in [(s, p) for p in args.precision for s in args.settings]:
        got = run_setting(setting, args.steps, args.threads, args.grad_chunks, precision)
        examples[setting, precision] = got["examples"]
        setting = setting if precision == "float32" else f"{setting}_{precision}"  # the figures' names
        print(f"\n{setting}: phase by phase (seconds; the most resident while it ran; resident after it), MB")
        for p in got["phases"]:
            if p["phase"] == "(between)" and p["seconds"] < 0.05:
                continue  # nothing worth a line (the sums below still count it)
            print(f"  step {p['step']}  {p['phase']:36s} {p['seconds']:6.2f} s  max {p['max_mb']:6.0f}  "
                  f"after {p['after_mb']:6.0f}")
        last = [p for p in got["phases"] if p["step"] == args.steps]
        peak = max(p["max_mb"] for p in got["phases"])
        grad = next(p for p in last if p["phase"].startswith("policy log-probs"))
        before_grad = last[last.index(grad) - 1]["after_mb"]  # resident as the gradient pass began
        rec.figure(f"{setting}_peak_mb", peak, "MB", f"{setting} heap: peak resident over {args.steps} recipe steps",
                   digits=0)
        rec.figure(f"{setting}_held_mb", last[-1]["after_mb"], "MB",
                   f"{setting} heap: resident after the last step's Adam update (between steps)", digits=0)
        rec.figure(f"{setting}_grad_pass_growth_mb", max(p["max_mb"] for p in last[last.index(grad):]) - before_grad,
                   "MB", f"{setting} heap: the last step's growth from before its gradient pass to its peak", digits=0)
        rec.figure(f"{setting}_step_seconds", sum(p["seconds"] for p in last), "s",
                   f"{setting} heap: the last step's seconds (sampling, both log-prob passes, backward + Adam)",
                   digits=2)
        print(f"  peak {peak:.0f} MB; after the last step {last[-1]['after_mb']:.0f} MB; "
              f"last step {sum(p['seconds'] for p in last):.2f} s")
    for precision in args.precision:
        if len(args.settings) == 2:
            same = examples["default", precision] == examples["mmap_1mib", precision]
            print(f"\n{precision}: the steps' example completions are {'the same' if same else 'NOT the same'} "
                  "under both settings")
    print(f"load average (1 min) at the end {os.getloadavg()[0]:.2f}")
    rec.save()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
