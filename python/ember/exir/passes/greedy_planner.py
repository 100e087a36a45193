"""A small Python memory planner, used only when ``ember._C`` is not built.

Same contract as ``ember._C.plan_memory``: tensors whose inclusive
[first, last] instruction ranges overlap get disjoint byte ranges.
Greedy by size, each tensor at the lowest aligned offset that fits; sizes
are rounded up to the alignment, as the C++ planner does.
"""

from __future__ import annotations


def _align(n: int, alignment: int) -> int:
    return (n + alignment - 1) // alignment * alignment


def lower_bound(sizes: list[int], first: list[int], last: list[int], alignment: int = 1) -> int:
    """The most (aligned) bytes live at any one instruction."""
    if not sizes:
        return 0
    spans = [(_align(s, alignment), f, e) for s, f, e in zip(sizes, first, last, strict=True)]
    return max(sum(s for s, f, e in spans if f <= t <= e) for t in range(max(last) + 1))


def plan_memory(
    sizes: list[int], first: list[int], last: list[int], alignment: int
) -> tuple[list[int], int, int]:
    offsets = [0] * len(sizes)
    placed: list[int] = []
    for i in sorted(range(len(sizes)), key=lambda k: (-sizes[k], first[k], k)):
        busy = sorted(
            (offsets[j], offsets[j] + sizes[j])
            for j in placed
            if first[j] <= last[i] and first[i] <= last[j]
        )
        offset = 0
        for start, stop in busy:
            if offset + sizes[i] <= start:
                break
            offset = max(offset, _align(stop, alignment))
        offsets[i] = offset
        placed.append(i)
    total = max((_align(o + s, alignment) for o, s in zip(offsets, sizes, strict=False)), default=0)
    return offsets, total, lower_bound(sizes, first, last, alignment)
