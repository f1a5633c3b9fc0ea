"""Loss parity with TRL: the course loop's loss and gradient beside TRL GRPOTrainer's, on one fixed batch.

One batch (prompt and completion tokens of different lengths, rewards, a frozen reference) and one
small model (an embedding and a linear layer, float64). TRL's own ``GRPOTrainer._compute_loss`` is
called on a stand-in for the trainer that holds only the attributes the loss reads (a full trainer
would build a tokenizer, a dataset and an optimizer for nothing); the course's is
``rl_objective.policy_loss``. Per configuration (TRL loss_type x beta x scale_rewards) the test states
what must match and to what tolerance:

* GRADIENT on every parameter: equal to 1e-10 (float64) for grpo <-> seq-mean, bnpo and dapo <->
  token-mean, for beta 0 and 0.04 and for scale_rewards none and group;
  dr_grpo <-> constant: TRL's is the course's divided by max_completion_length (a fixed factor:
  TRL divides by B x max_completion_length, the course by B).
* VALUE: differs on purpose. TRL's policy term per token is -A * pi/pi_old (importance ratio,
  = -A on-policy: the value is just minus the mean advantage), the course's is -A * log pi (the
  REINFORCE surrogate). On-policy their gradients are the same, -A * grad log pi. The KL term is
  the same k3 = pi0/pi - 1 - log(pi0/pi) in both, normalised the same way.
* What TRL does not offer is not compared: the course's --kl-in reward (TRL puts the KL only in
  the loss) and the k1/k2 estimators in the loss (TRL uses k3).

The advantages: TRL computes them inside generation (``_generate_and_score_completions``); the
test reproduces its two lines with TRL's own ``nanstd`` and checks the course's ``group_advantages``.
"""

from __future__ import annotations

import importlib.util
from collections import defaultdict
from types import SimpleNamespace

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


def trl_loss(model, loss_type: str, beta: float, advantages):  # type: ignore[no-untyped-def]
    """TRL GRPOTrainer._compute_loss on the batch, through a stand-in holding what the loss reads."""
    import torch
    from trl import GRPOTrainer

    prompt, completion, mask, ref_logps = batch()

    def logps_and_entropies(model, input_ids, attention_mask, logits_to_keep, **_):  # type: ignore[no-untyped-def]
        logps, ent = per_token_logps(model, input_ids, logits_to_keep)
        return logps, ent, None

    accelerator = SimpleNamespace(num_processes=1, sync_gradients=True, gather=lambda x: x,
                                  reduce=lambda x, reduction: x, gather_for_metrics=lambda x: x)
    trainer = SimpleNamespace(
        _get_per_token_logps_and_entropies=logps_and_entropies, aux_loss_enabled=False, top_entropy_quantile=1.0,
        off_policy_mask_threshold=None, importance_sampling_level="token", beta=beta, loss_type=loss_type,
        epsilon_low=0.2, epsilon_high=0.2, use_vllm=False, model=SimpleNamespace(training=True),
        current_gradient_accumulation_steps=1, max_completion_length=MAX_COMPLETION, accelerator=accelerator,
        _entropy_bonus_enabled=False, _metrics=defaultdict(lambda: defaultdict(list)),
        args=SimpleNamespace(use_bias_correction_kl=False, delta=None, steps_per_generation=1),
    )
    inputs = {"prompt_ids": prompt, "prompt_mask": torch.ones_like(prompt), "completion_ids": completion,
              "completion_mask": mask, "advantages": advantages, "ref_per_token_logps": ref_logps,
              "num_items_in_batch": mask.sum()}
    return GRPOTrainer._compute_loss(trainer, model, inputs)


def course_loss(model, loss_norm: str, beta: float, advantages):  # type: ignore[no-untyped-def]
    import torch

    from course.lib.learning.rl_objective import policy_loss

    prompt, completion, mask, ref_logps = batch()
    logp, _ = per_token_logps(model, torch.cat([prompt, completion], 1), MAX_COMPLETION)
    loss, parts = policy_loss(logp, ref_logps, mask.bool(), advantages, beta, kl_estimator="k3", kl_in="loss",
                              loss_norm=loss_norm)
    return loss, parts


def grads(loss, model):  # type: ignore[no-untyped-def]
    import torch

    return [g.clone() for g in torch.autograd.grad(loss, list(model.parameters()))]


def max_diff(a, b, factor: float = 1.0) -> float:  # type: ignore[no-untyped-def]
    return max(float((x - factor * y).abs().max()) for x, y in zip(a, b))


def test_the_course_advantages_are_trls_for_both_reward_scalings() -> None:
    import torch

    from course.lib.learning.rl_objective import group_advantages

    for scale in ("none", "group"):
        ours = group_advantages(torch.tensor(REWARDS, dtype=torch.float64).view(-1, G), scale)
        assert torch.allclose(ours, trl_advantages(scale), atol=1e-12, rtol=0)


MATCHING = [("grpo", "seq-mean"), ("bnpo", "token-mean"), ("dapo", "token-mean")]


@pytest.mark.parametrize("loss_type, loss_norm", MATCHING)
@pytest.mark.parametrize("beta", [0.0, 0.04])
@pytest.mark.parametrize("scale", ["none", "group"])
def test_the_gradient_equals_trls_for_the_matching_normalisation(loss_type: str, loss_norm: str, beta: float,
                                                                 scale: str) -> None:
    adv = trl_advantages(scale)
    model = small_model()
    theirs = grads(trl_loss(model, loss_type, beta, adv), model)
    ours = grads(course_loss(model, loss_norm, beta, adv)[0], model)
    assert max_diff(ours, theirs) < TOL
    assert max(float(g.abs().max()) for g in ours) > 1e-3  # (a gradient worth comparing)


@pytest.mark.parametrize("beta", [0.0, 0.04])
def test_dr_grpo_is_the_courses_constant_divisor_divided_by_max_completion_length(beta: float) -> None:
    """The named difference: TRL's dr_grpo divides the token sum by B x max_completion_length, the
    course's constant by B alone (so its step size does not depend on --max-tokens)."""
    adv = trl_advantages("none")
    model = small_model()
    theirs = grads(trl_loss(model, "dr_grpo", beta, adv), model)
    ours = grads(course_loss(model, "constant", beta, adv)[0], model)
    assert max_diff(theirs, ours, 1.0 / MAX_COMPLETION) < TOL
    assert max_diff(theirs, ours) > 1e-3  # not equal without the factor


@pytest.mark.parametrize("loss_type, loss_norm", MATCHING)
def test_the_loss_value_differs_on_purpose_trl_uses_the_ratio_the_course_log_pi(loss_type: str, loss_norm: str) -> None:
    """On-policy, TRL's per-token policy term is -A * pi/pi_old = -A, the course's -A * log pi: the values
    differ, the KL parts are the same k3 normalised the same way."""
    import torch

    from course.lib.learning.rl_objective import normalised

    adv = trl_advantages("group")
    model = small_model()
    _, _, mask, _ = batch()
    theirs = trl_loss(model, loss_type, 0.04, adv).detach()
    ours, parts = course_loss(model, loss_norm, 0.04, adv)
    m = mask.double()
    minus_mean_advantage = normalised(adv[:, None] * torch.ones_like(m) * m, m, loss_norm, -1.0)
    assert float(theirs) == pytest.approx(float(minus_mean_advantage + parts["kl_loss"]), abs=TOL)
    assert abs(float(theirs) - float(ours.detach())) > 1e-3
