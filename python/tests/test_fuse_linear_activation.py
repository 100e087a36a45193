"""Linear layer + residual add + activation fused into ``ember_fused::fused_linear``
(passes/fuse_linear_activation.py, kernels/portable/op_fused_linear.cpp), and the
written-out tanh GELU put back as ``gelu(approximate="tanh")``
(passes/fuse_gelu_tanh.py): which chains fuse, which must not, and the
programs against eager (relative to the output's magnitude) and against the
same program without the passes."""

from __future__ import annotations

import math

import pytest
import torch
from ember.exir import ExecutorchBackendConfig, to_edge
from ember.exir.operator import ember_fused
from torch.export import Dim, export

pytest.importorskip("ember._C")
from ember.runtime import Runtime
from magnitude import assert_close_to_magnitude

F = torch.nn.functional


def _targets(program) -> list[str]:
    ep = program.exported_program()
    return [str(n.target) for n in ep.graph.nodes if n.op == "call_function"]


def _count(program, name: str) -> int:
    return sum(name in t for t in _targets(program))


def _program(model, inputs, dynamic_shapes=None, **config):
    ep = export(model, inputs, dynamic_shapes=dynamic_shapes)
    return to_edge(ep).to_executorch(ExecutorchBackendConfig(**config))


def _execute(program, inputs) -> torch.Tensor:
    method = Runtime.get().load_program(program.buffer).load_method("forward")
    return method.execute(list(inputs))[0]


def _close(got: torch.Tensor, want: torch.Tensor, rtol: float = 2e-6) -> None:
    assert_close_to_magnitude(got, want, rtol)


class Mlp(torch.nn.Module):
    """A transformer MLP with its residual: fc1 -> act -> fc2 -> + x."""

    def __init__(self, d=48, hidden=96, act="gelu", bias=True, residual=True) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(d, hidden, bias=bias)
        self.fc2 = torch.nn.Linear(hidden, d, bias=bias)
        self.act, self.residual = act, residual

    def forward(self, x):
        h = self.fc1(x)
        if self.act == "gelu":
            h = F.gelu(h)
        elif self.act == "gelu_tanh":
            h = F.gelu(h, approximate="tanh")
        elif self.act == "relu":
            h = F.relu(h)
        elif self.act == "hardtanh":
            h = F.hardtanh(h, -0.5, 0.75)
        elif self.act == "gelu_new":  # GPT-2's NewGELUActivation, op by op
            h = 0.5 * h * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi)
                                            * (h + 0.044715 * torch.pow(h, 3.0))))
        y = self.fc2(h)
        return x + y if self.residual else y


def _x(*shape, seed=0):
    return (torch.randn(*shape, generator=torch.Generator().manual_seed(seed)),)


@pytest.mark.parametrize("act", ["gelu", "gelu_tanh", "relu", "hardtanh", "gelu_new"])
@pytest.mark.parametrize("shape", [(2, 7, 48), (5, 48), (1, 1, 48)])
def test_mlp_fuses_and_matches_eager(act, shape):
    model = Mlp(act=act).eval()
    inputs = _x(*shape)
    program = _program(model, inputs)
    # fc1 with its activation, fc2 with the residual: no addmm, add or activation left.
    assert _count(program, "fused_linear") == 2, _targets(program)
    for op in ("addmm", "aten.add", "gelu", "relu", "hardtanh", "clamp", "tanh", "pow"):
        assert _count(program, op) == 0, (op, _targets(program))
    with torch.no_grad():
        want = model(*inputs)
    _close(_execute(program, inputs), want)
    # The same program without the passes: the fused op has the unfused kernels' bits
    # (the written-out GELU rounds differently op by op).
    plain = _program(model, inputs, fuse_linear_activation=False, fuse_gelu_tanh=False)
    assert _count(plain, "fused_linear") == 0
    got_plain = _execute(plain, inputs)
    if act == "gelu_new":
        _close(_execute(program, inputs), got_plain)
    else:
        assert torch.equal(_execute(program, inputs), got_plain)


def test_mm_without_bias_and_residual_first():
    class M(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(32, 40, bias=False)

        def forward(self, x, r):
            return F.gelu(r + self.fc(x))  # residual on the left, then the activation

    model = M().eval()
    inputs = _x(3, 9, 32) + _x(3, 9, 40, seed=1)
    program = _program(model, inputs)
    assert _count(program, "fused_linear") == 1 and _count(program, "aten.mm") == 0
    node = next(n for n in program.exported_program().graph.nodes
                if "fused_linear" in str(n.target))
    assert node.args[2] is None and node.args[3] is not None and node.args[4] == "gelu"
    with torch.no_grad():
        _close(_execute(program, inputs), model(*inputs))


def test_dynamic_sequence_length():
    model = Mlp(act="gelu").eval()
    inputs = _x(1, 12, 48)
    seq = Dim("seq", min=1, max=64)
    program = _program(model, inputs, dynamic_shapes=({1: seq},))
    assert _count(program, "fused_linear") == 2
    method = Runtime.get().load_program(program.buffer).load_method("forward")
    for n in (1, 12, 37, 64):
        x = _x(1, n, 48, seed=n)
        with torch.no_grad():
            _close(method.execute(list(x))[0], model(*x))


class Unfusable(torch.nn.Module):
    def __init__(self, case: str) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(16, 24)
        self.case = case

    def forward(self, x, r):
        y = self.fc(x)
        if self.case == "two_readers":  # the product is read twice: the add cannot take it
            return F.gelu(y) + y
        if self.case == "broadcast":  # the residual broadcasts
            return y + r[:, :1]
        if self.case == "alpha":
            return torch.add(y, r, alpha=2.0)
        if self.case == "output":  # the product is also a method output
            return y, F.gelu(y)
        if self.case == "activations":  # a product of two activations is no linear layer
            return F.gelu(torch.mm(r, r.t()))
        return torch.sigmoid(y)  # not an activation the kernel has


@pytest.mark.parametrize("case", ["two_readers", "broadcast", "alpha", "output", "activations",
                                  "sigmoid"])
def test_left_alone(case):
    model = Unfusable(case).eval()
    inputs = _x(6, 16) + _x(6, 24, seed=1)
    program = _program(model, inputs)
    fused = _count(program, "fused_linear")
    assert fused == 0, _targets(program)
    with torch.no_grad():
        want = model(*inputs)
    want = want[0] if isinstance(want, tuple) else want
    _close(_execute(program, inputs), want)


def test_config_off_keeps_addmm_and_bf16_keeps_the_epilogue():
    model = Mlp(act="gelu_new").eval()
    inputs = _x(4, 48)
    off = _program(model, inputs, fuse_linear_activation=False, fuse_gelu_tanh=False)
    assert _count(off, "fused_linear") == 0 and _count(off, "tanh") == 1
    assert _count(off, "addmm") == 2
    gelu_only = _program(model, inputs, fuse_linear_activation=False)
    assert _count(gelu_only, "tanh") == 0 and _count(gelu_only, "gelu") == 1
    # bf16: both layers in bf16 with their epilogues (the GELU, the residual).
    bf16 = _program(model, inputs, precision="bf16")
    assert _count(bf16, "linear_bf16") == 2 and _count(bf16, "fused_linear_bf16") == 2
    assert _count(bf16, "fused_linear") == _count(bf16, "fused_linear_bf16")
    assert _count(bf16, "gelu") == 0 and _count(bf16, "tanh") == 0


def test_written_out_gelu_variants():
    """Both operand orders of each mul/add, and a copy that is not GELU."""

    class G(torch.nn.Module):
        def __init__(self, wrong: bool) -> None:
            super().__init__()
            self.c = 0.044 if wrong else 0.044715

        def forward(self, x):
            inner = (math.sqrt(2.0 / math.pi) * ((self.c * x ** 3) + x))
            return (1.0 + torch.tanh(inner)) * (x * 0.5)

    x = _x(3, 50)
    for wrong in (False, True):
        model = G(wrong).eval()
        program = _program(model, x)
        assert _count(program, "gelu") == (0 if wrong else 1), _targets(program)
        assert _count(program, "tanh") == (1 if wrong else 0)
        with torch.no_grad():
            _close(_execute(program, x), model(*x))


def test_fused_linear_eager_reference():
    x, w = torch.randn(5, 8), torch.randn(8, 6)
    b, r = torch.randn(6), torch.randn(5, 6)
    got = ember_fused.ops.fused_linear(x, w, b, r, "gelu_tanh", -1.0, 1.0)
    want = F.gelu(torch.clamp(x @ w + b + r, -1.0, 1.0), approximate="tanh")
    assert torch.equal(got, want)
    with pytest.raises(ValueError, match="activation must be one of"):
        ember_fused.ops.fused_linear(x, w, None, None, "swish")
