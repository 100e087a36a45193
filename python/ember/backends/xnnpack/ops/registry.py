"""The one table of what the delegate runs: op name -> ``OpSupport``.

Each entry pairs ``check(node, ctx)`` (why the node cannot be lowered, or
None) with ``lower(lowering, node)`` (the XNNPACK nodes it becomes). The
partitioner claims a node only when ``check`` passes; preprocess runs the
same ``check`` before ``lower`` and raises on a refusal, so the two cannot
disagree. ``check`` must test everything ``lower`` relies on: a constant
operand is one ``ctx.constant`` says the lowering will know.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

# Layout classes: "spatial" ops exist only in NHWC form (their rank-4 values
# make a delegate NHWC); "free" ops run in either layout; "dependent" ops
# are claimed in a form that depends on the delegate's layout.
SPATIAL, FREE, DEPENDENT = "spatial", "free", "dependent"


@dataclass(frozen=True)
class CheckContext:
    """What a check may ask: whether a node's value is known when lowering
    (``constant``), and whether rank-4 values are NHWC (``nhwc``)."""

    constant: Callable[[Any], bool]
    nhwc: bool


Check = Callable[[torch.fx.Node, CheckContext], "str | None"]
Lower = Callable[[Any, torch.fx.Node], None]


@dataclass(frozen=True)
class OpSupport:
    check: Check
    lower: Lower
    layout: str


REGISTRY: dict[str, OpSupport] = {}


def always(node: torch.fx.Node, ctx: CheckContext) -> str | None:
    return None


def register(
    *names: str, check: Check = always, layout: str = DEPENDENT
) -> Callable[[Lower], Lower]:
    """Registers the decorated lowering, with ``check``, for ``names``."""

    def add(lower: Lower) -> Lower:
        for name in names:
            if name in REGISTRY:
                raise ValueError(f"{name} is registered twice")
            REGISTRY[name] = OpSupport(check, lower, layout)
        return lower

    return add


def ops_with_layout(layout: str) -> frozenset[str]:
    return frozenset(n for n, s in REGISTRY.items() if s.layout == layout)
