"""Scalars -> tensors: give the runtime tensor operands, not Python numbers.

``aten.add.Tensor(x, 1)`` and ``aten.gt.Scalar(x, 0)`` become
``aten.add.Tensor(x, c_scalar_0)`` and ``aten.gt.Tensor(x, c_scalar_1)``,
where each ``c_scalar_N`` is a lifted 0-dim constant whose dtype is the
promoted type of the op's first tensor and the number, so results keep the
exact dtype and shape; a rewrite that would change either is not made.
A symbolic number (a SymInt such as a dynamic sequence length, added to a
tensor: a KV cache's ``cumulative_length += n``) is known only at run time:
it becomes ``scalar_tensor(n)``, computed in the program.
Inside a branch of control flow (which cannot lift constants) each number
becomes a ``full`` of that 0-dim tensor at the top of the branch instead.
"""

from __future__ import annotations

from typing import Any

import torch
from torch._ops import OpOverload
from torch._guards import detect_fake_mode
from torch.export import ExportedProgram

from ember.exir.lifted_constants import LiftedConstants
from ember.exir.operator.schema import bind, unbind

_NUMBER = (bool, int, float)


def _is_tensor_slot(arg: torch._C.Argument) -> bool:
    t = arg.type
    if isinstance(t, torch.OptionalType):
        t = t.getElementType()
    return isinstance(t, torch.TensorType)


def _tensor_overload(op: OpOverload) -> OpOverload:
    """``gt.Scalar`` -> ``gt.Tensor``, ``pow.Tensor_Scalar`` -> ``pow.Tensor_Tensor``."""
    name = op._overloadname
    if "Scalar" not in name:
        return op
    packet = op.overloadpacket
    twin = name.replace("Scalar", "Tensor")
    if twin not in packet.overloads():
        return op
    candidate = getattr(packet, twin)
    old, new = op._schema.arguments, candidate._schema.arguments
    if len(old) != len(new):
        return op
    for a, b in zip(old, new, strict=False):
        same = str(a.type) == str(b.type)
        if a.name != b.name or not (same or (str(a.type) == "number" and _is_tensor_slot(b))):
            return op
    return candidate


def _symbolic_sample(value: Any) -> Any:
    """A plain number of the kind of a symbolic value node (SymInt -> 1, ...), or None."""
    if not isinstance(value, torch.fx.Node):
        return None
    val = value.meta.get("val")
    if isinstance(val, torch.SymBool):
        return True
    if isinstance(val, torch.SymInt):
        return 1
    if isinstance(val, torch.SymFloat):
        return 1.0
    return None


class _Lifter:
    def __init__(self, ep: ExportedProgram) -> None:
        self.inputs = LiftedConstants(ep)
        self.fake_mode = self.inputs.fake_mode
        self.lifted: dict[tuple[Any, ...], torch.fx.Node] = {}

    def constant(self, value: Any, dtype: torch.dtype) -> torch.fx.Node:
        key = (type(value), value, dtype)
        if key not in self.lifted:
            self.lifted[key] = self.inputs.add(torch.tensor(value, dtype=dtype), "scalar")
        return self.lifted[key]

    def at_run_time(self, before: torch.fx.Node, value: torch.fx.Node,
                    dtype: torch.dtype) -> torch.fx.Node:
        """``scalar_tensor(value)``: a symbolic number as a 0-dim tensor, computed
        in the program just before ``before``."""
        with before.graph.inserting_before(before):
            node = before.graph.call_function(
                torch.ops.aten.scalar_tensor.default, (value,), {"dtype": dtype}
            )
        with self.fake_mode:
            node.meta["val"] = torch.empty((), dtype=dtype)
        return node

    def rewrite(self, node: torch.fx.Node) -> None:
        op = _tensor_overload(node.target)
        bound = bind(node.target._schema, node.args, node.kwargs)
        first = next((v for v in bound.values() if isinstance(v, torch.fx.Node)
                      and isinstance(v.meta.get("val"), torch.Tensor)), None)
        if first is None:
            return
        numbers = {
            a.name: bound[a.name]
            for a in op._schema.arguments
            if _is_tensor_slot(a) and isinstance(bound.get(a.name), _NUMBER)
        }
        symbolic = {
            a.name: bound[a.name]
            for a in op._schema.arguments
            if _is_tensor_slot(a) and _symbolic_sample(bound.get(a.name)) is not None
        }
        if not numbers and not symbolic:
            return
        dtypes = {k: torch.result_type(first.meta["val"], v) for k, v in numbers.items()}
        dtypes.update({k: torch.result_type(first.meta["val"], _symbolic_sample(v))
                       for k, v in symbolic.items()})
        if not self._same_result(node, op, bound, dtypes):
            return
        for name, value in numbers.items():
            bound[name] = self.constant(value, dtypes[name])
        for name, value in symbolic.items():
            bound[name] = self.at_run_time(node, value, dtypes[name])
        node.target = op
        node.args, node.kwargs = unbind(op._schema, bound)

    def _same_result(
        self,
        node: torch.fx.Node,
        op: OpOverload,
        bound: dict[str, Any],
        dtypes: dict[str, torch.dtype],
    ) -> bool:
        with self.fake_mode:
            fake = {
                k: (v.meta["val"] if isinstance(v, torch.fx.Node) else v) for k, v in bound.items()
            }
            for name, dtype in dtypes.items():
                fake[name] = torch.empty((), dtype=dtype)
            args, kwargs = unbind(op._schema, fake)
            result = op(*args, **kwargs)
        old = node.meta["val"]
        return (
            isinstance(result, torch.Tensor)
            and result.dtype == old.dtype
            and result.shape == old.shape
        )


def scalars_to_tensors(ep: ExportedProgram) -> ExportedProgram:
    """Return ``ep`` with number operands of tensor ops lifted to constants."""
    lifter = _Lifter(ep)
    for node in list(ep.graph.nodes):
        if node.op == "call_function" and isinstance(node.target, OpOverload):
            lifter.rewrite(node)
    if lifter.lifted:
        return lifter.inputs.program()
    ep.graph_module.recompile()  # symbolic numbers may have become scalar_tensor calls
    return ep


class _InBranch(_Lifter):
    """Numbers become ``aten.full([], value)`` nodes at the top of the branch."""

    def __init__(self, gm: torch.fx.GraphModule) -> None:
        self.gm = gm
        self.fake_mode = detect_fake_mode(
            [n.meta["val"] for n in gm.graph.nodes if "val" in n.meta]
        )
        self.lifted = {}

    def constant(self, value: Any, dtype: torch.dtype) -> torch.fx.Node:
        key = (type(value), value, dtype)
        if key not in self.lifted:
            anchor = next(n for n in self.gm.graph.nodes if n.op != "placeholder")
            with self.gm.graph.inserting_before(anchor):
                node = self.gm.graph.call_function(
                    torch.ops.aten.full.default, ([], value), {"dtype": dtype}
                )
            with self.fake_mode:
                node.meta["val"] = torch.full([], value, dtype=dtype)
            self.lifted[key] = node
        return self.lifted[key]


def scalars_to_tensors_in_branch(gm: torch.fx.GraphModule) -> None:
    """``scalars_to_tensors`` for a branch of control flow, in place."""
    rewriter = _InBranch(gm)
    for node in list(gm.graph.nodes):
        if node.op == "call_function" and isinstance(node.target, OpOverload):
            rewriter.rewrite(node)
    gm.recompile()
