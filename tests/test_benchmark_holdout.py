"""The benchmark holdout (data/datasets/math_bench_holdout.jsonl): large enough to trust one seed's figure, drawn
from the course's seeded generator, and disjoint from dev, the course holdout and every learning run's training
stream (the RL steps' and the RFT warm start's), which ``course.lib.bundled.TRAINING_EXCLUDED`` keeps it out of.
"""

from __future__ import annotations

import itertools

from course.lib.bundled import DEFAULT_DATASETS, MATH_BENCH_HOLDOUT, PROJECT_ROOT
from course.lib.policy.training_problems import read_items, read_prompts

BENCH = PROJECT_ROOT / MATH_BENCH_HOLDOUT
# How far into each stream the check looks: the recipe draws 256 RFT problems and at most 40 steps x 8 prompts x 4
# dynamic-sampling draws; without the exclusion a benchmark prompt turns up within the first ~40 of every stream.
DRAWN = 2000


def test_the_benchmark_holdout_holds_at_least_400_distinct_items_with_their_own_ids() -> None:
    items = read_items(BENCH)
    assert len(items) >= 400
    assert len({it["id"] for it in items}) == len(items) and all(it["id"].startswith("bench-") for it in items)
    assert len({it["prompt"] for it in items}) == len(items)


def test_no_benchmark_prompt_is_a_dev_or_course_holdout_prompt() -> None:
    assert not set(read_prompts([BENCH])) & set(read_prompts(DEFAULT_DATASETS))


def test_neither_the_llm_rl_steps_stream_nor_the_rft_warm_start_stream_ever_draws_a_benchmark_prompt() -> None:
    from rl_toy import loop_settings

    from course.lib.bundled import TRAINING_EXCLUDED
    from course.lib.learning.rl_loop import training_data
    from course.llm.rft import training_problems

    bench = set(read_prompts([BENCH]))
    for seed in (0, 1, 2, 3, 4, 7):
        _, stream = training_data(loop_settings(seed=seed), TRAINING_EXCLUDED)
        assert not {p.prompt for p in itertools.islice(stream, DRAWN)} & bench, seed
        assert not {p.prompt for p in training_problems(seed, DRAWN)} & bench, seed


def test_the_llm_tool_trains_on_the_stream_that_excludes_the_benchmark_holdout() -> None:
    # course.llm.rl passes TRAINING_EXCLUDED to the loop; the tiny LM keeps its dev+holdout stream (its
    # recorded runs and the guide's figures stand on it), and its manifest says which.
    import inspect

    from course.llm import rl as llm_rl
    from course.tinylm import rl as tiny_rl

    assert "excluded=TRAINING_EXCLUDED" in inspect.getsource(llm_rl._main)
    assert llm_rl.TOOL.excluded == "dev+holdout+benchmark-holdout"
    assert tiny_rl.TOOL.excluded == "dev+holdout"
