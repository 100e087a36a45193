"""The emitter: out-variant programs -> FlatBuffers JSON Program + blobs."""

from ember.exir.emit.program import EmittedProgram, emit_program

__all__ = ["EmittedProgram", "emit_program"]
