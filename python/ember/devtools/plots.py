"""Pictures of a program (#19): its memory plan and its profile as charts
(matplotlib), its graph as SVG (Graphviz's ``dot``).

The memory plan and the graph come from the ``.pte`` alone (the C++ reader
``extension/devtools`` gives the planned regions and the DOT text), so a
program manager, ``.pte``/``.bpte`` bytes or a path all draw the same picture.
``ember-inspect model.pte --plot DIR`` runs ``python -m
ember.devtools.plot_cli DIR`` to draw the memory plans it wrote there."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

_KIND_COLORS = {
    "input": "#5dade2",
    "output": "#ec7063",
    "mutable": "#af7ac5",
    "intermediate": "#58d68d",
}


def _source(program: Any) -> bytes | str:
    """What the C++ reader takes: bytes, or a path it opens."""
    if hasattr(program, "buffer"):  # ExecutorchProgramManager
        return bytes(program.buffer)
    if hasattr(program, "program") and isinstance(program.program, bytes):  # BundledProgram
        return program.program
    if isinstance(program, bytes | bytearray | memoryview):
        return bytes(program)
    if isinstance(program, str | os.PathLike):
        return os.fspath(program)
    raise TypeError(
        "expected an ExecutorchProgramManager, a BundledProgram, .pte/.bpte bytes or a path, "
        f"got {type(program).__name__}"
    )


def memory_plan_data(program: Any, method: str = "forward") -> dict:
    """The method's planned regions as the file holds them: ``{"method",
    "num_instructions", "buffers", "lower_bound", "tensors": [{"buffer",
    "offset", "nbytes", "first", "last", "kind", "label", "type", "values"}]}``
    (inputs live from instruction -1, outputs until ``num_instructions``)."""
    from ember import _C

    return json.loads(_C.memory_plan_json(_source(program), method))


def _human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def draw_memory_plan(data: dict, path: str | os.PathLike) -> Path:
    """Draws ``memory_plan_data``'s result: per buffer, each planned tensor as
    a rectangle over the instructions it is live (x) and its bytes (y)."""
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch, Rectangle

    n = data["num_instructions"]
    buffers = sorted({t["buffer"] for t in data["tensors"]}) or [1]
    width = min(20.0, 8.0 + 0.06 * n)
    fig = Figure(figsize=(width, 3.8 * len(buffers)), layout="constrained")
    axes = fig.subplots(len(buffers), 1, squeeze=False)[:, 0]
    for ax, b in zip(axes, buffers):
        size = data["buffers"][b] if b < len(data["buffers"]) else 0
        tensors = [t for t in data["tensors"] if t["buffer"] == b]
        top = max([size] + [t["offset"] + t["nbytes"] for t in tensors] + [1])
        span = n + 2.2  # the x range shown, in instructions
        for t in tensors:
            x0, x1 = t["first"] - 0.45, t["last"] + 0.45
            # A few-byte tensor still shows as a sliver.
            height = max(t["nbytes"], 0.006 * top)
            ax.add_patch(Rectangle((x0, t["offset"]), x1 - x0, height,
                                   facecolor=_KIND_COLORS.get(t["kind"], "#cccccc"),
                                   edgecolor="#1b2631", linewidth=0.5, alpha=0.9))
            # Name the tensors that have room for it (about 4.5 pt per character).
            chars = int((x1 - x0) / span * width * 0.8 * 72 / 4.5)
            if chars >= 6 and t["nbytes"] >= 0.05 * top:
                label = t["label"] if len(t["label"]) <= chars else t["label"][: chars - 1] + "…"
                ax.text((x0 + x1) / 2, t["offset"] + t["nbytes"] / 2, label,
                        ha="center", va="center", fontsize=7, clip_on=True)
        ax.set_xlim(-1.6, n + 0.6)
        ax.set_ylim(0, top * 1.02)
        ax.set_xlabel("instruction (-1: inputs set, "
                      f"{n}: outputs read)")
        ax.set_ylabel("offset in buffer (bytes)")
        title = f"method '{data['method']}': buffer {b}, {_human(size)} planned"
        if b == 1 and size:
            bound = data["lower_bound"]
            title += f"; lower bound {_human(bound)} ({100 * bound / size:.0f}% of the plan)"
        ax.set_title(title, fontsize=10)
        ax.grid(True, axis="y", linewidth=0.3)
    kinds = sorted({t["kind"] for t in data["tensors"]})
    if kinds:
        axes[0].legend(handles=[Patch(color=_KIND_COLORS[k], label=k) for k in kinds],
                       loc="upper left", bbox_to_anchor=(1.005, 1.0), fontsize=8)
    fig.savefig(path, dpi=110)
    return Path(path)


def plot_memory_plan(program: Any, path: str | os.PathLike, method: str = "forward") -> Path:
    """The memory plan of ``method`` as an image (PNG, SVG or PDF by ``path``'s
    suffix): tensors as rectangles over instruction (x) and offset (y).
    ``program``: an ``ExecutorchProgramManager``, a ``BundledProgram``,
    ``.pte``/``.bpte`` bytes or a path."""
    return draw_memory_plan(memory_plan_data(program, method), path)


def graph_dot(program: Any, method: str = "forward") -> str:
    """The method's graph as Graphviz DOT text (inputs, one node per
    instruction with its operator, node name and source line, outputs)."""
    from ember import _C

    return _C.program_graph_dot(_source(program), method)


def plot_graph(program: Any, path: str | os.PathLike, method: str = "forward") -> Path:
    """The method's graph drawn by Graphviz's ``dot`` (format by ``path``'s
    suffix: svg, png, pdf)."""
    dot = shutil.which("dot")
    if dot is None:
        raise RuntimeError(
            "Graphviz's dot is not installed (Debian: apt-get install graphviz); "
            "graph_dot() gives the DOT text"
        )
    fmt = Path(path).suffix.lstrip(".") or "svg"
    subprocess.run([dot, f"-T{fmt}", "-o", os.fspath(path)], input=graph_dot(program, method),
                   text=True, check=True, capture_output=True)
    return Path(path)


def _all_trace_events(trace: Any) -> list[dict]:
    from ember.devtools.profile_file import load_trace

    if not isinstance(trace, list):
        trace = load_trace(trace)
    events = trace.get("traceEvents", []) if isinstance(trace, dict) else list(trace)
    return [e for e in events if e.get("ph") == "X"]


def _trace_events(trace: Any) -> list[dict]:
    """The instructions' events (not the events delegates log inside them)."""
    return [e for e in _all_trace_events(trace) if e.get("cat") != "delegate_event"]


def profile_summary(trace: Any) -> list[tuple[str, float, int]]:
    """Per operator of a profile (the profile file ``ember-run --profile-out
    FILE.eprof`` writes, or the Chrome trace of ``--profile FILE.json``):
    (name, ms per run, calls per run), slowest first."""
    events = _trace_events(trace)
    if not events:
        raise ValueError("the trace holds no events (was it written by ember-run --profile?)")
    per_instruction: dict[int, int] = {}
    for e in events:
        k = e.get("args", {}).get("instruction", -1)
        per_instruction[k] = per_instruction.get(k, 0) + 1
    runs = max(1, min(per_instruction.values()))
    totals: dict[str, list[float]] = {}
    for e in events:
        row = totals.setdefault(e["name"], [0.0, 0])
        row[0] += e["dur"]
        row[1] += 1
    rows = [(name, us / 1000 / runs, round(calls / runs)) for name, (us, calls) in totals.items()]
    return sorted(rows, key=lambda r: -r[1])


def plot_profile(
    trace: Any, path: str | os.PathLike, top: int = 15, program: Any = None
) -> Path:
    """A chart of a profile (the profile file ``ember-run --profile-out
    FILE.eprof`` writes, or the Chrome trace of ``--profile FILE.json``, as a
    path or the loaded JSON): time per run of the ``top`` slowest operators
    with their share, and one run's timeline (a delegate's own events drawn
    inside its bar). With ``program``, a profile of another program is
    refused (``ValueError``)."""
    from matplotlib.figure import Figure

    if isinstance(trace, str | os.PathLike | bytes) or program is not None:
        from ember.devtools.profile_file import load_trace

        trace = load_trace(trace, program)
    rows = profile_summary(trace)
    inner = [e for e in _all_trace_events(trace) if e.get("cat") == "delegate_event"]
    events = _trace_events(trace)
    total = sum(r[1] for r in rows)
    shown = rows[:top]
    fig = Figure(figsize=(11, 3 + 0.32 * len(shown)), layout="constrained")
    bars, timeline = fig.subplots(1, 2, width_ratios=[1, 1.3])
    names = [r[0] for r in shown][::-1]
    # Microseconds for fast programs, milliseconds otherwise.
    scale, unit = (1000.0, "µs") if total < 1.0 else (1.0, "ms")
    ms = [r[1] * scale for r in shown][::-1]
    bars.barh(names, ms, color="#5dade2")
    for y, (value, row) in enumerate(zip(ms, shown[::-1])):
        share = 100 * value / (total * scale) if total else 0
        bars.text(value, y, f" {share:.0f}%  x{row[2]}", va="center", fontsize=7)
    bars.set_xlabel(f"{unit} per run")
    bars.set_title(f"time per operator ({total * scale:.4g} {unit} per run in instructions)",
                   fontsize=10)
    bars.tick_params(axis="y", labelsize=7)
    bars.set_xlim(0, max(ms + [1e-9]) * 1.35)
    # One run: the events up to the first instruction's second start.
    first = events[0].get("args", {}).get("instruction")
    run = [events[0]]
    for e in events[1:]:
        if e.get("args", {}).get("instruction") == first:
            break
        run.append(e)
    t0 = run[0]["ts"]
    row_of = {name: i for i, name in enumerate(names)}
    other = len(names)
    labels = names + (["(other)"] if any(e["name"] not in row_of for e in run) else [])
    for e in run:
        y = row_of.get(e["name"], other)
        timeline.broken_barh([(e["ts"] - t0, max(e["dur"], 1e-3))], (y - 0.4, 0.8),
                             facecolors="#ec7063" if e.get("cat") == "delegate" else "#58d68d")
        if e.get("cat") == "delegate":  # its own events, as thin dark bars inside
            end = e["ts"] + e["dur"]
            for d in inner:
                if d.get("args", {}).get("instruction") == e.get("args", {}).get("instruction") \
                        and e["ts"] <= d["ts"] <= end:
                    timeline.broken_barh([(d["ts"] - t0, max(d["dur"], 1e-3))], (y - 0.15, 0.3),
                                         facecolors="#7b241c")
    timeline.set_yticks(range(len(labels)), labels, fontsize=7)
    timeline.set_xlabel("µs from the run's start")
    timeline.set_title("one run (green: kernels, red: delegates)", fontsize=10)
    fig.savefig(path, dpi=110)
    return Path(path)
