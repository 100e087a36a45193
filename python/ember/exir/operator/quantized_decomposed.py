"""Out variants of the ``quantized_decomposed`` ops that pt2e quantization emits.

PyTorch defines the functional ops (``quantize_per_tensor``,
``dequantize_per_channel``, ``choose_qparams.tensor``, ...) in
``torch.ao.quantization.fx._decomposed`` but no out overloads, and
``to_executorch`` rewrites every call into its out variant. The overload
names and argument orders are those of ExecuTorch's quantized kernel library,
so programs name the same kernels there. Each eager implementation runs the
functional op and copies into ``out``: the reference the runtime's kernels are
tested against.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.ao.quantization.fx import _decomposed  # noqa: F401  (defines the functional ops)

_PER_TENSOR = (
    "Tensor input, float scale, int zero_point, int quant_min, int quant_max, ScalarType dtype"
)
_PER_TENSOR_T = (
    "Tensor input, Tensor scale, Tensor zero_point, int quant_min, int quant_max, ScalarType dtype"
)
_PER_CHANNEL = (
    "Tensor input, Tensor scales, Tensor zero_points, int axis, int quant_min, int quant_max, "
    "ScalarType dtype"
)
_PER_CHANNEL_DQ = (
    "Tensor input, Tensor scales, Tensor? zero_points, int axis, int quant_min, int quant_max, "
    "ScalarType dtype"
)
_ONE_OUT = "Tensor(a!) out) -> Tensor(a!)"

# out overload -> (functional overload, schema of the out overload)
OUT_VARIANTS: dict[str, tuple[str, str]] = {
    "quantize_per_tensor.out": ("default", f"({_PER_TENSOR}, *, {_ONE_OUT}"),
    "quantize_per_tensor.tensor_out": ("tensor", f"({_PER_TENSOR_T}, *, {_ONE_OUT}"),
    "dequantize_per_tensor.out": (
        "default",
        f"({_PER_TENSOR}, *, ScalarType? out_dtype=None, {_ONE_OUT}",
    ),
    "dequantize_per_tensor.tensor_out": (
        "tensor",
        f"({_PER_TENSOR_T}, *, ScalarType? out_dtype=None, {_ONE_OUT}",
    ),
    "quantize_per_channel.out": ("default", f"({_PER_CHANNEL}, *, {_ONE_OUT}"),
    "dequantize_per_channel.out": (
        "default",
        f"({_PER_CHANNEL_DQ}, *, ScalarType? out_dtype=None, {_ONE_OUT}",
    ),
    "choose_qparams.Tensor_out": (
        "tensor",
        "(Tensor input, int quant_min, int quant_max, float eps, ScalarType dtype, *, "
        "Tensor(a!) scale_out, Tensor(b!) zero_point_out) -> (Tensor(a!), Tensor(b!))",
    ),
}

_OUT_NAMES = ("out", "scale_out", "zero_point_out")

_lib = torch.library.Library("quantized_decomposed", "FRAGMENT")


def _make_impl(op_name: str, functional_overload: str) -> Any:
    functional = getattr(getattr(torch.ops.quantized_decomposed, op_name), functional_overload)

    def impl(*args: Any, **kwargs: Any) -> Any:
        outs = [kwargs.pop(n) for n in _OUT_NAMES if n in kwargs]
        results = functional(*args, **kwargs)
        if isinstance(results, torch.Tensor):
            results = (results,)
        for out, result in zip(outs, results, strict=True):
            out.resize_(result.shape).copy_(result)
        return outs[0] if len(outs) == 1 else tuple(outs)

    return impl


def _register() -> None:
    for qualified, (functional_overload, schema) in OUT_VARIANTS.items():
        op_name, overload = qualified.split(".")
        packet = getattr(torch.ops.quantized_decomposed, op_name)
        if overload in packet.overloads():
            continue  # Already defined (by another library, or an earlier import).
        _lib.define(f"{qualified}{schema}")
        _lib.impl(qualified, _make_impl(op_name, functional_overload), "CompositeExplicitAutograd")


_register()
