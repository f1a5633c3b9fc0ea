"""A lean forward pass of a Llama-style model for sampling: the same function as the Hugging Face
module, written as the few tensor operations it is, with a key/value cache the sampler owns.

Why it exists. Sampling is most of an RL step's time, and almost all of a decode step's time went
to the framework, not to arithmetic: a Hugging Face forward of SmolLM2 (30 blocks) makes some two
thousand small calls (module dispatch, mask building, a cache that concatenates a new column on
every step), which on a batch of 64 one-token rows cost about three times the step's matrix
products (benchmarks/bench_llm_sampling.py prints both). Here one decode step of a block is ten
tensor operations:

    h = rms_norm(x) ; q, k, v = h @ Wqkv        (one product for the three projections: fused)
    q, k = rotate(q, k, position)               (rotary position embedding, the model's own cos/sin)
    cache[:, :, t] = k, v ; a = attend(q, cache, which keys are real)
    x = x + a @ Wo
    h = rms_norm(x) ; g, u = h @ Wgu            (gate and up fused)
    x = x + (silu(g) * u) @ Wdown

and the logits come from the model's own LM head module. The cache is preallocated once per batch
(rows x kv heads x positions x head dim per block) and written in place: nothing grows.

What it reads from the model. ``LlamaDecoder(model)`` takes the weights as they are at that moment:
a projection wrapped by LoRA (``course.llm.lora.LoRALinear``) contributes its effective weight in
its current mode (``W + scale * B @ A`` with the trained adapters, the anchored ones, or W alone
when switched off; ``course.llm.lora.effective_weight``). Fusing costs one copy of the block
weights (~0.4 GB, ~0.2 s), so ``fused_blocks`` keeps the last copy and makes a new one only when a
weight changed (by its tensor version: an optimizer step) or an adapter was switched: the batches of
one sampling phase share it. Build a decoder per batch; never keep one across a training step.
The sampled function is the model's up to float rounding (fused products sum in another
order); tests compare its logits with the Hugging Face forward's.

Which models. Llama's block as SmolLM2 uses it (RMSNorm, rotary embedding of the default kind,
grouped-query attention, SiLU-gated MLP, no biases). ``supports(model)`` says whether a model is
one; ``decoder_for`` gives any other model ``HFDecoder``, the same three calls through its own
Hugging Face forward.

Rows that stop. A finished row keeps computing (its output is ignored) until the live rows are at
most half of the cache's rows; then the cache is compacted to the live rows. Copying the cache on
every stop would cost more than computing a few dead rows.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from course.llm.lora import LoRALinear, effective_weight


def tail_positions(prefix_length: int, tail_valid: torch.Tensor) -> torch.Tensor:
    """Each left-padded tail's positions (P, W), continuing the shared prefix's: the first real token of a
    tail is at ``prefix_length``, whatever its padding (a padding position takes the same, masked anyway)."""
    return (prefix_length + tail_valid.long().cumsum(dim=1) - 1).clamp(min=prefix_length)


def cache_of(output: Any) -> Any:
    """The key/value cache a forward pass returned (``cache`` since transformers 5.x renamed ``past_key_values``)."""
    return output["cache"] if "cache" in output else output["past_key_values"]


def supports(model: Any) -> bool:
    """True when ``model`` is a Llama-style causal LM this decoder computes exactly (up to float rounding)."""
    cfg = getattr(model, "config", None)
    inner = getattr(model, "model", None)
    if cfg is None or inner is None or getattr(cfg, "model_type", None) != "llama":
        return False
    rope = getattr(cfg, "rope_parameters", None) or getattr(cfg, "rope_scaling", None) or {}
    rope_type = rope.get("rope_type", rope.get("type", "default")) if isinstance(rope, dict) else "default"
    return (getattr(cfg, "hidden_act", None) == "silu" and not getattr(cfg, "attention_bias", False)
            and not getattr(cfg, "mlp_bias", False) and rope_type == "default"
            and hasattr(inner, "rotary_emb") and hasattr(model, "lm_head"))


def _weight_key(model: Any) -> tuple:
    """What the fused weights depend on: every parameter and anchored adapter, by identity and version (torch
    bumps a tensor's ``_version`` on every in-place change, as an optimizer step makes), and each adapter's mode."""
    key: list[Any] = [(id(p), p._version) for p in model.parameters()]
    for m in model.modules():
        if isinstance(m, LoRALinear):
            key.append((id(m), m.mode))
            key.extend((id(a), a._version) for a in (m.anchor_A, m.anchor_B) if a is not None)
    return tuple(key)


def release_fused_blocks(model: Any) -> None:
    """Drop the fused copy of the weights (~0.4 GB for SmolLM2). The training passes do not read it and the
    optimizer step retires it anyway, so an RL step lets it go before its log-prob passes: the peak memory
    of a step is the gradient pass's, and the copy would sit under it for nothing."""
    model.__dict__.pop("_course_fused_blocks", None)


def fused_blocks(model: Any) -> list[tuple[torch.Tensor, ...]]:
    """Per block: (input norm weight, Wqkv (d, (H + 2 Hk) D), Wo (H D, d), post-attention norm weight,
    Wgate_up (d, 2 ff), Wdown (ff, d)), each projection's effective weight (LoRA merged), laid out so that
    ``x @ W`` is the plain "A times B" product. Made once and reused while no weight or adapter mode changed
    (a sampling phase of RL reuses them across its batches; the next optimizer step makes new ones)."""
    key = _weight_key(model)
    kept = model.__dict__.get("_course_fused_blocks")  # kept on the model itself: it goes when the model goes
    if kept is not None and kept[0] == key:
        return kept[1]
    release_fused_blocks(model)  # one copy at a time: ~0.4 GB for SmolLM2
    with torch.no_grad():
        blocks = []
        for layer in model.model.layers:
            att, mlp = layer.self_attn, layer.mlp
            qkv = torch.cat([effective_weight(att.q_proj), effective_weight(att.k_proj),
                             effective_weight(att.v_proj)], dim=0).t().contiguous()
            gate_up = torch.cat([effective_weight(mlp.gate_proj), effective_weight(mlp.up_proj)], dim=0)
            blocks.append((layer.input_layernorm.weight.detach(), qkv, effective_weight(att.o_proj).t().contiguous(),
                           layer.post_attention_layernorm.weight.detach(), gate_up.t().contiguous(),
                           effective_weight(mlp.down_proj).t().contiguous()))
    model.__dict__["_course_fused_blocks"] = (key, blocks)
    # six tensors; transformers types the layers' attributes more loosely than Tensor
    return blocks  # type: ignore[return-value]


class LlamaDecoder:
    """Prefill a batch of prompts, then step it one token per row; the cache lives here.

    Shapes: B rows, c shared-prefix positions, S row positions (each prompt's tail, then the sampled
    tokens), H query heads, Hk key/value heads (each serves g = H / Hk query heads), D head dim, d width.

    The cache is in two parts. The prefix every prompt shares (the few-shot header, ~120 tokens) is
    kept ONCE, (1, Hk, c, D) per block; each row keeps only its own positions, (B, Hk, S, D). A decode
    step's attention reads the prefix's keys once for all rows (one product of all B * g query heads of
    a key/value head with them) and each row's own keys, and takes one softmax over both: the same
    attention as over the concatenated keys, for a third of the memory traffic that copying the prefix
    into every row would cost (attention reads the whole cache on every step).
    """

    def __init__(self, model: Any) -> None:
        cfg = model.config
        self.model = model
        self.heads, self.kv_heads = cfg.num_attention_heads, cfg.num_key_value_heads
        self.head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
        self.eps = float(cfg.rms_norm_eps)
        inner = model.model
        self.embed = inner.embed_tokens.weight
        self.rotary = inner.rotary_emb
        self.final_norm = inner.norm.weight
        self.blocks = fused_blocks(model)
        # bfloat16 products (course.llm.precision's autocast; this decoder runs on the CPU only, decoder_for)
        self.bf16 = torch.is_autocast_enabled("cpu") and torch.get_autocast_dtype("cpu") == torch.bfloat16
        n = len(self.blocks)
        self.prefix_keys: list[torch.Tensor | None] = [None] * n  # per block (1, Hk, c, D), or None: no prefix
        self.prefix_values: list[torch.Tensor | None] = [None] * n
        self.keys: list[torch.Tensor] = []  # per block (B, Hk, S, D)
        self.values: list[torch.Tensor] = []
        self.key_valid = torch.zeros(0, 0, dtype=torch.bool)  # (B, S): which row positions are real keys
        self.length = 0  # row positions written so far (the same for every row)

    # --- one forward pass of every block, for T new positions of every row ----------------------------------
    def _forward(self, ids: torch.Tensor, pos: torch.Tensor, mask: torch.Tensor, prefix_pass: bool = False
                 ) -> torch.Tensor:
        """ids, pos (B, T); mask (B, 1, T, length + T): True where a query may read a row key (every query
        reads the whole shared prefix). Writes row positions [length, length + T) of the cache (with
        ``prefix_pass``: computes the shared prefix itself, batch 1, causal, and keeps its keys and values
        instead). Returns the last position's normalised hidden state (B, d)."""
        B, T = ids.shape
        H, Hk, D = self.heads, self.kv_heads, self.head_dim
        x = F.embedding(ids, self.embed)  # (B, T, d)
        d = x.shape[-1]
        cos, sin = self.rotary(x, pos)  # (B, T, D): the model's own rotary tables
        cos, sin = cos[:, None], sin[:, None]  # (B, 1, T, D), broadcast over heads
        start, end = self.length, self.length + T
        for i, (norm1, qkv, wo, norm2, gate_up, down) in enumerate(self.blocks):
            h = F.rms_norm(x, (d,), norm1, self.eps)
            q, k, v = (h @ qkv).split([H * D, Hk * D, Hk * D], dim=-1)
            q = q.view(B, T, H, D).transpose(1, 2)  # (B, H, T, D)
            k = k.view(B, T, Hk, D).transpose(1, 2)  # (B, Hk, T, D)
            v = v.view(B, T, Hk, D).transpose(1, 2)
            q = q * cos + _rotate_half(q) * sin  # rotary position embedding: position enters q and k only
            k = k * cos + _rotate_half(k) * sin
            if prefix_pass:
                self.prefix_keys[i], self.prefix_values[i] = k, v
                a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)  # (1, H, T, D)
            else:
                self.keys[i][:, :, start:end] = k
                self.values[i][:, :, start:end] = v
                a = self._attend(i, q, mask, end)
            x = x + a.transpose(1, 2).reshape(B, T, H * D) @ wo
            h = F.rms_norm(x, (d,), norm2, self.eps)
            g, u = (h @ gate_up).chunk(2, dim=-1)
            x = x + (F.silu(g) * u) @ down  # the SiLU-gated MLP
        if not prefix_pass:
            self.length = end
        return F.rms_norm(x[:, -1], (d,), self.final_norm, self.eps)

    def _attend(self, i: int, q: torch.Tensor, mask: torch.Tensor, end: int) -> torch.Tensor:
        """Attention of q (B, H, T, D) over block i's shared prefix and each row's own positions [0, end)."""
        B, H, T, D = q.shape
        Hk = self.kv_heads
        g = H // Hk
        keys, values = self.keys[i][:, :, :end], self.values[i][:, :, :end]  # (B, Hk, end, D)
        qg = q.reshape(B, Hk, g * T, D)  # query heads grouped under the key/value head they read
        scores = qg @ keys.transpose(-1, -2)  # (B, Hk, gT, end)
        row_mask = mask if g == 1 else mask[:, :, None].expand(B, 1, g, T, end).reshape(B, 1, g * T, end)
        scores = scores.masked_fill(~row_mask, float("-inf"))
        pk, pv = self.prefix_keys[i], self.prefix_values[i]
        if pk is not None and pv is not None:
            c = pk.shape[2]
            # Every row's queries against the ONE copy of the prefix: (Hk, B gT, D) @ (Hk, D, c).
            qp = qg.transpose(0, 1).reshape(Hk, B * g * T, D)
            prefix_scores = (qp @ pk[0].transpose(-1, -2)).view(Hk, B, g * T, c).transpose(0, 1)  # (B, Hk, gT, c)
            scores = torch.cat([prefix_scores, scores], dim=-1)
        weights = (scores * D ** -0.5).softmax(dim=-1)  # one softmax over prefix and row keys together
        out = weights[..., -end:] @ values  # (B, Hk, gT, D)
        if pk is not None and pv is not None:
            wp = weights[..., :c].transpose(0, 1).reshape(Hk, B * g * T, c)
            out = out + (wp @ pv[0]).view(Hk, B, g * T, D).transpose(0, 1)
        return out.reshape(B, H, T, D)

    def _allocate(self, rows: int, positions: int) -> None:
        shape = (rows, self.kv_heads, positions, self.head_dim)
        # Under bfloat16 products (course.llm.precision) the attention products read the keys and values in
        # bfloat16 anyway: kept so, the cache is the same numbers at half the bytes, not converted on every step.
        dtype = torch.bfloat16 if self.bf16 else self.embed.dtype
        self.keys = [torch.empty(shape, dtype=dtype) for _ in self.blocks]
        self.values = [torch.empty(shape, dtype=dtype) for _ in self.blocks]

    # --- the public steps ----------------------------------------------------------------------------------
    @torch.no_grad()
    def prefill(self, prefix: list[int], tails: torch.Tensor, tail_valid: torch.Tensor, group: int,
                room: int, prefix_kv: tuple[list[torch.Tensor], list[torch.Tensor]] | None = None
                ) -> tuple[torch.Tensor, torch.Tensor]:
        """Read P prompts that begin with the same ``prefix`` (c tokens), then each its own left-padded
        tail (P, W), and make room for ``group`` samples of each and ``room`` more tokens. ``prefix_kv``:
        the prefix's keys and values per block, (1, Hk, c, D) each, already computed (the model's prefix
        cache, ``course.llm.prefix_cache``); then the prefix is not read again.

        Returns the next-token logits (P * group, V) float32 and each row's next position (P * group,).
        The prefix is computed once (batch 1) and kept once; the tails read it through the cache, their
        padding masked out of every key, their positions continuing the prefix's: each row computes its
        own prompt.
        """
        P, W = tails.shape
        c = len(prefix)
        self.length = 0
        if c and prefix_kv is not None:
            self.prefix_keys = [k.detach() for k in prefix_kv[0]]
            self.prefix_values = [v.detach() for v in prefix_kv[1]]
        elif c:
            self._forward(torch.tensor([prefix], dtype=torch.long), torch.arange(c)[None],
                          torch.ones(1, 1, 1, 1, dtype=torch.bool), prefix_pass=True)
        self._allocate(P, W)
        pos = tail_positions(c, tail_valid)  # (P, W): each tail continues the prefix
        # A tail query reads the real tail keys up to itself, and always itself: a padding query then has a
        # key even without a prefix (an empty row would be NaN); real queries never read a padding key.
        mask = torch.ones(W, W, dtype=torch.bool).tril()[None] & tail_valid[:, None, :]
        mask = mask | torch.eye(W, dtype=torch.bool)[None]
        hidden = self._forward(tails, pos, mask[:, None])  # (P, d)
        logits = self.model.lm_head(hidden).float()  # the model's own head (and any hook on it)
        # Each prompt's row cache, repeated for its samples, with room for the tokens to come.
        keys, values = self.keys, self.values
        self._allocate(P * group, W + room)
        for new, old in zip((*self.keys, *self.values), (*keys, *values)):
            new[:, :, :W] = old.repeat_interleave(group, dim=0)
        self.key_valid = torch.zeros(P * group, W + room, dtype=torch.bool)
        self.key_valid[:, :W] = tail_valid.repeat_interleave(group, dim=0)
        return logits.repeat_interleave(group, dim=0), (pos[:, -1] + 1).repeat_interleave(group)

    @torch.no_grad()
    def step(self, tokens: torch.Tensor, pos: torch.Tensor, wanted: torch.Tensor | None = None) -> torch.Tensor:
        """One new token per cached row: tokens, pos (B,) -> next-token logits (B, V) float32, or only
        the ``wanted`` rows' (a 1-D index): the LM head, a fifth of a step's products, skips finished rows."""
        self.key_valid[:, self.length] = True
        mask = self.key_valid[:, None, None, : self.length + 1]  # (B, 1, 1, length + 1)
        hidden = self._forward(tokens[:, None], pos[:, None], mask)
        return self.model.lm_head(hidden if wanted is None else hidden[wanted]).float()

    def keep(self, rows: torch.Tensor) -> None:
        """Keep only these cache rows (a 1-D index), in this order: only the written positions are copied."""
        for caches in (self.keys, self.values):
            for i, old in enumerate(caches):
                new = old.new_empty((len(rows), *old.shape[1:]))
                new[:, :, : self.length] = old[:, :, : self.length].index_select(0, rows)
                caches[i] = new
        self.key_valid = self.key_valid.index_select(0, rows)


class HFDecoder:
    """The same three calls (``prefill``, ``step``, ``keep``) through the model's own Hugging Face forward
    and key/value cache: for any causal LM (``LlamaDecoder``, the fast one, computes Llama-style models)."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.device = next(model.parameters()).device
        self.cache: Any = None
        self.key_valid = torch.zeros(0, 0, dtype=torch.long)  # (B, S): which cached keys are real

    def prefill(self, prefix: list[int], tails: torch.Tensor, tail_valid: torch.Tensor, group: int,
                room: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The shared prefix once (batch 1), then each prompt's tail placed after it ([prefix | padding |
        tail], the padding masked out of every key, the tail's positions continuing the prefix's); the cache
        repeated for ``group`` samples. Returns the next-token logits (P * group, V) float32 and each row's
        next position (P * group,). ``room`` is unused: this cache grows."""
        device, P, c = self.device, tails.shape[0], len(prefix)
        cache = None
        if c:
            out = self.model(input_ids=torch.tensor([prefix], device=device), use_cache=True, logits_to_keep=1)
            cache = cache_of(out)
            if P > 1:  # a copy of ~c tokens per prompt: the cache concatenates the tails onto it anyway
                cache.batch_repeat_interleave(P)
        key_valid = torch.cat([torch.ones((P, c), dtype=torch.bool), tail_valid], dim=1).long().to(device)
        pos = tail_positions(c, tail_valid).to(device)  # (P, W)
        # The cache goes in 4th position: its keyword is `past_key_values` before transformers 5.x renamed it `cache`.
        out = self.model(tails.to(device), key_valid, pos, cache, use_cache=True, logits_to_keep=1)
        self.cache = cache_of(out)
        if group > 1:  # the cache of each prompt, repeated for its G rows (they part ways at the first token)
            self.cache.batch_repeat_interleave(group)
        self.key_valid = key_valid.repeat_interleave(group, dim=0)
        next_pos = (pos[:, -1] + 1).cpu().repeat_interleave(group)
        return out.logits[:, -1, :].float().cpu().repeat_interleave(group, dim=0), next_pos

    def step(self, tokens: torch.Tensor, pos: torch.Tensor, wanted: torch.Tensor | None = None) -> torch.Tensor:
        """One new token per cached row: tokens, pos (B,) -> next-token logits (B, V) float32, or only
        the ``wanted`` rows' (a 1-D index)."""
        ones = torch.ones((len(tokens), 1), dtype=torch.long, device=self.device)
        self.key_valid = torch.cat([self.key_valid, ones], dim=1)
        out = self.model(tokens[:, None].to(self.device), self.key_valid, pos[:, None].to(self.device), self.cache,
                         use_cache=True)
        self.cache = cache_of(out)
        logits = out.logits[:, -1, :].float().cpu()
        return logits if wanted is None else logits[wanted]

    def keep(self, rows: torch.Tensor) -> None:
        """Keep only these cache rows (a 1-D index), in this order."""
        self.cache.batch_select_indices(rows.to(self.device))
        self.key_valid = self.key_valid[rows.to(self.device)]


def decoder_for(model: Any) -> Any:
    """The fast decoder where it computes the model (Llama-style, on the CPU), else the Hugging Face one."""
    if supports(model) and next(model.parameters()).device.type == "cpu":
        return LlamaDecoder(model)
    return HFDecoder(model)


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    """(x1, x2) -> (-x2, x1) on the last dimension's halves: rotary embedding's quarter turn."""
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.llm.decoder"))
