"""The rotary position embedding transformers' Llama family writes out (two
slices, neg, cat, two mul, add per tensor) fused into ``ember_fused::rope``
(passes/fuse_rope.py, kernels/portable/op_rope.cpp): which graphs fuse, which
must not, and the programs against eager bit for bit (the kernel rounds each
product and the sum as the ops do)."""

from __future__ import annotations

import pytest
import torch
from ember.exir import ExecutorchBackendConfig, to_edge
from torch.export import export

pytest.importorskip("ember._C")
from ember.exir.operator import ember_fused  # noqa: F401  (defines the op)
from ember.runtime import Runtime

_PATTERN = ("aten.neg", "aten.cat", "aten.slice_copy", "aten.mul", "aten.add")


def _targets(program) -> list[str]:
    ep = program.exported_program()
    return [str(n.target) for n in ep.graph.nodes if n.op == "call_function"]


def _run(model: torch.nn.Module, inputs: tuple, **config):
    program = to_edge(export(model, inputs)).to_executorch(ExecutorchBackendConfig(**config))
    outs = Runtime.get().load_program(program.buffer).load_method("forward").execute(list(inputs))
    return program, outs


def _rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


class Llama(torch.nn.Module):
    def forward(self, q, k, cos, sin):
        from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

        return apply_rotary_pos_emb(q, k, cos, sin)


def _inputs(b=1, h=4, hkv=2, t=5, d=64, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(b, h, t, d, generator=g), torch.randn(b, hkv, t, d, generator=g),
            torch.randn(b, t, d, generator=g), torch.randn(b, t, d, generator=g))


@pytest.mark.parametrize("t,d", [(5, 64), (1, 64), (7, 2), (3, 34), (33, 128)])
def test_llama_rope_fuses_and_has_eagers_bits(t, d) -> None:
    inputs = _inputs(t=t, d=d, seed=t + d)
    program, outs = _run(Llama(), inputs)
    targets = _targets(program)
    assert sum("rope" in x for x in targets) == 2, targets
    assert not any(p in x for x in targets for p in _PATTERN), targets
    want = Llama()(*inputs)
    for got, w in zip(outs, want):
        assert torch.equal(got, w)


def test_partial_rotary_and_2d_tables_fuse() -> None:
    class Partial(torch.nn.Module):  # Phi-3 style: the first 32 of 48 dims rotate
        def forward(self, q, cos, sin):
            rot, rest = q[..., :32], q[..., 32:]
            return torch.cat((rot * cos + _rotate_half(rot) * sin, rest), dim=-1)

    g = torch.Generator().manual_seed(1)
    q = torch.randn(2, 3, 6, 48, generator=g)
    cos, sin = torch.randn(6, 32, generator=g), torch.randn(6, 32, generator=g)  # [T, D]
    program, outs = _run(Partial(), (q, cos, sin))
    assert sum("rope" in x for x in _targets(program)) == 1
    assert torch.equal(outs[0], Partial()(q, cos, sin))


class _Variant(torch.nn.Module):
    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind

    def forward(self, x, cos, sin):
        h = x.shape[-1] // 2
        if self.kind == "interleaved":  # GPT-J's rotate_every_two
            r = torch.stack((-x[..., 1::2], x[..., ::2]), dim=-1).flatten(-2)
        elif self.kind == "swapped":  # cat(x1, -x2): not rotate_half
            r = torch.cat((x[..., :h], -x[..., h:]), dim=-1)
        elif self.kind == "other_tensor":  # the rotation of another tensor
            r = _rotate_half(x * 2)
        elif self.kind == "enlarging":  # cos broadcasts x up: a new shape
            return x * cos.expand(3, *x.shape[1:]).clone() + _rotate_half(x) * sin
        else:  # "shared": the rotated half is read again
            r = _rotate_half(x)
            return x * cos + r * sin, r
        return x * cos + r * sin


@pytest.mark.parametrize("kind", ["interleaved", "swapped", "other_tensor", "enlarging", "shared"])
def test_near_misses_do_not_fuse(kind) -> None:
    g = torch.Generator().manual_seed(2)
    x, cos, sin = (torch.randn(1, 2, 3, 8, generator=g), torch.randn(1, 1, 3, 8, generator=g),
                   torch.randn(1, 1, 3, 8, generator=g))
    model = _Variant(kind)
    program, outs = _run(model, (x, cos, sin))
    assert not any("rope" in t for t in _targets(program))
    want = model(x, cos, sin)
    want = want if isinstance(want, tuple) else (want,)
    for got, w in zip(outs, want):
        torch.testing.assert_close(got, w)


def test_float64_and_config_off_keep_the_aten_ops() -> None:
    inputs = tuple(t.double() for t in _inputs(t=3, d=16, seed=4))
    program, outs = _run(Llama(), inputs)
    assert not any("rope" in t for t in _targets(program))
    for got, w in zip(outs, Llama()(*inputs)):
        assert torch.equal(got, w)
    inputs = _inputs(t=3, d=16, seed=5)
    program, outs = _run(Llama(), inputs, fuse_rope=False)
    targets = _targets(program)
    assert not any("rope" in t for t in targets)
    assert any("aten.cat" in t for t in targets)
    for got, w in zip(outs, Llama()(*inputs)):
        assert torch.equal(got, w)


def test_the_fused_op_is_the_eager_reference() -> None:
    x, _, cos, sin = _inputs(t=2, d=8, seed=6)
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    want = x * cos + _rotate_half(x) * sin
    assert torch.equal(torch.ops.ember_fused.rope(x, cos, sin), want)
