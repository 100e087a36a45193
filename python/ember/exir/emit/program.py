"""Emit a whole Program (all methods) as FlatBuffers JSON plus data blobs.

The JSON leaves out ``segments``, ``constant_segment`` and
``constant_buffer``: the C++ writer (``ember._C.write_program``) lays the
constant blobs out in a segment and fills those in. Each BackendDelegate's
``processed`` is ``{"location": "INLINE", "index": i}`` meaning
``delegate_blobs[i]``; the writer moves each blob into a segment (or inline
data) and rewrites the reference.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from torch.export import ExportedProgram

from ember.exir.emit.constant_methods import emit_constant_method
from ember.exir.emit.constants import ConstantBuffers
from ember.exir.emit.delegates import DelegateBlobs
from ember.exir.emit.external_constants import ExternalConstants
from ember.exir.emit.method import emit_method
from ember.exir.passes.input_guards import KEY_PREFIX, encode_guard_table, input_guards
from ember.exir.passes.memory_planning import MemoryPlan

_NONFINITE = re.compile(r'"__ember_nonfinite_(-?inf|nan)__"')


@dataclass
class EmittedProgram:
    program: dict[str, Any]
    constant_buffers: list[memoryview]  # views of the constants' memory (tensor_bytes)
    delegate_blobs: list[bytes] = field(default_factory=list)
    named_blobs: list[bytes] = field(default_factory=list)
    mutable_data: list[memoryview] = field(default_factory=list)
    external: ExternalConstants = field(default_factory=ExternalConstants)

    @property
    def json(self) -> str:
        """FlatBuffers JSON (non-finite doubles as bare ``inf``/``nan``)."""
        return _NONFINITE.sub(r"\1", json.dumps(self.program, separators=(",", ":")))


def emit_program(
    programs: dict[str, ExportedProgram],
    plans: dict[str, MemoryPlan],
    constant_methods: dict[str, Any] | None = None,
    external_constants: Any = False,
    emit_stacktrace: bool = True,
) -> EmittedProgram:
    constants = ConstantBuffers()
    mutable_data = ConstantBuffers()
    external = ExternalConstants()
    blobs = DelegateBlobs()
    plans_json = [
        emit_method(name, ep, plans[name], constants, blobs, mutable_data, external,
                    external_constants, emit_stacktrace)
        for name, ep in programs.items()
    ] + [
        emit_constant_method(name, value, constants)
        for name, value in (constant_methods or {}).items()
    ]
    named_data: list[dict[str, Any]] = []
    named_blobs: list[bytes] = []
    for name, ep in programs.items():
        guards = input_guards(ep, name)
        if guards:
            named_data.append({"key": KEY_PREFIX + name, "segment_index": len(named_blobs)})
            named_blobs.append(encode_guard_table(guards))
    return EmittedProgram(
        {"version": 0, "execution_plan": plans_json, "named_data": named_data},
        constants.blobs,
        blobs.blobs,
        named_blobs,
        mutable_data.blobs,
        external,
    )
