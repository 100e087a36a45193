"""to_executorch: out variants + alloc, memory planning, the printed program."""

from __future__ import annotations

import itertools

import pytest
import torch
from ember.exir import ExecutorchBackendConfig, ExecutorchProgramManager, to_edge
from ember.exir.passes import MemoryPlan, MemoryPlanningPass
from models import ConvertReluToSigmoid, Decode, Encode, Foo, M, Mixed, SimpleConv
from torch.export import export


def _foo_program() -> ExecutorchProgramManager:
    edge = to_edge(export(Foo(), (torch.randn(2, 2), torch.randn(2, 2), torch.randn(2, 2))))
    return edge.to_executorch(
        ExecutorchBackendConfig(passes=[], memory_planning_pass=MemoryPlanningPass())
    )


def test_foo_executorch_dialect_printout() -> None:
    text = str(_foo_program().exported_program())
    expected = [
        'alloc: "f32[2, 2]" = ember_exir_memory_alloc(((2, 2), torch.float32))',
        'aten_mm_default: "f32[2, 2]" = torch.ops.aten.mm.out(a, x, out = alloc)',
        'alloc_1: "f32[2, 2]" = ember_exir_memory_alloc(((2, 2), torch.float32))',
        'aten_add_tensor: "f32[2, 2]" = torch.ops.aten.add.out(aten_mm_default, b, out = alloc_1)',
        "torch.ops.aten.sub.out(aten_add_tensor, a, out = alloc_2)",
        "torch.ops.aten.mm.out(aten_sub_tensor, x, out = alloc_3)",
        'aten_add_tensor_1: "f32[2, 2]" = torch.ops.aten.add.out(aten_mm_default_1, b, out = alloc_4)',
        "return (aten_add_tensor_1,)",
        "aten_add_tensor_1: USER_OUTPUT",
    ]
    positions = [text.index(line) for line in expected]
    assert positions == sorted(positions)


def test_foo_memory_plan_lifetimes() -> None:
    plan = _foo_program().memory_plan("forward")
    lifetimes = {t.name: (t.first, t.last) for t in plan.tensors}
    assert lifetimes == {
        "a": (0, 4),
        "x": (0, 4),
        "b": (0, 4),
        "aten_mm_default": (0, 1),
        "aten_add_tensor": (1, 2),
        "aten_sub_tensor": (2, 3),
        "aten_mm_default_1": (3, 4),
        "aten_add_tensor_1": (4, 4),
    }
    assert all(t.size == 16 for t in plan.tensors)
    text = str(plan)
    assert "aten_mm_default_1" in text and f"total {plan.total_bytes} bytes" in text
    assert plan.lower_bound == 80


def test_encode_decode_randn_out() -> None:
    edge = to_edge(
        {
            "encode": export(Encode(), (torch.randn(1, 10),)),
            "decode": export(Decode(), (torch.randn(1, 5),)),
        }
    )
    program = edge.to_executorch()
    assert program.methods == ["encode", "decode"]
    text = str(program.exported_program("encode"))
    assert "torch.ops.aten.randn.out([5, 10], out = alloc)" in text
    assert "torch.ops.aten.permute_copy.out(aten_randn_default, [1, 0], out = alloc_1)" in text


def test_m_parameters_are_constants_and_results_match() -> None:
    model = M()
    example_args = (torch.randn(3, 4),)
    aten_dialect = export(export(model, example_args).module(), example_args)
    program = to_edge(aten_dialect).to_executorch(ExecutorchBackendConfig(passes=[]))
    ep = program.exported_program()
    text = str(ep)
    # The linear layer and its clamp are one fused op (fuse_linear_activation),
    # reading the weight's permute_copy folded into a constant.
    assert ("torch.ops.ember_fused.fused_linear.out(aten_add_tensor, c_folded_0, p_linear_bias, "
            "None, 'none', 0.0, 1.0, out = alloc_1)") in text
    plain = to_edge(aten_dialect).to_executorch(
        ExecutorchBackendConfig(passes=[], fuse_linear_activation=False))
    text = str(plain.exported_program())
    assert "torch.ops.aten.addmm.out(" in text
    # alloc_2: the weight's permute_copy was folded into a constant.
    assert "torch.ops.aten.clamp.out(aten_addmm_default, 0.0, 1.0, out = alloc_2)" in text
    names = {t.name for t in program.memory_plan().tensors}
    assert not any(n.startswith("p_") for n in names)  # parameters are not planned
    with torch.no_grad():
        torch.testing.assert_close(ep.module()(*example_args), model(*example_args))


def test_mixed_program_matches_eager() -> None:
    args = (torch.randn(4, 4), torch.arange(4))
    # The pool's unread indices stay (a multi-output op with a planned output).
    program = to_edge(export(Mixed(), args)).to_executorch(
        ExecutorchBackendConfig(max_pool_without_indices=False))
    text = str(program.exported_program())
    assert "torch.ops.aten.max_pool2d_with_indices.out(" in text and "indices = alloc_" in text
    assert "ember_exir_memory_alloc([((2, 4), torch.float32), ((2, 4), torch.float32)])" in text
    with torch.no_grad():
        got = program.exported_program().module()(*args)
    for g, e in zip(got, Mixed()(*args), strict=True):
        assert g.dtype == e.dtype
        torch.testing.assert_close(g, e)


def test_user_passes_run_before_out_variants() -> None:
    edge = to_edge(export(SimpleConv(), (torch.randn(1, 3, 8, 8),)))
    program = edge.to_executorch(ExecutorchBackendConfig(passes=[ConvertReluToSigmoid()]))
    text = str(program.exported_program())
    assert "torch.ops.aten.sigmoid.out(aten_convolution_default, out = alloc_1)" in text
    assert "aten.relu" not in text


def test_user_passes_must_keep_edge_ops() -> None:
    from torch._export.verifier import SpecViolationError

    def to_raw_aten(gm: torch.fx.GraphModule) -> None:
        for node in gm.graph.nodes:
            if node.op == "call_function" and "relu" in str(node.target):
                node.target = torch.ops.aten.relu.default
        gm.recompile()

    edge = to_edge(export(SimpleConv(), (torch.randn(1, 3, 8, 8),)))
    for folding in (True, False):
        config = ExecutorchBackendConfig(passes=[to_raw_aten], constant_folding=folding)
        with pytest.raises(SpecViolationError, match="not an edge op"):
            edge.to_executorch(config)


def _assert_no_overlap(plan: MemoryPlan) -> None:
    """Live tensors never share bytes, except a view given its input's memory
    (plan.views): the same offset, the input's life ending where the view's begins."""
    by_name = {t.name: t for t in plan.tensors}
    shared = set()
    for view, src in plan.views:
        v, x = by_name[view], by_name[src]
        assert v.offset == x.offset and v.size == x.size and x.last == v.first, (v, x)
        shared.add(frozenset((view, src)))
    for t in plan.tensors:
        assert t.offset % plan.alignment == 0
        assert t.offset + t.size <= plan.total_bytes
    for p, q in itertools.combinations(plan.tensors, 2):
        if frozenset((p.name, q.name)) in shared:
            continue
        if p.first <= q.last and q.first <= p.last and p.size and q.size:
            assert p.offset + p.size <= q.offset or q.offset + q.size <= p.offset, (p, q)
    assert plan.total_bytes >= plan.lower_bound


def _runtime():
    pytest.importorskip("ember._C")
    from ember.runtime import Runtime

    return Runtime.get()


class Reshapes(torch.nn.Module):
    """Views between ops (the input dies at the view), a view whose input is
    read again after it, and a view of the graph input."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = (x * 2).view(4, 6)
        z = (y + 1).reshape(2, 12).relu()
        w = x.view(24) * 3                 # a graph input: not aliased
        u = (z - 1).view(24)
        return u + w, (z - 1).sum()        # z - 1 is computed twice: two tensors


def test_a_view_takes_its_inputs_memory_when_the_input_dies_there() -> None:
    x = torch.randn(2, 3, 4)
    program = to_edge(export(Reshapes(), (x,))).to_executorch()
    plan = program.memory_plan()
    _assert_no_overlap(plan)
    views = dict(plan.views)
    assert views == {"aten_view_copy_default": "aten_mul_tensor",
                     "aten_view_copy_default_1": "aten_add_tensor",
                     "aten_view_copy_default_3": "aten_sub_tensor"}, plan.views
    assert "view in aten_mul_tensor's memory" in str(plan)
    got = _runtime().load_program(program.buffer).load_method("forward").execute([x])
    for g, e in zip(got, Reshapes()(x), strict=True):
        torch.testing.assert_close(g, e)


def test_remove_view_copy_false_keeps_every_view_in_its_own_memory() -> None:
    x = torch.randn(2, 3, 4)
    config = ExecutorchBackendConfig(remove_view_copy=False)
    program = to_edge(export(Reshapes(), (x,))).to_executorch(config)
    plan = program.memory_plan()
    assert plan.views == []
    _assert_no_overlap(plan)
    got = _runtime().load_program(program.buffer).load_method("forward").execute([x])
    for g, e in zip(got, Reshapes()(x), strict=True):
        torch.testing.assert_close(g, e)


def test_a_view_whose_input_is_read_later_keeps_its_own_memory() -> None:
    class ReadAgain(torch.nn.Module):
        def forward(self, x):
            y = x * 2
            v = y.view(6, 4)
            return v + 1, y - 1

    x = torch.randn(2, 3, 4)
    program = to_edge(export(ReadAgain(), (x,))).to_executorch()
    plan = program.memory_plan()
    assert plan.views == []
    _assert_no_overlap(plan)
    got = _runtime().load_program(program.buffer).load_method("forward").execute([x])
    for g, e in zip(got, ReadAgain()(x), strict=True):
        torch.testing.assert_close(g, e)


@pytest.mark.parametrize(
    ("model", "args"),
    [
        (Foo(), tuple(torch.randn(2, 2) for _ in range(3))),
        (M(), (torch.randn(3, 4),)),
        (SimpleConv(), (torch.randn(1, 3, 8, 8),)),
        (Mixed(), (torch.randn(4, 4), torch.arange(4))),
    ],
)
def test_memory_plan_never_overlaps_live_tensors(
    model: torch.nn.Module, args: tuple[torch.Tensor, ...]
) -> None:
    program = to_edge(export(model, args)).to_executorch()
    _assert_no_overlap(program.memory_plan())


def _check_plan(
    sizes: list[int], first: list[int], last: list[int], offsets: list[int], total: int
) -> None:
    for i, j in itertools.combinations(range(len(sizes)), 2):
        if first[i] <= last[j] and first[j] <= last[i] and sizes[i] and sizes[j]:
            assert offsets[i] + sizes[i] <= offsets[j] or offsets[j] + sizes[j] <= offsets[i]
    assert all(o % 16 == 0 and o + s <= total for o, s in zip(offsets, sizes, strict=False))


@pytest.mark.parametrize("seed", range(5))
def test_cpp_planner_on_random_lifetimes(seed: int) -> None:
    _C = pytest.importorskip("ember._C")
    g = torch.Generator().manual_seed(seed)
    n = 40
    sizes = [int(s) for s in torch.randint(0, 500, (n,), generator=g)]
    first = [int(f) for f in torch.randint(0, 30, (n,), generator=g)]
    last = [
        f + int(d) for f, d in zip(first, torch.randint(0, 10, (n,), generator=g), strict=False)
    ]
    for algorithm in ("greedy", "best_fit"):
        offsets, total, bound = _C.plan_memory(sizes, first, last, 16, algorithm)
        _check_plan(sizes, first, last, list(offsets), total)
        assert total >= bound


def test_memory_plan_lives_on_the_graph() -> None:
    """Every planned value's node carries its spec (node.meta["spec"]); the
    emitted tensors are exactly there; the to_executorch passes share one
    signature (ExportedProgram -> ExportedProgram)."""
    from ember.exir.memory import alloc
    from ember.exir.passes.memory_planning import TensorSpec
    from ember.exir.pipeline import executorch_passes
    from ember.exir.symbolic import SymbolBounds

    class Split(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("count", torch.zeros(1))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            self.count.add_(1)
            a, b = torch.split(x.relu(), 2)
            return a * b + self.count

    ep = torch.export.export(Split(), (torch.randn(4, 3),))
    edge = to_edge(ep)
    et = edge.to_executorch()
    program = et.exported_program()
    values = et.emitted.program["execution_plan"][0]["values"]
    planned = {(v["val"]["allocation_info"]["memory_id"],
                v["val"]["allocation_info"]["memory_offset_low"])
               for v in values if v["val_type"] == "Tensor" and "allocation_info" in v["val"]}
    specs = []
    for node in program.graph.nodes:
        spec = node.meta.get("spec")
        if node.target is alloc:
            assert spec is not None, node.name
        for s in (spec.values() if isinstance(spec, dict) else [spec] if spec else []):
            assert isinstance(s, TensorSpec)
            specs.append(s)
    assert {(s.memory_id, s.offset) for s in specs} == planned
    assert any(s.memory_id == 2 and s.lifetime is None for s in specs)  # the buffer
    edge_ep = edge.exported_program()
    passes = executorch_passes(ExecutorchBackendConfig(), SymbolBounds(edge_ep, "forward"))
    assert [name for name, _ in passes][-1] == "write back mutated buffers and inputs"
    assert all(callable(p) for _, p in passes)
