"""``EmberXnnpackBackend.preprocess``: lowers a claimed subgraph to XNNPACK
nodes and writes the "EXN1" blob (backends/xnnpack/schema/xnnpack_graph.fbs)
through the C++ writer.

Constants (the subgraph program's parameters, and anything computed only
from them) are evaluated here with PyTorch and stored in the blob in the
layout XNNPACK wants: convolution filters OHWI, fully-connected filters
[out, in], rank-4 operands NHWC. A batch norm that follows a convolution
is folded into its filter and bias.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind

from ember import _C
from ember.backends.xnnpack import ops
from ember.exir.backend.backend_details import BackendDetails, PreprocessResult
from ember.exir.backend.compile_spec_schema import CompileSpec

BACKEND_ID = "EmberXnnpackBackend"
NO_VALUE = 0xFFFFFFFF
_ALIGN_CORNERS = 0x00000008


class XnnpackLoweringError(ValueError):
    """A claimed node preprocess cannot lower (a partitioner bug or a
    hand-made partition)."""


def nhwc(shape: tuple[int, ...]) -> list[int]:
    """NHWC dims of a rank-4 program shape (other ranks unchanged)."""
    shape = [int(d) for d in shape]
    return [shape[0], shape[2], shape[3], shape[1]] if len(shape) == 4 else shape


@dataclass
class _Node:
    kind: str
    inputs: list[int]
    outputs: list[int]
    params: dict[str, Any] = field(default_factory=dict)
    source: torch.fx.Node | None = None


class _Graph:
    """The subgraph being built: values, constants, nodes, externals."""

    def __init__(self) -> None:
        self.values: list[tuple[list[int], int]] = []
        self.constants: list[torch.Tensor] = []
        self.nodes: list[_Node] = []
        self.inputs: list[tuple[int, bool]] = []
        self.outputs: list[tuple[int, bool]] = []
        self.of: dict[torch.fx.Node, int] = {}  # program value -> XNNPACK value
        self.known: dict[torch.fx.Node, Any] = {}  # constants, as tensors
        self.producer: dict[int, _Node] = {}

    def value(self, dims: list[int]) -> int:
        self.values.append((list(dims), -1))
        return len(self.values) - 1

    def constant(self, tensor: torch.Tensor) -> int:
        t = tensor.detach().to(torch.float32).contiguous()
        dims = list(t.shape) if t.dim() > 0 else [1]
        self.constants.append(t.reshape(dims))
        self.values.append((dims, len(self.constants) - 1))
        return len(self.values) - 1

    def add(self, kind: str, inputs: list[int], out: int, source: torch.fx.Node, **params: Any) -> _Node:
        node = _Node(kind, inputs, [out], params, source)
        self.nodes.append(node)
        self.producer[out] = node
        return node

    def serialize(self) -> bytes:
        constants = [t.detach().contiguous().numpy().tobytes() for t in self.constants]
        nodes = [
            {"kind": n.kind, "inputs": n.inputs, "outputs": n.outputs, **n.params}
            for n in self.nodes
        ]
        return _C.write_xnnpack_graph(self.values, constants, nodes, self.inputs, self.outputs)


def _as_tensor(x: Any) -> torch.Tensor:
    return x if isinstance(x, torch.Tensor) else torch.tensor(float(x))


class _Lowering:
    def __init__(self, program: ExportedProgram, layout_nhwc: bool = True) -> None:
        self.program = program
        self.g = _Graph()
        self.nhwc = layout_nhwc

    def dims(self, shape: tuple[int, ...]) -> list[int]:
        """XNNPACK dims of a program value in this delegate's layout."""
        return nhwc(shape) if self.nhwc else [int(d) for d in shape]

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
        v = ops.value(node)
        if isinstance(v, (tuple, list)):
            v = v[0]
        vid = self.g.value(self.dims(tuple(v.shape)))
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
                    v = ops.value(node)
                    vid = g.value(self.dims(tuple(v.shape)))
                    g.of[node] = vid
                    g.inputs.append((vid, self.nhwc and v.dim() == 4))
                elif spec.target in self.program.state_dict:
                    g.known[node] = self.program.state_dict[spec.target]
                else:
                    g.known[node] = self.program.constants[spec.target]
            elif node.op == "call_function":
                self.call(node)
            elif node.op == "output":
                for o in torch.utils._pytree.tree_leaves(node.args[0]):
                    if o not in g.of:
                        raise XnnpackLoweringError(f"output {o} is not computed by XNNPACK nodes")
                    vid = g.of[o]
                    if any(vid == i for i, _ in g.inputs + g.outputs):
                        # Returned twice or returned input: XNNPACK writes each output once.
                        copy = g.value(g.values[vid][0])
                        g.add("StaticReshape", [vid], copy, o, new_shape=g.values[vid][0])
                        vid = copy
                    g.outputs.append((vid, self.nhwc and ops.value(o).dim() == 4))
        return g.serialize()

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
        inputs = node.all_input_nodes
        if all(u in g.known for u in inputs):
            self.evaluate(node)
            return
        name = ops.op_name(node)
        lower = getattr(self, "lower_" + name.split(".")[1].lstrip("_"), None)
        if name in ops.BINARY:
            self.binary(node, ops.BINARY[name])
        elif name in ops.UNARY:
            g.add(ops.UNARY[name], [self.operand(node.args[0])], self.out(node), node)
        elif name in ops.CLAMPS:
            self.clamp(node, name)
        elif lower is not None:
            lower(node)
        else:
            raise XnnpackLoweringError(f"{node.name}: XNNPACK cannot run {name}")

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

    # -- lowerings -------------------------------------------------------------
    def binary(self, node: torch.fx.Node, kind: str) -> None:
        rank = ops.value(node).dim()
        a = self.operand(node.args[0], rank)
        b = self.operand(node.args[1], rank)
        self.g.add(kind, [a, b], self.out(node), node)

    def clamp(self, node: torch.fx.Node, name: str) -> None:
        lo, hi = -float("inf"), float("inf")
        if name == "aten.relu.default":
            lo = 0.0
        elif name == "aten.hardtanh.default":
            lo, hi = ops.arg(node, 1, "min_val", -1.0), ops.arg(node, 2, "max_val", 1.0)
        else:
            mn, mx = ops.arg(node, 1, "min"), ops.arg(node, 2, "max")
            lo = -float("inf") if mn is None else mn
            hi = float("inf") if mx is None else mx
        self.g.add("Clamp", [self.operand(node.args[0])], self.out(node), node,
                   output_min=float(lo), output_max=float(hi))

    def lower_convolution(self, node: torch.fx.Node) -> None:
        x, w, b, stride, padding, dilation, _, _, groups = node.args[:9]
        weight = self.g.known[w]
        bias = self.g.known[b] if b is not None else torch.zeros(weight.shape[0])
        ph, pw = padding
        self.g.add(
            "Convolution2d",
            [self.operand(x), self.g.constant(weight.permute(0, 2, 3, 1)), self.g.constant(bias)],
            self.out(node),
            node,
            padding=[ph, pw, ph, pw],
            pooling=list(weight.shape[2:]),
            stride=list(stride),
            dilation=list(dilation),
            groups=int(groups),
        )

    def lower_native_batch_norm_legit_no_training(self, node: torch.fx.Node) -> None:
        x, w, b, mean, var = node.args[:5]
        eps = node.args[6] if len(node.args) > 6 else node.kwargs.get("eps", 1e-5)
        mean_t, var_t = self.g.known[mean].double(), self.g.known[var].double()
        scale = torch.rsqrt(var_t + eps)
        if w is not None:
            scale = scale * self.g.known[w].double()
        shift = -mean_t * scale
        if b is not None:
            shift = shift + self.g.known[b].double()
        xv = self.g.of.get(x)
        conv = self.g.producer.get(xv) if xv is not None else None
        if (
            conv is not None
            and conv.kind == "Convolution2d"
            and len(x.users) == 1
            and not any(xv == i for i, _ in self.g.outputs)
        ):
            # Fold into the convolution: W' = W * scale[o], b' = b * scale + shift.
            fi, bi = conv.inputs[1], conv.inputs[2]
            filt = self.g.constants[self.g.values[fi][1]].double()
            bias = self.g.constants[self.g.values[bi][1]].double()
            self.g.constants[self.g.values[fi][1]] = (filt * scale.reshape(-1, 1, 1, 1)).float()
            self.g.constants[self.g.values[bi][1]] = (bias * scale + shift).float()
            self.g.of[node] = xv
            return
        rank = ops.value(x).dim()
        shape = [1, -1] + [1] * (rank - 2)
        scaled = self.g.value(self.dims(tuple(ops.value(x).shape)))
        self.g.add("Multiply", [self.operand(x), self.operand(scale.float().reshape(shape), rank)],
                   scaled, node)
        self.g.add("Add", [scaled, self.operand(shift.float().reshape(shape), rank)],
                   self.out(node), node)

    def fully_connected(self, node: torch.fx.Node, x: Any, weight: torch.Tensor,
                        bias: torch.Tensor | None) -> None:
        """y = x @ weight.T + bias with weight [out, in]."""
        b = self.g.constant(bias.reshape(-1)) if bias is not None else NO_VALUE
        self.g.add("FullyConnected", [self.operand(x), self.g.constant(weight), b],
                   self.out(node), node)

    def lower_addmm(self, node: torch.fx.Node) -> None:
        bias, x, w = node.args[:3]
        self.fully_connected(node, x, self.g.known[w].t(), self.g.known[bias])

    def lower_mm(self, node: torch.fx.Node) -> None:
        x, w = node.args[:2]
        self.fully_connected(node, x, self.g.known[w].t(), None)

    def lower_linear(self, node: torch.fx.Node) -> None:
        b = ops.arg(node, 2, "bias")
        self.fully_connected(node, node.args[0], self.g.known[node.args[1]],
                             self.g.known[b] if b is not None else None)

    def _window(self, node: torch.fx.Node, kernel: list[int], stride: list[int],
                padding: list[int], dilation: list[int]) -> dict[str, Any]:
        def pair(v: list[int]) -> list[int]:
            v = list(v)
            return v * 2 if len(v) == 1 else v

        kernel, padding, dilation = pair(kernel), pair(padding), pair(dilation)
        stride = pair(stride) if stride else kernel
        return {
            "padding": [padding[0], padding[1], padding[0], padding[1]],
            "pooling": kernel,
            "stride": stride,
            "dilation": dilation,
        }

    def lower_max_pool2d_with_indices(self, node: torch.fx.Node) -> None:
        window = self._window(node, node.args[1], ops.arg(node, 2, "stride", []),
                              ops.arg(node, 3, "padding", [0, 0]), ops.arg(node, 4, "dilation", [1, 1]))
        self.g.add("MaxPooling2d", [self.operand(node.args[0])], self.out(node), node, **window)

    def lower_avg_pool2d(self, node: torch.fx.Node) -> None:
        window = self._window(node, node.args[1], ops.arg(node, 2, "stride", []), [0, 0], [1, 1])
        self.g.add("AveragePooling2d", [self.operand(node.args[0])], self.out(node), node, **window)

    def lower_adaptive_avg_pool2d(self, node: torch.fx.Node) -> None:
        x = ops.value(node.args[0])
        oh, ow = node.args[1]
        if (oh, ow) == (1, 1):
            self.g.add("GlobalAveragePooling2d", [self.operand(node.args[0])], self.out(node), node)
            return
        kh, kw = x.shape[2] // oh, x.shape[3] // ow
        self.g.add("AveragePooling2d", [self.operand(node.args[0])], self.out(node), node,
                   padding=[0, 0, 0, 0], pooling=[kh, kw], stride=[kh, kw], dilation=[1, 1])

    def lower_mean(self, node: torch.fx.Node) -> None:
        x = ops.value(node.args[0])
        keepdim = ops.arg(node, 2, "keepdim", False)
        if keepdim:
            self.g.add("GlobalAveragePooling2d", [self.operand(node.args[0])], self.out(node), node)
            return
        pooled = self.g.value([x.shape[0], 1, 1, x.shape[1]])
        self.g.add("GlobalAveragePooling2d", [self.operand(node.args[0])], pooled, node)
        out = self.out(node)
        self.g.add("StaticReshape", [pooled], out, node, new_shape=self.g.values[out][0])

    def lower_softmax(self, node: torch.fx.Node) -> None:
        self.g.add("Softmax", [self.operand(node.args[0])], self.out(node), node)

    def lower_constant_pad_nd(self, node: torch.fx.Node) -> None:
        x = ops.value(node.args[0])
        pad = list(node.args[1])
        value = float(ops.arg(node, 2, "value", 0.0))
        pre, post = [0] * x.dim(), [0] * x.dim()
        for i in range(len(pad) // 2):
            pre[x.dim() - 1 - i] = pad[2 * i]
            post[x.dim() - 1 - i] = pad[2 * i + 1]
        if x.dim() == 4:
            pre, post = self.dims(tuple(pre)), self.dims(tuple(post))
        self.g.add("StaticConstantPad", [self.operand(node.args[0])], self.out(node), node,
                   pre_paddings=pre, post_paddings=post, padding_value=value)

    def lower_view_copy(self, node: torch.fx.Node) -> None:
        out = self.out(node)
        self.g.add("StaticReshape", [self.operand(node.args[0])], out, node,
                   new_shape=self.g.values[out][0])

    def lower_clone(self, node: torch.fx.Node) -> None:
        out = self.out(node)  # a copy: a reshape to the same dims
        self.g.add("StaticReshape", [self.operand(node.args[0])], out, node,
                   new_shape=self.g.values[out][0])

    def lower_upsample_bilinear2d(self, node: torch.fx.Node) -> None:
        out_shape = ops.value(node).shape
        align = bool(ops.arg(node, 2, "align_corners", False))
        self.g.add("StaticResizeBilinear2d", [self.operand(node.args[0])], self.out(node), node,
                   pooling=[int(out_shape[2]), int(out_shape[3])],
                   flags=_ALIGN_CORNERS if align else 0)

    def lower_elu(self, node: torch.fx.Node) -> None:
        self.g.add("Elu", [self.operand(node.args[0])], self.out(node), node,
                   alpha=float(ops.arg(node, 1, "alpha", 1.0)))

    def lower_leaky_relu(self, node: torch.fx.Node) -> None:
        self.g.add("LeakyRelu", [self.operand(node.args[0])], self.out(node), node,
                   alpha=float(ops.arg(node, 1, "negative_slope", 0.01)))


class EmberXnnpackBackend(BackendDetails):
    @staticmethod
    def preprocess(
        edge_program: ExportedProgram, compile_specs: list[CompileSpec]
    ) -> PreprocessResult:
        layout = {s.key: bytes(s.value) for s in compile_specs}.get("layout", b"nhwc")
        if layout not in (b"nhwc", b"natural"):
            raise XnnpackLoweringError(f"compile spec layout={layout!r}: expected nhwc or natural")
        return PreprocessResult(processed_bytes=_Lowering(edge_program, layout == b"nhwc").run())
