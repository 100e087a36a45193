"""``Lowering``: walks a claimed subgraph program and builds its
``BlobGraph``. Each call node is checked and lowered by its registry entry
(``ops/``), the same check the partitioner used to claim it; constant
expressions (how export reshapes a weight) are evaluated with PyTorch.

The finished blob goes through the runtime's own ``init`` checks
(``ember._C.check_xnnpack_graph``: FlatBuffer verifier, counts and ids,
shape check, XNNPACK define and create), together with the dim order the
program will hand each argument, so what the runtime would refuse at load
or at ``execute`` fails here.
"""

from __future__ import annotations

import operator
from typing import Any

import torch
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind

from ember import _C
from ember.backends.xnnpack.blob_graph import BlobGraph, nhwc
from ember.backends.xnnpack.node_info import dim_order, first_value, op_name, value
from ember.backends.xnnpack.ops.registry import REGISTRY, CheckContext
from ember.backends.xnnpack.support import CONSTANT_EXPRESSIONS, refusal


class XnnpackLoweringError(ValueError):
    """A claimed node preprocess cannot lower, or a blob the runtime would
    refuse (a partitioner bug or a hand-made partition)."""


def _as_tensor(x: Any) -> torch.Tensor:
    return x if isinstance(x, torch.Tensor) else torch.tensor(float(x))


class Lowering:
    def __init__(self, program: ExportedProgram, layout_nhwc: bool = True) -> None:
        self.program = program
        self.g = BlobGraph()
        self.nhwc = layout_nhwc
        self.ctx = CheckContext(constant=lambda n: n in self.g.known, nhwc=layout_nhwc)
        self.arguments: list[tuple[str, torch.Tensor]] = []  # inputs then outputs

    def dims(self, shape: tuple[int, ...]) -> list[int]:
        """XNNPACK dims of a program value in this delegate's layout."""
        return nhwc(shape) if self.nhwc else [int(d) for d in shape]

    def known(self, node: Any) -> Any:
        return self.g.known[node]

    # -- operands ---------------------------------------------------------
    def operand(self, a: Any, out_rank: int | None = None) -> int:
        """The XNNPACK value of argument ``a``; constants are materialised,
        broadcast-aligned to a rank-4 result and permuted to NHWC."""
        g = self.g
        if isinstance(a, torch.fx.Node) and a in g.of:
            return g.of[a]
        t = g.known.get(a) if isinstance(a, torch.fx.Node) else _as_tensor(a)
        if t is None:
            raise XnnpackLoweringError(f"{a} is neither computed in the subgraph nor constant")
        if self.nhwc and out_rank == 4 and t.dim() <= 4:
            t = t.reshape([1] * (4 - t.dim()) + list(t.shape)).permute(0, 2, 3, 1)
        return g.constant(t)

    def out(self, node: torch.fx.Node) -> int:
        vid = self.g.value(self.dims(tuple(first_value(node).shape)))
        self.g.of[node] = vid
        return vid

    # -- the walk ---------------------------------------------------------
    def run(self) -> bytes:
        g = self.g
        sig = self.program.graph_signature
        kinds = {getattr(s.arg, "name", None): s for s in sig.input_specs}
        for node in self.program.graph.nodes:
            if node.op == "placeholder":
                spec = kinds[node.name]
                if spec.kind == InputKind.USER_INPUT:
                    v = value(node)
                    vid = g.value(self.dims(tuple(v.shape)))
                    g.of[node] = vid
                    g.inputs.append((vid, self.nhwc and v.dim() == 4))
                    self.arguments.append((f"input {len(g.inputs) - 1} ({node.name})", v))
                elif spec.target in self.program.state_dict:
                    g.known[node] = self.program.state_dict[spec.target]
                else:
                    g.known[node] = self.program.constants[spec.target]
            elif node.op == "call_function":
                self.call(node)
            elif node.op == "output":
                for o in torch.utils._pytree.tree_leaves(node.args[0]):
                    self.output(o)
        blob = g.serialize()
        self.check(blob)
        return blob

    def output(self, o: torch.fx.Node) -> None:
        g = self.g
        if o not in g.of:
            raise XnnpackLoweringError(f"output {o} is not computed by XNNPACK nodes")
        vid = g.of[o]
        if any(vid == i for i, _ in g.inputs + g.outputs):
            # Returned twice or returned input: XNNPACK writes each output once.
            copy = g.value(g.values[vid][0])
            g.add("StaticReshape", [vid], copy, o, new_shape=g.values[vid][0])
            vid = copy
        g.outputs.append((vid, self.nhwc and value(o).dim() == 4))
        self.arguments.append((f"output {len(g.outputs) - 1} ({o.name})", value(o)))

    def call(self, node: torch.fx.Node) -> None:
        g = self.g
        if node.target is operator.getitem:
            source, index = node.args
            if source in g.known:
                g.known[node] = g.known[source][index]
                return
            if index != 0 or source not in g.of:
                raise XnnpackLoweringError(f"{node.name} reads output {index} of {source.name}")
            g.of[node] = g.of[source]
            return
        name = op_name(node)
        if name in CONSTANT_EXPRESSIONS and all(u in g.known for u in node.all_input_nodes):
            self.evaluate(node)
            return
        why = refusal(node, self.ctx.constant, self.nhwc)
        if why is not None:
            raise XnnpackLoweringError(f"{node.name} ({name}): {why}")
        REGISTRY[name].lower(self, node)

    def evaluate(self, node: torch.fx.Node) -> None:
        """A constant expression: run it now with PyTorch."""
        target = node.target
        op = getattr(target, "op", target)

        def resolve(a: Any) -> Any:
            return self.g.known[a] if isinstance(a, torch.fx.Node) else a

        args = torch.utils._pytree.tree_map(resolve, node.args)
        kwargs = torch.utils._pytree.tree_map(resolve, node.kwargs)
        with torch.no_grad():
            self.g.known[node] = op(*args, **kwargs)

    def check(self, blob: bytes) -> None:
        """The runtime's init checks, and its execute dim-order rule for the
        dim order the program hands each argument."""
        orders = [list(dim_order(v)) for _, v in self.arguments]
        try:
            _C.check_xnnpack_graph(blob, orders)
        except ValueError as e:
            named = str(e)
            for label, _ in self.arguments:
                role_index = label.split(" (")[0]
                if f"{role_index} has dim order" in named:
                    named = named.replace(role_index, label, 1)
                    break
            raise XnnpackLoweringError(f"{named} [delegate of {len(self.g.nodes)} nodes]") from None
