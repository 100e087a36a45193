"""Group tagged nodes into subgraphs that can each become one delegate call.

Nodes sharing a tag go into the same group unless that would make a cycle:
a path that leaves the group and comes back into it (``mm -> sin -> add``
with ``mm`` and ``add`` tagged, ``sin`` not). Such a tag is split into
several groups. The walk is in topological order; each node records which
groups are among its ancestors, and a node may join a group only when none
of its inputs from outside the group descends from that group.

``getitem`` nodes that read a tagged multi-output node follow it.

A tagged node computed only from placeholders of its own tag (constants
the partitioner hands to the backend; a constant expression such as the
transpose of a weight) joins the group of its user instead of the
first group it could: a backend evaluates such nodes ahead of time and must
find them in the same subgraph. When users in several groups read one, each
further group gets its own copy.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field

import torch

from ember.exir.backend.partitioner import DELEGATION_TAG


@dataclass
class Group:
    tag: str
    nodes: list[torch.fx.Node] = field(default_factory=list)


def _tag_of(node: torch.fx.Node) -> str | None:
    if node.op != "call_function":
        return None
    if node.target is operator.getitem and isinstance(node.args[0], torch.fx.Node):
        source_tag = node.args[0].meta.get(DELEGATION_TAG)
        if source_tag is not None:
            return source_tag
    return node.meta.get(DELEGATION_TAG)


def fuse_tagged_nodes(gm: torch.fx.GraphModule) -> list[Group]:
    """Acyclic groups of tagged call nodes, in graph order (by first node)."""
    groups: list[Group] = []
    group_of: dict[torch.fx.Node, int] = {}
    ancestors: dict[torch.fx.Node, frozenset[int]] = {}
    by_tag: dict[str, list[int]] = {}
    deferred: set[torch.fx.Node] = set()
    # Groups each group depends on through any member: joining a node to a
    # group makes the whole group depend on what the node depends on.
    upstream: list[set[int]] = []

    def pull_in(node: torch.fx.Node, g: int) -> None:
        """Puts the deferred constant expressions ``node`` reads into ``g``."""
        for u in node.all_input_nodes:
            if u not in deferred:
                continue
            if u in group_of and group_of[u] != g:
                with gm.graph.inserting_before(node):
                    copy = gm.graph.node_copy(u)
                copy.meta = dict(u.meta)
                node.replace_input_with(u, copy)
                deferred.add(copy)
                u = copy
            if u not in group_of:
                pull_in(u, g)
                groups[g].nodes.append(u)
                group_of[u] = g

    for node in list(gm.graph.nodes):
        inputs = node.all_input_nodes
        if (
            _tag_of(node) is not None
            and node.target is not operator.getitem
            and inputs
            and all(
                u in deferred
                or (u.op in ("placeholder", "get_attr") and u.meta.get(DELEGATION_TAG) == _tag_of(node))
                for u in inputs
            )
        ):
            deferred.add(node)
            ancestors[node] = frozenset()
            continue
        above: set[int] = set()
        for u in inputs:
            above |= _closure(u, group_of, ancestors, upstream)
        tag = _tag_of(node)
        if tag is not None:
            chosen = None
            if node.target is operator.getitem and node.args[0] in group_of:
                chosen = group_of[node.args[0]]
            else:
                for g in reversed(by_tag.get(tag, [])):
                    if _can_join(g, inputs, group_of, ancestors, upstream):
                        chosen = g
                        break
            if chosen is None:
                chosen = len(groups)
                groups.append(Group(tag))
                upstream.append(set())
                by_tag.setdefault(tag, []).append(chosen)
            pull_in(node, chosen)
            groups[chosen].nodes.append(node)
            group_of[node] = chosen
            upstream[chosen] |= above - {chosen}
        ancestors[node] = frozenset(above)
    return groups


def _closure(
    u: torch.fx.Node,
    group_of: dict[torch.fx.Node, int],
    ancestors: dict[torch.fx.Node, frozenset[int]],
    upstream: list[set[int]],
) -> set[int]:
    """Groups ``u`` depends on once every group is one node."""
    found = set(ancestors.get(u, frozenset()))
    if u in group_of:
        found.add(group_of[u])
    todo = list(found)
    while todo:  # Group dependencies grow as groups do: follow them now.
        for h in upstream[todo.pop()]:
            if h not in found:
                found.add(h)
                todo.append(h)
    return found


def _can_join(
    g: int,
    inputs: list[torch.fx.Node],
    group_of: dict[torch.fx.Node, int],
    ancestors: dict[torch.fx.Node, frozenset[int]],
    upstream: list[set[int]],
) -> bool:
    """No input from outside ``g`` depends on ``g``, directly or through
    another group (else contracting the groups makes a cycle)."""
    for u in inputs:
        if group_of.get(u) == g:
            continue
        if g in _closure(u, group_of, ancestors, upstream):
            return False
    return True
