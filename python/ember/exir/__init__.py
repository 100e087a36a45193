"""Ember's ahead-of-time compiler: ATen -> edge dialect -> out variants -> .pte."""

from ember.exir.config import EdgeCompileConfig, ExecutorchBackendConfig
from ember.exir.edge_program_manager import EdgeProgramManager, to_edge
from ember.exir.executorch_program_manager import ExecutorchProgramManager

__all__ = [
    "EdgeCompileConfig",
    "EdgeProgramManager",
    "ExecutorchBackendConfig",
    "ExecutorchProgramManager",
    "to_edge",
]
