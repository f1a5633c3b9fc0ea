"""Loop C's objective: the advantages, the KL estimators, the loss and what its token sum is divided by.

The one file a student changing the objective opens. The loop (``rl_loop.reinforce_step``) calls
``group_advantages`` and ``policy_loss``; everything else about a step (sampling, scoring, the update)
lives there. The default objective, per sample i of a group of G for one prompt::

    A_i  = r_i - mean(r of the G samples of the same prompt)          (group baseline)
    loss = sum over samples i and their chosen tokens t of [ -A_i log pi(a_it) + beta * k3_it ] / B
    k3   = (pi0/pi - 1) - log(pi0/pi)  at each chosen token           (KL estimator)

Four switches change it, each a choice practitioners argue about (``rl_config.RLConfig``' last
fields; docs/objective.md reads every formula): which KL estimator (``KL_ESTIMATORS``), where it goes
(the loss, or subtracted from the reward: ``KL_PLACES``), what the token sum is divided by
(``LOSS_NORMS``) and whether advantages are divided by their group's standard deviation
(``REWARD_SCALES``). ``python -m course.kl_estimators`` and ``python -m course.loss_normalisation``
show, exactly, what each choice does to the gradient.

PyTorch is imported inside the functions that use it (``--help`` works without it).
"""

from __future__ import annotations

from typing import Any, Callable, Protocol


# ---------------------------------------------------------------------------
# The KL estimators: log_ratio = log pi/pi0 at the chosen tokens (B, K), 0 off the mask m
# ---------------------------------------------------------------------------
def _k1(log_ratio: Any, m: Any) -> Any:
    return log_ratio  # unbiased, one token's value can be < 0


def _k2(log_ratio: Any, m: Any) -> Any:
    return 0.5 * log_ratio * log_ratio  # biased


def _k3(log_ratio: Any, m: Any) -> Any:
    import torch

    return (torch.exp(-log_ratio) - 1 + log_ratio) * m  # unbiased, never < 0, lower variance near pi0 only


def k3_corrected(log_ratio: Any, m: Any) -> Any:
    """TRL's default KL term (``GRPOConfig.use_bias_correction_kl=True``): k3 times the importance ratio
    pi/sg(pi), sg a stop-gradient. The ratio's value is exactly 1, so the value is k3's; its gradient is
    grad log pi, so the slope in log pi is (1 - r) + k3 = -log r, k2's: in the loss the expected gradient on
    one token is grad KL(pi || pi0), the reverse KL (k3 alone follows the forward KL)."""
    import torch

    ratio = torch.exp(log_ratio - log_ratio.detach())  # pi/sg(pi) on chosen tokens (log pi0 carries no gradient)
    return _k3(log_ratio, m) * ratio


# name -> per-token estimate; a new estimator is one function and one line here (the maths of each:
# course.lib.learning.kl_estimators)
KL_ESTIMATORS: dict[str, Callable[[Any, Any], Any]] = {"k1": _k1, "k2": _k2, "k3": _k3, "k3-corrected": k3_corrected}
# The estimator each place uses unless told otherwise: the standard pairing (the one place this default lives)
KL_DEFAULT = {"loss": "k3", "reward": "k1"}
KL_PLACES = tuple(KL_DEFAULT)  # loss | reward
LOSS_NORMS = ("constant", "seq-mean", "token-mean")  # (each token's weight: course.lib.learning.loss_normalisation)
REWARD_SCALES = ("none", "group")
STD_EPS = 1e-4  # added to a group's std before dividing by it (TRL's constant; loss_normalisation.STD_EPS)


def kl_estimate(name: str, log_ratio: Any, m: Any) -> Any:
    """The per-token KL estimate ``name`` from log_ratio = log pi/pi0 (B, K), 0 off the mask ``m``."""
    if name not in KL_ESTIMATORS:
        raise ValueError(f"kl_estimator must be one of {', '.join(KL_ESTIMATORS)}, got {name!r}")
    return KL_ESTIMATORS[name](log_ratio, m)


# ---------------------------------------------------------------------------
# Advantages
# ---------------------------------------------------------------------------
def group_advantages(r: Any, scale: str) -> Any:
    """(B,) advantages from (P, G) rewards: minus the group's mean, and divided by the group's sample
    standard deviation + STD_EPS when ``scale`` is "group" (as TRL computes it).

    Minus the mean is (G-1)/G times the leave-one-out advantage, so the policy-gradient estimate is
    unbiased for (G-1)/G times grad E[r]. Not dividing by the std is the default: it would blow up
    nearly unanimous groups."""
    adv = r - r.mean(dim=1, keepdim=True)
    if scale == "group":
        adv = adv / (r.std(dim=1, keepdim=True) + STD_EPS)
    elif scale != "none":
        raise ValueError(f"scale_rewards must be one of {', '.join(REWARD_SCALES)}, got {scale!r}")
    return adv.view(-1)


def kl_reward_penalty(logp: Any, logp_ref: Any, mask: Any, beta: float, kl_estimator: str) -> Any:
    """(B,) beta x the KL estimate summed over each completion's tokens, no gradients: what ``kl_in`` "reward"
    subtracts from each reward before the advantages (PPO-style RLHF; REINFORCE then differentiates it
    through the score function). ``mask``: (B, K) float, 1 on chosen tokens."""
    import torch

    with torch.no_grad():
        return beta * kl_estimate(kl_estimator, (logp.detach() - logp_ref) * mask, mask).sum(dim=1)


# ---------------------------------------------------------------------------
# The loss
# ---------------------------------------------------------------------------
def policy_loss(logp: Any, logp_ref: Any, mask: Any, adv: Any, beta: float, *, kl_estimator: str | None = None,
                kl_in: str = "loss", loss_norm: str = "constant") -> tuple[Any, dict[str, Any]]:
    """REINFORCE with a KL penalty. Returns (loss, parts).

    logp, logp_ref: (B, K) log pi and log pi0 of the chosen tokens (logp carries gradients)
    mask:           (B, K) bool, True on chosen tokens
    adv:            (B,) advantages (reward minus the group mean, maybe scaled), no gradients
    kl_estimator:   a name of ``KL_ESTIMATORS``; None: ``KL_DEFAULT[kl_in]``
    parts:          k1, k3 (B, K) per-token KL estimates (0 off the mask), pg_loss, kl_loss (all detached, for logs)

    Per chosen token:  loss_it = -A_i log pi(a_it) + beta * k_it   (the KL term only with kl_in "loss"),
    and the sum over tokens is divided (``loss_norm``): by B, the number of samples ("constant", the
    default: a completion's tokens get no extra weight each, and the divisor never changes; Dr. GRPO
    divides by B x max_tokens instead, a fixed factor), by B x the completion's own length
    ("seq-mean", GRPO: a long completion's tokens share its advantage, so long wrong answers are
    punished less per token), or by all tokens of the batch ("token-mean", DAPO).
    ``python -m course.loss_normalisation`` prints each token's weight under each.

    KL to pi0, per chosen token, with r = pi0/pi (samples from pi, on-policy):
      k1 = -log r = log pi/pi0       its value is an unbiased estimate of KL(pi || pi0); one token's can be < 0
      k2 = 1/2 (log r)^2             its value is biased
      k3 = (r - 1) - log r           its value is an unbiased estimate of KL(pi || pi0), never < 0, lower
                                     variance near pi0 only (Schulman, 2020, "Approximating KL divergence")
      k3-corrected = k3 * pi/sg(pi)  k3's value (the ratio's value is 1; TRL's default, ``k3_corrected``)
    What the penalty's GRADIENT follows is another matter, and depends on where it goes:
      in the loss (differentiated through log pi), in expectation on one token: k1 gives 0, k2 gives
        grad KL(pi || pi0), and k3 (the default, as in the GRPO paper) gives grad KL(pi0 || pi), the
        FORWARD KL, not the reverse KL the objective E[r] - beta KL(pi || pi0) names; k3-corrected
        gives the reverse KL's again. Summed over the tokens of a sequence, k2, k3 and k3-corrected see
        only each token's own step: they miss how an earlier token changes the KL still to come.
      in the reward (kl_in "reward": the caller subtracts beta * sum_t k_t from the reward before the
        advantages; nothing is added here), k1 gives exactly grad KL(pi || pi0) of the whole sequence,
        through the noisier score function (as in PPO-style RLHF).
    ``python -m course.kl_estimators`` computes every one of these exactly. The default k3 in the loss
    stays because its value and its gradient are exactly zero while pi == pi0, it can never reward
    drifting away, and it adds no noise to the advantages; what it pulls towards is pi0's support
    (forward KL: mass-covering), which on a policy near pi0 is nearly the same direction.
    Both k1 and k3 are logged whatever the choice.

    The policy-gradient term is REINFORCE on whole sequences: the completion's advantage multiplies
    the sum of its token log-probabilities (one reward per completion, credited to every token that
    produced it). Advantage > 0 raises the log-probability of that completion's tokens; < 0 lowers it.
    """
    import torch

    if kl_estimator is None and kl_in in KL_DEFAULT:
        kl_estimator = KL_DEFAULT[kl_in]
    for name, value, allowed in (("kl_estimator", kl_estimator, tuple(KL_ESTIMATORS)), ("kl_in", kl_in, KL_PLACES),
                                 ("loss_norm", loss_norm, LOSS_NORMS)):
        if value not in allowed:
            raise ValueError(f"{name} must be one of {', '.join(allowed)}, got {value!r}")
    m = mask.float()
    log_ratio = (logp - logp_ref) * m  # (B, K): log pi/pi0 at chosen tokens, 0 elsewhere
    k1, k3 = _k1(log_ratio, m), _k3(log_ratio, m)  # logged whatever the choice
    pg_loss = normalised(adv[:, None] * logp * m, m, loss_norm, -1.0)
    if kl_in == "loss":
        kl_loss = normalised(kl_estimate(str(kl_estimator), log_ratio, m), m, loss_norm, beta)
    else:
        kl_loss = torch.zeros((), dtype=logp.dtype)
    parts = {"k1": k1.detach(), "k3": k3.detach(), "pg_loss": pg_loss.detach(), "kl_loss": kl_loss.detach()}
    return pg_loss + kl_loss, parts


def normalised(x: Any, m: Any, loss_norm: str, coef: float) -> Any:
    """coef x (the sum of the (B, K) per-token terms ``x``, 0 off the mask) / the divisor ``loss_norm`` names."""
    if loss_norm == "constant":
        return coef * x.sum() / x.shape[0]  # (coef times the sum, then divided: this order gives the recorded bits)
    if loss_norm == "token-mean":
        return coef * x.sum() / m.sum().clamp(min=1.0)
    return coef * (x.sum(dim=1) / m.sum(dim=1).clamp(min=1.0)).sum() / x.shape[0]  # seq-mean


# ---------------------------------------------------------------------------
# The objective in words (the log and the manifests)
# ---------------------------------------------------------------------------
class Switches(Protocol):
    """The settings that choose the objective (``rl_config.RLConfig`` has them)."""

    # read-only members, so a frozen dataclass satisfies the protocol
    @property
    def beta(self) -> float: ...
    @property
    def kl_estimator(self) -> str: ...
    @property
    def kl_in(self) -> str: ...
    @property
    def loss_norm(self) -> str: ...
    @property
    def scale_rewards(self) -> str: ...


def objective_text(s: Switches) -> str:
    """The run's objective in one line, for the log and the manifest."""
    where = "per token in the loss" if s.kl_in == "loss" else "summed over each completion, subtracted from the reward"
    scale = "" if s.scale_rewards == "none" else ", divided by the group's std"
    divisor = dict(
        zip(LOSS_NORMS, ("the number of samples", "each completion length x samples", "all tokens of the batch"))
    )[s.loss_norm]
    return (f"advantage = reward - group mean{scale}; KL estimator {s.kl_estimator} {where} (beta {s.beta}); "
            f"token sum divided by {divisor}")


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.learning.rl_objective"))
