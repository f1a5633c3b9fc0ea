"""Benchmark: the tiny LM's Loop C target, measured. Wall time, peak memory, holdout pass@1 before/after.

    python benchmarks/bench_tinylm.py                       # the default strict run (seed 0)
    python benchmarks/bench_tinylm.py --seed 1 --keep runs/bench_rl_seed1
    python benchmarks/bench_tinylm.py --repeat              # also rerun and compare rl_log.jsonl bytes
    python benchmarks/bench_tinylm.py --step-only           # only the RL step, phase by phase, this code vs the
                                                            # baseline

What it does: runs ``python -m course.tinylm.rl --rubric strict --seed S --outdir DIR``
with its defaults, in a fresh child process (so the child's own peak RSS is
measured, via ``resource.getrusage`` inside the child), then reads the run's
summary.json and prints:

  * wall time of the whole run (training + pi0/final holdout sampling + course.eval + course.gate)
  * peak resident memory of the child
  * math_holdout pass@1 of pi0 and of the final policy (8 samples per item, Wilson 95 %)
    and the lift with its paired-bootstrap interval; the course.eval single-sample rates; the gate verdict
  * sampling throughput of pi0 (completions per second on math_dev, n = 8)

Then one RL step (P = 8 prompts x G = 8 samples, rl's defaults), phase by phase: sampling
(``generate``), the policy's log-probs (with gradients), pi0's log-probs (without), loss and
backward, clip and Adam. Two sides in one process, interleaved (A B, B A, A B, ...): this tree's
``course/tinylm/{model,policy}.py`` and the same two files at ``--baseline`` (a git revision,
default the commit before issue 26's changes, read with ``git show``). Both sides train their own
copy of pi0 on the same problems and seeds, so the work per step is the same; the benchmark checks
that the two sides produce the same samples, log-probs and gradients, bit for bit, at every step
(the speed-ups must not change a single output). Medians per phase and the median of the per-pair
ratios baseline / this tree are printed, for wall time and for the process's CPU time (with one
thread, ``--threads 1``, CPU time is the steadier figure on a machine shared with other work).

Targets (issue 7): lift >= 15 points, wall time < 5 minutes on 2 cores, peak RSS < 2 GB.
The machine may be shared: the numbers are what this run saw, printed with the
thread count and the load average at the start.
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
import types
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from record import CHILD_PRELUDE, Recorder, add_arguments  # noqa: E402

from course.lib.evaluation.summary import percent, points  # noqa: E402

# The tree before issue 26 (sampling under inference_mode, preallocated masks, cached rotary tables).
BASELINE = "c47afda"
PHASES = ("generate", "logp policy", "logp pi0", "loss+backward", "clip+adam")

CHILD = CHILD_PRELUDE + """
import resource, sys
from course.tinylm.rl import main
code = main(sys.argv[1:])
print(f"MAXRSS_KB {peak_rss_kib()}", file=sys.stderr)
raise SystemExit(code)
"""


def run_rl(outdir: Path, seed: int, extra: list[str]) -> tuple[float, float, str]:
    t0 = time.time()
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, "--rubric", "strict", "--seed", str(seed), "--outdir", str(outdir), *extra],
        cwd=ROOT, capture_output=True, text=True,
    )
    wall = time.time() - t0
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        raise SystemExit(f"rl run failed with exit code {proc.returncode}")
    rss_kb = next(int(line.split()[1]) for line in proc.stderr.splitlines() if line.startswith("MAXRSS_KB"))
    return wall, rss_kb / 1024, proc.stderr


def sampling_throughput() -> float:
    code = (
        "import time, torch\n"
        "from course.lib.bundled import PI0_PATH\n"
        "from course.tinylm.model import load_checkpoint\n"
        "from course.lib.policy.sampling import set_threads\n"
        "from course.tinylm.policy import sample_items\n"
        "from course.lib.bundled import DEFAULT_DATASETS\n"
        "from course.lib.policy.training_problems import read_items\n"
        "set_threads(2); m, _ = load_checkpoint(PI0_PATH)\n"
        "items = [(it['id'], it['prompt']) for it in read_items(DEFAULT_DATASETS[0])]\n"
        "t = time.time(); sample_items(m, items, n=8, seed=0); print(len(items) * 8 / (time.time() - t))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


# Library modules the baseline's source imports under their paths of the time (issue 25 grouped course/lib).
MOVED = {"course.lib.manifest": "course.lib.records.manifest", "course.lib.jsonl": "course.lib.records.jsonl",
         "course.lib.formats": "course.lib.records.formats"}


def _revision_modules(rev: str) -> tuple[Any, Any]:
    """course/tinylm/model.py and policy.py as they were at git revision ``rev``, as fresh modules."""
    def source(path: str) -> str:
        return subprocess.run(["git", "show", f"{rev}:{path}"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout

    mods = []
    for name, path, src in (("_baseline_tinylm_model", "course/tinylm/model.py", source("course/tinylm/model.py")),
                            ("_baseline_tinylm_policy", "course/tinylm/policy.py", source("course/tinylm/policy.py"))):
        src = src.replace("from course.tinylm.model import", "from _baseline_tinylm_model import")
        for old, new in MOVED.items():  # the library has moved since (course/lib in folders): same modules, new paths
            src = src.replace(f"from {old} import", f"from {new} import")
        mod = types.ModuleType(name)
        sys.modules[name] = mod  # dataclasses look their module up while the class is built
        exec(compile(src, f"{rev}:{path}", "exec"), mod.__dict__)
        mods.append(mod)
    return mods[0], mods[1]


class StepSide:
    """One side of the comparison: a model/policy implementation, its own policy copy and Adam."""

    def __init__(self, model_mod: Any, policy_mod: Any) -> None:
        import torch

        from course.lib.bundled import PI0_PATH

        self.policy_mod = policy_mod
        self.ref, _ = model_mod.load_checkpoint(PI0_PATH)
        for p in self.ref.parameters():
            p.requires_grad_(False)
        self.policy, _ = model_mod.load_checkpoint(PI0_PATH)
        self.policy.train()
        self.opt = torch.optim.Adam(self.policy.parameters(), lr=3e-4, betas=(0.9, 0.99))

    def step(self, problems: list[Any], seeds: list[str], group: int) -> tuple[list[tuple[float, float]], list[Any]]:
        """course.tinylm.rl.reinforce_step's work, timed phase by phase; returns ((wall, CPU) seconds per phase,
        outputs to compare)."""
        import torch

        from course.instrument.spec_v1 import score
        from course.tinylm.rl import policy_loss

        pol, P = self.policy_mod, len(problems)
        times: list[tuple[float, float]] = []
        t, c = time.perf_counter(), time.process_time()

        def lap() -> None:
            nonlocal t, c
            now, cpu = time.perf_counter(), time.process_time()
            times.append((now - t, cpu - c))
            t, c = now, cpu

        self.policy.eval()
        ro = pol.generate(self.policy, [b.prompt for b in problems], seeds, group=group, temperature=1.0, max_tokens=32)
        self.policy.train()
        lap()
        rewards = torch.tensor([score({"expected_answer": problems[k // group].answer}, x)["reward"]
                                for k, x in enumerate(ro.texts)])
        r = rewards.view(P, group)
        adv = (r - r.mean(dim=1, keepdim=True)).view(-1)
        t, c = time.perf_counter(), time.process_time()  # scoring is the rubric's cost, not the model's: left out
        logp, entropy = pol.completion_logprobs(self.policy, ro)
        lap()
        with torch.no_grad():
            logp_ref, _ = pol.completion_logprobs(self.ref, ro)
        lap()
        loss, _ = policy_loss(logp, logp_ref, ro.mask, adv, 0.05)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        lap()
        grad_norm = torch.nn.utils.clip_grad_norm_(self.policy.parameters(), 1.0)
        self.opt.step()
        lap()
        return times, [ro.texts, ro.tokens, logp.detach(), entropy, logp_ref, grad_norm]


def _same(a: list[Any], b: list[Any]) -> bool:
    import torch

    return all(torch.equal(x, y) if isinstance(x, torch.Tensor) else x == y for x, y in zip(a, b))


def step_benchmark(baseline: str, pairs: int, threads: int, seed: int, rec: Any) -> None:
    """Print the RL step's phases for this tree and for ``baseline``, interleaved, medians and ratios."""
    import torch

    from course.lib.bundled import DEFAULT_DATASETS
    from course.lib.policy.sampling import set_threads
    from course.lib.policy.training_problems import problem_stream, read_items
    from course.tinylm import model as model_now
    from course.tinylm import policy as policy_now

    set_threads(threads)
    torch.use_deterministic_algorithms(True)  # as course.tinylm.rl runs
    model_old, policy_old = _revision_modules(baseline)
    sides = {"baseline": StepSide(model_old, policy_old), "this tree": StepSide(model_now, policy_now)}
    excluded = [it["prompt"] for path in DEFAULT_DATASETS for it in read_items(path)]
    stream = problem_stream(f"rl-prompts:{seed}", excluded)
    P = G = 8
    warmup = 2
    times: dict[str, list[list[tuple[float, float]]]] = {name: [] for name in sides}
    identical = True
    for step in range(1, warmup + pairs + 1):
        problems = [next(stream) for _ in range(P)]
        seeds = [f"rl:{seed}:{step}:{i}:{j}" for i in range(P) for j in range(G)]
        order = list(sides) if step % 2 else list(sides)[::-1]  # A B, then B A: neither side always goes first
        outputs = {}
        for name in order:
            phase_times, outputs[name] = sides[name].step(problems, seeds, G)
            if step > warmup:
                times[name].append(phase_times)
        identical = identical and _same(outputs["baseline"], outputs["this tree"])
    load = os.getloadavg()
    print(f"RL step, {P} prompts x {G} samples, {threads} threads, {pairs} interleaved pairs after {warmup} warm-up "
          f"steps (baseline = {baseline}); load average now {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"  {'median ms':14s} {'wall: baseline':>14s} {'this tree':>9s} {'ratio':>6s}   "
          f"{'CPU: baseline':>13s} {'this tree':>9s} {'ratio':>6s}")
    for k, phase in enumerate((*PHASES, "step")):
        row = []
        for clock in (0, 1):  # wall, then CPU time of the process (the steadier figure on a busy machine)
            def col(name: str) -> list[float]:
                return [sum(x[clock] for x in phases) if phase == "step" else phases[k][clock]
                        for phases in times[name]]

            old, new = col("baseline"), col("this tree")
            ratio = statistics.median(o / n for o, n in zip(old, new))  # per pair, then the median
            row.append(f"{1000 * statistics.median(old):9.1f} {1000 * statistics.median(new):9.1f} {ratio:5.2f}x")
            key, clock_name = phase.replace(" ", "_").replace("+", "_"), ("wall", "cpu")[clock]
            what = f"RL step ({P}x{G}, {threads} threads), {phase}, {clock_name} time"
            rec.figure(f"step_{key}_{clock_name}_ms", 1000 * statistics.median(new), "ms",
                       f"{what}: this tree (median)", digits=1)
            rec.figure(f"step_{key}_{clock_name}_ratio", ratio, "×",
                       f"{what}: baseline {baseline} / this tree (median of pairs)", digits=2)
        print(f"  {phase:14s}      {row[0]}        {row[1]}")
    verdict = 'IDENTICAL on both sides' if identical else 'DIFFERENT (a speed-up changed the arithmetic)'
    print(f"  samples, log-probs, pi0 log-probs and gradient norms at every step: {verdict}")
    rec.remark(f"RL step against {baseline}, {pairs} interleaved pairs: samples, log-probs and gradient norms "
               f"{verdict}.")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--keep", default=None, help="keep the run directory here (default: a temp dir, deleted)")
    ap.add_argument("--repeat", action="store_true", help="run twice and compare rl_log.jsonl bytes (reproducibility)")
    ap.add_argument("--step-only", action="store_true", help="only the RL step's phases (this tree vs --baseline)")
    ap.add_argument("--baseline", default=BASELINE,
                    help=f"git revision of the other side of the step comparison (default {BASELINE})")
    ap.add_argument("--pairs", type=int, default=12, help="interleaved step pairs to time (default 12)")
    ap.add_argument("--threads", type=int, default=2, help="torch threads for the step comparison (default 2, as rl)")
    add_arguments(ap)
    args, extra = ap.parse_known_args()
    rec = Recorder.from_args("bench_tinylm", args)

    load = os.getloadavg()
    print(f"machine: {os.cpu_count()} CPUs, load average at start {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    if args.step_only:
        step_benchmark(args.baseline, args.pairs, args.threads, args.seed, rec)
        rec.save()
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        outdir = Path(args.keep) if args.keep else Path(tmp) / "rl_bench"
        wall, rss_mb, _ = run_rl(outdir, args.seed, extra)
        summary = json.loads((outdir / "summary.json").read_text(encoding="utf-8"))
        h = summary["holdout"]
        print(f"rl --rubric strict --seed {args.seed} (defaults): wall {wall:.1f}s "
              f"(training {summary['train_seconds']:.1f}s), "
              f"peak RSS {rss_mb:.0f} MB")
        run = f"`course.tinylm.rl --rubric strict --seed {args.seed}`"
        rec.figure("wall_seconds", wall, "s",
                   f"{run}: wall time of the whole run (training, holdout sampling, eval, gate)", digits=1)
        rec.figure("train_seconds", summary["train_seconds"], "s", f"{run}: of which training", digits=1)
        rec.figure("peak_rss_mb", rss_mb, "MB", f"{run}: peak memory", digits=0)
        for tag in ("pi0", "final"):
            x = h[tag]
            print(f"  holdout {tag:5s} {x['policy']}: pass@1 {x['pass_at_1']:.3f} "
                  f"(95% items as the unit {x['pass_at_1_ci95'][0]:.3f}-"
                  f"{x['pass_at_1_ci95'][1]:.3f}, {x['samples']} samples)")
        lo, hi = h["lift_paired_bootstrap95"]
        lift = (f"lift {points(h['lift_pass_at_1'], signed=True)} points (paired bootstrap 95% "
                f"{points(lo, signed=True)} to {points(hi, signed=True)}); gate {h['gate'].get('verdict')}")
        rec.remark(f"Holdout strict pass@1 (8 samples per item): pi0 {percent(h['pi0']['pass_at_1'])} → final "
                   f"{percent(h['final']['pass_at_1'])}, {lift}.")
        print(f"  {lift}")
        t = summary["final_train"]
        print(f"  KL to pi0 at the end: {t['kl_k1_per_token']:.4f}/token (k1), {t['kl_k3_per_token']:.4f}/token (k3), "
              f"{t['kl_k1_per_sample']:.3f}/completion")
        ok = h["lift_pass_at_1"] >= 0.15 and wall < 300 and rss_mb < 2048
        print(f"  targets (lift >= 15 points, < 300 s, < 2048 MB): {'MET' if ok else 'NOT MET'}")
        if args.repeat:
            outdir2 = Path(tmp) / "rl_bench_repeat"
            run_rl(outdir2, args.seed, extra)
            same = (outdir / "rl_log.jsonl").read_bytes() == (outdir2 / "rl_log.jsonl").read_bytes()
            same_w = (outdir / "final.pt").read_bytes() == (outdir2 / "final.pt").read_bytes()
            print(f"  rerun with the same seed: rl_log.jsonl {'IDENTICAL' if same else 'DIFFERENT'}, "
                  f"final.pt {'IDENTICAL' if same_w else 'DIFFERENT'}")
    throughput = sampling_throughput()
    print(f"pi0 sampling throughput: {throughput:.0f} completions/s (math_dev, n=8, 2 threads)")
    rec.figure("pi0_completions_per_s", throughput, "completions/s",
               "pi0 sampling throughput (math_dev, 8 per prompt, 2 threads)", digits=0)
    step_benchmark(args.baseline, args.pairs, args.threads, args.seed, rec)
    rec.save()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
