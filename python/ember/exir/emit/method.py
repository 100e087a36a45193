"""Emit one method (an out-variant ExportedProgram + its memory plan) as an
ExecutionPlan in FlatBuffers JSON form."""

from __future__ import annotations

import operator
import os
import re
from typing import Any

import torch
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind
from torch.utils import _pytree as pytree

from ember.exir.control_flow import (
    branch_outputs,
    branches,
    is_cond,
    is_control_flow,
    is_while,
    operands,
    subgraph_operands,
    subgraphs,
)
from ember.exir.delegate import is_delegate_call
from ember.exir.emit.arguments import emit_argument
from ember.exir.emit.constants import ConstantBuffers
from ember.exir.emit.delegates import DelegateBlobs, DelegateTable
from ember.exir.emit.external_constants import ExternalConstants, external_tag
from ember.exir.emit.values import ValueTable
from ember.exir.memory import alloc
from ember.exir.operator.schema import (
    bind,
    is_out_argument,
    out_argument_names,
    with_defaults,
)
from ember.exir.passes.memory_planning import MemoryPlan, planned_spec
from ember.exir.storage import Ref, flat_refs, out_nodes, resolve
from ember.exir.sym_ops import is_sym_op, prim_operator
from ember.exir.symbolic import SymbolBounds


class _MethodEmitter:
    def __init__(
        self,
        name: str,
        ep: ExportedProgram,
        plan: MemoryPlan,
        constants: ConstantBuffers,
        blobs: DelegateBlobs,
        mutable_data: ConstantBuffers,
        external: ExternalConstants,
        external_setting: Any = False,
    ) -> None:
        self.name = name
        self.external = external
        self.external_setting = external_setting
        self.ep = ep
        self.plan = plan
        self.constants = constants
        self.mutable_data = mutable_data
        self.delegates = DelegateTable(blobs)
        self.table = ValueTable(SymbolBounds(ep, name).shape)
        self.env: dict[torch.fx.Node, Any] = {}
        self.operators: list[dict[str, str]] = []
        self.instructions: list[dict[str, Any]] = []
        self.inputs: list[int] = []
        self.outputs: list[int] = []
        self.stacktrace: list[dict[str, Any]] = []
        self.current: torch.fx.Node | None = None
        self.specs = {
            s.arg.name: s for s in ep.graph_signature.input_specs if hasattr(s.arg, "name")
        }

    def add_instruction(self, instruction: dict[str, Any]) -> None:
        """Appends an instruction and, beside it, where it comes from: the model's
        source frames of the node being emitted and the node's name (Chain.stacktrace)."""
        self.instructions.append(instruction)
        self.stacktrace.append({"items": source_frames(self.current)})

    def index_of(self, node: torch.fx.Node) -> int:
        index = self.env[node]
        if not isinstance(index, int):
            raise TypeError(f"{node.name} is not a single tensor value")
        return index

    def run(self) -> None:
        for node in self.ep.graph.nodes:
            if node.op == "placeholder":
                self.env[node] = self.placeholder(node)
            elif node.op == "output":
                # The user outputs; mutated buffers' new values stay inside.
                kinds = [s.kind.name for s in self.ep.graph_signature.output_specs]
                leaves = pytree.tree_leaves(node.args[0])
                self.outputs = [
                    self.output_value(x)
                    for x, kind in zip(leaves, kinds, strict=True)
                    if kind not in ("BUFFER_MUTATION", "USER_INPUT_MUTATION")
                ]
            else:
                self.emit_node(node)

    def emit_node(self, node: torch.fx.Node) -> None:
        """Everything but placeholders and the output (which differ between
        the method's graph and a branch of its control flow)."""
        outer, self.current = self.current, node
        try:
            self._emit_node(node)
        finally:
            self.current = outer

    def _emit_node(self, node: torch.fx.Node) -> None:
        if node.target is alloc:
            self.env[node] = self.allocation(node)
        elif node.op == "get_attr" and node.users and all(is_control_flow(u) for u in node.users):
            pass  # a branch of control flow, emitted inline by cond_call
        elif node.op == "get_attr":
            self.env[node] = self.delegates.index(self.ep.graph_module, node)
        elif is_cond(node):
            self.env[node] = self.cond_call(node)
        elif is_while(node):
            self.env[node] = self.while_call(node)
        elif node.target is operator.getitem:
            self.env[node] = self.env[node.args[0]][node.args[1]]
        elif is_delegate_call(node):
            self.env[node] = self.delegate_call(node)
        elif node.op == "call_function" and is_sym_op(node.target):
            self.env[node] = self.sym_call(node)
        elif node.op == "call_function" and self.is_scalar_kernel(node):
            self.env[node] = self.scalar_kernel_call(node)
        elif node.op == "call_function":
            self.env[node] = self.kernel_call(node)
        else:
            raise NotImplementedError(f"cannot emit node {node.name} ({node.op})")

    def placeholder(self, node: torch.fx.Node) -> int:
        spec = self.specs[node.name]
        val = node.meta["val"]
        if spec.kind == InputKind.USER_INPUT:
            if not isinstance(val, torch.Tensor):
                raise NotImplementedError(f"input {node.name}: only tensor inputs are supported")
            # Unplanned (MemoryPlanningPass(alloc_graph_input=False)): the runtime
            # borrows the caller's tensor.
            index = self.planned_tensor(val, Ref(node), required=False)
            self.inputs.append(index)
            return index
        if spec.kind in (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR):
            data = self.ep.state_dict.get(spec.target)
            if data is None:
                data = self.ep.constants[spec.target]
            planned = planned_spec(Ref(node))
            if planned is not None:
                # A mutable buffer: planned memory of its own, filled with its
                # initial value at load.
                return self.table.tensor(
                    data, data_buffer_idx=self.mutable_data.add(data),
                    offset=planned.offset, memory_id=planned.memory_id, contiguous=True,
                )
            # Stored in the layout the graph gives it: contiguous, or a permuted
            # view of another constant (folded transposes, passes/constant_fold.py).
            layout = node.meta.get("val")
            permuted = (isinstance(layout, torch.Tensor) and not layout.is_contiguous()
                        and not data.is_contiguous() and data.stride() == layout.stride())
            order = [int(d) for d in data.dim_order()] if permuted else list(range(data.dim()))
            stored = data.permute(*order) if permuted else data
            tag = external_tag(self.external_setting, node)
            if tag is not None:
                key = self.external.add(tag, spec.target, self.name, stored.contiguous(), order)
                return self.table.tensor(data, contiguous=not permuted, external=key)
            return self.table.tensor(
                data, data_buffer_idx=self.constants.add(stored), contiguous=not permuted
            )
        raise NotImplementedError(
            f"input {node.name}: input kind {spec.kind.name} is not supported"
        )

    def jump_false(self, condition: int) -> dict[str, Any]:
        """A JumpFalse whose destination the caller fills in."""
        jump = {"instr_args_type": "JumpFalseCall",
                "instr_args": {"cond_value_index": condition, "destination_instruction": -1}}
        self.add_instruction(jump)
        return jump

    def move(self, source: int, target: int) -> None:
        self.add_instruction({"instr_args_type": "MoveCall",
                                  "instr_args": {"move_from": source, "move_to": target}})

    def emit_branch(self, branch: torch.fx.GraphModule, operands: list[Any]) -> list[int]:
        """A branch's instructions, inline; returns the values of its outputs."""
        inner = [n for n in branch.graph.nodes if n.op == "placeholder"]
        for placeholder, value in zip(inner, operands, strict=True):
            self.env[placeholder] = value
        for node in branch.graph.nodes:
            if node.op not in ("placeholder", "output"):
                self.emit_node(node)
        return [self.output_value(x) for x in branch_outputs(branch)]

    def to_bool(self, pred: Any) -> int:
        """A Bool value holding ``pred`` (a 1-element tensor, a SymBool, a bool)."""
        if isinstance(pred, torch.fx.Node) and isinstance(pred.meta.get("val"), torch.Tensor):
            condition = self.table.bool(False)  # written by _local_scalar_dense at run time
            self.call({"name": "aten::_local_scalar_dense", "overload": ""},
                      [self.index_of(pred), condition])
            return condition
        if isinstance(pred, torch.fx.Node):
            return self.index_of(pred)  # a SymBool computed by a scalar op
        return self.table.bool(bool(pred))

    def while_call(self, node: torch.fx.Node) -> list[int]:
        """``while_loop(cond, body, carried, additional)``: the condition, a jump
        past the loop when it is false, the body (which ends by copying its
        results into the carried values), a jump back."""
        condition_graph, body = subgraphs(node)
        values = [self.env[n] if isinstance(n, torch.fx.Node) else n
                  for n in subgraph_operands(node)]
        top = len(self.instructions)
        (pred,) = self.emit_branch(condition_graph, values)
        out_of_loop = self.jump_false(self.value_to_bool(pred))
        self.emit_branch(body, values)
        back = self.jump_false(self.table.bool(False))  # always jumps
        back["instr_args"]["destination_instruction"] = top
        out_of_loop["instr_args"]["destination_instruction"] = len(self.instructions)
        return [self.env[n] for n in node.args[2]]

    def value_to_bool(self, value: int) -> int:
        """A Bool from a value index of a 1-element tensor or a Bool."""
        if self.table.values[value]["val_type"] == "Bool":
            return value
        condition = self.table.bool(False)
        self.call({"name": "aten::_local_scalar_dense", "overload": ""}, [value, condition])
        return condition

    def cond_call(self, node: torch.fx.Node) -> list[int]:
        """``cond(pred, true, false, operands)`` as jumps and moves: each result
        is a value of its own that the branch taken moves its output into."""
        condition = self.to_bool(node.args[0])
        true, false = branches(node)
        values = [self.env[n] if isinstance(n, torch.fx.Node) else n for n in operands(node)]
        results = [self.cond_result(node, i) for i in range(len(branch_outputs(true)))]
        to_false = self.jump_false(condition)
        for out, result in zip(self.emit_branch(true, values), results, strict=True):
            self.move(out, result)
        to_end = self.jump_false(self.table.bool(False))  # always jumps
        to_false["instr_args"]["destination_instruction"] = len(self.instructions)
        for out, result in zip(self.emit_branch(false, values), results, strict=True):
            self.move(out, result)
        to_end["instr_args"]["destination_instruction"] = len(self.instructions)
        return results

    def cond_result(self, node: torch.fx.Node, index: int) -> int:
        """The value result ``index`` of a cond is moved into. Its tensor entry
        describes the result (and names the true branch's memory, which the
        verifier wants of any tensor); its data comes from the move."""
        val = node.meta["val"][index]
        if not isinstance(val, torch.Tensor):
            return self.result_value(val)
        true_ref = flat_refs(resolve(node)[index][0])[0]
        if planned_spec(true_ref) is None:
            raise NotImplementedError(
                f"{node.name}: result {index} of the true branch is a constant; return a "
                "computed value from both branches"
            )
        return self.planned_tensor(val, true_ref)

    def planned_tensor(self, val: torch.Tensor, ref: Ref, required: bool = True) -> int:
        """A tensor value placed where the memory plan put ``ref`` (``node.meta``)."""
        spec = planned_spec(ref)
        if spec is None:
            if required:
                raise RuntimeError(f"{ref.node.name} has no memory plan (spec)")
            return self.table.tensor(val)
        return self.table.tensor(val, offset=spec.offset, memory_id=spec.memory_id)

    def allocation(self, node: torch.fx.Node) -> Any:
        val = node.meta["val"]
        if isinstance(val, (list, tuple)):
            return [
                self.planned_tensor(v, Ref(node, i))
                for i, v in enumerate(val)
            ]
        return self.planned_tensor(val, Ref(node))

    def output_value(self, x: Any) -> int:
        if isinstance(x, torch.fx.Node):
            return self.index_of(x)
        return emit_argument(self.table, None, x, self.index_of)

    def operator_index(self, op: torch._ops.OpOverload | dict[str, str]) -> int:
        if isinstance(op, dict):
            entry = op
        else:
            entry = {"name": op._schema.name, "overload": op._overloadname}
        if entry not in self.operators:
            self.operators.append(entry)
        return self.operators.index(entry)

    def kernel_call(self, node: torch.fx.Node) -> Any:
        op = node.target
        if not isinstance(op, torch._ops.OpOverload):
            raise NotImplementedError(f"cannot emit a call to {op} (node {node.name})")
        args: list[int] = []
        outs: list[int] = []
        for arg, value in with_defaults(op._schema, bind(op._schema, node.args, node.kwargs)):
            if is_out_argument(arg):
                out = self.env[value]
                index = self.table.tensor_list(out) if isinstance(out, list) else out
                outs.append(index)
                args.append(index)
            else:
                args.append(emit_argument(self.table, arg.type, value, self.index_of))
        args.append(outs[0] if len(outs) == 1 else self.table.tensor_list(outs))
        self.add_instruction(
            {
                "instr_args_type": "KernelCall",
                "instr_args": {"op_index": self.operator_index(op), "args": args},
            }
        )
        result = [self.env[n] for n in out_nodes(node)]
        return result[0] if len(result) == 1 else result

    def result_value(self, val: Any) -> int:
        """A value a scalar op overwrites at run time (its tag too); the kind
        written in the file follows the op's result type."""
        if isinstance(val, (torch.SymBool, bool)):
            return self.table.bool(False)
        if isinstance(val, (torch.SymFloat, float)):
            return self.table.double(0.0)
        return self.table.int(0)

    def call(self, op: Any, args: list[int]) -> None:
        self.add_instruction(
            {
                "instr_args_type": "KernelCall",
                "instr_args": {"op_index": self.operator_index(op), "args": args},
            }
        )

    def sym_call(self, node: torch.fx.Node) -> int:
        """``mul = 2 * sym_size``: executorch_prim::mul.Scalar(2, sym_size, out)."""
        if node.kwargs:
            raise NotImplementedError(f"{node.name}: keyword arguments to {node.target}")
        args = [emit_argument(self.table, None, a, self.index_of) for a in node.args]
        out = self.result_value(node.meta.get("val"))
        self.call(prim_operator(node.target), [*args, out])
        return out

    @staticmethod
    def is_scalar_kernel(node: torch.fx.Node) -> bool:
        """An ATen op with no out variant that returns nothing or a scalar
        (``sym_size.int``, ``sym_numel``, ``_assert_scalar``, ``_local_scalar_dense``)."""
        op = node.target
        return (
            isinstance(op, torch._ops.OpOverload)
            and not out_argument_names(op)
            and len(op._schema.returns) <= 1
            and not any(isinstance(r.type, torch.TensorType) for r in op._schema.returns)
        )

    def scalar_kernel_call(self, node: torch.fx.Node) -> int | None:
        """Arguments in schema order, then the value receiving the result (if any).
        The operator is named as the runtime registers it: ``aten::sym_size.int``,
        ``aten::sym_numel``, ``aten::_assert_scalar`` (no overload for default)."""
        op = node.target
        args = [
            emit_argument(self.table, arg.type, value, self.index_of)
            for arg, value in with_defaults(op._schema, bind(op._schema, node.args, node.kwargs))
        ]
        out = None
        if op._schema.returns:
            out = self.result_value(node.meta.get("val"))
            args.append(out)
        self.call({"name": op._schema.name, "overload": op._schema.overload_name}, args)
        return out

    def delegate_call(self, node: torch.fx.Node) -> Any:
        """A DelegateCall: args are the delegate's inputs, then its outputs
        (planned tensors, one per result)."""
        delegate = self.env[node.args[0]]
        args = [emit_argument(self.table, None, a, self.index_of) for a in node.args[1:]]
        storage = resolve(node)
        val = node.meta["val"]
        if isinstance(storage, list):
            outs = [
                self.planned_tensor(v, r)
                for v, r in zip(val, storage, strict=True)
            ]
        else:
            outs = [self.planned_tensor(val, storage)]
        self.add_instruction(
            {
                "instr_args_type": "DelegateCall",
                "instr_args": {"delegate_index": delegate, "args": args + outs},
            }
        )
        return outs if isinstance(storage, list) else outs[0]


_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)\n\s*(.*)')
_MAX_FRAMES = 2  # the innermost user frames: enough to find the line, small in the file
_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep


def source_frames(node: torch.fx.Node | None) -> list[dict[str, Any]]:
    """Frames for Chain.stacktrace: the innermost frames of the model's source
    that made ``node`` (``node.meta["stack_trace"]``), then one naming the node
    (``name`` = its name, ``context`` = its op; no file)."""
    if node is None:
        return []
    frames = [
        {"filename": f, "lineno": int(line), "name": fn, "context": code.strip()}
        for f, line, fn, code in _FRAME.findall(node.meta.get("stack_trace") or "")
    ]
    # The model's own lines, not torch's (an nn.Linear's forward is in torch).
    user = [f for f in frames if not f["filename"].startswith(_TORCH_DIR)]
    frames = (user or frames)[-_MAX_FRAMES:]
    frames.append({"filename": "", "lineno": 0, "name": node.name, "context": str(node.target)})
    return frames


def _serializable(spec: pytree.TreeSpec) -> pytree.TreeSpec:
    """``spec`` with named tuples pytree cannot serialize (PyTorch's returns (``torch.return_types.sort``,
    ``topk``, ``max`` with a dim, ... are structseqs) as plain tuples of the
    same children; the runtime returns outputs flat."""
    if spec.is_leaf():
        return spec
    children = [_serializable(c) for c in spec.children()]
    if pytree.is_structseq_class(spec.type) or pytree.is_namedtuple_class(spec.type):
        return pytree.TreeSpec(tuple, None, children)
    return pytree.TreeSpec(spec.type, spec.context, children)


def _dumps(spec: pytree.TreeSpec | None) -> str:
    if spec is None:
        return ""
    try:
        return pytree.treespec_dumps(spec)
    except (NotImplementedError, TypeError):  # no serialization name registered
        return pytree.treespec_dumps(_serializable(spec))


def _container_meta(ep: ExportedProgram) -> dict[str, str]:
    spec = ep.call_spec
    return {"encoded_inp_str": _dumps(spec.in_spec), "encoded_out_str": _dumps(spec.out_spec)}


def emit_method(
    name: str,
    ep: ExportedProgram,
    plan: MemoryPlan,
    constants: ConstantBuffers,
    blobs: DelegateBlobs,
    mutable_data: ConstantBuffers,
    external: ExternalConstants,
    external_setting: Any = False,
    emit_stacktrace: bool = True,
) -> dict[str, Any]:
    """The ExecutionPlan table of one method; constants go into ``constants``
    (or ``external``, as ``external_setting`` — ExecutorchBackendConfig's
    ``external_constants`` — says), delegate blobs into ``blobs``, initial
    values of mutable buffers into ``mutable_data``. With ``emit_stacktrace``
    each instruction's source frames and node name go into ``Chain.stacktrace``."""
    e = _MethodEmitter(name, ep, plan, constants, blobs, mutable_data, external, external_setting)
    e.run()
    chain: dict[str, Any] = {"inputs": e.inputs, "outputs": e.outputs,
                             "instructions": e.instructions}
    if emit_stacktrace:
        chain["stacktrace"] = e.stacktrace
    return {
        "name": name,
        "container_meta_type": _container_meta(ep),
        "values": e.table.values,
        "inputs": e.inputs,
        "outputs": e.outputs,
        "chains": [chain],
        "operators": e.operators,
        "delegates": e.delegates.entries,
        "non_const_buffer_sizes": plan.buffer_sizes,
    }
