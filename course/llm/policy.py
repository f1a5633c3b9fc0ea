"""The real LLM as a policy of Loop C: sampling, log-probabilities and pi0, for ``course.lib.learning.rl_loop``.

The course's RL loop asks a policy for a few things (``course.lib.learning.rl_loop.RLPolicy``):
sample a group of completions with one seed per row, give the log-probability of every
chosen token under the policy (with gradients) and under pi0 (without), name the
parameters to update, save them. ``LLMPolicy`` answers them for a transformers causal LM
(SmolLM2-135M-Instruct by default) with LoRA adapters (``course.llm.lora``):

  sampling     ``course.llm.sampler`` (the same sampler as ``course.llm.sample``: per-row
               random streams, so training samples, the dev slice and the holdout are
               drawn exactly as the course's rollout files are), under one prompt template
  log-probs    teacher forcing: the prompts and the sampled completions are read in one
               forward pass, with gradients, and the LM head is applied only where a
               completion token was chosen (a 49,152-way softmax per real token, not per
               padding slot)
  pi0          the same model with the adapters switched off: exact, and free in memory; it
               is the KL reference too, unless a warm start (RFT) moved the starting point:
               then the reference is the warm-started policy, a frozen copy of its adapters
  parameters   the adapters' A and B matrices only; the model's own weights stay frozen
  save         the adapters as safetensors (a few MB), named by their sha256; ``read_adapter``
               reads such a file back, for ``course.llm.rl --init`` and ``course.llm.sample
               --adapters`` alike (the project's one input opener, the course's metadata
               checked, every fault a one-line ``CourseError``)

Reading each prompt once: every prompt of a template begins with the same tokens (the chat
header, the system prompt, the worked examples: ~110 of the ~140 tokens of a few-shot
prompt), and the G samples of one prompt share all of it. ``completion_logprobs`` takes the
common prefix's keys and values from the model's prefix cache (``course.llm.prefix_cache``: read
once per policy state, batch 1, shared with sampling) and repeats them for every row; then each
prompt is one segment: its own tail, followed by its G completions side by side, each completion
attending to its prompt and to its own earlier tokens only (a block-diagonal mask) at the
positions it had when it was sampled, and the segments are packed into rows as long as the
longest (a prompt per row would pad every row to the prompt with the longest completions).
The result is exactly the log-probability the model
gives each prompt + completion (tests check it against one full forward pass per sequence),
with no prompt read, stored or differentiated G times: on SmolLM2 with P = G = 8 the
log-probability pass went from ~5 GB of activations to well under 1 GB.

Not a CLI; ``python -m course.llm.rl`` trains it.
"""

from __future__ import annotations

import contextlib
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import torch
import torch.nn.functional as F

from course.errors import CourseError
from course.lib.policy.rollout_records import rollout_records
from course.lib.policy.sampling import SampledBatch
from course.lib.policy.templates import PromptTemplate, get_template, render
from course.lib.records.formats import PROMPT_TEMPLATE
from course.lib.records.jsonl import dumps_line, loads_document, read_input
from course.lib.records.manifest import sha256_file
from course.llm import LORA_ALPHA_RANGE, LORA_RANK_LIMIT
from course.llm.decoder import release_fused_blocks
from course.llm.lora import (
    TARGETS,
    NonFiniteLogits,
    adapter_parameters,
    adapter_state,
    adapters_off,
    add_lora,
    anchor,
    anchored,
    load_adapter_state,
    lora_shapes,
    refuse_non_finite,
    refuse_oversized,
)
from course.llm.precision import check_precision, computing, to_bfloat16_products
from course.llm.prefix_cache import as_cache, prefix_kv
from course.llm.sampler import encode_prompts, generate, sample_items, shared_prefix_length, template_prefix

# The one metadata key of a saved adapter file: JSON {"base_policy", "rank", "alpha", "targets"}.
ADAPTER_METADATA = "course.llm.lora"
# The largest adapter file read. An adapter costs 4 bytes per number: rank 8 on SmolLM2's seven
# projections is 9.8 MB, and course.llm.rl's largest --lora-rank (256) is 313 MB; 512 MiB holds that
# with room, and a file beyond it is not the course's (the whole file is read into memory, then parsed).
ADAPTER_FILE_LIMIT = 512 << 20
ADAPTER_EXPECTED = "a LoRA adapter file (.safetensors, as course.llm.rl saves)"
# What an adapter's metadata may say: course.llm.rl's --lora-rank and --lora-alpha ranges. A rank is
# allocated (rank x width per projection) before any tensor is compared, so it is bounded first.
RANK_LIMIT, ALPHA_RANGE = LORA_RANK_LIMIT, LORA_ALPHA_RANGE


def _prompt_rows(ro: SampledBatch) -> list[list[int]]:
    """Each prompt's real token ids (its left padding removed)."""
    return [row[valid].tolist() for row, valid in zip(ro.prompt_tokens, ro.prompt_valid)]


def completion_logprobs(
    model: Any, ro: SampledBatch, pad_id: int, *, entropy: bool, shared_prefix: Sequence[int] | None = None
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """log pi(chosen token | prompt, earlier tokens) (B, K) and, if asked, the entropy there (B, K).

    Gradients flow into the log-probabilities when the model has trainable parameters. Both
    tensors are 0 where ``ro.mask`` is False. Layout (see the module docstring): the prompts'
    shared prefix once; then ONE segment per prompt holding its own tail followed by its G
    completions side by side (their real tokens only), segments packed into rows (``pack_segments``),
    each completion seeing its prompt and its own earlier tokens only (a block mask), at the
    positions it had when it was sampled. No
    prompt is read, stored or differentiated G times, and no padding slot after an end token is
    computed. The LM head runs only at the positions that predict a chosen token. The prefix's keys
    and values come from the model's prefix cache (``course.llm.prefix_cache``: computed once per policy
    state, with its autograd graph when gradients are on, so the gradient reaches the adapters through
    the prefix exactly as through a fresh one); ``shared_prefix`` is the template's prefix that keys it.
    """
    body, head = model.model, model.lm_head
    device = next(model.parameters()).device
    rows = _prompt_rows(ro)
    P, G = len(rows), ro.group
    B, K = ro.tokens.shape
    c = shared_prefix_length(rows, shared_prefix)
    # 1. the shared prefix, once per policy state (batch 1), its keys/values repeated for each row (below)
    prefix = prefix_kv(model, rows[0][:c], graph=torch.is_grad_enabled()) if c else None
    # 2. per prompt ONE segment: [its own tail | completion 1 | ... | completion G], real tokens only (the end
    #    token included, no padding slot); segments packed into as few rows as fit the longest (first fit,
    #    longest first): a row of one prompt per row would be padded to the longest prompt's G completions
    #    (SmolLM2, P = G = 8: 1,320 slots for 792 real tokens; packed, about 990)
    tails = [r[c:] for r in rows]
    lengths = ro.mask.sum(dim=1).tolist()  # (B,) real tokens of each completion
    segments = [len(tails[p]) + sum(lengths[p * G : (p + 1) * G]) for p in range(P)]
    packed = pack_segments(segments)
    R, L = len(packed), max(segments)
    cache = as_cache(*prefix, R) if prefix is not None else None  # the prefix's keys/values, once per row
    ids = torch.full((R, L), pad_id, dtype=torch.long)
    pos = torch.zeros((R, L), dtype=torch.long)
    see = torch.zeros((R, L, L), dtype=torch.bool)  # see[row, query, key]: may attend (keys of this row)
    # per completion: (row, position) of the slot that predicts each of its tokens
    q_by_row: list[list[tuple[int, int]]] = [[] for _ in range(B)]
    for r, members in enumerate(packed):
        o = 0  # where this segment starts in its row
        for p in members:
            n_t = len(tails[p])
            ids[r, o : o + n_t] = torch.tensor(tails[p], dtype=torch.long)
            pos[r, o : o + n_t] = c + torch.arange(n_t)  # positions continue the prefix's
            see[r, o : o + n_t, o : o + n_t] = torch.ones(n_t, n_t, dtype=torch.bool).tril()
            s0, last = o + n_t, c + n_t - 1
            for j in range(G):
                b, n = p * G + j, lengths[p * G + j]
                ids[r, s0 : s0 + n] = ro.tokens[b, :n]
                pos[r, s0 : s0 + n] = last + 1 + torch.arange(n)  # the positions it had when it was sampled
                see[r, s0 : s0 + n, o : o + n_t] = True  # its prompt's tail
                see[r, s0 : s0 + n, s0 : s0 + n] = torch.ones(n, n, dtype=torch.bool).tril()  # its own earlier tokens
                q_by_row[b] = [(r, o + n_t - 1)] + [(r, s0 + t) for t in range(n - 1)]  # token 0 <- the tail's end
                s0 += n
            o = s0
    q_of = [q for qs in q_by_row for q in qs]  # in ro.mask's row-major order
    see |= torch.eye(L, dtype=torch.bool)[None]  # every slot sees itself (a padding slot: only itself; no empty row)
    mask = torch.cat([torch.ones((R, L, c), dtype=torch.bool), see], dim=2)[:, None]  # (R, 1, L, c + L)
    out = body(ids.to(device), mask.to(device), pos.to(device), cache, use_cache=False)
    rows_idx = torch.tensor([r for r, _ in q_of], device=device)
    cols_idx = torch.tensor([q for _, q in q_of], device=device)
    hidden = out.last_hidden_state[rows_idx, cols_idx]  # (N, D), N = chosen tokens, in ro.mask's order
    m = ro.mask.to(device)
    logp_all = F.log_softmax(head(hidden).float(), dim=-1)  # (N, V)
    chosen = logp_all.gather(-1, ro.tokens.to(device)[m][:, None]).squeeze(-1)  # (N,)
    logp = torch.zeros((B, K), dtype=chosen.dtype, device=device).masked_scatter(m, chosen)
    ent = None
    if entropy:
        with torch.no_grad():
            e = -(logp_all.exp() * logp_all).sum(dim=-1)  # (N,) nats
            ent = torch.zeros((B, K), dtype=e.dtype, device=device).masked_scatter(m, e)
    return logp, ent


def pack_segments(lengths: Sequence[int]) -> list[list[int]]:
    """Segments (by index) packed into rows no longer than the longest: first fit, longest first; each row
    lists its segments in index order. Deterministic (ties keep index order).

    >>> pack_segments([66, 165, 84, 82, 112, 124, 73, 86])
    [[1], [5], [4], [6, 7], [0, 2], [3]]
    """
    cap = max(lengths)
    rows: list[list[int]] = []
    room: list[int] = []
    for i in sorted(range(len(lengths)), key=lambda k: (-lengths[k], k)):
        r = next((r for r in range(len(rows)) if room[r] >= lengths[i]), None)
        if r is None:
            rows.append([])
            room.append(cap)
            r = len(rows) - 1
        rows[r].append(i)
        room[r] -= lengths[i]
    return [sorted(r) for r in rows]


class LLMPolicy:
    """A transformers causal LM with LoRA adapters under one prompt template: Loop C's ``RLPolicy``.

    ``llm`` is a ``course.llm.load.LoadedLLM``; its model gets the adapters in place (its own
    weights frozen). The template turns each dataset prompt into the chat the model reads; it
    is the environment, recorded on every rollout line (a Locked Room field).
    """

    def __init__(self, llm: Any, template: PromptTemplate, *, rank: int, alpha: float, adapter_seed: int,
                 threads: int, init_adapter: AdapterFile | None = None, precision: str = "float32") -> None:
        self.llm, self.template, self.threads = llm, template, threads
        self.precision = check_precision(precision)
        self.model, self.tokenizer = llm.model, llm.tokenizer
        self.rank, self.alpha, self.adapter_seed = rank, alpha, adapter_seed
        if init_adapter is not None:  # before the model is touched or anything allocated: a refusal leaves it as loaded
            _check_fits(init_adapter, llm.policy, rank, alpha)
            _check_tensors(init_adapter, lora_shapes(self.model, rank=rank))
            refuse_oversized(init_adapter.path, self.model, init_adapter.state, alpha / rank)
        if precision == "bfloat16":  # before the adapters: they are made in float32 beside the bfloat16 base
            to_bfloat16_products(self.model)
        add_lora(self.model, rank=rank, alpha=alpha, seed=adapter_seed)
        self.updates = 0  # training steps taken (turns to training: train_mode(True)): what a refusal names
        if init_adapter is not None:
            try:
                load_adapter_state(self.model, init_adapter.state, source=str(init_adapter.path))
            except ValueError as exc:  # names or shapes that are not this model's
                raise CourseError(f"{init_adapter.path}: {exc}") from None
        self.model.eval()
        self.render(["Compute 2 + 3."])  # a template that cannot render this chat is refused now, not mid-run
        # The KL reference: pi0 (adapters off) until ``anchor_reference`` makes it the policy as it is then.
        self.anchored = False
        self.pi0_name: str = llm.policy
        self.pad_id = int(self.tokenizer.pad_token_id)
        self.shared_prefix = template_prefix(self.tokenizer, template)  # what keys the prefix cache

    # --- what the loop asks -------------------------------------------------------------------
    def describe(self) -> str:
        n_train = sum(p.numel() for p in self.parameters())
        n_all = sum(p.numel() for n, p in self.model.named_parameters() if "lora_" not in n)
        return (f"policy {self.pi0_name} + LoRA adapters (rank {self.rank}, alpha {self.alpha:g}, on "
                f"{'/'.join(TARGETS)}: {n_train:,} trainable beside {n_all:,} frozen), "
                f"template {self.template.name!r}; "
                f"pi0 = the same model with the adapters off; KL reference: "
                f"{'the policy RL starts from (adapters frozen at the warm start)' if self.anchored else 'pi0'}, "
                f"{self.threads} threads"
                + (", bfloat16 products (course.llm.precision)" if self.precision == "bfloat16" else ""))

    def computing(self) -> contextlib.AbstractContextManager[Any]:
        """The precision every forward pass runs in (``course.llm.precision``): sampling and both log-prob passes
        alike, so the samples come from (nearly: see that module) the policy that is trained."""
        return computing(self.precision, self.llm.device)

    def render(self, prompts: Sequence[str], template: str | None = None) -> list[str]:
        """The chats the model reads, one per dataset prompt (under the run's template unless named)."""
        t = self.template if template is None else get_template(template)
        return [render(self.tokenizer, t, p) for p in prompts]

    def generate(self, prompts: Sequence[str], row_seeds: Sequence[str], *, group: int, temperature: float,
                 max_tokens: int, template: str | None = None) -> SampledBatch:
        """Sample from the current policy; ``template`` names another prompt template (RFT's sampler only)."""
        # The run's template: its prefix is cached with its graph, for the pi pass of the same step.
        shared = self.shared_prefix if template is None else template_prefix(self.tokenizer, get_template(template))
        with self.computing():
            return generate(self.model, self.tokenizer, self.render(prompts, template), row_seeds, group=group,
                            temperature=temperature, max_tokens=max_tokens, shared_prefix=shared,
                            keep_graph=template is None)

    def teacher_batch(self, prompts: Sequence[str], completions: Sequence[Sequence[int]]) -> SampledBatch:
        """Given completions (token ids, end token included) after the run template's prompts, as a
        one-sample-per-prompt batch that ``logprobs`` reads (supervised learning: RFT's clone step)."""
        prompt, valid = encode_prompts(self.tokenizer, self.render(prompts))
        width = max(len(c) for c in completions)
        tokens = torch.full((len(completions), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(completions), width), dtype=torch.bool)
        for i, ids in enumerate(completions):
            tokens[i, : len(ids)] = torch.tensor(list(ids), dtype=torch.long)
            mask[i, : len(ids)] = True
        texts = [self.tokenizer.decode(list(ids)) for ids in completions]
        return SampledBatch(prompt_tokens=prompt, prompt_valid=valid, tokens=tokens, mask=mask, group=1, texts=texts,
                        truncated=[False] * len(completions), cropped=[False] * len(completions))

    def logprobs(self, rollouts: SampledBatch) -> tuple[torch.Tensor, torch.Tensor]:
        with self.computing():
            logp, ent = completion_logprobs(self.model, rollouts, self.pad_id, entropy=True,
                                            shared_prefix=self.shared_prefix)
        assert ent is not None
        refuse_non_finite(logp, self.model, f"training step {self.updates}")
        return logp, ent

    def reference_logprobs(self, rollouts: SampledBatch) -> torch.Tensor:
        # pi0 (adapters off: exact, and no second copy of the model), or the anchored warm start
        with adapters_off(self.model) if not self.anchored else anchored(self.model), self.computing():
            return completion_logprobs(self.model, rollouts, self.pad_id, entropy=False,
                                       shared_prefix=self.shared_prefix)[0]

    def anchor_reference(self) -> None:
        """From now on the KL reference is the policy as it is NOW (a frozen copy of its adapters):
        after a warm start, the leash holds RL near where it started, not near the model before
        the warm start (which would pull the warm start back out)."""
        anchor(self.model)
        self.anchored = True

    def computing_as_anchor(self) -> contextlib.AbstractContextManager[None]:
        """Inside the block the policy computes as it was when ``anchor_reference`` was called (the
        warm start): the holdout measures it beside pi0 and the final policy."""
        return anchored(self.model)

    def parameters(self) -> list[torch.nn.Parameter]:
        return adapter_parameters(self.model)

    def train_mode(self, training: bool) -> None:
        self.model.train(training)
        if training:  # sampling is over until the next update: its fused weights go (course.llm.decoder)
            self.updates += 1  # every training step (RL's, RFT's) turns to training once, before its gradient pass
            release_fused_blocks(self.model)

    def sample_items(self, items: Sequence[tuple[str, str]], *, n: int, seed: int, temperature: float,
                     max_tokens: int) -> list[list[tuple[str, bool]]]:
        try:
            with self.computing():
                return sample_items(self.model, self.tokenizer, items, self.template, n=n, seed=seed,
                                    temperature=temperature, max_tokens=max_tokens)
        except NonFiniteLogits as exc:  # the sampler names the token; the step is the loop's
            raise NonFiniteLogits(f"{exc} (sampling for training step {self.updates + 1})") from None

    def rollout_records(self, items: Sequence[tuple[str, str]], *, pi0: bool, policy_name: str, n: int, seed: int,
                        temperature: float, top_p: float, max_tokens: int,
                        progress: Callable[[int], None] | None = None) -> tuple[list[dict[str, Any]], int]:
        with adapters_off(self.model) if pi0 else contextlib.nullcontext(), self.computing():
            drawn = sample_items(self.model, self.tokenizer, items, self.template, n=n, seed=seed,
                                 temperature=temperature, top_p=top_p, max_tokens=max_tokens, progress=progress)
        sampling: dict[str, Any] = {"temperature": temperature, "top_p": top_p, "max_tokens": max_tokens, "seed": seed}
        if self.precision != "float32":  # another computation, another experiment: the Locked Room tells them apart
            sampling["precision"] = self.precision
        return rollout_records([ident for ident, _ in items], drawn, policy_name, sampling,
                               {PROMPT_TEMPLATE: self.template.record()})

    def save(self, path: Path) -> str:
        from safetensors.torch import save_file

        # ONE metadata key: safetensors writes a metadata mapping in no fixed order, and the same
        # adapters must always be the same bytes (the trained policy is named by their sha256).
        about = {"base_policy": self.pi0_name, "rank": self.rank, "alpha": self.alpha, "targets": list(TARGETS)}
        save_file(dict(sorted(adapter_state(self.model).items())), str(path),
                  metadata={ADAPTER_METADATA: dumps_line(about)})
        return sha256_file(path)

    def trained_name(self, sha256: str) -> str:
        return f"{self.pi0_name}+lora:{sha256[:12]}"

    def shift_report(self, policy_name: str) -> dict[str, Any] | None:
        return None  # no frozen pi0 rollouts are compared here: eval_pi0_holdout/ is pi0's side


@dataclass(frozen=True)
class AdapterFile:
    """A saved adapter file, read and checked: its tensors, what its metadata says, its sha256."""

    path: str
    state: dict[str, torch.Tensor]
    base_policy: str  # the policy (model) the adapters were trained on: pi0's name
    rank: int
    alpha: float
    targets: tuple[str, ...]
    sha256: str  # of the bytes read: the trained policy's name is made from it

    def about(self) -> dict[str, Any]:
        """What a manifest records beside the file's fingerprint."""
        return {"base_policy": self.base_policy, "rank": self.rank, "alpha": self.alpha, "targets": list(self.targets)}


def read_adapter(path: str | Path) -> AdapterFile:
    """Read a saved adapter file (``LLMPolicy.save``'s) through the project's input opener.

    A FIFO, a device or a directory is refused without waiting, a file over ``ADAPTER_FILE_LIMIT``
    without reading it; then the safetensors header is checked by hand (its length, its JSON, the
    course's metadata) before safetensors parses the tensors from the same bytes, so the sha256 that
    names the policy is the sha256 of exactly what was loaded. Anything wrong: ``CourseError``
    ``path: what is wrong``. Whether the tensors fit a model is ``LLMPolicy``'s check.
    """
    data = read_input(path, ADAPTER_EXPECTED, ADAPTER_FILE_LIMIT)
    about = _adapter_metadata(data, path)
    from safetensors import SafetensorError
    from safetensors.torch import load

    try:
        state = load(data)
    except (SafetensorError, ValueError, RuntimeError) as exc:  # the header passed; the tensors' bytes did not
        raise CourseError(
            f"{path}: not a readable safetensors file "
            f"({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})"
        ) from None
    return AdapterFile(path=str(path), state=state, sha256=hashlib.sha256(data).hexdigest(), **about)


def _adapter_metadata(data: bytes, path: str | Path) -> dict[str, Any]:
    """The course's metadata of a safetensors file's bytes, checked field by field (``CourseError`` otherwise).

    A safetensors file is an 8-byte little-endian header length, that many bytes of JSON header
    (``__metadata__`` holds string metadata), then the tensors' bytes.
    """
    if len(data) < 8:
        raise CourseError(f"{path}: not a safetensors file ({len(data)} bytes; expected {ADAPTER_EXPECTED})")
    size = int.from_bytes(data[:8], "little")
    if size > len(data) - 8:
        raise CourseError(f"{path}: not a safetensors file (its first 8 bytes announce a {size:,}-byte header, "
                          f"the file holds {len(data) - 8:,} more bytes): truncated, or another format")
    try:
        text = data[8 : 8 + size].decode("utf-8")
    except UnicodeDecodeError:
        raise CourseError(f"{path}: not a safetensors file (its header is not UTF-8 JSON)") from None
    header = loads_document(text, path, "safetensors header")
    metadata = header.get("__metadata__")
    raw = metadata.get(ADAPTER_METADATA) if isinstance(metadata, dict) else None
    if not isinstance(raw, str):
        raise CourseError(f"{path}: a safetensors file without the course's {ADAPTER_METADATA!r} metadata: "
                          "not adapters saved by course.llm.rl")
    about = loads_document(raw, path, f"{ADAPTER_METADATA!r} metadata")
    base, rank, alpha, targets = (about.get(k) for k in ("base_policy", "rank", "alpha", "targets"))
    problems = []
    if not isinstance(base, str) or not base:
        problems.append("base_policy must be a policy name")
    if type(rank) is not int or not 1 <= rank <= RANK_LIMIT:
        problems.append(f"rank must be an integer between 1 and {RANK_LIMIT}")
    # the type tests earlier in the same condition exclude None
    if type(alpha) not in (int, float) or not ALPHA_RANGE[0] <= alpha <= ALPHA_RANGE[1]:  # type: ignore[operator]
        problems.append(f"alpha must be a number between {ALPHA_RANGE[0]:g} and {ALPHA_RANGE[1]:g}")
    if not isinstance(targets, list) or not targets or not all(isinstance(t, str) for t in targets):
        problems.append("targets must be a list of layer names")
    if problems:
        raise CourseError(f"{path}: the {ADAPTER_METADATA!r} metadata is malformed: {'; '.join(problems)}")
    # the type tests earlier in the same condition exclude None
    return {"base_policy": base, "rank": rank, "alpha": float(alpha), "targets": tuple(targets)}  # type: ignore[arg-type]


def _check_tensors(adapter: AdapterFile, expected: dict[str, tuple[int, ...]]) -> None:
    """``CourseError`` unless the file holds exactly the tensors ``expected`` names, each float32, of exactly
    that shape and finite (a NaN or an infinity in lora_B would make every logit NaN: every completion the
    last token id). Checked before ``add_lora`` allocates anything."""
    missing, extra = sorted(set(expected) - set(adapter.state)), sorted(set(adapter.state) - set(expected))
    if missing or extra:
        raise CourseError(f"{adapter.path}: adapter file does not fit the model: "
                          f"missing {missing[:2]}, unexpected {extra[:2]}")
    for name, shape in expected.items():
        t = adapter.state[name]
        if t.dtype != torch.float32:
            raise CourseError(f"{adapter.path}: adapter {name} holds {str(t.dtype).replace('torch.', '')} numbers; "
                              "adapters are float32")
        if tuple(t.shape) != shape:
            raise CourseError(f"{adapter.path}: adapter {name}: shape {tuple(t.shape)}, the model needs {shape}")
        if not bool(torch.isfinite(t).all()):
            raise CourseError(f"{adapter.path}: adapter {name} holds NaN or infinite numbers; refusing it")


def _check_fits(adapter: AdapterFile, policy: str, rank: int, alpha: float) -> None:
    """``CourseError`` unless the adapters were trained on ``policy`` with this rank, alpha and targets."""
    if adapter.base_policy != policy:
        raise CourseError(f"{adapter.path}: these adapters were trained on {adapter.base_policy}, "
                          "but the loaded model is "
                          f"{policy}; load the model they were trained on (--model)")
    if (adapter.rank, adapter.alpha) != (rank, alpha):
        raise CourseError(f"{adapter.path}: adapters of rank {adapter.rank}, alpha {adapter.alpha:g}; "
                          f"this policy has rank {rank}, alpha {alpha:g} (--lora-rank, --lora-alpha)")
    if adapter.targets != TARGETS:
        raise CourseError(f"{adapter.path}: adapters on {'/'.join(adapter.targets)}; "
                          f"the course adapts {'/'.join(TARGETS)}")


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.llm.policy"))
