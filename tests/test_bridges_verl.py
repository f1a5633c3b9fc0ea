"""verl bridge: compute_score as verl 0.9.1 loads and calls it, and verl itself doing the calling.

Without verl (the project's main environment) only the first tests run: they reproduce verl's
loader (``load_extern_object``: the file imported by path under a module name of its own) and its
reward managers' call (keyword arguments; a dict's ``score`` is the reward, every key logged).

With verl 0.9.1 (the ``verl`` extra, in a venv of its own: it pins transformers < 5.11; CI makes
``.venv-verl`` and runs this file there) the rest run verl's own code on a local Ray (2 CPUs,
no dashboard): ``main_ppo``'s config composed by Hydra with the keys the docs give, the reward
loop (``RewardLoopManager`` and its Ray workers) over a ``DataProto`` of 200 responses, every
registered reward manager, ``python -m verl.trainer.main_eval``, and Ray Data batches through
``course.integrations.batch.score_batch``. Every verdict is compared with ``course.score``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from course.instrument.spec_v1 import score

REPO = Path(__file__).resolve().parent.parent
BRIDGE = REPO / "course" / "integrations" / "verl.py"
DEV = REPO / "data" / "datasets" / "math_dev.jsonl"
FROZEN = REPO / "data" / "rollouts" / "frozen_rollouts_dev.jsonl"
PACK = REPO / "data" / "rollouts" / "selection_pack_dev.jsonl"

needs_verl = pytest.mark.skipif(importlib.util.find_spec("verl") is None,
                                reason="verl is not installed (the verl extra, in its own venv: docs/bridges.md)")


def _load_like_verl(path: Path, name: str):
    """verl.utils.import_utils.load_extern_object: import the file by path under another module name."""
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

    compute_score = _load_like_verl(BRIDGE, "compute_score")
    rows = verl_rows(str(DEV))[:3]
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


def test_main_eval_rows_hold_every_sample_of_a_pack_in_stored_order():
    from course.integrations.verl import verl_eval_rows

    rows = verl_eval_rows(str(DEV), str(PACK))
    first = json.loads(PACK.read_text().splitlines()[0])
    assert len(rows) == 100 and rows[0]["extra_info"]["id"] == first["id"]
    assert rows[0]["responses"] == [s["completion"] for s in first["samples"]]


def test_main_eval_rows_refuse_a_rollouts_file_missing_an_item(tmp_path):
    from course.errors import CourseError
    from course.integrations.verl import verl_eval_rows

    short = tmp_path / "short.jsonl"
    short.write_text("".join(FROZEN.read_text().splitlines(keepends=True)[:99]))
    with pytest.raises(CourseError, match="no completion for item 'dev-0100'"):
        verl_eval_rows(str(DEV), str(short))


# ---------------------------------------------------------------------------
# verl 0.9.1 itself
# ---------------------------------------------------------------------------
def _hostile_and_frozen() -> list[tuple[str, object]]:
    """(response, ground truth as the parquet holds it): the 100 frozen dev rollouts and the golden suites."""
    answers = {json.loads(line)["id"]: json.loads(line)["expected_answer"] for line in DEV.read_text().splitlines()}
    cases = [(r["completion"], str(answers[r["id"]])) for r in map(json.loads, FROZEN.read_text().splitlines())]
    for name in ("golden_correct.jsonl", "golden_exploits.jsonl"):
        for line in (REPO / "data" / "golden" / name).read_text().splitlines():
            case = json.loads(line)
            cases.append((case["completion"], str(case["expected_answer"])))
    return cases


@pytest.fixture(scope="module")
def byte_tokenizer_dir(tmp_path_factory):
    """A byte-level tokenizer saved where verl's workers load it (``actor_rollout_ref.model.path``): every
    UTF-8 text decodes back to itself, so the responses verl scores are exactly the ones given."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {c: i for i, c in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))}
    vocab |= {"<pad>": len(vocab), "<eos>": len(vocab) + 1}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    path = tmp_path_factory.mktemp("byte_tokenizer")
    PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>").save_pretrained(path)
    return path


def _ppo_config(overrides: list[str]):
    """verl's own main_ppo config (``ppo_trainer.yaml``), composed by Hydra as ``main_ppo`` does."""
    import verl
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(Path(verl.__file__).parent / "trainer" / "config"), version_base=None):
        return compose(config_name="ppo_trainer", overrides=overrides)


def _bridge_keys(tokenizer_dir: Path, *extra: str) -> list[str]:
    return [f"reward.custom_reward_function.path={BRIDGE}", "reward.custom_reward_function.name=compute_score",
            f"actor_rollout_ref.model.path={tokenizer_dir}", *extra]


def _data_proto(tokenizer_dir: Path, cases: list[tuple[str, object]]):
    """A DataProto as the trainer hands it to the reward loop: prompts, right-padded responses, the mask."""
    import numpy as np
    import torch
    from transformers import AutoTokenizer
    from verl import DataProto

    tok = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    encoded = [tok(text, add_special_tokens=False)["input_ids"] for text, _ in cases]
    assert [tok.decode(ids, skip_special_tokens=True) for ids in encoded] == [text for text, _ in cases]
    width = max(map(len, encoded))
    return DataProto.from_dict(
        tensors={"prompts": torch.zeros((len(cases), 2), dtype=torch.long),
                 "responses": torch.tensor([ids + [tok.pad_token_id] * (width - len(ids)) for ids in encoded]),
                 "attention_mask": torch.tensor([[1, 1] + [1] * len(ids) + [0] * (width - len(ids))
                                                 for ids in encoded])},
        non_tensors={"data_source": np.array(["rl_foundations_llm/strict_final_v1"] * len(cases), dtype=object),
                     "reward_model": np.array([{"ground_truth": truth} for _, truth in cases], dtype=object)},
    )


def _course_verdicts(cases: list[tuple[str, object]]) -> tuple[list[float], list[str]]:
    verdicts = [score({"expected_answer": int(truth)}, text) for text, truth in cases]
    return [v["reward"] for v in verdicts], [v["details"]["error_code"] for v in verdicts]


def _main_eval(tmp_path: Path, name: str) -> subprocess.CompletedProcess:
    """``python -m verl.trainer.main_eval`` over the frozen dev rollouts (one data source) and the dev pack
    (another), with the keys of docs/bridges.md, on a local Ray of 2 CPUs."""
    import pandas as pd

    from course.integrations.verl import verl_eval_rows

    frozen = verl_eval_rows(str(DEV), str(FROZEN))
    pack = [row | {"data_source": "pack"} for row in verl_eval_rows(str(DEV), str(PACK))]
    parquet = tmp_path / "verl_eval.parquet"
    pd.DataFrame(frozen + pack).to_parquet(parquet)
    env = dict(os.environ, RAY_AUTH_MODE="disabled")
    return subprocess.run(
        [sys.executable, "-m", "verl.trainer.main_eval", f"data.path={parquet}",
         f"+reward.custom_reward_function.path={BRIDGE}", f"+reward.custom_reward_function.name={name}",
         "ray_kwargs.ray_init.num_cpus=2", "+ray_kwargs.ray_init.include_dashboard=False",
         f"hydra.run.dir={tmp_path / 'hydra'}"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300,
    )


@needs_verl
def test_main_eval_with_compute_reward_prints_the_course_pass_rate_and_mean_pass_at_1(tmp_path):
    from course.lib.selection.policy_comparison import compare_policies

    done = _main_eval(tmp_path, "compute_reward")
    assert done.returncode == 0, done.stderr[-2000:]
    line = next(x for x in done.stdout.splitlines() if x.startswith("{'test_score/"))
    scores = {k: float(v) for k, v in eval(line.replace("np.float64", "float")).items()}  # noqa: S307 - verl's own print
    table = compare_policies(str(DEV), [("pack", str(PACK))], k=1)
    assert scores["test_score/rl_foundations_llm/strict_final_v1"] == pytest.approx(0.30)  # course.eval's 30/100
    assert scores["test_score/pack"] == pytest.approx(table["columns"][0]["pass_at_1"])


@needs_verl
def test_main_eval_with_compute_score_fails_because_it_averages_dicts(tmp_path):
    done = _main_eval(tmp_path, "compute_score")
    assert done.returncode != 0 and "TypeError" in done.stderr


@pytest.fixture(scope="module")
def local_ray():
    """A local Ray of 2 CPUs, no dashboard, no token written to the home directory; shut down after the module.
    The main_eval tests come first in this file: they start a Ray of their own, and two on 2 cores would compete."""
    ray = pytest.importorskip("ray")
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield ray
    ray.shutdown()


@needs_verl
def test_the_reward_loop_and_its_ray_workers_score_like_course_score(local_ray, byte_tokenizer_dir):
    from verl.experimental.reward_loop import RewardLoopManager

    cases = _hostile_and_frozen()
    rewards, codes = _course_verdicts(cases)
    config = _ppo_config(_bridge_keys(byte_tokenizer_dir, "reward.num_workers=2"))
    out = RewardLoopManager(config).compute_rm_score(_data_proto(byte_tokenizer_dir, cases))
    assert out.batch["rm_scores"].sum(dim=-1).tolist() == rewards
    assert list(out.non_tensor_batch["error_code"]) == codes
    assert sum(rewards[:100]) == 30  # the frozen dev rollouts: course.eval's 30/100
    assert {"score", "error_code", "parsed", "scorer_version", "reason"} <= set(out.meta_info["reward_extra_keys"])


@needs_verl
@pytest.mark.parametrize("manager", ["naive", "dapo", "gdpo", "rate_limited"])
def test_every_reward_manager_of_verl_0_9_takes_the_dict_and_logs_the_error_code(byte_tokenizer_dir, manager):
    from transformers import AutoTokenizer
    from verl.trainer.ppo.reward import load_reward_manager

    cases = [("Final: 323", "323"), ("Final:63", "63"), ("Final: 7.", "7")]
    data = _data_proto(byte_tokenizer_dir, cases)
    config = _ppo_config(_bridge_keys(byte_tokenizer_dir, f"reward.reward_manager.name={manager}"))
    rm = load_reward_manager(config, AutoTokenizer.from_pretrained(str(byte_tokenizer_dir)))
    outs = [rm.loop.run_until_complete(rm.run_single(data[i:i + 1])) for i in range(len(cases))]
    assert ([o["reward_score"] for o in outs],
            [o["reward_extra_info"]["error_code"] for o in outs]) == _course_verdicts(cases)


@needs_verl
def test_the_legacy_top_level_keys_are_not_read_by_main_ppo_and_prime_is_gone(byte_tokenizer_dir):
    from verl.experimental.reward_loop.reward_manager import get_reward_manager_cls
    from verl.utils.reward_score import default_compute_score

    legacy = _ppo_config([f"custom_reward_function.path={BRIDGE}", "custom_reward_function.name=compute_score"])
    assert legacy.reward.custom_reward_function.path is None  # main_ppo never migrates them
    with pytest.raises(NotImplementedError, match="rl_foundations_llm/strict_final_v1"):
        default_compute_score("rl_foundations_llm/strict_final_v1", "Final: 323", "323")  # what it falls back to
    with pytest.raises(ValueError, match="Unknown reward manager: prime"):
        get_reward_manager_cls("prime")


@needs_verl
def test_ray_data_hands_numpy_integers_that_score_batch_reads_and_course_score_alone_does_not(local_ray):
    from course.integrations.batch import score_batch

    cases = _hostile_and_frozen()[:100]
    rows = [{"completion": text, "expected_answer": int(truth)} for text, truth in cases]
    seen = []

    def scored(batch):
        seen.append(type(batch["expected_answer"][0]).__name__)
        bare = [score({"expected_answer": a}, c)["details"]["error_code"]
                for a, c in zip(batch["expected_answer"], batch["completion"])]
        return {**batch, **score_batch(batch), "bare_code": bare}

    out = local_ray.data.from_items(rows).map_batches(scored, batch_format="numpy", batch_size=25).take_all()
    rewards, codes = _course_verdicts(cases)
    assert [r["reward"] for r in out] == rewards and [r["error_code"] for r in out] == codes
    assert {r["bare_code"] for r in out} == {"bad_example"}  # what calling the instrument on numpy values gives
