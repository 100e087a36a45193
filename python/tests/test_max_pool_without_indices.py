"""2-D max pools whose indices nothing reads run as ``ember_fused::max_pool2d``
(passes/max_pool_without_indices.py, kernels/portable/op_max_pool.cpp): which
pools are rewritten, which must not be, and the programs against eager."""

from __future__ import annotations

import pytest
import torch
from ember.exir import ExecutorchBackendConfig, to_edge
from torch.export import export

pytest.importorskip("ember._C")
from ember.runtime import Runtime

F = torch.nn.functional


def _lower(model, inputs, **config):
    program = to_edge(export(model, inputs)).to_executorch(ExecutorchBackendConfig(**config))
    ops = [str(n.target) for n in program.exported_program().graph.nodes
           if n.op == "call_function"]
    outs = Runtime.get().load_program(program.buffer).load_method("forward").execute(list(inputs))
    return ops, outs


class Stem(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)

    def forward(self, x):
        y = F.max_pool2d(torch.relu(self.conv(x)), 3, 2, 1)
        return F.max_pool2d(y, 2, ceil_mode=True) * 2


def test_unread_indices_are_not_computed() -> None:
    x = torch.randn(2, 3, 33, 30)
    model = Stem().eval()
    ops, outs = _lower(model, (x,))
    assert sum("ember_fused.max_pool2d" in o for o in ops) == 2, ops
    assert not any("max_pool2d_with_indices" in o for o in ops)
    with torch.no_grad():
        want = model(x)
    # The convolution's kernels round differently from eager's; the pools add nothing.
    assert float((outs[0] - want).abs().max()) <= 1e-5 * float(want.abs().max())


def test_read_indices_keep_the_aten_op() -> None:
    class WithIndices(torch.nn.Module):
        def forward(self, x):
            values, indices = F.max_pool2d(x, 2, return_indices=True)
            return values, indices

    x = torch.randn(1, 2, 8, 8)
    ops, outs = _lower(WithIndices(), (x,))
    assert any("max_pool2d_with_indices" in o for o in ops)
    assert not any("ember_fused.max_pool2d" in o for o in ops)
    values, indices = WithIndices()(x)
    assert torch.equal(outs[0], values) and torch.equal(outs[1], indices)


def test_config_off_keeps_the_aten_op() -> None:
    x = torch.randn(1, 3, 16, 16)
    ops, outs = _lower(Stem().eval(), (x,), max_pool_without_indices=False)
    assert any("max_pool2d_with_indices" in o for o in ops)
    assert not any("ember_fused.max_pool2d" in o for o in ops)
