"""A transformers Llama model written to GGUF (llama.cpp's file format) with
the `gguf` package, at F32, Q8_0 or Q4_0: the same weights the LLM benchmark
exports for Ember, for llama.cpp to run (#18).

    write_gguf(model, "llama-q8_0.gguf", "Q8_0", sp_model="tokenizer.model")

- Architecture `llama`: its hyperparameters as metadata, tensors under
  llama.cpp's names (`blk.N.attn_q.weight`, ...).
- q/k rows permuted: Hugging Face's rotary embedding rotates dimension i
  with i + d/2 of each head (`rotate_half`); GGUF's llama architecture
  rotates adjacent pairs (2i, 2i + 1). Each head's rows are reordered
  0, d/2, 1, d/2 + 1, ... so both compute the same attention scores.
- Quantized files quantize every 2-D weight (the embedding and the output
  layer too, as llama.cpp's own converter does for Q8_0) with
  `gguf.quants`; norms stay F32.
- Tokenizer: a SentencePiece-style (`llama`) vocabulary of exactly the
  model's size: the pieces of `sp_model` at their own ids (so the ids the
  SentencePiece model gives are the same tokens), the 256 byte tokens
  `<0x00>`..`<0xFF>` llama.cpp falls back on when there is room, and filler
  pieces up to the vocabulary size. The benchmark hands llama.cpp token ids,
  so the vocabulary only has to load and detokenize.
"""

from __future__ import annotations

from pathlib import Path

PRECISIONS = ("F32", "Q8_0", "Q4_0")


def _file_and_tensor_types(precision: str):
    import gguf

    if precision not in PRECISIONS:
        raise ValueError(f"GGUF precision {precision!r}: expected one of {', '.join(PRECISIONS)}")
    file_type = {"F32": gguf.LlamaFileType.ALL_F32, "Q8_0": gguf.LlamaFileType.MOSTLY_Q8_0,
                 "Q4_0": gguf.LlamaFileType.MOSTLY_Q4_0}[precision]
    tensor_type = {"F32": gguf.GGMLQuantizationType.F32, "Q8_0": gguf.GGMLQuantizationType.Q8_0,
                   "Q4_0": gguf.GGMLQuantizationType.Q4_0}[precision]
    return file_type, tensor_type


def permute_for_rope(weight, n_head: int):
    """HF q/k projection rows (per head: the first half of the head's
    dimensions rotate with the second half) to GGUF's llama layout (adjacent
    pairs rotate together)."""
    rows = weight.shape[0]
    return (weight.reshape(n_head, 2, rows // n_head // 2, *weight.shape[1:])
            .swapaxes(1, 2).reshape(weight.shape))


def llama_vocab(vocab_size: int, sp_model: Path | str | None = None
                ) -> tuple[list[str], list[float], list[int]]:
    """Token pieces, scores and types (gguf.TokenType) for tokenizer.ggml.model = llama."""
    import gguf

    tokens: list[str] = []
    scores: list[float] = []
    types: list[int] = []
    if sp_model is not None:
        import sentencepiece as spm

        sp = spm.SentencePieceProcessor(model_file=str(sp_model))
        if sp.get_piece_size() > vocab_size:
            raise ValueError(f"tokenizer {sp_model} has {sp.get_piece_size()} pieces, more than "
                             f"the model's vocabulary of {vocab_size}")
        for i in range(sp.get_piece_size()):
            tokens.append(sp.id_to_piece(i))
            scores.append(sp.get_score(i))
            types.append(gguf.TokenType.UNKNOWN if sp.is_unknown(i) else
                         gguf.TokenType.CONTROL if sp.is_control(i) else
                         gguf.TokenType.BYTE if sp.is_byte(i) else gguf.TokenType.NORMAL)
    else:
        tokens += ["<unk>", "<s>", "</s>"]
        scores += [0.0, 0.0, 0.0]
        types += [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL]
    if len(tokens) + 256 <= vocab_size:
        have = set(tokens)
        for b in range(256):
            piece = f"<0x{b:02X}>"
            if piece not in have:
                tokens.append(piece)
                scores.append(0.0)
                types.append(gguf.TokenType.BYTE)
    lowest = min(scores) if scores else 0.0
    for i in range(vocab_size - len(tokens)):
        tokens.append(f"\u2581w{i}")
        scores.append(lowest - 1.0 - i)
        types.append(gguf.TokenType.NORMAL)
    return tokens, scores, types


def _rope_theta(config) -> float:
    params = getattr(config, "rope_parameters", None) or {}
    theta = params.get("rope_theta") if isinstance(params, dict) else None
    return float(theta if theta is not None else getattr(config, "rope_theta", 10000.0))


def write_gguf(model, path: Path | str, precision: str = "F32",
               sp_model: Path | str | None = None) -> Path:
    """Write a transformers LlamaForCausalLM to `path` as GGUF at `precision`."""
    import gguf
    import numpy as np
    import torch

    config = model.config
    if config.model_type != "llama":
        raise ValueError(f"write_gguf writes Llama models; got model_type {config.model_type!r}")
    file_type, tensor_type = _file_and_tensor_types(precision)
    n_head, n_kv = config.num_attention_heads, config.num_key_value_heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // n_head
    path = Path(path)

    w = gguf.GGUFWriter(path, "llama")
    w.add_name(f"random Llama ({config.num_hidden_layers} layers)")
    w.add_context_length(config.max_position_embeddings)
    w.add_embedding_length(config.hidden_size)
    w.add_block_count(config.num_hidden_layers)
    w.add_feed_forward_length(config.intermediate_size)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_kv)
    w.add_rope_dimension_count(head_dim)
    w.add_rope_freq_base(_rope_theta(config))
    w.add_layer_norm_rms_eps(float(config.rms_norm_eps))
    w.add_vocab_size(config.vocab_size)
    w.add_file_type(file_type)
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)

    tokens, scores, types = llama_vocab(config.vocab_size, sp_model)
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_unk_token_id(0)
    if config.bos_token_id is not None:
        w.add_bos_token_id(int(config.bos_token_id))
    if isinstance(config.eos_token_id, int):
        w.add_eos_token_id(config.eos_token_id)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)

    def add(name: str, t: torch.Tensor, permute_heads: int | None = None) -> None:
        a = t.detach().to(torch.float32).numpy()
        if permute_heads is not None:
            a = permute_for_rope(a, permute_heads)
        if a.ndim == 1 or tensor_type == gguf.GGMLQuantizationType.F32:
            w.add_tensor(name, np.ascontiguousarray(a, dtype=np.float32))
        else:
            w.add_tensor(name, gguf.quants.quantize(a, tensor_type), raw_dtype=tensor_type)

    inner = model.model
    add("token_embd.weight", inner.embed_tokens.weight)
    for i, layer in enumerate(inner.layers):
        att, mlp = layer.self_attn, layer.mlp
        add(f"blk.{i}.attn_norm.weight", layer.input_layernorm.weight)
        add(f"blk.{i}.attn_q.weight", att.q_proj.weight, n_head)
        add(f"blk.{i}.attn_k.weight", att.k_proj.weight, n_kv)
        add(f"blk.{i}.attn_v.weight", att.v_proj.weight)
        add(f"blk.{i}.attn_output.weight", att.o_proj.weight)
        add(f"blk.{i}.ffn_norm.weight", layer.post_attention_layernorm.weight)
        add(f"blk.{i}.ffn_gate.weight", mlp.gate_proj.weight)
        add(f"blk.{i}.ffn_up.weight", mlp.up_proj.weight)
        add(f"blk.{i}.ffn_down.weight", mlp.down_proj.weight)
    add("output_norm.weight", inner.norm.weight)
    add("output.weight", model.lm_head.weight)

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path
