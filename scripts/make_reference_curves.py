"""Write the reference learning curves the regression tests compare reruns against.

    python scripts/make_reference_curves.py tinylm          # 3 runs of the tiny LM's default training (fast test)
    python scripts/make_reference_curves.py llm_short       # 3 short real-LLM runs (slow test; needs the llm extra)
    python scripts/make_reference_curves.py tinylm --existing RUN0 RUN1 RUN2   # from runs of exactly that command

Each reference is one command run once per seed (``REFERENCES``); its rl_log.jsonl curves and the bands
``course.lib.learning.reference_curves`` derives from the seeds' spread go to
``tests/data/reference_curves/<name>.json``. Re-record only on purpose (a change that is meant to change
learning), and say so in the commit: the file is what "learns as before" means for CI.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from course.lib.learning.reference_curves import curves_of, reference_checks, statistics  # noqa: E402

OUT_DIR = ROOT / "tests" / "data" / "reference_curves"

# name -> (tool, arguments without --seed and --outdir, seeds, what it is). The first seed is the one the test reruns.
REFERENCES: dict[str, tuple[str, list[str], tuple[int, ...], str]] = {
    "tinylm": ("course.tinylm.rl", ["--no-holdout", "--threads", "1"], (0, 1, 2),
               "the tiny LM's default run (its training: 60 steps of 8 problems x 8 samples, the fixed slice every 5), "
               "one thread"),
    "llm_short": ("course.llm.rl", ["--template", "fewshot", "--steps", "4", "--prompts-per-step", "4",
                                    "--group-size", "8", "--max-tokens", "12", "--slice-items", "4",
                                    "--eval-samples", "1", "--eval-every", "4",
                                    "--no-holdout", "--threads", "1"], (0, 1, 2),
                  "a short real-LLM run (SmolLM2-135M-Instruct, few-shot template, no warm start: "
                  "4 steps of 4 problems x 8 samples), one thread"),
}


def read_log(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "rl_log.jsonl").read_text(encoding="utf-8").splitlines()]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("name", choices=sorted(REFERENCES))
    ap.add_argument("--existing", nargs="+", default=None, metavar="RUN",
                    help="run directories of exactly the reference's command, one per seed in its order "
                         "(instead of running it)")
    args = ap.parse_args(argv)
    tool, base, seeds, what = REFERENCES[args.name]
    with tempfile.TemporaryDirectory() as tmp:
        if args.existing:
            if len(args.existing) != len(seeds):
                raise SystemExit(f"--existing needs {len(seeds)} run directories (seeds {seeds})")
            runs = [Path(r) for r in args.existing]
        else:
            runs = []
            for seed in seeds:
                out = Path(tmp) / f"seed{seed}"
                subprocess.run([sys.executable, "-m", tool, *base, "--seed", str(seed), "--outdir", str(out)],
                               cwd=ROOT, check=True)
                runs.append(out)
        curves = {str(seed): curves_of(read_log(run)) for seed, run in zip(seeds, runs)}
    per_seed = [statistics(curves[str(seed)]) for seed in seeds]
    doc = {"what": what, "tool": tool, "argv": base, "seeds": list(seeds), "rerun_seed": seeds[0],
           "why_these_bands": "each band is twice the range of its statistic over the seeds here "
                              "(another machine's float order makes a rerun another draw of the same recipe, "
                              "like another seed), at least its floor; "
                              "see course/lib/learning/reference_curves.py",
           "checks": reference_checks(per_seed),
           "statistics_per_seed": {str(seed): {k: round(v, 6) for k, v in s.items()}
                                   for seed, s in zip(seeds, per_seed)},
           "curves": curves}
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    path = OUT_DIR / f"{args.name}.json"
    path.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    for name, c in doc["checks"].items():
        print(f"{name}: reference {c['reference']:.4f}, band {c['band']:.4f} ({c['direction']}); per seed "
              + ", ".join(f"{doc['statistics_per_seed'][str(s)][name]:.4f}" for s in seeds))
    print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
