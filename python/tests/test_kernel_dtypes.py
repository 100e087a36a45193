"""The op list's dtype sets (``dtypes:`` in kernels/ops.yaml) are what the kernels compute.

``ember.testing.kernel_dtypes`` probes every kernel with OpInfo samples in
each of Ember's ten dtypes, calling the kernel itself (the load-time set check
off); this test reruns the probe and requires the op list to say the same, so
a kernel that gains or loses a dtype cannot leave the list behind. The check
the set drives is tested through real programs: one in the set loads and
runs, one outside it is refused by load_method with the op, the argument and
the set.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
_C = pytest.importorskip("ember._C")
pytest.importorskip("expecttest")  # the OpInfo database needs it

from ember.testing import kernel_dtypes  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
OP_LIST = ROOT / "kernels/ops.yaml"
sys.path.insert(0, str(ROOT / "tools"))
from gen_kernels import DTYPE_CODES, dtype_argument, entries_of, parse_dtypes  # noqa: E402
from kernel_schema import read_op_list  # noqa: E402


@pytest.fixture(scope="module")
def probed(tmp_path_factory) -> dict[str, kernel_dtypes.Probe]:
    # In its own process: OpInfo's generators walk the stack, slow under pytest's.
    out = tmp_path_factory.mktemp("probe") / "probe.json"
    subprocess.run([sys.executable, "-m", "ember.testing.kernel_dtypes", str(OP_LIST), "--json",
                    str(out)], check=True, stdout=subprocess.DEVNULL, timeout=600)
    return {op: kernel_dtypes.Probe(op, None, p["dtypes"], p["notes"])
            for op, p in json.loads(out.read_text()).items()}


def test_the_probe_covers_every_kernel_with_tensors_but_the_size_readers(probed):
    unprobed = sorted(op for op, p in probed.items()
                      if p.dtypes is None and not op.startswith("executorch_prim::"))
    assert unprobed == ["aten::_assert_scalar", "aten::_local_scalar_dense", "aten::sym_numel",
                        "aten::sym_size.int"]


def test_dtype_sets_are_what_the_kernels_compute(probed):
    listed = {e["op"]: e.get("dtypes") for e in read_op_list(OP_LIST)}
    wrong = []
    for op, p in probed.items():
        if p.dtypes is None:
            continue
        have = set(parse_dtypes(listed[op], op)) if listed[op] else None
        if have != set(p.dtypes):
            wrong.append(f"{op}: ops.yaml says {listed[op]!r}, the kernel computes "
                         f"{kernel_dtypes.format_dtypes(p.dtypes)!r} ({'; '.join(p.notes[:3])})")
    assert not wrong, ("rerun `python -m ember.testing.kernel_dtypes kernels/ops.yaml --write`:\n"
                       + "\n".join(wrong))


def test_every_kernel_with_a_tensor_has_a_dtype_set():
    missing = [e.op for e in entries_of(read_op_list(OP_LIST))
               if dtype_argument(e.schema) is not None and e.dtypes is None]
    assert not missing, missing


def test_sets_are_narrow_where_the_kernels_are():
    sets = {e.op: set(e.dtypes or []) for e in entries_of(read_op_list(OP_LIST))}
    floats = {"float16", "float32", "float64", "bfloat16"}
    assert sets["aten::gelu.out"] == floats
    assert sets["aten::bitwise_not.out"] == {"uint8", "int8", "int16", "int32", "int64", "bool"}
    assert sets["quantized_decomposed::choose_qparams.Tensor_out"] == {"float32"}
    assert sets["aten::add.out"] == set(DTYPE_CODES)


def _program(fn, *args) -> bytes:
    from ember.exir import to_edge

    class M(torch.nn.Module):
        def forward(self, *xs):
            return fn(*xs)

    return to_edge(torch.export.export(M(), args)).to_executorch().buffer


def test_load_refuses_a_dtype_outside_the_set_and_names_it():
    from ember.runtime import Runtime

    gelu = torch.nn.functional.gelu
    rt = Runtime.get()
    x = torch.tensor([0.25, -1.0, 3.0])
    (got,) = rt.load_program(_program(gelu, x)).load_method("forward").execute([x])
    torch.testing.assert_close(torch.as_tensor(got), gelu(x))
    # torch.export traces gelu on int16 (fake tensors do not check the dtype);
    # eager and the kernel refuse it. load_method says so before any execute.
    program = rt.load_program(_program(gelu, torch.arange(6, dtype=torch.int16)))
    with pytest.raises(RuntimeError, match=r"instruction 0: aten::gelu.out: self has dtype int16; "
                                           r"the kernel computes float16, float32, float64, bfloat16"):
        program.load_method("forward")


def test_call_kernel_checks_the_set_unless_probing():
    x = torch.arange(6, dtype=torch.int16)
    out = torch.empty(6, dtype=torch.int16)
    with pytest.raises(RuntimeError, match=r"aten::gelu.out: self has dtype int16; "
                                           r"the kernel computes float16, float32, float64, bfloat16"):
        _C.call_kernel("aten::gelu.out", [x, "none", out])
    # With the set check off, the kernel's own refusal is what the probe reads.
    with pytest.raises(RuntimeError, match=r"self: unsupported dtype int16"):
        _C.call_kernel("aten::gelu.out", [x, "none", out], check_dtypes=False)
