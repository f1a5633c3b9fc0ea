"""Generate the bundled data pack, byte for byte, from one seed.

This script is the only author of these files (never edit them by hand):

    data/datasets/math_dev.jsonl              100 items  {"id", "prompt", "expected_answer"}
    data/datasets/math_holdout.jsonl           50 items  (prompts disjoint from dev)
    data/rollouts/selection_pack_dev.jsonl     8 samples per dev item from one recorded policy
    data/rollouts/selection_pack_holdout.jsonl 8 samples per holdout item
    data/rollouts/frozen_rollouts_dev.jsonl    one completion per item = sample 0 of its pack
    data/rollouts/frozen_rollouts_holdout.jsonl
    data/datasets/math_bench_holdout.jsonl    400 items  (disjoint from both; benchmarks only, see below)

The benchmark holdout is drawn last, from the same generator and the same rule (one item in
twenty a big one), so dev and holdout are the same bytes with or without it. It is not the
student's holdout: benchmarks/bench_llm_rl.py measures the real LLM's recipe on it beside the
50-item course holdout, because 50 items give one seed's lift an interval of about +-10 points.
No learning run trains on it (``course.lib.bundled.TRAINING_EXCLUDED``).

The formats are documented in docs/formats.md.

The "recorded policy" is a *simulated* model, and honestly labelled as one
(``sim-policy-v1``): a seeded stochastic process standing in for an LLM sampled
at temperature 0.8. It is built like the real thing fails:
  * every item has a latent difficulty, so its chance of producing the right
    number varies from item to item (some items are hopeless, some easy);
  * every item has a latent format habit, so its chance of writing the answer
    in the exact ``Final: <int>`` form varies too;
  * a wrong number is a typical slip (off by one, swapped digits, lost sign,
    a misread operand or operation), and each item has a favourite slip, as a
    real policy repeats its own mistakes;
  * the surface is drawn from a realistic mix of format slips (missing prefix,
    ``Final:323``, trailing period, lowercase, reasoning lines, several Final:
    lines, commas, leading zeros, Unicode minus, fullwidth digits, prose, units).
Every completion comes from the generator's RNG; none is written by hand.

Seeds: every random draw uses a ``random.Random`` seeded with a string such as
``"3:policy:dev-0007:sample:5"`` (string seeds are hashed with SHA-512 by
``random``, so nothing depends on PYTHONHASHSEED), so sample k of an item does not
depend on how many samples are drawn.

Run it (from the repository root):

    python scripts/make_data.py            # rewrite the files, print the measured mix
    python scripts/make_data.py --check    # exit 1 if a bundled file differs from what the seed gives
"""

from __future__ import annotations

import math
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

# Use the course package of the repository this script lives in, installed or not.
_REPO = Path(__file__).resolve().parent.parent
if str(_REPO) not in sys.path:
    sys.path.insert(0, str(_REPO))

import random  # noqa: E402

from course.cli import EXIT_FAIL, EXIT_OK, info, make_parser, run  # noqa: E402
from course.instrument.spec_v1 import score  # noqa: E402
from course.lib.records.jsonl import dumps_line  # noqa: E402
from course.lib.reward_spec.problems import RUNNING_EXAMPLE, Problem, make_problem  # noqa: E402

# ---------------------------------------------------------------------------
# What the pack is. Changing any of these changes the bundled bytes.
# ---------------------------------------------------------------------------
# The first seed >= 1 whose pack meets every target in target_checks();
# reproduce the choice with: python scripts/make_data.py --find-seed 1
DEFAULT_SEED = 3
N_DEV = 100
N_HOLDOUT = 50
N_BENCH = 400  # the benchmark holdout: enough items that one seed's interval is about +-4 points
N_SAMPLES = 8
HARD_EVERY = 20  # one item in twenty has an answer of four digits
POLICY = "sim-policy-v1"


def sampling_settings(seed: int) -> dict[str, Any]:
    """The sampling settings recorded on every rollout line (identical within a file)."""
    return {"temperature": 0.8, "top_p": 0.95, "max_tokens": 32, "seed": seed}


# ---------------------------------------------------------------------------
# Datasets
# ---------------------------------------------------------------------------
def make_split(seed: int, split: str, n: int, taken: set[str]) -> list[tuple[str, Problem]]:
    """``n`` (id, problem) pairs with prompts not in ``taken`` (which is extended).

    A duplicate prompt is redrawn from the next attempt's seed, so the result
    depends only on ``seed``, ``split`` and the prompts already taken.
    """
    items: list[tuple[str, Problem]] = []
    for i in range(1, n + 1):
        item_id = f"{split}-{i:04d}"
        if split == "dev" and i == 1:
            problem = RUNNING_EXAMPLE  # the course's running example opens the dev set
        else:
            # Every HARD_EVERY-th item is a big one (|answer| >= 1000), so that slips that
            # only big numbers invite (thousands separators) occur in every split.
            hard = i % HARD_EVERY == HARD_EVERY // 2
            attempt = 0
            while True:
                problem = make_problem(random.Random(f"{seed}:{split}:{i}:{attempt}"))
                if problem.prompt not in taken and (not hard or abs(problem.answer) >= 1000):
                    break
                attempt += 1
        if problem.prompt in taken:
            raise AssertionError(f"duplicate prompt for {item_id}")
        taken.add(problem.prompt)
        items.append((item_id, problem))
    return items


def dataset_record(item_id: str, problem: Problem) -> dict[str, Any]:
    return {"id": item_id, "prompt": problem.prompt, "expected_answer": problem.answer}


# ---------------------------------------------------------------------------
# The simulated policy: latent item traits
# ---------------------------------------------------------------------------
def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


@dataclass(frozen=True)
class ItemTraits:
    """What the simulated policy 'is like' on one item (drawn once per item)."""

    p_right: float  # chance a sample carries the right number
    p_clean: float  # chance a sample is written exactly 'Final: N' (before any other habit)
    favourite_slip: str  # the wrong-number mechanism this item tends to repeat


def difficulty(problem: Problem) -> float:
    """How hard the number is for the simulated policy (0 = trivial).

    Bigger numbers, multiplication, negative results and word problems are harder,
    as they are for small language models.
    """
    a, b = (abs(x) for x in problem.operands)
    op = problem.kind.removeprefix("word_")
    d = {"add": 0.0, "sub": 0.4, "mul": 0.9}[op]
    d += 0.35 * (len(str(a)) + len(str(b)) - 2)  # one unit per extra digit, roughly
    if op == "mul" and min(a, b) > 9:
        d += 0.8  # two-digit by two-digit needs a carried partial product
    if problem.answer < 0:
        d += 0.6
    if problem.kind.startswith("word_"):
        d += 0.5  # the numbers have to be found in the sentence first
    return d


SLIPS: tuple[str, ...] = ("off_by_one", "digit_swap", "sign", "operand", "operation", "carry")


def item_traits(seed: int, item_id: str, problem: Problem) -> ItemTraits:
    rng = random.Random(f"{seed}:policy:{item_id}:traits")
    # A latent skill-minus-difficulty score with wide per-item noise: most items
    # are clearly easy or clearly hard for the policy, a few sit in between.
    logit = 1.1 - 1.3 * difficulty(problem) + rng.gauss(0.0, 1.8)
    p_right = _sigmoid(logit)
    # Format habit: on some prompts the policy nearly always writes 'Final: N',
    # on others it keeps adding prose. Beta(2, 1) has mean 2/3 and density 2x on [0, 1].
    p_clean = rng.betavariate(2.0, 1.0)
    slips = [s for s in SLIPS if s != "sign" or problem.answer != 0]
    return ItemTraits(p_right=p_right, p_clean=p_clean, favourite_slip=rng.choice(slips))


# ---------------------------------------------------------------------------
# The simulated policy: the number
# ---------------------------------------------------------------------------
def wrong_number(rng: random.Random, problem: Problem, slip: str) -> int:
    """A plausible wrong answer produced by ``slip``; never the right one."""
    answer = problem.answer
    a, b = problem.operands
    op = problem.kind.removeprefix("word_")
    candidate = answer
    if slip == "off_by_one":
        candidate = answer + rng.choice((-1, 1))
    elif slip == "digit_swap":
        digits = list(str(abs(answer)))
        if len(digits) >= 2:
            j = rng.randrange(len(digits) - 1)
            digits[j], digits[j + 1] = digits[j + 1], digits[j]
            candidate = int("".join(digits).lstrip("0") or "0") * (-1 if answer < 0 else 1)
    elif slip == "sign":
        candidate = -answer
    elif slip == "operand":  # misread one operand by one
        if rng.random() < 0.5:
            a += rng.choice((-1, 1))
        else:
            b += rng.choice((-1, 1))
        candidate = {"add": a + b, "sub": a - b, "mul": a * b}[op]
    elif slip == "operation":  # the wrong operation, or the operands reversed
        candidate = {"add": a - b, "sub": b - a if a != b else a + b, "mul": a + b}[op]
    elif slip == "carry":  # a dropped or doubled carry: off by ten
        candidate = answer + rng.choice((-10, 10))
    if candidate == answer:  # the slip had no effect here: fall back to off-by-one
        candidate = answer + rng.choice((-1, 1))
    return candidate


# ---------------------------------------------------------------------------
# The simulated policy: the surface form
# ---------------------------------------------------------------------------
# Relative weights of the format slips, given that the sample is *not* clean.
# Conditional ones (commas, Unicode minus, units) only apply where they make sense.
SLIP_WEIGHTS: tuple[tuple[str, float], ...] = (
    ("trailing_newline", 4.0),  # 'Final: N\n' still passes: only ASCII whitespace is trimmed
    ("bare_number", 9.0),
    ("no_space", 8.0),
    ("trailing_period", 9.0),
    ("lowercase", 6.0),
    ("reasoning", 12.0),
    ("laundering", 6.0),
    ("answer_is", 7.0),
    ("double_space", 3.0),
    ("leading_zero", 3.0),
    ("fullwidth", 2.0),
    ("truncated", 2.0),
    ("empty", 1.0),
)
COMMA_WEIGHT = 30.0  # when |N| >= 1000
UNICODE_MINUS_WEIGHT = 14.0  # when N < 0
UNITS_WEIGHT = 10.0  # when the prompt names a unit

_FULLWIDTH = str.maketrans("0123456789", "０１２３４５６７８９")
_UNIT_PATTERNS = (
    (re.compile(r"How many (\w+)"), 1),
    (re.compile(r"temperature"), "degrees"),
    (re.compile(r"points"), "points"),
)


def unit_of(prompt: str) -> str | None:
    """The unit a chatty policy might append ('Final: 12 apples'), read off the prompt."""
    for pattern, group in _UNIT_PATTERNS:
        m = pattern.search(prompt)
        if m is not None:
            return m.group(group) if isinstance(group, int) else group
    return None


def work_line(rng: random.Random, problem: Problem, n: int) -> str:
    """A line of 'reasoning' ending in the sample's number ``n`` (right or wrong)."""
    a, b = problem.operands
    op = problem.kind.removeprefix("word_")
    sym = {"add": "+", "sub": "-", "mul": "*"}[op]
    if op == "mul" and b % 10 == 9 and rng.random() < 0.6:
        # the running example's trick: 17*19 = 17*20 - 17
        return f"{a}*{b} = {a}*{b + 1} - {a} = {n}"
    shown_b = f"({b})" if b < 0 else str(b)
    style = rng.randrange(3)
    if style == 0:
        return f"{a} {sym} {shown_b} = {n}"
    if style == 1:
        return f"We need {a} {sym} {shown_b}, which is {n}."
    return f"Step 1: {a} {sym} {shown_b} = {n}"


def surface(rng: random.Random, problem: Problem, n: int, clean: bool) -> str:
    """Write the number ``n`` the way this sample does."""
    if clean:
        return f"Final: {n}"
    weights = list(SLIP_WEIGHTS)
    if abs(n) >= 1000:
        weights.append(("commas", COMMA_WEIGHT))
    if n < 0:
        weights.append(("unicode_minus", UNICODE_MINUS_WEIGHT))
    unit = unit_of(problem.prompt)
    if unit is not None:
        weights.append(("units", UNITS_WEIGHT))
    if n <= 0:  # a leading zero needs a positive number to precede
        weights = [(k, w) for k, w in weights if k != "leading_zero"]
    kinds = [k for k, _ in weights]
    form = rng.choices(kinds, weights=[w for _, w in weights])[0]

    if form == "trailing_newline":
        return f"Final: {n}\n"
    if form == "bare_number":
        return str(n)
    if form == "no_space":
        return f"Final:{n}"
    if form == "trailing_period":
        return f"Final: {n}."
    if form == "lowercase":
        return f"final: {n}"
    if form == "reasoning":
        return f"{work_line(rng, problem, n)}\nFinal: {n}"
    if form == "laundering":
        # hedging: two answers, in either order; a verifier that reads the last
        # (or any) Final: line could be laundered into a pass
        other = n + rng.choice((-1, 1))
        first, second = (other, n) if rng.random() < 0.5 else (n, other)
        return f"Final: {first}\nFinal: {second}"
    if form == "answer_is":
        return f"The answer is {n}."
    if form == "double_space":
        return f"Final:  {n}"
    if form == "leading_zero":
        return f"Final: 0{n}"
    if form == "fullwidth":
        return f"Final: {str(n).translate(_FULLWIDTH)}"
    if form == "truncated":
        # ran out of max_tokens while 'thinking', before any answer line
        return "Let me work this out step by step.\n" + work_line(rng, problem, n).split("=")[0].rstrip()
    if form == "empty":
        return ""
    if form == "commas":
        return f"Final: {n:,}"
    if form == "unicode_minus":
        return f"Final: \u2212{abs(n)}"
    if form == "units":
        return f"Final: {n} {unit}"
    raise AssertionError(form)


def sample_completion(seed: int, item_id: str, problem: Problem, traits: ItemTraits, k: int) -> str:
    """Sample ``k`` of one item: first the number (right or a slip), then its surface."""
    rng = random.Random(f"{seed}:policy:{item_id}:sample:{k}")
    if rng.random() < traits.p_right:
        n = problem.answer
    else:
        slip = traits.favourite_slip if rng.random() < 0.6 else rng.choice(SLIPS)
        n = wrong_number(rng, problem, slip)
    clean = rng.random() < traits.p_clean
    return surface(rng, problem, n, clean)


# ---------------------------------------------------------------------------
# The pack: every file as text
# ---------------------------------------------------------------------------
def _jsonl(records: Sequence[dict[str, Any]]) -> str:
    return "".join(dumps_line(r) + "\n" for r in records)


def build(seed: int) -> tuple[dict[str, str], dict[str, list[tuple[dict[str, Any], list[str]]]]]:
    """All bundled files as {relative path: text}, plus (example, samples) per split for the summary."""
    taken: set[str] = set()
    splits = {"dev": make_split(seed, "dev", N_DEV, taken), "holdout": make_split(seed, "holdout", N_HOLDOUT, taken)}
    sampling = sampling_settings(seed)
    files: dict[str, str] = {}
    scored: dict[str, list[tuple[dict[str, Any], list[str]]]] = {}
    for split, items in splits.items():
        dataset, pack, frozen, rows = [], [], [], []
        for item_id, problem in items:
            example = dataset_record(item_id, problem)
            traits = item_traits(seed, item_id, problem)
            samples = [sample_completion(seed, item_id, problem, traits, k) for k in range(N_SAMPLES)]
            dataset.append(example)
            pack.append(
                {
                    "id": item_id,
                    "samples": [{"sample_index": k, "completion": c} for k, c in enumerate(samples)],
                    "policy": POLICY,
                    "sampling": sampling,
                }
            )
            frozen.append({"id": item_id, "completion": samples[0], "policy": POLICY, "sampling": sampling})
            rows.append((example, samples))
        files[f"data/datasets/math_{split}.jsonl"] = _jsonl(dataset)
        files[f"data/rollouts/selection_pack_{split}.jsonl"] = _jsonl(pack)
        files[f"data/rollouts/frozen_rollouts_{split}.jsonl"] = _jsonl(frozen)
        scored[split] = rows
    # The benchmark holdout: drawn after dev and holdout (their prompts are taken), a dataset only.
    bench = make_split(seed, "bench", N_BENCH, taken)
    files["data/datasets/math_bench_holdout.jsonl"] = _jsonl([dataset_record(i, p) for i, p in bench])
    return files, scored


# ---------------------------------------------------------------------------
# The story the script tells: the pack measured with the course's own scorer
# ---------------------------------------------------------------------------
def code_mix(rows: list[tuple[dict[str, Any], list[str]]], first_only: bool) -> str:
    """'code count, ...' over sample 0 (the frozen rollouts) or over all samples, most common first."""
    counts: dict[str, int] = {}
    for ex, samples in rows:
        for c in samples[:1] if first_only else samples:
            code = score(ex, c)["details"]["error_code"]
            counts[code] = counts.get(code, 0) + 1
    return ", ".join(f"{code} {k}" for code, k in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def summarize(split: str, rows: list[tuple[dict[str, Any], list[str]]], f: dict[str, Any]) -> list[str]:
    n = f["n"]

    def pct(share: float, d: int) -> str:
        return f"{round(share * d)}/{d} = {100.0 * share:.1f}%"

    return [
        f"[{split}] {n} items x {N_SAMPLES} samples from {POLICY}, scored with course.score",
        f"  frozen rollouts (= sample 0) pass: {pct(f['frozen'], n)}",
        f"  mean pass@1 over all samples:      {pct(f['pass1'], n * N_SAMPLES)}",
        f"  best-of-4 (any of samples 0-3):    {pct(f['best4'], n)}",
        f"  best-of-8 (any of samples 0-7):    {pct(f['best8'], n)}",
        f"  items with 0 of 8 passing:         {pct(f['zero'], n)}",
        f"  items with exactly 1 of 8 passing: {pct(f['one'], n)}",
        f"  items with >= 6 of 8 passing:      {pct(f['six'], n)}",
        f"  error codes, frozen rollouts: {code_mix(rows, first_only=True)}",
        f"  error codes, all samples:     {code_mix(rows, first_only=False)}",
    ]


# Slips the issue asks the frozen rollouts to show; the default seed must show them all.
SHOWCASE_CODES: tuple[str, ...] = (
    "wrong_answer", "missing_prefix", "prefix_spacing", "trailing_text", "prefix_case",
    "multiple_lines", "digit_separator", "leading_zero", "lookalike_minus", "non_ascii_digit",
)


def pack_figures(rows: list[tuple[dict[str, Any], list[str]]]) -> dict[str, Any]:
    """The selection-relevant figures of one split, measured with course.score."""
    verdicts = [[score(ex, c) for c in samples] for ex, samples in rows]
    passes = [[v["reward"] == 1.0 for v in vs] for vs in verdicts]
    counts = [sum(p) for p in passes]
    n = len(rows)
    return {
        "n": n,
        "frozen": sum(p[0] for p in passes) / n,
        "pass1": sum(counts) / (n * N_SAMPLES),
        "best4": sum(any(p[:4]) for p in passes) / n,
        "best8": sum(any(p) for p in passes) / n,
        "zero": sum(c == 0 for c in counts) / n,
        "one": sum(c == 1 for c in counts) / n,
        "six": sum(c >= 6 for c in counts) / n,
        "frozen_codes": {vs[0]["details"]["error_code"] for vs in verdicts},
        "pack_codes": {v["details"]["error_code"] for vs in verdicts for v in vs},
    }


def target_checks(figures: dict[str, dict[str, Any]]) -> list[tuple[str, bool]]:
    """The targets the bundled pack is built to meet, as (description, met)."""
    checks: list[tuple[str, bool]] = []
    for split, f in figures.items():
        checks += [
            (f"{split}: frozen pass rate in [20%, 35%]", 0.20 <= f["frozen"] <= 0.35),
            (f"{split}: mean pass@1 over all samples in [20%, 35%]", 0.20 <= f["pass1"] <= 0.35),
            (f"{split}: best-of-4 at least 15 points above the frozen pass rate", f["best4"] >= f["frozen"] + 0.15),
            (f"{split}: best-of-8 at least 5 points above best-of-4", f["best8"] >= f["best4"] + 0.05),
            (f"{split}: at least 10% of items with no passing sample", f["zero"] >= 0.10),
            (f"{split}: at least 5% of items with exactly 1 of 8 passing", f["one"] >= 0.05),
            (f"{split}: at least 5% of items with >= 6 of 8 passing", f["six"] >= 0.05),
        ]
    missing_frozen = [c for c in SHOWCASE_CODES if c not in figures["dev"]["frozen_codes"]]
    checks.append(
        (f"dev frozen rollouts show every showcase slip (missing: {missing_frozen or 'none'})", not missing_frozen)
    )
    missing_pack = [c for c in SHOWCASE_CODES if c not in figures["holdout"]["pack_codes"]]
    checks.append((f"holdout pack shows every showcase slip (missing: {missing_pack or 'none'})", not missing_pack))
    return checks


def find_seed(start: int) -> int:
    """The first seed >= start whose pack meets every target (how DEFAULT_SEED was chosen)."""
    seed = start
    while True:
        _, scored = build(seed)
        if all(ok for _, ok in target_checks({k: pack_figures(v) for k, v in scored.items()})):
            return seed
        seed += 1


# ---------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------
def main(argv: Sequence[str] | None = None) -> int:
    parser = make_parser(
        "python scripts/make_data.py",
        "Write the bundled datasets, selection packs and frozen rollouts from one seed "
        "(or, with --check, verify the bundled files byte for byte).",
        "  python scripts/make_data.py --check\n"
        "  python scripts/make_data.py --seed 7 --root /tmp/pack   # another pack, elsewhere",
    )
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED,
                        help=f"master seed (default {DEFAULT_SEED}, the bundled pack)")
    parser.add_argument("--root", default=str(_REPO), help="directory that holds data/ (default: this repository)")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if any bundled file differs")
    parser.add_argument(
        "--find-seed", type=int, metavar="START", default=None,
        help="write nothing; print the first seed >= START whose pack meets every target",
    )
    parser.add_argument("--quiet", action="store_true", help="do not print the measured summary")
    args = parser.parse_args(argv)

    if args.find_seed is not None:
        print(find_seed(args.find_seed))
        return EXIT_OK

    files, scored = build(args.seed)
    root = Path(args.root)
    if not args.quiet:
        figures = {split: pack_figures(rows) for split, rows in scored.items()}
        for split, rows in scored.items():
            for line in summarize(split, rows, figures[split]):
                info(line)
        for description, ok in target_checks(figures):
            info(f"  target {'met   ' if ok else 'MISSED'} {description}")

    if args.check:
        differing = []
        for rel, text in files.items():
            path = root / rel
            if not path.is_file() or path.read_bytes() != text.encode("utf-8"):
                differing.append(rel)
        for rel in differing:
            print(f"DIFFERS: {rel} (regenerate with: python scripts/make_data.py --seed {args.seed})")
        if differing:
            return EXIT_FAIL
        print(f"OK: {len(files)} files match seed {args.seed} byte for byte")
        return EXIT_OK

    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_bytes(text.encode("utf-8"))
        os.replace(tmp, path)  # a reader never sees half a file
        print(f"wrote {rel}")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(run(main))
