"""The symbolic-shape evaluation passes ``ExecutorchBackendConfig(sym_shape_eval_pass=...)``
names, as markers of the planning rule.

Ember sizes every tensor with symbolic dims for the upper bound the export
constraints give it (``ember.exir.symbolic.SymbolBounds``): that is what
``ConstraintBasedSymShapeEvalPass`` (the default) means. A
``HintBasedSymShapeEvalPass`` is accepted and planned the same way, on the
constraints rather than on the example inputs' sizes, so every input the
constraints allow fits (the plan may be larger than a hint-based one).
"""

from __future__ import annotations

from typing import Any


class ConstraintBasedSymShapeEvalPass:
    """Plan symbolic sizes for the upper bounds of the export constraints."""

    def __call__(self, graph_module: Any) -> None:  # Planning reads the bounds itself.
        return None


class HintBasedSymShapeEvalPass(ConstraintBasedSymShapeEvalPass):
    """Accepted for ExecuTorch's scripts; Ember plans on the constraints all the same."""
