"""Control flow (#17): ``torch.cond`` lowers to one chain with JumpFalse and
Move instructions; every case runs both branches (several times, alternating,
so a branch's moved results never leak into the next run) against eager."""

from __future__ import annotations

import pytest
import torch

from ember.backends.xnnpack.partitioner import XnnpackPartitioner
from ember.exir import to_edge
from ember.runtime import Runtime


def _method(model: torch.nn.Module, example: tuple, partition: bool = False):
    edge = to_edge(torch.export.export(model, example))
    if partition:
        edge = edge.to_backend(XnnpackPartitioner())
    et = edge.to_executorch()
    return et, Runtime.get().load_program(et.buffer).load_method()


def _agree(model: torch.nn.Module, method, inputs: list[tuple]) -> None:
    for args in inputs:
        want = model(*args)
        wants = want if isinstance(want, tuple) else (want,)
        got = method.execute(list(args))
        assert len(got) == len(wants)
        for g, w in zip(got, wants, strict=True):
            scale = max(float(w.abs().max()), 1.0)
            torch.testing.assert_close(g, w, rtol=0, atol=1e-5 * scale)


def _signs(make) -> list[tuple]:
    """Inputs that take the true branch, then the false one, alternately."""
    torch.manual_seed(0)
    return [make(+1), make(-1), make(-1), make(+1), make(-1), make(+1)]


class TwoOutputs(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        def true_fn(x, y):
            return x.sin() + y, x * 2

        def false_fn(x, y):
            return x.cos() - y, x + 1

        a, b = torch.cond(x.sum() > 0, true_fn, false_fn, (x, y))
        return a * b


def test_cond_takes_each_branch() -> None:
    model = TwoOutputs()
    et, method = _method(model, (torch.randn(4), torch.randn(4)))
    program = et.buffer
    assert b"JumpFalse" not in program  # instructions are FlatBuffer tables, not names
    kinds = [i["instr_args_type"] for i in et.emitted.program["execution_plan"][0]["chains"][0]
             ["instructions"]]
    assert kinds.count("JumpFalseCall") == 2 and kinds.count("MoveCall") == 4
    _agree(model, method, _signs(lambda s: (torch.rand(4) * s + 0.1 * s, torch.randn(4))))


class Nested(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        def outer_true(x):
            return torch.cond(x.mean() > 1, lambda x: self.fc(x) * 3, lambda x: self.fc(x) - 1,
                              (x,))

        def outer_false(x):
            return x.relu() + 0.5

        return torch.cond(x.sum() > 0, outer_true, outer_false, (x,)) + 1


def test_nested_cond_with_parameters() -> None:
    model = Nested().eval()
    _, method = _method(model, (torch.randn(2, 4),))
    inputs = [(torch.full((2, 4), 2.0),), (torch.full((2, 4), 0.5),), (-torch.rand(2, 4),),
              (torch.full((2, 4), 3.0),), (torch.full((2, 4), 0.25),)]
    _agree(model, method, inputs)


class PassThrough(torch.nn.Module):
    """A branch that returns a copy of its operand; the result is the method's output."""

    def forward(self, x: torch.Tensor, flag: torch.Tensor) -> torch.Tensor:
        return torch.cond(flag, lambda x: x.clone(), lambda x: x * x, (x,))


def test_passthrough_branch_and_result_as_output() -> None:
    model = PassThrough()
    _, method = _method(model, (torch.randn(3), torch.tensor(True)))
    _agree(model, method, [(torch.randn(3), torch.tensor(b)) for b in (True, False, True, False)])


class AfterConv(torch.nn.Module):
    """Delegated convolution before a cond: the partitioner never crosses it."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x)
        return torch.cond(y.mean() > 0, lambda y: y.relu(), lambda y: y.sigmoid(), (y,))


@pytest.mark.parametrize("partition", [False, True])
def test_cond_after_delegated_ops(partition: bool) -> None:
    torch.manual_seed(1)
    model = AfterConv().eval()
    _, method = _method(model, (torch.randn(1, 3, 8, 8),), partition)
    _agree(model, method, _signs(lambda s: (torch.randn(1, 3, 8, 8) + 3 * s,)))


from functorch.experimental.control_flow import map as control_flow_map  # noqa: E402
from torch._higher_order_ops.while_loop import while_loop  # noqa: E402


class Loop(torch.nn.Module):
    """A counted loop carrying a counter and a state; the bound is an input."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, n: torch.Tensor, x: torch.Tensor):
        def cond_fn(i, x):
            return i < n

        def body_fn(i, x):
            return i + 1, torch.tanh(self.fc(x)) + x * 0.5

        return while_loop(cond_fn, body_fn, (torch.zeros((), dtype=torch.int64), x))


def test_while_loop_for_several_trip_counts() -> None:
    torch.manual_seed(2)
    model = Loop().eval()
    _, method = _method(model, (torch.tensor(3), torch.randn(2, 4)))
    _agree(model, method, [(torch.tensor(n), torch.randn(2, 4)) for n in (0, 1, 5, 2, 9, 0)])


class CondInLoop(torch.nn.Module):
    """A cond inside a loop body, and a loop inside a cond branch."""

    def forward(self, n: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        def body_fn(i, x):
            y = torch.cond(i % 2 == 0, lambda x: x + 1, lambda x: x * 2, (x,))
            return i + 1, y

        def looped(x):
            return while_loop(lambda i, x: i < n, body_fn,
                              (torch.zeros((), dtype=torch.int64), x))[1]

        return torch.cond(x.sum() > 0, looped, lambda x: x - 1, (x,))


def test_nested_cond_and_loop() -> None:
    model = CondInLoop()
    _, method = _method(model, (torch.tensor(2), torch.rand(3)))
    inputs = [(torch.tensor(n), torch.rand(3) * s) for n, s in
              ((3, 1), (0, 1), (4, -1), (5, 1), (1, -1))]
    _agree(model, method, inputs)


class MapRows(torch.nn.Module):
    def forward(self, xs: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return control_flow_map(lambda x, y: (x.sin() + y).sum(0, keepdim=True), xs, y)


def test_map_is_unrolled_over_the_leading_dimension() -> None:
    model = MapRows()
    et, method = _method(model, (torch.randn(5, 4), torch.randn(4)))
    assert not any("map" in str(n.target) for n in et.exported_program().graph.nodes)
    _agree(model, method, [(torch.randn(5, 4), torch.randn(4)) for _ in range(3)])
