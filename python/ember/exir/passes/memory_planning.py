"""Memory planning: give every non-constant tensor a place in buffer 1, and
every mutable buffer (state kept across runs) one in buffer 2.

Lifetimes come from the instruction order: an alloc'd tensor lives from
the instruction that writes it until its last reader. Graph inputs live
for the whole method, so a method can run again on the inputs it was given
(``ember-run --iters N`` sets them once); outputs live until the end. Parameters and
constants are not planned (they live in the constant segment). A tensor
with symbolic sizes is planned for its upper bound (``ember.exir.symbolic``).
The C++ planner ``ember._C.plan_memory`` places them. The result lives on
the graph: each planned value's node carries a ``TensorSpec`` in
``node.meta["spec"]`` (a dict by output index for a node with several),
which the emitter reads (``planned_spec``); ``MemoryPlan`` is the report.
Mutable buffers
(``passes/mutable_buffers.py``) live as long as the loaded method, so they
are laid out one after the other in a region of their own, which nothing
else reuses; the runtime fills it with their initial values at load.

A ``view_copy`` whose input is read for the last time by that view (the
usual reshape between two ops) gets its input's memory: both are planned
as one block living from the input's writer to the view's last reader, and
the kernel's copy has nothing to do (``reshape_copy`` skips a copy onto
itself). Only for contiguous tensors of the same planned size in the
method's own graph (not a graph input, not inside control flow), so the
bytes are the same in either place; the file is an ordinary plan, any
runtime of the format runs it. ``ExecutorchBackendConfig(remove_view_copy=
False)`` keeps every view in memory of its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind

from ember.exir.control_flow import all_nodes, linear_instructions, loop_regions
from ember.exir.delegate import is_delegate_call
from ember.exir.memory import alloc
from ember.exir.passes.mutable_buffers import WriteBack, mutated_buffer_placeholders
from ember.exir.storage import Ref, flat_refs, nodes_in, resolve
from ember.exir.symbolic import SymbolBounds


SPEC = "spec"


@dataclass(frozen=True)
class TensorSpec:
    """Where a planned value lives: buffer ``memory_id`` at byte ``offset``,
    during instructions ``lifetime`` (None: the whole life of the method)."""

    memory_id: int
    offset: int
    nbytes: int
    lifetime: tuple[int, int] | None


def planned_spec(ref: Ref) -> TensorSpec | None:
    """The spec the memory plan left on ``ref``'s node, or None (not planned)."""
    spec = ref.node.meta.get(SPEC)
    if isinstance(spec, dict):
        return spec.get(ref.index)
    return spec if ref.index is None else None


def _set_spec(ref: Ref, spec: TensorSpec) -> None:
    if ref.index is None:
        ref.node.meta[SPEC] = spec
    else:
        ref.node.meta.setdefault(SPEC, {})[ref.index] = spec


@dataclass
class PlannedTensor:
    name: str
    size: int
    first: int
    last: int
    offset: int = 0


@dataclass
class MemoryPlan:
    """A method's memory plan; ``str()`` prints it as a table."""

    method: str
    tensors: list[PlannedTensor]
    total_bytes: int
    lower_bound: int
    alignment: int
    # Mutable buffers, in buffer 2.
    mutable: list[PlannedTensor] = field(default_factory=list)
    mutable_bytes: int = 0
    # How each mutable buffer gets its new value (the write-back pass's record).
    write_backs: list[WriteBack] = field(default_factory=list)
    # (view, input): a view_copy given its input's memory (view_aliases).
    views: list[tuple[str, str]] = field(default_factory=list)

    @property
    def buffer_sizes(self) -> list[int]:
        """``non_const_buffer_sizes`` of the method (entry 0 is reserved)."""
        return [0, self.total_bytes] + ([self.mutable_bytes] if self.mutable else [])

    def __str__(self) -> str:
        width = max([len(t.name) for t in self.tensors] + [6])
        lines = [
            f"Memory plan of '{self.method}' (buffer 1, alignment {self.alignment})",
            f"{'tensor':<{width}}  {'bytes':>10}  {'lifetime':>12}  {'offset':>10}",
        ]
        shares = dict(self.views)
        for t in self.tensors:
            life = f"[{t.first}, {t.last}]"
            note = f"  (view in {shares[t.name]}'s memory)" if t.name in shares else ""
            lines.append(f"{t.name:<{width}}  {t.size:>10}  {life:>12}  {t.offset:>10}{note}")
        lines.append(
            f"total {self.total_bytes} bytes; lower bound (max live) {self.lower_bound} bytes"
        )
        if self.mutable:
            lines.append(f"Mutable buffers of '{self.method}' (buffer 2, kept across runs)")
            how = {w.buffer: w for w in self.write_backs}
            for t in self.mutable:
                w = how.get(t.name)
                update = f"  {w.bytes_per_run:>10}  {w.how}" if w else ""
                lines.append(
                    f"{t.name:<{width}}  {t.size:>10}  {'method':>12}  {t.offset:>10}{update}"
                )
            written = sum(w.bytes_per_run for w in self.write_backs)
            lines.append(f"total {self.mutable_bytes} bytes; {written} bytes written per run")
        return "\n".join(lines)


def _plan_memory(
    sizes: list[int], first: list[int], last: list[int], alignment: int,
    algorithm: str = "greedy",
) -> tuple[list[int], int, int]:
    from ember import _C  # The planner is C++ (program/memory_planner.cpp).

    offsets, total, bound = _C.plan_memory(sizes, first, last, alignment, algorithm)
    return list(offsets), int(total), int(bound)


_RESHAPES = frozenset({"aten.view_copy.out"})


def _contiguous(ref: Ref) -> bool:
    val = ref.node.meta.get("val")
    if ref.index is not None and isinstance(val, (list, tuple)):
        val = val[ref.index]
    return isinstance(val, torch.Tensor) and val.dim_order() == tuple(range(val.dim()))


def view_aliases(gm: torch.fx.GraphModule,
                 planned: dict[Ref, tuple[str, int, list[int]]]) -> list[tuple[Ref, Ref]]:
    """(input, output) of each view_copy that may take its input's memory:
    the input's last reader is the view, both are planned, contiguous and of
    one size, and the input is no graph input. None when the program was
    made with ``ExecutorchBackendConfig(remove_view_copy=False)``."""
    if not gm.meta.get("remove_view_copy", True):
        return []
    order = {n: i for i, n in enumerate(linear_instructions(gm))}
    pairs: list[tuple[Ref, Ref]] = []
    for node, i in order.items():
        if node.graph is not gm.graph or str(node.target) not in _RESHAPES:
            continue
        src, out = node.args[0] if node.args else None, node.kwargs.get("out")
        if not isinstance(src, torch.fx.Node) or not isinstance(out, torch.fx.Node):
            continue
        xs, ys = flat_refs(resolve(src)), flat_refs(resolve(out))
        if len(xs) != 1 or len(ys) != 1:
            continue
        x, y = xs[0], ys[0]
        if x not in planned or y not in planned or x.node.op == "placeholder":
            continue
        if planned[x][2][1] != i or planned[y][2][0] != i or planned[x][1] != planned[y][1]:
            continue
        if _contiguous(x) and _contiguous(y) and _contiguous(Ref(node)):
            pairs.append((x, y))
    return pairs


def _alloc_name(node: torch.fx.Node, ref: Ref) -> str:
    """Named after the op that writes it: ``aten_mm_default``,
    ``aten_max_pool2d_with_indices_default.indices``, ``aten_split_copy_default[1]``."""
    writer = next(u for u in node.users if u.kwargs and node in u.kwargs.values())
    arg = next(k for k, v in writer.kwargs.items() if v is node)
    name = writer.name if arg == "out" else f"{writer.name}.{arg}"
    return name if ref.index is None else f"{name}[{ref.index}]"


_ALGORITHMS = {None: "greedy", "greedy": "greedy", "best_fit": "best_fit"}


class MemoryPlanningPass:
    """Plans the non-constant tensors of an out-variant program.

    ExecuTorch's arguments: ``memory_planning_algo`` None or ``"greedy"``
    (greedy by size, the default) or ``"best_fit"`` (Ember's best fit in
    order); ``alloc_graph_input=False`` leaves the user inputs unplanned
    (the runtime then borrows the caller's tensors during ``execute``);
    ``alignment``: of every offset. ``allow_lifetime_and_storage_overlap``,
    ``alloc_graph_output``, ``alloc_mutable_buffers`` and
    ``share_mutable_buffers`` are accepted at their defaults only."""

    def __init__(
        self,
        memory_planning_algo: str | None = None,
        allow_lifetime_and_storage_overlap: bool = False,
        alloc_graph_input: bool = True,
        alloc_graph_output: bool = True,
        alloc_mutable_buffers: bool = True,
        share_mutable_buffers: bool = False,
        alignment: int = 16,
    ) -> None:
        if memory_planning_algo not in _ALGORITHMS:
            raise TypeError(
                f"memory_planning_algo: Ember's C++ planner runs 'greedy' (default) or "
                f"'best_fit', got {memory_planning_algo!r}"
            )
        for name, value, default in (
            ("allow_lifetime_and_storage_overlap", allow_lifetime_and_storage_overlap, False),
            ("alloc_graph_output", alloc_graph_output, True),
            ("alloc_mutable_buffers", alloc_mutable_buffers, True),
            ("share_mutable_buffers", share_mutable_buffers, False),
        ):
            if value != default:
                raise NotImplementedError(
                    f"MemoryPlanningPass({name}={value!r}): Ember supports only {default}"
                )
        self.algorithm = _ALGORITHMS[memory_planning_algo]
        self.alloc_graph_input = alloc_graph_input
        self.alignment = alignment

    def lifetimes(self, ep: ExportedProgram) -> dict[Ref, tuple[str, int, list[int]]]:
        """Planned tensor -> (name, bytes, [first, last])."""
        gm = ep.graph_module
        _nbytes = SymbolBounds(ep).nbytes
        order = {n: i for i, n in enumerate(linear_instructions(gm))}
        end = max(len(order) - 1, 0)
        user_inputs = {
            s.arg.name for s in ep.graph_signature.input_specs if s.kind == InputKind.USER_INPUT
        }
        planned: dict[Ref, tuple[str, int, list[int]]] = {}
        for node in all_nodes(gm):
            if node.op == "placeholder" and node.graph is gm.graph and node.name in user_inputs:
                if not self.alloc_graph_input:
                    continue  # The caller's tensor is used in place.
                if isinstance(node.meta.get("val"), torch.Tensor):
                    planned[Ref(node)] = (node.name, _nbytes(node.meta["val"]), [0, end])
            elif node.op == "call_function" and node.target is alloc:
                start = order[next(u for u in node.users if u in order)]
                for ref in flat_refs(resolve(node)):
                    val = node.meta["val"] if ref.index is None else node.meta["val"][ref.index]
                    planned[ref] = (_alloc_name(node, ref), _nbytes(val), [start, start])
            elif is_delegate_call(node):
                for ref in flat_refs(resolve(node)):
                    val = node.meta["val"] if ref.index is None else node.meta["val"][ref.index]
                    name = node.name if ref.index is None else f"{node.name}[{ref.index}]"
                    planned[ref] = (name, _nbytes(val), [order[node], order[node]])
        for node, i in order.items():
            for used in nodes_in((node.args, node.kwargs)):
                for ref in flat_refs(resolve(used)):
                    if ref in planned:
                        planned[ref][2][1] = max(planned[ref][2][1], i)
        for used in nodes_in(gm.graph.output_node().args):
            for ref in flat_refs(resolve(used)):
                if ref in planned:
                    planned[ref][2][1] = end
        # A loop runs its instructions again: what it reads from before it
        # lives until the loop ends (control_flow.py).
        for first, last in loop_regions(gm, order):
            for _, _, life in planned.values():
                if life[0] < first <= life[1]:
                    life[1] = max(life[1], last)
        return planned

    def mutable_layout(self, ep: ExportedProgram) -> tuple[list[PlannedTensor], int]:
        """The mutable buffers one after another (aligned), their specs set on
        their placeholders: tensors, bytes."""
        nbytes = SymbolBounds(ep).nbytes
        names = mutated_buffer_placeholders(ep)
        tensors: list[PlannedTensor] = []
        end = 0
        for node in ep.graph_module.graph.nodes:
            if node.op == "placeholder" and node.name in names:
                offset = -(-end // self.alignment) * self.alignment
                size = nbytes(node.meta["val"])
                tensors.append(PlannedTensor(names[node.name], size, 0, 0, offset))
                _set_spec(Ref(node), TensorSpec(2, offset, size, None))
                end = offset + size
        return tensors, end

    def plan(self, ep: ExportedProgram, method: str = "forward") -> MemoryPlan:
        planned = self.lifetimes(ep)
        refs = list(planned)
        # Views that take their input's memory: one block per chain.
        root = {r: r for r in refs}

        def find(r: Ref) -> Ref:
            while root[r] != r:
                root[r] = root[root[r]]
                r = root[r]
            return r

        views = view_aliases(ep.graph_module, planned)
        for x, y in views:
            root[find(y)] = find(x)
        blocks = list(dict.fromkeys(find(r) for r in refs))
        index = {b: k for k, b in enumerate(blocks)}
        b_size = [0] * len(blocks)
        b_first = [1 << 62] * len(blocks)
        b_last = [-1] * len(blocks)
        for r in refs:
            k = index[find(r)]
            b_size[k] = max(b_size[k], planned[r][1])
            b_first[k] = min(b_first[k], planned[r][2][0])
            b_last[k] = max(b_last[k], planned[r][2][1])
        b_offsets, total, bound = _plan_memory(b_size, b_first, b_last, self.alignment,
                                               self.algorithm)
        sizes = [planned[r][1] for r in refs]
        first = [planned[r][2][0] for r in refs]
        last = [planned[r][2][1] for r in refs]
        offsets = [b_offsets[index[find(r)]] for r in refs]
        tensors = [
            PlannedTensor(planned[r][0], s, f, la, o)
            for r, s, f, la, o in zip(refs, sizes, first, last, offsets, strict=False)
        ]
        for node in all_nodes(ep.graph_module):
            node.meta.pop(SPEC, None)  # a plan made before (plan() may run again)
        for r, s, f, la, o in zip(refs, sizes, first, last, offsets, strict=True):
            _set_spec(r, TensorSpec(1, o, s, (f, la)))
        mutable, mutable_bytes = self.mutable_layout(ep)
        return MemoryPlan(method, tensors, total, bound, self.alignment, mutable, mutable_bytes,
                          list(ep.graph_module.meta.get("write_backs", [])),
                          [(planned[y][0], planned[x][0]) for x, y in views])
