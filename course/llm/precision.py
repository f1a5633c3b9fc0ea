"""The real LLM's arithmetic: float32 (the course's default) or bfloat16 products with float32 everywhere else.

    python -m course.llm.rl --template fewshot --precision bfloat16 --outdir runs/llm_rl_bf16

What ``bfloat16`` changes, and what it keeps. A bfloat16 number is a float32 with its mantissa cut
to 8 bits (about 2-3 significant digits, the same range). CPUs with bfloat16 instructions
(AVX512-BF16, AMX, Arm's BF16) multiply such matrices two to three times as fast as float32 ones
(``benchmarks/bench_llm_sampling.py`` prints the ratio on yours; on a CPU without them bfloat16 is
emulated and can be SLOWER: keep float32 there). So only the matrix products change:

  * the blocks' projection weights (q, k, v, o, gate, up, down) are stored in bfloat16: half the
    memory, and the products read them as they are;
  * every matrix product runs under ``torch.autocast`` (bfloat16 inputs, float32 accumulation
    inside the kernel, a bfloat16 result), attention's included;
  * kept in float32: the LoRA adapters A and B and their gradients and Adam's moments (the trained
    numbers: an update of 1e-4 would vanish against a bfloat16 weight's rounding step), the
    embedding and the residual stream (a float32 tensor plus a bfloat16 one is float32), the norms
    (they read the residual stream), the LM head, which runs outside autocast (a bfloat16 logit of 20
    is only known to 0.125, a visible error in every probability and log-probability), and the
    softmax over the vocabulary, for sampling and for the log-probabilities alike.

Sampling and the log-probability passes compute under the same precision, so the samples come from
nearly the policy that is trained, but not exactly: the sampler's lean decoder merges the adapters into
bfloat16 weights and takes attention's softmax over bfloat16 scores, where the training pass adds the
adapters' products apart and its fused attention keeps float32 inside. On SmolLM2 that puts a likely
token's two log-probabilities a few hundredths of a nat apart, about as far as bfloat16 is from float32
(in float32 they agree to 1e-5; tests/test_llm_precision.py holds both). The loss does not correct for
it (no importance weights): an RL step in bfloat16 is that much off-policy, and on dev the recipe
learned as well as in float32 (docs/llm.md).
pi0 is the same model with the adapters off, in the same precision. The policy's numbers are not
float32's: a run records its precision (manifest, every rollout line's ``sampling``), and the
Locked Room never compares a bfloat16 run's rollouts with a float32 run's.
"""

from __future__ import annotations

import contextlib
from typing import Any

import torch
from torch import nn

from course.errors import CourseError
from course.llm import PRECISIONS


class Float32Head(nn.Module):
    """The LM head outside autocast: the logits keep float32's resolution (the weights are the model's own,
    tied to the embedding in SmolLM2; nothing is copied)."""

    def __init__(self, head: nn.Linear) -> None:
        super().__init__()
        self.head = head

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        with torch.autocast(hidden.device.type, enabled=False):
            return self.head(hidden.float())


def check_precision(precision: str) -> str:
    """``precision`` if it is one the course computes in, else a ``CourseError`` naming the choices."""
    if precision not in PRECISIONS:
        raise CourseError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    return precision


def to_bfloat16_products(model: Any) -> None:
    """Store the blocks' projection weights in bfloat16 and run the LM head in float32 (see the module's
    docstring). Call before the adapters are added: they are created in float32 beside the bfloat16 base."""
    for layer in model.model.layers:
        for m in layer.modules():
            if isinstance(m, nn.Linear):
                m.weight.data = m.weight.data.to(torch.bfloat16)
    if not isinstance(model.lm_head, Float32Head):
        model.lm_head = Float32Head(model.lm_head)


def computing(precision: str, device: Any) -> contextlib.AbstractContextManager[Any]:
    """The context every forward pass of the policy runs in: autocast's bfloat16 products, or nothing."""
    if precision == "bfloat16":
        return torch.autocast(torch.device(device).type, dtype=torch.bfloat16)
    return contextlib.nullcontext()
