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
) -> dict:
    """Runs ``method`` ``iters`` times on the C++ runtime with its event
    tracer and returns the profile as the Chrome trace ``ember-run
    --profile`` writes (``{"traceEvents": [{"name", "cat", "ph": "X", "ts",
    "dur", "args": {"instruction", "shape"}}], "otherData": {"method"}}``;
    microseconds); written to ``path`` too when given (Perfetto opens it)."""
    from ember import _C
    from ember.runtime import Runtime

    source = _source(program)
    table = {r["instruction"]: r for r in _C.instruction_table(source, method)}
    loaded = Runtime.get().load_program(source).load_method(method)
    _, events = loaded.execute_profiled(list(inputs), iters)
    origin = events[0][1] if events else 0
    trace_events = []
    for instruction, start, end in events:
        row = table[instruction]
        op = row["op"].removeprefix("delegate ") if row["kind"] == "delegate" else row["op"]
        shape = row["outputs"][0]["type"] if row["outputs"] else ""
        trace_events.append({
            "name": op, "cat": row["kind"], "ph": "X", "pid": 1, "tid": 1,
            "ts": (start - origin) / 1e3, "dur": (end - start) / 1e3,
            "args": {"instruction": instruction, "shape": _shape_of(shape)},
        })
    trace = {"traceEvents": trace_events, "displayTimeUnit": "ms",
             "otherData": {"method": method}}
    if path is not None:
        with open(path, "w") as f:
            json.dump(trace, f)
    return trace


def _shape_of(value_type: str) -> str:
    """"[1, 8]" from "float32[1, 8]"."""
    at = value_type.find("[")
    return value_type[at:] if at >= 0 else ""


def _trace(profile_data: Any) -> dict:
    if isinstance(profile_data, str | os.PathLike):
        with open(profile_data) as f:
            return json.load(f)
    if isinstance(profile_data, dict):
        return profile_data
    if isinstance(profile_data, list):
        return {"traceEvents": profile_data}
    raise TypeError(
        "profile: a Chrome trace (path, or the loaded dict) as ember-run --profile or "
        f"ember.devtools.profile writes, got {type(profile_data).__name__}"
    )


_DTYPE = re.compile(r"^([a-z0-9_]+)\[(.*)\]$")


class Inspector:
    """A method's instructions, with times when a profile is given.

    ``program``: an ``ExecutorchProgramManager``, ``.pte``/``.bpte`` bytes or
    a path. ``profile``: the Chrome trace of that program (a path, the
    loaded dict or its event list), from ``ember-run model.pte --profile
    T.json`` or ``ember.devtools.profile``; its ``otherData.method`` picks
    the method unless ``method`` is given."""

    def __init__(self, program: Any, profile: Any = None, method: str | None = None) -> None:
        from ember import _C

        self._program = program
        self._source = _source(program)
        self._trace = _trace(profile) if profile is not None else None
        traced = (self._trace or {}).get("otherData", {}).get("method")
        self.method = method or traced or "forward"
        if traced and method and traced != method:
            raise ValueError(f"the profile is of method '{traced}', not '{method}'")
        self.instructions: list[dict] = list(_C.instruction_table(self._source, self.method))
        self.runs = 0
        self._times: dict[int, list[float]] = {}
        if self._trace is not None:
            self._read_profile()

    def _read_profile(self) -> None:
        events = [e for e in self._trace.get("traceEvents", []) if e.get("ph") == "X"]
        if not events:
            raise ValueError("the profile holds no events (was it written by ember-run --profile?)")
        n = len(self.instructions)
        for e in events:
            k = e.get("args", {}).get("instruction")
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
        # Every instruction that ran ran once per run, outside loops.
        self.runs = max(1, min(len(v) for v in self._times.values()))

    def to_dataframe(self, include_all: bool = False) -> Any:
        """One row per kernel and delegate instruction (every instruction with
        ``include_all``): ``instruction, kind, op, node, source, stack,
        output_types, output_shapes, output_dtypes`` and, with a profile,
        ``calls`` (per run), ``total_ms`` (over all runs), ``ms_per_run``,
        ``mean_us``, ``min_us``, ``max_us`` and ``share`` (of the time in
        instructions)."""
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
                times = self._times.get(ins["instruction"], [])
                total_us = sum(times)
                row.update({
                    "calls": len(times) / self.runs,
                    "total_ms": total_us / 1e3,
                    "ms_per_run": total_us / 1e3 / self.runs,
                    "mean_us": total_us / len(times) if times else float("nan"),
                    "min_us": min(times) if times else float("nan"),
                    "max_us": max(times) if times else float("nan"),
                })
            rows.append(row)
        df = pd.DataFrame(rows)
        if self._trace is not None and len(df):
            total = df["total_ms"].sum()
            df["share"] = df["total_ms"] / total if total > 0 else 0.0
        return df

    def aggregate(self, by: str = "op") -> Any:
        """Time per ``op``, ``source`` line or ``node`` (needs a profile):
        ``calls`` and ``ms_per_run`` summed, ``share``; slowest first."""
        if self._trace is None:
            raise ValueError("aggregate needs a profile (Inspector(program, profile=...))")
        df = self.to_dataframe()
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
        if self._trace is not None:
            df = df.sort_values("ms_per_run", ascending=False)
            columns += ["calls", "ms_per_run", "share"]
        if top is not None:
            df = df.head(top)
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
