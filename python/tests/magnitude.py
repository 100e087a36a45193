"""A comparison relative to the reference's magnitude, for the fusion tests:
the reference must not have collapsed (a near-zero output checks nothing),
and the largest error must be within ``rtol`` of its largest value."""

from __future__ import annotations

import torch


def assert_close_to_magnitude(got: torch.Tensor, want: torch.Tensor, rtol: float) -> None:
    scale = float(want.abs().max())
    assert scale > 1e-2, "the reference collapsed"
    assert got.shape == want.shape
    err = float((got - want).abs().max())
    assert err <= rtol * scale, f"max abs error {err} against output magnitude {scale}"
