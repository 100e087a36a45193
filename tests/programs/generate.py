"""Regenerates the checked-in `.pte` fixtures from the tutorial's models.

    .venv/bin/python tests/programs/generate.py

The C++ tests load these files (allocation check, loader regression) and the
fuzzer uses them as its seed corpus. They are small on purpose. Regenerate
them when the emitter changes what it writes; old files must keep loading.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch.export import export

from ember import exir

HERE = Path(__file__).resolve().parent


class SimpleConv(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(in_channels=3, out_channels=16, kernel_size=3, padding=1)
        self.relu = torch.nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.relu(self.conv(x))


class Basic(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x + y


class Foo(torch.nn.Module):
    def forward(self, a: torch.Tensor, x: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        y = torch.mm(a, x)
        z = y + b
        a = z - a
        y = torch.mm(a, x)
        return y + b


class M(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.param = torch.nn.Parameter(torch.rand(3, 4))
        self.linear = torch.nn.Linear(4, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x + self.param).clamp(min=0.0, max=1.0)


class Encode(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.linear(x, torch.randn(5, 10))


class Decode(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.linear(x, torch.randn(10, 5))


class SmallXnnpackNet(torch.nn.Module):
    """Conv + BN + ReLU6, pooling and a classifier: one XNNPACK delegate."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.nn.functional.relu6(self.bn(self.conv(x)))
        y = torch.nn.functional.max_pool2d(y, 2).mean(dim=(2, 3))
        return torch.softmax(self.fc(y), dim=-1)


def main() -> None:
    torch.manual_seed(0)
    programs = {
        "simple_conv": exir.to_edge(export(SimpleConv(), (torch.randn(1, 3, 16, 16),))),
        "basic": exir.to_edge(export(Basic(), (torch.randn(3, 3), torch.randn(3, 3)))),
        "foo": exir.to_edge(export(Foo(), tuple(torch.randn(2, 2) for _ in range(3)))),
        "m": exir.to_edge(export(M(), (torch.randn(3, 4),))),
        "encode_decode": exir.to_edge(
            {
                "encode": export(Encode(), (torch.randn(1, 10),)),
                "decode": export(Decode(), (torch.randn(1, 5),)),
            }
        ),
    }
    from ember.backends.xnnpack import XnnpackPartitioner

    programs["xnnpack_cnn"] = exir.to_edge(
        export(SmallXnnpackNet().eval(), (torch.randn(1, 3, 16, 16),))
    ).to_backend(XnnpackPartitioner())
    for name, edge in programs.items():
        path = HERE / f"{name}.pte"
        edge.to_executorch().save(path)
        print(f"{path.name}: {path.stat().st_size} bytes")


if __name__ == "__main__":
    main()
