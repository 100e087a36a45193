"""``EmberXnnpackBackend.preprocess``: lowers a claimed subgraph to XNNPACK
nodes (``lowering.Lowering``, one registry entry per op) and returns the
"EXN1" blob, already through the runtime's init checks.

Constants (the subgraph program's parameters, and anything computed only
from them) are evaluated here with PyTorch and stored in the blob in the
layout XNNPACK wants: convolution filters OHWI, fully-connected filters
[out, in], rank-4 operands NHWC. A batch norm that follows a convolution
is folded into its filter and bias.
"""

from __future__ import annotations

from torch.export import ExportedProgram

from ember.backends.xnnpack.lowering import Lowering, XnnpackLoweringError
from ember.exir.backend.backend_details import BackendDetails, PreprocessResult
from ember.exir.backend.compile_spec_schema import CompileSpec

BACKEND_ID = "EmberXnnpackBackend"

__all__ = ["BACKEND_ID", "EmberXnnpackBackend", "XnnpackLoweringError"]


class EmberXnnpackBackend(BackendDetails):
    @staticmethod
    def preprocess(
        edge_program: ExportedProgram, compile_specs: list[CompileSpec]
    ) -> PreprocessResult:
        layout = {s.key: bytes(s.value) for s in compile_specs}.get("layout", b"nhwc")
        if layout not in (b"nhwc", b"natural"):
            raise XnnpackLoweringError(f"compile spec layout={layout!r}: expected nhwc or natural")
        return PreprocessResult(processed_bytes=Lowering(edge_program, layout == b"nhwc").run())
