"""Attention's ``_safe_softmax`` (softmax, then zeros for rows that may attend
to nothing) fused back into ``ember_fused::safe_softmax``
(passes/fuse_safe_softmax.py, kernels/portable/op_safe_softmax.cpp): which
graphs fuse, which must not, and the programs against eager, relative to the
output's magnitude, with bool and float masks that leave whole rows masked.
SDPA itself is kept in its math form here (``EdgeCompileConfig(fuse_attention=False)``);
test_fuse_attention.py tests the fused SDPA."""

from __future__ import annotations

import pytest
import torch
from ember.exir import EdgeCompileConfig, ExecutorchBackendConfig, to_edge
from torch.export import export

pytest.importorskip("ember._C")
from ember.exir.operator import ember_fused  # noqa: F401  (defines the op)
from ember.runtime import Runtime
from magnitude import assert_close_to_magnitude

F = torch.nn.functional
_PATTERN = ("aten.any", "aten.logical_not", "aten.full_like", "aten.eq")


def _targets(program) -> list[str]:
    ep = program.exported_program()
    return [str(n.target) for n in ep.graph.nodes if n.op == "call_function"]


def _run(model: torch.nn.Module, inputs: tuple, **config):
    # SDPA's math form (fuse_attention=False), where _safe_softmax appears.
    edge = to_edge(export(model, inputs), compile_config=EdgeCompileConfig(fuse_attention=False))
    program = edge.to_executorch(ExecutorchBackendConfig(**config))
    outs = Runtime.get().load_program(program.buffer).load_method("forward").execute(list(inputs))
    return program, outs


def _close(got: torch.Tensor, want: torch.Tensor, rtol: float = 1e-5) -> None:
    assert_close_to_magnitude(got, want, rtol)


class Attention(torch.nn.Module):
    def __init__(self, causal: bool = False) -> None:
        super().__init__()
        self.causal = causal

    def forward(self, q, k, v, mask=None):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=self.causal)


def _qkv(b=2, h=3, s=7, d=16, seed=0):
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(b, h, s, d, generator=g) for _ in range(3))


@pytest.mark.parametrize("mask_kind", ["bool", "float", "none", "causal"])
def test_attention_fuses_and_matches_eager(mask_kind) -> None:
    q, k, v = _qkv()
    inputs: tuple = (q, k, v)
    model = Attention(causal=mask_kind == "causal")
    if mask_kind == "bool":
        mask = torch.rand(2, 1, 7, 7, generator=torch.Generator().manual_seed(1)) > 0.3
        mask[0, 0, 3] = False  # query row 3 of batch 0 attends to nothing
        inputs = (q, k, v, mask)
    elif mask_kind == "float":
        mask = torch.zeros(2, 3, 7, 7)
        mask[1, 2, 5] = -torch.inf
        mask[0, :, :, 0] = -torch.inf
        inputs = (q, k, v, mask)
    program, outs = _run(model, inputs)
    targets = _targets(program)
    assert sum("safe_softmax" in t for t in targets) == 1, targets
    assert not any(p in t for t in targets for p in _PATTERN), targets
    # A bool mask becomes a float one through a where; nothing else is left.
    assert sum("aten.where" in t for t in targets) == (mask_kind == "bool"), targets
    want = model(*inputs)
    _close(outs[0], want)
    if mask_kind == "bool":
        assert (outs[0][0, :, 3] == 0).all()  # the masked row is zeros, as eager's


def test_config_off_keeps_the_aten_ops() -> None:
    q, k, v = _qkv(seed=2)
    mask = torch.ones(2, 1, 7, 7, dtype=torch.bool)
    mask[1, 0, 0] = False
    program, outs = _run(Attention(), (q, k, v, mask), fuse_safe_softmax=False)
    targets = _targets(program)
    assert not any("safe_softmax" in t for t in targets)
    assert any("aten.any" in t for t in targets)
    _close(outs[0], Attention()(q, k, v, mask))


def test_a_user_softmax_with_other_masking_does_not_fuse() -> None:
    class NotSafe(torch.nn.Module):
        def forward(self, x):
            s = torch.softmax(x, -1)
            # Zeros where a row is all +inf (not -inf): not _safe_softmax.
            dead = torch.logical_not(torch.any(torch.logical_not(x == torch.inf), -1, True))
            return torch.where(dead, torch.zeros_like(s), s)

    x = torch.randn(4, 9)
    program, outs = _run(NotSafe(), (x,))
    assert not any("safe_softmax" in t for t in _targets(program))
    _close(outs[0], NotSafe()(x))


def test_the_softmax_read_elsewhere_stays() -> None:
    class Both(torch.nn.Module):
        def forward(self, q, k, v):
            scores = q @ k.transpose(-1, -2)
            s = torch.softmax(scores, -1)
            safe = torch.ops.aten._safe_softmax.default(scores, -1)
            return safe @ v, s.sum(-1)

    q, k, v = _qkv(seed=3)
    program, outs = _run(Both(), (q, k, v))
    assert sum("safe_softmax" in t for t in _targets(program)) == 1
    want = Both()(q, k, v)
    _close(outs[0], want[0])
    _close(outs[1], want[1])


def test_bert_encoder_layer_fuses_every_layer() -> None:
    from ember.testing.model_zoo import build

    model, inputs = build("bert_base", "small")
    program, outs = _run(model, inputs)
    targets = _targets(program)
    layers = model.model.config.num_hidden_layers if hasattr(model, "model") else None
    fused = sum("safe_softmax" in t for t in targets)
    assert fused >= 1 and (layers is None or fused == layers), (fused, layers)
    assert not any("aten.any" in t for t in targets)
    with torch.no_grad():
        want = model(*inputs)
    want = want[0] if isinstance(want, tuple) else want
    _close(outs[0], want, rtol=1e-4)
