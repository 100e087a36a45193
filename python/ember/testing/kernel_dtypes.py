"""Probes which dtypes each kernel of the op list computes, for its ``dtypes:`` field.

A kernel's dtype set is the dtypes its *primary* tensor may have: the first
tensor (or tensor list) argument of its schema, or its first out when it takes
no tensor. ``load_method`` refuses a program whose primary tensor has a dtype
outside the set, naming the op, the argument, the dtype and the set; this
module finds the set by running the kernel itself, through
``ember._C.call_kernel(..., check_dtypes=False)`` so the set does not check
itself:

- samples are the PyTorch OpInfo samples of the out overload's functional
  twin (``aten::cos.out`` -> ``aten.cos.default``, see ``op_samples``), for
  every dtype eager runs; for a dtype with no sample, a sample of another
  dtype with its primary-dtype tensors cast to it;
- each sample runs in eager (for the outs' shapes and dtypes) and then in the
  kernel. A dtype is out of the set when no attempt ran and at least one was
  refused: the kernel named the primary and its dtype ("self: unsupported
  dtype int16"), not a promoted dtype, the out's, or a mismatch with another
  argument. Attempts that only failed for other reasons keep the dtype in the
  set (refusing it at load would be a guess).

Ops OpInfo does not cover get small samples here (``_EXTRA``). Kernels with
none (the executorch_prim ops, ``sym_size`` and the like, which read only
sizes) keep the set written by hand in ``ops.yaml``.

    python -m ember.testing.kernel_dtypes kernels/ops.yaml [--write] [--ops a,b] [--json F]

(Run it as a process: OpInfo's sample generators walk the caller's stack,
which is slow under a deep one such as pytest's.)
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch.utils import _pytree as pytree

# Ember's names for the dtypes, in ScalarType order; ops.yaml uses them.
DTYPE_NAMES: dict[torch.dtype, str] = {
    torch.uint8: "uint8", torch.int8: "int8", torch.int16: "int16", torch.int32: "int32",
    torch.int64: "int64", torch.float16: "float16", torch.float32: "float32",
    torch.float64: "float64", torch.bool: "bool", torch.bfloat16: "bfloat16",
}
# torch dtype -> ScalarType code, for ScalarType arguments.
_SCALAR_TYPE = {
    torch.uint8: 0, torch.int8: 1, torch.int16: 2, torch.int32: 3, torch.int64: 4,
    torch.float16: 5, torch.float32: 6, torch.float64: 7, torch.bool: 11, torch.bfloat16: 15,
}
_DTYPE_REFUSED = re.compile(r"dtype|floating|integral|bool tensors", re.IGNORECASE)
MAX_SAMPLES = 3


@dataclass
class Probe:
    op: str
    primary: str | None = None  # the argument whose dtype the set is about
    dtypes: list[str] | None = None  # None: no samples, the set stays as written
    notes: list[str] = field(default_factory=list)


def primary_argument(schema: torch.FunctionSchema) -> str | None:
    """The first tensor (or tensor list) argument; the first out if none; None if no tensor."""
    args = schema.arguments
    for a in args:
        if not _is_out(a) and "Tensor" in str(a.type):
            return a.name
    for a in args:
        if _is_out(a):
            return a.name
    return None


def _is_out(a: Any) -> bool:
    return a.alias_info is not None and a.alias_info.is_write


def functional_twin(schema: torch.FunctionSchema) -> Any | None:
    """The overload with the same non-out arguments that returns new tensors."""
    namespace, _, base = schema.name.partition("::")
    packet = getattr(getattr(torch.ops, namespace), base, None)
    if packet is None:
        return None
    want = [(a.name, str(a.type)) for a in schema.arguments if not _is_out(a)]
    for overload in packet.overloads():
        op = getattr(packet, overload)
        s = op._schema
        if s.is_mutable:
            continue
        have = [(a.name, str(a.type)) for a in s.arguments]
        extra = [a for a in s.arguments if (a.name, str(a.type)) not in want]
        if have == want or (all(w in have for w in want) and
                            all(a.kwarg_only and a.has_default_value() for a in extra)):
            return op
    return None


def _quant_range(dtype: torch.dtype) -> tuple[int, int] | None:
    if dtype.is_floating_point or dtype == torch.bool:
        return None
    info = torch.iinfo(dtype)
    return max(info.min, -(2**15)), min(info.max, 2**15 - 1)


def _t(values: Any, dtype: torch.dtype) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float64).to(dtype)


_SPD = [[4, 1, 0], [1, 3, 1], [0, 1, 2]]

# Samples for kernels whose twin neither OpInfo nor op_samples covers: twin
# name -> dtype -> [(args, kwargs)]; a sample eager refuses is dropped.
# Weights of the fused quantized ops' samples (int8 whatever the probed dtype).
_W_CONV = torch.arange(54, dtype=torch.int8).reshape(3, 2, 3, 3) - 27
_W_LINEAR = torch.arange(12, dtype=torch.int8).reshape(3, 4) - 6
_W_SCALES = torch.tensor([0.01, 0.02, 0.03])
_W_BIAS = torch.tensor([0.5, -0.25, 1.0])

_EXTRA: dict[str, Any] = {
    "aten.embedding.default": lambda d: [((_t([[1, 2], [3, 4], [5, 6]], d), torch.tensor([0, 2, 1])), {})],
    "aten.nonzero.default": lambda d: [((_t([[0, 1, 0], [2, 0, 3]], d),), {})],
    "aten.col2im.default": lambda d: [((_t(torch.arange(16.0).reshape(1, 4, 4), d), [3, 3], [2, 2],
                                        [1, 1], [0, 0], [1, 1]), {})],
    "aten.adaptive_max_pool2d.default": lambda d: [((_t(torch.arange(30.0).reshape(1, 5, 6) % 7, d),
                                                    [2, 4]), {})],
    "aten.searchsorted.Tensor": lambda d: [((_t([1, 3, 5, 7], d), _t([[0, 3], [6, 9]], d)), {})],
    "aten.bucketize.Tensor": lambda d: [((_t([[0, 3], [6, 9]], d), _t([1, 3, 5, 7], d)), {})],
    "aten.replication_pad1d.default": lambda d: [((_t([[[1, 2, 3, 4]]], d), [1, 2]), {})],
    "aten.select_copy.int": lambda d: [((_t([[1, 2], [3, 4]], d), 1, 0), {})],
    "aten.slice_copy.Tensor": lambda d: [((_t([[1, 2, 3], [4, 5, 6]], d), 1, 0, 2, 1), {})],
    "aten.squeeze_copy.dims": lambda d: [((_t([[[1, 2, 3]]], d), [0, 1]), {})],
    "dim_order_ops._clone_dim_order.default": lambda d: [
        ((_t([[1, 2], [3, 4]], d),), {"dim_order": [0, 1]})],
    "dim_order_ops._to_dim_order_copy.default": lambda d: [
        ((_t([[1, 2], [3, 4]], d),), {"dim_order": [1, 0]})],
    "quantized_decomposed.quantize_per_tensor.default": lambda d: [
        ((_t([0.5, -1.0, 2.0], d), 0.1, 3, -128, 127, torch.int8), {})],
    "quantized_decomposed.quantize_per_tensor.tensor": lambda d: [
        ((_t([0.5, -1.0, 2.0], d), torch.tensor([0.1]), torch.tensor([3]), -128, 127, torch.int8), {})],
    "quantized_decomposed.quantize_per_channel.default": lambda d: [
        ((_t([[0.5, -1.0], [2.0, 0.25]], d), torch.tensor([0.1, 0.2]), torch.tensor([0, 1]), 0,
          -128, 127, torch.int8), {})],
    "quantized_decomposed.dequantize_per_tensor.default": lambda d: [
        ((_t([5, -3, 7], d), 0.1, 2, *_quant_range(d), d), {})] if _quant_range(d) else [],
    "quantized_decomposed.dequantize_per_tensor.tensor": lambda d: [
        ((_t([5, -3, 7], d), torch.tensor([0.1]), torch.tensor([2]), *_quant_range(d), d), {})]
        if _quant_range(d) else [],
    "quantized_decomposed.dequantize_per_channel.default": lambda d: [
        ((_t([[5, -3], [7, 1]], d), torch.tensor([0.1, 0.2]), torch.tensor([0, 1]), 0,
          *_quant_range(d), d), {})] if _quant_range(d) else [],
    "quantized_decomposed.choose_qparams.tensor": lambda d: [
        ((_t([0.5, -1.0, 2.0], d), -128, 127, 1e-5, torch.int8), {})],
    # fused quantized ops, issue #16 (kernels/quantized/op_quantized_*.cpp)
    "ember_quantized.conv2d.default": lambda d: [
        ((_t(torch.arange(32.0).reshape(1, 2, 4, 4) - 16, d), 0.1, 0, _W_CONV, _W_SCALES,
          _W_BIAS, [1, 1], [1, 1], [1, 1], 1, 0.2, 0, -128, 127), {})],
    "ember_quantized.linear.default": lambda d: [
        ((_t(torch.arange(8.0).reshape(2, 4) - 4, d), 0.1, 0, _W_LINEAR, _W_SCALES, _W_BIAS,
          0.2, 0, -128, 127), {})],
    "ember_quantized.linear_dynamic.default": lambda d: [
        ((_t(torch.arange(8.0).reshape(2, 4) - 4, d), _W_LINEAR, _W_SCALES, _W_BIAS, -128, 127,
          1e-5), {})],
    "ember_quantized.linear_weight_only.default": lambda d: [
        ((_t(torch.arange(8.0).reshape(2, 4) - 4, d), _W_LINEAR, _W_SCALES.reshape(3, 1), None, 4,
          _W_BIAS), {})],
    "ember_quantized.linear_dynamic_intx.default": lambda d: [
        ((_t(torch.arange(8.0).reshape(2, 4) - 4, d), _W_LINEAR, _W_SCALES.reshape(3, 1), 4, 8,
          _W_BIAS), {})],
    # fused float ops (kernels/portable/op_fused_convolution.cpp)
    "ember_fused.fused_convolution.default": lambda d: [
        ((_t(torch.arange(32.0).reshape(1, 2, 4, 4) - 16, d),
          _t(torch.arange(36.0).reshape(2, 2, 3, 3) / 36 - 0.5, d), _t([0.5, -0.5], d),
          [1, 1], [1, 1], [1, 1], 1, _t(torch.arange(32.0).reshape(1, 2, 4, 4) / 8, d), 0.0,
          None), {})],
    # the NCHW16c layout (kernels/portable/op_conv2d_nchw16c.cpp, op_nchw16c_layout.cpp)
    "ember_fused.conv2d_nchw16c.default": lambda d: [
        ((_t(torch.arange(256.0).reshape(1, 1, 4, 4, 16) / 64 - 2, d),
          _t(torch.arange(288.0).reshape(2, 16, 3, 3) / 288 - 0.5, d), _t([0.5, -0.5], d),
          [1, 1], [1, 1], _t(torch.arange(256.0).reshape(1, 1, 4, 4, 16) / 256, d), 0.0,
          None), {})],
    "ember_fused.max_pool2d_nchw16c.default": lambda d: [
        ((_t(torch.arange(256.0).reshape(1, 1, 4, 4, 16) - 16, d), [3, 3], [2, 2], [1, 1],
          False), {})],
    "ember_fused.to_nchw16c.default": lambda d: [
        ((_t(torch.arange(32.0).reshape(1, 2, 4, 4) - 16, d),), {})],
    "ember_fused.from_nchw16c.default": lambda d: [
        ((_t(torch.arange(256.0).reshape(1, 1, 4, 4, 16) - 16, d), 2), {})],
    # (kernels/portable/op_fused_linear.cpp): input @ mat2 + bias + residual, then GELU
    "ember_fused.fused_linear.default": lambda d: [
        ((_t(torch.arange(8.0).reshape(2, 4) / 4 - 1, d), _t(torch.arange(12.0).reshape(4, 3) / 12, d),
          _t([0.5, -0.5, 0.25], d), _t(torch.arange(6.0).reshape(2, 3) / 6, d), "gelu", None, None),
         {})],
    "ember_fused.linear_bf16.default": lambda d: [
        ((_t(torch.arange(8.0).reshape(2, 4) - 4, d), (_W_LINEAR / 8).to(torch.bfloat16), _W_BIAS),
         {})],
    # (kernels/portable/op_linear_bf16.cpp): the bf16 product + bias + residual, then GELU
    "ember_fused.fused_linear_bf16.default": lambda d: [
        ((_t(torch.arange(8.0).reshape(2, 4) - 4, d), (_W_LINEAR / 8).to(torch.bfloat16), _W_BIAS,
          _t(torch.arange(6.0).reshape(2, 3) / 6, d), "gelu", None, None), {})],
    "ember_fused.max_pool2d.default": lambda d: [
        ((_t(torch.arange(32.0).reshape(1, 2, 4, 4) - 16, d), [2, 2]), {})],
    # (kernels/portable/op_rms_norm.cpp, op_rope.cpp)
    "ember_fused.rms_norm.default": lambda d: [
        ((_t(torch.arange(8.0).reshape(2, 4) - 4, d), _t([0.5, -1.0, 2.0, 1.0], d), 1e-6), {})],
    "ember_fused.rope.default": lambda d: [
        ((_t(torch.arange(8.0).reshape(2, 4) - 4, d), _t(torch.arange(8.0).reshape(2, 4) / 8, d),
          _t(torch.arange(8.0).reshape(2, 4) / -8, d)), {})],
    "ember_fused.safe_softmax.default": lambda d: [
        ((_t([[0.5, -1.0, 2.0], [-1.0, 0.0, 1.0]], d), 1), {})],
    # SDPA kept whole (passes/fuse_attention.py): 2 heads on 1 key head, causal
    "ember_fused.sdpa.default": lambda d: [
        ((_t(torch.arange(24.0).reshape(1, 2, 3, 4) / 16, d),
          _t(torch.arange(12.0).reshape(1, 1, 3, 4) / 8, d),
          _t(torch.arange(12.0).reshape(1, 1, 3, 4) / 4, d), None, True, None), {})],
    "ember_quantized.add.default": lambda d: [
        ((_t([5, -3, 7], d), 0.1, 2, _t([1, 2, -9], d), 0.2, -1, 0.3, 0, -128, 127), {})],
    "ember_quantized.mul.default": lambda d: [
        ((_t([5, -3, 7], d), 0.1, 2, _t([1, 2, -9], d), 0.2, -1, 0.3, 0, -128, 127), {})],
    # Special functions (issue #13): OpInfo's samples are not keyed by these overloads.
    **{f"aten.{name}.default": lambda d: [((_t([0.25, 0.5, 0.75], d),), {})] for name in (
        "special_i0e", "special_i1", "special_i1e", "special_ndtri", "special_erfcx",
        "special_bessel_j0", "special_bessel_j1", "special_bessel_y0", "special_bessel_y1",
        "special_modified_bessel_i0", "special_modified_bessel_i1", "special_modified_bessel_k0",
        "special_modified_bessel_k1", "special_scaled_modified_bessel_k0",
        "special_scaled_modified_bessel_k1", "special_spherical_bessel_j0", "special_airy_ai",
        "digamma", "erfinv", "i0"
    )},
    "aten.polygamma.default": lambda d: [((1, _t([0.5, 1.5], d)), {})],
    "aten.special_zeta.default": lambda d: [((_t([2, 3], d), _t([1, 2], d)), {})],
    "aten.special_zeta.self_scalar": lambda d: [((2.0, _t([1, 2], d)), {})],
    "aten.special_zeta.other_scalar": lambda d: [((_t([2, 3], d), 2.0), {})],
    **{f"aten.special_{name}.{overload}": sample for name in (
        "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
        "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
        "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
        "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
        "laguerre_polynomial_l", "legendre_polynomial_p"
    ) for overload, sample in (
        ("default", lambda d: [((_t([0.25, 0.5], d), _t([2, 3], d)), {})]),
        ("x_scalar", lambda d: [((0.5, _t([2, 3], d)), {})]),
        ("n_scalar", lambda d: [((_t([0.25, 0.5], d), 2), {})]))},
    # misc non-core ops (issue #13)
    "aten.max_pool2d_with_indices_backward.default": lambda d: [
        ((_t([[[[1, 2], [3, 4]]]], d), _t(torch.arange(16.0).reshape(1, 1, 4, 4), d), [2, 2],
          [2, 2], [0, 0], [1, 1], False, torch.tensor([[[[5, 7], [13, 15]]]])), {})],
    "aten.fractional_max_pool2d.default": lambda d: [
        ((_t(torch.arange(50.0).reshape(1, 2, 5, 5) % 7, d), [2, 2], [3, 3],
          _t([[[0.3, 0.6], [0.1, 0.9]]], d)), {})],
    "aten.fractional_max_pool3d.default": lambda d: [
        ((_t(torch.arange(128.0).reshape(1, 2, 4, 4, 4) % 5, d), [2, 2, 2], [2, 2, 2],
          _t([[[0.3, 0.6, 0.2], [0.1, 0.9, 0.5]]], d)), {})],
    "aten._histogramdd_bin_edges.default": lambda d: [
        ((_t([[0, 1], [2, 3], [1, 1]], d), [2, 3]), {})],
    "aten._histogramdd_from_bin_cts.default": lambda d: [
        ((_t([[0, 1], [2, 3], [1, 1]], d), [2, 3]), {})],
    # linear algebra (op_linalg_*.cpp): an SPD matrix, pivots of no swap
    "aten.linalg_cholesky_ex.default": lambda d: [((_t(_SPD, d),), {})],
    "aten.linalg_lu_factor_ex.default": lambda d: [((_t(_SPD, d),), {})],
    "aten.linalg_lu.default": lambda d: [((_t(_SPD, d),), {})],
    "aten.linalg_lu_solve.default": lambda d: [
        ((_t(_SPD, d), torch.tensor([1, 2, 3], dtype=torch.int32), _t([[1], [2], [3]], d)), {})],
    "aten._linalg_solve_ex.default": lambda d: [((_t(_SPD, d), _t([[1], [2], [3]], d)), {})],
    "aten.linalg_inv_ex.default": lambda d: [((_t(_SPD, d),), {})],
    "aten._linalg_det.default": lambda d: [((_t(_SPD, d),), {})],
    "aten._linalg_slogdet.default": lambda d: [((_t(_SPD, d),), {})],
    "aten.linalg_solve_triangular.default": lambda d: [
        ((_t(_SPD, d), _t([[1], [2], [3]], d)), {"upper": True})],
    "aten.linalg_householder_product.default": lambda d: [((_t(_SPD, d), _t([1, 0.5], d)), {})],
    "aten.linalg_qr.default": lambda d: [((_t(_SPD, d),), {})],
    "aten._linalg_eigh.default": lambda d: [((_t(_SPD, d),), {})],
    "aten._linalg_svd.default": lambda d: [((_t(_SPD, d),), {})],
    "aten.linalg_pinv.atol_rtol_tensor": lambda d: [((_t(_SPD, d),), {})],
    # linear algebra, issue #13 (op_linalg_ldl.cpp, op_linalg_matrix_exp.cpp)
    "aten.linalg_ldl_factor_ex.default": lambda d: [((_t(_SPD, d),), {})],
    "aten.linalg_ldl_solve.default": lambda d: [
        ((_t(_SPD, d), torch.tensor([1, 2, 3], dtype=torch.int32), _t([[1], [2], [3]], d)), {})],
    "aten.linalg_matrix_exp.default": lambda d: [((_t(_SPD, d),), {})],
    # fused attention over a KV cache, issue #18 (op_custom_sdpa.cpp): 2 query heads on 1
    # cache head, 2 new positions after 1 cached
    "llama.custom_sdpa.default": lambda d: [
        ((_t(torch.arange(16.0).reshape(1, 2, 2, 4) / 16, d),
          _t(torch.arange(16.0).reshape(1, 1, 4, 4) / 8, d),
          _t(torch.arange(16.0).reshape(1, 1, 4, 4) / 4, d), 1, None, 0.0, True, None), {})],
}


# Twins whose samples are another op's (same schema, same results).
_SAME_SAMPLES = {"aten._embedding_bag_forward_only.default": "aten._embedding_bag.default"}


def _runs(twin: Any, args: tuple, kwargs: dict) -> bool:
    try:
        twin(*args, **kwargs)
    except Exception:  # noqa: BLE001
        return False
    return True


def _samples(twin: Any) -> dict[torch.dtype, list[tuple[tuple, dict]]]:
    from ember.testing import op_samples

    namespace = twin.namespace
    name = f"{namespace}.{twin.overloadpacket.__name__}.{twin._overloadname}"
    name = _SAME_SAMPLES.get(name, name)
    found: dict[torch.dtype, list[tuple[tuple, dict]]] = {}
    if name in _EXTRA:
        for dtype in DTYPE_NAMES:
            kept = [(a, k) for a, k in _EXTRA[name](dtype) if _runs(twin, a, k)]
            if kept:
                found[dtype] = kept
        return found
    try:
        dtypes = op_samples.supported_dtypes(name)
    except Exception:  # noqa: BLE001 - an op the sample tables do not know
        return found
    for dtype in dtypes:
        try:
            kept = op_samples.samples(name, dtype, limit=MAX_SAMPLES)
        except Exception:  # noqa: BLE001
            continue
        if kept:
            found[dtype] = [(s.args, s.kwargs) for s in kept[:MAX_SAMPLES]]
    return found


def _bind(schema: torch.FunctionSchema, args: tuple, kwargs: dict) -> dict[str, Any] | None:
    bound: dict[str, Any] = {}
    names = [a.name for a in schema.arguments if not _is_out(a)]
    for name, value in zip(names, args, strict=False):
        bound[name] = value
    bound.update(kwargs)
    for a in schema.arguments:
        if _is_out(a) or a.name in bound:
            continue
        if not a.has_default_value():
            return None
        bound[a.name] = a.default_value
    return bound


def _cast(value: Any, src: torch.dtype, dst: torch.dtype) -> Any:
    def one(x: Any) -> Any:
        if not isinstance(x, torch.Tensor) or x.dtype != src:
            return x
        if dst == torch.bool:
            return x != 0
        if not dst.is_floating_point:
            info = torch.iinfo(dst)
            x = x.double().round().clamp(max(info.min, -100), min(info.max, 100))
        return x.to(dst)

    return pytree.tree_map(one, value)


def _boxed(value: Any, type_: str) -> Any:
    """A sample's value as call_kernel takes it, for a schema type (str(a.type))."""
    if isinstance(value, (list, tuple)):
        return [_element(v) for v in value]
    if isinstance(value, torch.Tensor) and "List[Optional[Tensor]]" in type_:
        return [value.contiguous()]
    if isinstance(value, int) and not isinstance(value, bool) and "List[int]" in type_:
        return [value]  # `dim=1` where the schema takes `int[1]? dim`
    if isinstance(value, torch.memory_format):
        return None if "Optional" in type_ else 0
    return _element(value)


def _element(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.contiguous()
    if isinstance(value, torch.dtype):
        return ("dtype", _SCALAR_TYPE[value])
    if isinstance(value, (torch.layout, torch.device, torch.memory_format)):
        return None
    if isinstance(value, torch.SymInt):
        return int(value)
    return value


def _call(schema: torch.FunctionSchema, twin: Any, bound: dict[str, Any],
          dtype: torch.dtype | None = None) -> Any:
    ours = {a.name for a in schema.arguments if not _is_out(a)}
    theirs = twin._schema.arguments
    args = [bound[a.name] for a in theirs if not a.kwarg_only and a.name in ours]
    kwargs = {a.name: bound[a.name] for a in theirs if a.kwarg_only and a.name in ours}
    if dtype is not None and any(a.name == "dtype" for a in theirs) and "dtype" not in ours:
        kwargs["dtype"] = dtype  # a factory (full.out): the dtype comes with the out
    return twin(*args, **kwargs)


def _outs_like(result: Any) -> list[torch.Tensor]:
    leaves = [result] if isinstance(result, torch.Tensor) else list(pytree.tree_leaves(result))
    return [torch.empty_like(t, memory_format=torch.contiguous_format)
            for t in leaves if isinstance(t, torch.Tensor)]


@dataclass
class Attempt:
    bound: dict[str, Any]  # the kernel's arguments, outs excluded
    outs: list[torch.Tensor]  # sized and typed as eager would return them


def _run(name: str, schema: torch.FunctionSchema, primary: str, attempt: Attempt) -> str:
    """"ok", "refused: ..." (a dtype) or "error: ..." (anything else)."""
    from ember import _C

    outs = [a for a in schema.arguments if _is_out(a)]
    boxed = [_boxed(attempt.bound[a.name], str(a.type))
             for a in schema.arguments if not _is_out(a)]
    if len(outs) == 1 and "List" in str(outs[0].type):
        boxed.append(list(attempt.outs))  # `Tensor(a!)[] out`: one list
    elif len(attempt.outs) == len(outs):
        boxed += attempt.outs
    else:
        return "error: outs do not match eager's results"
    returns = list(range(len(boxed) - len(outs), len(boxed))) if len(outs) > 1 else None
    try:
        _C.call_kernel(name, boxed, returns, check_dtypes=False)
    except (RuntimeError, ValueError, TypeError) as e:
        message = str(e).splitlines()[0] if str(e) else type(e).__name__
        # A refusal of the primary's dtype names it first ("self: unsupported
        # dtype int16"); one about a promoted dtype, the out's, or a mismatch
        # with another argument does not: other arguments could make it valid.
        # (A kernel that checks dtypes in its prepare step fails there.)
        said = (message.removeprefix("call_kernel: ").removeprefix("call_kernel (prepare): ")
                .removeprefix(f"{name}: "))
        refused = (said.startswith(f"{primary}: ") and _DTYPE_REFUSED.search(said) is not None
                   and "differs from" not in said)  # a mismatch with another argument
        kind = "refused" if refused else "error"
        return f"{kind}: {message[:160]}"
    return "ok"


def _first_dtype(value: Any) -> torch.dtype | None:
    return next((x.dtype for x in pytree.tree_leaves(value) if isinstance(x, torch.Tensor)), None)


def _attempts(schema: torch.FunctionSchema, twin: Any, primary: str,
              found: dict[torch.dtype, list[tuple[tuple, dict]]],
              dtype: torch.dtype) -> Iterator[Attempt]:
    factory = all(a.name != primary for a in schema.arguments if not _is_out(a))
    if dtype in found:
        for args, kwargs in found[dtype]:
            bound = _bind(schema, args, kwargs)
            if bound is not None:
                yield Attempt(bound, _outs_like(_call(schema, twin, bound, dtype if factory else None)))
        return
    # No sample in this dtype (eager may refuse it): recast another dtype's
    # samples (float32 first). Outs follow eager's results in the source dtype,
    # retyped to `dtype` where they had the primary's dtype.
    for src in sorted(found, key=lambda d: d != torch.float32):
        for args, kwargs in found[src]:
            bound = _bind(schema, args, kwargs)
            if bound is None:
                continue
            src_dtype = _first_dtype(bound[primary]) if primary in bound else src
            if src_dtype is None:
                continue
            # Cast the primary alone, and every tensor of its dtype (a binary
            # op's `other`, but also a quantize's float `scales`): either may
            # be the call that fits.
            only = dict(bound, **{primary: _cast(bound[primary], src_dtype, dtype)}) \
                if primary in bound else dict(bound)
            every = {k: _cast(v, src_dtype, dtype) for k, v in bound.items()}
            for cast in (only, every):
                try:
                    outs = _outs_like(_call(schema, twin, cast, dtype if factory else None))
                except Exception:  # noqa: BLE001 - eager refuses the dtype
                    outs = [o.to(dtype) if o.dtype == src_dtype else o
                            for o in _outs_like(_call(schema, twin, bound, src if factory else None))]
                yield Attempt(cast, outs)
        return


def _register_ops() -> None:
    """Ember's out overloads of the quantized_decomposed and dim_order ops; and
    OpInfo's sample generators without their stack walk."""
    import ember.exir  # noqa: F401
    import ember.exir.operator.ember_fused  # noqa: F401
    import ember.exir.operator.ember_quantized  # noqa: F401
    import torch.ao.quantization.fx._decomposed  # noqa: F401
    from torch.testing._internal import common_utils
    from torch.testing._internal.opinfo import core

    # extract_test_fn looks for a unittest.TestCase up the stack (to find
    # per-test skips) with inspect.stack(), which reads source files: 80% of
    # the probe's time. There is no TestCase here, so it would return None.
    common_utils.extract_test_fn = core.extract_test_fn = lambda: None


def probe(entry: dict[str, str]) -> Probe:
    if entry["op"].startswith("executorch_prim::"):
        return Probe(entry["op"])  # scalar ops and views: no OpInfo, sets written by hand
    schema = torch._C.parse_schema(entry["schema"])
    result = Probe(entry["op"], primary_argument(schema))
    twin = functional_twin(schema)
    if result.primary is None or twin is None:
        return result
    found = _samples(twin)
    if not found:
        return result
    accepted = []
    for dtype, name in DTYPE_NAMES.items():
        tried = [_run(entry["op"], schema, result.primary, a)
                 for a in _attempts(schema, twin, result.primary, found, dtype)]
        if not tried:
            result.notes.append(f"{name}: no sample")
            accepted.append(name)  # untested: not refused at load
        elif any(o == "ok" for o in tried) or not any(o.startswith("refused") for o in tried):
            accepted.append(name)
            errors = [o for o in tried if o.startswith("error")]
            if errors and not any(o == "ok" for o in tried):
                result.notes.append(f"{name}: kept, {errors[0]}")
        else:
            result.notes.append(f"{name}: {next(o for o in tried if o.startswith('refused'))}")
    result.dtypes = accepted
    return result


def format_dtypes(names: list[str]) -> str:
    return "all" if set(names) == set(DTYPE_NAMES.values()) else ", ".join(
        n for n in DTYPE_NAMES.values() if n in names)


def write(path: Path, probes: dict[str, Probe]) -> int:
    """Sets the ``dtypes:`` line of every probed entry; returns how many changed."""
    lines = path.read_text().splitlines()
    out: list[str] = []
    changed = 0
    current: str | None = None

    def flush() -> None:
        nonlocal changed
        p = probes.get(current or "")
        if p is None or p.dtypes is None:
            return
        text = f"  dtypes: {format_dtypes(p.dtypes)}"
        for i in range(len(out) - 1, -1, -1):
            if out[i].startswith("- op:"):
                break
            if out[i].startswith("  dtypes:"):
                if out[i] != text:
                    out[i] = text
                    changed += 1
                return
        out.append(text)
        changed += 1

    for line in lines:
        if line.startswith("- op:"):
            flush()
            current = line.split(":", 1)[1].strip()
        out.append(line)
    flush()
    path.write_text("\n".join(out) + "\n")
    return changed


def read_entries(path: Path) -> list[dict[str, str]]:
    sys.path.insert(0, str(path.resolve().parent.parent / "tools"))
    from kernel_schema import read_op_list

    return read_op_list(path)


def main(argv: list[str] | None = None) -> int:
    import warnings

    warnings.filterwarnings("ignore")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("op_list", type=Path)
    parser.add_argument("--write", action="store_true", help="rewrite the dtypes: lines")
    parser.add_argument("--ops", default="", help="comma-separated ops to probe (default all)")
    parser.add_argument("--json", type=Path, help="also write {op: [dtypes] or null} here")
    ns = parser.parse_args(argv)
    entries = read_entries(ns.op_list)
    _register_ops()
    if ns.ops:
        wanted = set(ns.ops.split(","))
        entries = [e for e in entries if e["op"] in wanted]
    probes = {}
    for i, entry in enumerate(entries, 1):
        p = probe(entry)
        probes[entry["op"]] = p
        shown = "no samples" if p.dtypes is None else format_dtypes(p.dtypes)
        print(f"[{i}/{len(entries)}] {entry['op']} ({p.primary}): {shown}", flush=True)
        for note in p.notes:
            print(f"    {note}")
    if ns.json:
        ns.json.write_text(json.dumps({op: {"dtypes": p.dtypes, "notes": p.notes}
                                       for op, p in probes.items()}, indent=1))
    if ns.write:
        print(f"{write(ns.op_list, probes)} entries changed in {ns.op_list}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
