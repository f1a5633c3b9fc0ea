"""A tiny Llama model written as a GGUF file (a few hundred KB, built in well under a second), for the
fault suite's attacks on ``course.llm.load``: a truncated file, a forged header, a file holding only
some of the weights. The tokenizer is byte-level BPE with no merges (one token per byte), and the
chat template is ChatML, as in SmolLM2's file."""

from __future__ import annotations

from pathlib import Path

CHATML = (
    "{% for message in messages %}"
    "{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
HIDDEN, FFN, LAYERS, HEADS, KV_HEADS, CONTEXT = 16, 32, 1, 2, 1, 64


def _byte_tokens() -> list[str]:
    """GPT-2's byte-to-unicode alphabet: the 256 one-byte tokens of a byte-level BPE vocabulary."""
    shown = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("\u00a1"), ord("\u00ac") + 1))
             + list(range(ord("\u00ae"), ord("\u00ff") + 1)))
    hidden = [b for b in range(256) if b not in shown]
    return [chr(b) for b in shown] + [chr(256 + i) for i in range(len(hidden))]


def write_tiny_gguf(path: Path, *, only: tuple[str, ...] | None = None, chat_template: str | None = CHATML) -> Path:
    """Write the tiny model to ``path``; ``only`` keeps just the tensors named (a checkpoint missing weights)."""
    import numpy as np
    from gguf import GGUFWriter

    tokens = SPECIAL + _byte_tokens()
    vocab = len(tokens)
    rng = np.random.default_rng(0)
    w = GGUFWriter(str(path), "llama")
    w.add_context_length(CONTEXT)
    w.add_embedding_length(HIDDEN)
    w.add_block_count(LAYERS)
    w.add_feed_forward_length(FFN)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV_HEADS)
    w.add_rope_dimension_count(HIDDEN // HEADS)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(vocab)
    w.add_file_type(0)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_types([3, 3, 3] + [1] * (vocab - 3))
    w.add_token_merges([])
    w.add_token_scores([0.0] * vocab)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_pad_token_id(2)
    if chat_template is not None:
        w.add_chat_template(chat_template)
    shapes = {"token_embd.weight": (vocab, HIDDEN), "output_norm.weight": (HIDDEN,)}
    head = HIDDEN // HEADS
    for i in range(LAYERS):
        shapes |= {f"blk.{i}.attn_norm.weight": (HIDDEN,), f"blk.{i}.ffn_norm.weight": (HIDDEN,),
                   f"blk.{i}.attn_q.weight": (HIDDEN, HIDDEN), f"blk.{i}.attn_k.weight": (KV_HEADS * head, HIDDEN),
                   f"blk.{i}.attn_v.weight": (KV_HEADS * head, HIDDEN), f"blk.{i}.attn_output.weight": (HIDDEN, HIDDEN),
                   f"blk.{i}.ffn_gate.weight": (FFN, HIDDEN), f"blk.{i}.ffn_up.weight": (FFN, HIDDEN),
                   f"blk.{i}.ffn_down.weight": (HIDDEN, FFN)}
    for name, shape in shapes.items():
        if only is None or name in only:
            w.add_tensor(name, (rng.standard_normal(shape) * 0.1).astype(np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path
