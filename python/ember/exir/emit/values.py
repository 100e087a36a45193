"""The value table of one ExecutionPlan, as FlatBuffers JSON EValues."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from ember.exir.emit.enums import scalar_type_name
from ember.exir.symbolic import is_symbolic

# Stands for a non-finite double; replaced by a bare inf/nan token in the JSON.
NONFINITE = "__ember_nonfinite_{}__"


def double(x: float) -> float | str:
    return x if math.isfinite(x) else NONFINITE.format(x)


def dim_order(val: torch.Tensor) -> list[int]:
    if val.dim() == 0 or is_symbolic(val):
        # Out-variant kernels write contiguous results; asking a symbolic
        # tensor about its strides would add guards to its shape env.
        return list(range(val.dim()))
    if val.is_contiguous():
        return list(range(val.dim()))
    return [int(d) for d in val.dim_order()]


class ValueTable:
    """Appends EValues and returns their indices. ``bound_shape(val, what)``
    gives the upper-bound shape of a tensor with symbolic sizes."""

    def __init__(
        self, bound_shape: Callable[[torch.Tensor, str], tuple[int, ...]] | None = None
    ) -> None:
        self.values: list[dict[str, Any]] = []
        self.bound_shape = bound_shape

    def _add(self, kind: str, val: dict[str, Any]) -> int:
        self.values.append({"val_type": kind, "val": val})
        return len(self.values) - 1

    def tensor(
        self,
        val: torch.Tensor,
        *,
        data_buffer_idx: int = 0,
        offset: int | None = None,
        contiguous: bool = False,
        memory_id: int = 1,
        external: str | None = None,
    ) -> int:
        """A tensor value: constant (data_buffer_idx > 0), planned (offset, in
        buffer ``memory_id``), both (a mutable buffer: planned, with its initial
        value in the mutable data), external (named ``external`` in a
        named-data file), or neither. Symbolic sizes are written as their upper
        bounds, DYNAMIC_BOUND."""
        dynamic = is_symbolic(val)
        if dynamic:
            if self.bound_shape is None:
                raise ValueError(f"a tensor of symbolic shape {tuple(val.shape)} needs bounds")
            sizes = list(self.bound_shape(val, f"a tensor of shape {tuple(val.shape)}"))
        else:
            sizes = [int(s) for s in val.shape]
        tensor: dict[str, Any] = {
            "scalar_type": scalar_type_name(val.dtype),
            "storage_offset": 0,
            "sizes": sizes,
            "dim_order": list(range(len(sizes))) if contiguous else dim_order(val),
            "requires_grad": bool(val.requires_grad),
            "data_buffer_idx": data_buffer_idx,
        }
        if offset is not None:
            tensor["allocation_info"] = {
                "memory_id": memory_id,
                "memory_offset_low": offset & 0xFFFFFFFF,
                "memory_offset_high": offset >> 32,
            }
        if external is not None:
            tensor["extra_tensor_info"] = {"fully_qualified_name": external, "location": "EXTERNAL"}
        tensor["layout"] = 0
        tensor["shape_dynamism"] = "DYNAMIC_BOUND" if dynamic else "STATIC"
        return self._add("Tensor", tensor)

    def null(self) -> int:
        return self._add("Null", {})

    def int(self, x: int) -> int:
        return self._add("Int", {"int_val": int(x)})

    def bool(self, x: bool) -> int:
        return self._add("Bool", {"bool_val": bool(x)})

    def double(self, x: float) -> int:
        return self._add("Double", {"double_val": double(float(x))})

    def string(self, s: str) -> int:
        return self._add("String", {"string_val": s})

    def int_list(self, xs: list[int]) -> int:
        """Items are indices of Int values (so sizes can become symbolic)."""
        return self.int_list_of_values([self.int(x) for x in xs])

    def int_list_of_values(self, indices: list[int]) -> int:
        """An IntList naming existing Int values (some computed at run time)."""
        return self._add("IntList", {"items": list(indices)})

    def double_list(self, xs: list[float]) -> int:
        return self._add("DoubleList", {"items": [double(float(x)) for x in xs]})

    def bool_list(self, xs: list[bool]) -> int:
        return self._add("BoolList", {"items": [bool(x) for x in xs]})

    def tensor_list(self, indices: list[int]) -> int:
        return self._add("TensorList", {"items": list(indices)})

    def optional_tensor_list(self, indices: list[int]) -> int:
        """Items are tensor value indices; -1 means None."""
        return self._add("OptionalTensorList", {"items": list(indices)})
