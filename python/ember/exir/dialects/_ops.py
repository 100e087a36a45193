"""The operator namespaces: ``ops.edge.aten.relu.default``."""

from __future__ import annotations

import torch

from ember.exir.dialects.edge._ops import EdgeOpOverloadPacket


class _EdgeOpNamespace:
    def __init__(self, namespace: str) -> None:
        self._namespace = namespace

    def __getattr__(self, name: str) -> EdgeOpOverloadPacket:
        if name.startswith("__"):
            raise AttributeError(name)
        return EdgeOpOverloadPacket(getattr(getattr(torch.ops, self._namespace), name))


class _EdgeNamespace:
    def __getattr__(self, namespace: str) -> _EdgeOpNamespace:
        if namespace.startswith("__"):
            raise AttributeError(namespace)
        return _EdgeOpNamespace(namespace)


class _Ops:
    edge = _EdgeNamespace()


ops = _Ops()
