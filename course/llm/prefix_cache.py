"""The prompt template's shared prefix, read once per policy state: its key/value cache, kept on the model.

Every prompt of a template begins with the same tokens (the chat header, the system turn and, for the
few-shot template, the worked examples: ~120 of a few-shot prompt's ~145). An RL step reads its prompts
three times: sampling, the log-probabilities under pi (with gradients) and under pi0 (without). Without
this module each of them, and each sampling batch, computed that prefix again. Here it is computed once
per *policy state* and its keys and values (per block, (1, Hk, c, D), after the rotary embedding, as the
Hugging Face cache holds them) are reused by the sampler (``course.llm.sampler``, through the lean
decoder) and by both log-probability passes (``course.llm.policy.completion_logprobs``).

What a state is (``state_key``): the adapters' mode (on, anchored, off) and the tensors that mode computes
with, each by identity and version (torch bumps a tensor's ``_version`` on every in-place change, so an
optimizer step, ``copy_`` or ``load_adapter_state`` makes every "on" entry stale). The LoRA-on, anchored
and off modes each keep their own entry; pi0's (adapters off) does not depend on the adapters at all, so it
is computed once per run, the anchored one once per warm start. A change made through ``.data`` bypasses
the version counter: call ``forget(model)`` after one.

Gradients. The pi pass differentiates through the prefix (the adapters shape its keys and values). An
entry asked for ``graph=True`` is computed with autograd on and keeps its graph, so the sampling phase of a
step and that step's pi pass share ONE forward of the prefix and the backward pass goes through it once:
the gradient is the one a fresh prefix would give, exactly (tests compare them). The first backward
through an entry spends its graph (a hook on its first key says so); a later request for a graph computes
the prefix again. A model with active dropout in training mode is never cached: its prefix is random.

Which forward computes it: the model's own Hugging Face forward (``model.model``), the one the
log-probability passes always used, so their log-probabilities are the same numbers as before; the lean
decoder's sampling reads the same keys and values (its own prefix pass would differ by float rounding).
The cache holds at most ``ENTRY_LIMIT`` entries (a few MB each for SmolLM2).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import torch
from torch import nn

from course.llm.lora import LoRALinear

# Entries kept per model: one per mode (on, anchored, off) for the run's template, and a few for another
# template (RFT samples under one) or a batch that shares no template prefix. Oldest goes first.
ENTRY_LIMIT = 6
_STORE = "_course_prefix_kv"  # the model's __dict__ key: the cache goes when the model goes


@dataclass
class _Entry:
    """One prefix's keys and values per block under one policy state (mutable: a backward spends its graph)."""

    state: tuple
    keys: list[torch.Tensor]
    values: list[torch.Tensor]
    graph: bool  # computed with autograd on, and no backward pass has gone through its graph yet

    def pair(self, graph: bool) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        """The keys and values: with their graph if asked (and kept), else detached."""
        if graph:
            return self.keys, self.values
        return [k.detach() for k in self.keys], [v.detach() for v in self.values]


def state_key(model: nn.Module) -> tuple:
    """What a prefix's keys and values depend on: every frozen weight and, per adapter, its mode and the
    tensors that mode computes with (none when off), each by identity and in-place version."""
    key: list[Any] = []
    adapter_tensors: set[int] = set()
    for m in model.modules():
        if isinstance(m, LoRALinear):
            adapter_tensors.update((id(m.lora_A), id(m.lora_B)))
            used = {"on": (m.lora_A, m.lora_B), "anchor": (m.anchor_A, m.anchor_B)}.get(m.mode, ())
            key.append((id(m), m.mode, tuple((id(t), t._version) for t in used if t is not None)))
    key.extend((id(p), p._version, p.requires_grad) for p in model.parameters() if id(p) not in adapter_tensors)
    return tuple(key)


def stochastic(model: nn.Module) -> bool:
    """True when a forward pass of ``model`` is random now (training mode with dropout): nothing to cache."""
    if not model.training:
        return False
    if float(getattr(getattr(model, "config", None), "attention_dropout", 0.0) or 0.0) > 0:
        return True
    return any(isinstance(m, nn.Dropout) and m.p > 0 for m in model.modules())


def forget(model: nn.Module) -> None:
    """Drop every cached prefix of ``model`` (after a weight change the version counter cannot see)."""
    model.__dict__.pop(_STORE, None)


def prefix_kv(model: Any, tokens: Sequence[int], *, graph: bool
              ) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """Per block the keys and values (1, Hk, c, D) of the prefix ``tokens`` under the model as it is now.

    ``graph``: the caller will differentiate through them (the pi pass, or sampling that the pi pass
    follows in the same state): they come with their autograd graph, computed once and shared until a
    backward pass spends it. Otherwise detached tensors. Never modify the returned tensors in place.
    """
    need_graph = graph and any(p.requires_grad for p in model.parameters())
    state = state_key(model)
    if stochastic(model):
        return _compute(model, tokens, need_graph, state).pair(need_graph)
    store: dict[tuple, _Entry] = model.__dict__.setdefault(_STORE, {})
    slot = (tuple(tokens), tuple(sorted({m.mode for m in model.modules() if isinstance(m, LoRALinear)})))
    entry = store.get(slot)
    if entry is None or entry.state != state or (need_graph and not entry.graph):
        entry = _compute(model, tokens, need_graph, state)
        store.pop(slot, None)
        store[slot] = entry
        while len(store) > ENTRY_LIMIT:
            store.pop(next(iter(store)))
    return entry.pair(need_graph)


def _compute(model: Any, tokens: Sequence[int], graph: bool, state: tuple) -> _Entry:
    """One forward of the prefix (batch 1) through the model's own body; its cache's keys and values."""
    device = next(model.parameters()).device
    with torch.enable_grad() if graph else torch.no_grad():
        out = model.model(torch.tensor([list(tokens)], device=device), use_cache=True)
    cache = out["cache"] if "cache" in out else out["past_key_values"]
    layers = getattr(cache, "layers", None)
    if layers is not None:
        keys, values = [layer.keys for layer in layers], [layer.values for layer in layers]
    else:  # transformers before the per-layer cache objects
        keys, values = list(cache.key_cache), list(cache.value_cache)
    # Asked for a graph and nothing in the prefix needs one (pi0: the adapters off, the weights frozen):
    # the tensors serve every later request for a graph as they are.
    entry = _Entry(state=state, keys=keys, values=values, graph=graph)
    if graph and keys[0].requires_grad:
        def spent(grad: torch.Tensor) -> None:  # a backward pass went through the graph: it is freed now
            entry.graph = False
            entry.keys = [k.detach() for k in entry.keys]
            entry.values = [v.detach() for v in entry.values]

        keys[0].register_hook(spent)
    return entry


def as_cache(keys: Sequence[torch.Tensor], values: Sequence[torch.Tensor], rows: int) -> Any:
    """A Hugging Face ``DynamicCache`` holding the prefix ``rows`` times (batch ``rows``), for a forward
    pass that continues it. New tensors: the forward's appends never touch the cached ones."""
    from transformers import DynamicCache

    return DynamicCache([(k.repeat_interleave(rows, dim=0), v.repeat_interleave(rows, dim=0))
                         for k, v in zip(keys, values)])


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.llm.prefix_cache"))
