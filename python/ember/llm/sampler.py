"""Next-token choice from logits: greedy, or temperature + top-p (nucleus)
sampling from a seeded generator."""

from __future__ import annotations

import torch


class Sampler:
    """`temperature <= 0` is greedy (argmax; the lowest id wins a tie, as in
    torch.argmax). Otherwise softmax(logits / temperature), cut to the smallest
    set of most likely tokens whose probability reaches `top_p`, sampled with a
    `torch.Generator` seeded with `seed` (the same seed gives the same tokens)."""

    def __init__(self, temperature: float = 0.0, top_p: float = 1.0, seed: int | None = None) -> None:
        if not 0.0 < top_p <= 1.0:
            raise ValueError(f"top_p must be in (0, 1], got {top_p}")
        if temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {temperature}")
        self.temperature = float(temperature)
        self.top_p = float(top_p)
        self._gen = torch.Generator()
        self._gen.manual_seed(0 if seed is None else int(seed))

    def __call__(self, logits: torch.Tensor) -> int:
        logits = logits.reshape(-1).float()
        if self.temperature <= 0:
            return int(torch.argmax(logits))
        probs = torch.softmax(logits / self.temperature, dim=-1)
        if self.top_p < 1.0:
            sorted_p, order = torch.sort(probs, descending=True)
            keep = torch.cumsum(sorted_p, 0) - sorted_p < self.top_p  # always keeps the first
            sorted_p = torch.where(keep, sorted_p, torch.zeros_like(sorted_p))
            choice = torch.multinomial(sorted_p, 1, generator=self._gen)
            return int(order[choice])
        return int(torch.multinomial(probs, 1, generator=self._gen))
