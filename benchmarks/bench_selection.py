"""Benchmark: how fast does ``course.selection_demo`` select, and what does memory grow with?

    python benchmarks/bench_selection.py                        # 10,000 and 100,000 items x 8 samples
    python benchmarks/bench_selection.py --sizes 1000 10000 --n 4

For each size it writes a synthetic dataset and a selection pack (8 samples per
item, about 30 % of samples passing, a realistic mix of slips) in a temporary
directory, then runs the whole tool — read and validate both files, score
every sample, call ``pick_best``, write results.jsonl, summary.json,
summary.md and the manifest — in a fresh child process, and reports wall time,
items and samples per second and the child's peak resident memory.

What memory should grow with: the dataset, which the tool holds (it is small
next to the pack: one prompt per item, against n completions per item); not the
pack, which is streamed one line at a time. Compare the peak at the two sizes
with the dataset's size on disk.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from record import CHILD_PRELUDE, Recorder, add_arguments  # noqa: E402

SAMPLING = {"max_tokens": 32, "seed": 0, "temperature": 0.8, "top_p": 0.95}
SLIPS = ("Final: {a}.", "Final:{a}", "final: {a}", "The answer is {a}", "Reasoning first.\nFinal: {a}", "Final: 0{a}",
         "")

CHILD = CHILD_PRELUDE + """
import resource, sys
from course.selection_demo import main
code = main(sys.argv[1:])
print(f"MAXRSS_KB {peak_rss_kib()}", file=sys.stderr)
raise SystemExit(code)
"""


def _write_inputs(folder: Path, items: int, samples: int, rng: random.Random) -> tuple[Path, Path]:
    dataset, pack = folder / "bench_dev.jsonl", folder / "bench_pack_dev.jsonl"
    with open(dataset, "w", encoding="utf-8") as d, open(pack, "w", encoding="utf-8") as p:
        for i in range(items):
            a, b = rng.randint(2, 99), rng.randint(2, 99)
            ident = f"bench-{i:07d}"
            d.write(json.dumps({"id": ident, "prompt": f"What is {a} * {b}? Output exactly one line: Final: <int>",
                                "expected_answer": a * b}) + "\n")
            out = []
            for k in range(samples):
                roll = rng.random()
                answer = a * b if roll < 0.55 else a * b + rng.choice((-1, 1, 10))
                form = "Final: {a}" if roll < 0.30 or 0.55 <= roll < 0.85 else rng.choice(SLIPS)
                out.append({"sample_index": k, "completion": form.format(a=answer)})
            p.write(json.dumps({"id": ident, "samples": out, "policy": "bench-policy", "sampling": SAMPLING}) + "\n")
    return dataset, pack


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000], help="items per run")
    parser.add_argument("--samples", type=int, default=8, help="samples per item in the pack")
    parser.add_argument("--n", type=int, default=4, help="best-of-N")
    add_arguments(parser)
    args = parser.parse_args()
    rec = Recorder.from_args("bench_selection", args)
    print(f"course.selection_demo, best-of-{args.n} from packs of {args.samples} samples per item "
          f"(python {sys.version.split()[0]}, one process)")
    print(f"{'items':>9} {'samples':>10} {'dataset MB':>10} {'pack MB':>8} {'seconds':>8} "
          f"{'items/s':>9} {'samples/s':>10} {'peak RSS MB':>11}")
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.sizes:
            folder = Path(tmp) / str(size)
            folder.mkdir()
            dataset, pack = _write_inputs(folder, size, args.samples, random.Random(size))
            start = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-c", CHILD, "--dataset", str(dataset), "--samples", str(pack), "--n", str(args.n),
                 "--outdir", str(folder / "run"), "--json"],
                cwd=ROOT, capture_output=True, text=True,
            )
            seconds = time.perf_counter() - start
            if done.returncode != 0:
                print(done.stderr, file=sys.stderr)
                return 1
            rss_kb = int(done.stderr.rsplit("MAXRSS_KB ", 1)[1].split()[0])
            print(f"{size:>9,} {size * args.samples:>10,} {dataset.stat().st_size / 1e6:>10.1f} "
                  f"{pack.stat().st_size / 1e6:>8.1f} {seconds:>8.2f} {size / seconds:>9,.0f} "
                  f"{size * args.samples / seconds:>10,.0f} {rss_kb / 1024:>11.1f}")
            what = f"{size:,} items x {args.samples} samples, best-of-{args.n}"
            rec.figure(f"items_{size}_seconds", seconds, "s", f"{what}: wall time", digits=2)
            rec.figure(f"items_{size}_samples_per_s", round(size * args.samples / seconds, -2), "samples/s",
                       f"{what}: samples scored per second")
            rec.figure(f"items_{size}_peak_rss_mb", rss_kb / 1024, "MB",
                       f"{what}: peak memory (dataset {dataset.stat().st_size / 1e6:.1f} MB, "
                       f"pack {pack.stat().st_size / 1e6:.1f} MB on disk)", digits=1)
    rec.save()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
