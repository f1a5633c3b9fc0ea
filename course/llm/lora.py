"""LoRA, written out: a trainable low-rank update beside each frozen projection of the real LLM.

Fine-tuning all 134.5M weights of SmolLM2 on a laptop CPU costs a second copy of the model
for the KL reference pi0, Adam's two running averages per weight (1.6 GB more) and a
backward pass that computes a gradient for every weight. Low-rank adaptation (Hu et al.,
2021) freezes every weight W of the model and learns, beside each chosen linear layer, two
small matrices A (r x in) and B (out x r):

    y = W x  +  (alpha / r) * B (A x)

B starts at zero, so the adapted model starts *exactly* at pi0 (bit for bit: the update adds
0.0), and switching the adapters off gives pi0 back at any time: the KL reference costs no
memory at all. With r = 8 on the seven projections of every layer (q, k, v, o of attention;
gate, up, down of the MLP) the trainable parameters are 2.4M, 1.8% of the model.

    from course.llm.lora import add_lora, adapters_off, adapter_state, anchor, anchored
    adapters = add_lora(model, rank=8, alpha=16, seed=0)   # model's own weights frozen, A seeded, B = 0
    with adapters_off(model):
        ...                                                  # pi0
    anchor(model)                                            # a frozen copy of the adapters as they are now
    with anchored(model):
        ...                                                  # that policy, while training moves on
    state = adapter_state(model)                             # {name: tensor}, what gets saved

Not a CLI; ``python -m course.llm.rl`` trains the adapters.
"""

from __future__ import annotations

import contextlib
import math
from typing import Any, Iterator, Sequence

import torch
from torch import nn

from course.errors import CourseError

# The linear layers of a Llama-style block (SmolLM2's): attention and MLP projections.
TARGETS: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


class LoRALinear(nn.Module):
    """A frozen ``nn.Linear`` plus a low-rank update ``scale * B @ A`` that can be switched off."""

    def __init__(self, base: nn.Linear, rank: int, alpha: float, generator: torch.Generator) -> None:
        super().__init__()
        self.base = base
        # A: small random directions (scaled like a default Linear init); B: zeros, so the update starts at 0.
        a = torch.randn(rank, base.in_features, generator=generator, dtype=torch.float32) / math.sqrt(base.in_features)
        self.lora_A = nn.Parameter(a.to(base.weight.device))
        self.lora_B = nn.Parameter(torch.zeros(base.out_features, rank, device=base.weight.device))
        self.scale = alpha / rank
        self.mode = "on"  # "on": the trained A, B; "off": the base layer alone (pi0); "anchor": the frozen copies
        self.anchor_A: torch.Tensor | None = None
        self.anchor_B: torch.Tensor | None = None
        self.source = ""  # the file the adapters were loaded from ("": trained from zero here)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.base(x)
        if self.mode == "off":
            return y
        a, b = (self.lora_A, self.lora_B) if self.mode == "on" else (self.anchor_A, self.anchor_B)
        # the anchor weights exist whenever the mode is 'anchor'
        return y + (x @ a.t() @ b.t()) * self.scale  # type: ignore[union-attr]


def add_lora(
    model: nn.Module, *, rank: int, alpha: float, seed: int, targets: Sequence[str] = TARGETS
) -> list[LoRALinear]:
    """Freeze every weight of ``model`` and wrap each target projection in a ``LoRALinear``.

    The A matrices are drawn from ``torch.Generator().manual_seed(seed)`` in module order
    (no global RNG), so the same seed gives the same adapters. Returns the wrappers, in order.
    """
    for p in model.parameters():
        p.requires_grad_(False)
    generator = torch.Generator().manual_seed(seed)
    wrapped: list[LoRALinear] = []
    for _, module in list(model.named_modules()):
        for name in targets:
            child = getattr(module, name, None)
            if isinstance(child, nn.Linear):
                lora = LoRALinear(child, rank, alpha, generator)
                setattr(module, name, lora)
                wrapped.append(lora)
    if not wrapped:
        raise ValueError(f"no linear layer named {', '.join(targets)} in the model: nothing to adapt")
    return wrapped


def effective_weight(module: nn.Module) -> torch.Tensor:
    """The weight a linear layer computes with, now: ``W`` for an ``nn.Linear``, and for a ``LoRALinear``
    ``W + scale * B @ A`` in its current mode (the trained adapters, the anchored ones, or W alone when
    switched off). A detached tensor; a new one whenever an update is added."""
    if isinstance(module, LoRALinear):
        w = module.base.weight.detach()
        if module.mode == "off":
            return w
        a, b = (module.lora_A, module.lora_B) if module.mode == "on" else (module.anchor_A, module.anchor_B)
        assert a is not None and b is not None
        return torch.addmm(w, b.detach(), a.detach(), alpha=module.scale)
    if isinstance(module, nn.Linear):
        return module.weight.detach()
    raise TypeError(f"not a linear layer: {type(module).__name__}")


def lora_shapes(model: nn.Module, *, rank: int, targets: Sequence[str] = TARGETS) -> dict[str, tuple[int, ...]]:
    """``{parameter name: shape}`` of the adapters ``add_lora`` would give ``model``, computed without
    allocating them: what a saved adapter file must hold, exactly, before anything is built from it."""
    shapes: dict[str, tuple[int, ...]] = {}
    for path, module in model.named_modules():
        for name in targets:
            child = getattr(module, name, None)
            if isinstance(child, nn.Linear):
                at = f"{path}.{name}" if path else name
                shapes[f"{at}.lora_A"] = (rank, child.in_features)
                shapes[f"{at}.lora_B"] = (child.out_features, rank)
    return shapes


def adapters(model: nn.Module) -> list[LoRALinear]:
    """The model's LoRA wrappers, in module order."""
    return [m for m in model.modules() if isinstance(m, LoRALinear)]


@contextlib.contextmanager
def _mode(model: nn.Module, mode: str) -> Iterator[None]:
    wrapped = adapters(model)
    for m in wrapped:
        m.mode = mode
    try:
        yield
    finally:
        for m in wrapped:
            m.mode = "on"


def adapters_off(model: nn.Module) -> contextlib.AbstractContextManager[None]:
    """Inside the block the model computes pi0 exactly (every update switched off)."""
    return _mode(model, "off")


def anchor(model: nn.Module) -> None:
    """Keep a frozen copy of every adapter as it is now (``anchored`` computes with it): the policy at
    the start of RL, when a warm start moved it away from pi0. Copies, never the trained tensors
    themselves, so training can go on while the anchor stays put."""
    for m in adapters(model):
        m.anchor_A, m.anchor_B = m.lora_A.detach().clone(), m.lora_B.detach().clone()


def anchored(model: nn.Module) -> contextlib.AbstractContextManager[None]:
    """Inside the block the model computes with the adapters ``anchor`` froze (ValueError if none)."""
    if any(m.anchor_A is None for m in adapters(model)):
        raise ValueError("no anchored adapters: call anchor(model) first")
    return _mode(model, "anchor")


def adapter_parameters(model: nn.Module) -> list[nn.Parameter]:
    """The trainable tensors (A and B of every adapter), in a fixed order."""
    return [p for m in adapters(model) for p in (m.lora_A, m.lora_B)]


def adapter_state(model: nn.Module) -> dict[str, torch.Tensor]:
    """``{module path + ".lora_A"/".lora_B": tensor}``: what a saved adapter file holds."""
    return {name: p.detach().contiguous().cpu() for name, p in model.named_parameters() if "lora_" in name}


# The largest update an adapter file may add to a layer, as a multiple of the layer itself:
# ||scale * B @ A|| <= MAX_UPDATE_RATIO * ||W|| (Frobenius norms). An adapter is a correction of
# the layer it sits beside: it starts at 0 and a fine-tune moves a layer by a fraction of its size.
# An update a hundred times the layer has replaced the layer, and each such layer multiplies the
# activations by about that factor, which a few layers turn into overflow (lora_B filled with 3e38,
# finite, made every logit NaN and every completion the end token). Bounded against the layer, not
# by a fixed number, so that it holds for any model and any rank and alpha.
MAX_UPDATE_RATIO = 100.0


def update_ratio(a: torch.Tensor, b: torch.Tensor, scale: float, weight: torch.Tensor) -> float:
    """``||scale * B @ A||_F / ||W||_F``, exactly, in float64 (no overflow for any finite float32 A and B)
    and without forming B @ A: ``||B A||_F**2 = trace((B^T B)(A A^T))``, two rank x rank products."""
    a64, b64 = a.detach().double(), b.detach().double()
    update = scale * math.sqrt(max(0.0, float(torch.trace((b64.t() @ b64) @ (a64 @ a64.t())))))
    base = float(torch.linalg.vector_norm(weight.detach().double()))
    return update / base if base > 0 else (0.0 if update == 0 else math.inf)


def refuse_oversized(path: Any, model: nn.Module, state: dict[str, Any], scale: float) -> None:
    """``CourseError`` naming the file, the layer and the bound when an adapter's update is past
    ``MAX_UPDATE_RATIO`` (``oversized_update``); checked before the adapters are built."""
    found = oversized_update(model, state, scale)
    if found is not None:
        raise CourseError(f"{path}: the adapter's update of {found[0]} is {found[1]:.3g} times the layer itself, "
                          f"past the bound of {MAX_UPDATE_RATIO:g} (an adapter corrects a layer: a larger update "
                          "replaces it and overflows the activations); refused")


def oversized_update(model: nn.Module, state: dict[str, Any], scale: float) -> tuple[str, float] | None:
    """The first layer (module path) whose update from ``state`` is past ``MAX_UPDATE_RATIO``, with its
    ratio, or None. ``model`` is the model the adapters are for, before ``add_lora`` (its plain layers)."""
    for name, a in state.items():
        if not name.endswith(".lora_A"):
            continue
        at = name[: -len(".lora_A")]
        layer = model.get_submodule(at)
        weight = layer.base.weight if isinstance(layer, LoRALinear) else layer.weight
        assert isinstance(weight, torch.Tensor)  # a Linear's weight: a Parameter, never a submodule
        ratio = update_ratio(a, state[f"{at}.lora_B"], scale, weight)
        if not ratio <= MAX_UPDATE_RATIO:  # NaN included
            return at, ratio
    return None


class NonFiniteLogits(CourseError):
    """A forward pass gave NaN or infinite numbers (``refuse_non_finite``)."""


def adapter_source(model: nn.Module) -> str:
    """What the model's adapters are, for a message: the file they were loaded from, the adapters being
    trained, or the model alone when there are none or they are switched off."""
    wrapped = adapters(model)
    if not wrapped or all(m.mode == "off" for m in wrapped):
        return "the model itself (no adapters on)"
    return wrapped[0].source or "the adapters being trained in this run"


def refuse_non_finite(values: torch.Tensor, model: nn.Module, where: str) -> None:
    """``NonFiniteLogits`` naming ``where`` (the step) and the adapters if ``values`` holds a NaN or an
    infinity: every later token or update would be computed from it (sampling would pick the end token
    for ever, and Adam would write NaN into every adapter)."""
    if not bool(torch.isfinite(values).all()):
        raise NonFiniteLogits(f"{adapter_source(model)}: the model's numbers overflowed (NaN or infinite "
                              f"log-probabilities) at {where}; refused, nothing written")


def load_adapter_state(model: nn.Module, state: dict[str, Any], source: str = "") -> None:
    """Copy saved A and B matrices into the model's adapters (same names, same shapes, or ValueError);
    ``source`` (the file) is what messages about these adapters name."""
    own = {name: p for name, p in model.named_parameters() if "lora_" in name}
    if set(own) != set(state):
        missing, extra = sorted(set(own) - set(state)), sorted(set(state) - set(own))
        raise ValueError(f"adapter file does not fit the model: missing {missing[:2]}, unexpected {extra[:2]}")
    with torch.no_grad():
        for name, p in own.items():
            if tuple(state[name].shape) != tuple(p.shape):
                raise ValueError(f"adapter {name}: shape {tuple(state[name].shape)}, the model needs {tuple(p.shape)}")
            p.copy_(state[name])
    for module in adapters(model):
        module.source = source


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.llm.lora"))
