"""Benchmark: loading and sampling the real LLM (course.llm), measured; with --record, for docs/benchmarks.md.

    python benchmarks/bench_llm.py                  # load three ways, then sample 4 items x 8 at 1 and 2 threads
    python benchmarks/bench_llm.py --items 8 --threads 1
    python benchmarks/bench_llm.py --record --note "how busy the machine was"   # for docs/benchmarks.md

What it does, each load in a fresh child process (so nothing is shared or already imported):

  1. cold:  the packaged GGUF de-quantised to float32, and the cache of the weights written
            (an empty temporary cache directory: the first load on a new machine);
  2. warm:  the same model from that cache (every later load);
  3. off:   COURSE_LLM_CACHE=off, the GGUF de-quantised again, nothing written;

printing for each the wall time of ``load_llm`` (imports of torch and transformers included) and of
the whole child, and its peak RSS. Then, from the cache, it samples ``--items`` math_dev items x
``--n`` samples with each template (the shipped packs' settings: temperature 1.0, top_p 1.0,
max_tokens 32) at each thread count of ``--threads`` (default 1 and 2: ``course.llm.sample`` uses one
because two were far slower on a busy host) and prints completions per second and generated tokens
per second. Last, it prints what the shipped packs' manifests (``data/llm/*.manifest.json``)
recorded when they were made: their sampling time and the load average then.

The machine may be shared: the load average before and after each step is printed with it, and
the thread count. These are what this run saw, not product promises.
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
sys.path.insert(0, str(Path(__file__).resolve().parent))

from record import CHILD_PRELUDE, Recorder, add_arguments  # noqa: E402

LOAD_CHILD = CHILD_PRELUDE + """
import json, resource, sys, time
t0 = time.perf_counter()
from course.llm.load import load_llm
llm = load_llm()
print(json.dumps({"load_seconds": llm.load_seconds, "cache": llm.cache, "imports_and_load": time.perf_counter() - t0,
                  "maxrss_mb": peak_rss_kib() / 1024}))
"""

SAMPLE_CHILD = CHILD_PRELUDE + """
import json, resource, sys, time
from course.lib.records.formats import read_dataset
from course.llm.load import load_llm
from course.llm.sampler import sample_items
from course.lib.policy.templates import get_template
from course.lib.policy.sampling import set_threads
threads, n_items, n = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
set_threads(threads)
llm = load_llm()
items = [(e.id, e.prompt) for e in read_dataset("data/datasets/math_dev.jsonl")[:n_items]]
out = {}
for name in ("plain", "fewshot"):
    t0 = time.perf_counter()
    drawn = sample_items(llm.model, llm.tokenizer, items, get_template(name), n=n, seed=0, max_tokens=32)
    seconds = time.perf_counter() - t0
    texts = [t for item in drawn for t, _ in item]
    tokens = sum(len(llm.tokenizer(t, add_special_tokens=False)["input_ids"]) + 1 for t in texts)  # + the stop token
    out[name] = {"seconds": seconds, "completions": len(texts), "tokens_about": tokens,
                 "truncated": sum(tr for item in drawn for _, tr in item)}
out["maxrss_mb"] = peak_rss_kib() / 1024
print(json.dumps(out))
"""


def load_average() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def child(code: str, env: dict[str, str], *args: str) -> tuple[dict, float]:
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        raise SystemExit(f"child failed with exit code {proc.returncode}")
    return json.loads(proc.stdout.strip().splitlines()[-1]), wall


def shipped_packs() -> list[dict]:
    """What data/llm's manifests recorded when the packs were made (timings are theirs, with their load)."""
    out = []
    for path in sorted((ROOT / "data" / "llm").glob("pack_*.manifest.json")):
        m = json.loads(path.read_text(encoding="utf-8"))
        out.append({"file": path.name.removesuffix(".manifest.json") + ".jsonl", "created": m["created_utc"],
                    "commit": (m.get("git_commit") or "")[:8], "threads": m["threads"], **m["timing"]})
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=4, help="math_dev items to sample (default 4)")
    parser.add_argument("--n", type=int, default=8, help="samples per item (default 8)")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2],
                        help="PyTorch thread counts to sample with (default 1 2; course.llm.sample uses 1)")
    add_arguments(parser)
    args = parser.parse_args()
    rec = Recorder.from_args("bench_llm", args)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    print(f"course.llm benchmark on {os.cpu_count()} CPUs; load average at start {load_average()}")
    with tempfile.TemporaryDirectory(prefix="bench-llm-cache-") as cache:
        env["COURSE_LLM_CACHE"] = cache
        for key, label, extra in (("cold", "cold (GGUF, cache written)", {}), ("warm", "warm (from the cache)", {}),
                                  ("off", "cache off (GGUF only)", {"COURSE_LLM_CACHE": "off"})):
            before = load_average()
            result, wall = child(LOAD_CHILD, {**env, **extra})
            print(f"load {label:<27} load_llm {result['load_seconds']:6.1f} s   child {wall:6.1f} s   "
                  f"peak RSS {result['maxrss_mb']:6.0f} MB   cache: {result['cache']:<8} "
                  f"load avg {before} -> {load_average()}")
            rec.figure(f"load_{key}_seconds", result["load_seconds"], "s",
                       f"`load_llm()`, {label} (imports of torch and transformers included)", digits=1)
            rec.figure(f"load_{key}_peak_rss_mb", result["maxrss_mb"], "MB",
                       f"peak memory of that child, {label}", digits=0)
        for threads in args.threads:
            before = load_average()
            result, wall = child(SAMPLE_CHILD, env, str(threads), str(args.items), str(args.n))
            for name in ("plain", "fewshot"):
                r = result[name]
                rate, tokens = r["completions"] / r["seconds"], r["tokens_about"] / r["seconds"]
                print(f"sample {name:<8} {threads} thread(s): {r['completions']} completions "
                      f"({args.items} items x {args.n}) "
                      f"in {r['seconds']:.1f} s: {rate:.2f} completions/s, ~{tokens:.1f} tokens/s, "
                      f"{r['truncated']} truncated at 32 tokens")
                rec.figure(f"sample_{name}_{threads}t_completions_per_s", rate, "completions/s",
                           f"sampling, {name} template, {threads} thread(s), {args.items} items x {args.n}", digits=2)
            print(f"sampling child ({threads} thread(s)): {wall:.1f} s, peak RSS {result['maxrss_mb']:.0f} MB, "
                  f"load avg {before} -> {load_average()}")
            rec.figure(f"sample_{threads}t_peak_rss_mb", result["maxrss_mb"], "MB",
                       f"peak memory of the sampling child, {threads} thread(s)", digits=0)
    packs = shipped_packs()
    for p in packs:
        line = (f"{p['file']} (made {p['created']}, commit {p['commit']}, {p['threads']} thread): "
                f"{p['completions']} completions "
                f"sampled in {p['sample_seconds']:.0f} s ({p['completions_per_second']:.2f}/s), load average "
                f"{p['load_average_before'][0]:.1f} -> {p['load_average_after'][0]:.1f} on {p['cpu_count']} CPUs")
        print(f"shipped pack {line}")
        rec.remark(f"As its manifest recorded: {line}.")
    rec.save()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
