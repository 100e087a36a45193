"""Small variants of third-party models (transformers classes, random
weights) through the portable kernels and the XNNPACK partitioner and the C++
runtime, against eager: the largest error relative to the output's largest
magnitude, whose scale is checked first (a collapsed output would make any
comparison pass). The full sizes run in bench/models."""

from __future__ import annotations

import pytest
import torch
from torch.export import export

from ember.backends.xnnpack import XnnpackPartitioner
from ember.exir import to_edge
from ember.runtime import Runtime
from ember.testing.model_zoo import MODELS, build, check_output_scale

pytest.importorskip("transformers")

# max |got - eager| / max |eager|: float32 through different summation orders
# and fused multiply-adds over a few layers.
RELATIVE_TOLERANCE = 1e-4


def assert_close_relative(got: torch.Tensor, expected: torch.Tensor) -> float:
    assert got.shape == expected.shape and got.dtype == expected.dtype
    err = ((got - expected).abs().max() / expected.abs().max()).item()
    assert err <= RELATIVE_TOLERANCE, err
    return err


@pytest.mark.parametrize("path", ["portable", "xnnpack"])
@pytest.mark.parametrize("name", MODELS)
def test_small_variant_matches_eager(name, path):
    model, inputs = build(name, "small")
    with torch.no_grad():
        expected = model(*inputs)
    check_output_scale(name, expected)
    edge = to_edge(export(model, inputs))
    if path == "xnnpack":
        edge = edge.to_backend(XnnpackPartitioner())
        delegates = [n for n in edge.exported_program().graph.nodes
                     if "executorch_call_delegate" in str(n.target)]
        assert delegates, "nothing was delegated"
    program = edge.to_executorch()
    got = Runtime.get().load_program(program.buffer).load_method("forward").execute(list(inputs))[0]
    assert_close_relative(got, expected)


def test_collapsed_outputs_are_caught():
    with pytest.raises(AssertionError, match="outside"):
        check_output_scale("collapsed", torch.full((10,), 1e-21) * torch.randn(10))


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
    assert_close_relative(got, expected)
