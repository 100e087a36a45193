"""torchao's 8da4w / 8da8w linear layers (Int8DynamicActivationIntxWeightConfig)
fused into ``ember_quantized::linear_dynamic_intx``.

The kernel quantizes each row of activations as torchao does (the same
float32 operations, so the same int8 values) and sums the int8 × int4/int8
products exactly in int32; only the float sums over groups differ from eager,
so outputs are compared relative to their magnitude (bound 1e-5). Programs
are compared with torchao's own converted module; the kernel alone with the
eager reference op. ``make test`` runs this file again under
EMBER_ISA=baseline (and avx2 on AVX-512 hosts); the C++ test
``QDynIntx.*`` runs every microkernel the host has whatever EMBER_ISA says.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("torchao")
from ember import _C, exir
from ember.exir.operator.ember_quantized import pack_int4, unpack_int4
from test_quantized_fused import ops_of, run
from torchao.quantization import Int8DynamicActivationIntxWeightConfig, quantize_
from torchao.quantization.granularity import PerAxis, PerGroup

eq = torch.ops.ember_quantized
TOL = 1e-5


CONFIGS = {  # weight dtype, granularity, bias
    "8da4w g32": (torch.int4, PerGroup(32), True),
    "8da4w g64": (torch.int4, PerGroup(64), False),
    "8da4w g16": (torch.int4, PerGroup(16), True),    # the plain loops on every ISA
    "8da8w per channel": (torch.int8, PerAxis(0), False),
    "8da8w g32": (torch.int8, PerGroup(32), True),
}


@pytest.mark.parametrize("name", list(CONFIGS))
def test_torchao_8da_linear_runs_fused(name):
    weight_dtype, granularity, bias = CONFIGS[name]
    torch.manual_seed(3)
    model = torch.nn.Linear(192, 80, bias=bias).eval()
    quantize_(model, Int8DynamicActivationIntxWeightConfig(weight_dtype=weight_dtype,
                                                           weight_granularity=granularity))
    for shape in [(3, 192), (2, 7, 192)]:  # decode (GEMV tiles), a prompt (GEMM)
        x = torch.randn(*shape) * 2
        x[..., 5] = 9.0  # an outlier: the row's scale follows it
        program = exir.to_edge(torch.export.export(model, (x,))).to_executorch()
        ops = ops_of(program)
        assert sum("linear_dynamic_intx" in o for o in ops) == 1, ops
        assert not any("addmm" in o or "round" in o for o in ops), ops
        with torch.no_grad():
            want = model(x)
        got = run(program, (x,))
        assert got.shape == want.shape
        assert (got - want).abs().max().item() <= TOL * want.abs().max().item()


def test_int4_weights_take_half_a_byte():
    torch.manual_seed(0)
    sizes = {}
    for wd in (torch.int4, torch.int8):
        model = torch.nn.Linear(512, 256, bias=False).eval()
        quantize_(model, Int8DynamicActivationIntxWeightConfig(weight_dtype=wd,
                                                               weight_granularity=PerGroup(32)))
        x = torch.randn(1, 512)
        sizes[wd] = len(exir.to_edge(torch.export.export(model, (x,))).to_executorch().buffer)
    # 128 KB of int8 weights against 64 KB of int4 (and 16 KB of scales each).
    assert sizes[torch.int4] < sizes[torch.int8] - 60_000


def test_pack_int4_round_trips():
    w = torch.randint(-8, 8, (5, 12), dtype=torch.int8)
    packed = pack_int4(w)
    assert packed.dtype == torch.uint8 and packed.shape == (5, 6)
    assert int(packed[0, 0]) == (int(w[0, 0]) + 8) | ((int(w[0, 1]) + 8) << 4)
    assert torch.equal(unpack_int4(packed), w)


@pytest.mark.parametrize("bits", [4, 8])
@pytest.mark.parametrize("rows", [1, 2, 4, 5, 33])
@pytest.mark.parametrize(("k", "group"), [(128, 32), (96, 32), (256, 128), (48, 16)])
def test_kernel_matches_reference(bits, rows, k, group):
    rng = np.random.default_rng(rows * 1000 + k + bits)
    n = 37
    x = (rng.standard_normal((rows, k)) * 3).astype(np.float32)
    lo, hi = (-8, 8) if bits == 4 else (-128, 128)
    w = torch.from_numpy(rng.integers(lo, hi, size=(n, k), dtype=np.int8))
    weight = (pack_int4(w) if bits == 4 else w).numpy()
    scales = rng.uniform(0.001, 0.02, size=(n, k // group)).astype(np.float32)
    bias = rng.standard_normal(n).astype(np.float32)
    want = eq.linear_dynamic_intx(torch.from_numpy(x), torch.from_numpy(weight),
                                  torch.from_numpy(scales), group, bits,
                                  torch.from_numpy(bias)).numpy()
    out = np.zeros((rows, n), np.float32)
    _C.call_kernel("ember_quantized::linear_dynamic_intx.out",
                   [x, weight, scales, group, bits, bias, out], constants=[1, 2, 5], runs=2)
    assert np.abs(out - want).max() <= TOL * np.abs(want).max()


def _refusal(x, weight, scales, group, bits):
    _C.call_kernel("ember_quantized::linear_dynamic_intx.out",
                   [x, weight, scales, group, bits, None,
                    np.zeros((1, weight.shape[0]), np.float32)], constants=[1, 2])


def test_refuses_odd_input_features_for_int4():
    with pytest.raises(Exception, match="input features 63: int4 weights .* need an even"):
        _refusal(np.zeros((1, 63), np.float32), np.zeros((4, 32), np.uint8),
                 np.ones((4, 1), np.float32), 63, 4)


def test_refuses_a_group_that_does_not_divide():
    with pytest.raises(Exception, match="group_size 24 must be >= 1 and divide the 64"):
        _refusal(np.zeros((1, 64), np.float32), np.zeros((4, 32), np.uint8),
                 np.ones((4, 2), np.float32), 24, 4)


def test_refuses_wrong_dtypes_and_bits():
    with pytest.raises(Exception, match="weight must be a contiguous 2-d uint8 constant"):
        _refusal(np.zeros((1, 64), np.float32), np.zeros((4, 32), np.int8),
                 np.ones((4, 2), np.float32), 32, 4)
    with pytest.raises(Exception, match="weight_bits 3: 4 or 8 only"):
        _refusal(np.zeros((1, 64), np.float32), np.zeros((4, 64), np.int8),
                 np.ones((4, 2), np.float32), 32, 3)
    with pytest.raises(Exception, match="weight_scales must be a float32 constant with 4 x 2"):
        _refusal(np.zeros((1, 64), np.float32), np.zeros((4, 32), np.uint8),
                 np.ones((4, 2), np.float64), 32, 4)
    with pytest.raises(Exception, match="input has dtype float64"):
        _refusal(np.zeros((1, 64), np.float64), np.zeros((4, 32), np.uint8),
                 np.ones((4, 2), np.float32), 32, 4)
    with pytest.raises(Exception, match="weight has 32 columns; 32 input features need 16"):
        _refusal(np.zeros((1, 32), np.float32), np.zeros((4, 32), np.uint8),
                 np.ones((4, 1), np.float32), 32, 4)


def test_weight_zero_points_are_not_fused():
    """An asymmetric weight (non-zero zero points) is not what the kernel
    computes: this pass leaves it, and the weight-only fusion takes the weight
    half (its input is the activation's quantize-dequantize in float)."""
    from torchao.quantization.quant_primitives import MappingType

    torch.manual_seed(1)
    model = torch.nn.Linear(64, 16).eval()
    quantize_(model, Int8DynamicActivationIntxWeightConfig(
        weight_dtype=torch.int4, weight_granularity=PerGroup(32),
        weight_mapping_type=MappingType.ASYMMETRIC))
    x = torch.randn(2, 64)
    program = exir.to_edge(torch.export.export(model, (x,))).to_executorch()
    assert not any("linear_dynamic_intx" in o for o in ops_of(program))
    with torch.no_grad():
        want = model(x)
    assert (run(program, (x,)) - want).abs().max().item() <= 1e-4 * want.abs().max().item()
