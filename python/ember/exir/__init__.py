"""Ember's ahead-of-time compiler: ATen -> edge dialect -> out variants -> .pte."""

from ember.exir.config import EdgeCompileConfig, ExecutorchBackendConfig
from ember.exir.edge_program_manager import (
    EdgeProgramManager,
    to_edge,
    to_edge_transform_and_lower,
)
from ember.exir.executorch_program_manager import ExecutorchProgramManager

__all__ = [
    "EdgeCompileConfig",
    "EdgeProgramManager",
    "ExecutorchBackendConfig",
    "ExecutorchProgramManager",
    "to_edge",
    "to_edge_transform_and_lower",
]
