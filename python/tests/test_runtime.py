"""The C++ runtime through the bindings and through ember-run: tutorial
programs match eager, and bad files, inputs and programs give named errors."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
from installed import tool
import torch
import tutorial
from ember import exir
from models import Basic, M, SimpleConv
from torch.export import export
from tutorial import ATOL, RTOL

_C = pytest.importorskip("ember._C")
from ember.runtime import EmberError, Runtime


_bin = tool


def _program(model: torch.nn.Module, args: tuple) -> exir.ExecutorchProgramManager:
    return exir.to_edge(export(model, args)).to_executorch()


def _ember_run(pte: Path, out_dir: Path, inputs: tuple[torch.Tensor, ...], *extra: str) -> str:
    """Run ``pte`` with the inputs as .npy files; outputs land in ``out_dir``."""
    out_dir.mkdir(exist_ok=True)
    cmd = [_bin("ember-run"), str(pte), "--save-outputs", str(out_dir), *extra]
    for i, a in enumerate(inputs):
        np.save(out_dir / f"in{i}.npy", a.numpy())
        cmd += ["--input", str(out_dir / f"in{i}.npy")]
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout


def _outputs(out_dir: Path, count: int) -> list[torch.Tensor]:
    return [torch.from_numpy(np.load(out_dir / f"output_{i}.npy")) for i in range(count)]


@pytest.mark.parametrize("name", list(tutorial.PROGRAMS))
def test_ember_run_matches_eager(name: str, tmp_path: Path) -> None:
    torch.manual_seed(0)
    case = tutorial.PROGRAMS[name]()
    pte = tutorial.save(case.program, tmp_path)
    stdout = _ember_run(pte, tmp_path / "out", case.inputs, "--iters", "3")
    assert "median" in stdout and "output 0: float32" in stdout
    got = _outputs(tmp_path / "out", len(case.expected))
    for g, want in zip(got, case.expected, strict=True):
        torch.testing.assert_close(g, want, rtol=RTOL, atol=ATOL)


def test_ember_run_encode_decode_methods(tmp_path: Path) -> None:
    """The randn weights: right shapes, finite, new on every run, and the
    same draws as the bindings (one seeded generator per method)."""
    pte = tutorial.save(tutorial.encode_decode(), tmp_path)
    program = Runtime.get().load_program(str(pte))
    for method, x, shape in [
        ("encode", torch.randn(1, 10), (1, 5)),
        ("decode", torch.randn(1, 5), (1, 10)),
    ]:
        runs = []
        for iters in ("1", "2"):
            out_dir = tmp_path / f"{method}_{iters}"
            stdout = _ember_run(
                pte, out_dir, (x,), "--method", method, "--warmup", "0", "--iters", iters
            )
            assert f"method '{method}'" in stdout
            (out,) = _outputs(out_dir, 1)
            assert out.shape == shape and torch.isfinite(out).all()
            runs.append(out)
        assert not torch.equal(runs[0], runs[1])  # the second run drew new weights
        (first,) = program.load_method(method).execute([x])
        torch.testing.assert_close(runs[0], first, rtol=0, atol=0)


def test_ember_run_random_inputs_and_inspect(tmp_path: Path) -> None:
    pte = tmp_path / "conv.pte"
    _program(SimpleConv(), (torch.randn(1, 3, 16, 16),)).save(pte)
    run = subprocess.run([_bin("ember-run"), str(pte)], capture_output=True, text=True, check=True)
    assert "float32 [1, 16, 16, 16]" in run.stdout
    inspect = subprocess.run([_bin("ember-inspect"), str(pte)], capture_output=True, text=True,
                             check=True).stdout
    # SimpleConv's convolution and relu are one fused op (passes/fuse_conv_activation.py).
    for words in ("method 'forward'", "ember_fused::fused_convolution.out",
                  "planned buffers", "plan efficiency", "constant segment"):
        assert words in inspect, words


def test_ember_inspect_reports_what_prepare_packs(tmp_path: Path) -> None:
    """ember-inspect loads the method and reports the prepared bytes, in total
    (the same number Method.prepared_bytes gives) and per instruction."""
    pte = tmp_path / "conv.pte"
    program = _program(SimpleConv(), (torch.randn(1, 3, 16, 16),))
    program.save(pte)
    expected = Runtime.get().load_program(str(pte)).load_method("forward").prepared_bytes
    assert expected >= 16 * 3 * 3 * 3 * 4  # the packed conv weight, at least
    inspect = subprocess.run([_bin("ember-inspect"), str(pte)], capture_output=True, text=True,
                             check=True).stdout
    match = re.search(r"prepared at load: .* \((\d+) bytes\) by (\d+) of (\d+) instructions",
                      inspect)
    assert match, inspect
    assert int(match.group(1)) == expected
    assert int(match.group(2)) >= 1
    assert re.search(r"\| \d+ \| ember_fused::fused_convolution\.out \| [\d.]+ [KM]?i?B \|",
                     inspect), inspect


def test_ember_run_reports_bad_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.pte"
    bad.write_bytes(b"\x00" * 4 + b"NOPE" + b"\x00" * 64)
    run = subprocess.run([_bin("ember-run"), str(bad)], capture_output=True, text=True, check=False)
    assert run.returncode == 1
    assert "file identifier is 'NOPE'" in run.stderr


def test_metadata_is_readable() -> None:
    program = Runtime.get().load_program(_program(Basic(), (torch.randn(3, 3), torch.randn(3, 3))).buffer)
    meta = program.metadata("forward")
    assert [i["sizes"] for i in meta["inputs"]] == [[3, 3], [3, 3]]
    assert meta["inputs"][0]["dtype"] == "float32"
    assert meta["outputs"][0]["dim_order"] == [0, 1]
    assert meta["planned_buffer_sizes"] and meta["planned_buffer_sizes"][0] >= 3 * 36


@pytest.mark.parametrize(
    "mangle, words",
    [
        (lambda b: b"", "too short"),
        (lambda b: b[: len(b) // 2], "truncated"),
        (lambda b: b[:4] + b"XX99" + b[8:], "file identifier is 'XX99'"),
    ],
    ids=["empty", "truncated", "wrong_identifier"],
)
def test_malformed_files_are_refused(mangle, words: str) -> None:
    good = _program(M(), (torch.randn(3, 4),)).buffer
    with pytest.raises(EmberError, match=words):
        Runtime.get().load_program(mangle(good))


def _rewrite(manager: exir.ExecutorchProgramManager, edit) -> bytes:
    emitted = manager.emitted
    doc = json.loads(emitted.json)
    edit(doc["execution_plan"][0])
    return bytes(_C.write_program(json.dumps(doc), emitted.constant_buffers,
                                  emitted.delegate_blobs))


def test_out_of_range_value_index_is_refused() -> None:
    manager = _program(Basic(), (torch.randn(3, 3), torch.randn(3, 3)))

    def edit(plan: dict) -> None:
        plan["outputs"] = [len(plan["values"]) + 5]

    with pytest.raises(EmberError, match="output 0: values index"):
        Runtime.get().load_program(_rewrite(manager, edit))


def test_planned_offset_past_buffer_is_refused() -> None:
    manager = _program(Basic(), (torch.randn(3, 3), torch.randn(3, 3)))

    def edit(plan: dict) -> None:
        plan["non_const_buffer_sizes"] = [0, 16]

    with pytest.raises(EmberError, match="past the end of buffer 1"):
        Runtime.get().load_program(_rewrite(manager, edit))


def test_segment_past_end_of_file_is_refused() -> None:
    buf = bytearray(_program(M(), (torch.randn(3, 4),)).buffer)
    # Cut into the constant segment and clear the header's segment size, so the
    # segment table alone disagrees with the file.
    del buf[-8:]
    buf[32:40] = bytes(8)
    with pytest.raises(EmberError, match="segment 0"):
        Runtime.get().load_program(bytes(buf))


def test_missing_kernel_fails_at_load_method_naming_the_op() -> None:
    manager = _program(Basic(), (torch.randn(3, 3), torch.randn(3, 3)))

    def edit(plan: dict) -> None:
        plan["operators"][0]["name"] = "aten::no_such_op"

    program = Runtime.get().load_program(_rewrite(manager, edit))
    with pytest.raises(EmberError, match=r"aten::no_such_op\.out.*OperatorMissing"):
        program.load_method("forward")


def test_wrong_inputs_are_refused_and_method_stays_usable() -> None:
    model = Basic()
    method = Runtime.get().load_program(
        _program(model, (torch.randn(3, 3), torch.randn(3, 3))).buffer).load_method("forward")
    with pytest.raises(EmberError, match="expected dtype float32, got int64"):
        method.execute([torch.ones(3, 3, dtype=torch.int64), torch.ones(3, 3)])
    with pytest.raises(EmberError, match=r"expected shape \[3, 3\], got \[3, 2\]"):
        method.execute([torch.ones(3, 3), torch.ones(3, 2)])
    with pytest.raises(EmberError, match="rank-2"):
        method.execute([torch.ones(9), torch.ones(3, 3)])
    with pytest.raises(ValueError, match="takes 2 inputs, got 1"):
        method.execute([torch.ones(3, 3)])
    x, y = torch.randn(3, 3), torch.randn(3, 3)
    (out,) = method.execute([x, y])
    torch.testing.assert_close(out, x + y)


def test_unknown_method_is_named() -> None:
    program = Runtime.get().load_program(_program(Basic(), (torch.randn(3, 3), torch.randn(3, 3))).buffer)
    with pytest.raises(EmberError, match="no method named 'decode'"):
        program.load_method("decode")


def test_load_from_path_and_bytes_agree(tmp_path: Path) -> None:
    manager = _program(M(), (torch.randn(3, 4),))
    path = tmp_path / "m.pte"
    manager.save(path)
    x = torch.randn(3, 4)
    a = Runtime.get().load_program(path).load_method().execute([x])[0]
    b = Runtime.get().load_program(manager.buffer).load_method().execute([x])[0]
    torch.testing.assert_close(a, b, rtol=0, atol=0)
    assert os.path.getsize(path) == len(manager.buffer)


class _ConvLinear(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(8, 16, 3, padding=1)
        self.depthwise = torch.nn.Conv2d(16, 16, 3, padding=1, groups=16)
        self.fc = torch.nn.Linear(16 * 6 * 6, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.depthwise(torch.relu(self.conv(x)))
        return self.fc(y.flatten(1))


def test_prepare_packs_constant_weights_once_at_load(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = _ConvLinear().eval()
    x = torch.randn(5, 8, 6, 6)
    program = _program(model, (x,))
    method = Runtime.get().load_program(program.buffer).load_method("forward")
    # The 3x3 conv's and the linear layer's weights are packed (at least
    # their size in float32); the depthwise conv takes no GEMM.
    conv_bytes = model.conv.weight.numel() * 4
    fc_bytes = model.fc.weight.numel() * 4
    assert method.prepared_bytes >= conv_bytes + fc_bytes
    assert method.prepared_bytes < 2 * (conv_bytes + fc_bytes) + 64 * 1024
    with torch.no_grad():
        want = model(x)
    for _ in range(3):  # Every run reads the one packed copy.
        (got,) = method.execute([x])
        torch.testing.assert_close(got, want, atol=1e-5 * float(want.abs().max()), rtol=1e-5)
    pte = tmp_path / "convlinear.pte"
    program.save(str(pte))
    out = _ember_run(pte, tmp_path / "out", (x,))
    assert "prepared at load" in out


class _SharedWeight(torch.nn.Module):
    """A convolution whose weight is also read by another op at execute."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(8, 16, 3, padding=1)
        self.other = torch.nn.Conv2d(16, 16, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # Scaled by the input, so export cannot fold it into a constant.
        return self.other(self.conv(x)) + (self.conv.weight * x.mean()).sum()


def test_packed_constants_are_dropped_from_a_mapped_file(tmp_path: Path) -> None:
    """Weights only prepare reads are handed back to the loader (an mmapped file
    drops their pages); one that another op reads at execute is not; results are
    the same as with the bytes in memory, run after run."""
    torch.manual_seed(0)
    model = _SharedWeight().eval()
    x = torch.randn(2, 8, 10, 10)
    program = _program(model, (x,))
    pte = tmp_path / "shared.pte"
    program.save(str(pte))
    mapped = Runtime.get().load_program(str(pte)).load_method("forward")
    in_memory = Runtime.get().load_program(program.buffer).load_method("forward")
    # `other`'s weight and both biases (packed by the blocked convolution's
    # prepare) are dropped; `conv`'s weight is not: it is summed at execute.
    kept_by_prepare = (model.other.weight, model.other.bias, model.conv.bias)
    assert mapped.dropped_constant_bytes == sum(t.numel() * 4 for t in kept_by_prepare)
    with torch.no_grad():
        want = model(x)
    for _ in range(3):
        (got,) = mapped.execute([x])
        (same,) = in_memory.execute([x])
        torch.testing.assert_close(got, same, rtol=0, atol=0)
        torch.testing.assert_close(got, want, atol=1e-5 * float(want.abs().max()), rtol=1e-5)


def test_pool_workers_sleep_when_the_method_is_idle() -> None:
    """After execute returns, the pool's workers wait in the kernel instead of
    spinning: the process uses next to no CPU while the caller sleeps."""
    import resource
    import time

    from ember import _C

    if _C.threads() < 2:
        pytest.skip("one thread: there is no pool")
    model = torch.nn.Linear(512, 512).eval()
    x = torch.randn(256, 512)  # 67 M multiply-adds: split over the pool
    method = Runtime.get().load_program(_program(model, (x,)).buffer).load_method("forward")
    method.execute([x])

    def cpu() -> float:
        r = resource.getrusage(resource.RUSAGE_SELF)
        return r.ru_utime + r.ru_stime

    before = cpu()
    time.sleep(0.2)
    assert cpu() - before < 0.02
