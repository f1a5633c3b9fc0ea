"""Benchmark: where the real LLM's sampling time goes, against the machine's matrix-product bound.

    python benchmarks/bench_llm_sampling.py                      # 8 few-shot prompts x 8 samples, 16 tokens, 2 threads
    python benchmarks/bench_llm_sampling.py --rounds 8 --threads 1
    python benchmarks/bench_llm_sampling.py --record --note "how busy the machine was"
    python benchmarks/bench_llm_sampling_bfloat16.py --record   # the same, this tree's side in bfloat16

On one batch of the recipe's shape (``--prompts`` math_dev items under the few-shot template,
``--n`` samples each, ``--max-tokens``, temperature 1, ``--threads``), it prints:

  1. the bound: this machine's float32 ``torch.matmul`` throughput at the model's own shapes (the
     seven projections of a block times the block count, plus the LM head where it runs), at the
     row counts of a prefill and of each decode step, for the weights as loaded (row-major) and
     as the sampler lays them out (column-major, ``course.llm.sampler.lay_out_for_sampling``);
     as tokens per second, the most that products alone allow;
  2. the course's sampler, ``--rounds`` batches, the code of ``--baseline`` (default 09a2963, the
     commit issue 32 measured) and this tree's INTERLEAVED (A B, B A, ...; each side on its own
     copy of the model): completions per second, and per side the prefill and the decode phases
     (seconds, tokens per second) beside the bound of the same row counts; the median of the
     per-round ratios; and how many completions' token ids differ between the two (float rounding
     only: both draw the same uniforms);
  3. Hugging Face ``generate`` on the same batch (``num_return_sequences``, ``do_sample``, top-k off);
  4. one RL step of ``course.llm.rl`` on that batch (LoRA adapters, rank 8), phase by phase: sampling,
     scoring, the policy's log-probabilities, pi0's, the loss and backward (the second of two steps:
     the first warms the kernels up), the log-probability passes and the backward each beside its own
     matmul bound (the products at the positions it must read), measured in the same run.

Each phase is reported as a fraction of its bound (products alone / measured: 1.0 would be a phase that
does nothing but its matrix products at this machine's matmul speed). This tree reads the template's
shared prefix once per policy state (``course.llm.prefix_cache``); each round starts from an empty cache,
as each RL step's sampling does after an optimizer step, so its prefill counts that one prefix forward.

``bench_llm_sampling_bfloat16.py`` runs the same with this tree's side (its sampler and the RL step) computing as
``course.llm.rl --precision bfloat16`` does, each of its phases held against the bound of bfloat16 projections
and a float32 LM head (the baseline stays float32, so more of its completions differ: another precision).

The load average (1 minute) before and after is printed; a figure measured on a busy machine
says so in the record's note. These are what this run saw, not product promises.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from record import Recorder, add_arguments  # noqa: E402

BASELINE = "09a2963"  # the commit issue 32 measured: every prompt read whole, weights as loaded
# What the baseline's sampler imported, and where those same functions live today (issue 31 moved them into the
# policy layer under public names; their code is unchanged): its import lines are rewritten before it runs.
MOVED_IMPORTS = {
    "from course.llm.templates import PromptTemplate, render":
        "from course.lib.policy.templates import PromptTemplate, render",
    "from course.tinylm.policy import Rollouts, _draw, _filter_top_p, sample_in_batches":
        "from course.lib.policy.sampling import SampledBatch as Rollouts, draw_tokens as _draw, "
        "filter_top_p as _filter_top_p, sample_in_batches",
}


def load_average() -> float:
    return round(os.getloadavg()[0], 2)


def baseline_sampler(rev: str) -> Any:
    """The real LLM's sampler as it was at git revision ``rev``, as a fresh module.

    It is course/llm/sampler.py, and course/llm/sampling.py at revisions before that name (issue 31)."""
    for path in ("course/llm/sampler.py", "course/llm/sampling.py"):
        shown = subprocess.run(["git", "show", f"{rev}:{path}"], cwd=ROOT, capture_output=True, text=True)
        if shown.returncode == 0:
            break
    shown.check_returncode()
    src = shown.stdout
    for old, new in MOVED_IMPORTS.items():
        src = src.replace(old, new)
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(src)
    spec = importlib.util.spec_from_file_location("_baseline_llm_sampling", f.name)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    os.unlink(f.name)
    return mod


class ForwardClock:
    """Times every forward call of a model: (rows, columns, CPU-independent wall seconds)."""

    def __init__(self, model: Any) -> None:
        self.model, self.calls = model, []
        self._orig = model.forward

        def timed(*args: Any, **kwargs: Any) -> Any:
            ids = args[0] if args else kwargs["input_ids"]
            t0 = time.perf_counter()
            out = self._orig(*args, **kwargs)
            self.calls.append((int(ids.shape[0]), int(ids.shape[1]), time.perf_counter() - t0))
            return out

        model.forward = timed

    def take(self) -> list[tuple[int, int, float]]:
        calls, self.calls = self.calls, []
        return calls


class DecoderClock:
    """Times this tree's sampler by its decoder's calls (the lean decoder never calls ``model.forward``):
    a prefill as (1, positions computed, s): the tails, and the shared prefix when the decoder reads it
    itself; the prefix cache's forward of the prefix (``course.llm.prefix_cache``) as (1, c, s), a prefill
    too; a step as (rows, 1, s)."""

    def __init__(self, sampler: Any) -> None:
        from course.llm import prefix_cache

        self.sampler, self.calls = sampler, []
        self._orig = sampler.decoder_for
        self._cache, self._compute = prefix_cache, prefix_cache._compute

        def timed_compute(model: Any, tokens: Any, *rest: Any) -> Any:
            t0 = time.perf_counter()
            out = self._compute(model, tokens, *rest)
            self.calls.append((1, len(tokens), time.perf_counter() - t0))
            return out

        prefix_cache._compute = timed_compute

        def timed_decoder(model: Any) -> Any:
            decoder = self._orig(model)
            prefill, step = decoder.prefill, decoder.step

            def timed_prefill(prefix: list[int], tails: Any, *rest: Any) -> Any:
                t0 = time.perf_counter()
                out = prefill(prefix, tails, *rest)
                cached = len(rest) > 3 and rest[3] is not None  # the prefix's keys came from the cache
                self.calls.append((1, (0 if cached else len(prefix)) + tails.numel(), time.perf_counter() - t0))
                return out

            def timed_step(tokens: Any, pos: Any, *rest: Any) -> Any:
                t0 = time.perf_counter()
                out = step(tokens, pos, *rest)
                self.calls.append((int(tokens.shape[0]), 1, time.perf_counter() - t0))
                return out

            decoder.prefill, decoder.step = timed_prefill, timed_step
            return decoder

        sampler.decoder_for = timed_decoder

    def take(self) -> list[tuple[int, int, float]]:
        calls, self.calls = self.calls, []
        return calls

    def remove(self) -> None:
        self.sampler.decoder_for = self._orig
        self._cache._compute = self._compute


class MatmulBound:
    """Seconds the model's matrix products take at M rows on this machine (torch.matmul, float32; ``dtype``
    another element type for the blocks' projections, e.g. bfloat16: what the same products cost with the
    weights kept in it; ``head_dtype`` the LM head's, by default the blocks' own)."""

    def __init__(self, model: Any, dtype: Any = None, head_dtype: Any = None) -> None:
        import torch

        self.dtype = torch.float32 if dtype is None else dtype
        self.head_dtype = self.dtype if head_dtype is None else head_dtype

        cfg = model.config
        d, kv, ff = (cfg.hidden_size, cfg.num_key_value_heads * (cfg.hidden_size // cfg.num_attention_heads),
                     cfg.intermediate_size)
        self.block = [(d, d), (d, kv), (d, kv), (d, d), (d, ff), (d, ff), (ff, d)]  # q k v o gate up down: (in, out)
        self.layers, self.head = cfg.num_hidden_layers, (d, cfg.vocab_size)
        self.torch, self.memo = torch, {}

    def _time(self, m: int, k: int, n: int, column_major: bool, dtype: Any = None) -> float:
        torch = self.torch
        dtype = self.dtype if dtype is None else dtype
        x, w = torch.randn(m, k, dtype=dtype), torch.randn(n, k, dtype=dtype)
        if column_major:
            w = w.t().contiguous().t()
        for _ in range(2):
            x @ w.t()
        reps, t0 = 0, time.perf_counter()
        while reps < 3 or time.perf_counter() - t0 < 0.05:
            x @ w.t()
            reps += 1
        return (time.perf_counter() - t0) / reps

    def seconds(self, m: int, head: bool, column_major: bool) -> float:
        key = (m, head, column_major)
        if key not in self.memo:
            t = self.layers * sum(self._time(m, k, n, column_major) for k, n in self.block)
            self.memo[key] = t + (self._time(m, *self.head, column_major, self.head_dtype) if head else 0.0)
        return self.memo[key]

    def head_seconds(self, m: int, column_major: bool) -> float:
        """The LM head alone at M rows (the log-probability passes run it only where a token was chosen)."""
        key = (m, "head", column_major)
        if key not in self.memo:
            self.memo[key] = self._time(max(1, m), *self.head, column_major, self.head_dtype)
        return self.memo[key]

    def flops(self, m: int, head: bool) -> float:
        return 2.0 * m * (self.layers * sum(k * n for k, n in self.block)
                          + (self.head[0] * self.head[1] if head else 0))


def logprob_shapes(ro: Any, shared: Any) -> tuple[int, int, int]:
    """What a log-probability pass must compute, at least: (the real positions read after the shared prefix,
    each prompt's tail and its completions' tokens; the chosen tokens, where the LM head runs; the prefix's
    length c, which the pass reads from the cache and the backward pass goes through once)."""
    from course.llm.sampler import shared_prefix_length

    rows = [row[valid].tolist() for row, valid in zip(ro.prompt_tokens, ro.prompt_valid)]
    c = shared_prefix_length(rows, shared)
    chosen = int(ro.mask.sum())
    return sum(len(r) - c for r in rows) + chosen, chosen, c


def split_phases(
    calls: list[tuple[int, int, float]],
) -> tuple[list[tuple[int, int, float]], list[tuple[int, int, float]]]:
    """Prefill calls (more than one column) and decode steps (one token per row)."""
    return [c for c in calls if c[1] > 1], [c for c in calls if c[1] == 1]


def build_parser(description: str) -> argparse.ArgumentParser:
    """The flags of this benchmark (and of bench_llm_sampling_bfloat16.py, which measures this tree in bfloat16)."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--prompts", type=int, default=8, help="prompts per batch (default 8, the recipe's)")
    ap.add_argument("--n", type=int, default=8, help="samples per prompt (default 8, the recipe's group)")
    ap.add_argument("--max-tokens", type=int, default=16, help="completion budget (default 16, the recipe's)")
    ap.add_argument("--threads", type=int, default=2, help="torch threads (default 2, the recipe's)")
    ap.add_argument("--rounds", type=int, default=6, help="interleaved rounds, one batch each (default 6)")
    ap.add_argument("--baseline", default=BASELINE, help=f"git revision of the other side (default {BASELINE})")
    ap.add_argument("--no-hf", action="store_true", help="leave out Hugging Face generate")
    ap.add_argument("--no-step", action="store_true", help="leave out the RL step's phases")
    return ap


def main(argv: list[str] | None = None) -> int:
    ap = build_parser(__doc__.split("\n")[0])
    add_arguments(ap)
    args = ap.parse_args(argv)
    return measure(args, Recorder.from_args("bench_llm_sampling", args, argv), "float32")


def measure(args: argparse.Namespace, rec: Recorder, precision: str) -> int:
    """Everything the docstring lists, with this tree's side computing in ``precision`` (course.llm.precision)."""
    import torch

    from course.instrument.spec_v1 import score
    from course.lib.policy.sampling import set_threads
    from course.lib.policy.templates import get_template, render
    from course.lib.records.formats import read_dataset
    from course.llm import sampler
    from course.llm.load import load_llm
    from course.llm.precision import computing
    from course.llm.prefix_cache import forget

    set_threads(args.threads)
    load_start = load_average()
    print(f"{os.cpu_count()} CPUs, {args.threads} threads, load average (1 min) at start {load_start}")
    old_llm, new_llm = load_llm(), load_llm()  # one copy each: the new sampler lays its model's weights out
    old = baseline_sampler(args.baseline)
    template = get_template("fewshot")
    items = read_dataset(str(ROOT / "data" / "datasets" / "math_dev.jsonl"))
    P, G, K = args.prompts, args.n, args.max_tokens
    if len(items) < P * args.rounds:
        raise SystemExit(f"math_dev has {len(items)} items; --prompts x --rounds must not exceed it")
    bound = MatmulBound(new_llm.model)  # float32: the baseline's bound, and this tree's in float32
    new_bound = bound
    if precision == "bfloat16":  # this tree's model: bfloat16 blocks, float32 head (course.llm.precision)
        from course.llm.precision import to_bfloat16_products

        to_bfloat16_products(new_llm.model)
        new_bound = MatmulBound(new_llm.model, torch.bfloat16, torch.float32)
    bounds = {"baseline": bound, "this tree": new_bound}
    clocks = {"baseline": ForwardClock(old_llm.model), "this tree": DecoderClock(sampler)}
    sides = {"baseline": (old, old_llm), "this tree": (sampler, new_llm)}

    def batch(r: int) -> tuple[list[str], list[str], list[Any]]:
        chunk = items[r * P : (r + 1) * P]
        texts = [render(new_llm.tokenizer, template, e.prompt) for e in chunk]
        return texts, [sampler.row_seed(0, e.id, j) for e in chunk for j in range(G)], chunk

    # --- 2. the two samplers, interleaved (a warm-up batch first, not counted) --------------------------
    seconds: dict[str, list[float]] = {name: [] for name in sides}
    phases: dict[str, list[tuple[list, list]]] = {name: [] for name in sides}
    differ = total = 0
    prompt_tokens = 0
    for r in range(-1, args.rounds):
        texts, seeds, _ = batch(max(r, 0))
        order = list(sides) if r % 2 == 0 else list(sides)[::-1]
        outs = {}
        for name in order:
            mod, llm = sides[name]
            if name == "this tree":  # as at every RL step's sampling: the prefix read once, for this batch's state
                forget(llm.model)
            clocks[name].take()
            t0 = time.perf_counter()
            with computing(precision if name == "this tree" else "float32", "cpu"):
                outs[name] = mod.generate(llm.model, llm.tokenizer, texts, seeds, group=G, temperature=1.0,
                                          max_tokens=K)
            if r >= 0:
                seconds[name].append(time.perf_counter() - t0)
                phases[name].append(split_phases(clocks[name].take()))
        if r >= 0:
            a, b = outs["baseline"], outs["this tree"]
            rows_a, rows_b = a.tokens.tolist(), b.tokens.tolist()
            differ += sum(x[: int(ma.sum())] != y[: int(mb.sum())]
                          for x, y, ma, mb in zip(rows_a, rows_b, a.mask, b.mask))
            total += len(rows_a)
            prompt_tokens += int(b.prompt_valid.sum())
    done = P * G * args.rounds
    rate = {name: done / sum(s) for name, s in seconds.items()}
    ratio = statistics.median(o / n for o, n in zip(seconds["baseline"], seconds["this tree"]))
    print(f"\nthe course's sampler, {args.rounds} interleaved rounds of {P} few-shot prompts x {G} samples, {K} tokens "
          f"(baseline = {args.baseline}); load average now {load_average()}")
    for name in sides:
        pre, dec = phases[name], phases[name]
        pre_s = sum(c[2] for p, _ in pre for c in p)
        pre_cols = sum(c[0] * c[1] for p, _ in pre for c in p)
        dec_s = sum(c[2] for _, d in dec for c in d)
        dec_rows = sum(c[0] for _, d in dec for c in d)
        col_major = name == "this tree"
        pre_bound = sum(bounds[name].seconds(c[0] * c[1], False, col_major) for p, _ in pre for c in p)
        dec_bound = sum(bounds[name].seconds(c[0], True, col_major) for _, d in dec for c in d)
        other = sum(seconds[name]) - pre_s - dec_s
        print(f"  {name:9s}: {rate[name]:6.2f} completions/s ({sum(seconds[name]):.1f} s); prefill {pre_s:5.2f} s "
              f"({pre_cols / pre_s:6.0f} positions/s, {prompt_tokens / pre_s:6.0f} prompt tokens/s; products alone "
              f"{pre_bound:5.2f} s: {pre_bound / pre_s:.0%} of the bound), decode {dec_s:5.2f} s "
              f"({dec_rows / dec_s:5.0f} tokens/s over {dec_rows} rows; products alone {dec_bound:5.2f} s: "
              f"{dec_bound / dec_s:.0%} of the bound), the rest (drawing, decoding text) {other:4.2f} s")
        key = "baseline" if name == "baseline" else "new"
        rec.figure(f"{key}_completions_per_s", rate[name], "completions/s", f"{name}: completions per second", digits=2)
        rec.figure(f"{key}_prefill_s", pre_s, "s", f"{name}: prefill seconds over {args.rounds} batches", digits=2)
        rec.figure(f"{key}_prefill_bound_s", pre_bound, "s",
                   f"{name}: the same prefill's matrix products alone", digits=2)
        rec.figure(f"{key}_decode_s", dec_s, "s", f"{name}: decode seconds over {args.rounds} batches", digits=2)
        rec.figure(f"{key}_decode_bound_s", dec_bound, "s",
                   f"{name}: the same decode steps' matrix products alone", digits=2)
        rec.figure(f"{key}_decode_tokens_per_s", dec_rows / dec_s, "tokens/s",
                   f"{name}: decode tokens per second", digits=0)
        rec.figure(f"{key}_prefill_of_bound", pre_bound / pre_s, "",
                   f"{name}: prefill at this fraction of its matmul bound (products alone / measured)", digits=2)
        rec.figure(f"{key}_decode_of_bound", dec_bound / dec_s, "",
                   f"{name}: decode at this fraction of its matmul bound (products alone / measured)", digits=2)
    why = ("float rounding" if precision == "float32" else
           "this tree computes in bfloat16, the baseline in float32: another precision")
    print(f"  speed-up: {ratio:.2f}x (median of the per-round ratios baseline / this tree); "
          f"completions whose token ids differ: {differ} of {total} ({why}; the same uniforms drive both)")
    rec.figure("speedup", ratio, "×",
               f"completions/s, this tree over {args.baseline} (median of {args.rounds} interleaved rounds)", digits=2)
    rec.figure("completions_differing", differ, "completions",
               f"of {total}: token ids differ between {args.baseline} and this tree")

    # --- 1. the bound ------------------------------------------------------------------------------------
    print("\nthe bound: float32 torch.matmul at the model's shapes (all blocks' projections; "
          "+ the LM head when decoding)")
    # round 0's prefill calls: (rows, columns, s); this tree's are the prefix cache's forward, then the tails
    (old_pre, _), (new_pre, _) = phases["baseline"][0], phases["this tree"][0]
    shapes = [(f"prefill, {old_pre[0][0]} whole prompts", old_pre[0][0] * old_pre[0][1], False)]
    shapes += [(f"prefill, this tree, call {i + 1}", rows * cols, False) for i, (rows, cols, _) in enumerate(new_pre)]
    shapes += [(f"decode, {P * G} rows", P * G, True), ("decode, 13 rows", 13, True), ("decode, 1 row", 1, True)]
    for label, m, head in shapes:
        m = max(1, m)
        cells = []
        for cm in (False, True):
            s = bound.seconds(m, head, cm)
            cells.append(f"{bound.flops(m, head) / s / 1e9:6.1f} GFLOP/s = {m / s:7.0f} tokens/s")
        print(f"  {label:28s} M={m:5d}: weights row-major {cells[0]}; column-major {cells[1]}")
        if "whole" in label or label.startswith("decode") and m > 1:
            tag = label.split(",")[0] + f"_m{m}"
            rec.figure(f"bound_{tag}_gflops_row", bound.flops(m, head) / bound.seconds(m, head, False) / 1e9, "GFLOP/s",
                       f"float32 matmul at the model's shapes, {label} (M={m}), weights row-major", digits=1)
            rec.figure(f"bound_{tag}_gflops_col", bound.flops(m, head) / bound.seconds(m, head, True) / 1e9, "GFLOP/s",
                       "the same, weights column-major", digits=1)
    # The same products in bfloat16 (half the bytes per weight; CPUs with AVX512-BF16 or AMX multiply them
    # natively): what course.llm.rl --precision bfloat16 multiplies in (its LM head stays float32).
    half = MatmulBound(new_llm.model, torch.bfloat16)
    print("  the same products in bfloat16 (course.llm.rl --precision bfloat16; head included here):")
    for label, m, head in shapes:
        if "whole" in label or label.startswith("decode") and m > 1:
            m = max(1, m)
            x32, x16 = bound.seconds(m, head, False), half.seconds(m, head, False)
            print(f"  {label:28s} M={m:5d}: {bound.flops(m, head) / x16 / 1e9:6.1f} GFLOP/s, "
                  f"{x32 / x16:.2f}x float32's")
            tag = label.split(",")[0] + f"_m{m}"
            rec.figure(f"bound_{tag}_gflops_bf16", bound.flops(m, head) / x16 / 1e9, "GFLOP/s",
                       f"bfloat16 matmul at the model's shapes, {label} (M={m}), weights row-major", digits=1)
            rec.figure(f"bound_{tag}_bf16_over_f32", x32 / x16, "×",
                       "bfloat16 products' speed over float32's at the same shapes", digits=2)

    # --- 3. Hugging Face generate on the same batch -------------------------------------------------------------
    if not args.no_hf:
        texts, _, _ = batch(0)
        ids, valid = sampler.encode_prompts(old_llm.tokenizer, texts)
        model = old_llm.model
        model.forward = clocks["baseline"]._orig  # untimed
        t0 = time.perf_counter()
        with torch.no_grad():
            model.generate(input_ids=ids, attention_mask=valid.long(), do_sample=True, temperature=1.0, top_k=0,
                           top_p=1.0, max_new_tokens=K, num_return_sequences=G,
                           pad_token_id=int(old_llm.tokenizer.pad_token_id))
        hf = time.perf_counter() - t0
        print(f"\nHugging Face generate, the same {P} x {G} batch (weights as loaded): "
              f"{P * G / hf:.2f} completions/s ({hf:.1f} s)")
        rec.figure("hf_generate_completions_per_s", P * G / hf, "completions/s",
                   "Hugging Face generate on the same batch", digits=2)

    # --- 4. one RL step, phase by phase -------------------------------------------------------------------------
    if not args.no_step:
        from course.lib.learning.rl_objective import policy_loss
        from course.llm.policy import LLMPolicy

        clocks["this tree"].remove()  # type: ignore[attr-defined]
        policy = LLMPolicy(new_llm, template, rank=8, alpha=16.0, adapter_seed=0, threads=args.threads,
                           precision=precision)
        opt = torch.optim.Adam(policy.parameters(), lr=5e-4)
        _, seeds, chunk = batch(0)

        def one_step() -> list[float]:
            times: list[float] = []
            t = time.perf_counter()

            def lap() -> None:
                nonlocal t
                now = time.perf_counter()
                times.append(now - t)
                t = now

            policy.train_mode(False)
            ro = policy.generate([e.prompt for e in chunk], seeds, group=G, temperature=1.0, max_tokens=K)
            policy.train_mode(True)
            lap()
            shapes.append(logprob_shapes(ro, policy.shared_prefix))
            rewards = torch.tensor([score({"expected_answer": chunk[k // G].expected_answer}, x)["reward"]
                                    for k, x in enumerate(ro.texts)])
            adv = (rewards.view(P, G) - rewards.view(P, G).mean(dim=1, keepdim=True)).view(-1)
            lap()
            logp, _ = policy.logprobs(ro)
            lap()
            with torch.no_grad():
                logp_ref = policy.reference_logprobs(ro)
            lap()
            loss, _ = policy_loss(logp, logp_ref, ro.mask, adv, 0.05)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            lap()
            return times

        shapes: list[tuple[int, int, int]] = []
        one_step()  # the first step warms up the backward's kernels and builds the optimizer's state: not timed
        times = one_step()
        names = ("sampling", "scoring", "log-probs (policy)", "log-probs (pi0)", "loss + backward + Adam")
        print(f"\none RL step ({P} x {G}, {K} tokens, LoRA rank 8; the second of two), seconds: "
              + ", ".join(f"{n} {s:.2f}" for n, s in zip(names, times)) + f"; sampling is {times[0] / sum(times):.0%}")
        for n, s in zip(names, times):
            rec.figure("step_" + n.split(" (")[0].replace(" + ", "_").replace("-", "").replace(" ", "_")
                       + ("_pi0" if "pi0" in n else ""), s, "s", f"one RL step: {n}", digits=2)
        # The bound of each pass: the projections at its real positions and the LM head at its chosen tokens (the
        # adapters' rank-8 products add under 3 % and are left out); the backward computes input gradients only
        # (the model's weights are frozen): the same products again, through the prefix once more.
        positions, chosen, c = shapes[-1]
        forward = new_bound.seconds(positions, False, True) + new_bound.head_seconds(chosen, True)
        backward = new_bound.seconds(positions + c, False, True) + new_bound.head_seconds(chosen, True)
        print(f"  against the matmul bound ({positions} positions after the {c}-token prefix, {chosen} chosen tokens): "
              f"log-probs (policy) {forward:.2f} s = {forward / times[2]:.0%} of the bound, log-probs (pi0) "
              f"{forward / times[3]:.0%}, loss + backward + Adam {backward:.2f} s = {backward / times[4]:.0%}")
        for key, bound_s, took in (("logprobs", forward, times[2]), ("logprobs_pi0", forward, times[3]),
                                   ("backward", backward, times[4])):
            rec.figure(f"step_{key}_bound_s", bound_s, "s", f"one RL step: {key}' matrix products alone", digits=2)
            rec.figure(f"step_{key}_of_bound", bound_s / took, "", f"one RL step: {key} at this fraction of its "
                       "matmul bound", digits=2)
    end = load_average()
    print(f"\nload average (1 min): {load_start} at start, {end} at the end")
    if max(load_start, end) > 1.5 * (os.cpu_count() or 1):
        print("  the machine was busy: these figures are what a loaded machine gave, not a quiet one's")
        rec.remark(f"Measured under load (1-minute load average {load_start} at start, {end} at the end, on "
                   f"{os.cpu_count()} CPUs).")
    rec.save()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
