"""AOT -> model.pte -> C++ runtime through the Python bindings, for every
static-shape, non-delegated program of the tutorial (needs ``ember._C``).
The same programs through ember-run are in test_runtime.py."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import tutorial
from tutorial import ATOL, RTOL

pytest.importorskip("ember._C")
from ember.runtime import Runtime


@pytest.mark.parametrize("name", list(tutorial.PROGRAMS))
def test_runtime_matches_eager(name: str, tmp_path: Path) -> None:
    torch.manual_seed(0)
    case = tutorial.PROGRAMS[name]()
    path = tutorial.save(case.program, tmp_path)
    method = Runtime.get().load_program(str(path)).load_method("forward")
    outs = method.execute(list(case.inputs))
    assert len(outs) == len(case.expected)
    for got, want in zip(outs, case.expected, strict=True):
        torch.testing.assert_close(got, want, rtol=RTOL, atol=ATOL)
    # A second run on the same method gives the same answer.
    for got, want in zip(method.execute(list(case.inputs)), case.expected, strict=True):
        torch.testing.assert_close(got, want, rtol=RTOL, atol=ATOL)


# Encode/Decode draw their weights with randn in forward; the runtime's randn
# (seeded splitmix64 + Box-Muller) cannot reproduce torch's, so these check
# shapes, that draws change between runs, and that they look standard normal.


def _encode_decode(tmp_path: Path):
    return Runtime.get().load_program(str(tutorial.save(tutorial.encode_decode(), tmp_path)))


def test_encode_decode_methods_run(tmp_path: Path) -> None:
    program = _encode_decode(tmp_path)
    assert sorted(program.method_names) == ["decode", "encode"]
    encode, decode = program.load_method("encode"), program.load_method("decode")
    x, z = torch.randn(1, 10), torch.randn(1, 5)
    (encoded,) = encode.execute([x])
    (decoded,) = decode.execute([z])
    assert encoded.shape == (1, 5) and decoded.shape == (1, 10)
    (again,) = encode.execute([x])
    assert torch.isfinite(encoded).all() and torch.isfinite(again).all()
    assert not torch.equal(encoded, again)  # a fresh randn weight each run
    (decoded_again,) = decode.execute([z])
    assert torch.isfinite(decoded_again).all() and not torch.equal(decoded, decoded_again)


@pytest.mark.parametrize(("method", "k", "n"), [("encode", 10, 5), ("decode", 5, 10)])
def test_randn_weights_look_standard_normal(method: str, k: int, n: int, tmp_path: Path) -> None:
    """``linear(e_i, W)`` is column i of W: rows of the identity, one per
    run, recover 1000 draws of W's entries."""
    run = _encode_decode(tmp_path).load_method(method)
    eye = torch.eye(k)
    draws = torch.cat(
        [run.execute([eye[i % k : i % k + 1]])[0].flatten() for i in range(1000 // n)]
    )
    assert draws.numel() == 1000 and torch.isfinite(draws).all()
    # Standard errors with 1000 draws: mean 0.032, std 0.022. The bounds are
    # ~4.5 of them; the runtime's seed is fixed, so this never flakes.
    assert abs(draws.mean().item()) < 0.15
    assert abs(draws.std().item() - 1.0) < 0.1
    inside = (draws.abs() < 1.959964).float().mean().item()
    assert abs(inside - 0.95) < 0.03
    assert len(set(draws.tolist())) == 1000  # no repeats
