"""Tools to see inside programs (#19): bundled test cases (``.bpte``) and
their verification on the C++ runtime. ``docs/devtools.md``."""

from ember.devtools.bundled_program.config import MethodTestCase, MethodTestSuite
from ember.devtools.bundled_program.core import BundledProgram
from ember.devtools.bundled_program.serialize import serialize_from_bundled_program_to_flatbuffer
from ember.devtools.bundled_program.verify import (
    CaseResult,
    OutputResult,
    VerificationReport,
    verify,
)

__all__ = [
    "BundledProgram",
    "CaseResult",
    "MethodTestCase",
    "MethodTestSuite",
    "OutputResult",
    "VerificationReport",
    "serialize_from_bundled_program_to_flatbuffer",
    "verify",
]
