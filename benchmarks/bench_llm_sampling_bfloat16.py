"""Benchmark: where the real LLM's sampling time goes when the policy computes in bfloat16 (its own record).

    python benchmarks/bench_llm_sampling_bfloat16.py
    python benchmarks/bench_llm_sampling_bfloat16.py --record --note "how busy the machine was"

``bench_llm_sampling.py`` with this tree's side computing as ``course.llm.rl --precision bfloat16`` does
(``course.llm.precision``: bfloat16 projections; float32 adapters, norms and LM head): the course's sampler
against the float32 baseline, and one RL step phase by phase, each phase beside the bound of bfloat16
projections and a float32 LM head measured in the same run. The same flags as bench_llm_sampling.py; its
record stands beside the float32 one.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_llm_sampling import build_parser, measure  # noqa: E402
from record import Recorder, add_arguments  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = build_parser(__doc__.split("\n")[0])
    add_arguments(ap)
    args = ap.parse_args(argv)
    return measure(args, Recorder.from_args("bench_llm_sampling_bfloat16", args, argv), "bfloat16")


if __name__ == "__main__":
    raise SystemExit(main())
