"""Weights outside the program (#17): ``ExecutorchBackendConfig(external_constants=...)``
writes constants to a named-data file (``.ptd``, FlatTensor) that the runtime maps
beside the program; missing or mismatched data is a named error at load_method."""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
from pathlib import Path

import pytest
import torch
from installed import tool

from ember.exir import ExecutorchBackendConfig, to_edge
from ember.runtime import EmberError, Runtime

SCHEMA_DIR = Path(__file__).resolve().parents[2] / "schema"
DEFAULT = "_default_external_constant.ptd"


class TiedLM(torch.nn.Module):
    """Embedding tied to the head, a hidden linear layer, a buffer."""

    def __init__(self, vocab: int = 300, dim: int = 24) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, dim)
        self.fc = torch.nn.Linear(dim, dim)
        self.head = torch.nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.embed.weight
        self.register_buffer("scale", torch.tensor([0.5]))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(torch.tanh(self.fc(self.embed(tokens)) * self.scale))


def _lower(model: torch.nn.Module, x: torch.Tensor, external) -> object:
    ep = torch.export.export(model, (x,))
    return to_edge(ep).to_executorch(ExecutorchBackendConfig(external_constants=external))


def _check(got: torch.Tensor, want: torch.Tensor) -> None:
    assert float((got - want).abs().max()) <= 1e-5 * float(want.abs().max())


@pytest.fixture(scope="module")
def lowered():
    torch.manual_seed(0)
    model = TiedLM().eval()
    x = torch.randint(0, 300, (2, 5))
    return model, x, _lower(model, x, True), _lower(model, x, False)


def test_data_files_stream_the_in_memory_writers_bytes(tmp_path: Path) -> None:
    """write_tensor_data_to_file before data_files streams each .ptd from the
    constants' memory; the bytes are data_files', and the pair runs."""
    torch.manual_seed(1)
    model = TiedLM().eval()
    x = torch.randint(0, 300, (2, 5))
    et = _lower(model, x, True)
    paths = et.write_tensor_data_to_file(tmp_path)
    assert "data_files" not in et.__dict__  # streamed, not built in memory
    assert paths == [str(tmp_path / DEFAULT)]
    assert Path(paths[0]).read_bytes() == et.data_files[DEFAULT]
    et.save(tmp_path / "m.pte")
    got = Runtime.get().load_program(tmp_path / "m.pte", data=paths[0]).load_method().execute([x])
    _check(got[0], model(x))


def test_all_constants_move_to_the_data_file(lowered, tmp_path: Path) -> None:
    model, x, et, inside = lowered
    weights = sum(p.numel() * 4 for p in model.parameters())  # the tied weight once
    assert list(et.data_files) == [DEFAULT]
    ptd = et.data_files[DEFAULT]
    assert weights <= len(ptd) < weights * 1.1, "the tied weight is stored once"
    assert len(et.buffer) < 8192 < len(inside.buffer)
    paths = et.write_tensor_data_to_file(tmp_path)
    assert paths == [str(tmp_path / DEFAULT)]
    pte = tmp_path / "m.pte"
    et.save(pte)
    want = model(x)
    _check(Runtime.get().load_program(pte, data=paths[0]).load_method().execute([x])[0], want)
    _check(Runtime.get().load_program(et.buffer, data=ptd).load_method().execute([x])[0], want)
    out = tmp_path / "out"
    out.mkdir()
    np_x = tmp_path / "x.npy"
    import numpy as np

    np.save(np_x, x.numpy())
    subprocess.run([tool("ember-run"), str(pte), "--data", paths[0], "--input", str(np_x),
                    "--save-outputs", str(out), "--iters", "1"], check=True, capture_output=True)
    _check(torch.from_numpy(np.load(out / "output_0.npy")), want)


def test_missing_or_wrong_data_is_named_at_load(lowered, tmp_path: Path) -> None:
    model, x, et, _ = lowered
    with pytest.raises(EmberError, match="is stored outside the program; load its .ptd"):
        Runtime.get().load_program(et.buffer).load_method()
    other = _lower(torch.nn.Sequential(torch.nn.Linear(3, 4)), torch.randn(2, 3), True)
    with pytest.raises(EmberError, match="is not in the named data file"):
        Runtime.get().load_program(et.buffer, data=other.data_files[DEFAULT]).load_method()
    ptd = et.data_files[DEFAULT]
    with pytest.raises(EmberError, match="named data file"):
        Runtime.get().load_program(et.buffer, data=ptd[: len(ptd) // 2])
    with pytest.raises(TypeError, match="as bytes too"):
        Runtime.get().load_program(et.buffer, data=str(tmp_path / "x.ptd"))


def test_a_callable_chooses_tensors_and_files(tmp_path: Path) -> None:
    torch.manual_seed(1)
    model = TiedLM().eval()
    x = torch.randint(0, 300, (1, 4))
    et = _lower(model, x, lambda node: "weights" if "weight" in str(node.target) + node.name
                else None)
    assert list(et.data_files) == ["weights.ptd"]
    ptd = et.data_files["weights.ptd"]
    assert len(ptd) < 300 * 24 * 4 + 24 * 24 * 4 + 4096  # no biases, no buffer
    _check(Runtime.get().load_program(et.buffer, data=ptd).load_method().execute([x])[0], model(x))
    with pytest.raises(ValueError, match="a file name without '/'"):
        _lower(model, x, lambda node: "a/b").data_files


def test_two_methods_share_one_copy_of_their_weights() -> None:
    torch.manual_seed(2)
    model = TiedLM().eval()
    eps = {name: torch.export.export(model, (torch.randint(0, 300, (1, n)),))
           for name, n in (("prefill", 6), ("decode", 1))}
    et = to_edge(eps).to_executorch(ExecutorchBackendConfig(external_constants=True))
    ptd = et.data_files[DEFAULT]
    assert len(ptd) < 1.1 * sum(p.numel() * 4 for p in model.parameters())
    program = Runtime.get().load_program(et.buffer, data=ptd)
    for name, n in (("prefill", 6), ("decode", 1)):
        x = torch.randint(0, 300, (1, n))
        _check(program.load_method(name).execute([x])[0], model(x))


@pytest.mark.skipif(shutil.which("flatc") is None, reason="flatc is not installed")
def test_flatc_reads_the_data_file(lowered, tmp_path: Path) -> None:
    """A second, independent reader (flatc with schema/flat_tensor.fbs)."""
    _, _, et, _ = lowered
    ptd = et.data_files[DEFAULT]
    assert ptd[4:8] == b"FT01" and ptd[8:12] == b"FH01"
    (flatbuffer_size,) = struct.unpack_from("<Q", ptd, 16)
    (binary := tmp_path / "data.bin").write_bytes(ptd[:flatbuffer_size])
    subprocess.run(["flatc", "--json", "--strict-json", "--defaults-json", "--raw-binary", "-I", str(SCHEMA_DIR),
                    "-o", str(tmp_path), str(SCHEMA_DIR / "flat_tensor.fbs"), "--", str(binary)],
                   check=True, capture_output=True)
    data = json.loads((tmp_path / "data.json").read_text())
    keys = {e["key"]: e for e in data["named_data"]}
    # The tied weight is one parameter (export names it head.weight); the
    # folded transposes are constants of their own (folded_N).
    assert {"head.weight", "fc.bias", "scale"} <= set(keys)
    embed = keys["head.weight"]["tensor_layout"]
    assert embed["sizes"] == [300, 24] and embed["dim_order"] == [0, 1]
    assert embed["scalar_type"] == "FLOAT32"
    segments = data["segments"]
    assert all(0 <= e["segment_index"] < len(segments) for e in keys.values())
