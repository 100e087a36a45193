"""``scaled_dot_product_attention`` kept whole as ``ember_fused::sdpa``
(passes/fuse_attention.py, kernels/portable/op_sdpa.cpp): which calls fuse and
which keep the math form, and the programs against eager, relative to the
output's magnitude: masks of every broadcast shape, causal with more or fewer
queries than keys, cross-attention, grouped-query attention, rows that attend
to nothing, dynamic sequence lengths, and a transformers encoder end to end.
Both kernels run: the tiled one (16 query rows or more) and the row one."""

from __future__ import annotations

import math

import pytest
import torch
from ember.exir import EdgeCompileConfig, to_edge
from torch.export import Dim, export

pytest.importorskip("ember._C")
from ember.exir.passes.fuse_attention import fusable  # noqa: E402
from ember.runtime import Runtime  # noqa: E402
from magnitude import assert_close_to_magnitude

F = torch.nn.functional


def _targets(program) -> list[str]:
    return [str(n.target) for n in program.exported_program().graph.nodes
            if n.op == "call_function"]


def _program(model: torch.nn.Module, inputs: tuple, dynamic_shapes=None, **edge):
    ep = export(model, inputs, dynamic_shapes=dynamic_shapes)
    return to_edge(ep, compile_config=EdgeCompileConfig(**edge)).to_executorch()


def _execute(program, inputs: tuple):
    method = Runtime.get().load_program(program.buffer).load_method("forward")
    return method.execute(list(inputs))


def _close(got: torch.Tensor, want: torch.Tensor, rtol: float = 2e-5) -> None:
    assert_close_to_magnitude(got, want, rtol)


class Attention(torch.nn.Module):
    def __init__(self, causal: bool = False, scale: float | None = None, gqa: bool = False):
        super().__init__()
        self.causal, self.scale, self.gqa = causal, scale, gqa

    def forward(self, q, k, v, mask=None):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=self.causal,
                                              scale=self.scale, enable_gqa=self.gqa)


def _rand(*shape, seed=0, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g) * scale


def _mask(kind: str, b: int, h: int, lq: int, lk: int) -> torch.Tensor | None:
    g = torch.Generator().manual_seed(7)
    if kind == "none":
        return None
    if kind == "bool_2d":
        m = torch.rand(lq, lk, generator=g) > 0.3
        m[:, 0] = True
        return m
    if kind == "bool_row_empty":  # [B, 1, Lq, Lk] with one query row attending to nothing
        m = torch.rand(b, 1, lq, lk, generator=g) > 0.3
        m[:, :, :, 0] = True
        m[0, 0, 1, :] = False
        return m
    if kind == "float_4d":
        return torch.randn(b, h, lq, lk, generator=g)
    if kind == "padding":  # BERT's extended mask: [B, 1, 1, Lk], 0 or the dtype's min
        m = torch.zeros(b, 1, 1, lk)
        m[-1, :, :, lk - 3:] = torch.finfo(torch.float32).min
        return m
    raise AssertionError(kind)


@pytest.mark.parametrize("lq,lk", [(5, 5), (40, 40), (70, 150), (130, 33)])
@pytest.mark.parametrize("mask_kind", ["none", "bool_2d", "bool_row_empty", "float_4d",
                                       "padding"])
def test_masks_and_lengths_match_eager(lq, lk, mask_kind) -> None:
    b, h, d = 2, 3, 24
    q, k, v = _rand(b, h, lq, d, seed=1, scale=2.0), _rand(b, h, lk, d, seed=2), \
        _rand(b, h, lk, d, seed=3)
    mask = _mask(mask_kind, b, h, lq, lk)
    inputs = (q, k, v) if mask is None else (q, k, v, mask)
    program = _program(Attention(), inputs)
    targets = _targets(program)
    assert "ember_fused.sdpa.out" in targets, targets
    assert "aten.bmm.out" not in targets
    want = Attention()(*inputs)
    (got,) = _execute(program, inputs)
    _close(got, want)
    if mask_kind == "bool_row_empty":
        assert torch.all(got[0, :, 1] == 0), "a row attending to nothing gives zeros, as eager"


@pytest.mark.parametrize("lq,lk", [(1, 1), (9, 9), (64, 64), (100, 100), (80, 30), (20, 90)])
def test_causal_matches_eager(lq, lk) -> None:
    q, k, v = _rand(1, 4, lq, 32, seed=4, scale=2.0), _rand(1, 4, lk, 32, seed=5), \
        _rand(1, 4, lk, 32, seed=6)
    program = _program(Attention(causal=True), (q, k, v))
    assert "ember_fused.sdpa.out" in _targets(program)
    (got,) = _execute(program, (q, k, v))
    # torch's top-left rule: row i sees keys j <= i (rows past the last key see all).
    _close(got, Attention(causal=True)(q, k, v))


@pytest.mark.parametrize("heads,kv_heads,lq", [(8, 2, 48), (6, 3, 3), (4, 1, 20)])
def test_grouped_query_attention(heads, kv_heads, lq) -> None:
    q = _rand(1, heads, lq, 16, seed=8, scale=2.0)
    k, v = _rand(1, kv_heads, lq, 16, seed=9), _rand(1, kv_heads, lq, 16, seed=10)
    model = Attention(causal=True, gqa=True)
    program = _program(model, (q, k, v))
    assert "ember_fused.sdpa.out" in _targets(program)
    (got,) = _execute(program, (q, k, v))
    _close(got, model(q, k, v))


def test_scale_and_head_dims() -> None:
    for d in (1, 7, 64, 128, 200):
        q, k, v = _rand(1, 2, 33, d, seed=d), _rand(1, 2, 33, d, seed=d + 1), \
            _rand(1, 2, 33, d, seed=d + 2)
        model = Attention(scale=0.7 / math.sqrt(d))
        program = _program(model, (q, k, v))
        assert "ember_fused.sdpa.out" in _targets(program)
        (got,) = _execute(program, (q, k, v))
        _close(got, model(q, k, v))


class Encoder(torch.nn.Module):
    """Self-attention as transformers writes it: projections, heads split by
    view + transpose, SDPA, heads merged."""

    def __init__(self, dim=64, heads=4) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.out = torch.nn.Linear(dim, dim)

    def forward(self, x, mask):
        b, s, dim = x.shape
        q, k, v = self.qkv(x).split(dim, dim=-1)
        q, k, v = (t.view(b, s, self.heads, dim // self.heads).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.out(y.transpose(1, 2).reshape(b, s, dim))


def test_encoder_with_dynamic_sequence() -> None:
    torch.manual_seed(0)
    model = Encoder().eval()
    x, mask = torch.randn(2, 50, 64), torch.zeros(2, 1, 1, 50)
    seq = Dim("seq", min=2, max=96)
    program = _program(model, (x, mask), dynamic_shapes=({1: seq}, {3: seq}))
    targets = _targets(program)
    assert targets.count("ember_fused.sdpa.out") == 1, targets
    method = Runtime.get().load_program(program.buffer).load_method("forward")
    for s in (2, 17, 50, 96):  # the row kernel below 16 rows, the tiled one above
        x, mask = torch.randn(2, s, 64), torch.zeros(2, 1, 1, s)
        mask[1, :, :, s // 2:] = -1e9
        (got,) = method.execute([x, mask])
        _close(got, model(x, mask))


def test_transformers_bert_layer_fuses() -> None:
    transformers = pytest.importorskip("transformers")
    config = transformers.BertConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                     intermediate_size=128, vocab_size=100,
                                     attn_implementation="sdpa")
    model = transformers.BertModel(config).eval()
    ids = torch.randint(0, 100, (1, 24), generator=torch.Generator().manual_seed(0))
    attn = torch.ones(1, 24, dtype=torch.long)
    attn[0, 20:] = 0

    class Wrap(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.m = model

        def forward(self, ids, attn):
            return self.m(input_ids=ids, attention_mask=attn).last_hidden_state

    program = _program(Wrap(), (ids, attn))
    assert _targets(program).count("ember_fused.sdpa.out") == 2
    (got,) = _execute(program, (ids, attn))
    _close(got, Wrap()(ids, attn), rtol=1e-4)


def test_what_keeps_the_math_form() -> None:
    q = torch.randn(1, 2, 8, 16)
    # dropout, float64, 3-D, a mask whose last dim broadcasts, is_causal with a mask
    assert not fusable(q, q, q, dropout_p=0.1)
    assert not fusable(q.double(), q.double(), q.double())
    assert not fusable(q[0], q[0], q[0])
    assert not fusable(q, q, q, attn_mask=torch.zeros(8, 1))
    assert not fusable(q, q, q, attn_mask=torch.ones(8, 8, dtype=torch.bool), is_causal=True)
    # grouped heads without enable_gqa, a head dim past the kernel's limit
    assert not fusable(q, q[:, :1], q[:, :1])
    big = torch.randn(1, 1, 4, 513)
    assert not fusable(big, big, big)
    assert fusable(q, q, q, attn_mask=torch.zeros(1, 2, 8, 8))
    assert fusable(q, q[:, :1], q[:, :1], enable_gqa=True)


def test_off_switch_and_preserve_ops_keep_the_aten_ops() -> None:
    q, k, v = _rand(1, 2, 20, 16), _rand(1, 2, 20, 16, seed=1), _rand(1, 2, 20, 16, seed=2)
    off = _program(Attention(), (q, k, v), fuse_attention=False)
    assert "ember_fused.sdpa.out" not in _targets(off)
    assert "aten.bmm.out" in _targets(off)
    (got,) = _execute(off, (q, k, v))
    _close(got, Attention()(q, k, v))
    # Dropout keeps the math form (it would need random numbers; eval models have none).
    ep = export(Attention(), (q, k, v))
    edge = to_edge(ep, compile_config=EdgeCompileConfig(
        preserve_ops=[torch.ops.aten.scaled_dot_product_attention.default]))
    nodes = [str(n.target) for n in edge.exported_program().graph.nodes]
    assert any("scaled_dot_product_attention" in t for t in nodes), nodes


def test_wrong_inputs_get_clear_errors() -> None:
    q, k, v = _rand(1, 2, 20, 16), _rand(1, 2, 20, 16, seed=1), _rand(1, 2, 20, 16, seed=2)
    program = _program(Attention(), (q, k, v))
    method = Runtime.get().load_program(program.buffer).load_method("forward")
    with pytest.raises(Exception, match=r"(?i)dtype|float"):
        method.execute([q.double(), k, v])
    with pytest.raises(Exception, match=r"(?i)shape|size"):
        method.execute([q, k, v[:, :, :10]])
