"""``ExportPass``: rebuild a graph node by node, with fake-tensor metadata.

Subclasses override ``call_operator(op, args, kwargs, meta)`` and may call
``super().call_operator`` with another op; the base class creates the node,
runs the op on fake tensors for ``meta["val"]`` and keeps the source
metadata (stack traces) of the node it replaces::

    class ConvertReluToSigmoid(ExportPass):
        def call_operator(self, op, args, kwargs, meta):
            if op == ops.edge.aten.relu.default:
                op = ops.edge.aten.sigmoid.default
            return super().call_operator(op, args, kwargs, meta)
"""

from __future__ import annotations

import operator
from typing import Any

import torch
from torch._guards import detect_fake_mode
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.symbolic_shapes import ShapeEnv
from torch.fx.passes.infra.pass_base import PassBase, PassResult
from torch.utils import _pytree as pytree

from ember.exir.operator.view_copy import fake_call

NodeMetadata = dict[str, Any]
_DERIVED_META = ("val", "tensor_meta")


class ProxyValue:
    """A value of the graph being built: its node and its (fake) data."""

    def __init__(self, data: Any, node: torch.fx.Node) -> None:
        self.data = data
        self.node = node

    def to_tensor(self) -> torch.Tensor:
        if not isinstance(self.data, torch.Tensor):
            raise TypeError(f"{self.node.name} is not a tensor: {type(self.data)}")
        return self.data

    def __repr__(self) -> str:
        return f"ProxyValue({self.node.name})"


def _nodes(tree: Any) -> Any:
    return pytree.tree_map_only(ProxyValue, lambda p: p.node, tree)


def _data(tree: Any) -> Any:
    return pytree.tree_map_only(ProxyValue, lambda p: p.data, tree)


class ExportPass(PassBase):
    """Re-trace a graph module; override ``call_operator`` to rewrite ops."""

    def call(self, graph_module: torch.fx.GraphModule) -> PassResult:
        self.graph = torch.fx.Graph()
        self.root = graph_module
        self.fake_mode = _fake_mode_of(graph_module)
        env: dict[torch.fx.Node, Any] = {}
        with self.fake_mode:
            for node in graph_module.graph.nodes:
                env[node] = self._visit(node, env)
        new_gm = torch.fx.GraphModule(graph_module, self.graph)
        new_gm.meta.update(graph_module.meta)
        return PassResult(new_gm, True)

    def _visit(self, node: torch.fx.Node, env: dict[torch.fx.Node, Any]) -> Any:
        meta: NodeMetadata = dict(node.meta)
        args = torch.fx.node.map_arg(node.args, env.__getitem__)
        kwargs = torch.fx.node.map_arg(node.kwargs, env.__getitem__)
        if node.op == "placeholder":
            return self.placeholder(node.name, meta)
        if node.op == "get_attr":
            return self.get_attr(node.target, meta)
        if node.op == "output":
            return self.output(args[0], meta)
        if node.op == "call_function" and node.target is operator.getitem:
            return self.call_getitem(args[0], args[1], meta)
        if node.op == "call_function":
            return self.call_operator(node.target, args, kwargs, meta)
        raise NotImplementedError(f"ExportPass: unsupported node {node.op} {node.name}")

    # ---- hooks a subclass may override --------------------------------

    def placeholder(self, name: str, meta: NodeMetadata) -> ProxyValue:
        node = self.graph.placeholder(name)
        node.meta = dict(meta)
        return ProxyValue(meta.get("val"), node)

    def get_attr(self, target: str, meta: NodeMetadata) -> ProxyValue:
        node = self.graph.get_attr(target)
        node.meta = dict(meta)
        value = getattr(self.root, target)
        if isinstance(value, torch.Tensor):
            value = self.fake_mode.from_tensor(value)
        return ProxyValue(value, node)

    def call_operator(
        self, op: Any, args: tuple[Any, ...], kwargs: dict[str, Any], meta: NodeMetadata
    ) -> ProxyValue:
        return self._create(op, args, kwargs, meta)

    def call_getitem(self, value: ProxyValue, key: int, meta: NodeMetadata) -> ProxyValue:
        return self._create(operator.getitem, (value, key), {}, meta)

    def output(self, results: Any, meta: NodeMetadata) -> ProxyValue:
        node = self.graph.output(_nodes(results))
        node.meta = {k: v for k, v in meta.items() if k not in _DERIVED_META}
        return ProxyValue(None, node)

    # --------------------------------------------------------------------

    def _create(
        self, target: Any, args: tuple[Any, ...], kwargs: dict[str, Any], meta: NodeMetadata
    ) -> ProxyValue:
        node = self.graph.call_function(target, _nodes(tuple(args)), _nodes(dict(kwargs)))
        if isinstance(target, torch._ops.HigherOrderOperator) and "val" in meta:
            data = meta["val"]  # control flow: its branches are rewritten on their own
        else:
            data = fake_call(target, _data(tuple(args)), _data(dict(kwargs)))
        node.meta = {k: v for k, v in meta.items() if k not in _DERIVED_META}
        node.meta["val"] = data
        return ProxyValue(data, node)


def _fake_mode_of(graph_module: torch.fx.GraphModule) -> FakeTensorMode:
    vals = [n.meta.get("val") for n in graph_module.graph.nodes]
    mode = detect_fake_mode([v for v in vals if v is not None])
    return mode or FakeTensorMode(shape_env=ShapeEnv(), allow_non_fake_inputs=True)
