"""A loaded LLM program: its `forward(tokens, input_pos)` method, the
metadata its constant methods hold, and prefill / decode steps on it."""

from __future__ import annotations

import os
from typing import Any

import torch

from ember.llm.export import METADATA_METHODS
from ember.runtime import Runtime


class LlmProgram:
    """`source`: an `ExecutorchProgramManager` from `ember.llm.export`, a
    `.pte` path or its bytes. `data`: the `.ptd` (path or bytes) when the
    weights are outside the program; for a manager it is taken from it, for
    a path the one `.ptd` beside the program is found when not given."""

    def __init__(self, source: Any, data: str | os.PathLike | bytes | None = None) -> None:
        if hasattr(source, "buffer") and hasattr(source, "data_files"):
            files = source.data_files
            if data is None and files:
                data = next(iter(files.values()))
            source = source.buffer
        elif isinstance(source, str | os.PathLike) and data is None:
            data = _ptd_beside(os.fspath(source))
        self._program = Runtime.get().load_program(source, data=data)
        names = set(self._program.method_names)
        missing = [m for m in ("forward", "get_max_seq_len", "get_vocab_size") if m not in names]
        if missing:
            raise ValueError(
                f"not an LLM program (ember.llm.export): it has no method(s) {', '.join(missing)}")
        self.metadata: dict[str, Any] = {}
        for name in METADATA_METHODS:
            if name in names:
                out = self._program.load_method(name).execute([])
                self.metadata[name] = out[0] if len(out) == 1 else list(out)
        self.forward = self._program.load_method("forward")
        self.max_tokens_per_call = int(self.metadata["get_max_seq_len"])
        self.max_context_len = int(self.metadata.get("get_max_context_len", self.max_tokens_per_call))
        self.vocab_size = int(self.metadata["get_vocab_size"])
        bos = int(self.metadata.get("get_bos_id", -1))
        self.bos_id: int | None = None if bos < 0 else bos
        eos = self.metadata.get("get_eos_ids", [])
        self.eos_ids: list[int] = [int(e) for e in (eos if isinstance(eos, list | tuple) else [eos])]
        self.dynamic = bool(self.metadata.get("enable_dynamic_shape", False))

    def reset(self) -> None:
        """Back to the initial (empty) cache."""
        self.forward.reset()

    def prefill(self, tokens: list[int], start_pos: int = 0) -> torch.Tensor:
        """Runs `tokens` at positions `start_pos...`, in calls of at most
        `max_tokens_per_call` tokens; returns the last position's logits."""
        if not tokens:
            raise ValueError("prefill needs at least one token")
        if start_pos + len(tokens) > self.max_context_len:
            raise ValueError(
                f"{start_pos + len(tokens)} tokens do not fit the program's cache of "
                f"{self.max_context_len} positions")
        step = self.max_tokens_per_call if self.dynamic else 1
        logits = None
        for i in range(0, len(tokens), step):
            chunk = tokens[i:i + step]
            pos = start_pos + i
            logits = self.forward.execute([
                torch.tensor([chunk], dtype=torch.long),
                torch.arange(pos, pos + len(chunk), dtype=torch.long)])[0]
        return logits[0, -1]

    def decode(self, token: int, pos: int) -> torch.Tensor:
        """One token at position `pos`; returns its logits."""
        if pos >= self.max_context_len:
            raise ValueError(f"position {pos} is past the program's cache of {self.max_context_len}")
        return self.forward.execute([torch.tensor([[token]], dtype=torch.long),
                                     torch.tensor([pos], dtype=torch.long)])[0][0, -1]


def _ptd_beside(pte: str) -> str | None:
    folder = os.path.dirname(os.path.abspath(pte))
    stem = os.path.splitext(os.path.basename(pte))[0]
    for name in (stem + ".ptd", "_default_external_constant.ptd"):
        if os.path.isfile(os.path.join(folder, name)):
            return os.path.join(folder, name)
    return None
