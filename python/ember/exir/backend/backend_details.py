"""``BackendDetails``: the ahead-of-time half of a backend.

A subclass implements ``preprocess(edge_program, compile_specs)`` as a
classmethod or staticmethod returning ``PreprocessResult(processed_bytes)``,
the blob the runtime backend of the same id parses at ``init``. Subclasses
register themselves under their class name, which is the backend id written
in the ``.pte``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

from torch.export import ExportedProgram

from ember.exir.backend.compile_spec_schema import CompileSpec

_REGISTRY: dict[str, type[BackendDetails]] = {}


@dataclass
class PreprocessResult:
    processed_bytes: bytes = b""
    debug_handle_map: dict[int, Any] | None = None


class BackendDetails(ABC):
    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _REGISTRY[cls.__name__] = cls

    @staticmethod
    @abstractmethod
    def preprocess(
        edge_program: ExportedProgram, compile_specs: list[CompileSpec]
    ) -> PreprocessResult: ...


def get_backend(backend_id: str) -> type[BackendDetails]:
    """The BackendDetails registered under ``backend_id``."""
    if backend_id not in _REGISTRY:
        known = ", ".join(sorted(_REGISTRY)) or "none"
        raise NotImplementedError(
            f"no ahead-of-time backend '{backend_id}' is registered (import the module that "
            f"defines the BackendDetails subclass of that name); registered: {known}"
        )
    return _REGISTRY[backend_id]


def registered_backends() -> list[str]:
    return sorted(_REGISTRY)
