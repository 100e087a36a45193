"""Fuse attention over a static KV cache into ``llama::custom_sdpa``.

What transformers' static cache exports (``torch.export``, before ``to_edge``),
per layer::

    k_all = index_copy_(k_cache, 2, pos, k_new)       # the cache buffer, updated
    v_all = index_copy_(v_cache, 2, pos, v_new)
    k_rep = reshape(expand(unsqueeze(k_all, 2), ...))  # repeat_kv (grouped-query), optional
    out = scaled_dot_product_attention(q, k_rep, v_rep, mask, scale=s)
    # mask [.., S, L]: cache position j visible to query row i iff j <= pos[i]

SDPA then reads the whole cache (L = max_seq_len positions) every step, and
repeat_kv copies it once per query head of a group. The pass rewrites ``out``
to ``custom_sdpa(q, k_all, v_all, pos[0], None, 0.0, is_causal=True, scale=s)``
(``ember.exir.operator.custom_sdpa``): the cache update stays as it was (written in place,
``docs/stateful-programs.md``), the fused kernel reads only positions
< pos[0] + S and each cache head once for its group.

A node is rewritten only when:

- key and value are ``index_copy_`` (dim 2) of buffers [B, Hkv, L, D]
  at one positions tensor ``pos``, directly or through repeat_kv (each cache
  head repeated for H / Hkv consecutive query heads), or directly with
  ``enable_gqa=True``;
- no dropout, ``is_causal=False`` and a mask;
- evaluated on example inputs (the graph's own nodes, run in eager for a few
  (S, start) pairs, start at 0, in the middle and at the end of the cache),
  ``pos`` is ``start, ..., start + S - 1`` and the mask is exactly the causal
  mask of those positions over the cache (bool, or 0 / -inf float). So a
  model whose mask is anything else (a sliding window, padding) keeps its
  decomposed attention.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import torch
from torch.export import ExportedProgram
from torch.fx.experimental.symbolic_shapes import compute_unbacked_bindings
from torch.fx.node import map_arg
from torch.utils._sympy.numbers import int_oo
from torch.utils._sympy.value_ranges import ValueRanges

import ember.exir.operator.custom_sdpa  # noqa: F401  (defines torch.ops.llama.custom_sdpa)

aten = torch.ops.aten

_CACHE_WRITES = (aten.index_copy_.default, aten.index_copy.default)


@dataclass
class _Match:
    sdpa: torch.fx.Node
    query: torch.fx.Node
    key: torch.fx.Node  # the index_copy_ of the key cache
    value: torch.fx.Node
    pos: torch.fx.Node
    mask: torch.fx.Node
    scale: float | None


def _cache_write(node: object, buffers: set[str]) -> torch.fx.Node | None:
    """``node`` if it is index_copy_(buffer, 2, pos, new) of a 4-D buffer."""
    if not isinstance(node, torch.fx.Node) or node.target not in _CACHE_WRITES:
        return None
    cache, dim = node.args[0], node.args[1]
    if not (isinstance(cache, torch.fx.Node) and cache.op == "placeholder"
            and cache.name in buffers and dim == 2 and cache.meta["val"].dim() == 4):
        return None
    return node


def _strip_repeat_kv(node: object, heads: int) -> object:
    """The cache under repeat_kv's unsqueeze(2) -> expand -> reshape, when the
    reshape gives `heads` heads with cache head h // group for query head h."""
    if not (isinstance(node, torch.fx.Node) and node.target in (aten.reshape.default,
                                                                aten.view.default)):
        return node
    expand = node.args[0]
    if not (isinstance(expand, torch.fx.Node) and expand.target is aten.expand.default):
        return node
    unsq = expand.args[0]
    if not (isinstance(unsq, torch.fx.Node) and unsq.target is aten.unsqueeze.default
            and unsq.args[1] == 2):
        return node
    cache = unsq.args[0].meta["val"]
    b, hkv, n, d = cache.shape
    if tuple(expand.meta["val"].shape) != (b, hkv, heads // hkv, n, d) or heads % hkv:
        return node
    if tuple(node.meta["val"].shape) != (b, heads, n, d):
        return node
    return unsq.args[0]


def _match(node: torch.fx.Node, buffers: set[str]) -> _Match | None:
    if node.target is not aten.scaled_dot_product_attention.default:
        return None
    names = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal")
    bound = dict(zip(names, node.args, strict=False))
    bound.update(node.kwargs)
    if bound.get("dropout_p", 0.0) != 0.0 or bound.get("is_causal", False):
        return None
    query, mask = bound["query"], bound.get("attn_mask")
    if not isinstance(mask, torch.fx.Node) or query.meta["val"].dim() != 4:
        return None
    heads = query.meta["val"].shape[1]
    if bound.get("enable_gqa", False):
        key, value = bound["key"], bound["value"]
    else:
        key, value = _strip_repeat_kv(bound["key"], heads), _strip_repeat_kv(bound["value"], heads)
    key, value = _cache_write(key, buffers), _cache_write(value, buffers)
    if key is None or value is None or key.args[2] is not value.args[2]:
        return None
    k_val, v_val, q_val = key.args[0].meta["val"], value.args[0].meta["val"], query.meta["val"]
    if (k_val.shape != v_val.shape or k_val.shape[0] != q_val.shape[0]
            or k_val.shape[3] != q_val.shape[3] or heads % k_val.shape[1]
            or not (k_val.dtype == v_val.dtype == q_val.dtype == torch.float32)):
        return None
    return _Match(node, query, key, value, key.args[2], mask, bound.get("scale"))


def _closure(targets: Iterable[torch.fx.Node], graph: torch.fx.Graph) -> list[torch.fx.Node]:
    """The nodes computing `targets`, in graph order: their ancestors, and the
    in-place ops before them that write into one of those (cumulative_length)."""
    order = {n: i for i, n in enumerate(graph.nodes)}
    last = max(order[t] for t in targets)
    needed: set[torch.fx.Node] = set()
    stack = list(targets)
    while True:
        while stack:
            n = stack.pop()
            if n not in needed:
                needed.add(n)
                stack.extend(n.all_input_nodes)
        for n in graph.nodes:
            if order[n] >= last:
                break
            schema = getattr(n.target, "_schema", None)
            if (n not in needed and schema is not None and schema.is_mutable and n.args
                    and isinstance(n.args[0], torch.fx.Node) and n.args[0] in needed):
                stack.append(n)
        if not stack:
            return sorted(needed, key=order.__getitem__)


def _evaluate(ep: ExportedProgram, nodes: list[torch.fx.Node], user_inputs: tuple,
              ) -> dict[torch.fx.Node, object]:
    """Runs `nodes` in eager on `user_inputs` (buffers from a fresh copy)."""
    sig = ep.graph_signature
    state = {**ep.state_dict, **ep.constants}
    wanted = {n.name for n in nodes if n.op == "placeholder"}
    users = iter(user_inputs)
    placeholders = {}
    for spec in sig.input_specs:
        value = next(users) if spec.kind.name == "USER_INPUT" else None
        if spec.arg.name not in wanted:
            continue
        if value is None:  # a buffer (or weight): a copy, as the graph may write it
            value = state[spec.target].detach().clone()
        placeholders[spec.arg.name] = value
    env: dict[torch.fx.Node, object] = {}
    with torch.no_grad():
        for n in nodes:
            if n.op == "placeholder":
                env[n] = placeholders[n.name]
            elif n.op == "call_function":
                args = map_arg(n.args, env.__getitem__)
                kwargs = map_arg(n.kwargs, env.__getitem__)
                env[n] = n.target(*args, **kwargs)
            else:
                raise ValueError(f"cannot evaluate {n.op} {n.name}")
    return env


def _is_causal_mask(mask: torch.Tensor, start: int, n: int, length: int) -> bool:
    if mask.dim() < 2 or mask.shape[-1] != length or mask.shape[-2] not in (1, n):
        return False
    want = torch.arange(length)[None, :] <= (start + torch.arange(n))[:, None]
    if mask.dtype == torch.bool:
        return bool((mask == want).all())
    if not mask.dtype.is_floating_point:
        return False
    hidden = mask <= torch.finfo(mask.dtype).min / 2  # -inf, or transformers' dtype min
    return bool(((mask == 0) == want).all() and (hidden == ~want).all())


def _samples(max_new: int, length: int) -> list[tuple[int, int]]:
    """(S, start) pairs: decode and prefill, at the cache's start, middle and end."""
    pairs = []
    for n in sorted({1, min(3, max_new), max_new}):
        for start in sorted({0, (length - n) // 2, length - n}):
            if 0 <= start and start + n <= length:
                pairs.append((n, start))
    return pairs


def _confirmed(ep: ExportedProgram, matches: list[_Match],
               inputs_at: Callable[[int, int], tuple], max_new: int) -> list[_Match]:
    """The matches whose positions and mask are the causal ones on every sample."""
    graph = ep.graph_module.graph
    targets = {m.pos for m in matches} | {m.mask for m in matches}
    nodes = _closure(targets, graph)
    ok = list(matches)
    length = min(m.key.args[0].meta["val"].shape[2] for m in matches)
    for n, start in _samples(max_new, length):
        try:
            env = _evaluate(ep, nodes, inputs_at(n, start))
        except Exception:  # noqa: BLE001 - a graph this pass cannot evaluate keeps its SDPA
            return []
        want = torch.arange(start, start + n)
        ok = [m for m in ok
              if isinstance(env[m.pos], torch.Tensor) and torch.equal(env[m.pos].flatten(), want)
              and isinstance(env[m.mask], torch.Tensor)
              and _is_causal_mask(env[m.mask], start, n, m.key.args[0].meta["val"].shape[2])]
    return ok


def _erase_dead(nodes: Iterable[object], graph: torch.fx.Graph) -> None:
    """Erase `nodes` and what only fed them, when nothing else reads them and
    they write nothing."""
    stack = [n for n in nodes if isinstance(n, torch.fx.Node)]
    while stack:
        n = stack.pop()
        schema = getattr(n.target, "_schema", None)
        if (n.op != "call_function" or n.users or n.graph is not graph
                or schema is None or schema.is_mutable):
            continue
        inputs = n.all_input_nodes
        graph.erase_node(n)
        stack.extend(inputs)


def _rewrite(ep: ExportedProgram, m: _Match) -> torch.fx.Node:
    graph = ep.graph_module.graph
    fake_mode = m.query.meta["val"].fake_mode
    with graph.inserting_before(m.sdpa):
        first = graph.call_function(aten.select.int, (m.pos, 0, 0))
        start = graph.call_function(aten.item.default, (first,))
        fused = graph.call_function(
            torch.ops.llama.custom_sdpa.default,
            (m.query, m.key, m.value, start, None, 0.0, True, m.scale))
    with fake_mode:
        first.meta["val"] = m.pos.meta["val"][0]
        symbol = fake_mode.shape_env.create_unbacked_symint()
        start.meta["val"] = symbol
        fused.meta["val"] = torch.empty_like(m.query.meta["val"])
    # As export records an .item(): the node binds the new unbacked symbol
    # (which also takes it off the shape environment's pending list).
    start.meta["unbacked_bindings"] = compute_unbacked_bindings(fake_mode.shape_env, symbol)
    ep.range_constraints[symbol.node.expr] = ValueRanges(-int_oo, int_oo)
    for new in (first, start, fused):
        new.meta["stack_trace"] = m.sdpa.meta.get("stack_trace")
        new.meta["nn_module_stack"] = m.sdpa.meta.get("nn_module_stack", {})
    inputs = m.sdpa.all_input_nodes
    m.sdpa.replace_all_uses_with(fused)
    graph.erase_node(m.sdpa)
    _erase_dead(inputs, graph)
    return fused


@dataclass
class FusedAttention:
    """What fuse_kv_cache_attention did."""

    fused: list[str]  # the custom_sdpa nodes written, one per attention
    kept: list[str]  # SDPA nodes left as they were


def fuse_kv_cache_attention(ep: ExportedProgram, inputs_at: Callable[[int, int], tuple],
                            max_new: int) -> FusedAttention:
    """Rewrite, in place, each static-cache attention of `ep` (exported, not
    yet lowered) into ``llama::custom_sdpa``. `inputs_at(S, start)` gives the
    program's user inputs for S new tokens at cache positions start ...
    start + S - 1 (S <= `max_new`): the pass runs the graph's position and mask
    nodes on them to confirm they are the causal ones."""
    graph = ep.graph_module.graph
    # Exported but not lowered: the graph still writes buffers with in-place
    # ops (the signature lists mutations only once functionalised).
    buffers = set(ep.graph_signature.inputs_to_buffers)
    sdpas = [n for n in graph.nodes if n.target is aten.scaled_dot_product_attention.default]
    matches = [m for m in (_match(n, buffers) for n in sdpas) if m is not None]
    if matches:
        matches = _confirmed(ep, matches, inputs_at, max_new)
    fused = [_rewrite(ep, m).name for m in matches]
    graph.lint()
    ep.graph_module.recompile()
    done = {m.sdpa for m in matches}
    return FusedAttention(fused, [n.name for n in sdpas if n not in done])
