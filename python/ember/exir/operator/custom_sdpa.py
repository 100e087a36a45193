"""``llama::custom_sdpa``: scaled dot-product attention over a KV cache.

The operator name and argument order are those of ExecuTorch's LLM custom op
(``torch.ops.llama.custom_sdpa``); the layout is Ember's own: the
one ``torch.nn.functional.scaled_dot_product_attention`` and transformers'
static cache use, heads before positions, so the cache buffers are read
where they are, without a transposed copy::

    custom_sdpa(Tensor query, Tensor key, Tensor value, SymInt start_pos,
                Tensor? attn_mask=None, float drop_p=0.0, bool is_causal=False,
                float? scale=None) -> Tensor
    custom_sdpa.out(..., *, Tensor(a!) out) -> Tensor(a!)

- ``query`` [B, H, S, D]: S new positions ``start_pos ... start_pos + S - 1``;
- ``key``, ``value`` [B, Hkv, L, D]: the caches (L >= start_pos + S), with
  the S new entries already written; H a multiple of Hkv, query head h reads
  cache head h // (H / Hkv) (grouped-query attention, no repeated copy);
- only cache positions < start_pos + S are read;
- ``is_causal``: query row i attends to positions <= start_pos + i;
- ``attn_mask``: bool (True = attend) or float (added to the scores), shape
  [S, M] or [B or 1, H or 1, S, M] with M >= start_pos + S (only its first
  start_pos + S columns are read); with ``is_causal`` both apply;
- ``drop_p`` must be 0; ``scale`` defaults to 1 / sqrt(D);
- the result is [B, H, S, D], query's layout. A row with no position left to
  attend to (all masked) gives zeros, as eager's SDPA on CPU.

(ExecuTorch's kernel takes [B, S, H, D]: a program is not portable between
the two runtimes' kernels.) The eager implementations below are the
reference the runtime's kernel is tested against.
"""

from __future__ import annotations

import math

import torch

_ARGS = (
    "Tensor query, Tensor key, Tensor value, SymInt start_pos, Tensor? attn_mask=None, "
    "float drop_p=0.0, bool is_causal=False, float? scale=None"
)
SCHEMAS: dict[str, str] = {
    "custom_sdpa": f"({_ARGS}) -> Tensor",
    "custom_sdpa.out": f"({_ARGS}, *, Tensor(a!) out) -> Tensor(a!)",
}


def _check(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, start_pos: int,
           drop_p: float) -> None:
    if query.dim() != 4 or key.dim() != 4 or value.dim() != 4:
        raise ValueError("custom_sdpa: query, key and value must be 4-D ([B, H, S, D])")
    if key.shape != value.shape:
        raise ValueError(f"custom_sdpa: key {tuple(key.shape)} and value {tuple(value.shape)} differ")
    b, h, s, d = query.shape
    if key.shape[0] != b or key.shape[3] != d or key.shape[1] == 0 or h % key.shape[1]:
        raise ValueError(f"custom_sdpa: query {tuple(query.shape)} and cache {tuple(key.shape)} "
                         "do not match")
    if start_pos < 0 or start_pos + s > key.shape[2]:
        raise ValueError(f"custom_sdpa: start_pos {start_pos} + {s} positions exceeds the "
                         f"cache's {key.shape[2]}")
    if drop_p != 0.0:
        raise ValueError(f"custom_sdpa: drop_p must be 0, got {drop_p}")


def custom_sdpa(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, start_pos: int,
                attn_mask: torch.Tensor | None = None, drop_p: float = 0.0,
                is_causal: bool = False, scale: float | None = None) -> torch.Tensor:
    """The reference: eager SDPA over the first start_pos + S cache positions."""
    start_pos = int(start_pos)
    _check(query, key, value, start_pos, drop_p)
    s, heads = query.shape[2], query.shape[1]
    end = start_pos + s
    k, v = key[:, :, :end], value[:, :, :end]
    group = heads // key.shape[1]
    if group > 1:
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
    mask = None if attn_mask is None else attn_mask[..., :end]
    if is_causal:
        pos = torch.arange(end, device=query.device)
        causal = pos[None, :] <= (start_pos + torch.arange(s, device=query.device))[:, None]
        if mask is None:
            mask = causal
        elif mask.dtype == torch.bool:
            mask = mask & causal
        else:
            mask = mask.masked_fill(~causal, -math.inf)
    return torch.nn.functional.scaled_dot_product_attention(
        query, k, v, attn_mask=mask, scale=scale)


def _custom_sdpa_out(query, key, value, start_pos, attn_mask=None, drop_p=0.0,  # type: ignore[no-untyped-def]
                     is_causal=False, scale=None, *, out):
    result = custom_sdpa(query, key, value, start_pos, attn_mask, drop_p, is_causal, scale)
    return out.resize_(result.shape).copy_(result)


def _fake(query, key, value, start_pos, attn_mask=None, drop_p=0.0, is_causal=False,  # type: ignore[no-untyped-def]
          scale=None):
    return query.new_empty(query.shape)


def _fake_out(query, key, value, start_pos, attn_mask=None, drop_p=0.0,  # type: ignore[no-untyped-def]
              is_causal=False, scale=None, *, out):
    return out.resize_(query.shape)


_lib = torch.library.Library("llama", "FRAGMENT")


def _register() -> None:
    if hasattr(torch.ops.llama, "custom_sdpa"):
        return  # Already defined (by another library, or an earlier import).
    for qualified, schema in SCHEMAS.items():
        _lib.define(f"{qualified}{schema}")
    _lib.impl("custom_sdpa", custom_sdpa, "CompositeExplicitAutograd")
    _lib.impl("custom_sdpa.out", _custom_sdpa_out, "CompositeExplicitAutograd")
    torch.library.register_fake("llama::custom_sdpa", _fake, lib=_lib)
    torch.library.register_fake("llama::custom_sdpa.out", _fake_out, lib=_lib)


_register()
