"""verl bridge: compute_score loaded and called the way verl's reward loader and manager do.

verl itself is not installed in CI (it pulls ray and a CUDA stack); these tests reproduce its
two steps: ``get_custom_reward_fn`` loads the file with ``importlib.util.spec_from_file_location``
under the module name ``custom_module`` and takes ``custom_reward_function.name`` from it; the
naive reward manager calls it per response with keyword arguments and, when it returns a dict,
uses ``["score"]`` as the reward and appends every key to ``reward_extra_info``.
"""

from __future__ import annotations

import importlib.util
import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _load_like_verl(path: Path, name: str):
    spec = importlib.util.spec_from_file_location("custom_module", str(path))
    module = importlib.util.module_from_spec(spec)
    sys.modules["custom_module"] = module
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules["custom_module"]
    return getattr(module, name)


def test_verl_reward_manager_gets_rewards_and_error_codes_per_response():
    from course.integrations.verl import verl_rows

    compute_score = _load_like_verl(REPO / "course" / "integrations" / "verl.py", "compute_score")
    rows = verl_rows(str(REPO / "data" / "datasets" / "math_dev.jsonl"))[:3]
    responses = ["Final: 323", "Final:63", "The answer is 35"]
    rewards, extra = [], defaultdict(list)
    for row, response in zip(rows, responses):
        result = compute_score(
            data_source=row["data_source"], solution_str=response,
            ground_truth=row["reward_model"]["ground_truth"], extra_info=row["extra_info"],
        )
        rewards.append(result["score"])
        for key, value in result.items():
            extra[key].append(value)
    assert rewards == [1.0, 0.0, 0.0]
    assert extra["error_code"] == ["ok", "prefix_spacing", "missing_prefix"]
    assert len({len(v) for v in extra.values()}) == 1  # every key for every response


def test_unusable_ground_truth_is_a_named_zero_not_a_crash():
    from course.integrations.verl import compute_score

    result = compute_score("x", "Final: 3", "three")
    assert result["score"] == 0.0 and result["error_code"] == "bad_example"
