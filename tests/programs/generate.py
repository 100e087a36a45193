"""Regenerates the checked-in `.pte` fixtures from the tutorial's models.

    .venv/bin/python tests/programs/generate.py

The C++ tests load these files (allocation check, loader regression) and the
fuzzer uses them as its seed corpus. `other_exporter_*.pte` are built by
hand the way other exporters of the format write programs
(python/tests/test_pte_compat.py runs them); `--other-exporters` writes
only those. They are small on purpose. Regenerate
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


def _tensor(dtype: str, dim_order: list[int], offset: int) -> dict:
    return {"val_type": "Tensor", "val": {
        "scalar_type": dtype, "storage_offset": 0, "sizes": [1, 3, 2, 2], "dim_order": dim_order,
        "requires_grad": False, "data_buffer_idx": 0,
        "allocation_info": {"memory_id": 1, "memory_offset_low": offset, "memory_offset_high": 0},
        "layout": 0, "shape_dynamism": "STATIC"}}


def other_exporter_dim_order() -> bytes:
    """A program written the way other exporters of the format write one
    (docs/pte-format.md, writer section), built by hand: dim-order ops where
    Ember used to write _to_copy/clone, the input's planned memory reused by
    the output (so a runner must set inputs before every execute), every
    vector present even when empty (delegates, a 0-item plan list), and a
    constant_segment of just the reserved [0] with no segment behind it.

        y = _to_dim_order_copy(x, dim_order=[0, 2, 3, 1])   # float32 -> float16, channels-last
        c = _clone_dim_order(y, dim_order=[0, 2, 3, 1])
        z = _to_dim_order_copy(c, dim_order=None)            # -> float32 contiguous, in x's memory
    so z == x.half().float().
    """
    import json

    from ember import _C

    ints = lambda xs: [{"val_type": "Int", "val": {"int_val": x}} for x in xs]  # noqa: E731
    values = [
        _tensor("FLOAT32", [0, 1, 2, 3], 0),               # 0 x (input)
        {"val_type": "Bool", "val": {"bool_val": False}},  # 1 non_blocking
        *ints([0, 2, 3, 1]),                               # 2..5
        {"val_type": "IntList", "val": {"items": [2, 3, 4, 5]}},  # 6 channels-last
        _tensor("FLOAT16", [0, 2, 3, 1], 64),              # 7 y
        _tensor("FLOAT16", [0, 2, 3, 1], 96),              # 8 c
        {"val_type": "Null", "val": {}},                   # 9 dim_order=None
        _tensor("FLOAT32", [0, 1, 2, 3], 0),               # 10 z (output, x's memory)
    ]

    def call(op: int, args: list[int]) -> dict:
        return {"instr_args_type": "KernelCall", "instr_args": {"op_index": op, "args": args}}

    plan = {
        "name": "forward",
        "container_meta_type": {"encoded_inp_str": "", "encoded_out_str": ""},
        "values": values,
        "inputs": [0],
        "outputs": [10],
        "chains": [{"inputs": [0], "outputs": [10], "instructions": [
            call(0, [0, 1, 6, 7, 7]), call(1, [7, 1, 6, 8, 8]), call(0, [8, 1, 9, 10, 10])]}],
        "operators": [
            {"name": "dim_order_ops::_to_dim_order_copy", "overload": "out"},
            {"name": "dim_order_ops::_clone_dim_order", "overload": "out"},
        ],
        "delegates": [],
        "non_const_buffer_sizes": [0, 128],
    }
    program = {"version": 0, "execution_plan": [plan], "constant_buffer": [],
               "backend_delegate_data": [], "mutable_data_segments": [], "named_data": []}
    return bytes(_C.write_program(json.dumps(program), [], []))


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
    write_other_exporter_fixtures()


def write_other_exporter_fixtures() -> None:
    path = HERE / "other_exporter_dim_order.pte"
    path.write_bytes(other_exporter_dim_order())
    print(f"{path.name}: {path.stat().st_size} bytes")


if __name__ == "__main__":
    import sys

    write_other_exporter_fixtures() if "--other-exporters" in sys.argv else main()
