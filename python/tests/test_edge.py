"""to_edge: decomposition, view copies, scalars to tensors, edge ops, printing."""

from __future__ import annotations

import pytest
import torch
from ember.exir import EdgeCompileConfig, EdgeProgramManager, to_edge
from ember.exir.dialects._ops import ops as exir_ops
from ember.exir.dialects.edge._ops import EdgeOpOverload
from ember.exir.pass_base import ExportPass
from models import Basic, ConvertReluToSigmoid, Decode, Encode, Foo, Mixed, SimpleConv
from torch._export.verifier import SpecViolationError
from torch.export import Dim, export


def _edge_targets(ep: torch.export.ExportedProgram) -> list[object]:
    return [n.target for n in ep.graph.nodes if n.op == "call_function"]


def test_simple_conv_prints_edge_ops() -> None:
    aten_dialect = export(SimpleConv(), (torch.randn(1, 3, 16, 16),))
    edge_program: EdgeProgramManager = to_edge(aten_dialect)
    text = str(edge_program.exported_program())
    assert (
        'aten_convolution_default: "f32[1, 16, 16, 16]" = '
        "ember_exir_dialects_edge__ops_aten_convolution_default("
        "x, p_conv_weight, p_conv_bias, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)"
    ) in text
    assert "ember_exir_dialects_edge__ops_aten_relu_default(aten_convolution_default)" in text
    assert "aten_relu_default: USER_OUTPUT" in text
    assert edge_program.methods == ["forward"]


def test_edge_op_identity() -> None:
    relu = exir_ops.edge.aten.relu.default
    assert isinstance(relu, EdgeOpOverload)
    assert relu is exir_ops.edge.aten.relu.default
    assert relu == exir_ops.edge.aten.relu.default
    assert relu != exir_ops.edge.aten.sigmoid.default
    assert relu != torch.ops.aten.relu.default
    ep = to_edge(export(SimpleConv(), (torch.randn(1, 3, 8, 8),))).exported_program()
    assert relu in _edge_targets(ep)


def test_edge_program_still_runs() -> None:
    model = SimpleConv()
    x = torch.randn(1, 3, 8, 8)
    ep = to_edge(export(model, (x,))).exported_program()
    torch.testing.assert_close(ep.module()(x), model(x))


def test_basic_static_and_dynamic() -> None:
    args = (torch.randn(3, 3), torch.randn(3, 3))
    ep = to_edge(export(Basic(), args)).exported_program()
    assert "ember_exir_dialects_edge__ops_aten_add_Tensor(x, y)" in str(ep)

    dim = Dim("dim1_x", min=1, max=10)
    dynamic = export(Basic(), args, dynamic_shapes={"x": {1: dim}, "y": {1: dim}})
    edge = to_edge(dynamic).exported_program()
    out = edge.module()(torch.ones(3, 2), torch.ones(3, 2))
    torch.testing.assert_close(out, torch.full((3, 2), 2.0))


def test_encode_decode_methods() -> None:
    edge_program = to_edge(
        {
            "encode": export(Encode(), (torch.randn(1, 10),)),
            "decode": export(Decode(), (torch.randn(1, 5),)),
        }
    )
    assert edge_program.methods == ["encode", "decode"]
    text = str(edge_program.exported_program("encode"))
    assert (
        'aten_randn_default: "f32[5, 10]" = ember_exir_dialects_edge__ops_aten_randn_default('
        "[5, 10], device = device(type='cpu'), pin_memory = False)"
    ) in text
    assert (
        'aten_permute_copy_default: "f32[10, 5]" = '
        "ember_exir_dialects_edge__ops_aten_permute_copy_default(aten_randn_default, [1, 0])"
    ) in text
    assert "ember_exir_dialects_edge__ops_aten_mm_default(x, aten_permute_copy_default)" in text
    assert 'aten_mm_default: "f32[1, 10]"' in str(edge_program.exported_program("decode"))
    with pytest.raises(KeyError):
        edge_program.exported_program("forward")


def test_convert_relu_to_sigmoid() -> None:
    model = SimpleConv()
    x = torch.randn(1, 3, 8, 8)
    edge_program = to_edge(export(model, (x,)))
    transformed = edge_program.transform((ConvertReluToSigmoid(),))
    text = str(transformed.exported_program())
    assert (
        'aten_sigmoid_default: "f32[1, 16, 8, 8]" = '
        "ember_exir_dialects_edge__ops_aten_sigmoid_default(aten_convolution_default)"
    ) in text
    assert "aten_sigmoid_default: USER_OUTPUT" in text
    # The original manager is untouched.
    assert "aten_relu_default" in str(edge_program.exported_program())
    node = next(
        n for n in transformed.exported_program().graph.nodes if n.name == "aten_sigmoid_default"
    )
    assert node.meta["val"].shape == (1, 16, 8, 8)
    assert "stack_trace" in node.meta
    ref = torch.sigmoid(model.conv(x))
    torch.testing.assert_close(transformed.exported_program().module()(x), ref)


def test_view_copies_and_scalars_to_tensors() -> None:
    ep = to_edge(export(Mixed(), (torch.randn(4, 4), torch.arange(4)))).exported_program()
    names = {t.__name__ for t in _edge_targets(ep) if isinstance(t, EdgeOpOverload)}
    assert {
        "aten.view_copy.default",
        "aten.permute_copy.default",
        "aten.split_with_sizes_copy.default",
    } <= names
    assert "aten.pow.Tensor_Tensor" in names and "aten.gt.Tensor" in names
    assert not any(n.endswith(".Scalar") for n in names)
    for node in ep.graph.nodes:
        if node.op == "call_function" and isinstance(node.target, EdgeOpOverload):
            schema = node.target._schema
            for arg, value in zip(schema.arguments, node.args, strict=False):
                if isinstance(arg.type, torch.TensorType):
                    assert isinstance(value, torch.fx.Node), f"{node.name}: {arg.name}={value!r}"


def test_verifier_rejects_non_core_op() -> None:
    class SigmoidToSilu(ExportPass):
        def call_operator(self, op, args, kwargs, meta):  # type: ignore[no-untyped-def]
            if op == exir_ops.edge.aten.sigmoid.default:
                op = exir_ops.edge.aten.silu.default
            return super().call_operator(op, args, kwargs, meta)

    class Sigmoid(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.sigmoid(x)

    edge = to_edge(export(Sigmoid(), (torch.randn(4),)))
    with pytest.raises(SpecViolationError, match=r"aten\.silu\.default"):
        edge.transform([SigmoidToSilu()])

    allowed = EdgeCompileConfig(_core_aten_ops_exception_list=[torch.ops.aten.silu.default])
    edge = to_edge(export(Sigmoid(), (torch.randn(4),)), compile_config=allowed)
    assert "aten_silu_default" in str(edge.transform([SigmoidToSilu()]).exported_program())


def test_verifier_rejects_raw_aten_op() -> None:
    class ToAten(ExportPass):
        def call_operator(self, op, args, kwargs, meta):  # type: ignore[no-untyped-def]
            if op == exir_ops.edge.aten.relu.default:
                op = torch.ops.aten.relu.default
            return super().call_operator(op, args, kwargs, meta)

    edge = to_edge(export(SimpleConv(), (torch.randn(1, 3, 8, 8),)))
    with pytest.raises(SpecViolationError, match="not an edge op"):
        edge.transform([ToAten()])


def test_to_backend_needs_a_partitioner() -> None:
    edge = to_edge(export(Foo(), tuple(torch.randn(2, 2) for _ in range(3))))
    with pytest.raises(TypeError, match="Partitioner, got object"):
        edge.to_backend(object())


def test_transform_accepts_plain_callables() -> None:
    from torch.fx.passes.infra.pass_base import PassResult

    def relu_to_sigmoid(gm: torch.fx.GraphModule) -> PassResult:
        for node in gm.graph.nodes:
            if node.target == exir_ops.edge.aten.relu.default:
                node.target = exir_ops.edge.aten.sigmoid.default
        gm.recompile()
        return PassResult(gm, True)

    edge = to_edge(export(SimpleConv(), (torch.randn(1, 3, 8, 8),)))
    transformed = edge.transform([relu_to_sigmoid])
    assert exir_ops.edge.aten.sigmoid.default in _edge_targets(transformed.exported_program())
    assert exir_ops.edge.aten.relu.default in _edge_targets(edge.exported_program())
