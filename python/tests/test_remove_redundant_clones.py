"""Contiguous clones of fresh contiguous values are dropped
(passes/remove_redundant_clones.py): the program matches eager, relative to
the output's magnitude, with fewer copies; clones that change the layout,
copy a user input or a graph output, or are graph outputs themselves stay."""

from __future__ import annotations

import pytest
import torch
from ember.exir import ExecutorchBackendConfig, to_edge
from torch.export import export

pytest.importorskip("ember._C")
from ember.runtime import Runtime
from magnitude import assert_close_to_magnitude


def _clones(program) -> int:
    ep = program.exported_program()
    return sum(1 for n in ep.graph.nodes if "clone" in str(n.target))


def _lower(model, inputs, **config):
    return to_edge(export(model.eval(), inputs)).to_executorch(ExecutorchBackendConfig(**config))


def _run(program, inputs):
    return Runtime.get().load_program(program.buffer).load_method("forward").execute(
        list(inputs))


class Heads(torch.nn.Module):
    """Attention-style reshapes: permute then .contiguous(), twice."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(32, 32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.proj(x).view(1, 6, 4, 8).permute(0, 2, 1, 3).contiguous()
        h = torch.relu(h) * 2.0
        return h.permute(0, 2, 1, 3).contiguous().view(1, 6, 32) + 1.0


def test_clones_after_permutes_are_removed_and_results_match():
    torch.manual_seed(0)
    x = torch.randn(1, 6, 32)
    model = Heads().eval()
    assert _clones(_lower(model, (x,), remove_redundant_clones=False)) == 2
    program = _lower(model, (x,))
    assert _clones(program) == 0
    with torch.no_grad():
        want = model(x)
    assert_close_to_magnitude(_run(program, (x,))[0], want, rtol=1e-5)


class KeptClones(torch.nn.Module):
    """A clone of the input, a channels-last clone and a clone returned next
    to its source: none may go."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        a = x.clone()
        b = (x * 2.0).clone(memory_format=torch.channels_last)
        c = x + 1.0
        return a + 1.0, b, c, c.clone()


def test_clones_that_matter_stay():
    x = torch.randn(1, 3, 4, 5)
    program = _lower(KeptClones(), (x,))
    assert _clones(program) == 3
    got = _run(program, (x,))
    for g, w in zip(got, KeptClones()(x), strict=True):
        assert torch.equal(g.contiguous(), w.contiguous())
