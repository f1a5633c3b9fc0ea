"""Contract tests for the student exercise ``course.assignments.pick_best.pick_best``.

They check behaviour, not implementation: any rewrite a student makes must pass.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from course.assignments.pick_best import pick_best


def _samples(rewards: list[float], order: list[int] | None = None) -> list[dict]:
    indices = order if order is not None else list(range(len(rewards)))
    return [
        {"sample_index": i, "sample_id": f"x#{i}", "completion": f"c{i}", "reward": r, "details": {}}
        for i, r in zip(indices, rewards)
    ]


def test_the_only_passing_sample_is_chosen() -> None:
    samples = _samples([0.0, 0.0, 1.0, 0.0])
    assert pick_best(samples)["sample_index"] == 2


def test_ties_go_to_the_lowest_sample_index() -> None:
    samples = _samples([0.0, 1.0, 1.0, 1.0])
    assert pick_best(samples)["sample_index"] == 1


def test_ties_use_sample_index_not_list_position() -> None:
    # The samples arrive out of index order; the rule is about the stable id, not the position.
    samples = _samples([1.0, 1.0, 0.0], order=[5, 3, 0])
    assert pick_best(samples)["sample_index"] == 3


def test_all_failing_samples_return_the_first_by_index() -> None:
    samples = _samples([0.0, 0.0, 0.0])
    assert pick_best(samples)["sample_index"] == 0


def test_a_single_sample_is_returned_as_is() -> None:
    samples = _samples([0.0])
    assert pick_best(samples) is samples[0]


def test_an_empty_list_is_refused() -> None:
    with pytest.raises(ValueError):
        pick_best([])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([0.0, 0.5, 1.0]), min_size=1, max_size=12), st.randoms(use_true_random=False))
def test_contract_holds_for_any_rewards_and_order(rewards: list[float], rnd: random.Random) -> None:
    order = list(range(len(rewards)))
    rnd.shuffle(order)
    samples = _samples(rewards, order=order)
    chosen = pick_best(samples)
    assert any(chosen is s for s in samples)  # one of the given objects
    best_reward = max(s["reward"] for s in samples)
    assert chosen["reward"] == best_reward
    assert chosen["sample_index"] == min(s["sample_index"] for s in samples if s["reward"] == best_reward)
    assert pick_best(list(reversed(samples))) is chosen  # input order does not matter
