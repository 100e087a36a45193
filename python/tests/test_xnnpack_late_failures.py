"""Delegation never fails late: what the XNNPACK partitioner claims,
preprocess lowers, and what preprocess writes, the runtime loads and runs.
Each case below once failed after partitioning (in preprocess, at load or
at execute); each error path a hand-made partition or a bad blob can still
reach fails at ``to_backend`` with a named reason.

Tolerance: relative to the output's magnitude, 1e-5 (single ops).
"""

from __future__ import annotations

import pytest
import torch
from torch.export import export

from ember import _C
from ember.backends.xnnpack import XnnpackLoweringError, XnnpackPartitioner, blob_graph, lowering
from ember.backends.xnnpack.partitioner import NATURAL_TAG, NHWC_TAG
from ember.exir import to_edge
from ember.exir.backend.partitioner import DELEGATION_TAG, Partitioner, PartitionResult
from ember.runtime import Runtime

torch.manual_seed(0)


def delegates(edge) -> int:
    return sum("executorch_call_delegate" in str(n.target)
               for n in edge.exported_program().graph.nodes)


def lower_and_run(model, inputs, partitioner=None):
    partitioner = partitioner or XnnpackPartitioner()
    edge = to_edge(export(model.eval(), inputs)).to_backend(partitioner)
    program = edge.to_executorch()
    got = Runtime.get().load_program(program.buffer).load_method("forward").execute(list(inputs))
    with torch.no_grad():
        expected = model(*inputs)
    scale = expected.abs().max().clamp_min(1e-6)
    assert float((got[0] - expected).abs().max() / scale) < 1e-5
    return edge


class LinearTwice(torch.nn.Module):
    """One weight, two groups: tanh (portable) splits the delegate."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x):
        return self.fc(torch.tanh(self.fc(x)))


class WeightAlsoReadOutside(torch.nn.Module):
    """The linear's weight is also read by portable code (tanh)."""

    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(8, 8))

    def forward(self, x):
        return torch.nn.functional.linear(x, self.w) + torch.tanh(self.w).sum()


def test_weight_read_by_two_groups_is_copied_into_both():
    # Was: XnnpackLoweringError "aten_permute_copy_default_1: XNNPACK cannot run
    # aten.permute_copy.default" (the weight reached the delegates as an input).
    edge = lower_and_run(LinearTwice(), (torch.randn(2, 8),))
    assert delegates(edge) == 2
    # The weight left the outer program: each delegate packed its own copy.
    assert not any("fc" in k for k in edge.exported_program().state_dict)


def test_weight_also_read_outside_keeps_its_consumer_portable():
    # Was: the same permute_copy refusal in preprocess.
    partitioner = XnnpackPartitioner()
    lower_and_run(WeightAlsoReadOutside(), (torch.randn(2, 8),), partitioner)
    reasons = {op: why for _, op, why in partitioner.report()}
    assert "also read outside the delegate" in reasons["aten.mm.default"], reasons


class Sigmoid(torch.nn.Module):
    def forward(self, x):
        return torch.sigmoid(x + 1)


class ToChannelsLast(torch.nn.Module):
    def forward(self, x):
        return torch.sigmoid(x.contiguous(memory_format=torch.channels_last))


def test_channels_last_input_to_elementwise_ops_runs():
    # Was: "input 0 has a dim order the delegate cannot read" at execute (a
    # natural-layout delegate got channels-last memory). Now NHWC, no copy.
    x = torch.randn(1, 3, 4, 5).contiguous(memory_format=torch.channels_last)
    partitioner = XnnpackPartitioner()
    edge = lower_and_run(Sigmoid(), (x,), partitioner)
    assert delegates(edge) == 1
    assert partitioner.report() == []


def test_channels_last_value_computed_by_portable_code_runs():
    # Was the same execute refusal: the portable clone's output is channels-last.
    lower_and_run(ToChannelsLast(), (torch.randn(1, 3, 4, 5),))


class SoftmaxLastDim(torch.nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)


def test_channels_last_input_to_a_layout_dependent_op_stays_portable():
    # Softmax over W has no NHWC form, and a natural-layout delegate cannot
    # bind channels-last memory: the partitioner leaves it portable, saying why.
    x = torch.randn(1, 3, 4, 5).contiguous(memory_format=torch.channels_last)
    partitioner = XnnpackPartitioner()
    edge = lower_and_run(SoftmaxLastDim(), (x,), partitioner)
    assert delegates(edge) == 0
    assert partitioner.report() == [
        ("aten__softmax_default", "aten._softmax.default",
         "input x has a dim order the delegate cannot bind")]


# -- error paths: hand-made partitions and bad blobs fail at to_backend -------


class TagAll(Partitioner):
    """Claims every call node (and every constant) for one layout, checking nothing."""

    def __init__(self, tag: str = NATURAL_TAG) -> None:
        self.tag = tag
        self.specs = XnnpackPartitioner().delegation_specs

    def partition(self, ep):
        for node in ep.graph_module.graph.nodes:
            if node.op == "call_function" or (
                node.op == "placeholder" and node.name not in ep.graph_signature.user_inputs
            ):
                node.meta[DELEGATION_TAG] = self.tag
        return PartitionResult(ep, dict(self.specs))


class Permute(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x.permute(0, 2, 1))


def test_hand_made_partition_of_a_permute_is_refused_with_the_node():
    with pytest.raises(XnnpackLoweringError, match=r"permute_copy.*no XNNPACK operator"):
        to_edge(export(Permute(), (torch.randn(2, 3, 4),))).to_backend(TagAll())


def test_hand_made_partition_of_a_channels_last_value_is_refused():
    x = torch.randn(1, 3, 4, 5).contiguous(memory_format=torch.channels_last)
    with pytest.raises(XnnpackLoweringError, match="dim order the delegate cannot bind"):
        to_edge(export(Sigmoid(), (x,))).to_backend(TagAll(NATURAL_TAG))


def _refused_at_to_backend(monkeypatch, corrupt, match):
    """Lowers a small conv net with ``corrupt`` applied to the blob preprocess
    writes; the runtime's checks must refuse it at to_backend."""
    serialize = blob_graph.BlobGraph.serialize
    monkeypatch.setattr(blob_graph.BlobGraph, "serialize", lambda g: corrupt(g, serialize))
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.ReLU())
    with pytest.raises(XnnpackLoweringError, match=match):
        to_edge(export(model.eval(), (torch.randn(1, 3, 6, 6),))).to_backend(XnnpackPartitioner())


def test_truncated_blob_is_refused_at_to_backend(monkeypatch):
    _refused_at_to_backend(monkeypatch, lambda g, s: s(g)[: len(s(g)) // 2],
                           "XNNPACK blob refused: blob fails FlatBuffer verification")


def test_wrong_declared_output_is_refused_at_to_backend(monkeypatch):
    def shrink(g, serialize):
        dims, constant = g.values[-1]
        g.values[-1] = ([*dims[:-1], 1], constant)  # the relu declares 1 channel, not 4
        return serialize(g)

    _refused_at_to_backend(monkeypatch, shrink, r"node \d+ \((Clamp|Convolution2d)\)")


def test_zero_stride_is_refused_at_to_backend(monkeypatch):
    def zero_stride(g, serialize):
        g.nodes[0].params["stride"] = [0, 1]
        return serialize(g)

    _refused_at_to_backend(monkeypatch, zero_stride, r"node 0 \(Convolution2d\)")


def test_unbindable_argument_dim_order_is_refused_at_to_backend(monkeypatch):
    # The program will hand the delegate a (0, 3, 1, 2) tensor: execute could
    # not bind it, so preprocess refuses, naming the argument.
    monkeypatch.setattr(lowering, "dim_order", lambda v: (0, 3, 1, 2)[: v.dim()]
                        if v.dim() == 4 else tuple(range(v.dim())))
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1))
    with pytest.raises(XnnpackLoweringError,
                       match=r"input 0 \(\w+\) has dim order \(0, 3, 1, 2\), which the delegate"):
        to_edge(export(model.eval(), (torch.randn(1, 3, 6, 6),))).to_backend(XnnpackPartitioner())


def test_check_binding_names_the_problem():
    edge = to_edge(export(Sigmoid(), (torch.randn(2, 5),))).to_backend(XnnpackPartitioner())
    blob = next(m.processed_bytes for _, m in edge.exported_program().graph_module.named_children())
    _C.check_xnnpack_graph(blob, [[0, 1], [0, 1]])
    with pytest.raises(ValueError, match=r"input 0 has dim order \(1, 0\).*contiguous only"):
        _C.check_xnnpack_graph(blob, [[1, 0], [0, 1]])
    with pytest.raises(ValueError, match="1 argument dim orders for a delegate of 1 inputs"):
        _C.check_xnnpack_graph(blob, [[0, 1]])
    with pytest.raises(ValueError, match="no 'EXN1' identifier"):
        _C.check_xnnpack_graph(b"not a blob")


def test_nhwc_tag_on_a_natural_only_value_is_refused():
    # A hand-made NHWC partition of a reshape whose NHWC order differs.
    class Flatten(torch.nn.Module):
        def forward(self, x):
            return torch.relu(x).reshape(1, -1)

    with pytest.raises(XnnpackLoweringError, match="reshape of a rank-4 value"):
        to_edge(export(Flatten(), (torch.randn(1, 3, 4, 5),))).to_backend(TagAll(NHWC_TAG))
