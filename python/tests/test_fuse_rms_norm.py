"""The RMS norm transformers' decoders write out (pow, mean, add, rsqrt, mul,
mul) fused into ``ember_fused::rms_norm`` (passes/fuse_rms_norm.py,
kernels/portable/op_rms_norm.cpp): which graphs fuse, which must not, and
the programs against eager, relative to the output's magnitude, over row
lengths around the kernel's 16 lanes and rows that split over threads."""

from __future__ import annotations

import pytest
import torch
from ember.exir import ExecutorchBackendConfig, to_edge
from torch.export import export

pytest.importorskip("ember._C")
from ember.exir.operator import ember_fused  # noqa: F401  (defines the op)
from ember.runtime import Runtime
from magnitude import assert_close_to_magnitude

_PATTERN = ("aten.rsqrt", "aten.pow", "aten.mean")


def _targets(program) -> list[str]:
    ep = program.exported_program()
    return [str(n.target) for n in ep.graph.nodes if n.op == "call_function"]


def _run(model: torch.nn.Module, inputs: tuple, threads: int | None = None, **config):
    program = to_edge(export(model, inputs)).to_executorch(ExecutorchBackendConfig(**config))
    method = Runtime.get().load_program(program.buffer).load_method("forward")
    outs = method.execute(list(inputs))
    return program, outs


def _llama_norm(d: int, eps: float = 1e-6):
    from transformers.models.llama.modeling_llama import LlamaRMSNorm

    m = LlamaRMSNorm(d, eps=eps).eval()
    with torch.no_grad():
        m.weight.copy_(torch.randn(d, generator=torch.Generator().manual_seed(d)))
    return m


@pytest.mark.parametrize("shape", [(1, 1, 64), (2, 7, 2048), (3, 33), (5, 1), (1, 4, 17),
                                   (1100, 128), (0, 8)])
def test_llama_rms_norm_fuses_and_matches_eager(shape) -> None:
    model = _llama_norm(shape[-1])
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(1)) * 3.0
    program, outs = _run(model, (x,))
    targets = _targets(program)
    assert sum("rms_norm" in t for t in targets) == 1, targets
    assert not any(p in t for t in targets for p in _PATTERN + ("aten.mul",)), targets
    with torch.no_grad():
        want = model(x)
    assert outs[0].shape == want.shape
    if want.numel():
        assert_close_to_magnitude(outs[0], want, 2e-6)


def test_gemma_one_plus_weight_and_qwen3_head_norms() -> None:
    from transformers.models.gemma.modeling_gemma import GemmaRMSNorm

    gemma = GemmaRMSNorm(48, eps=1e-6).eval()
    with torch.no_grad():
        gemma.weight.normal_(generator=torch.Generator().manual_seed(3))
    x = torch.randn(2, 5, 48, generator=torch.Generator().manual_seed(4))
    program, outs = _run(gemma, (x,))
    targets = _targets(program)
    assert sum("rms_norm" in t for t in targets) == 1, targets
    # 1 + weight was folded into a constant after the fusion.
    assert not any(p in t for t in targets for p in _PATTERN + ("aten.add", "aten.mul")), targets
    with torch.no_grad():
        assert_close_to_magnitude(outs[0], gemma(x), 2e-6)

    class HeadNorm(torch.nn.Module):  # Qwen3's q_norm: per head over [B, T, H, D]
        def __init__(self) -> None:
            super().__init__()
            self.norm = _llama_norm(16)

        def forward(self, q):
            return self.norm(q.view(1, 3, 4, 16)).transpose(1, 2)

    q = torch.randn(1, 3, 64, generator=torch.Generator().manual_seed(5))
    heads = HeadNorm()
    program, outs = _run(heads, (q,))
    assert sum("rms_norm" in t for t in _targets(program)) == 1
    with torch.no_grad():
        assert_close_to_magnitude(outs[0], heads(q), 2e-6)


def test_without_a_weight_and_with_the_normed_value_read_twice() -> None:
    class NoWeight(torch.nn.Module):
        def forward(self, x):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5)

    class ReadTwice(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = torch.nn.Parameter(torch.linspace(0.5, 2.0, 40))

        def forward(self, x):
            n = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5)
            return n * self.w, n.sum(-1)

    x = torch.randn(6, 40, generator=torch.Generator().manual_seed(6))
    for model, fused_muls in ((NoWeight(), 0), (ReadTwice(), 1)):
        program, outs = _run(model, (x,))
        targets = _targets(program)
        assert sum("rms_norm" in t for t in targets) == 1, targets
        # ReadTwice: the weight mul stays (the normed value has two readers).
        assert sum("aten.mul" in t for t in targets) == fused_muls, targets
        with torch.no_grad():
            want = model(x)
        want = want if isinstance(want, tuple) else (want,)
        for got, w in zip(outs, want):
            assert_close_to_magnitude(got, w, 2e-6)


class _Variant(torch.nn.Module):
    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind
        self.w = torch.nn.Parameter(torch.linspace(0.5, 2.0, 24))

    def forward(self, x):
        if self.kind == "cube":
            v = x.pow(3).mean(-1, keepdim=True)
        elif self.kind == "dim0":
            v = x.pow(2).mean(0, keepdim=True)
        elif self.kind == "no_keepdim":
            v = x.pow(2).mean(-1).unsqueeze(-1)
        elif self.kind == "other_x":
            v = (x + 1).pow(2).mean(-1, keepdim=True)
        else:  # "shared_mean": the mean is read again
            v = x.pow(2).mean(-1, keepdim=True)
            return self.w * (x * torch.rsqrt(v + 1e-6)), v
        return self.w * (x * torch.rsqrt(v.abs() + 1e-6))


@pytest.mark.parametrize("kind", ["cube", "dim0", "no_keepdim", "other_x", "shared_mean"])
def test_near_misses_do_not_fuse(kind) -> None:
    model = _Variant(kind)
    x = torch.randn(4, 24, generator=torch.Generator().manual_seed(7))
    program, outs = _run(model, (x,))
    assert not any("rms_norm" in t for t in _targets(program))
    with torch.no_grad():
        want = model(x)
    want = want if isinstance(want, tuple) else (want,)
    for got, w in zip(outs, want):
        assert_close_to_magnitude(got, w, 1e-5)


def test_float64_and_config_off_keep_the_aten_ops() -> None:
    # (LlamaRMSNorm itself computes in float32 whatever its input: a float64
    # model's norm fuses, between the two casts.)
    class Float64Norm(torch.nn.Module):
        def forward(self, x):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)

    model = Float64Norm()
    x = torch.randn(3, 32, dtype=torch.float64)
    program, outs = _run(model, (x,))
    assert not any("rms_norm" in t for t in _targets(program))
    with torch.no_grad():
        assert_close_to_magnitude(outs[0], model(x), 1e-12)
    model = _llama_norm(32)
    x = x.float()
    program, outs = _run(model, (x,), fuse_rms_norm=False)
    targets = _targets(program)
    assert not any("rms_norm" in t for t in targets)
    assert any("aten.rsqrt" in t for t in targets)
    with torch.no_grad():
        assert_close_to_magnitude(outs[0], model(x), 1e-6)


def test_the_fused_op_is_the_eager_reference() -> None:
    x = torch.randn(3, 10)
    w = torch.randn(10)
    want = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * w
    torch.testing.assert_close(torch.ops.ember_fused.rms_norm(x, w, 1e-5), want)
    out = torch.empty(0)
    torch.ops.ember_fused.rms_norm.out(x, None, 1e-5, out=out)
    torch.testing.assert_close(out, want / w)
