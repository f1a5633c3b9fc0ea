"""What one run of the real-LLM recipe taught, measured off its training template and beside the small holdout.

    python benchmarks/llm_transfer.py RUN_DIR [--threads 2] [--samples 8] [--bench-samples 4] [--model M]

bench_llm_rl.py runs it in a child process after each seed's run (``measure``, printed as JSON on stdout) and
reads it back (``tables``). For pi0 (the adapters off), the warm start (RUN_DIR/warm_start.safetensors) and
the final policy (RUN_DIR/final.safetensors), in the run's precision (its manifest's ``precision``, float32 when
absent), the same sampling settings as the run's holdout comparison
(seed 0, temperature 1, 16 tokens; the same random numbers for the three policies, so each item is paired;
in batches of ``WIDE_BATCH_ROWS``, faster than the run's 64 rows and equal to them up to float rounding):

  * ``bench``: the 400-item benchmark holdout (data/datasets/math_bench_holdout.jsonl) under the run's template:
    the recipe's result on enough items that one seed's interval is narrow (the 50-item course holdout
    gives about +-10 points);
  * ``holdout_plain``: the course holdout under the ``plain`` template (no worked examples): did the lift
    need the template it was trained under?
  * ``gsm8k_final`` and ``gsm8k_plain``: the five-item GSM8K-format sample (tests/data/bridges/gsm8k_sample.jsonl,
    written for the course, not GSM8K items) under its own few-shot template and under ``plain``: word problems
    the run never saw. Five items carry no interval worth reading; they show the direction only.

Each cell: strict pass@1 (items as the unit: ``course.lib.stats.clustered_interval``), and per split the lift
final - pi0 and final - warm start with paired-bootstrap 95% intervals over items. A lift that holds only under
the training template is a finding about what RL taught, not a failure of the measurement.
"""

from __future__ import annotations

import argparse
import json
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from course.lib.stats import clustered_interval, paired_bootstrap  # noqa: E402

GSM8K_SAMPLE = ROOT / "tests" / "data" / "bridges" / "gsm8k_sample.jsonl"
# (split, dataset, template): the run's template is filled in for ``bench``.
SPLITS = (("bench", "data/datasets/math_bench_holdout.jsonl", None),
          ("holdout_plain", "data/datasets/math_holdout.jsonl", "plain"),
          ("gsm8k_final", "gsm8k", "gsm8k_final"),
          ("gsm8k_plain", "gsm8k", "plain"))
POLICIES = ("pi0", "warm_start", "final")
SEED, TEMPERATURE, MAX_TOKENS = 0, 1.0, 16  # the run's holdout comparison's settings (the recipe's)


def _items(dataset: str) -> list[tuple[str, str, int]]:
    """(id, prompt, answer) of a bundled dataset, or of the GSM8K-format sample imported as course.datasets does."""
    if dataset == "gsm8k":
        from course.lib.external.dataset_readers import convert, jsonl_rows

        got = convert(jsonl_rows(GSM8K_SAMPLE), source="gsm8k_sample", question_col="question",
                      answer_col="answer", answer_style="gsm8k", skip_non_integer=False)
        rows = list(got.items)
    else:
        from course.lib.policy.training_problems import read_items

        rows = read_items(ROOT / dataset)
    return [(r["id"], r["prompt"], int(r["expected_answer"])) for r in rows]


def measure(run_dir: Path, threads: int, samples: int, bench_samples: int, model: str | None = None
            ) -> dict[str, Any]:
    """Per split and policy: each item's strict passes out of its samples (the child's work: loads the model)."""
    import contextlib

    from course.instrument.spec_v1 import score
    from course.lib.policy.sampling import set_threads
    from course.lib.policy.templates import get_template
    from course.llm.load import load_llm
    from course.llm.lora import adapters_off, add_lora, load_adapter_state
    from course.llm.policy import read_adapter
    from course.llm.precision import computing, to_bfloat16_products
    from course.llm.sampler import WIDE_BATCH_ROWS, sample_items

    set_threads(threads)
    manifest = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    run_template = manifest["template"]
    final = read_adapter(run_dir / "final.safetensors")
    warm_path = run_dir / "warm_start.safetensors"
    states = {"final": final.state}
    if warm_path.exists():
        states["warm_start"] = read_adapter(warm_path).state
    # The run's precision (course.llm.precision): the adapters are measured as the policy they were trained as.
    precision = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))["settings"].get(
        "precision", "float32")
    llm = load_llm(model) if model else load_llm()
    if precision == "bfloat16":
        to_bfloat16_products(llm.model)
    add_lora(llm.model, rank=final.rank, alpha=final.alpha, seed=0)
    llm.model.eval()
    out: dict[str, Any] = {"template": run_template, "precision": precision, "splits": {}}
    for split, dataset, template_name in SPLITS:
        items = _items(dataset)
        template = get_template(template_name or run_template)
        n = bench_samples if split == "bench" else samples
        per_policy: dict[str, list[int]] = {}
        for name in POLICIES:
            if name != "pi0" and name not in states:
                continue
            if name != "pi0":
                load_adapter_state(llm.model, states[name])
            with (adapters_off(llm.model) if name == "pi0" else contextlib.nullcontext(),
                  computing(precision, llm.device)):
                drawn = sample_items(llm.model, llm.tokenizer, [(i, p) for i, p, _ in items], template, n=n,
                                     seed=SEED, temperature=TEMPERATURE, max_tokens=MAX_TOKENS,
                                     rows_per_batch=WIDE_BATCH_ROWS)
            per_policy[name] = [sum(score({"expected_answer": a}, text)["reward"] == 1.0 for text, _ in got)
                                for got, (_, _, a) in zip(drawn, items)]
        out["splits"][split] = {"template": template.name, "items": len(items), "samples": n, "passed": per_policy}
    return out


def tables(measured: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per split: each policy's pass@1 and interval, and the lifts with paired-bootstrap intervals (pure)."""
    out: dict[str, dict[str, Any]] = {}
    for split, m in measured["splits"].items():
        n, passed = m["samples"], m["passed"]
        row: dict[str, Any] = {"template": m["template"], "items": m["items"], "samples": n}
        for name, counts in passed.items():
            row[name] = {"pass_at_1": sum(counts) / (n * len(counts)),
                         "ci95": clustered_interval(counts, [n] * len(counts))}
        for tag, base in (("lift", "pi0"), ("rl_lift", "warm_start")):
            if base in passed and "final" in passed:
                a = [c / n for c in passed[base]]
                b = [c / n for c in passed["final"]]
                # from the counts, exactly (57 of 400 is 14.25 points, not 14.249999...)
                diff = Fraction(100 * (sum(passed["final"]) - sum(passed[base])), n * len(a))
                row[tag] = {"points": float(diff),
                            "ci95_points": tuple(100 * x for x in paired_bootstrap(a, b, seed=0))}
        out[split] = row
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run_dir", type=Path, help="a course.llm.rl run directory (final.safetensors, summary.json)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--samples", type=int, default=8, help="samples per item off the benchmark holdout (default 8)")
    ap.add_argument("--bench-samples", type=int, default=4,
                    help="samples per benchmark-holdout item (default 4: 1,600 per policy)")
    ap.add_argument("--model", default=None, help="the model the run trained (course.llm.rl --model; default SmolLM2)")
    args = ap.parse_args()
    print(json.dumps(measure(args.run_dir, args.threads, args.samples, args.bench_samples, args.model)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
