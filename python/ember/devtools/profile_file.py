"""Profile files (``.eprof``, ``schema/profile.fbs``, #19): the events of a
method's profiled runs as ``ember-run --profile-out FILE.eprof`` and
``ember.devtools.profile(..., profile_path=...)`` write them, read by the C++
reader (``ember._C.read_profile``: FlatBuffer verifier, every event checked
against the instructions it names, the program's size and hash).

The rest of ember.devtools reads a profile as a Chrome trace dict
(``load_trace``): a profile file is turned into the trace ``ember-run
--profile FILE.json`` writes, its delegates' own events included
(``cat: "delegate_event"``)."""

from __future__ import annotations

import json
import os
from typing import Any

__all__ = ["is_profile_file", "load_trace", "read_profile", "trace_from_profile"]

# The file identifier, bytes 4..8 of a FlatBuffer.
_IDENTIFIER = b"EPF1"
# A Chrome-trace event a delegate logged inside its call.
DELEGATE_EVENT = "delegate_event"


def is_profile_file(data: bytes) -> bool:
    return len(data) >= 8 and data[4:8] == _IDENTIFIER


def read_profile(source: str | os.PathLike | bytes, program: Any = None) -> dict:
    """The profile file at ``source`` (a path or its bytes) as a dict
    (``method, program_size, program_hash, num_instructions, threads,
    dropped_events, instructions, names, runs``). With ``program`` (a program
    manager, ``.pte``/``.bpte`` bytes or a path), a profile of another program
    is refused. ``ValueError`` names what is wrong with a corrupt file."""
    from ember import _C

    data = source if isinstance(source, bytes) else _read(source)
    return _C.read_profile(data, None if program is None else _program_source(program))


def trace_from_profile(profile: dict) -> dict:
    """A profile file's dict (``read_profile``) as the Chrome trace
    ``ember-run --profile FILE.json`` writes (times in microseconds from the
    first event), its delegates' own events included."""
    by_index = {ins["index"]: ins for ins in profile["instructions"]}
    names = profile["names"]
    runs = profile["runs"]
    origin = runs[0][0][2] if runs and runs[0] else 0
    events = []
    for run in runs:
        for instruction, name, start, end in run:
            ins = by_index[instruction]
            event: dict[str, Any] = {"ph": "X", "pid": 1, "tid": 1,
                                     "ts": (start - origin) / 1e3, "dur": (end - start) / 1e3}
            if name < 0:
                event.update(name=ins["op"], cat=ins["kind"],
                             args={"instruction": instruction, "shape": ins["output_shape"]})
            else:
                event.update(name=names[name], cat=DELEGATE_EVENT,
                             args={"instruction": instruction, "delegate": ins["op"]})
            events.append(event)
    return {
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": {
            "method": profile["method"],
            "runs": len(runs),
            "program_size": profile["program_size"],
            "program_hash": profile["program_hash"],
            "threads": profile["threads"],
            "dropped_events": profile["dropped_events"],
        },
    }


def load_trace(profile_data: Any, program: Any = None) -> dict:
    """A profile as a Chrome trace dict: a profile file (path or bytes), a
    Chrome trace (path, the loaded dict or its event list). With
    ``program``, a profile naming another program (a profile file, or a
    trace from ``ember.devtools.profile``) is refused (``ValueError``)."""
    if isinstance(profile_data, str | os.PathLike):
        data = _read(profile_data)
        if not is_profile_file(data):
            return _checked(json.loads(data), program)
        profile_data = data
    if isinstance(profile_data, bytes):
        return trace_from_profile(read_profile(profile_data, program))
    if isinstance(profile_data, dict):
        return _checked(profile_data, program)
    if isinstance(profile_data, list):
        return {"traceEvents": profile_data}
    raise TypeError(
        "profile: a profile file (.eprof: path or bytes) or a Chrome trace (path, or the "
        "loaded dict) as ember-run --profile-out / --profile or ember.devtools.profile "
        f"writes, got {type(profile_data).__name__}"
    )


def _checked(trace: dict, program: Any) -> dict:
    other = trace.get("otherData", {}) if isinstance(trace, dict) else {}
    if program is not None and "program_hash" in other:
        from ember import _C

        size, digest = _C.program_fingerprint(_program_source(program))
        if (size, digest) != (other["program_size"], other["program_hash"]):
            raise ValueError(
                f"the profile is of another program: it was taken of a "
                f"{other['program_size']}-byte program (hash {other['program_hash']:016x}), "
                f"this one has {size} bytes (hash {digest:016x})"
            )
    return trace


def _read(path: str | os.PathLike) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _program_source(program: Any) -> bytes | str:
    from ember.devtools.plots import _source

    return _source(program)
