"""Module::load_method sizes its pool by doubling a guess taken from the
program file; a kernel's load-time scratch is not in the file. One attention
over 1500 tokens (Whisper-base's encoder shape) is a 2 KB program whose tiled
kernel reserves 6 MB of K/V panels at load: it loads and matches eager,
relative to the output's magnitude."""

from __future__ import annotations

import pytest
import torch
from ember.exir import ExecutorchBackendConfig, to_edge
from torch.export import export

pytest.importorskip("ember._C")
from ember.runtime import Runtime
from magnitude import assert_close_to_magnitude


class Attention(torch.nn.Module):
    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.scaled_dot_product_attention(q, k, v)


def test_scratch_far_past_the_file_size_loads():
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 8, 1500, 64) for _ in range(3))
    program = to_edge(export(Attention().eval(), (q, k, v))).to_executorch(
        ExecutorchBackendConfig())
    assert len(program.buffer) < 16 << 10
    method = Runtime.get().load_program(program.buffer).load_method("forward")
    got = method.execute([q, k, v])[0]
    assert_close_to_magnitude(got, Attention()(q, k, v), rtol=1e-5)
