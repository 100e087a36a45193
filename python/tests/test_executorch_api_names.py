"""The names ExecuTorch's docs and tutorials use, under ``ember`` (issue #20,
"The names users know"): each does the real thing, checked on real programs
against float64 eager references (``docs/executorch-api.md`` has the table).
"""

from __future__ import annotations

import copy
import io
import json
import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest
import torch
from models import ConvertReluToSigmoid
from torch.export import Dim, export

from ember.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
from ember.exir import (
    EdgeCompileConfig,
    EdgeProgramManager,
    ExecutorchBackendConfig,
    ExecutorchProgramManager,
    to_edge,
    to_edge_transform_and_lower,
)
from ember.exir.backend.partitioner import Partitioner
from ember.exir.backend.test.op_partitioner_demo import AddMulPartitionerDemo
from ember.exir.dialects.edge._ops import EdgeOpOverload
from ember.exir.passes import MemoryPlanningPass
from ember.exir.passes.sym_shape_eval_pass import (
    ConstraintBasedSymShapeEvalPass,
    HintBasedSymShapeEvalPass,
)
from ember.extension.pybindings.portable_lib import (
    _get_operator_names,
    _load_for_executorch,
    _load_for_executorch_from_buffer,
)
from ember.runtime import EmberError, Runtime, Verification

aten = torch.ops.aten
SCHEMA = Path(__file__).resolve().parents[2] / "schema/program.fbs"


# -- helpers -----------------------------------------------------------------


def assert_matches_float64(got: torch.Tensor, model: torch.nn.Module, inputs: tuple) -> None:
    """``got`` against the model run in float64, within 1e-5 of the output's magnitude."""
    ref = copy.deepcopy(model).double()(*[x.double() for x in inputs])
    assert got.shape == ref.shape and got.dtype == torch.float32
    err = (got.double() - ref).abs().max().item()
    assert err <= 1e-5 * max(ref.abs().max().item(), 1.0), err


def run(buffer: bytes, inputs: tuple, method: str = "forward") -> list[torch.Tensor]:
    return Runtime.get().load_program(buffer).load_method(method).execute(list(inputs))


def graph_ops(ep) -> set:
    """The ATen ops of an edge graph's call nodes."""
    return {
        n.target.op
        for n in ep.graph.nodes
        if n.op == "call_function" and isinstance(n.target, EdgeOpOverload)
    }


def delegated_graphs(ep) -> list:
    """The graphs inside ``ep``'s lowered modules."""
    return [
        getattr(ep.graph_module, n.target).original_module.graph
        for n in ep.graph.nodes
        if n.op == "get_attr" and n.target.startswith("lowered_module")
    ]


def operators(manager: ExecutorchProgramManager, method: int = 0) -> set[str]:
    plan = manager.executorch_program["execution_plan"][method]
    return {f"{o['name']}.{o['overload']}" for o in plan["operators"]}


class Mlp(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 12)
        self.fc2 = torch.nn.Linear(12, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x)))


class ConvMlp(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.fc = torch.nn.Linear(4 * 6 * 6, 7)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.relu(self.conv(x)).flatten(1))


class SharedWeight(torch.nn.Module):
    """The linear's weight is also read by portable code, so XNNPACK cannot take it."""

    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(6, 8))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.linear(x, self.w) + torch.tanh(self.w).sum()


class ReflectPad(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.pad(x, (1, 2, 2, 1), mode="reflect") * 2


# -- to_edge_transform_and_lower -----------------------------------------------


def test_transform_and_lower_with_xnnpack_keeps_linear_whole_and_matches_eager() -> None:
    torch.manual_seed(0)
    model, x = ConvMlp().eval(), torch.randn(2, 3, 6, 6)
    edge = to_edge_transform_and_lower(export(model, (x,)), partitioner=[XnnpackPartitioner()])
    assert isinstance(edge, EdgeProgramManager)
    ep = edge.exported_program()
    # The convolution and the linear went to XNNPACK, the linear as one node (kept whole).
    assert not graph_ops(ep) & {aten.linear.default, aten.addmm.default, aten.convolution.default}
    inside = [n.target for g in delegated_graphs(ep) for n in g.nodes if n.op == "call_function"]
    assert any(getattr(t, "op", None) == aten.linear.default for t in inside)
    assert not any(getattr(t, "op", None) == aten.addmm.default for t in inside)
    out = run(edge.to_executorch().buffer, (x,))
    assert_matches_float64(out[0], model, (x,))


def test_plain_to_edge_still_decomposes_linear() -> None:
    ep = to_edge(export(Mlp(), (torch.randn(3, 16),))).exported_program()
    assert aten.linear.default not in graph_ops(ep)
    assert aten.addmm.default in graph_ops(ep)


def test_a_preserved_op_no_backend_claims_is_decomposed_and_runs() -> None:
    torch.manual_seed(1)
    model, x = SharedWeight(), torch.randn(4, 8)
    partitioner = XnnpackPartitioner()
    edge = to_edge_transform_and_lower(export(model, (x,)), partitioner=partitioner)
    ops = graph_ops(edge.exported_program())
    assert aten.linear.default not in ops  # decomposed after all: portable kernels run it
    assert ops & {aten.mm.default, aten.addmm.default, aten.permute_copy.default}
    out = run(edge.to_executorch().buffer, (x,))
    assert_matches_float64(out[0], model, (x,))


class Recording(Partitioner):
    """Asks to keep ``ops`` whole (with ``node_filter``), records what it saw, claims nothing."""

    def __init__(self, ops: list, node_filter=None) -> None:  # noqa: ANN001
        self.ops, self.node_filter, self.seen = ops, node_filter, []

    def ops_to_not_decompose(self, ep):  # noqa: ANN001, ANN201
        return self.ops, self.node_filter

    def partition(self, exported_program):  # noqa: ANN001, ANN201
        from ember.exir.backend.partitioner import PartitionResult

        self.seen.append(graph_ops(exported_program))
        return PartitionResult(exported_program, {})


def test_ops_to_not_decompose_reach_the_partitioner_and_the_filter_is_honoured() -> None:
    ep = export(Mlp(), (torch.randn(3, 16),))
    keep = Recording([aten.linear.default])
    to_edge_transform_and_lower(ep, partitioner=[keep])
    # First round: the partitioner saw the linear whole; it claimed nothing, so the
    # second round decomposed it.
    assert aten.linear.default in keep.seen[0]
    assert aten.linear.default not in keep.seen[-1] and len(keep.seen) == 2
    refused = Recording([aten.linear.default], node_filter=lambda node: False)
    to_edge_transform_and_lower(ep, partitioner=[refused])
    assert len(refused.seen) == 1 and aten.linear.default not in refused.seen[0]


def test_partitioner_dict_per_method_and_transform_passes() -> None:
    torch.manual_seed(2)
    a, x, b = torch.randn(2, 2), torch.randn(2, 2), torch.randn(2, 2)

    class Foo(torch.nn.Module):
        def forward(self, a, x, b):  # noqa: ANN001, ANN201
            return torch.relu(torch.mm(a, x) + b)

    programs = {"forward": export(Foo(), (a, x, b)), "other": export(Foo(), (a, x, b))}
    edge = to_edge_transform_and_lower(
        programs,
        transform_passes={"other": [ConvertReluToSigmoid()]},
        partitioner={"forward": [AddMulPartitionerDemo()]},
    )
    assert edge.methods == ["forward", "other"]
    fwd, other = edge.exported_program("forward"), edge.exported_program("other")
    assert delegated_graphs(fwd) and not delegated_graphs(other)
    assert aten.relu.default in graph_ops(fwd)  # the pass ran only on "other"
    assert aten.sigmoid.default in graph_ops(other) and aten.relu.default not in graph_ops(other)
    manager = edge.to_executorch()
    eager = torch.mm(a, x) + b
    torch.testing.assert_close(run(manager.buffer, (a, x, b))[0], torch.relu(eager))
    torch.testing.assert_close(run(manager.buffer, (a, x, b), "other")[0], torch.sigmoid(eager))
    # A list of passes applies to every method; one partitioner alone is a list of one.
    both = to_edge_transform_and_lower(
        programs, transform_passes=[ConvertReluToSigmoid()], partitioner=AddMulPartitionerDemo()
    )
    for name in both.methods:
        assert delegated_graphs(both.exported_program(name))
        assert aten.relu.default not in graph_ops(both.exported_program(name))


def test_quantized_model_with_the_documented_import_paths() -> None:
    """ExecuTorch's XNNPACK quantization example: the quantized linear is not
    something this XNNPACK delegate takes (int8), so the kept linear is
    decomposed after all and the program runs on the quantized kernels."""
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    from ember.backends.xnnpack.quantizer.xnnpack_quantizer import (
        XNNPACKQuantizer,
        get_symmetric_quantization_config,
    )

    torch.manual_seed(8)
    model, x = Mlp().eval(), torch.randn(3, 16)
    quantizer = XNNPACKQuantizer().set_global(get_symmetric_quantization_config())
    prepared = prepare_pt2e(export(model, (x,)).module(), quantizer)
    for _ in range(4):
        prepared(torch.randn(3, 16))
    converted = convert_pt2e(prepared)
    edge = to_edge_transform_and_lower(export(converted, (x,)), partitioner=[XnnpackPartitioner()])
    assert aten.linear.default not in graph_ops(edge.exported_program())
    (got,) = run(edge.to_executorch().buffer, (x,))
    want = converted(x)
    # The output is dequantized from int8: within one quantization step of eager's.
    step = [n for n in converted.graph.nodes if "dequantize_per_tensor" in str(n.target)][-1]
    scale = float(step.args[1])
    assert (got - want).abs().max().item() <= scale * 1.01


def test_constant_methods_through_both_entry_points() -> None:
    ep = export(Mlp(), (torch.randn(3, 16),))
    assert to_edge(ep).config_methods == []
    for edge in (to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()],
                                             constant_methods={"get_n": 3}),
                 to_edge(ep, constant_methods={"get_n": 3})):
        assert edge.config_methods == ["get_n"]
        et = edge.to_executorch()
        assert et.config_methods == ["get_n"]
        assert Runtime.get().load_program(et.buffer).load_method("get_n").execute([]) == [3]


# -- EdgeCompileConfig -----------------------------------------------------------


def test_preserve_ops_keeps_the_op_and_its_kernel_runs_it() -> None:
    x = torch.randn(1, 2, 5, 6)
    ep = export(ReflectPad(), (x,))
    assert aten.reflection_pad2d.default not in graph_ops(to_edge(ep).exported_program())
    config = EdgeCompileConfig(preserve_ops=[aten.reflection_pad2d.default])
    edge = to_edge(ep, compile_config=config)
    assert aten.reflection_pad2d.default in graph_ops(edge.exported_program())
    manager = edge.to_executorch()
    assert "aten::reflection_pad2d.out" in operators(manager)
    torch.testing.assert_close(run(manager.buffer, (x,))[0], ReflectPad()(x), rtol=0, atol=0)
    # transform keeps accepting it; and to_edge_transform_and_lower keeps it without a backend.
    edge.transform([ConvertReluToSigmoid()])
    lowered = to_edge_transform_and_lower(ep, compile_config=config)
    assert aten.reflection_pad2d.default in graph_ops(lowered.exported_program())


@pytest.mark.parametrize("op", [aten.add_.Tensor, aten.view.default, aten.transpose.int])
def test_preserve_ops_refuses_mutating_and_aliasing_ops(op) -> None:  # noqa: ANN001
    with pytest.raises(ValueError, match="mutates or aliases"):
        EdgeCompileConfig(preserve_ops=[op])


class MemoryFormats(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x * 2).to(memory_format=torch.channels_last) + 1


@pytest.mark.parametrize("skip", [False, True])
def test_skip_dim_order_writes_aten_copies(skip: bool) -> None:
    x = torch.randn(2, 3, 4, 5)
    manager = to_edge(
        export(MemoryFormats(), (x,)), compile_config=EdgeCompileConfig(_skip_dim_order=skip)
    ).to_executorch()
    ops = operators(manager)
    assert ("aten::_to_copy.out" in ops) == skip
    assert ("dim_order_ops::_to_dim_order_copy.out" in ops) == (not skip)
    torch.testing.assert_close(run(manager.buffer, (x,))[0], MemoryFormats()(x), rtol=0, atol=0)


def test_unsupported_edge_options_are_refused() -> None:
    with pytest.raises(NotImplementedError, match="_use_edge_ops"):
        EdgeCompileConfig(_use_edge_ops=False)
    with pytest.raises(NotImplementedError, match="_skip_type_promotion"):
        EdgeCompileConfig(_skip_type_promotion=True)


# -- the program managers ----------------------------------------------------------


def test_write_to_file_buffer_and_manager_accessors(tmp_path: Path) -> None:
    torch.manual_seed(3)
    model, x = Mlp(), torch.randn(3, 16)
    edge = to_edge(export(model, (x,)))
    assert edge.methods == ["forward"]
    assert aten.addmm.default in graph_ops(edge.exported_program())
    with pytest.raises(KeyError, match="no method 'decode'"):
        edge.exported_program("decode")
    manager = edge.to_executorch()
    assert manager.methods == ["forward"] and manager.config_methods == []
    targets = {str(n.target) for n in manager.exported_program().graph.nodes}
    assert "aten.addmm.out" in targets  # the out-variant (ExecuTorch dialect) program
    path = tmp_path / "model.pte"
    with open(path, "wb") as f:
        manager.write_to_file(f)
    assert path.read_bytes() == manager.buffer
    stream = io.BytesIO()
    manager.write_to_file(stream)
    assert stream.getvalue() == manager.buffer
    assert_matches_float64(run(path.read_bytes(), (x,))[0], model, (x,))


def test_dump_executorch_program() -> None:
    x = torch.randn(1, 3, 6, 6)
    manager = to_edge_transform_and_lower(
        export(ConvMlp(), (x,)), partitioner=[XnnpackPartitioner()]
    ).to_executorch()
    out = io.StringIO()
    manager.dump_executorch_program(verbose=True, out=out)
    text = out.getvalue()
    assert "Method 'forward'" in text
    assert "delegate #0 (EmberXnnpackBackend)" in text
    assert re.search(r"%0: Tensor float32\[1, 3, 6, 6\] \(planned @ buffer 1 \+ \d+\)", text)
    assert "planned memory: buffer 1:" in text
    portable = to_edge(export(Mlp(), (torch.randn(3, 16),))).to_executorch()
    out = io.StringIO()
    portable.dump_executorch_program(verbose=True, out=out)
    assert "aten::addmm.out" in out.getvalue() and "constant #" in out.getvalue()
    out = io.StringIO()
    portable.dump_executorch_program(out=out)
    assert json.loads(out.getvalue()) == portable.executorch_program


# -- ExecutorchBackendConfig --------------------------------------------------------


def _segment_base(pte: bytes) -> int:
    assert pte[8:12] == b"eh00"
    return struct.unpack_from("<Q", pte, 24)[0]


@pytest.mark.parametrize("extract", [True, False])
def test_extract_delegate_segments(extract: bool) -> None:
    torch.manual_seed(4)
    model, x = Mlp(), torch.randn(3, 16)
    edge = to_edge_transform_and_lower(export(model, (x,)), partitioner=[XnnpackPartitioner()])
    manager = edge.to_executorch(ExecutorchBackendConfig(extract_delegate_segments=extract))
    pte = manager.buffer
    blob = manager.emitted.delegate_blobs[0]
    where = pte.find(blob)
    assert where > 0
    # In a segment (after the segment base) or inline in the FlatBuffer (before its end).
    (program_size,) = struct.unpack_from("<Q", pte, 16)
    if extract:
        assert where >= _segment_base(pte) >= program_size
    else:
        assert where + len(blob) <= program_size
    assert_matches_float64(run(pte, (x,))[0], model, (x,))


def test_alignments_reach_the_writer(tmp_path: Path) -> None:
    model, x = Mlp(), torch.randn(3, 16)
    edge = to_edge(export(model, (x,)))
    pte = edge.to_executorch(
        ExecutorchBackendConfig(segment_alignment=1024, constant_tensor_alignment=64)
    ).buffer
    assert _segment_base(pte) % 1024 == 0 and _segment_base(pte) > 0
    flatc = shutil.which("flatc")
    if flatc is not None:
        (program_size,) = struct.unpack_from("<Q", pte, 16)
        (tmp_path / "p.bin").write_bytes(pte[:program_size])
        subprocess.run([flatc, "--json", "--strict-json", "--raw-binary", "-o", str(tmp_path),
                        str(SCHEMA), "--", str(tmp_path / "p.bin")], check=True)
        offsets = json.loads((tmp_path / "p.json").read_text())["constant_segment"]["offsets"]
        assert len(offsets) > 2 and all(int(o) % 64 == 0 for o in offsets)
    assert_matches_float64(run(pte, (x,))[0], model, (x,))
    for bad in ({"segment_alignment": 100}, {"constant_tensor_alignment": 0}):
        with pytest.raises(ValueError, match="power of two"):
            ExecutorchBackendConfig(**bad)
    with pytest.raises(NotImplementedError, match="delegate_alignment"):
        ExecutorchBackendConfig(delegate_alignment=256)
    ExecutorchBackendConfig(delegate_alignment=64)  # within a 128-aligned segment: honoured


def test_sym_shape_eval_and_memory_planning_passes_per_method() -> None:
    x, y = torch.randn(3, 4), torch.randn(3, 4)

    class Add(torch.nn.Module):
        def forward(self, x, y):  # noqa: ANN001, ANN201
            return x + y

    d = Dim("d", min=1, max=10)
    ep = export(Add(), (x, y), dynamic_shapes={"x": {1: d}, "y": {1: d}})
    for sym in (
        ConstraintBasedSymShapeEvalPass(),
        HintBasedSymShapeEvalPass(),
        {"forward": HintBasedSymShapeEvalPass()},
    ):
        manager = to_edge(ep).to_executorch(ExecutorchBackendConfig(
            sym_shape_eval_pass=sym,
            memory_planning_pass={"forward": MemoryPlanningPass(alignment=64)},
        ))
        assert manager.memory_plan().alignment == 64
        # Planned for the constraint's bound, so the largest input fits.
        big = torch.randn(3, 10)
        torch.testing.assert_close(run(manager.buffer, (big, big))[0], big + big)
    with pytest.raises(TypeError, match="sym_shape_eval_pass"):
        ExecutorchBackendConfig(sym_shape_eval_pass=object())


@pytest.mark.parametrize("xnnpack", [False, True])
def test_memory_planning_pass_arguments(xnnpack: bool) -> None:
    torch.manual_seed(7)
    model, x = Mlp(), torch.randn(3, 16)
    edge = to_edge(export(model, (x,)))
    if xnnpack:
        edge = edge.to_backend(XnnpackPartitioner())
    planned = edge.to_executorch()
    unplanned = edge.to_executorch(ExecutorchBackendConfig(
        memory_planning_pass=MemoryPlanningPass(alloc_graph_input=False)))
    best_fit = edge.to_executorch(ExecutorchBackendConfig(
        memory_planning_pass=MemoryPlanningPass(memory_planning_algo="best_fit")))
    assert "x" in {t.name for t in planned.memory_plan().tensors}
    assert "x" not in {t.name for t in unplanned.memory_plan().tensors}
    assert unplanned.memory_plan().total_bytes < planned.memory_plan().total_bytes
    (value,) = unplanned.executorch_program["execution_plan"][0]["inputs"]
    assert "allocation_info" not in unplanned.executorch_program["execution_plan"][0][
        "values"][value]["val"]
    for manager in (planned, unplanned, best_fit):
        method = Runtime.get().load_program(manager.buffer).load_method()
        for _ in range(2):  # the borrowed input is the caller's on every run
            x = torch.randn(3, 16)
            assert_matches_float64(method.execute([x])[0], model, (x,))
    with pytest.raises(TypeError, match="memory_planning_algo"):
        MemoryPlanningPass(memory_planning_algo="naive")
    with pytest.raises(NotImplementedError, match="alloc_graph_output"):
        MemoryPlanningPass(alloc_graph_output=False)


def test_accepted_options_that_change_nothing_and_refused_ones() -> None:
    ep = export(Mlp(), (torch.randn(3, 16),))
    default = to_edge(ep).to_executorch().buffer
    for options in ({"remove_view_copy": False}, {"remove_view_copy": True},
                    {"emit_stacktrace": True}, {"external_constants": False}):
        assert to_edge(ep).to_executorch(ExecutorchBackendConfig(**options)).buffer == default
    with pytest.raises(TypeError, match="external_constants"):
        ExecutorchBackendConfig(external_constants="yes")


# -- runtime: Verification -------------------------------------------------------------


def test_verification_minimal_defers_the_plan_checks_to_load_method() -> None:
    from ember import _C

    manager = to_edge(export(Mlp(), (torch.randn(3, 16),))).to_executorch()
    e = manager.emitted
    program = copy.deepcopy(e.program)
    program["execution_plan"][0]["chains"][0]["instructions"][0]["instr_args"]["op_index"] = 99
    bad = bytes(_C.write_program(json.dumps(program), e.constant_buffers, e.delegate_blobs,
                                 named_blobs=e.named_blobs))
    rt = Runtime.get()
    with pytest.raises(EmberError, match="99"):
        rt.load_program(bad, verification=Verification.InternalConsistent)
    with pytest.raises(EmberError, match="99"):
        rt.load_program(bad)  # the default is InternalConsistent
    loaded = rt.load_program(bad, verification=Verification.Minimal)  # FlatBuffer verifier only
    with pytest.raises(EmberError):
        loaded.load_method("forward")
    with pytest.raises(ValueError, match="Verification"):
        rt.load_program(manager.buffer, verification="everything")
    good = rt.load_program(io.BytesIO(manager.buffer), verification=Verification.Minimal)
    assert good.method_names == ["forward"]


# -- extension.pybindings.portable_lib ----------------------------------------------------


def test_portable_lib_loads_files_and_buffers_and_matches_eager(tmp_path: Path) -> None:
    torch.manual_seed(5)
    model, x = Mlp(), torch.randn(3, 16)
    enc = export(model, (x,))
    decoder = torch.nn.Linear(5, 2)
    dec = export(decoder, (torch.randn(3, 5),))
    manager = to_edge({"forward": enc, "decode": dec}).to_backend(
        {"forward": XnnpackPartitioner()}
    ).to_executorch()
    path = tmp_path / "model.pte"
    manager.save(path)
    for module in (
        _load_for_executorch(str(path)),
        _load_for_executorch(path, program_verification=Verification.Minimal),
        _load_for_executorch_from_buffer(manager.buffer),
        _load_for_executorch_from_buffer(bytearray(manager.buffer)),
    ):
        assert module.method_names() == {"forward", "decode"}
        (y,) = module.forward((x,))
        assert isinstance(y, torch.Tensor)
        assert_matches_float64(y, model, (x,))
        (z,) = module.run_method("decode", [y])
        assert_matches_float64(z, decoder, (y,))
        assert module.method_meta("decode")["inputs"][0]["sizes"] == [3, 5]
    with pytest.raises(TypeError, match="list or tuple"):
        module.forward(x)
    with pytest.raises(NotImplementedError, match="ETDump"):
        _load_for_executorch(str(path), enable_etdump=True)
    with pytest.raises(EmberError):
        _load_for_executorch_from_buffer(manager.buffer[:100])
    assert "aten::addmm.out" in _get_operator_names()


def test_the_tutorials_final_program_with_executorch_names(tmp_path: Path) -> None:
    """The end-to-end example, written as ExecuTorch's docs write it."""
    from models import M

    import ember.exir as exir

    torch.manual_seed(6)
    model, x = M(), torch.randn(3, 4)
    aten_dialect = export(export(model, (x,)).module(), (x,))
    edge_program: exir.EdgeProgramManager = exir.to_edge(aten_dialect)
    executorch_program: exir.ExecutorchProgramManager = edge_program.to_executorch(
        ExecutorchBackendConfig(passes=[])
    )
    path = tmp_path / "model.pte"
    with open(path, "wb") as file:
        file.write(executorch_program.buffer)
    (y,) = _load_for_executorch(str(path)).forward((x,))
    assert_matches_float64(y, model, (x,))
