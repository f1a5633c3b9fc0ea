"""Re-make the real LLM's shipped rollouts (data/llm/): two templates x two splits, 8 samples per item.

    python scripts/make_llm_packs.py            # refuses to overwrite the shipped files
    python scripts/make_llm_packs.py --force    # re-make them (tens of minutes on a laptop CPU)

Each pack is one ``python -m course.llm.sample`` run with the course's defaults (temperature 1.0,
top_p 1.0, max_tokens 32, seed 0, 1 thread) and ``--frozen-out`` (sample 0 of every item as frozen
rollouts). The commands run one after another; each prints how long it took, and its manifest
(``data/llm/*.manifest.json``) records the timings with the machine's load average. On the same
machine, model file and thread count the files come out byte-identical.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPLITS = ("dev", "holdout")
TEMPLATES = ("plain", "fewshot")


def commands(force: bool) -> list[list[str]]:
    out = []
    for split in SPLITS:
        for template in TEMPLATES:
            out.append([
                sys.executable, "-m", "course.llm.sample", "--dataset", f"data/datasets/math_{split}.jsonl",
                "--template", template, "--n", "8",
                "--out", f"data/llm/pack_{template}_{split}.jsonl",
                "--frozen-out", f"data/llm/frozen_{template}_{split}.jsonl",
                *(["--force"] if force else []),
            ])
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--force", action="store_true", help="overwrite the shipped files")
    args = parser.parse_args()
    for command in commands(args.force):
        t0 = time.perf_counter()
        code = subprocess.run(command, cwd=ROOT).returncode
        print(f"{' '.join(command[1:])}: exit {code} in {time.perf_counter() - t0:.0f} s", flush=True)
        if code != 0:
            return code
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
