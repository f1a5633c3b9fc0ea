"""Benchmark: where the real LLM's sampling time goes when the policy computes in bfloat16 (its own record).

    python benchmarks/bench_llm_sampling_bfloat16.py
    python benchmarks/bench_llm_sampling_bfloat16.py --record --note "how busy the machine was"

``bench_llm_sampling.py --precision bfloat16``, under its own name so that its record stands beside the float32
one (``results/bench_llm_sampling_bfloat16.json``): the course's sampler and one RL step computing as
``course.llm.rl --precision bfloat16`` does (``course.llm.precision``), each phase against the bound of bfloat16
projections and a float32 LM head measured in the same run. Every flag of bench_llm_sampling.py is taken.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_llm_sampling import main  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(main(["--precision", "bfloat16", *sys.argv[1:]]))
