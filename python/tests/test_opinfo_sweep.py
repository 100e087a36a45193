"""The OpInfo sweep (``make op-coverage-opinfo``) on a handful of entries, and its classifier.

The entries that pass run through ``opinfo_sweep.sweep``, the code path of the
full sweep (worker process, time box, classification); the classifier is
checked on cases whose cause is known: an op export leaves outside the core
opset, a complex output, and a custom op with an out variant but no kernel.
"""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("ember._C")
pytest.importorskip("expecttest")  # torch.testing._internal needs it for the OpInfo database

from ember.testing import opinfo_sweep  # noqa: E402
from ember.testing.opinfo_report import missing_ops, write_report  # noqa: E402

PASSING = ["nn.functional.gelu", "linalg.vector_norm", "histc", "sort", "narrow", "cummax",
           "logcumsumexp", "nn.functional.embedding_bag", "nn.functional.adaptive_max_pool1d"]
KNOWN = {
    "fft.fft": ("limit", "unsupported dtype: complex output (Ember has no complex dtypes)"),
    "nn.functional.linear_cross_entropy:chunked": (
        "limit", "training-only op: torch_nn._linear_cross_entropy_batch_chunked.default: "
        + opinfo_sweep._CHUNKED_CE),
}


@pytest.fixture(scope="module")
def swept() -> dict:
    return opinfo_sweep.sweep([*PASSING, *KNOWN], (torch.float32,), max_samples=1, timeout=60.0)


def test_entries_pass(swept: dict) -> None:
    results = [r for r in swept["results"] if r["opinfo"] in PASSING]
    assert sorted(r["opinfo"] for r in results) == sorted(PASSING)
    for r in results:
        assert r["status"] == "pass", f"{r['opinfo']}: {r['status']} ({r['cause']}): {r['detail']}"


def test_known_causes(swept: dict) -> None:
    for key, (status, cause) in KNOWN.items():
        (r,) = [r for r in swept["results"] if r["opinfo"] == key]
        assert (r["status"], r["cause"]) == (status, cause), r["detail"]


@pytest.fixture(scope="module")
def not_core() -> dict:
    """masked_select as it was before Ember decomposed it: an op export leaves outside
    the core opset that nothing decomposes (run in this process, without Ember's
    decomposition)."""
    from dataclasses import asdict

    from torch.testing._internal.opinfo.core import SampleInput

    from ember.exir.passes.ember_decompositions import EMBER_DECOMPOSITIONS

    op = torch.ops.aten.masked_select.default
    saved = EMBER_DECOMPOSITIONS.pop(op)
    try:
        sample = SampleInput(torch.randn(3, 4), args=(torch.rand(3, 4) > 0.5,))
        result = opinfo_sweep.run_case("masked_select", torch.float32, sample,
                                       op=torch.masked_select)
    finally:
        EMBER_DECOMPOSITIONS[op] = saved
    return asdict(result)


def test_op_left_by_export_is_classified(not_core: dict) -> None:
    assert (not_core["status"], not_core["cause"]) == (
        "missing", "not core ATen: aten.masked_select.default"), not_core["detail"]


def test_report_counts_missing_ops(swept: dict, not_core: dict, tmp_path) -> None:
    swept = {**swept, "results": [*swept["results"], not_core],
             "entries": {**swept["entries"], "masked_select": {
                 "other_dtypes": [], "skipped": {}, "no_samples": [], "generator_errors": {},
                 "seconds": 0}}}
    summary = write_report(swept, str(tmp_path / "report.md"))
    assert f"{len(PASSING)} pass" in summary
    text = (tmp_path / "report.md").read_text()
    assert "| `aten.masked_select.default` | 1 | 1 | `masked_select` |" in text
    assert [op for op, _, _ in missing_ops(swept["results"], "not core ATen: ")] == [
        "aten.masked_select.default"]


_LIB = torch.library.Library("ember_opinfo_test", "DEF")
_LIB.define("twice(Tensor x) -> Tensor")
_LIB.define("twice.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)")
_LIB.impl("twice", lambda x: x * 2, "CompositeExplicitAutograd")
_LIB.impl("twice.out", lambda x, out: out.copy_(x * 2), "CompositeExplicitAutograd")


def test_op_without_kernel_is_classified() -> None:
    from torch.testing._internal.opinfo.core import SampleInput

    result = opinfo_sweep.run_case("ember_opinfo_test.twice", torch.float32,
                                   SampleInput(torch.randn(3, 4)),
                                   op=torch.ops.ember_opinfo_test.twice)
    assert result.status == "missing", result.detail
    assert result.cause == "no kernel: ember_opinfo_test::twice.out"
    assert result.ops == ["ember_opinfo_test::twice.out"]
    assert "OperatorMissing" in result.detail


def test_messages_group_by_their_text_not_their_numbers() -> None:
    a = opinfo_sweep.normalise("execute: aten::cat.out: dim 3 out of range for 2-d input [3, 4]")
    b = opinfo_sweep.normalise("execute: aten::cat.out: dim 1 out of range for 0-d input [7]")
    assert a == b
    assert "aten::cat.out" in a


def test_sparse_and_complex_inputs_are_skipped_as_limits() -> None:
    from torch.testing._internal.opinfo.core import SampleInput

    assert "sparse" in opinfo_sweep.input_limit(SampleInput(torch.eye(3).to_sparse()))
    assert "complex" in opinfo_sweep.input_limit(SampleInput(torch.ones(2, dtype=torch.cfloat)))
    assert opinfo_sweep.input_limit(SampleInput(torch.ones(2), args=(1,))) is None
