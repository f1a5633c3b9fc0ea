"""course.lib.learning.rl_loop: the one RL loop of the course, driven through its policy interface.

These tests use the tiny LM (a 1-layer random network, milliseconds per step) as the policy;
tests/test_llm_rl.py drives the same functions with the real LLM's policy.
"""

from __future__ import annotations

import importlib.util

import pytest
from rl_toy import TOY, loop_settings

pytestmark = pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                                reason="the lm extra (PyTorch) is not installed")

settings = loop_settings  # the toy settings tests/test_llm_rl.py uses too (tests/rl_toy.py)


def tiny_lm_policy():  # type: ignore[no-untyped-def]
    import torch

    from course.lib.policy.sampling import set_threads
    from course.tinylm.model import GPT, GPTConfig
    from course.tinylm.policy import TinyLMPolicy

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
        return {"reward": 1.0 if text in texts else 0.0,
                "details": {"error_code": "ok" if text in texts else "wrong_answer"}}
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
    from course.lib.learning.rl_loop import Trained
    from course.lib.learning.rl_run import run_summary

    ev = {"step": 0, "slice_strict_pass": 0.0}
    base = dict(policy=tiny_lm_policy(), final_file="final.pt", final_sha="0" * 64, final_name="tinylm:000000000000",
                records=[{"step": 1, "reward": 0.0, "strict_pass_train": 0.0, "kl_k1_per_token": 0.0,
                          "kl_k3_per_token": 0.0, "kl_k1_per_sample": 0.0, "entropy_per_token": 1.0,
                          "no_signal_groups": 1.0, "truncated_share": 0.0, "multi_number_share": 0.0}],
                evals=[ev], alarms=[], log_sha256="x", train_seconds=1.0)
    assert "skipped_updates" not in run_summary(settings(), Trained(**base, skipped_updates=0))
    assert run_summary(settings(), Trained(**base, skipped_updates=3))["skipped_updates"] == 3


# ---------------------------------------------------------------------------
# Zero-signal accounting and the objective's switches
# ---------------------------------------------------------------------------
def test_a_step_counts_the_samples_whose_advantage_carried_a_gradient() -> None:
    import torch

    from course.lib.learning.rl_loop import reinforce_step

    policy = tiny_lm_policy()
    s = settings()
    seeds = [f"rl:{s.seed}:1:{i}:{j}" for i in range(2) for j in range(4)]
    ro = policy.generate([p.prompt for p in TOY], seeds, group=4, temperature=1.0, max_tokens=s.max_tokens)
    paid = {ro.texts[0]} - set(ro.texts[1:])
    assert paid  # (the toy's draws: sample 0 is unlike every other)
    opt = torch.optim.Adam(policy.parameters(), lr=s.lr)
    rec = reinforce_step(s, 1, policy, opt, paying(paid), TOY)
    # group 1: one sample paid, so all four advantages are non-zero; group 2: all equal, none
    assert rec["pg_samples"] == 4 and rec["no_signal_groups"] == 0.5


def test_a_step_without_any_reward_signal_counts_zero_samples() -> None:
    import torch

    from course.lib.learning.rl_loop import reinforce_step

    policy = tiny_lm_policy()
    rec = reinforce_step(settings(), 1, policy, torch.optim.Adam(policy.parameters()), paying(set()), TOY)
    assert rec["pg_samples"] == 0 and "kl_penalty_in_reward" not in rec


def test_kl_in_the_reward_gives_every_sample_an_advantage_once_pi_has_left_pi0() -> None:
    """Every task reward equal (no signal from the reward) but pi != pi0: the KL subtracted from the
    reward differs between samples, so every sample carries the KL's gradient; nothing goes in the loss."""
    import torch

    from course.lib.learning.rl_loop import reinforce_step

    policy = tiny_lm_policy()
    with torch.no_grad():
        for p in policy.parameters():
            p.add_(0.05 * torch.ones_like(p))
    s = settings(beta=0.5, kl_in="reward", kl_estimator="k1")
    rec = reinforce_step(s, 1, policy, torch.optim.Adam(policy.parameters(), lr=s.lr), paying(set()), TOY)
    assert rec["no_signal_groups"] == 1.0 and rec["pg_samples"] == 8
    assert rec["kl_loss"] == 0.0 and rec["kl_penalty_in_reward"] != 0.0 and "update_skipped" not in rec


def test_the_summary_accounts_for_the_zero_signal_steps_and_names_the_objective() -> None:
    from course.lib.learning.rl_loop import Trained
    from course.lib.learning.rl_run import run_summary

    recs = [{"step": i, "reward": 0.0, "strict_pass_train": 0.0, "kl_k1_per_token": 0.0, "kl_k3_per_token": 0.0,
             "kl_k1_per_sample": 0.0, "entropy_per_token": 1.0, "no_signal_groups": g, "pg_samples": n,
             "truncated_share": 0.0, "multi_number_share": 0.0} for i, (g, n) in enumerate([(1.0, 0), (0.5, 4)], 1)]
    t = Trained(policy=tiny_lm_policy(), final_file="final.pt", final_sha="0" * 64, final_name="tinylm:0", records=recs,
                evals=[{"step": 0}], alarms=[], log_sha256="x", train_seconds=1.0, skipped_updates=1)
    summary = run_summary(settings(loss_norm="seq-mean"), t)
    assert summary["zero_signal"] == {"no_signal_groups_mean": 0.75, "steps_without_pg_signal": 1, "pg_samples": 4,
                                      "samples": 16}
    assert summary["objective"] == {"kl_estimator": "k3", "kl_in": "loss", "loss_norm": "seq-mean",
                                    "scale_rewards": "none"}


def test_the_default_loss_is_the_loops_original_formula_to_the_last_bit() -> None:
    """Defaults keep today's behaviour: -sum(A log pi)/B + beta * sum(k3)/B, computed in that order."""
    import torch

    from course.lib.learning.rl_objective import policy_loss

    g = torch.Generator().manual_seed(0)
    logp = (-torch.rand(6, 5, generator=g) * 3).requires_grad_(True)
    ref = -torch.rand(6, 5, generator=g) * 3
    mask = torch.rand(6, 5, generator=g) > 0.3
    adv = torch.randn(6, generator=g)
    loss, _ = policy_loss(logp, ref, mask, adv, 0.05)
    m = mask.float()
    lr_ = (logp - ref) * m
    old = -(adv[:, None] * logp * m).sum() / 6 + 0.05 * ((torch.exp(-lr_) - 1 + lr_) * m).sum() / 6
    assert torch.equal(loss, old)
    assert torch.equal(torch.autograd.grad(loss, logp)[0], torch.autograd.grad(old, logp)[0])


@pytest.mark.parametrize("norm", ["constant", "seq-mean", "token-mean"])
@pytest.mark.parametrize("scale", ["none", "group"])
def test_the_loss_gradient_on_each_token_is_the_normalisation_microscopes_weight(norm: str, scale: str) -> None:
    import torch

    from course.lib.learning import loss_normalisation as ln
    from course.lib.learning.rl_objective import group_advantages, policy_loss

    rewards, lengths = [1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0], [3, 7, 2, 5, 4, 4, 6, 1]
    mask = torch.tensor([[t < n for t in range(7)] for n in lengths])
    logp = torch.full((8, 7), -1.0, requires_grad=True)
    adv = group_advantages(torch.tensor(rewards).view(2, 4), scale)
    loss, _ = policy_loss(logp, logp.detach(), mask, adv, 0.0, loss_norm=norm)
    grad = torch.autograd.grad(loss, logp)[0]
    want = ln.token_weights(rewards, lengths, group=4, norm=norm, scale=scale)
    for i, n in enumerate(lengths):
        assert torch.allclose(grad[i, :n], torch.full((n,), -want[i]), atol=1e-6)
        assert torch.all(grad[i, n:] == 0)


@pytest.mark.parametrize("name", ["k1", "k2", "k3", "k3-corrected"])
def test_the_kl_term_in_the_loss_has_the_microscopes_slope_on_each_token(name: str) -> None:
    import torch

    from course.lib.learning import kl_estimators as kl
    from course.lib.learning.rl_objective import policy_loss

    logp = torch.tensor([[-0.5, -2.0], [-1.0, -0.1]], dtype=torch.float64, requires_grad=True)
    ref = torch.tensor([[-1.5, -1.0], [-1.0, -2.0]], dtype=torch.float64)
    mask = torch.ones(2, 2, dtype=torch.bool)
    loss, _ = policy_loss(logp, ref, mask, torch.zeros(2, dtype=torch.float64), 1.0, kl_estimator=name)
    grad = torch.autograd.grad(loss, logp)[0]
    for i in range(2):
        for t in range(2):
            slope = kl.estimator_slope(name, float(ref[i, t] - logp.detach()[i, t]))
            assert float(grad[i, t]) == pytest.approx(slope / 2, abs=1e-12)  # / B


def test_an_unknown_choice_is_refused_by_name() -> None:
    import torch

    from course.lib.learning.rl_objective import policy_loss

    x = torch.zeros(1, 1)
    with pytest.raises(ValueError, match="loss_norm"):
        policy_loss(x, x, x > -1, torch.zeros(1), 0.0, loss_norm="per-token")


def test_the_kl_estimator_defaults_to_k3_in_the_loss_and_k1_in_the_reward() -> None:
    from course.tinylm import rl

    for argv, want in (([], "k3"), (["--kl-in", "reward"], "k1"),
                       (["--kl-in", "reward", "--kl-estimator", "k3"], "k3")):
        assert rl.settings(rl.build_parser().parse_args(argv)).kl_estimator == want


def test_the_objective_flags_default_to_k3_in_the_loss_constant_norm_and_unscaled_rewards() -> None:
    from course.tinylm import rl

    s = rl.settings(rl.build_parser().parse_args([]))
    assert (s.kl_estimator, s.kl_in, s.loss_norm, s.scale_rewards) == ("k3", "loss", "constant", "none")
    with pytest.raises(SystemExit):
        rl.build_parser().parse_args(["--loss-norm", "per-token"])


# ---------------------------------------------------------------------------
# Dynamic sampling (DAPO): more draws until the batch's groups carry a signal
# ---------------------------------------------------------------------------
def test_dynamic_sampling_is_off_by_default_and_its_cap_is_checked_by_the_parser(capsys) -> None:
    from course.tinylm import rl

    assert rl.settings(rl.build_parser().parse_args([])).dynamic_sampling == 1
    for bad in ("0", "17"):
        with pytest.raises(SystemExit) as exc:
            rl.build_parser().parse_args(["--dynamic-sampling", bad])
        assert exc.value.code == 2 and "--dynamic-sampling" in capsys.readouterr().err


def _draw_texts(policy, s, step: int, draw: int) -> list[str]:  # type: ignore[no-untyped-def]
    """The completions reinforce_step's draw ``draw`` samples for TOY at ``step`` (its seeds, restated)."""
    prefix = f"rl:{s.seed}:{step}" if draw == 0 else f"rl:{s.seed}:{step}:d{draw}"
    seeds = [f"{prefix}:{i}:{j}" for i in range(2) for j in range(4)]
    return policy.generate([p.prompt for p in TOY], seeds, group=4, temperature=1.0, max_tokens=s.max_tokens).texts


def test_dynamic_sampling_draws_again_until_a_group_has_a_signal_and_trains_on_it_first() -> None:
    """Only one completion of the second draw is paid: the first draw has no signal, so the step draws
    again (and, still short of P = 2 signal groups, a third time), then trains on the signal group
    first and fills the batch with the first draw's flat group; the record says what was drawn."""
    import torch

    from course.lib.learning.rl_loop import reinforce_step

    policy = tiny_lm_policy()
    s = settings(dynamic_sampling=3)
    drawn = [_draw_texts(policy, s, 1, d) for d in range(3)]
    paid = {drawn[1][0]} - set(drawn[0]) - set(drawn[1][1:]) - set(drawn[2])
    assert paid  # (the toy's draws: that completion appears nowhere else)
    rec = reinforce_step(s, 1, policy, torch.optim.Adam(policy.parameters(), lr=s.lr), paying(paid), TOY,
                         more=lambda: list(TOY))
    assert rec["dynamic_sampling"]["draws"] == 3 and rec["dynamic_sampling"]["groups_drawn"] == 6
    assert rec["dynamic_sampling"]["no_signal_groups_drawn"] == round(5 / 6, 6)
    assert rec["no_signal_groups"] == 0.5 and rec["pg_samples"] == 4  # the trained batch: one signal group of two
    assert rec["example"] == drawn[1][0]  # the signal group comes first
    assert rec["reward"] == 1 / 8 and rec["dynamic_sampling"]["reward_drawn"] == round(1 / 24, 6)


def test_dynamic_sampling_stops_drawing_once_the_first_draw_has_enough_signal() -> None:
    import torch

    from course.lib.learning.rl_loop import reinforce_step

    policy = tiny_lm_policy()
    s = settings(dynamic_sampling=4)
    texts = _draw_texts(policy, s, 1, 0)
    paid = {texts[0], texts[4]} - set(texts[1:4]) - set(texts[5:])
    assert len(paid) == 2
    rec = reinforce_step(s, 1, policy, torch.optim.Adam(policy.parameters(), lr=s.lr), paying(paid), TOY,
                         more=lambda: pytest.fail("no second draw was needed"))
    assert rec["dynamic_sampling"]["draws"] == 1 and rec["no_signal_groups"] == 0.0


def test_without_dynamic_sampling_the_record_has_no_draw_accounting() -> None:
    import torch

    from course.lib.learning.rl_loop import reinforce_step

    policy = tiny_lm_policy()
    s = settings()
    rec = reinforce_step(s, 1, policy, torch.optim.Adam(policy.parameters(), lr=s.lr), paying(set()), TOY)
    assert "dynamic_sampling" not in rec


def test_groups_taken_from_two_batches_keep_each_completions_log_probabilities() -> None:
    """take_groups re-pads prompts and completions of different widths; what fills the padding is never
    read, so each row's log-probabilities are those it had in its own batch."""
    import torch

    from course.lib.policy.sampling import take_groups

    policy = tiny_lm_policy()
    a = policy.generate([TOY[0].prompt], [f"a:{j}" for j in range(3)], group=3, temperature=1.0, max_tokens=6)
    b = policy.generate(["Compute 17 * 19 and then add 4. Output exactly one line: Final: <int>"],
                        [f"b:{j}" for j in range(3)], group=3, temperature=1.0, max_tokens=3)
    both = take_groups([(b, 0), (a, 0)])
    assert (both.texts == b.texts + a.texts
            and both.prompt_tokens.shape[1] == max(a.prompt_tokens.shape[1], b.prompt_tokens.shape[1]))
    with torch.no_grad():
        got = policy.logprobs(both)[0]
        for rows, ro in ((slice(0, 3), b), (slice(3, 6), a)):
            own = policy.logprobs(ro)[0]
            k = own.shape[1]
            assert torch.allclose(got[rows, :k], own, atol=1e-5) and not got[rows, k:].any()


def test_a_warm_start_is_measured_on_the_holdout_beside_pi0_and_the_final_policy_and_rl_is_gated_against_it(
        tmp_path) -> None:
    """The starting point's context makes the policy compute as pi0 here: its pack is pi0's samples
    (same seeds), RL's own part is then the whole lift, and it has its own gate report."""
    import contextlib
    import json

    from course.lib.learning.rl_loop import Trained
    from course.lib.learning.rl_run import StartingPoint, holdout_comparison

    policy = tiny_lm_policy()

    @contextlib.contextmanager
    def as_pi0():  # type: ignore[no-untyped-def]
        model = policy.model
        policy.model = policy.ref
        try:
            yield
        finally:
            policy.model = model

    trained = Trained(policy=policy, final_file="final.pt", final_sha="0" * 64, final_name="tinylm:final", records=[],
                      evals=[], alarms=[], log_sha256="x", train_seconds=0.0, skipped_updates=0)
    quiet = type("Quiet", (), {"update": lambda self, n: None, "clear": lambda self: None,
                               "info": lambda self, m: None})
    h = holdout_comparison(settings(), tmp_path, tmp_path, trained, [], progress=lambda label, n: quiet(),
                           say=lambda m: None, start=StartingPoint("tinylm:start", as_pi0))
    texts = {tag: [json.loads(line)["completion"]
                   for line in (tmp_path / f"holdout_{tag}_pack.jsonl").read_text().splitlines()]
             for tag in ("pi0", "warm_start")}  # (one sample per item: rollouts lines)
    assert texts["pi0"] == texts["warm_start"]
    assert h["warm_start"]["policy"] == "tinylm:start" and h["warm_start_over_pi0"]["lift_pass_at_1"] == 0.0
    assert h["rl_over_warm_start"]["lift_pass_at_1"] == h["lift_pass_at_1"]
    assert (h["rl_over_warm_start"]["gate"]["verdict"] in ("ACCEPT", "REJECT")
            and "p_value" in h["rl_over_warm_start"]["gate"])
    assert ((tmp_path / "gate_rl.txt").read_text().startswith("Baseline ")
            and (tmp_path / "eval_warm_start_holdout").is_dir())


def test_trls_k3_corrected_in_the_loop_logs_k3s_value_and_takes_another_step() -> None:
    """The same step with k3 and with k3-corrected: the KL term's value is the same (the ratio's value is 1),
    the update is not (its gradient follows the reverse KL)."""
    import torch

    from course.lib.learning.rl_loop import reinforce_step

    out = {}
    for name in ("k3", "k3-corrected"):
        policy = tiny_lm_policy()
        with torch.no_grad():
            for p in policy.parameters():
                p.add_(0.05 * torch.ones_like(p))
        s = settings(beta=0.5, kl_estimator=name)
        rec = reinforce_step(s, 1, policy, torch.optim.SGD(policy.parameters(), lr=0.1), paying(set()), TOY)
        out[name] = (rec["kl_loss"], [p.detach().clone() for p in policy.parameters()])
    assert out["k3"][0] == pytest.approx(out["k3-corrected"][0], rel=1e-6) and out["k3"][0] > 0
    assert max(float((a - b).abs().max()) for a, b in zip(out["k3"][1], out["k3-corrected"][1])) > 1e-6


def test_drawing_ahead_trains_on_the_groups_drawing_one_at_a_time_picks() -> None:
    """Three draws sampled in one batch (signal_share says one group in ten has a signal) give the step the
    same record as three draws made one after the other: each row keeps its own seed."""
    import torch

    from course.lib.learning.rl_loop import reinforce_step

    s = settings(dynamic_sampling=3)
    drawn = [_draw_texts(tiny_lm_policy(), s, 1, d) for d in range(3)]
    paid = {drawn[1][0]} - set(drawn[0]) - set(drawn[1][1:]) - set(drawn[2])
    assert paid
    records = []
    for ahead in (False, True):
        policy = tiny_lm_policy()
        given: list = []
        records.append(reinforce_step(s, 1, policy, torch.optim.Adam(policy.parameters(), lr=s.lr), paying(paid),
                                      TOY, more=lambda: list(TOY), give_back=given.append if ahead else None,
                                      signal_share=0.1 if ahead else None))
        assert given == []  # every draw sampled was needed
    assert records[0] == records[1] and records[1]["dynamic_sampling"]["draws"] == 3


def test_a_draw_sampled_ahead_but_not_needed_goes_back_to_the_stream_and_is_counted() -> None:
    import torch

    from course.lib.learning.rl_loop import ProblemSource, reinforce_step

    policy = tiny_lm_policy()
    s = settings(dynamic_sampling=3)
    texts = _draw_texts(policy, s, 1, 0)
    paid = {texts[0], texts[4]} - set(texts[1:4]) - set(texts[5:])  # the first draw has a signal in both groups
    source = ProblemSource(iter([f"p{i}" for i in range(6)]), 2)
    taken = source.take()
    rec = reinforce_step(s, 1, policy, torch.optim.Adam(policy.parameters(), lr=s.lr), paying(paid), TOY,
                         more=lambda: list(TOY), give_back=source.give_back, signal_share=0.0)  # 0: draw all three
    assert rec["dynamic_sampling"]["draws"] == 1 and rec["dynamic_sampling"]["unused_draws"] == 2
    assert rec["no_signal_groups"] == 0.0
    assert taken == ["p0", "p1"] and source.take() == list(TOY) and source.take() == list(TOY)  # given back, in order
    assert source.take() == ["p2", "p3"]  # then the stream goes on where it was


def test_how_far_to_draw_ahead_follows_the_last_share_of_groups_with_a_signal() -> None:
    from course.lib.learning.rl_loop import draws_ahead

    assert draws_ahead(4, 8, 8, None) == 1  # nothing known yet: one draw
    assert draws_ahead(4, 8, 8, 0.25) == 4 and draws_ahead(4, 8, 8, 0.5) == 2 and draws_ahead(4, 8, 8, 1.0) == 1
    assert draws_ahead(3, 8, 8, 0.1) == 3  # never past the cap
    assert draws_ahead(4, 2, 8, 0.25) == 1 and draws_ahead(4, 8, 8, 0.0) == 4


def by_characters(example, text):  # type: ignore[no-untyped-def]
    """A rubric that pays completions whose character codes add up to an even number: mixed rewards in most
    groups, with no texts chosen by hand."""
    even = sum(map(ord, text)) % 2 == 0
    return {"reward": float(even), "details": {"error_code": "ok" if even else "wrong_answer"}}


@pytest.mark.parametrize("loss_norm", ["constant", "seq-mean", "token-mean"])
@pytest.mark.parametrize("kl_in", ["loss", "reward"])
def test_the_gradient_pass_in_two_parts_gives_the_one_pass_gradient(loss_norm: str, kl_in: str) -> None:
    """grad_chunks 2: each part's loss weighted by its share of the batch's divisor, the gradients added;
    the sum is the one-pass gradient (float rounding apart), and the record's figures are the same."""
    import torch

    from course.lib.learning.rl_loop import reinforce_step

    grads, recs = {}, {}
    for chunks in (1, 2):
        policy = tiny_lm_policy()
        with torch.no_grad():
            for p in policy.parameters():
                p.add_(0.05 * torch.sin(torch.arange(p.numel(), dtype=p.dtype)).view_as(p))  # pi != pi0: a KL slope
        s = settings(beta=0.1, loss_norm=loss_norm, kl_in=kl_in, grad_chunks=chunks, grad_clip=1e6)
        opt = torch.optim.SGD(policy.parameters(), lr=0.0)  # no move: the gradient stays in .grad
        recs[chunks] = reinforce_step(s, 1, policy, opt, by_characters, TOY)
        grads[chunks] = [p.grad.detach().clone() for p in policy.parameters()]
    assert recs[1]["pg_samples"] > 0 and recs[1]["kl_k1_per_token"] != 0.0
    assert any(float(g.abs().max()) > 0 for g in grads[1])
    for a, b in zip(grads[1], grads[2]):
        assert torch.allclose(a, b, rtol=1e-4, atol=1e-7)
    for key in ("pg_loss", "kl_loss", "grad_norm", "entropy_per_token", "kl_k1_per_token", "reward", "pg_samples"):
        assert recs[2][key] == pytest.approx(recs[1][key], rel=1e-4, abs=1e-7), key


def test_grad_chunks_larger_than_the_prompts_per_step_is_refused() -> None:
    from course.errors import CourseError

    with pytest.raises(CourseError, match="--grad-chunks must be at most --prompts-per-step"):
        settings(grad_chunks=3)  # 2 prompts per step: a part would hold no group


def test_under_token_mean_each_part_weighs_by_its_share_of_the_batchs_tokens() -> None:
    """Two parts with different token counts (the first prompt's completions cut to 2 tokens): weighting each
    part by its share of the samples instead of its share of the tokens would give another gradient."""
    from dataclasses import replace

    import torch

    from course.lib.learning.rl_loop import gradient_pass

    policy = tiny_lm_policy()
    with torch.no_grad():
        for p in policy.parameters():
            p.add_(0.05 * torch.sin(torch.arange(p.numel(), dtype=p.dtype)).view_as(p))
    s = settings(beta=0.1, loss_norm="token-mean", group_size=4)
    ro = policy.generate([p.prompt for p in TOY], [f"t{i}" for i in range(8)], group=4, temperature=1.0, max_tokens=6)
    ro.mask[:4, 2:] = False  # prompt 0's completions: 2 tokens each; prompt 1's keep theirs
    assert int(ro.mask[:4].sum()) < int(ro.mask[4:].sum())
    rewards = torch.tensor([1.0, 0.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0])
    with torch.no_grad():
        ref = policy.reference_logprobs(ro)
    grads = {}
    for chunks in (1, 2):
        for p in policy.parameters():
            p.grad = None
        gradient_pass(replace(s, grad_chunks=chunks), policy, ro, rewards, ref)
        grads[chunks] = [p.grad.detach().clone() for p in policy.parameters()]
    for a, b in zip(grads[1], grads[2]):
        assert torch.allclose(a, b, rtol=1e-4, atol=1e-7)
