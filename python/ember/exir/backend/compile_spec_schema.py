"""``CompileSpec``: one key/value option handed to a backend, at ``preprocess``
and again at the runtime's ``init`` (stored in the ``.pte``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CompileSpec:
    key: str
    value: bytes

    def __post_init__(self) -> None:
        if not isinstance(self.key, str):
            raise TypeError(f"CompileSpec key must be a str, got {type(self.key).__name__}")
        if not isinstance(self.value, (bytes, bytearray)):
            raise TypeError(
                f"CompileSpec '{self.key}': value must be bytes, got {type(self.value).__name__}"
            )
