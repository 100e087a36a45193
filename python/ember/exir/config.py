"""Configuration of ``to_edge`` and ``to_executorch``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from torch._ops import OpOverload

from ember.exir.passes.memory_planning import MemoryPlanningPass


@dataclass
class EdgeCompileConfig:
    """``_check_ir_validity``: run the edge verifier (core ATen opset).
    ``_core_aten_ops_exception_list``: non-core ATen ops to allow anyway."""

    _check_ir_validity: bool = True
    _core_aten_ops_exception_list: list[OpOverload] = field(default_factory=list)


@dataclass
class ExecutorchBackendConfig:
    """``passes``: edge-dialect passes run before the out-variant conversion
    (``ExportPass`` instances or callables GraphModule -> PassResult); their
    result must still use edge ops (the core-opset check is not applied).
    ``memory_planning_pass``: places the non-constant tensors.
    ``constant_folding``: compute what depends only on parameters and
    constants at export (``ember.exir.passes.ConstantFoldPass``).
    ``fold_batch_norm``: fold inference batch norm into the convolution it
    follows (``ember.exir.passes.fold_batch_norm``: one kernel instead of
    two, the new weight and bias computed at export).
    ``fold_padding``: fold a symmetric zero ``constant_pad_nd`` into the
    convolution that reads it (``ember.exir.passes.fold_padding``: TF-style
    models pad before every convolution).
    ``dim_order_ops``: write memory-format/dtype copies as
    ``dim_order_ops::_to_dim_order_copy.out`` / ``_clone_dim_order.out``, as
    other exporters of the format do (False: ``aten::_to_copy.out`` /
    ``aten::clone.out``, which Ember's earlier runtimes also run)."""

    passes: Sequence[Callable[..., Any]] = field(default_factory=list)
    memory_planning_pass: MemoryPlanningPass = field(default_factory=MemoryPlanningPass)
    constant_folding: bool = True
    fold_batch_norm: bool = True
    fold_padding: bool = True
    dim_order_ops: bool = True
