"""Attention with a constant causal mask runs as causal attention
(passes/sdpa_causal_mask.py), and the tiled kernel stops each query block at
the last key a boolean mask lets it see (kernels/portable/util/sdpa_tiled_f32.cpp):
both against eager, relative to the output's magnitude."""

from __future__ import annotations

import pytest
import torch
from ember.exir import ExecutorchBackendConfig, to_edge
from torch.export import export

pytest.importorskip("ember._C")
from ember.exir.passes.sdpa_causal_mask import is_causal_mask
from ember.runtime import Runtime
from magnitude import assert_close_to_magnitude

F = torch.nn.functional


class MaskedAttention(torch.nn.Module):
    """Attention over [1, 4, L, 32] heads with a mask kept as a buffer (a
    constant of the program) or passed in."""

    def __init__(self, mask: torch.Tensor | None) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(32, 384)
        if mask is not None:
            self.register_buffer("mask", mask)
        else:
            self.mask = None

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        q, k, v = self.proj(x).reshape(1, x.shape[1], 3, 4, 32).permute(2, 0, 3, 1, 4)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=self.mask if mask is None
                                              else mask)


def _sdpa_args(program) -> list[tuple]:
    """(attn_mask, is_causal) of every sdpa call, defaults filled in."""
    ep = program.exported_program()
    calls = [n for n in ep.graph.nodes if "sdpa" in str(n.target)]
    return [(n.args[3] if len(n.args) > 3 else n.kwargs.get("attn_mask"),
             n.args[4] if len(n.args) > 4 else n.kwargs.get("is_causal", False)) for n in calls]


def _run(program, inputs):
    return Runtime.get().load_program(program.buffer).load_method("forward").execute(inputs)[0]


def test_is_causal_mask():
    tril = torch.ones(5, 5, dtype=torch.bool).tril()
    assert is_causal_mask(tril)
    assert is_causal_mask(tril.expand(2, 3, 5, 5))
    assert not is_causal_mask(torch.ones(5, 5, dtype=torch.bool).tril(-1))
    assert not is_causal_mask(torch.ones(5, 6, dtype=torch.bool).tril())
    assert not is_causal_mask(tril.float())


@pytest.mark.parametrize("length", [7, 128, 130])
def test_a_constant_causal_mask_becomes_is_causal(length):
    torch.manual_seed(0)
    mask = torch.ones(length, length, dtype=torch.bool).tril()[None, None]
    model = MaskedAttention(mask).eval()
    x = torch.randn(1, length, 32)
    program = to_edge(export(model, (x,))).to_executorch(ExecutorchBackendConfig())
    assert _sdpa_args(program) == [(None, True)]
    assert_close_to_magnitude(_run(program, [x]), model(x), 2e-5)


@pytest.mark.parametrize("mask", [
    torch.ones(64, 64, dtype=torch.bool).tril(-1),             # not the causal triangle
    torch.ones(64, 64).tril().log(),                           # a float mask
    torch.ones(64, 64, dtype=torch.bool).tril().T.contiguous(),  # the other triangle
], ids=["shifted", "float", "upper"])
def test_other_constant_masks_stay(mask):
    torch.manual_seed(0)
    model = MaskedAttention(mask[None, None]).eval()
    x = torch.randn(1, 64, 32)
    program = to_edge(export(model, (x,))).to_executorch(ExecutorchBackendConfig())
    assert all(not causal for _, causal in _sdpa_args(program))
    got, want = _run(program, [x]), model(x)
    # A row with nothing visible: zeros in both (eager's CPU SDPA), else close.
    assert_close_to_magnitude(torch.nan_to_num(got), torch.nan_to_num(want), 2e-5)


@pytest.mark.parametrize("visible", [1, 63, 64, 65, 100, 200])
def test_boolean_mask_bounds_the_keys_a_query_block_reads(visible):
    # A mask passed in (not a constant) hiding the keys past `visible` for
    # some rows and a causal band for the others: the kernel stops each query
    # block at the last key any of its rows sees, with eager's result.
    torch.manual_seed(1)
    model = MaskedAttention(None).eval()
    length = 200
    x = torch.randn(1, length, 32)
    mask = torch.ones(length, length, dtype=torch.bool).tril()
    mask[:, visible:] = False
    mask[:, 0] = True  # every row sees something
    program = to_edge(export(model, (x, mask))).to_executorch(ExecutorchBackendConfig())
    assert _sdpa_args(program)[0][1] is False
    assert_close_to_magnitude(_run(program, [x, mask]), model(x, mask), 2e-5)
