"""Passes of the ember AOT pipeline (the order lives in ``ember.exir.pipeline``)."""

from ember.exir.passes.constant_fold import ConstantFoldPass
from ember.exir.passes.fold_batch_norm import FoldBatchNormPass
from ember.exir.passes.fold_padding import FoldPaddingPass
from ember.exir.passes.memory_planning import MemoryPlan, MemoryPlanningPass

__all__ = [
    "ConstantFoldPass",
    "FoldBatchNormPass",
    "FoldPaddingPass",
    "MemoryPlan",
    "MemoryPlanningPass",
]
