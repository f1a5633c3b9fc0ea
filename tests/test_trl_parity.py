"""Loss parity with TRL: the course loop's loss and gradient beside TRL GRPOTrainer's, on one fixed batch.

One batch (prompt and completion tokens of different lengths, rewards, a frozen reference) and one
small model (an embedding and a linear layer, float64). TRL's own ``GRPOTrainer._compute_loss`` is
called on a stand-in for the trainer that holds only the attributes the loss reads (a full trainer
would build a tokenizer, a dataset and an optimizer for nothing), each taken from TRL's DEFAULT
``GRPOConfig`` unless a test overrides it; the course's is ``rl_objective.policy_loss``. What must match,
to what tolerance:

* TRL's default config (loss_type dapo, scale_rewards group, beta 0: no KL term): the GRADIENT is
  the course's ``--loss-norm token-mean --scale-rewards group`` to 1e-10 (float64).
* With a KL term (beta 0.04, the GRPO paper's; TRL's default 0 switches it off) the KL term is TRL's
  default, ``use_bias_correction_kl=True`` (k3 x pi/pi_old, pi_old = sg(pi) on-policy: value k3,
  gradient the reverse KL's), beside the course's ``--kl-estimator k3-corrected``; and the one
  non-default setting, ``use_bias_correction_kl=False``, is there because it is the GRPO paper's plain
  k3 (gradient: the forward KL), the course's default ``--kl-estimator k3``. Each loss_type x beta x
  scale_rewards: the GRADIENT on every parameter equal to 1e-10 for grpo <-> seq-mean, bnpo and
  dapo <-> token-mean; dr_grpo <-> constant: TRL's is the course's divided by max_completion_length
  (a fixed factor: TRL divides by B x max_completion_length, the course by B). Each KL term's match
  fails with the other estimator (their gradients differ).
* VALUE: differs on purpose. TRL's policy term per token is -A * pi/pi_old (importance ratio,
  = -A on-policy: the value is just minus the mean advantage), the course's is -A * log pi (the
  REINFORCE surrogate). On-policy their gradients are the same, -A * grad log pi. The KL term's value
  is k3 in both, with or without the correction (its ratio's value is 1), normalised the same way.
* What TRL does not offer is not compared: the course's --kl-in reward (TRL puts the KL only in
  the loss) and the k1/k2 estimators in the loss.

The advantages: TRL computes them inside generation (``_generate_and_score_completions``); the
test reproduces its two lines with TRL's own ``nanstd`` and checks the course's ``group_advantages``.
"""

from __future__ import annotations

import dataclasses
import importlib.util
from collections import defaultdict
from types import SimpleNamespace
from typing import Any

import pytest

pytestmark = [
    pytest.mark.skipif(importlib.util.find_spec("trl") is None,
                       reason="the trl extra (trl, transformers, datasets) is not installed"),
    # importing trl (transformers, accelerate) takes ~10 s on a shared CPU; the comparisons, well under 1 s
    pytest.mark.slow,
]

V, B, G, PROMPT, MAX_COMPLETION = 7, 4, 2, 3, 6
REWARDS = [1.0, 0.0, 0.5, 0.0]  # two groups of two
LENGTHS = [2, 6, 4, 1]  # completion tokens of each row (the rest is padding)
TOL = 1e-10


def small_model():  # type: ignore[no-untyped-def]
    import torch

    torch.manual_seed(0)  # the test's own model (the course never seeds globally)
    return torch.nn.Sequential(torch.nn.Embedding(V, 5), torch.nn.Linear(5, V)).double()


def per_token_logps(model, input_ids, logits_to_keep):  # type: ignore[no-untyped-def]
    """log pi(token t | token t-1) for the last ``logits_to_keep`` tokens (a bigram model: enough for a loss)."""
    import torch

    logits = model(input_ids[:, :-1])[:, -logits_to_keep:]  # position t predicts token t + 1
    logp = torch.log_softmax(logits, dim=-1)
    return logp.gather(-1, input_ids[:, -logits_to_keep:, None]).squeeze(-1), -(logp.exp() * logp).sum(-1)


def batch():  # type: ignore[no-untyped-def]
    import torch

    g = torch.Generator().manual_seed(1)
    prompt = torch.randint(0, V, (B, PROMPT), generator=g)
    completion = torch.randint(0, V, (B, MAX_COMPLETION), generator=g)
    mask = torch.tensor([[1 if t < n else 0 for t in range(MAX_COMPLETION)] for n in LENGTHS])
    ref = small_model()
    with torch.no_grad():
        for p in ref.parameters():
            p.add_(0.3 * torch.randn(p.shape, generator=g, dtype=p.dtype))  # pi0 differs from pi: the KL has a slope
        ref_logps, _ = per_token_logps(ref, torch.cat([prompt, completion], 1), MAX_COMPLETION)
    return prompt, completion, mask, ref_logps


def trl_advantages(scale: str):  # type: ignore[no-untyped-def]
    """TRL's advantages (grpo_trainer.py, _generate_and_score_completions, sum_then_normalize), with its nanstd."""
    import torch
    from trl.trainer.utils import nanstd

    rewards = torch.tensor(REWARDS, dtype=torch.float64)
    mean = torch.nanmean(rewards.view(-1, G), dim=1).repeat_interleave(G, dim=0)
    std = nanstd(rewards.view(-1, G), dim=1).repeat_interleave(G, dim=0)
    adv = rewards - mean
    return adv / (std + 1e-4) if scale != "none" else adv


def trl_defaults() -> dict[str, Any]:
    """GRPOConfig's declared field defaults, read from the dataclass (building a GRPOConfig on a CPU-only
    machine fails on its bf16 default, and would set up accelerate for nothing)."""
    from trl import GRPOConfig

    return {f.name: f.default for f in dataclasses.fields(GRPOConfig) if f.default is not dataclasses.MISSING}


def trl_loss(model, advantages, **overrides):  # type: ignore[no-untyped-def]
    """TRL GRPOTrainer._compute_loss on the batch, through a stand-in holding what the loss reads: every
    setting TRL's default GRPOConfig has, but for ``overrides``."""
    import torch
    from trl import GRPOTrainer

    cfg = {**trl_defaults(), **overrides}
    prompt, completion, mask, ref_logps = batch()

    def logps_and_entropies(model, input_ids, attention_mask, logits_to_keep, **_):  # type: ignore[no-untyped-def]
        logps, ent = per_token_logps(model, input_ids, logits_to_keep)
        return logps, ent, None

    accelerator = SimpleNamespace(num_processes=1, sync_gradients=True, gather=lambda x: x,
                                  reduce=lambda x, reduction: x, gather_for_metrics=lambda x: x)
    trainer = SimpleNamespace(
        _get_per_token_logps_and_entropies=logps_and_entropies, aux_loss_enabled=False,
        top_entropy_quantile=cfg["top_entropy_quantile"], off_policy_mask_threshold=cfg["off_policy_mask_threshold"],
        importance_sampling_level=cfg["importance_sampling_level"], beta=cfg["beta"], loss_type=cfg["loss_type"],
        epsilon_low=cfg["epsilon"],
        epsilon_high=cfg["epsilon_high"] if cfg["epsilon_high"] is not None else cfg["epsilon"],
        use_vllm=cfg["use_vllm"], model=SimpleNamespace(training=True),
        current_gradient_accumulation_steps=1, max_completion_length=MAX_COMPLETION, accelerator=accelerator,
        _entropy_bonus_enabled=cfg["entropy_coef"] != 0.0 or cfg["use_adaptive_entropy"],
        _metrics=defaultdict(lambda: defaultdict(list)),
        args=SimpleNamespace(use_bias_correction_kl=cfg["use_bias_correction_kl"], delta=cfg["delta"],
                             steps_per_generation=1),
    )
    inputs = {"prompt_ids": prompt, "prompt_mask": torch.ones_like(prompt), "completion_ids": completion,
              "completion_mask": mask, "advantages": advantages, "ref_per_token_logps": ref_logps,
              "num_items_in_batch": mask.sum()}
    return GRPOTrainer._compute_loss(trainer, model, inputs)


def course_loss(model, loss_norm: str, beta: float, advantages, kl_estimator: str = "k3"):  # type: ignore[no-untyped-def]
    import torch

    from course.lib.learning.rl_objective import policy_loss

    prompt, completion, mask, ref_logps = batch()
    logp, _ = per_token_logps(model, torch.cat([prompt, completion], 1), MAX_COMPLETION)
    loss, parts = policy_loss(logp, ref_logps, mask.bool(), advantages, beta, kl_estimator=kl_estimator,
                              kl_in="loss", loss_norm=loss_norm)
    return loss, parts


def grads(loss, model):  # type: ignore[no-untyped-def]
    import torch

    return [g.clone() for g in torch.autograd.grad(loss, list(model.parameters()))]


def max_diff(a, b, factor: float = 1.0) -> float:  # type: ignore[no-untyped-def]
    return max(float((x - factor * y).abs().max()) for x, y in zip(a, b))


def test_trls_default_config_is_the_one_this_file_names() -> None:
    """What "TRL's defaults" means below (trl 1.16): if a TRL release changes one, this test says which."""
    d = trl_defaults()
    assert (d["beta"], d["loss_type"], d["scale_rewards"], d["use_bias_correction_kl"]) == (0.0, "dapo", "group", True)
    assert (d["epsilon"], d["epsilon_high"], d["importance_sampling_level"], d["delta"]) == (0.2, None, "token", None)
    assert (d["top_entropy_quantile"], d["off_policy_mask_threshold"], d["entropy_coef"]) == (1.0, None, 0.0)


def test_the_course_advantages_are_trls_for_both_reward_scalings() -> None:
    import torch

    from course.lib.learning.rl_objective import group_advantages

    for scale in ("none", "group"):
        ours = group_advantages(torch.tensor(REWARDS, dtype=torch.float64).view(-1, G), scale)
        assert torch.allclose(ours, trl_advantages(scale), atol=1e-12, rtol=0)


def test_under_trls_default_config_the_gradient_is_the_courses_token_mean_with_group_scaling() -> None:
    """TRL's defaults: dapo, scale_rewards group, beta 0 (no KL term at all, so no reference model)."""
    adv = trl_advantages(trl_defaults()["scale_rewards"])
    model = small_model()
    theirs = grads(trl_loss(model, adv), model)
    ours = grads(course_loss(model, "token-mean", 0.0, adv)[0], model)
    assert max_diff(ours, theirs) < TOL
    assert max_diff(grads(course_loss(model, "seq-mean", 0.0, adv)[0], model), theirs) > 1e-3  # (the norm matters)


MATCHING = [("grpo", "seq-mean"), ("bnpo", "token-mean"), ("dapo", "token-mean")]
# TRL's KL term beside the course's estimator: its default, use_bias_correction_kl=True, is k3 x pi/sg(pi),
# the course's k3-corrected; False is the GRPO paper's plain k3, the course's default --kl-estimator k3.
KL_TERMS = [(True, "k3-corrected"), (False, "k3")]


@pytest.mark.parametrize("loss_type, loss_norm", MATCHING)
@pytest.mark.parametrize("beta", [0.0, 0.04])
@pytest.mark.parametrize("scale", ["none", "group"])
@pytest.mark.parametrize("correction, estimator", KL_TERMS)
def test_the_gradient_equals_trls_for_the_matching_normalisation_and_kl_term(
        loss_type: str, loss_norm: str, beta: float, scale: str, correction: bool, estimator: str) -> None:
    """beta 0.04 (the GRPO paper's; TRL's default 0 switches the KL off) with TRL's default KL term and with
    the paper's, each beside the course's estimator of the same name in the list above."""
    adv = trl_advantages(scale)
    model = small_model()
    theirs = grads(trl_loss(model, adv, loss_type=loss_type, beta=beta, scale_rewards=scale,
                            use_bias_correction_kl=correction), model)
    ours = grads(course_loss(model, loss_norm, beta, adv, estimator)[0], model)
    assert max_diff(ours, theirs) < TOL
    assert max(float(g.abs().max()) for g in ours) > 1e-3  # (a gradient worth comparing)


@pytest.mark.parametrize("correction, estimator", KL_TERMS)
def test_trls_kl_term_is_not_the_other_estimator(correction: bool, estimator: str) -> None:
    """The two KL terms differ in their gradient (forward against reverse KL), so the match above is not vacuous."""
    adv = trl_advantages("group")
    model = small_model()
    theirs = grads(trl_loss(model, adv, beta=0.04, use_bias_correction_kl=correction), model)
    other = "k3" if estimator == "k3-corrected" else "k3-corrected"
    assert max_diff(grads(course_loss(model, "token-mean", 0.04, adv, other)[0], model), theirs) > 1e-6


@pytest.mark.parametrize("beta", [0.0, 0.04])
@pytest.mark.parametrize("correction, estimator", KL_TERMS)
def test_dr_grpo_is_the_courses_constant_divisor_divided_by_max_completion_length(
        beta: float, correction: bool, estimator: str) -> None:
    """The named difference: TRL's dr_grpo divides the token sum by B x max_completion_length, the
    course's constant by B alone (so its step size does not depend on --max-tokens)."""
    adv = trl_advantages("none")
    model = small_model()
    theirs = grads(trl_loss(model, adv, loss_type="dr_grpo", beta=beta, scale_rewards="none",
                            use_bias_correction_kl=correction), model)
    ours = grads(course_loss(model, "constant", beta, adv, estimator)[0], model)
    assert max_diff(theirs, ours, 1.0 / MAX_COMPLETION) < TOL
    assert max_diff(theirs, ours) > 1e-3  # not equal without the factor


@pytest.mark.parametrize("loss_type, loss_norm", MATCHING)
@pytest.mark.parametrize("correction, estimator", KL_TERMS)
def test_the_loss_value_differs_on_purpose_trl_uses_the_ratio_the_course_log_pi(
        loss_type: str, loss_norm: str, correction: bool, estimator: str) -> None:
    """On-policy, TRL's per-token policy term is -A * pi/pi_old = -A, the course's -A * log pi: the values
    differ; the KL parts are the same k3 value (the correction's ratio is 1) normalised the same way."""
    import torch

    from course.lib.learning.rl_objective import normalised

    adv = trl_advantages("group")
    model = small_model()
    _, _, mask, _ = batch()
    theirs = trl_loss(model, adv, loss_type=loss_type, beta=0.04, use_bias_correction_kl=correction).detach()
    ours, parts = course_loss(model, loss_norm, 0.04, adv, estimator)
    m = mask.double()
    minus_mean_advantage = normalised(adv[:, None] * torch.ones_like(m) * m, m, loss_norm, -1.0)
    assert float(theirs) == pytest.approx(float(minus_mean_advantage + parts["kl_loss"]), abs=TOL)
    assert abs(float(theirs) - float(ours.detach())) > 1e-3
