"""The XNNPACK delegate end to end: XnnpackPartitioner -> preprocess (EXN1
blob) -> .pte -> C++ runtime (XNNPACK), compared with PyTorch eager.

Tolerance: rtol 1e-4, atol 1e-5 for single ops (XNNPACK accumulates in a
different order and uses its own exp/sigmoid approximations); rtol 1e-3 for
whole models, as the XNNPACK issue asks.
"""

from __future__ import annotations

import pytest
import torch
from torch.export import export

from ember import _C
from ember.backends.xnnpack import XnnpackPartitioner
from ember.exir import to_edge
from ember.exir.delegate import is_delegate_call
from ember.runtime import EmberError, Runtime

torch.manual_seed(0)


def lower(model: torch.nn.Module, inputs: tuple, partitioner: XnnpackPartitioner | None = None):
    partitioner = partitioner or XnnpackPartitioner()
    edge = to_edge(export(model.eval(), inputs)).to_backend(partitioner)
    return edge, edge.to_executorch()


def run(program, inputs: tuple) -> list[torch.Tensor]:
    method = Runtime.get().load_program(program.buffer).load_method("forward")
    return method.execute(list(inputs))


def graph_ops(edge) -> list[str]:
    return [
        str(n.target)
        for n in edge.exported_program().graph.nodes
        if n.op == "call_function" and "getitem" not in str(n.target)
    ]


def check(model: torch.nn.Module, inputs: tuple, rtol=1e-4, atol=1e-5, fully=True):
    edge, program = lower(model, inputs)
    with torch.no_grad():
        expected = model(*inputs)
    expected = expected if isinstance(expected, (tuple, list)) else (expected,)
    got = run(program, inputs)
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        torch.testing.assert_close(g, e, rtol=rtol, atol=atol)
    ops = graph_ops(edge)
    if fully:
        assert all("executorch_call_delegate" in op for op in ops), ops
    return edge


class Lambda(torch.nn.Module):
    def __init__(self, fn, *modules: torch.nn.Module) -> None:
        super().__init__()
        self.fn = fn
        self.mods = torch.nn.ModuleList(modules)

    def forward(self, *xs):
        return self.fn(self.mods, *xs)


CONVS = [
    dict(cin=3, cout=8, k=3, stride=1, padding=1, dilation=1, groups=1),
    dict(cin=4, cout=6, k=5, stride=2, padding=2, dilation=1, groups=1),
    dict(cin=8, cout=8, k=3, stride=1, padding=2, dilation=2, groups=8),  # depthwise
    dict(cin=8, cout=16, k=3, stride=2, padding=1, dilation=1, groups=8),  # multiplier 2
    dict(cin=8, cout=12, k=1, stride=1, padding=0, dilation=1, groups=4),  # grouped
    dict(cin=3, cout=5, k=(3, 1), stride=(2, 1), padding=(1, 0), dilation=1, groups=1),
]


@pytest.mark.parametrize("cfg", CONVS, ids=lambda c: "-".join(f"{k}{v}" for k, v in c.items()))
@pytest.mark.parametrize("bias", [True, False])
def test_convolution(cfg, bias):
    conv = torch.nn.Conv2d(cfg["cin"], cfg["cout"], cfg["k"], stride=cfg["stride"],
                           padding=cfg["padding"], dilation=cfg["dilation"], groups=cfg["groups"],
                           bias=bias)
    check(conv, (torch.randn(2, cfg["cin"], 11, 9),))


@pytest.mark.parametrize("act", ["relu", "relu6", "hardtanh", "clamp_min", "hardswish", "sigmoid"])
def test_conv_batch_norm_activation(act):
    conv, bn = torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8)
    with torch.no_grad():
        bn.running_mean.uniform_(-1, 1)
        bn.running_var.uniform_(0.5, 2.0)
        bn.weight.uniform_(0.5, 1.5)
    fns = {
        "relu": torch.relu,
        "relu6": torch.nn.functional.relu6,
        "hardtanh": lambda y: torch.nn.functional.hardtanh(y, -0.5, 0.5),
        "clamp_min": lambda y: torch.clamp(y, min=0.1),
        "hardswish": torch.nn.functional.hardswish,
        "sigmoid": torch.sigmoid,
    }
    model = Lambda(lambda m, x: fns[act](m[1](m[0](x))), conv, bn)
    edge = check(model, (torch.randn(1, 3, 12, 12),))
    # The batch norm was folded into the convolution: its statistics are gone.
    assert not any("running" in k for k in edge.exported_program().state_dict)


def test_batch_norm_alone_on_rank_2_and_4():
    bn2, bn4 = torch.nn.BatchNorm1d(6), torch.nn.BatchNorm2d(3)
    for bn in (bn2, bn4):
        with torch.no_grad():
            bn.running_mean.uniform_(-1, 1)
            bn.running_var.uniform_(0.5, 2.0)
    check(bn2, (torch.randn(4, 6),))
    check(bn4, (torch.randn(2, 3, 5, 7),))


@pytest.mark.parametrize("shape", [(5, 16), (2, 7, 16)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear(shape, bias):
    check(torch.nn.Linear(16, 12, bias=bias), (torch.randn(*shape),))


BINARY_CASES = [(op, (3, 1, 1)) for op in ["add", "sub", "mul", "div", "maximum", "minimum"]] + [
    ("add", shape) for shape in [(2, 3, 4, 5), (5,), (1, 3, 4, 1), ()]
]


@pytest.mark.parametrize("op,other_shape", BINARY_CASES, ids=str)
def test_binary_broadcasting_on_nhwc(op, other_shape):
    fn = getattr(torch, op)
    const = torch.rand(other_shape) + 0.5

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("c", const)

        def forward(self, x, y):
            # Both a run-time and a constant operand, around a convolution (NHWC inside).
            return fn(fn(self.conv(x), y), self.c)

    m = M()
    m.conv = torch.nn.Conv2d(3, 3, 1)
    check(m, (torch.randn(2, 3, 4, 5), torch.rand(2, 3, 4, 5) + 0.5))


def test_binary_with_python_scalar_and_rank_2():
    check(Lambda(lambda m, x, y: (x * 2.0 + y) / 3.0 - 1.0), (torch.randn(3, 4), torch.randn(3, 4)))


@pytest.mark.parametrize(
    "fn",
    [torch.abs, torch.neg, torch.floor, torch.ceil, torch.sigmoid,
     lambda x: torch.sqrt(torch.abs(x)), torch.nn.functional.elu,
     lambda x: torch.nn.functional.leaky_relu(x, 0.2), torch.nn.functional.hardswish],
    ids=["abs", "neg", "floor", "ceil", "sigmoid", "sqrt", "elu", "leaky_relu", "hardswish"],
)
def test_unary(fn):
    check(Lambda(lambda m, x: fn(x)), (torch.randn(2, 3, 6, 5) * 3,))


@pytest.mark.parametrize(
    "pool",
    [torch.nn.MaxPool2d(2), torch.nn.MaxPool2d(3, 2, padding=1), torch.nn.MaxPool2d(3, 1, dilation=2),
     torch.nn.AvgPool2d(2), torch.nn.AvgPool2d(3, 2), torch.nn.AdaptiveAvgPool2d(1),
     torch.nn.AdaptiveAvgPool2d((2, 3))],
    ids=["max2", "max3s2p1", "max3d2", "avg2", "avg3s2", "adaptive1", "adaptive2x3"],
)
def test_pooling(pool):
    check(pool, (torch.randn(2, 4, 12, 12),))


@pytest.mark.parametrize("keepdim", [True, False])
def test_mean_over_spatial_dims(keepdim):
    check(Lambda(lambda m, x: x.mean(dim=(-1, -2), keepdim=keepdim)), (torch.randn(2, 5, 6, 7),))


@pytest.mark.parametrize("shape", [(4, 10), (2, 3, 9), (2, 4, 5, 5)])
def test_softmax_last_dim_keeps_the_program_layout(shape):
    # Attention scores: rank 4 without a convolution stay in the program's layout.
    edge = check(Lambda(lambda m, x: torch.softmax(x / 2.0, -1)), (torch.randn(*shape) * 4,))
    delegate = next(m for _, m in edge.exported_program().graph_module.named_children())
    assert [(s.key, s.value) for s in delegate.compile_specs] == [("layout", b"natural")]


def test_softmax_over_channels_after_convolution_is_nhwc():
    edge = check(Lambda(lambda m, x: torch.softmax(m[0](x), 1), torch.nn.Conv2d(3, 6, 1)),
                 (torch.randn(2, 3, 4, 4),))
    delegate = next(m for _, m in edge.exported_program().graph_module.named_children())
    assert [(s.key, s.value) for s in delegate.compile_specs] == [("layout", b"nhwc")]


def test_attention_block_reshapes_and_softmax_run_on_xnnpack():
    attention = torch.nn.MultiheadAttention(16, 4, batch_first=True)
    x = torch.randn(2, 5, 16)
    model = Lambda(lambda m, x: m[0](x, x, x, need_weights=False)[0], attention)
    check(model, (x,), fully=False)


def test_constant_pad():
    check(Lambda(lambda m, x: torch.nn.functional.pad(x, (1, 2, 0, 3), value=0.5)),
          (torch.randn(1, 3, 5, 5),))


@pytest.mark.parametrize("align", [False, True])
def test_upsample_bilinear(align):
    check(Lambda(lambda m, x: torch.nn.functional.interpolate(
        x, size=(10, 14), mode="bilinear", align_corners=align)), (torch.randn(1, 3, 5, 7),),
        rtol=1e-4, atol=1e-5)


def test_flatten_after_global_pool_and_classifier():
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(), torch.nn.Linear(8, 4),
    )
    check(model, (torch.randn(2, 3, 9, 9),))


def test_unsupported_ops_stay_portable_and_are_reported():
    # cat, gelu and layer norm have no operator in this XNNPACK.
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.fc2 = torch.nn.Linear(8, 8), torch.nn.Linear(16, 4)
            self.ln = torch.nn.LayerNorm(16)

        def forward(self, x):
            y = self.fc1(x)
            z = torch.cat([torch.nn.functional.gelu(y), y], dim=-1)
            return self.fc2(self.ln(z))

    partitioner = XnnpackPartitioner()
    x = torch.randn(3, 8)
    model = M().eval()
    edge, program = lower(model, (x,), partitioner)
    ops = graph_ops(edge)
    assert sum("executorch_call_delegate" in op for op in ops) == 2
    assert any("gelu" in op for op in ops) and any("cat" in op for op in ops)
    reasons = {op: why for _, op, why in partitioner.report()}
    assert reasons["aten.gelu.default"] == "no XNNPACK operator"
    torch.testing.assert_close(run(program, (x,))[0], model(x), rtol=1e-4, atol=1e-5)


def test_weights_move_into_the_delegate():
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU())
    edge, _ = lower(model, (torch.randn(1, 3, 8, 8),))
    program = edge.exported_program()
    assert program.state_dict == {}
    assert [s.kind.name for s in program.graph_signature.input_specs] == ["USER_INPUT"]


def test_portable_fallback_for_non_float_and_dynamic_inputs():
    # int64 arithmetic is not claimed; the program still runs.
    model = Lambda(lambda m, x, i: x * 2 + (i * 3).float())
    x, i = torch.randn(4), torch.arange(4)
    edge, program = lower(model, (x, i))
    torch.testing.assert_close(run(program, (x, i))[0], x * 2 + (i * 3).float())


def test_channels_last_input_is_bound_without_conversion():
    conv = torch.nn.Conv2d(3, 4, 3, padding=1)
    x = torch.randn(1, 3, 6, 6).contiguous(memory_format=torch.channels_last)
    _, program = lower(conv, (x,))
    got = run(program, (x,))[0]
    torch.testing.assert_close(got, conv(x), rtol=1e-4, atol=1e-5)


def test_wrong_input_shape_is_a_named_error_and_the_method_stays_usable():
    conv = torch.nn.Conv2d(3, 4, 3, padding=1)
    x = torch.randn(1, 3, 6, 6)
    _, program = lower(conv, (x,))
    method = Runtime.get().load_program(program.buffer).load_method("forward")
    with pytest.raises(EmberError, match="input"):
        method.execute([torch.randn(1, 3, 7, 6)])
    torch.testing.assert_close(method.execute([x])[0], conv(x), rtol=1e-4, atol=1e-5)


def test_corrupt_blob_is_refused_at_load_method():
    conv = torch.nn.Conv2d(3, 4, 3, padding=1)
    _, program = lower(conv, (torch.randn(1, 3, 6, 6),))
    data = bytearray(program.buffer)
    at = data.find(b"EXN1")
    assert at > 0
    data[at] = ord("X")
    with pytest.raises(EmberError, match="EmberXnnpackBackend|EXN1"):
        Runtime.get().load_program(bytes(data)).load_method("forward")


def test_thread_count_is_fixed_once_the_pool_exists():
    threads = _C.threads()
    assert threads >= 1
    assert _C.set_threads(threads)
    assert not _C.set_threads(threads + 7)


def test_excluded_ops_stay_portable():
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    partitioner = XnnpackPartitioner(exclude=("aten.addmm.default",))
    x = torch.randn(3, 8)
    edge, program = lower(model, (x,), partitioner)
    ops = graph_ops(edge)
    assert sum("addmm" in op for op in ops) == 2
    assert sum("executorch_call_delegate" in op for op in ops) == 1  # the relu
    assert ("aten.addmm.default", "excluded by the partitioner's settings") in {
        (op, why) for _, op, why in partitioner.report()
    }
    torch.testing.assert_close(run(program, (x,))[0], model(x), rtol=1e-4, atol=1e-5)
