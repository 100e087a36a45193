"""Deterministic kernel-test inputs shared by the test files: random values, ties
(small integers, so selections and scans meet equal values), and NaN/±inf
sprinkled at fixed strides."""

from __future__ import annotations

import torch


def sample(shape, dtype, kind="random", seed=0):
    g = torch.Generator().manual_seed(seed)
    if kind == "ties" or not dtype.is_floating_point:
        x = torch.randint(-2, 3, shape, generator=g).to(torch.float64)
        if dtype in (torch.uint8, torch.bool):
            x = x.abs()
        return x.to(dtype)
    x = torch.randn(shape, generator=g, dtype=torch.float64)
    if kind == "nan_inf":
        flat = x.view(-1)
        flat[::7] = float("nan")
        flat[3::11] = float("inf")
        flat[5::13] = float("-inf")
    return x.to(dtype)
