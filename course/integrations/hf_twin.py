"""The tiny LM's Hugging Face twin: the same network as a ``transformers`` model, for TRL.

TRL's trainers take a ``transformers`` causal LM and tokenizer, not ``course.tinylm.model.GPT``.
The course's GPT (pre-LayerNorm blocks, GELU MLP, biases, rotary positions on every head
dimension with the rotate-half convention, tied input/output embeddings) is exactly a
GPT-NeoX configured with ``use_parallel_residual=False``, ``partial_rotary_factor=1.0`` and
tied embeddings, so the twin is not an approximation: ``twin_from_gpt`` copies the weights
(permuting the fused q/k/v rows, which GPT-NeoX interleaves per head) and the logits agree to
float rounding (tests/test_bridges_trl.py checks it on pi0).

The tokenizer is the course's character vocabulary (``course.tinylm.vocab``: 101 ids, the same
ids) as a ``PreTrainedTokenizerFast`` built locally: a BPE model with no merges, so every
character is one token, and ``<pad> <bos> <sep> <eos> <unk>`` as special tokens. A policy
prompt is ``<bos>{prompt}<sep>`` (``policy_prompt``), exactly what the course's sampler feeds.

No hub access anywhere: everything is built from config and the local vocabulary.
Needs the ``trl`` extra (transformers, tokenizers; torch installed first).

As a command, it saves a checkpoint's twin as a Hugging Face model folder (``save_pretrained``:
weights, config, tokenizer) and prints the lm-evaluation-harness command that runs the course's
tiny-LM task on it offline::

    python -m course.integrations.hf_twin --out runs/pi0_twin
    HF_HUB_OFFLINE=1 lm_eval --model hf --model_args pretrained=runs/pi0_twin,dtype=float32 --device cpu \\
        --tasks course_math_tinylm --include_path course/integrations/lm_eval_tasks \\
        --log_samples --output_path runs/lmeval
"""

from __future__ import annotations

from typing import Any

from course.tinylm.vocab import VOCAB


def policy_prompt(prompt: str) -> str:
    """The text of a policy prompt as the tiny LM sees it: ``<bos>`` prompt ``<sep>``."""
    return f"<bos>{prompt}<sep>"


def char_tokenizer():
    """The course's character vocabulary as a ``transformers`` fast tokenizer (same ids)."""
    from tokenizers import Tokenizer, decoders, models
    from transformers import PreTrainedTokenizerFast

    vocab = {VOCAB.token_text(i): i for i in range(VOCAB.size)}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token="<unk>"))
    tok.add_special_tokens(list(VOCAB.SPECIALS))
    tok.decoder = decoders.Fuse()  # characters are concatenated, not joined with spaces
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<bos>", eos_token="<eos>", pad_token="<pad>", unk_token="<unk>",
        sep_token="<sep>", padding_side="left", model_max_length=192,
    )


def twin_config(cfg: Any = None):
    """A ``GPTNeoXConfig`` with the tiny LM's dimensions (``course.tinylm.model.GPTConfig``)."""
    from transformers import GPTNeoXConfig

    from course.tinylm.model import GPTConfig

    cfg = cfg or GPTConfig()
    # GPTNeoXConfig takes these through **kwargs; its signature does not list them
    return GPTNeoXConfig(  # type: ignore[call-arg]
        vocab_size=cfg.vocab_size, hidden_size=cfg.n_embd, num_hidden_layers=cfg.n_layer,
        num_attention_heads=cfg.n_head, intermediate_size=4 * cfg.n_embd, hidden_act="gelu",
        max_position_embeddings=cfg.block_size, rotary_pct=1.0, rotary_emb_base=10000,
        use_parallel_residual=False, tie_word_embeddings=True, attention_bias=True, layer_norm_eps=1e-5,
        bos_token_id=VOCAB.BOS, eos_token_id=VOCAB.EOS, pad_token_id=VOCAB.PAD,
    )


def twin_from_gpt(gpt: Any):
    """A ``GPTNeoXForCausalLM`` computing the same function as the course ``GPT`` ``gpt``."""
    import torch
    from transformers import GPTNeoXForCausalLM

    cfg = gpt.cfg
    model = GPTNeoXForCausalLM(twin_config(cfg))
    C, H = cfg.n_embd, cfg.n_head
    D = C // H
    # GPT-NeoX's fused rows are [q_h, k_h, v_h] per head h; the course's are [Q | K | V].
    perm = torch.tensor([p * C + h * D + d for h in range(H) for p in range(3) for d in range(D)])
    src = gpt.state_dict()
    dst: dict[str, Any] = {"gpt_neox.embed_in.weight": src["wte.weight"], "lm_head.weight": src["wte.weight"],
                           "gpt_neox.final_layer_norm.weight": src["ln_f.weight"],
                           "gpt_neox.final_layer_norm.bias": src["ln_f.bias"]}
    for i in range(cfg.n_layer):
        a, b = f"blocks.{i}.", f"gpt_neox.layers.{i}."
        dst |= {
            b + "input_layernorm.weight": src[a + "ln_1.weight"], b + "input_layernorm.bias": src[a + "ln_1.bias"],
            b + "post_attention_layernorm.weight": src[a + "ln_2.weight"],
            b + "post_attention_layernorm.bias": src[a + "ln_2.bias"],
            b + "attention.query_key_value.weight": src[a + "attn.c_attn.weight"][perm],
            b + "attention.query_key_value.bias": src[a + "attn.c_attn.bias"][perm],
            b + "attention.dense.weight": src[a + "attn.c_proj.weight"],
            b + "attention.dense.bias": src[a + "attn.c_proj.bias"],
            b + "mlp.dense_h_to_4h.weight": src[a + "mlp.c_fc.weight"],
            b + "mlp.dense_h_to_4h.bias": src[a + "mlp.c_fc.bias"],
            b + "mlp.dense_4h_to_h.weight": src[a + "mlp.c_proj.weight"],
            b + "mlp.dense_4h_to_h.bias": src[a + "mlp.c_proj.bias"],
        }
    missing, unexpected = model.load_state_dict(dst, strict=False)
    left = [k for k in missing if "rotary" not in k and "masked_bias" not in k]
    if left or unexpected:
        raise RuntimeError(f"twin_from_gpt: weights not mapped: missing {left}, unexpected {unexpected}")
    model.tie_weights()
    return model


def tiny_twin(seed: int = 0):
    """A freshly initialised twin (random weights, seeded): for tests that need any tiny causal LM."""
    import torch
    from transformers import GPTNeoXForCausalLM

    torch.manual_seed(seed)
    return GPTNeoXForCausalLM(twin_config())


def gpt_from_twin(model: Any):
    """The inverse of ``twin_from_gpt``: a course ``GPT`` with the twin's weights (e.g. after TRL trained it)."""
    import torch

    from course.tinylm.model import GPT, GPTConfig

    c = model.config
    cfg = GPTConfig(vocab_size=c.vocab_size, block_size=c.max_position_embeddings, n_layer=c.num_hidden_layers,
                    n_head=c.num_attention_heads, n_embd=c.hidden_size)
    gpt = GPT(cfg)
    C, H = cfg.n_embd, cfg.n_head
    D = C // H
    perm = torch.tensor([p * C + h * D + d for h in range(H) for p in range(3) for d in range(D)])
    inv = torch.empty_like(perm)
    inv[perm] = torch.arange(len(perm))
    src = model.state_dict()
    dst: dict[str, Any] = {"wte.weight": src["gpt_neox.embed_in.weight"],
                           "lm_head.weight": src["gpt_neox.embed_in.weight"],
                           "ln_f.weight": src["gpt_neox.final_layer_norm.weight"],
                           "ln_f.bias": src["gpt_neox.final_layer_norm.bias"]}
    for i in range(cfg.n_layer):
        a, b = f"blocks.{i}.", f"gpt_neox.layers.{i}."
        dst |= {
            a + "ln_1.weight": src[b + "input_layernorm.weight"], a + "ln_1.bias": src[b + "input_layernorm.bias"],
            a + "ln_2.weight": src[b + "post_attention_layernorm.weight"],
            a + "ln_2.bias": src[b + "post_attention_layernorm.bias"],
            a + "attn.c_attn.weight": src[b + "attention.query_key_value.weight"][inv],
            a + "attn.c_attn.bias": src[b + "attention.query_key_value.bias"][inv],
            a + "attn.c_proj.weight": src[b + "attention.dense.weight"],
            a + "attn.c_proj.bias": src[b + "attention.dense.bias"],
            a + "mlp.c_fc.weight": src[b + "mlp.dense_h_to_4h.weight"],
            a + "mlp.c_fc.bias": src[b + "mlp.dense_h_to_4h.bias"],
            a + "mlp.c_proj.weight": src[b + "mlp.dense_4h_to_h.weight"],
            a + "mlp.c_proj.bias": src[b + "mlp.dense_4h_to_h.bias"],
        }
    gpt.load_state_dict(dst)
    return gpt


def lm_eval_command(folder: str) -> str:
    """The lm_eval command line that runs ``course_math_tinylm`` on a saved twin, offline, on CPU."""
    return (f"HF_HUB_OFFLINE=1 lm_eval --model hf --model_args pretrained={folder},dtype=float32 --device cpu "
            "--tasks course_math_tinylm --include_path course/integrations/lm_eval_tasks "
            "--log_samples --output_path runs/lmeval")


def build_parser():
    from course.cli import make_parser

    p = make_parser(
        "python -m course.integrations.hf_twin",
        "Save a tiny-LM checkpoint as a Hugging Face model folder (its twin) and print the lm_eval command for it.",
        "  python -m course.integrations.hf_twin --out runs/pi0_twin\n"
        "  HF_HUB_OFFLINE=1 lm_eval --model hf --model_args pretrained=runs/pi0_twin,dtype=float32 --device cpu "
        "--tasks course_math_tinylm --include_path course/integrations/lm_eval_tasks --limit 5",
    )
    p.add_argument("--checkpoint", default="data/tinylm/pi0.pt", help="a course.tinylm checkpoint (default pi0)")
    p.add_argument("--out", required=True, help="the folder to write (refused if it exists, unless --force)")
    p.add_argument("--force", action="store_true", help="replace a folder this command wrote before")
    return p


def main(argv: Any = None) -> int:
    from course.cli import run

    return run(_main, argv)


def _main(argv: Any) -> int:
    from pathlib import Path

    from course.errors import CourseError
    from course.lib.bundled import PROJECT_ROOT
    from course.lib.extras import require

    args = build_parser().parse_args(argv)
    require("trl", "python -m course.integrations.hf_twin")
    out = Path(args.out)
    marker = out / "course_hf_twin.txt"
    if out.exists() and not (args.force and marker.is_file()):
        raise CourseError(f"{out}: exists" + ("" if args.force else "; --force replaces a folder this command wrote")
                          + ("" if not args.force else " and was not written by this command (no course_hf_twin.txt)"))
    from course.tinylm.model import load_checkpoint

    checkpoint = Path(args.checkpoint)
    if not checkpoint.exists() and (PROJECT_ROOT / checkpoint).exists():
        checkpoint = PROJECT_ROOT / checkpoint
    gpt, _ = load_checkpoint(checkpoint)
    twin_from_gpt(gpt).save_pretrained(out)
    char_tokenizer().save_pretrained(out)
    marker.write_text(f"the tiny LM's Hugging Face twin of {args.checkpoint}\n", encoding="utf-8")
    print(f"saved the twin of {args.checkpoint} -> {out}")
    print(lm_eval_command(str(out)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
