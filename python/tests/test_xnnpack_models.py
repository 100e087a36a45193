"""Small variants of third-party models (transformers classes, random
weights) through the XNNPACK partitioner and the C++ runtime, against eager
at rtol 1e-3. The full sizes run in bench/models."""

from __future__ import annotations

import pytest
import torch
from torch.export import export

from ember.backends.xnnpack import XnnpackPartitioner
from ember.exir import to_edge
from ember.runtime import Runtime
from ember.testing.model_zoo import MODELS, build

pytest.importorskip("transformers")


@pytest.mark.parametrize("name", MODELS)
def test_small_variant_matches_eager(name):
    model, inputs = build(name, "small")
    edge = to_edge(export(model, inputs)).to_backend(XnnpackPartitioner())
    program = edge.to_executorch()
    delegates = [
        n for n in edge.exported_program().graph.nodes if "executorch_call_delegate" in str(n.target)
    ]
    assert delegates, "nothing was delegated"
    got = Runtime.get().load_program(program.buffer).load_method("forward").execute(list(inputs))[0]
    with torch.no_grad():
        expected = model(*inputs)
    torch.testing.assert_close(got, expected, rtol=1e-3, atol=1e-4)


def test_excluding_linear_layers_keeps_the_partition_acyclic():
    # Regression: with the projections left portable, attention reshapes of
    # q/k/v and later ones joined one group although another group sat between
    # them; contracting both made a cycle. Fusion now follows group-to-group
    # dependencies.
    model, inputs = build("bert_base", "small")
    partitioner = XnnpackPartitioner(exclude=("aten.addmm.default",))
    program = to_edge(export(model, inputs)).to_backend(partitioner).to_executorch()
    got = Runtime.get().load_program(program.buffer).load_method("forward").execute(list(inputs))[0]
    with torch.no_grad():
        expected = model(*inputs)
    torch.testing.assert_close(got, expected, rtol=1e-3, atol=1e-4)
