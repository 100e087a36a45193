"""Everything the XNNPACK partitioner claims lowers, passes the runtime's
blob checks, loads and matches eager, over:

- every zoo model at its small size (``model_zoo.MODELS``);
- one-op programs from the conformance samples (``op_samples``, float32, a
  few samples per op the registry lists, inputs as the samples give them,
  e.g. transposed, and again channels-last where rank 4);
- small modules that make each registered op claimable (constant weights),
  rank-4 and other ranks, NHWC and natural delegates, channels-last and
  permuted inputs, a weight shared by two delegates.

Per program: ``to_backend`` must not raise (no ``XnnpackLoweringError``),
every blob passes ``ember._C.check_xnnpack_graph``, and the program loads
and runs, with error relative to the output's magnitude below 1e-4 (single
ops) or 1e-3 (models, as the XNNPACK issue asks). Run with ``-s`` for the
totals (programs, claimed nodes, blobs checked).
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch.export import export

from ember import _C
from ember.backends.xnnpack import XnnpackPartitioner
from ember.backends.xnnpack.ops.registry import REGISTRY
from ember.exir import to_edge
from ember.exir.backend.partitioner import DELEGATION_TAG
from ember.runtime import Runtime
from test_xnnpack_backend import Lambda

TOTALS = {"programs": 0, "claimed": 0, "blobs": 0, "delegated programs": 0}


@pytest.fixture(scope="module", autouse=True)
def totals():
    yield
    print("\nXNNPACK partition sweep:", ", ".join(f"{k} {v}" for k, v in TOTALS.items()))


def _claimed_ops(program) -> list[str]:
    """Op names of the call nodes a partition tagged (getitems aside)."""
    names = []
    for n in program.graph_module.graph.nodes:
        target = getattr(n.target, "op", n.target)
        if (n.op == "call_function" and DELEGATION_TAG in n.meta
                and isinstance(target, torch._ops.OpOverload)):
            names.append(f"aten.{target._schema.name.split('::')[1]}.{target._overloadname}")
    return names


class CountingPartitioner(XnnpackPartitioner):
    """Records the call nodes the partition tags."""

    def __init__(self) -> None:
        super().__init__()
        self.claimed: list[str] = []

    def partition(self, exported_program):
        result = super().partition(exported_program)
        self.claimed = _claimed_ops(exported_program)
        return result


def relative_error(got: torch.Tensor, want: torch.Tensor) -> float:
    if not want.dtype.is_floating_point:
        return 0.0 if torch.equal(got, want) else float("inf")
    if got.shape != want.shape:
        return float("inf")
    same = (got == want) | (got.isnan() & want.isnan())
    if bool(same.all()):
        return 0.0
    finite = want.isfinite()
    if bool((~same & ~finite).any()):
        return float("inf")
    scale = float(want[finite].abs().max()) if bool(finite.any()) else 1.0
    return float((got - want).abs()[finite & ~same].max()) / max(scale, 1e-6)


def check_program(model: torch.nn.Module, inputs: tuple, tolerance: float) -> list[str]:
    """Partitions, lowers, checks, loads and runs; returns the claimed ops."""
    with torch.no_grad():
        expected = model(*inputs)
    try:
        exported = export(model, inputs, strict=False)
    except Exception:  # noqa: BLE001 - e.g. a conformance sample export cannot trace
        pytest.skip("does not export")
    edge = to_edge(exported)
    partitioner = CountingPartitioner()
    lowered = edge.to_backend(partitioner)  # must not raise: every claim lowers
    blobs = [m.processed_bytes for _, m in lowered.exported_program().graph_module.named_children()
             if hasattr(m, "processed_bytes")]
    for blob in blobs:
        _C.check_xnnpack_graph(blob)
    TOTALS["programs"] += 1
    TOTALS["claimed"] += len(partitioner.claimed)
    TOTALS["blobs"] += len(blobs)
    TOTALS["delegated programs"] += bool(blobs)
    program = lowered.to_executorch()
    try:
        method = Runtime.get().load_program(program.buffer).load_method("forward")
    except Exception:  # noqa: BLE001 - judged below: delegation must not be the cause
        if not blobs:
            pytest.skip("the portable program does not load (a missing kernel)")
        # Delegation must not be why it fails: the portable program must fail too.
        portable = edge.to_executorch()
        with pytest.raises(Exception):  # noqa: B017
            Runtime.get().load_program(portable.buffer).load_method("forward")
        pytest.skip("the portable program does not load either (a missing kernel)")
    got = method.execute(list(inputs))
    want = list(expected) if isinstance(expected, (tuple, list)) else [expected]
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        err = relative_error(g, w)
        assert err <= tolerance, f"relative error {err:.3g} > {tolerance}"
    return partitioner.claimed


# -- zoo models -----------------------------------------------------------------


@pytest.mark.parametrize("name", ["mobilenet_v2", "resnet18", "resnet50", "vit_base", "bert_base",
                                  "gpt2", "whisper_base"])
def test_zoo_model(name):
    pytest.importorskip("transformers")
    from ember.testing.model_zoo import MODELS, build

    assert name in MODELS
    model, inputs = build(name, "small")
    check_program(model, inputs, 1e-3)


# -- one-op programs from the conformance samples -------------------------------

# max_pool2d's OpInfo makes ~1,400 samples (15 s): the modules below cover it.
_SKIP_SAMPLES = {"aten.max_pool2d_with_indices.default"}
_PER_OP = 1


def _sample_cases() -> list[tuple[str, int]]:
    from ember.testing.op_samples import core_ops

    core = set(core_ops())
    return [(name, i) for name in sorted(REGISTRY) if name in core and name not in _SKIP_SAMPLES
            for i in range(_PER_OP)]


@pytest.mark.parametrize("channels_last", [False, True], ids=["as-given", "channels-last"])
@pytest.mark.parametrize("name,index", _sample_cases())
def test_one_op_sample(name, index, channels_last):
    from ember.testing.conformance import OneOp
    from ember.testing.op_samples import op_from_name, pick, samples

    kept = samples(name, torch.float32)
    chosen = pick(len(kept), _PER_OP)
    if index >= len(chosen):
        pytest.skip("fewer samples")
    sample = kept[chosen[index]]
    leaves, spec = torch.utils._pytree.tree_flatten((sample.args, sample.kwargs))
    slots = [i for i, v in enumerate(leaves) if isinstance(v, torch.Tensor)]
    inputs = [leaves[i].clone() for i in slots]
    if channels_last:
        if not any(t.dim() == 4 for t in inputs):
            pytest.skip("no rank-4 input")
        inputs = [t.contiguous(memory_format=torch.channels_last) if t.dim() == 4 else t
                  for t in inputs]
    constants = [None if isinstance(v, torch.Tensor) else v for v in leaves]
    module = OneOp(op_from_name(name), spec, constants, slots, False)
    check_program(module, tuple(inputs), 1e-4)


# -- modules that make every registered op claimable ----------------------------


Fn = Lambda  # fn(modules, *inputs) as a module


def _conv(cin=3, cout=8, **kw) -> torch.nn.Conv2d:
    return torch.nn.Conv2d(cin, cout, kw.pop("k", 3), **{"padding": 1, **kw})


def _bn(c: int, dims: int = 2) -> torch.nn.Module:
    bn = torch.nn.BatchNorm2d(c) if dims == 2 else torch.nn.BatchNorm1d(c)
    bn.running_mean.uniform_(-1, 1)
    bn.running_var.uniform_(0.5, 2)
    return bn


def _img(*shape, channels_last=False) -> torch.Tensor:
    x = torch.randn(*shape)
    return x.contiguous(memory_format=torch.channels_last) if channels_last else x


def _cases() -> dict[str, tuple[torch.nn.Module, tuple]]:
    torch.manual_seed(0)
    img = _img(1, 3, 8, 8)
    cases = {
        "conv-relu": (Fn(lambda m, x: torch.relu(m[0](x)), _conv()), (img,)),
        "conv-channels-last": (Fn(lambda m, x: torch.relu(m[0](x)), _conv()),
                               (_img(1, 3, 8, 8, channels_last=True),)),
        "depthwise-relu6": (Fn(lambda m, x: F.relu6(m[0](x)), _conv(8, 8, groups=8)),
                            (_img(1, 8, 6, 6),)),
        "conv-batchnorm-hardswish": (Fn(lambda m, x: F.hardswish(m[1](m[0](x))), _conv(), _bn(8)),
                                     (img,)),
        "batchnorm-4d": (Fn(lambda m, x: m[0](x), _bn(3)), (img,)),
        "batchnorm-2d": (Fn(lambda m, x: m[0](x), _bn(6, 1)), (torch.randn(4, 6),)),
        "linear": (torch.nn.Linear(6, 4), (torch.randn(3, 6),)),
        "linear-no-bias": (torch.nn.Linear(6, 4, bias=False), (torch.randn(3, 6),)),
        "linear-rank-3": (torch.nn.Linear(6, 4), (torch.randn(2, 3, 6),)),
        "linear-twice": (Fn(lambda m, x: m[0](torch.tanh(m[0](x))), torch.nn.Linear(6, 6)),
                         (torch.randn(2, 6),)),
        "max-pool": (Fn(lambda m, x: F.max_pool2d(m[0](x), 2), _conv()), (img,)),
        "max-pool-ceil": (Fn(lambda m, x: F.max_pool2d(m[0](x), 3, 2, 1, ceil_mode=True), _conv()),
                          (_img(1, 3, 9, 9),)),
        "avg-pool": (Fn(lambda m, x: F.avg_pool2d(m[0](x), 2), _conv()), (img,)),
        "adaptive-avg-pool": (Fn(lambda m, x: F.adaptive_avg_pool2d(m[0](x), 2), _conv()), (img,)),
        "global-pool-flatten-linear": (
            Fn(lambda m, x: m[1](F.adaptive_avg_pool2d(m[0](x), 1).flatten(1)), _conv(),
               torch.nn.Linear(8, 5)), (img,)),
        "mean-hw": (Fn(lambda m, x: m[0](x).mean((2, 3)), _conv()), (img,)),
        "mean-hw-keepdim": (Fn(lambda m, x: m[0](x).mean((-1, -2), keepdim=True), _conv()),
                            (img,)),
        "softmax-channels": (Fn(lambda m, x: torch.softmax(m[0](x), 1), _conv()), (img,)),
        "softmax-last-dim": (Fn(lambda m, x: torch.softmax(x * 2, -1)), (torch.randn(2, 3, 5),)),
        "pad-4d": (Fn(lambda m, x: F.pad(m[0](x), (1, 2, 0, 1), value=0.5), _conv()), (img,)),
        "pad-2d": (Fn(lambda m, x: F.pad(x + 1, (2, 1))), (torch.randn(3, 4),)),
        "clone": (Fn(lambda m, x: torch.relu(x).clone() * 2), (torch.randn(3, 4),)),
        "reshape-natural": (Fn(lambda m, x: torch.relu(x).reshape(4, 6) + 1),
                            (torch.randn(2, 3, 4),)),
        "upsample-bilinear": (Fn(lambda m, x: F.interpolate(m[0](x), scale_factor=2,
                                                            mode="bilinear"), _conv()), (img,)),
        "upsample-align-corners": (Fn(lambda m, x: F.interpolate(m[0](x), size=(11, 13),
                                                                 mode="bilinear",
                                                                 align_corners=True), _conv()),
                                   (img,)),
        "elu-leaky-relu": (Fn(lambda m, x: F.leaky_relu(F.elu(x, 0.7), 0.2)), (torch.randn(4, 5),)),
        "unary-math": (Fn(lambda m, x: torch.sqrt(torch.abs(-x)) + torch.floor(x) - torch.ceil(x)
                          + torch.sigmoid(x)), (torch.randn(2, 3, 4, 5),)),
        "clamp": (Fn(lambda m, x: torch.clamp(x, -0.5, 0.25) + torch.clamp(x, min=0.1)),
                  (torch.randn(6),)),
        "binary-broadcast-4d": (Fn(lambda m, x, y: torch.maximum(m[0](x) - y, m[0](x) * 0.5)
                                   / (torch.minimum(y, y * 2).abs() + 1), _conv()),
                                (img, torch.randn(1, 8, 1, 8))),
        "binary-constant-4d": (Fn(lambda m, x: m[0](x) + m[1].weight.reshape(1, 8, 1, 1),
                                  _conv(), _bn(8)), (img,)),
        "binary-rank-5": (Fn(lambda m, x, y: x * y + 1), (torch.randn(1, 2, 3, 4, 5),
                                                           torch.randn(2, 1, 4, 1))),
        "elementwise-channels-last": (Fn(lambda m, x: torch.sigmoid(x) * 3 - x),
                                      (_img(1, 3, 4, 5, channels_last=True),)),
        "channels-last-to-softmax": (Fn(lambda m, x: torch.softmax(x + 1, -1)),
                                     (_img(1, 3, 4, 5, channels_last=True),)),
        "permuted-input-relu": (Fn(lambda m, x: torch.relu(x.permute(0, 2, 1)) + 1),
                                (torch.randn(2, 3, 4),)),
        "nhwc-permute-conv": (Fn(lambda m, x: m[0](x.permute(0, 3, 1, 2)), _conv()),
                              (torch.randn(1, 8, 8, 3),)),
        "conv-output-permuted": (Fn(lambda m, x: torch.relu(m[0](x)).permute(0, 2, 3, 1) + 1,
                                    _conv()), (img,)),
        "to-channels-last-then-conv": (
            Fn(lambda m, x: m[0](torch.relu(x).contiguous(memory_format=torch.channels_last)),
               _conv()), (img,)),
        "rank-1": (Fn(lambda m, x: torch.relu(x) + 2), (torch.randn(7),)),
    }
    return {k: (m.eval(), inputs) for k, (m, inputs) in cases.items()}


CASES = _cases()
CLAIMED: dict[str, list[str]] = {}


@pytest.mark.parametrize("case", sorted(CASES))
def test_module(case):
    model, inputs = CASES[case]
    CLAIMED[case] = check_program(model, inputs, 1e-4)


def test_modules_claim_every_registered_op():
    for case, (model, inputs) in CASES.items():
        if case not in CLAIMED:  # test_module[case] did not run (-k): partition it here
            partitioner = CountingPartitioner()
            partitioner.partition(to_edge(export(model, inputs)).exported_program())
            CLAIMED[case] = partitioner.claimed
    claimed = {op for ops in CLAIMED.values() for op in ops}
    unreachable = (
        {n for n in REGISTRY if n.endswith(".Scalar")}  # edge turns them into .Tensor
        | {"aten.linear.default", "aten.mm.default"}  # linear becomes permute_copy + addmm/mm
        | {"aten.hardswish.default"}  # to_edge decomposes it (not a core op)
    )
    missing = set(REGISTRY) - claimed - unreachable
    assert not missing, sorted(missing)
    assert "aten.permute_copy.default" in claimed  # a weight's transpose, evaluated ahead
