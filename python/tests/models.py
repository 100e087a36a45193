"""The tutorial's models and its edge transform, shared by the AOT tests."""

from __future__ import annotations

import torch
from ember.exir.dialects._ops import ops as exir_ops
from ember.exir.pass_base import ExportPass


class SimpleConv(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(in_channels=3, out_channels=16, kernel_size=3, padding=1)
        self.relu = torch.nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = self.conv(x)
        return self.relu(a)


class ConvertReluToSigmoid(ExportPass):
    def call_operator(self, op, args, kwargs, meta):  # type: ignore[no-untyped-def]
        if op == exir_ops.edge.aten.relu.default:
            return super().call_operator(exir_ops.edge.aten.sigmoid.default, args, kwargs, meta)
        else:
            return super().call_operator(op, args, kwargs, meta)


class Basic(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x + y


class Encode(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.linear(x, torch.randn(5, 10))


class Decode(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.linear(x, torch.randn(10, 5))


class Foo(torch.nn.Module):
    def forward(self, a: torch.Tensor, x: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        y = torch.mm(a, x)
        z = y + b
        a = z - a
        y = torch.mm(a, x)
        z = y + b
        return z


class M(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.param = torch.nn.Parameter(torch.rand(3, 4))
        self.linear = torch.nn.Linear(4, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x + self.param).clamp(min=0.0, max=1.0)


class Mixed(torch.nn.Module):
    """Scalars in tensor slots, views, multi-output and list-output ops, dtype args."""

    def forward(self, x: torch.Tensor, i: torch.Tensor) -> tuple[torch.Tensor, ...]:
        y = torch.add(x * 2.5 + 1, 3, alpha=2)
        pooled = torch.max_pool2d(y.view(1, 1, 4, 4), 2)
        a, b = torch.split(y, 2)
        return (
            y,
            i // 2,
            torch.pow(y, 2).t(),
            pooled,
            a,
            b,
            torch.where(y > 0, y, 0.0),
            y.sum(0, dtype=torch.float64),
            y.to(torch.int32),
            y.clamp(min=float("-inf")),
        )
