"""The tiny LM itself: a GPT-style decoder-only transformer over characters (PyTorch, CPU).

nanoGPT's architecture at toy scale: token embeddings, a stack of pre-LayerNorm
blocks (causal self-attention, then an MLP), a final LayerNorm and an output
head tied to the token embedding. No dropout: the course wants every run to be a
deterministic function of its seed.

One change from nanoGPT: positions enter through rotary embeddings (RoPE, Su et
al. 2021) on queries and keys instead of a learned absolute position table.
Attention then depends on *relative* distance, so "the digits just before the
'+'" is the same pattern wherever the question sits in a prompt of variable
length; with learned absolute positions the tiny model learned the arithmetic
several times more slowly (each absolute position had to be learned separately).

Two things differ from a plain training-only GPT, both for batched *sampling*:
  * ``forward`` takes explicit position ids and an attention mask, so prompts of
    different lengths can share a batch (left-padded with ``<pad>``; position 0 is
    always the ``<bos>`` of each row);
  * it can take and return a key/value cache, so each new token costs one
    position's worth of compute instead of re-reading the whole sequence.

Shapes: B = batch rows, T = new positions, S = cached + new positions,
C = n_embd, H = n_head, D = C // H, V = vocabulary size.

You do not run this file; ``python -m course.tinylm.sft`` trains it and
``python -m course.tinylm.sample`` samples from it. Load the shipped pi0 with::

    from course.tinylm.model import load_checkpoint
    model, info = load_checkpoint("data/tinylm/pi0.pt")
"""

from __future__ import annotations

import io
import math
import os
from dataclasses import asdict, dataclass
from typing import Any

import torch
import torch.nn as nn
import torch.nn.functional as F

from course.errors import CourseError
from course.lib.records.jsonl import open_input
from course.lib.records.manifest import sha256_file
from course.lib.records.temporaries import write_bytes_atomic
from course.tinylm.vocab import VOCAB

KVCache = list[tuple[torch.Tensor, torch.Tensor]]  # per layer: keys, values, each (B, H, S, D)


@dataclass(frozen=True)
class GPTConfig:
    """Hyper-parameters of the network (stored inside every checkpoint)."""

    vocab_size: int = VOCAB.size
    block_size: int = 192  # longest sequence: <bos> + prompt (<= 140 chars) + <sep> + completion + <eos>
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128


def rope_table(n_positions: int, head_dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of the rotary angles of positions 0..n_positions-1: two (n_positions, D/2) tensors.

    Pair i of a head's D dimensions turns by pos * 10000^(-2i/D) radians: fast
    turns resolve nearby positions, slow turns distant ones. Built once per model
    (the angles never change), then read by position, so a decode step does not rebuild
    them with seven small tensor operations per forward call.
    """
    inv_freq = 1.0 / (10000.0 ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))  # (D/2,)
    angles = torch.arange(n_positions, dtype=torch.float32)[:, None] * inv_freq  # (N, D/2)
    return angles.cos(), angles.sin()


def _rotate(x: torch.Tensor, rope: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    """Rotate pairs (x_i, x_{i+D/2}) of (B, H, T, D) by the position's angles: q.k then depends on distance only."""
    cos, sin = rope
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


def additive_mask(mask: torch.Tensor) -> torch.Tensor:
    """A bool attention mask as the float mask attention adds to its scores: True -> 0.0, False -> -inf.

    ``scaled_dot_product_attention`` makes exactly this conversion itself, in every
    layer; converting once per forward call gives the same numbers four times cheaper.
    """
    return torch.zeros(mask.shape, dtype=torch.float32).masked_fill_(~mask, float("-inf"))


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.n_head = cfg.n_head
        self.c_attn = nn.Linear(cfg.n_embd, 3 * cfg.n_embd)  # q, k, v in one matmul
        self.c_proj = nn.Linear(cfg.n_embd, cfg.n_embd)

    def forward(
        self,
        x: torch.Tensor,
        rope: tuple[torch.Tensor, torch.Tensor],
        mask: torch.Tensor | None,
        past: tuple[torch.Tensor, torch.Tensor] | None,
        past_len: int | None = None,
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        B, T, C = x.shape
        H = self.n_head
        qk, v = self.c_attn(x).split([2 * C, C], dim=2)  # (B, T, 2C), (B, T, C)
        # q and k rotated together (one set of element-wise operations instead of two; the same numbers)
        q, k = _rotate(qk.view(B, T, 2 * H, C // H).transpose(1, 2), rope).split(H, dim=1)  # (B, H, T, D) each
        v = v.view(B, T, H, C // H).transpose(1, 2)  # (B, H, T, D)
        if past is not None and past_len is not None:
            # Preallocated cache (sampling): write the new keys/values in place, attend to the filled part.
            # Growing the cache with torch.cat instead copied it whole at every token (half the sampling time).
            past[0][:, :, past_len : past_len + T] = k
            past[1][:, :, past_len : past_len + T] = v
            k, v = past[0][:, :, : past_len + T], past[1][:, :, : past_len + T]  # (B, H, S, D) views
            new_past = past
        elif past is not None:
            k = torch.cat([past[0], k], dim=2)  # (B, H, S, D)
            v = torch.cat([past[1], v], dim=2)
            new_past = (k, v)
        else:
            new_past = (k, v)
        # mask: (B, 1, T, S), 0.0 where query t may look at key s and -inf elsewhere; None = causal (no cache).
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=mask is None)  # (B, H, T, D)
        y = y.transpose(1, 2).contiguous().view(B, T, C)  # (B, T, C)
        return self.c_proj(y), new_past


class MLP(nn.Module):
    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.c_fc = nn.Linear(cfg.n_embd, 4 * cfg.n_embd)
        self.c_proj = nn.Linear(4 * cfg.n_embd, cfg.n_embd)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c_proj(F.gelu(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.n_embd)
        self.attn = CausalSelfAttention(cfg)
        self.ln_2 = nn.LayerNorm(cfg.n_embd)
        self.mlp = MLP(cfg)

    def forward(self, x, rope, mask, past, past_len=None):
        a, kv = self.attn(self.ln_1(x), rope, mask, past, past_len)
        x = x + a  # residual stream, (B, T, C)
        x = x + self.mlp(self.ln_2(x))
        return x, kv


class GPT(nn.Module):
    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.wte = nn.Embedding(cfg.vocab_size, cfg.n_embd)
        self.blocks = nn.ModuleList([Block(cfg) for _ in range(cfg.n_layer)])
        self.ln_f = nn.LayerNorm(cfg.n_embd)
        self.lm_head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight  # weight tying (as in GPT-2 / nanoGPT)
        # Rotary angles for every position the model can see (not a buffer: never saved in a checkpoint).
        self.rope_cos, self.rope_sin = rope_table(cfg.block_size, cfg.n_embd // cfg.n_head)
        self.apply(self._init_weights)
        # GPT-2's scaled init of the residual projections keeps the stream's variance flat with depth.
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * cfg.n_layer))

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def n_params(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def forward(
        self,
        idx: torch.Tensor,
        pos: torch.Tensor,
        mask: torch.Tensor | None,
        past: KVCache | None = None,
        past_len: int | None = None,
    ) -> tuple[torch.Tensor, KVCache]:
        """Logits for every new position, and the updated cache.

        idx:  (B, T) token ids of the new positions
        pos:  (B, T) their position ids (0 = the row's <bos>)
        mask: (B, 1, T, S) bool, True where new position t may attend to key s
              (S = cached positions + T); see ``attention_mask``. Or the same as a
              float mask (``additive_mask``: 0.0 / -inf), which a caller that updates
              one column per decode step can keep and reuse. None means plain
              causal attention, right for right-padded batches without a cache
              (padding sits after every real token, so causality alone hides it).
        past: the cache returned by the previous call, or None.
        past_len: None, or the number of filled positions of a *preallocated* cache
              (``allocate_cache``): new keys/values are written at past_len.. in place.
        returns logits (B, T, V) and the cache covering all S positions.
        """
        if int(pos.max()) >= self.cfg.block_size:
            raise CourseError(f"sequence longer than the model's context ({self.cfg.block_size} tokens)")
        x = self.wte(idx)  # (B, T, C)
        rope = self.rope_cos[pos][:, None], self.rope_sin[pos][:, None]  # (B, 1, T, D/2) each
        if mask is not None and mask.dtype == torch.bool:
            mask = additive_mask(mask)  # once here, not once per layer inside attention
        cache: KVCache = []
        for i, block in enumerate(self.blocks):
            x, kv = block(x, rope, mask, None if past is None else past[i], past_len)
            cache.append(kv)
        logits = self.lm_head(self.ln_f(x))  # (B, T, V)
        return logits, cache


def allocate_cache(prefix: KVCache, total: int, group: int = 1) -> KVCache:
    """Copy a prefill cache into buffers with room for ``total`` positions, repeated ``group`` times per row.

    prefix: per layer (P, H, S, D) keys and values -> per layer (P*group, H, total, D) buffers.
    Positions S.. are left unset: each is written (``past_len``) before attention reads it.
    """
    out: KVCache = []
    for k, v in prefix:
        P, H, S, D = k.shape
        kb = k.new_empty(P * group, H, total, D)
        vb = v.new_empty(P * group, H, total, D)
        # Copied straight from each prompt's keys to its G rows (a broadcast): no repeated copy in between.
        kb.view(P, group, H, total, D)[:, :, :, :S] = k[:, None]
        vb.view(P, group, H, total, D)[:, :, :, :S] = v[:, None]
        out.append((kb, vb))
    return out


def attention_mask(valid: torch.Tensor) -> torch.Tensor:
    """Causal mask for a whole (possibly left-padded) batch: (B, L) bool -> (B, 1, L, L) bool.

    Position t may attend to s when s <= t and s is a real token. A padding
    position is allowed to attend to itself only, so that no softmax row is empty
    (an all-masked row would produce NaN); its output is never used.
    """
    B, L = valid.shape
    causal = torch.ones(L, L, dtype=torch.bool).tril()  # (L, L)
    m = causal[None, :, :] & valid[:, None, :]  # (B, L, L)
    m = m | torch.eye(L, dtype=torch.bool)[None, :, :]
    return m[:, None, :, :]  # (B, 1, L, L)


def positions(valid: torch.Tensor) -> torch.Tensor:
    """Position ids that start at 0 on each row's first real token: (B, L) bool -> (B, L) long."""
    return (valid.long().cumsum(dim=1) - 1).clamp(min=0)


# ---------------------------------------------------------------------------
# Checkpoints: a plain dict of tensors (torch.load(weights_only=True) opens it)
# plus the config as a small integer tensor, so one file is self-describing.
# ---------------------------------------------------------------------------
_CONFIG_KEY = "_config"
CHECKPOINT_LIMIT = 1 << 30  # bytes; the shipped pi0 is under 5 MB, and --n-embd is capped far below this
_CONFIG_FIELDS = ("vocab_size", "block_size", "n_layer", "n_head", "n_embd")


def save_checkpoint(model: GPT, path: str | os.PathLike[str]) -> str:
    """Write the weights (float32 state_dict + config) and return the file's sha256."""
    state = {k: v.detach().clone().contiguous() for k, v in model.state_dict().items() if k != "lm_head.weight"}
    state[_CONFIG_KEY] = torch.tensor([getattr(model.cfg, f) for f in _CONFIG_FIELDS], dtype=torch.int64)
    # Sort keys so the bytes do not depend on module registration details, and serialise to memory
    # first: torch.save names the zip archive after the file, so saving the same weights as pi0.pt
    # and as final.pt would give different bytes (and different policy names).
    buf = io.BytesIO()
    torch.save(dict(sorted(state.items())), buf)
    return write_bytes_atomic(path, buf.getvalue())  # marked temporary, one rename (course.lib.records.temporaries)


def load_checkpoint(path: str | os.PathLike[str]) -> tuple[GPT, dict[str, Any]]:
    """Load a checkpoint written by ``save_checkpoint``: (model in eval mode, info dict).

    info = {"path", "sha256", "policy": "tinylm:<first 12 hex of sha256>", "config", "n_params"}.
    """
    if not os.path.exists(path):
        raise CourseError(f"{path}: no such checkpoint")
    # The one opener (course.lib.records.jsonl.open_input): a FIFO or a device is refused before torch reads a
    # byte (torch.load would wait on a FIFO forever), and a file larger than any tiny LM is not read.
    with open_input(path, "a tiny LM checkpoint", limit=CHECKPOINT_LIMIT) as f:
        try:
            state = torch.load(f, map_location="cpu", weights_only=True)
        except Exception as exc:  # a truncated or foreign file: one clear line, not a traceback  # noqa: BLE001
            raise CourseError(f"{path}: not a tiny LM checkpoint ({type(exc).__name__}: {exc})") from None
    if not isinstance(state, dict) or _CONFIG_KEY not in state:
        raise CourseError(f"{path}: not a tiny LM checkpoint (no {_CONFIG_KEY} entry)")
    config = state.pop(_CONFIG_KEY)
    if not (isinstance(config, torch.Tensor) and config.dtype == torch.int64
            and tuple(config.shape) == (len(_CONFIG_FIELDS),)):
        raise CourseError(f"{path}: not a tiny LM checkpoint ({_CONFIG_KEY} is not {len(_CONFIG_FIELDS)} integers: "
                          f"{', '.join(_CONFIG_FIELDS)})")
    cfg = GPTConfig(**dict(zip(_CONFIG_FIELDS, (int(v) for v in config.tolist()))))
    if cfg.vocab_size != VOCAB.size:
        raise CourseError(f"{path}: vocabulary size {cfg.vocab_size} does not match this code's {VOCAB.size}")
    problem = _misfit(cfg, state)
    if problem is not None:
        raise CourseError(f"{path}: weights do not fit the config: {problem}")
    model = GPT(cfg)  # no larger than the tensors the file itself holds: _misfit compared every shape
    state["lm_head.weight"] = state["wte.weight"]
    try:
        model.load_state_dict(state)
    except RuntimeError as exc:
        raise CourseError(f"{path}: weights do not fit the config: {exc}") from None
    model.eval()
    digest = sha256_file(path)
    info = {
        "path": str(path),
        "sha256": digest,
        "policy": policy_name(digest),
        "config": asdict(cfg),
        "n_params": model.n_params(),
    }
    return model, info


def _misfit(cfg: GPTConfig, state: dict[str, Any]) -> str | None:
    """Why the tensors of a checkpoint are not the network its config describes, or None.

    The config is the file's word, so it is checked before anything is allocated: the network is
    built on PyTorch's "meta" device (shapes only, no memory), and every weight it needs must be in
    the file with that shape. A config asking for 10**7 channels is refused here, not by an
    allocator failing on 10**15 bytes.
    """
    if min(cfg.block_size, cfg.n_layer, cfg.n_head, cfg.n_embd) < 1:
        return f"every size must be at least 1, got {asdict(cfg)}"
    if cfg.n_embd % cfg.n_head or (cfg.n_embd // cfg.n_head) % 2:
        return f"n_embd {cfg.n_embd} must split into {cfg.n_head} heads of an even width"
    with torch.device("meta"):
        needed = {k: tuple(v.shape) for k, v in GPT(cfg).state_dict().items() if k != "lm_head.weight"}
    for name, shape in needed.items():
        held = state.get(name)
        if not isinstance(held, torch.Tensor):
            return f"no tensor {name!r} (shape {shape})"
        if tuple(held.shape) != shape:
            return f"{name!r} has shape {tuple(held.shape)}, the config needs {shape}"
    extra = sorted(k for k in state if k not in needed)
    return f"unexpected entries {extra[:3]}" if extra else None


def policy_name(sha256_hex: str) -> str:
    """The ``policy`` string recorded in rollouts: ``tinylm:<first 12 hex of the checkpoint's sha256>``."""
    return f"tinylm:{sha256_hex[:12]}"


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.tinylm.model"))
