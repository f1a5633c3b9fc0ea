"""Benchmark the strict scorer: per-call time on a realistic mix, and time on 10 MB completions.

Targets (issue 2): median <= 2 us per call on typical completions; time linear in
the input size, a 10 MB completion well under 0.5 s.

How the numbers are made: each completion of the mix is scored ``--repeat``
times in a tight loop and the mean of that batch is its per-call time (timing a
single ~1 us call would mostly measure the clock). The median and p90 are over
the completions of the mix; per-category medians follow. Big inputs are timed
once each, best of three. Nothing here is asserted: tests never time anything.

    python benchmarks/bench_score.py            # about 10 seconds
    python benchmarks/bench_score.py --quick    # smaller mix, 1 MB inputs
"""

from __future__ import annotations

import argparse
import platform
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a clone without installing
sys.path.insert(0, str(Path(__file__).resolve().parent))
from record import Recorder, add_arguments  # noqa: E402

from course.instrument.rubric_registry import scorer_fingerprint  # noqa: E402
from course.instrument.spec_v1 import SCORER_VERSION, score  # noqa: E402


# ---------------------------------------------------------------------------
# The mix: what a policy actually emits, most of it well formed.
# ---------------------------------------------------------------------------
def _reasoning(rng: random.Random, answer: int) -> str:
    steps = [f"Step {i + 1}: {rng.randint(2, 99)} * {rng.randint(2, 99)} = {rng.randint(4, 9801)}"
             for i in range(rng.randint(1, 4))]
    return "Let me work this out.\n" + "\n".join(steps) + f"\nFinal: {answer}"


CATEGORIES = [
    # (name, weight, make(rng, answer) -> completion)
    ("correct", 40, lambda rng, a: f"Final: {a}"),
    ("correct+newline", 10, lambda rng, a: f"Final: {a}\n"),
    ("wrong", 20, lambda rng, a: f"Final: {a + rng.choice([-10, -1, 1, 2, 100])}"),
    ("near-miss ascii", 10, lambda rng, a: rng.choice([
        f"Final:{a}", f"Final:  {a}", f"final: {a}", f"Final: 0{a}", f"Final: {a}.", f"Final: +{a}",
        f"Final: {a:,}", f"The answer is {a}", f"Final: {a}.0", f"Answer: {a}"])),
    ("near-miss unicode", 5, lambda rng, a: rng.choice([
        f"Final:\u00a0{a}", f"Final\uff1a {a}", f"Final: {a}\u200b", "Final: " + str(a).translate(
            {ord(d): 0xFF10 + int(d) for d in "0123456789"}), f"Final: \u2212{a}", f"\ufeffFinal: {a}"])),
    ("multi-line reasoning", 10, _reasoning),
    ("laundering", 5, lambda rng, a: "\n".join(f"Final: {a + k}" for k in range(-2, 3))),
]


def build_mix(n: int, seed: int) -> list[tuple[str, dict, str]]:
    rng = random.Random(seed)
    names = [c[0] for c in CATEGORIES]
    weights = [c[1] for c in CATEGORIES]
    makers = {c[0]: c[2] for c in CATEGORIES}
    mix = []
    for _ in range(n):
        answer = rng.choice([rng.randint(0, 999), rng.randint(1000, 99999), -rng.randint(1, 999)])
        category = rng.choices(names, weights)[0]
        mix.append((category, {"expected_answer": answer}, makers[category](rng, answer)))
    return mix


def per_call_us(example: dict, completion: str, repeat: int) -> float:
    start = time.perf_counter()
    for _ in range(repeat):
        score(example, completion)
    return (time.perf_counter() - start) / repeat * 1e6


def p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10)[-1]


# ---------------------------------------------------------------------------
# Big inputs: several shapes, several sizes.
# ---------------------------------------------------------------------------
def big_shapes(size: int) -> dict[str, str]:
    line = "We multiply the two numbers and carry the tens.\n"
    return {
        "digits after 'Final: '": "Final: " + "7" * size,
        "prose with newlines": (line * (size // len(line) + 1))[:size] + "\nFinal: 323",
        "non-ASCII text (é)": "\u00e9" * size,
        "non-ASCII after 'Final: 3'": "Final: 3" + "\u00e9" * size,
        "long line, newline at the end": "x" * size + "\nFinal: 323",
        "prose, under 1 M chars (lines counted)": (line * (990_000 // len(line) + 1))[:990_000] + "\nFinal: 323",
        "emoji (size/4 chars = size bytes UTF-8)": "\U0001f600" * (size // 4),
        "whitespace around a valid line": " " * (size // 2) + "Final: 323" + "\n" * (size // 2),
    }


def time_once(completion: str) -> tuple[float, str]:
    best = float("inf")
    code = ""
    for _ in range(3):
        start = time.perf_counter()
        result = score({"expected_answer": 323}, completion)
        best = min(best, time.perf_counter() - start)
        code = result["details"]["error_code"]
    return best, code


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=2000, help="completions in the mix (default 2000)")
    parser.add_argument("--repeat", type=int, default=200, help="calls per completion (default 200)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the mix (default 0)")
    parser.add_argument("--quick", action="store_true", help="n=300, repeat=100, big inputs of 1 MB")
    add_arguments(parser)
    args = parser.parse_args(argv)
    rec = Recorder.from_args("bench_score", args, argv)
    n, repeat, big = (300, 100, 1_000_000) if args.quick else (args.n, args.repeat, 10_000_000)

    print(f"scorer {SCORER_VERSION} ({scorer_fingerprint()[:12]}), Python {platform.python_version()} "
          f"on {platform.machine()} {platform.system()}")
    mix = build_mix(n, args.seed)
    times: dict[str, list[float]] = {}
    for category, example, completion in mix:
        times.setdefault(category, []).append(per_call_us(example, completion, repeat))
    everything = [t for ts in times.values() for t in ts]
    print(f"\nRealistic mix: {n} completions (seed {args.seed}), {repeat} calls each")
    print(f"  median {statistics.median(everything):.2f} us/call   p90 {p90(everything):.2f} us/call   "
          f"mean {statistics.fmean(everything):.2f} us/call   (target: median <= 2 us)")
    mix = f"realistic mix of {n:,} completions"
    rec.figure("median_us", statistics.median(everything), "µs", f"median time per call, {mix}", digits=2)
    rec.figure("p90_us", p90(everything), "µs", f"90th percentile per call, {mix}", digits=2)
    print(f"\n  {'category':<22} {'share':>6} {'median us':>10} {'p90 us':>8}")
    for name, _, _ in CATEGORIES:
        ts = times.get(name, [])
        if len(ts) >= 2:
            print(f"  {name:<22} {len(ts) / n:>6.0%} {statistics.median(ts):>10.2f} {p90(ts):>8.2f}")

    print(f"\nBig completions ({big / 1e6:g} M characters unless named; best of 3; target well under 0.5 s)")
    slowest = (0.0, "")
    for shape, completion in big_shapes(big).items():
        seconds, code = time_once(completion)
        print(f"  {shape:<40} {len(completion):>10,} chars {seconds:>8.3f} s   {code}")
        slowest = max(slowest, (seconds, shape))
    rec.figure("big_slowest_s", slowest[0], "s",
               f"slowest of the big completions ({big / 1e6:g} M characters; the slowest shape: {slowest[1]})",
               digits=3)

    print("\nLinearity: non-ASCII text, time per million characters")
    for size in (big // 8, big // 4, big // 2, big):
        seconds, _ = time_once("\u00e9" * size)
        print(f"  {size:>10,} chars {seconds:>8.3f} s   {seconds / size * 1e6 * 1e3:>6.1f} ms per M chars")
        rec.figure(f"non_ascii_{size}_ms_per_m", seconds / size * 1e9, "ms per M characters",
                   f"non-ASCII text of {size:,} characters", digits=1)
    rec.save()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
