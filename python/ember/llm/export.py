"""Export recipe: a transformers decoder with a static KV cache to a `.pte`.

The model is wrapped in transformers' own `TorchExportableModuleWithStaticCache`
(transformers.integrations.executorch), whose key/value caches are buffers the
program updates in place (`docs/stateful-programs.md`). The program's
`forward(tokens, input_pos)` takes `tokens` [1, n] (int64) and `input_pos` [n]
(int64, the cache positions of the tokens) and returns logits [1, n, vocab];
`n` is dynamic (1 ... `max_prefill_len`), so a prompt is prefilled in one call.
Constant methods carry what a runner needs (`METADATA_METHODS`).
"""

from __future__ import annotations

from typing import Any

import torch

from ember.exir import EdgeCompileConfig, ExecutorchBackendConfig, ExecutorchProgramManager, to_edge
from ember.exir.passes.kv_cache_attention import fuse_kv_cache_attention

# model_type of the transformers configs whose greedy decoding is tested
# against eager generate (python/tests/test_llm_families.py).
SUPPORTED_MODEL_TYPES = ("llama", "qwen2", "qwen3", "gemma", "phi3", "gpt2", "mistral")

# Names follow ExecuTorch's LLM runner: get_max_seq_len is the most tokens one
# forward call takes, get_max_context_len the cache length.
METADATA_METHODS = (
    "get_max_seq_len", "get_max_context_len", "get_vocab_size", "get_bos_id", "get_eos_ids",
    "use_kv_cache", "use_sdpa_with_kv_cache", "enable_dynamic_shape", "get_max_batch_size",
    "get_n_layers",
)


class UnsupportedModelError(ValueError):
    """The model is not one of the decoder classes the recipe handles."""


class _TokensAndPositions(torch.nn.Module):
    """`forward(tokens, input_pos)` over transformers' static-cache module."""

    def __init__(self, inner: torch.nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, tokens: torch.Tensor, input_pos: torch.Tensor) -> torch.Tensor:
        return self.inner(input_ids=tokens, cache_position=input_pos)


class _LastPosition(torch.nn.Module):
    """The output layer applied to the last position only (`full_logits=False`)."""

    def __init__(self, head: torch.nn.Module) -> None:
        super().__init__()
        self.head = head

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.head(hidden[:, -1:, :])


def _text_config(model: torch.nn.Module) -> Any:
    config = getattr(model, "config", None)
    if config is None:
        raise UnsupportedModelError(
            f"ember.llm.export takes a transformers causal-LM model (a PreTrainedModel with a "
            f"config); got {type(model).__name__}")
    return config.get_text_config() if hasattr(config, "get_text_config") else config


def _as_list(ids: Any) -> list[int]:
    if ids is None:
        return []
    if isinstance(ids, int):
        return [ids]
    return [int(i) for i in ids]


def model_metadata(model: torch.nn.Module, max_seq_len: int, max_prefill_len: int,
                   bos_id: int | None = None, eos_ids: list[int] | None = None) -> dict[str, Any]:
    """The constant methods' values for `model` (BOS/EOS from its generation
    config, else its config; -1 / [] when it has none)."""
    config = _text_config(model)
    gen = getattr(model, "generation_config", None)

    def pick(name: str) -> Any:
        value = getattr(gen, name, None) if gen is not None else None
        return value if value is not None else getattr(config, name, None)

    if bos_id is None:
        bos_id = pick("bos_token_id")
    if eos_ids is None:
        eos_ids = _as_list(pick("eos_token_id"))
    return {
        "get_max_seq_len": int(max_prefill_len),
        "get_max_context_len": int(max_seq_len),
        "get_vocab_size": int(config.vocab_size),
        "get_bos_id": -1 if bos_id is None else int(bos_id),
        "get_eos_ids": [int(i) for i in eos_ids],
        "use_kv_cache": True,
        "use_sdpa_with_kv_cache": False,
        "enable_dynamic_shape": max_prefill_len > 1,
        "get_max_batch_size": 1,
        "get_n_layers": int(config.num_hidden_layers),
    }


# `quantize=` values: torchao configs for every nn.Linear (the embedding stays
# float). "int8"/"int4" are weight-only, fused into
# ember_quantized::linear_weight_only (passes/fuse_weight_only_linear.py);
# "8da4w"/"8da8w" quantize activations per token to int8 as well
# (Int8DynamicActivationIntxWeightConfig), fused into
# ember_quantized::linear_dynamic_intx (passes/fuse_dynamic_intx_linear.py).
WEIGHT_ONLY_SCHEMES = ("int8", "int4")
QUANTIZE_SCHEMES = WEIGHT_ONLY_SCHEMES + ("8da4w", "8da8w")


def _quantize_linears(model: torch.nn.Module, scheme: str | None) -> None:
    if scheme is None:
        return
    if scheme not in QUANTIZE_SCHEMES:
        raise ValueError(f"quantize={scheme!r}: supported: {', '.join(QUANTIZE_SCHEMES)} or None")
    from torchao.quantization import (
        Int8DynamicActivationIntxWeightConfig,
        Int8WeightOnlyConfig,
        IntxWeightOnlyConfig,
        quantize_,
    )
    from torchao.quantization.granularity import PerAxis, PerGroup

    if scheme == "int8":
        config = Int8WeightOnlyConfig()
    elif scheme == "int4":
        config = IntxWeightOnlyConfig(weight_dtype=torch.int4, granularity=PerGroup(32))
    elif scheme == "8da4w":
        config = Int8DynamicActivationIntxWeightConfig(weight_dtype=torch.int4,
                                                       weight_granularity=PerGroup(32))
    else:
        config = Int8DynamicActivationIntxWeightConfig(weight_dtype=torch.int8,
                                                       weight_granularity=PerAxis(0))
    # A weight tied to the embedding stays float: the embedding reads it too.
    tied = {id(m.weight) for m in model.modules() if isinstance(m, torch.nn.Embedding)}

    def linear_only(module: torch.nn.Module, _fqn: str) -> bool:
        return isinstance(module, torch.nn.Linear) and id(module.weight) not in tied

    quantize_(model, config, filter_fn=linear_only)


def export(
    model: torch.nn.Module,
    max_seq_len: int = 128,
    dtype: torch.dtype = torch.float32,
    external_weights: bool = False,
    *,
    max_prefill_len: int | None = None,
    quantize: str | None = None,
    bos_id: int | None = None,
    eos_ids: list[int] | None = None,
    backend_config: ExecutorchBackendConfig | None = None,
    use_sdpa_with_kv_cache: bool = True,
    full_logits: bool = False,
) -> ExecutorchProgramManager:
    """Export a transformers decoder (`SUPPORTED_MODEL_TYPES`) with a static KV
    cache of `max_seq_len` positions to an `ExecutorchProgramManager`.

    `max_prefill_len` (default `max_seq_len`): the most tokens one `forward`
    call takes (activations are planned for it); 1 gives a decode-only program
    that a runner prefills token by token. `external_weights=True` puts the
    weights in a `.ptd` (`et.write_tensor_data_to_file(dir)`). The model is
    converted to `dtype` in place and put in eval mode.

    `quantize="int8"` (per output channel) or `"int4"` (groups of 32) stores
    every linear layer's weight as integers (torchao's weight-only configs,
    fused into ``ember_quantized::linear_weight_only``: decoding reads a
    quarter of the float32 bytes); the embedding stays float. `"8da4w"`
    (int4 weights in groups of 32) and `"8da8w"` (int8 per output channel)
    also quantize each token's activations to int8 at run time (torchao's
    Int8DynamicActivationIntxWeightConfig, fused into
    ``ember_quantized::linear_dynamic_intx``: int8 × int4/int8 products summed
    in int32, int4 stored two per byte).

    `use_sdpa_with_kv_cache` (default): each attention over the cache is
    fused into ``llama::custom_sdpa`` (``passes/kv_cache_attention.py``: no
    repeated cache for grouped-query attention, only the filled positions
    read); the `use_sdpa_with_kv_cache` constant method says whether every
    one was. False keeps the decomposed attention transformers exports.

    `full_logits` (default False): `forward` returns the last position's
    logits only, `[1, 1, vocab]`: the output layer runs on one row instead of
    every prompt position (a quarter of a 4-layer TinyLlama's prefill), as
    ExecuTorch's Llama export and llama.cpp do by default. True returns
    `[1, n, vocab]`, every position's logits (to score or compare a whole
    sequence). Both runners read the last row of whatever `forward` returns."""
    import transformers
    from transformers.integrations.executorch import TorchExportableModuleWithStaticCache

    config = _text_config(model)
    model_type = getattr(config, "model_type", None)
    if model_type not in SUPPORTED_MODEL_TYPES:
        raise UnsupportedModelError(
            f"ember.llm.export: model type {model_type!r} ({type(model).__name__}) is not supported; "
            f"supported: {', '.join(SUPPORTED_MODEL_TYPES)}")
    if max_seq_len < 2:
        raise ValueError(f"max_seq_len must be at least 2, got {max_seq_len}")
    max_prefill_len = max_seq_len if max_prefill_len is None else int(max_prefill_len)
    if not 1 <= max_prefill_len <= max_seq_len:
        raise ValueError(f"max_prefill_len must be in [1, max_seq_len={max_seq_len}], got {max_prefill_len}")
    limit = getattr(config, "max_position_embeddings", None) or getattr(config, "n_positions", None)
    if limit is not None and max_seq_len > limit:
        raise ValueError(f"max_seq_len={max_seq_len} exceeds the model's {limit} positions")

    model = model.to(dtype).eval()
    _quantize_linears(model, quantize)
    metadata = model_metadata(model, max_seq_len, max_prefill_len, bos_id, eos_ids)
    saved = model.generation_config
    model.generation_config = transformers.GenerationConfig(
        use_cache=True, cache_implementation="static",
        cache_config={"batch_size": 1, "max_cache_len": max_seq_len})
    head = model.get_output_embeddings()
    if not full_logits:
        model.set_output_embeddings(_LastPosition(head))
    try:
        wrapped = _TokensAndPositions(TorchExportableModuleWithStaticCache(model)).eval()
        n = min(2, max_prefill_len)
        example = (torch.zeros(1, n, dtype=torch.long), torch.arange(n, dtype=torch.long))
        dynamic = None
        if max_prefill_len > 1:
            seq = torch.export.Dim("seq", min=1, max=max_prefill_len)
            dynamic = {"tokens": {1: seq}, "input_pos": {0: seq}}
        with torch.no_grad():
            ep = torch.export.export(wrapped, example, dynamic_shapes=dynamic, strict=True)
    finally:
        model.generation_config = saved
        if not full_logits:
            model.set_output_embeddings(head)
    if use_sdpa_with_kv_cache:
        fused = fuse_kv_cache_attention(
            ep, lambda n, start: (torch.zeros(1, n, dtype=torch.long),
                                  torch.arange(start, start + n)), max_prefill_len)
        metadata["use_sdpa_with_kv_cache"] = bool(fused.fused) and not fused.kept
    edge = to_edge(ep, constant_methods=metadata, compile_config=EdgeCompileConfig())
    config_out = backend_config or ExecutorchBackendConfig()
    if external_weights:
        config_out.external_constants = True
    return edge.to_executorch(config_out)
