"""course.lib.learning.rl_loop: the one RL loop of the course, driven through its policy interface.

These tests use the tiny LM (a 1-layer random network, milliseconds per step) as the policy;
tests/test_llm_rl.py drives the same functions with the real LLM's policy.
"""

from __future__ import annotations

import importlib.util

import pytest

from rl_toy import TOY, loop_settings

pytestmark = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="the lm extra (PyTorch) is not installed")

settings = loop_settings  # the toy settings tests/test_llm_rl.py uses too (tests/rl_toy.py)


def tiny_lm_policy():  # type: ignore[no-untyped-def]
    import torch

    from course.tinylm.model import GPT, GPTConfig
    from course.tinylm.policy import TinyLMPolicy, set_threads

    set_threads(1)
    torch.manual_seed(0)  # the test's random network (the course's code never seeds globally)
    cfg = GPTConfig(n_layer=1, n_head=2, n_embd=32, block_size=96)
    model, ref = GPT(cfg), GPT(cfg)
    ref.load_state_dict(model.state_dict())
    for p in ref.parameters():
        p.requires_grad_(False)
    info = {"policy": "tinylm:toy", "n_params": sum(p.numel() for p in model.parameters())}
    return TinyLMPolicy(model, ref, info, info, 1)


def paying(texts: set[str]):  # type: ignore[no-untyped-def]
    """A rubric that pays 1 for the listed completions and 0 for any other."""
    def rubric(example, text):  # type: ignore[no-untyped-def]
        return {"reward": 1.0 if text in texts else 0.0, "details": {"error_code": "ok" if text in texts else "wrong_answer"}}
    return rubric


def test_a_step_whose_rewards_are_all_equal_makes_no_update_even_when_adam_has_momentum() -> None:
    """beta 0 and one reward for every sample: the gradient is exactly zero. Adam with momentum from
    an earlier step would still move every weight (m != 0); the loop skips the step and says so."""
    import torch

    from course.lib.learning.rl_loop import reinforce_step

    policy = tiny_lm_policy()
    s = settings()
    opt = torch.optim.Adam(policy.parameters(), lr=s.lr, betas=(0.9, 0.99))
    opt.zero_grad()
    sum(p.sum() for p in policy.parameters()).backward()  # an update of our own: Adam now has momentum
    opt.step()
    before = [p.detach().clone() for p in policy.parameters()]
    rec = reinforce_step(s, 1, policy, opt, paying(set()), TOY)  # every reward 0
    assert rec["update_skipped"] is True and rec["no_signal_groups"] == 1.0 and rec["grad_norm"] == 0.0
    assert all(torch.equal(b, p.detach()) for b, p in zip(before, policy.parameters()))


def test_a_step_with_signal_updates_and_its_record_has_no_skip_mark() -> None:
    import torch

    from course.lib.learning.rl_loop import reinforce_step

    policy = tiny_lm_policy()
    s = settings()
    seeds = [f"rl:{s.seed}:1:{i}:{j}" for i in range(2) for j in range(4)]  # the rows reinforce_step draws at step 1
    ro = policy.generate([p.prompt for p in TOY], seeds, group=4, temperature=1.0, max_tokens=s.max_tokens)
    opt = torch.optim.Adam(policy.parameters(), lr=s.lr, betas=(0.9, 0.99))
    before = [p.detach().clone() for p in policy.parameters()]
    rec = reinforce_step(s, 1, policy, opt, paying({ro.texts[0]} - set(ro.texts[1:4])), TOY)
    assert "update_skipped" not in rec and rec["reward"] > 0
    assert not all(torch.equal(b, p.detach()) for b, p in zip(before, policy.parameters()))


def test_the_kl_term_alone_moves_a_policy_that_has_left_pi0() -> None:
    """Every advantage 0 but beta > 0 and pi != pi0: the k3 penalty has a slope, so the step is made."""
    import torch

    from course.lib.learning.rl_loop import reinforce_step

    policy = tiny_lm_policy()
    with torch.no_grad():
        for p in policy.parameters():
            p.add_(0.05 * torch.ones_like(p))  # the policy has drifted from pi0
    s = settings(beta=0.5)
    opt = torch.optim.Adam(policy.parameters(), lr=s.lr, betas=(0.9, 0.99))
    rec = reinforce_step(s, 1, policy, opt, paying(set()), TOY)
    assert "update_skipped" not in rec and rec["kl_loss"] > 0


def test_the_summary_counts_skipped_updates_only_when_there_were_some() -> None:
    from course.lib.learning.rl_loop import Trained, run_summary

    ev = {"step": 0, "slice_strict_pass": 0.0}
    base = dict(policy=tiny_lm_policy(), final_file="final.pt", final_sha="0" * 64, final_name="tinylm:000000000000",
                records=[{"step": 1, "reward": 0.0, "strict_pass_train": 0.0, "kl_k1_per_token": 0.0, "kl_k3_per_token": 0.0,
                          "kl_k1_per_sample": 0.0, "entropy_per_token": 1.0, "no_signal_groups": 1.0,
                          "truncated_share": 0.0, "multi_number_share": 0.0}],
                evals=[ev], alarms=[], log_sha256="x", train_seconds=1.0)
    assert "skipped_updates" not in run_summary(settings(), Trained(**base, skipped_updates=0))
    assert run_summary(settings(), Trained(**base, skipped_updates=3))["skipped_updates"] == 3
