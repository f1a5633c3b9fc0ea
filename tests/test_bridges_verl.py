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


def test_real_verl_loads_the_function_from_config_and_its_naive_manager_scores_a_batch():
    import pytest

    pytest.importorskip("verl", reason="verl is not installed (heavy: ray and more; not part of the extras)")
    import numpy as np
    import torch
    from omegaconf import OmegaConf
    from verl import DataProto
    from verl.trainer.ppo.reward import get_custom_reward_fn
    from verl.workers.reward_manager.naive import NaiveRewardManager

    from course.tinylm.vocab import VOCAB

    config = OmegaConf.create({"reward": {"custom_reward_function": {
        "path": str(REPO / "course" / "integrations" / "verl.py"), "name": "compute_score"}}})
    fn = get_custom_reward_fn(config)

    class CharTokenizer:  # what the manager needs of a tokenizer: decode()
        def decode(self, ids, skip_special_tokens=True):
            return VOCAB.decode([int(i) for i in ids])

    responses = ["Final: 323", "Final:63"]
    width = 12
    resp = torch.tensor([VOCAB.encode(r) + [VOCAB.PAD] * (width - len(r)) for r in responses])
    prompts = torch.tensor([[VOCAB.BOS, VOCAB.SEP]] * 2)
    mask = torch.tensor([[1, 1] + [1] * len(r) + [0] * (width - len(r)) for r in responses])
    data = DataProto.from_dict(
        tensors={"prompts": prompts, "responses": resp, "attention_mask": mask},
        non_tensors={"data_source": np.array(["course"] * 2, dtype=object),
                     "reward_model": np.array([{"ground_truth": "323"}, {"ground_truth": "63"}], dtype=object)},
    )
    out = NaiveRewardManager(tokenizer=CharTokenizer(), num_examine=0, compute_score=fn)(data, return_dict=True)
    rewards = out["reward_tensor"].sum(dim=-1).tolist()
    assert rewards == [1.0, 0.0]
    assert list(out["reward_extra_info"]["error_code"]) == ["ok", "prefix_spacing"]
