"""A ``BundledProgram`` as ``.bpte`` bytes (schema/bundled_program.fbs)."""

from __future__ import annotations

from ember.devtools.bundled_program.core import BundledProgram


def serialize_from_bundled_program_to_flatbuffer(bundled_program: BundledProgram) -> bytes:
    """The ``.bpte`` bytes: the program embedded whole, and every test case."""
    from ember import _C

    return bytes(_C.write_bundled_program(bundled_program.program,
                                          bundled_program.serialized_suites()))
