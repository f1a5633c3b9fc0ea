"""Where the project's bundled files are: the repository root, its ``data/`` folder, each bundled file by name.

Found from this file, never from the working directory: a tool run from anywhere still finds the
bundled data. The datasets and rollouts a tool reads by default are also named relative to the
root (``MATH_DEV`` is ``data/datasets/math_dev.jsonl``): that is the default ``--help`` shows and
the name a manifest records, the same words wherever the tool runs; ``PROJECT_ROOT / MATH_DEV``
is the file. Nothing here reads or checks a file.
"""

from __future__ import annotations

from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
DATA = PROJECT_ROOT / "data"

# The datasets and rollouts, relative to the root (see above).
MATH_DEV = "data/datasets/math_dev.jsonl"
MATH_HOLDOUT = "data/datasets/math_holdout.jsonl"
# The benchmark holdout (scripts/make_data.py): 400 generator items disjoint from dev and holdout, for the
# benchmarks' per-seed figures (benchmarks/bench_llm_rl.py); the student's holdout stays math_holdout.
MATH_BENCH_HOLDOUT = "data/datasets/math_bench_holdout.jsonl"
FROZEN_ROLLOUTS_DEV = "data/rollouts/frozen_rollouts_dev.jsonl"
SELECTION_PACK_DEV = "data/rollouts/selection_pack_dev.jsonl"

# Dev and holdout: what every policy is measured on, so what no learning run ever trains on.
DEFAULT_DATASETS = (PROJECT_ROOT / MATH_DEV, PROJECT_ROOT / MATH_HOLDOUT)
# What no learning run trains on: every split a policy is measured on, the benchmark holdout included.
TRAINING_EXCLUDED = (*DEFAULT_DATASETS, PROJECT_ROOT / MATH_BENCH_HOLDOUT)

# The tiny LM's reference policy pi0, its provenance, and pi0 sampled on math_dev (the shift table's left side).
PI0_PATH = DATA / "tinylm" / "pi0.pt"
PI0_MANIFEST = DATA / "tinylm" / "pi0_manifest.json"
FROZEN_PI0_DEV = DATA / "tinylm" / "frozen_pi0_dev.jsonl"

# The spec kata: the students' examples, basic and hard (the keys are the teacher's, under teacher/).
KATA_EXAMPLES = DATA / "kata" / "kata_examples.jsonl"
KATA_HARD_EXAMPLES = DATA / "kata" / "kata_hard.jsonl"

# The golden suites: in-spec correct completions, and the exploits every rubric is tried against.
GOLDEN_CORRECT = DATA / "golden" / "golden_correct.jsonl"
GOLDEN_EXPLOITS = DATA / "golden" / "golden_exploits.jsonl"
