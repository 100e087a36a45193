"""A fixed, representative slice of the core ATen conformance suite, in ``make test``.

Each case is one of PyTorch's OpInfo samples of a core ATen overload, exported
as a one-op program, lowered, run by the C++ runtime and compared with eager
(``ember.testing.conformance``). Every case here passes today, so a failure is
a regression. The full sweep is ``make op-coverage`` (docs/op-coverage.md).
"""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("ember._C")
pytest.importorskip("expecttest")  # torch.testing._internal needs it for the OpInfo database

from ember.testing.conformance import Runner, _bound_args, compare  # noqa: E402
from ember.testing.op_samples import core_ops, exclusion, pick  # noqa: E402

# (overload, (dtype, sample index), (dtype, sample index)): the indices are
# samples `make op-coverage` runs (the first and the last PyTorch generates).
CASES_BY_OP: list[tuple[str, tuple[str, int], tuple[str, int]]] = [
    ("aten.add.Tensor", ("float32", 10), ("int64", 0)),
    ("aten.sub.Tensor", ("float32", 0), ("int32", 10)),
    ("aten.mul.Tensor", ("float16", 8), ("bool", 0)),
    ("aten.div.Tensor", ("float32", 0), ("int64", 8)),
    ("aten.relu.default", ("float32", 3), ("int8", 0)),
    ("aten.sigmoid.default", ("float32", 2), ("float64", 0)),
    ("aten.tanh.default", ("float32", 0), ("bfloat16", 0)),
    ("aten.clamp.default", ("float32", 6), ("int64", 0)),
    ("aten.mm.default", ("float32", 2), ("float64", 0)),
    ("aten.addmm.default", ("float32", 11), ("int32", 0)),
    ("aten.bmm.default", ("float32", 18), ("float16", 0)),
    ("aten.convolution.default", ("float32", 0), ("float64", 0)),
    ("aten._softmax.default", ("float32", 6), ("float64", 0)),
    ("aten._log_softmax.default", ("float32", 0), ("bfloat16", 6)),
    ("aten.cat.default", ("float32", 8), ("bool", 0)),
    ("aten._to_copy.default", ("float32", 0), ("int32", 10)),
    ("aten.native_layer_norm.default", ("float32", 5), ("float64", 0)),
    ("aten.native_group_norm.default", ("float32", 0), ("float64", 20)),
    ("aten._native_batch_norm_legit_no_training.default", ("float32", 5), ("float16", 0)),
    ("aten._adaptive_avg_pool2d.default", ("float32", 3), ("float64", 0)),
    ("aten.avg_pool2d.default", ("float32", 0), ("int64", 6)),
    ("aten.max_pool2d_with_indices.default", ("float32", 1439), ("uint8", 0)),
    ("aten.constant_pad_nd.default", ("float32", 50), ("bool", 0)),
    ("aten.index_select.default", ("float32", 0), ("int64", 2)),
    ("aten.sum.dim_IntList", ("float32", 15), ("int32", 0)),
    ("aten.amax.default", ("float32", 0), ("int16", 19)),
    ("aten.argmax.default", ("float32", 12), ("uint8", 0)),
    ("aten.cumsum.default", ("float32", 0), ("int64", 3)),
    ("aten.mean.dim", ("float32", 15), ("float16", 0)),
    ("aten.gelu.default", ("float32", 0), ("float64", 7)),
    ("aten.upsample_nearest2d.vec", ("float32", 3), ("uint8", 0)),
    ("aten.scatter.src", ("float32", 7), ("int8", 0)),
    ("aten.arange.start_step", ("float32", 3), ("int64", 0)),
    ("aten.full.default", ("float16", 1), ("bool", 0)),
    # Fixed with the second coverage sweep: 3-D and float16/int64 convolution,
    # bicubic and float16 grid sampling, _embedding_bag, sort/topk ties (indices
    # checked for consistency), ops PyTorch decomposes (run as decomposed),
    # as_strided over its storage, split_with_sizes' void return slot, bool
    # constants of torch.empty.
    ("aten.convolution.default", ("float32", 19), ("int64", 0)),
    ("aten.grid_sampler_2d.default", ("float64", 17), ("float16", 0)),
    ("aten._embedding_bag.default", ("float32", 2), ("bfloat16", 0)),
    ("aten.sort.default", ("int8", 0), ("bool", 0)),
    ("aten.topk.default", ("uint8", 0), ("int32", 0)),
    ("aten.reflection_pad2d.default", ("float32", 3), ("int64", 0)),
    ("aten.select_scatter.default", ("float32", 4), ("bool", 0)),
    ("aten.as_strided.default", ("float32", 7), ("bool", 7)),
    ("aten.split_with_sizes.default", ("float32", 3), ("int8", 0)),
    ("aten.empty.memory_format", ("bool", 0), ("float32", 0)),
]


def _cases() -> list[tuple[str, str, int]]:
    return [(op, dtype, index) for op, *cases in CASES_BY_OP for dtype, index in cases]


@pytest.fixture(scope="module")
def runner():
    r = Runner(timeout=60.0)
    yield r
    r.stop()


@pytest.mark.parametrize(("op", "dtype", "index"), _cases())
def test_case_passes(runner: Runner, op: str, dtype: str, index: int) -> None:
    result = runner.run(op, dtype, index)
    assert result.status == "pass", f"{result.status} ({result.reason}): {result.detail}"


def test_every_core_op_is_tested_or_excluded_with_a_reason() -> None:
    ops = core_ops()
    assert len(ops) > 150
    for op in ops:
        reason = exclusion(op)
        assert reason is None or len(reason) > 10
    assert exclusion("aten.convolution_backward.default")
    assert exclusion("aten.add.Tensor") is None


def test_compare_catches_wrong_values() -> None:
    want = torch.tensor([1.0, 2.0, float("nan")])
    assert compare([want.clone()], want, torch.float32, "values") is None
    assert compare([want + 1e-3], want, torch.float32, "values")[0] == "mismatch"
    assert compare([torch.tensor([1, 2])], torch.tensor([1, 3]), torch.int64, "values")
    assert compare([want.double()], want, torch.float32, "values")  # dtype differs
    assert compare([], want, torch.float32, "values")  # output missing


def test_compare_sort_allows_tie_order_but_checks_indices() -> None:
    x = torch.tensor([[3, 1, 1, 2], [0, 0, 5, 5]], dtype=torch.int8)
    args = _bound_args(torch.ops.aten.sort.default, (x, 1), {})
    values, indices = torch.sort(x, dim=1)
    swapped = indices.clone()
    swapped[0, 0], swapped[0, 1] = indices[0, 1], indices[0, 0]  # Both point at a 1.
    assert compare([values, swapped], (values, indices), torch.int8, "sort", args) is None
    wrong = indices.clone()
    wrong[1, 0], wrong[1, 2] = indices[1, 2], indices[1, 0]  # A 5 where a 0 belongs.
    assert compare([values, wrong], (values, indices), torch.int8, "sort", args)[0] == "mismatch"
    repeated = indices.clone()
    repeated[0, 1] = repeated[0, 0]
    assert compare([values, repeated], (values, indices), torch.int8, "sort", args)
    assert compare([values + 1, indices], (values, indices), torch.int8, "sort", args)
    # A stable sort's order among ties is specified: indices must match.
    stable = _bound_args(torch.ops.aten.sort.stable, (x,), {"dim": 1, "stable": True})
    assert compare([values, swapped], (values, indices), torch.int8, "sort", stable)


def test_pick_spreads_samples() -> None:
    assert pick(3, 4) == [0, 1, 2]
    assert pick(10, 2) == [0, 9]
    assert pick(9, 3) == [0, 4, 8]
