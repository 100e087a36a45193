"""Numerical debugging (#19): run a program on the C++ runtime capturing
every instruction's outputs, run the same graph in eager capturing every
node's output, join them by FX node name (the debug handle each instruction
carries in ``Chain.stacktrace``) and report the first op whose output
diverges beyond a tolerance, with its model source line.

The reference is the edge program (``to_edge(...)`` or
``to_edge_transform_and_lower(...)``) run by ``torch.fx.Interpreter`` after
the graph-level folds ``to_executorch`` makes (zero padding and batch norm
into convolutions, convolution + activation and quantized-op fusion,
constant folding), so each
instruction has the node it was made from, computing the same thing. A
delegate is one instruction: its outputs are compared as one unit with the
delegate call's eager result (which runs the lowered module's original
graph); what happens inside it is not seen."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

__all__ = [
    "NodeGap",
    "NumericGapReport",
    "capture_intermediate_outputs",
    "compare_with_eager",
    "eager_intermediate_outputs",
]


def _program_source(program: Any) -> bytes | str:
    from ember.devtools.plots import _source

    return _source(program)


def capture_intermediate_outputs(
    program: Any, inputs: Sequence[Any], method: str = "forward"
) -> tuple[list[Any], dict[int, list[Any]]]:
    """Runs ``method`` of ``program`` (a program manager, ``.pte`` bytes or a
    path) once on the C++ runtime: ``(outputs, {instruction: [outputs of that
    instruction]})``, each instruction's outputs copied right after it ran.
    An instruction that ran more than once (a loop) keeps its last run's."""
    from ember.runtime import Runtime

    source = _program_source(program)
    loaded = Runtime.get().load_program(source)
    try:
        outputs, captured = loaded.load_method(method).execute_capturing(
            [_clone(x) for x in inputs])
    except ValueError as e:
        # A loop ran instructions more than once: again, on a fresh instance
        # (its own mutable buffers), with the storage the run asked for.
        needed = re.search(r"capacity_bytes=(\d+)", str(e))
        if needed is None:
            raise
        outputs, captured = loaded.load_method(method).execute_capturing(
            [_clone(x) for x in inputs], capacity_bytes=int(needed.group(1)))
    per_instruction: dict[int, list[Any]] = {}
    for instruction, index, value in captured:
        values = per_instruction.setdefault(instruction, [])
        if index == 0:
            values.clear()  # a repeated instruction: its latest run
        while len(values) <= index:
            values.append(None)
        values[index] = value
    return outputs, per_instruction


def _clone(x: Any) -> Any:
    return x.clone() if isinstance(x, torch.Tensor) else x


def _lifted_arguments(ep: torch.export.ExportedProgram, inputs: Sequence[Any]) -> list[Any]:
    """The graph's placeholders in order: parameters, buffers and constants
    from the program, then the user's inputs."""
    args: list[Any] = []
    user = iter(inputs)
    for spec in ep.graph_signature.input_specs:
        kind = spec.kind.name
        if kind == "USER_INPUT":
            args.append(_clone(next(user)))
        elif spec.target in ep.state_dict:
            args.append(ep.state_dict[spec.target])
        elif spec.target in ep.constants:
            args.append(ep.constants[spec.target])
        else:
            raise ValueError(f"input '{spec.arg.name}' ({kind}) has no value in the program")
    return args


class _Recorder(torch.fx.Interpreter):
    """Every call node's output by name, the nodes of control flow's
    branches and loop bodies (cond, while_loop, map) included: while the
    graph runs, each subgraph module runs under a recording interpreter too,
    however the control-flow op calls it (the branch taken; a loop body each
    iteration, the last one's outputs kept, as the runtime's capture keeps).

    Not recorded (``unseen``): the control-flow nodes themselves (the
    instructions named after them compute a condition or move loop values)
    and node names found in more than one graph (a branch's ``add`` and the
    method's ``add``): an instruction names its node, not its graph."""

    def __init__(self, gm: torch.fx.GraphModule, values: dict[str, Any] | None = None,
                 top: bool = True) -> None:
        from ember.exir.delegate import executorch_call_delegate

        super().__init__(gm)
        self.values: dict[str, Any] = {} if values is None else values
        self._delegate = executorch_call_delegate
        self.unseen: set[str] = set()
        self.ambiguous: set[str] = set()
        self.subgraphs = [m for name, m in gm.named_modules()
                          if name and isinstance(m, torch.fx.GraphModule)] if top else []
        if top:
            graphs = [gm, *self.subgraphs]
            seen: set[str] = set()
            for g in graphs:
                for n in g.graph.nodes:
                    if n.op != "call_function":
                        continue
                    if n.name in seen:
                        self.ambiguous.add(n.name)
                    seen.add(n.name)
            self.unseen |= self.ambiguous

    def run(self, *args: Any, **kwargs: Any) -> Any:
        # Each subgraph module records its nodes whenever it is called.
        for sub in self.subgraphs:
            sub.forward = self._recording(sub)
        try:
            return super().run(*args, **kwargs)
        finally:
            for sub in self.subgraphs:
                del sub.forward

    def _recording(self, sub: torch.fx.GraphModule) -> Any:
        def forward(*args: Any) -> Any:
            inner = _Recorder(sub, self.values, top=False)
            inner.unseen = self.unseen
            return inner.run(*args)

        return forward

    def run_node(self, n: torch.fx.Node) -> Any:
        result = super().run_node(n)
        if n.op != "call_function":
            return result
        if isinstance(n.target, torch._ops.HigherOrderOperator) and n.target is not self._delegate:
            self.unseen.add(n.name)
        elif n.name not in self.unseen:
            self.values[n.name] = _detached(result)
        return result


def _detached(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, list | tuple):
        return type(value)(_detached(v) for v in value)
    return value


def eager_intermediate_outputs(
    ep: torch.export.ExportedProgram, inputs: Sequence[Any]
) -> tuple[list[Any], dict[str, Any]]:
    """Runs ``ep``'s graph in eager (``torch.fx.Interpreter``) on ``inputs``:
    ``(outputs, {node name: its output})`` for every call node of the
    method's graph and of the control-flow branches and loop bodies that ran
    (a loop body's last iteration), but not the control-flow nodes
    themselves nor node names found in more than one graph."""
    outputs, values, _, _ = _run_eager(ep, inputs)
    return outputs, values


def _run_eager(
    ep: torch.export.ExportedProgram, inputs: Sequence[Any]
) -> tuple[list[Any], dict[str, Any], set[str], set[str]]:
    recorder = _Recorder(ep.graph_module)
    with torch.no_grad():
        result = recorder.run(*_lifted_arguments(ep, inputs))
    leaves = list(result) if isinstance(result, list | tuple) else [result]
    kinds = [s.kind.name for s in ep.graph_signature.output_specs]
    outputs = [v for v, k in zip(leaves, kinds, strict=False) if k == "USER_OUTPUT"]
    return outputs, recorder.values, recorder.unseen, recorder.ambiguous


def reference_program(
    reference: Any, method: str = "forward", config: Any = None
) -> torch.export.ExportedProgram:
    """The eager graph to compare with: an ``EdgeProgramManager``'s method
    (or an edge ``ExportedProgram``) after the graph-level passes of
    ``to_executorch`` (``config``'s, an ``ExecutorchBackendConfig``; the
    default one when None): its node names are the instructions'."""
    from ember.exir.config import ExecutorchBackendConfig
    from ember.exir.exported import copy_graph_module, rebuild
    from ember.exir.pipeline import executorch_passes, run_graph_passes
    from ember.exir.symbolic import SymbolBounds
    from ember.exir.verification.edge_verifier import EdgeDialectVerifier

    if hasattr(reference, "exported_program") and hasattr(reference, "to_executorch"):
        ep = reference.exported_program(method)
    elif isinstance(reference, torch.export.ExportedProgram):
        ep = reference
    else:
        raise TypeError(
            "reference: an EdgeProgramManager or an edge ExportedProgram (what to_executorch "
            f"was called on), got {type(reference).__name__}"
        )
    config = config or ExecutorchBackendConfig()
    gm = run_graph_passes(copy_graph_module(ep.graph_module), config.passes)
    ep = rebuild(ep, gm, verifier=EdgeDialectVerifier)
    for name, program_pass in executorch_passes(config, SymbolBounds(ep, method)):
        if name == "out variants":
            break
        ep = program_pass(ep)
    return ep


@dataclass
class NodeGap:
    """One instruction's outputs against eager's at its node.

    ``max_abs_error``: the largest |actual - expected|; ``scale``: the
    largest |expected| (the output's magnitude); ``rel_error`` =
    max_abs_error / scale. An output diverges when ``max_abs_error >
    max(atol, rtol * scale)``: relative to the whole tensor's magnitude, so
    rounding noise on a near-zero element does not fail it, and a tensor of
    tiny values is still checked (``atol`` only keeps an all-zero output from
    failing on noise far below any real error). Integers and bools compare
    exactly."""

    instruction: int
    kind: str
    op: str
    node: str
    source: str
    stack: list[dict] = field(default_factory=list)
    compared: bool = False
    passed: bool = True
    max_abs_error: float = 0.0
    rel_error: float = 0.0
    scale: float = 0.0
    note: str = ""

    @property
    def where(self) -> str:
        """``model.py:42 in forward: y = self.fc(x)``, or the node name."""
        if self.stack:
            f = self.stack[-1]
            return f"{f['filename']}:{f['lineno']} in {f['name']}: {f['context']}".rstrip(": ")
        return self.source or self.node


def _float64(t: torch.Tensor) -> torch.Tensor:
    if t.is_complex():
        return torch.view_as_real(t).to(torch.float64)
    return t.to(torch.float64)


def _gap(actual: Any, expected: Any, rtol: float, atol: float) -> tuple[bool, float, float, str]:
    """(passed, max abs error, scale, note) for one output."""
    if not isinstance(expected, torch.Tensor) or not isinstance(actual, torch.Tensor):
        if isinstance(expected, torch.Tensor) and expected.numel() == 1:
            expected = expected.item()
        if isinstance(actual, torch.Tensor) and actual.numel() == 1:
            actual = actual.item()
        try:
            a, e = float(actual), float(expected)
        except (TypeError, ValueError):
            ok = actual == expected
            return ok, 0.0 if ok else math.inf, 0.0, "" if ok else f"{actual!r} vs {expected!r}"
        err = abs(a - e)
        return err <= max(atol, rtol * abs(e)), err, abs(e), ""
    if tuple(actual.shape) != tuple(expected.shape):
        return False, math.inf, 0.0, f"shape {list(actual.shape)} vs {list(expected.shape)}"
    if actual.dtype != expected.dtype:
        note = f"dtype {actual.dtype} vs {expected.dtype}"
        return False, math.inf, 0.0, note
    if actual.numel() == 0:
        return True, 0.0, 0.0, ""
    a, e = _float64(actual), _float64(expected)
    both_nan = torch.isnan(a) & torch.isnan(e)
    same_inf = torch.isinf(e) & (a == e)
    diff = (a - e).abs()
    diff = torch.where(both_nan | same_inf, torch.zeros_like(diff), diff)
    diff = torch.where(torch.isnan(diff), torch.full_like(diff, math.inf), diff)
    finite = e[torch.isfinite(e)]
    scale = float(finite.abs().max()) if finite.numel() else 0.0
    err = float(diff.max())
    if not actual.dtype.is_floating_point and not actual.is_complex():
        return err == 0, err, scale, ""  # integers and bools compare exactly
    return err <= max(atol, rtol * scale), err, scale, ""


@dataclass
class NumericGapReport:
    """Per instruction, its outputs against eager's (``rows``, instruction
    order); ``first_divergence``: the first that fails, or None."""

    method: str
    rtol: float
    atol: float
    rows: list[NodeGap]
    outputs_passed: bool
    outputs_max_abs_error: float

    @property
    def first_divergence(self) -> NodeGap | None:
        return next((r for r in self.rows if r.compared and not r.passed), None)

    @property
    def passed(self) -> bool:
        return self.first_divergence is None and self.outputs_passed

    def to_dataframe(self) -> Any:
        from ember.devtools.inspector import _pandas

        pd = _pandas()
        return pd.DataFrame(
            [
                {
                    "instruction": r.instruction,
                    "kind": r.kind,
                    "op": r.op,
                    "node": r.node,
                    "source": r.source,
                    "compared": r.compared,
                    "passed": r.passed,
                    "max_abs_error": r.max_abs_error,
                    "rel_error": r.rel_error,
                    "scale": r.scale,
                    "note": r.note,
                }
                for r in self.rows
            ]
        )

    def __str__(self) -> str:
        lines = [(f"method '{self.method}': each instruction against eager (diverges when "
                  f"max |error| > max({self.atol:g}, {self.rtol:g} * max |expected|))")]
        lines.append(f"{'#':>5}  {'op':<34} {'node':<38} {'rel error':>10}  result")
        for r in self.rows:
            if not r.compared:
                result = f"not compared ({r.note})"
                rel = ""
            else:
                result = "ok" if r.passed else "DIVERGES"
                rel = f"{r.rel_error:.3g}"
                if r.note:
                    result += f" ({r.note})"
            lines.append(f"{r.instruction:>5}  {r.op[:34]:<34} {r.node[:38]:<38} {rel:>10}  {result}")
        first = self.first_divergence
        if first is None:
            lines.append("no instruction diverges" + (
                "" if self.outputs_passed else
                f"; but the outputs differ (max |error| {self.outputs_max_abs_error:.3g})"))
        else:
            lines.append(
                f"first divergence: instruction {first.instruction} {first.op} (node "
                f"{first.node}) at {first.where}: max |error| {first.max_abs_error:.3g}, "
                f"{first.rel_error:.3g} of the output's magnitude {first.scale:.3g}"
            )
        return "\n".join(lines)


def compare_with_eager(
    reference: Any,
    program: Any,
    inputs: Sequence[Any],
    method: str = "forward",
    rtol: float = 1e-3,
    atol: float = 1e-9,
    config: Any = None,
) -> NumericGapReport:
    """Runs ``program`` (an ``ExecutorchProgramManager``, ``.pte`` bytes or a
    path) on the C++ runtime capturing every instruction's outputs, and
    ``reference`` (the ``EdgeProgramManager`` or edge ``ExportedProgram``
    ``to_executorch`` was called on, with the same ``config``) in eager
    capturing every node's; compares them node by node (``NodeGap``).
    Instructions ``to_executorch`` added (copies, dim-order changes) have no
    eager node and are listed as not compared."""
    from ember import _C

    ep = reference_program(reference, method, config)
    # Nodes of control flow's branches and loop bodies.
    cf_nodes = {n.name for name, m in ep.graph_module.named_modules()
                if name and isinstance(m, torch.fx.GraphModule)
                for n in m.graph.nodes if n.op == "call_function"}
    eager_outputs, eager, unseen, ambiguous = _run_eager(ep, inputs)
    outputs, captured = capture_intermediate_outputs(program, inputs, method)
    rows: list[NodeGap] = []
    for ins in _C.instruction_table(_program_source(program), method):
        if ins["kind"] not in ("kernel", "delegate"):
            continue
        row = NodeGap(ins["instruction"], ins["kind"], ins["op"], ins["node"], ins["source"],
                      list(ins["stack"]))
        rows.append(row)
        if not row.node:
            row.note = "no node name in the program (emit_stacktrace=False)"
            continue
        if row.node in ambiguous:
            row.note = (f"control flow: node name '{row.node}' is in more than one graph "
                        "(a branch or loop body and another)")
            continue
        if row.node in unseen:
            row.note = "control flow: its condition or loop bookkeeping"
            continue
        actual = captured.get(row.instruction)
        in_branch = row.node in cf_nodes
        if actual is None:
            row.note = "did not run (a branch not taken)" if in_branch else "did not run"
            continue
        if row.node not in eager:
            row.note = ("ran on the runtime, not in eager (a branch eager did not take)"
                        if in_branch else "no eager node: made by to_executorch")
            continue
        expected = eager[row.node]
        expected = list(expected) if isinstance(expected, list | tuple) else [expected]
        row.compared = True
        notes = []
        for i, value in enumerate(actual):
            if value is None or i >= len(expected):
                continue
            ok, err, scale, note = _gap(value, expected[i], rtol, atol)
            rel = err / scale if scale > 0 else (0.0 if err == 0 else math.inf)
            if i == 0 or rel > row.rel_error:
                row.max_abs_error, row.scale, row.rel_error = err, scale, rel
            row.passed &= ok
            if note:
                notes.append(f"output {i}: {note}" if len(actual) > 1 else note)
        row.note = "; ".join(notes)
        if row.kind == "delegate":
            row.note = (row.note + "; " if row.note else "") + "delegate: compared as one unit"
    outputs_ok, worst = True, 0.0
    for a, e in zip(outputs, eager_outputs, strict=False):
        ok, err, _, _ = _gap(a, e, rtol, atol)
        outputs_ok &= ok
        worst = max(worst, err)
    return NumericGapReport(method, rtol, atol, rows, outputs_ok, worst)
