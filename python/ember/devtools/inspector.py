"""The Inspector (#19): a program's profile joined with its graph.

``Inspector(pte, profile)`` reads each instruction of a method from the
``.pte`` (operator, FX node name, model source frames, output types: the
debug handles ``to_executorch`` writes in ``Chain.stacktrace``) and the
per-instruction times of a profile (the Chrome trace ``ember-run --profile
FILE.json`` writes, or ``ember.devtools.profile(...)`` from Python), and
gives them as one pandas table. ``calculate_numeric_gap`` runs the numerical
debugger (``ember.devtools.numeric``) on the same program.

pandas is needed by ``to_dataframe`` and ``print_data_tabular`` only
(``pip install ember[devtools]``); it is imported when first used."""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from ember.devtools.profile_file import DELEGATE_EVENT, load_trace

__all__ = ["Inspector", "profile"]


def _pandas() -> Any:
    try:
        import pandas
    except ImportError as e:  # pragma: no cover - the test environment has pandas
        raise ImportError(
            "ember.devtools' tables need pandas: pip install pandas (or ember[devtools])"
        ) from e
    return pandas


def _source(program: Any) -> bytes | str:
    from ember.devtools.plots import _source as source

    return source(program)


def profile(
    program: Any,
    inputs: Sequence[Any],
    method: str = "forward",
    iters: int = 10,
    path: str | os.PathLike | None = None,
    profile_path: str | os.PathLike | None = None,
) -> dict:
    """Runs ``method`` ``iters`` times on the C++ runtime with its event
    tracer and returns the profile as the Chrome trace ``ember-run
    --profile`` writes (``{"traceEvents": [{"name", "cat", "ph": "X", "ts",
    "dur", "args": {"instruction", "shape"}}], "otherData": {"method", ...}}``;
    microseconds; a delegate's own events have ``cat: "delegate_event"``);
    written to ``path`` too when given (Perfetto opens it), and the profile
    file (``.eprof``, ``schema/profile.fbs``) to ``profile_path``."""
    from ember import _C
    from ember.runtime import Runtime

    source = _source(program)
    table = {r["instruction"]: r for r in _C.instruction_table(source, method)}
    fingerprint = _C.program_fingerprint(source)
    loaded = Runtime.get().load_program(source).load_method(method)
    _, events = loaded.execute_profiled(
        list(inputs), iters,
        profile_path=os.fspath(profile_path) if profile_path is not None else "",
        program_fingerprint=fingerprint)
    origin = events[0][1] if events else 0
    trace_events = []
    for instruction, start, end, name in events:
        row = table[instruction]
        op = row["op"].removeprefix("delegate ") if row["kind"] == "delegate" else row["op"]
        event = {"ph": "X", "pid": 1, "tid": 1,
                 "ts": (start - origin) / 1e3, "dur": (end - start) / 1e3}
        if name is not None:
            event.update(name=name, cat=DELEGATE_EVENT,
                         args={"instruction": instruction, "delegate": op})
        else:
            shape = row["outputs"][0]["type"] if row["outputs"] else ""
            event.update(name=op, cat=row["kind"],
                         args={"instruction": instruction, "shape": _shape_of(shape)})
        trace_events.append(event)
    trace = {"traceEvents": trace_events, "displayTimeUnit": "ms",
             "otherData": {"method": method, "runs": iters, "program_size": fingerprint[0],
                           "program_hash": fingerprint[1]}}
    if path is not None:
        with open(path, "w") as f:
            json.dump(trace, f)
    return trace


def _shape_of(value_type: str) -> str:
    """"[1, 8]" from "float32[1, 8]"."""
    at = value_type.find("[")
    return value_type[at:] if at >= 0 else ""


_DTYPE = re.compile(r"^([a-z0-9_]+)\[(.*)\]$")


class Inspector:
    """A method's instructions, with times when a profile is given.

    ``program``: an ``ExecutorchProgramManager``, ``.pte``/``.bpte`` bytes or
    a path. ``profile``: a profile of that program: the profile file
    (``.eprof``: path or bytes) of ``ember-run model.pte --profile-out
    P.eprof`` or ``ember.devtools.profile(..., profile_path=...)``, or the
    Chrome trace (a path, the loaded dict or its event list) of ``ember-run
    --profile T.json`` or ``ember.devtools.profile``. Its method is the one
    shown unless ``method`` is given. A profile of another program (its
    size and hash, or its operators) is refused (``ValueError``)."""

    def __init__(self, program: Any, profile: Any = None, method: str | None = None) -> None:
        from ember import _C

        self._program = program
        self._source = _source(program)
        self._trace = load_trace(profile, self._source) if profile is not None else None
        traced = (self._trace or {}).get("otherData", {}).get("method")
        self.method = method or traced or "forward"
        if traced and method and traced != method:
            raise ValueError(f"the profile is of method '{traced}', not '{method}'")
        self.instructions: list[dict] = list(_C.instruction_table(self._source, self.method))
        self.runs = 0
        self._times: dict[int, list[float]] = {}
        # A delegate's own events: {instruction: {name: [µs, ...]}}, first seen first.
        self._inner: dict[int, dict[str, list[float]]] = {}
        if self._trace is not None:
            self._read_profile()

    def _read_profile(self) -> None:
        events = [e for e in self._trace.get("traceEvents", []) if e.get("ph") == "X"]
        if not events:
            raise ValueError("the profile holds no events (was it written by ember-run --profile?)")
        n = len(self.instructions)
        for e in events:
            k = e.get("args", {}).get("instruction")
            if e.get("cat") == DELEGATE_EVENT:
                if not isinstance(k, int) or not 0 <= k < n \
                        or self.instructions[k]["kind"] != "delegate":
                    raise ValueError(f"profile event {e.get('name')!r} is a delegate's event of "
                                     f"instruction {k}, which is no delegate call in method "
                                     f"'{self.method}': the profile is of another program")
                self._inner.setdefault(k, {}).setdefault(e.get("name"), []).append(float(e["dur"]))
                continue
            if not isinstance(k, int) or not 0 <= k < n:
                raise ValueError(f"profile event {e.get('name')!r} names instruction {k}; "
                                 f"method '{self.method}' has {n}")
            op = self.instructions[k]["op"].removeprefix("delegate ")
            if e.get("name") != op:
                raise ValueError(
                    f"profile event for instruction {k} is {e.get('name')!r}, the program runs "
                    f"{op!r} there: the profile is of another program"
                )
            self._times.setdefault(k, []).append(float(e["dur"]))
        if not self._times:
            raise ValueError("the profile holds no instruction events")
        # Every instruction that ran ran once per run, outside loops.
        self.runs = max(1, min(len(v) for v in self._times.values()))

    def to_dataframe(self, include_all: bool = False) -> Any:
        """One row per kernel and delegate instruction (every instruction with
        ``include_all``): ``instruction, kind, op, node, source, stack,
        output_types, output_shapes, output_dtypes`` and, with a profile,
        ``calls`` (per run), ``total_ms`` (over all runs), ``ms_per_run``,
        ``mean_us``, ``min_us``, ``max_us`` and ``share`` (of the time in
        instructions). A delegate's own events (its inner operators, as it
        logs them) follow its row: ``kind`` ``"delegate_event"``, ``op`` the
        event's name, the delegate's instruction, node and source; their
        time is inside the delegate's (not added to the shares' total)."""
        pd = _pandas()
        rows = []
        for ins in self.instructions:
            if not include_all and ins["kind"] not in ("kernel", "delegate"):
                continue
            types = [o["type"] for o in ins["outputs"]]
            parsed = [_DTYPE.match(t) for t in types]
            row = {
                "instruction": ins["instruction"],
                "kind": ins["kind"],
                "op": ins["op"],
                "node": ins["node"],
                "source": ins["source"],
                "stack": " <- ".join(
                    f"{f['filename']}:{f['lineno']} in {f['name']}" for f in reversed(ins["stack"])
                ),
                "output_types": types,
                "output_shapes": [
                    [int(s) for s in m.group(2).split(",") if s.strip()] if m else None
                    for m in parsed
                ],
                "output_dtypes": [m.group(1) if m else t for m, t in zip(parsed, types)],
            }
            if self._trace is not None:
                row.update(self._timing(self._times.get(ins["instruction"], [])))
            rows.append(row)
            for name, times in self._inner.get(ins["instruction"], {}).items():
                rows.append({**row, "kind": DELEGATE_EVENT, "op": name, "output_types": [],
                             "output_shapes": [], "output_dtypes": [], **self._timing(times)})
        df = pd.DataFrame(rows)
        if self._trace is not None and len(df):
            total = df.loc[df["kind"] != DELEGATE_EVENT, "total_ms"].sum()
            df["share"] = df["total_ms"] / total if total > 0 else 0.0
        return df

    def _timing(self, times: list[float]) -> dict:
        total_us = sum(times)
        return {
            "calls": len(times) / self.runs,
            "total_ms": total_us / 1e3,
            "ms_per_run": total_us / 1e3 / self.runs,
            "mean_us": total_us / len(times) if times else float("nan"),
            "min_us": min(times) if times else float("nan"),
            "max_us": max(times) if times else float("nan"),
        }

    def aggregate(self, by: str = "op") -> Any:
        """Time per ``op``, ``source`` line or ``node`` (needs a profile):
        ``calls`` and ``ms_per_run`` summed, ``share``; slowest first."""
        if self._trace is None:
            raise ValueError("aggregate needs a profile (Inspector(program, profile=...))")
        df = self.to_dataframe()
        df = df[df["kind"] != DELEGATE_EVENT]  # inside their delegate's time
        if by not in ("op", "source", "node"):
            raise ValueError(f"by: 'op', 'source' or 'node', got {by!r}")
        out = df.groupby(by, sort=False)[["calls", "ms_per_run", "share"]].sum()
        return out.sort_values("ms_per_run", ascending=False).reset_index()

    def print_data_tabular(self, file: TextIO | None = None, top: int | None = None) -> None:
        """The table, readable: with a profile, slowest instructions first
        (``top`` of them); without, in program order."""
        pd = _pandas()
        df = self.to_dataframe()
        columns = ["instruction", "op", "node", "source", "output_types"]
        inner = df["kind"] == DELEGATE_EVENT
        events = df[inner].copy()
        events["op"] = "  - " + events["op"]
        df = df[~inner]
        if self._trace is not None:
            df = df.sort_values("ms_per_run", ascending=False, kind="stable")
            columns += ["calls", "ms_per_run", "share"]
        if top is not None:
            df = df.head(top)
        # Each delegate's own events right under its row.
        parts = []
        for _, row in df.iterrows():
            parts.append(row.to_frame().T)
            if row["kind"] == "delegate":
                parts.append(events[events["instruction"] == row["instruction"]])
        df = pd.concat(parts) if parts else df
        shown = df[columns].copy()
        shown["output_types"] = shown["output_types"].map(lambda t: ", ".join(t))
        if "share" in shown:
            shown["share"] = shown["share"].map(lambda s: f"{100 * s:.1f}%")
            shown["ms_per_run"] = shown["ms_per_run"].map(lambda s: f"{s:.4f}")
            shown["calls"] = shown["calls"].map(lambda c: f"{c:g}")
        out = file or sys.stdout
        title = f"method '{self.method}': {len(self.instructions)} instructions"
        if self._trace is not None:
            title += f", profile of {self.runs} run(s)"
        print(title, file=out)
        with pd.option_context("display.max_colwidth", 40, "display.width", 200):
            print(shown.to_string(index=False), file=out)

    def calculate_numeric_gap(
        self,
        reference: Any,
        inputs: Sequence[Any],
        rtol: float = 1e-3,
        atol: float = 1e-9,
        config: Any = None,
    ) -> Any:
        """Each instruction's outputs on the C++ runtime against eager at the
        same node (``ember.devtools.numeric.compare_with_eager``): a
        ``NumericGapReport`` whose ``first_divergence`` names the first op
        beyond tolerance and its source line. ``reference``: the
        ``EdgeProgramManager`` (or edge ``ExportedProgram``) ``to_executorch``
        was called on, with its ``config``."""
        from ember.devtools.numeric import compare_with_eager

        return compare_with_eager(reference, self._source, inputs, self.method, rtol, atol,
                                  config)
