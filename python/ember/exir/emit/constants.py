"""The program's constant tensors: contiguous little-endian bytes, deduplicated."""

from __future__ import annotations

import torch


def tensor_bytes(t: torch.Tensor) -> bytes:
    flat = t.detach().cpu().contiguous().reshape(-1)
    if flat.numel() == 0:
        return b""
    data = flat.view(torch.uint8)
    if t.dtype == torch.bool:
        # A bool constant can hold any byte (torch.empty folded into a
        # constant); the runtime accepts only 0/1, so write the value PyTorch
        # reads (non-zero is true).
        data = (data != 0).to(torch.uint8)
    return data.numpy().tobytes()


class ConstantBuffers:
    """Blobs of constant data; tensors refer to them by ``1 + position``."""

    def __init__(self) -> None:
        self.blobs: list[bytes] = []
        self._index: dict[bytes, int] = {}

    def add(self, t: torch.Tensor) -> int:
        """The data_buffer_idx of ``t``'s bytes (entry 0 is reserved)."""
        data = tensor_bytes(t)
        if data not in self._index:
            self.blobs.append(data)
            self._index[data] = len(self.blobs)
        return self._index[data]
