"""The core ATen ops under test and their sample inputs.

Every overload tagged ``torch.Tag.core`` is either excluded (with a reason,
see ``exclusion``) or gets samples: PyTorch's OpInfo samples of the OpInfo(s)
that exercise it (``OPINFO_SOURCES``; by default the OpInfo of the same name
or alias), turned into the overload's own arguments by an adapter, or, for
ops without an OpInfo, a small generator below. A sample is kept only if it
fits the overload's schema (no tensor where it takes a Scalar) and eager
PyTorch runs it.

A case is ``(op, dtype, index)``: ``index`` counts the kept samples of that
op and dtype, which are regenerated deterministically (seeded per op/dtype).
"""

from __future__ import annotations

import functools
import math
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch._ops import OpOverload
from torch.utils import _pytree as pytree

DTYPES: tuple[torch.dtype, ...] = (
    torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8,
    torch.int16, torch.int32, torch.int64, torch.uint8, torch.bool,
)
FLOATS = (torch.float32, torch.float64, torch.float16, torch.bfloat16)
INTS = (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8)


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def dtype_from_name(name: str) -> torch.dtype:
    return getattr(torch, name)


def op_from_name(name: str) -> OpOverload:
    """``"aten.add.Tensor"`` -> ``torch.ops.aten.add.Tensor``."""
    _, packet, overload = name.split(".")
    return getattr(getattr(torch.ops.aten, packet), overload)


@functools.cache
def core_ops() -> list[str]:
    """Every ``torch.Tag.core`` overload under ``torch.ops.aten``, sorted."""
    names = []
    for packet_name in dir(torch.ops.aten):
        try:
            packet = getattr(torch.ops.aten, packet_name)
        except (AttributeError, RuntimeError):
            continue
        if not hasattr(packet, "overloads"):
            continue
        for overload in packet.overloads():
            if torch.Tag.core in getattr(packet, overload).tags:
                names.append(f"aten.{packet_name}.{overload}")
    return sorted(names)


_SYMBOLIC = "operates on symbolic sizes, not tensors: a prim op (tested with the prim ops)"
EXCLUDED: dict[str, str] = {
    "aten._local_scalar_dense.default": "returns a Python scalar, no out variant "
    "(a prim op: tested with the prim ops)",
    "aten.sym_numel.default": _SYMBOLIC,
    "aten.sym_size.int": _SYMBOLIC,
    "aten.sym_storage_offset.default": _SYMBOLIC,
    "aten.sym_stride.int": _SYMBOLIC,
    "aten.atan2.out": "is itself an out variant (tested through aten.atan2.default)",
    "aten._fft_r2c.default": "complex output: Ember has no complex dtypes",
    "aten._fft_c2r.default": "complex input: Ember has no complex dtypes",
    "aten._native_batch_norm_legit.default": "mutates its running_mean/running_var "
    "(training-mode batch norm): no functional out variant",
}


def exclusion(name: str) -> str | None:
    """Why ``name`` is not tested, or None when it is."""
    if name in EXCLUDED:
        return EXCLUDED[name]
    if "backward" in name:
        return "backward op: training only, never in an inference program"
    from ember.exir.operator.out_variant import out_variant

    op = op_from_name(name)
    if out_variant(op) is None and out_variant(_copy_twin(op) or op) is None:
        return "no out variant in PyTorch's registry (nor a *_copy variant)"
    return None


def _copy_twin(op: OpOverload) -> OpOverload | None:
    """``aten.view.default`` -> ``aten.view_copy.default``: Ember lowers view ops to these."""
    packet = getattr(torch.ops.aten, f"{op.overloadpacket.__name__}_copy", None)
    if packet is None or op._overloadname not in packet.overloads():
        return None
    return getattr(packet, op._overloadname)


# --- OpInfo samples -> the overload's arguments ---------------------------------------

Args = tuple[tuple[Any, ...], dict[str, Any]]
Adapter = Callable[[Any], Args | None]


def _standard(s: Any) -> Args:
    kwargs = {k: v for k, v in s.kwargs.items() if k != "inplace"}
    return (s.input, *s.args), kwargs


def _listify(v: Any, n: int) -> list[int]:
    return [v] * n if isinstance(v, int) else list(v)


def _softmax(s: Any) -> Args | None:
    if s.kwargs.get("dtype") is not None:
        return None
    return (s.input, s.args[0] if s.args else s.kwargs["dim"], False), {}


def _where(s: Any) -> Args:
    return (s.args[0], s.input, *s.args[1:]), {}


def _pad(mode: str, dims: int | None = None) -> Adapter:
    def adapt(s: Any) -> Args | None:
        pad = list(s.args[0] if s.args else s.kwargs["pad"])
        if dims is not None and (len(pad) != 2 * dims or s.input.dim() not in (dims + 1, dims + 2)):
            return None
        if mode == "constant":
            value = s.kwargs.get("value", s.args[2] if len(s.args) > 2 else 0)
            return (s.input, pad, 0 if value is None else value), {}
        return (s.input, pad), {}

    return adapt


def _convolution(s: Any) -> Args | None:
    x, weight = s.input, s.args[0]
    bias = s.args[1] if len(s.args) > 1 else s.kwargs.get("bias")
    n = x.dim() - 2
    rest = dict(zip(("stride", "padding", "dilation", "groups"), s.args[2:], strict=False))
    rest.update({k: v for k, v in s.kwargs.items() if k != "bias"})
    if isinstance(rest.get("padding", 0), str):
        return None
    return (
        x, weight, bias, _listify(rest.get("stride", 1), n), _listify(rest.get("padding", 0), n),
        _listify(rest.get("dilation", 1), n), False, [0] * n, rest.get("groups", 1),
    ), {}


def _embedding(s: Any) -> Args | None:
    if set(s.kwargs) - {"padding_idx"}:
        return None
    padding_idx = s.kwargs.get("padding_idx")
    return (s.args[0], s.input, -1 if padding_idx is None else padding_idx), {}


def _max_pool(n: int) -> Adapter:
    def adapt(s: Any) -> Args | None:
        names = ("kernel_size", "stride", "padding", "dilation", "ceil_mode")
        kw = dict(zip(names, s.args, strict=False))
        kw.update({k: v for k, v in s.kwargs.items() if k != "return_indices"})
        ks = _listify(kw["kernel_size"], n)
        stride = kw.get("stride")
        return (
            s.input, ks, ks if stride is None else _listify(stride, n),
            _listify(kw.get("padding", 0), n), _listify(kw.get("dilation", 1), n),
            bool(kw.get("ceil_mode", False)),
        ), {}

    return adapt


def _layer_norm(s: Any) -> Args:
    shape = s.args[0]
    kw = dict(zip(("weight", "bias", "eps"), s.args[1:], strict=False)) | dict(s.kwargs)
    return (s.input, shape, kw.get("weight"), kw.get("bias"), kw.get("eps", 1e-5)), {}


def _group_norm(s: Any) -> Args | None:
    x = s.input
    if x.dim() < 2:
        return None
    groups = s.args[0] if s.args else s.kwargs["num_groups"]
    kw = dict(zip(("weight", "bias", "eps"), s.args[1:], strict=False)) | dict(s.kwargs)
    hxw = math.prod(x.shape[2:])
    return (
        x, kw.get("weight"), kw.get("bias"), x.shape[0], x.shape[1], hxw, groups,
        kw.get("eps", 1e-5),
    ), {}


def _batch_norm_no_training(s: Any) -> Args | None:
    mean, var = s.args[0], s.args[1]
    kw = dict(s.kwargs)
    if kw.get("training") or mean is None or var is None:
        return None
    return (
        s.input, kw.get("weight"), kw.get("bias"), mean, var, kw.get("momentum", 0.1),
        kw.get("eps", 1e-5),
    ), {}


def _batch_norm_no_stats(s: Any) -> Args | None:
    kw = dict(s.kwargs)
    if not kw.get("training"):
        return None
    return (s.input, kw.get("weight"), kw.get("bias"), True, kw.get("momentum", 0.1),
            kw.get("eps", 1e-5)), {}


def _interpolate(mode: str) -> Adapter:
    def adapt(s: Any) -> Args | None:
        if s.input.dim() != 4:
            return None
        kw = dict(zip(("size", "scale_factor", "mode", "align_corners"), s.args, strict=False))
        kw.update(s.kwargs)
        size, scale = kw.get("size"), kw.get("scale_factor")
        if kw.get("recompute_scale_factor") or kw.get("antialias"):
            return None
        size = None if size is None else _listify(size, 2)
        scale = None if scale is None else [float(v) for v in _listify(scale, 2)]
        if size is None and scale is None:
            return None
        if mode == "bilinear":
            return (s.input, size, bool(kw.get("align_corners")), scale), {}
        return (s.input, size, scale), {}

    return adapt


def _adaptive_avg_pool(n: int) -> Adapter:
    def adapt(s: Any) -> Args | None:
        size = s.args[0] if s.args else s.kwargs["output_size"]
        size = _listify(size, n)
        return None if None in size else ((s.input, size), {})

    return adapt


_GRID_MODES = {"bilinear": 0, "nearest": 1, "bicubic": 2}
_GRID_PADDING = {"zeros": 0, "border": 1, "reflection": 2}


def _grid_sample(s: Any) -> Args | None:
    if s.input.dim() != 4:
        return None
    kw = dict(s.kwargs)
    return (s.input, s.args[0], _GRID_MODES[kw.get("mode", "bilinear")],
            _GRID_PADDING[kw.get("padding_mode", "zeros")], bool(kw.get("align_corners"))), {}


def _as_strided(s: Any) -> Args:
    """as_strided addresses its input's storage, not the view: a sample whose
    input is a view of a larger storage reaches outside the view. A program
    input is dense, so hand it the whole storage as a 1-D tensor, with the
    storage offset made explicit (same result in eager)."""
    x = s.input
    size, stride, *rest = s.args
    offset = rest[0] if rest else s.kwargs.get("storage_offset")
    if offset is None:
        offset = x.storage_offset()
    storage = x.untyped_storage()
    flat = torch.empty(0, dtype=x.dtype).set_(storage, 0, (storage.nbytes() // x.element_size(),))
    return (flat.clone(), size, stride, offset), {}


def _cdist(s: Any) -> Args | None:
    if s.kwargs.get("compute_mode") not in (None, "use_mm_for_euclid_dist_if_necessary"):
        return None
    return (s.input, s.args[0], float(s.kwargs.get("p", 2.0)), None), {}


def _fold(s: Any) -> Args:
    kw = dict(zip(("output_size", "kernel_size"), s.args, strict=False)) | dict(s.kwargs)
    return (s.input, _listify(kw["output_size"], 2), _listify(kw["kernel_size"], 2),
            _listify(kw.get("dilation", 1), 2), _listify(kw.get("padding", 0), 2),
            _listify(kw.get("stride", 1), 2)), {}


# overload -> [(OpInfo name, adapter)]; an op not listed uses the OpInfo
# named like its packet (or with that alias) and the standard adapter.
OPINFO_SOURCES: dict[str, list[tuple[str, Adapter]]] = {
    "aten._adaptive_avg_pool2d.default": [
        ("nn.functional.adaptive_avg_pool2d", _adaptive_avg_pool(2))],
    "aten._adaptive_avg_pool3d.default": [
        ("nn.functional.adaptive_avg_pool3d", _adaptive_avg_pool(3))],
    "aten._cdist_forward.default": [("cdist", _cdist)],
    "aten.as_strided.default": [("as_strided", _as_strided)],
    "aten._log_softmax.default": [("log_softmax", _softmax)],
    "aten._softmax.default": [("softmax", _softmax)],
    "aten._native_batch_norm_legit_no_training.default": [
        ("nn.functional.batch_norm", _batch_norm_no_training)],
    "aten._native_batch_norm_legit.no_stats": [("nn.functional.batch_norm", _batch_norm_no_stats)],
    "aten._pdist_forward.default": [("nn.functional.pdist", _standard)],
    "aten.avg_pool2d.default": [("nn.functional.avg_pool2d", _standard)],
    "aten.avg_pool3d.default": [("nn.functional.avg_pool3d", _standard)],
    "aten.col2im.default": [("nn.functional.fold", _fold)],
    "aten.constant_pad_nd.default": [("nn.functional.pad", _pad("constant"))],
    "aten.convolution.default": [(f"nn.functional.conv{n}d", _convolution) for n in (1, 2, 3)],
    "aten.elu.default": [("nn.functional.elu", _standard)],
    "aten.embedding.default": [("nn.functional.embedding", _embedding)],
    "aten.gelu.default": [("nn.functional.gelu", _standard)],
    "aten.grid_sampler_2d.default": [("nn.functional.grid_sample", _grid_sample)],
    "aten.hardtanh.default": [("nn.functional.hardtanh", _standard)],
    "aten.index.Tensor": [("__getitem__", _standard), ("index", _standard)],
    "aten.leaky_relu.default": [("nn.functional.leaky_relu", _standard)],
    "aten.max_pool2d_with_indices.default": [("nn.functional.max_pool2d", _max_pool(2))],
    "aten.max_pool3d_with_indices.default": [("nn.functional.max_pool3d", _max_pool(3))],
    "aten.native_group_norm.default": [("nn.functional.group_norm", _group_norm)],
    "aten.native_layer_norm.default": [("nn.functional.layer_norm", _layer_norm)],
    "aten.reflection_pad1d.default": [("nn.functional.pad", _pad("reflect", 1))],
    "aten.reflection_pad2d.default": [("nn.functional.pad", _pad("reflect", 2))],
    "aten.reflection_pad3d.default": [("nn.functional.pad", _pad("reflect", 3))],
    "aten.relu.default": [("nn.functional.relu", _standard)],
    "aten.replication_pad2d.default": [("nn.functional.pad", _pad("replicate", 2))],
    "aten.replication_pad3d.default": [("nn.functional.pad", _pad("replicate", 3))],
    "aten.upsample_bilinear2d.vec": [("nn.functional.interpolate", _interpolate("bilinear"))],
    "aten.upsample_nearest2d.vec": [("nn.functional.interpolate", _interpolate("nearest"))],
    "aten.where.self": [("where", _where)],
}
# Which OpInfo variant an interpolate/pad source means.
_VARIANTS = {
    ("nn.functional.interpolate", "aten.upsample_bilinear2d.vec"): "bilinear",
    ("nn.functional.interpolate", "aten.upsample_nearest2d.vec"): "nearest",
    ("nn.functional.pad", "aten.constant_pad_nd.default"): "constant",
    ("nn.functional.pad", "aten.reflection_pad1d.default"): "reflect",
    ("nn.functional.pad", "aten.reflection_pad2d.default"): "reflect",
    ("nn.functional.pad", "aten.reflection_pad3d.default"): "reflect",
    ("nn.functional.pad", "aten.replication_pad2d.default"): "replicate",
    ("nn.functional.pad", "aten.replication_pad3d.default"): "replicate",
}


@functools.cache
def _op_db() -> dict[str, list[Any]]:
    from torch.testing._internal.common_methods_invocations import op_db

    by_name: dict[str, list[Any]] = {}
    for info in op_db:
        by_name.setdefault(info.name, []).append(info)
        for alias in info.aliases:
            by_name.setdefault(alias.name, []).append(info)
    return by_name


def opinfos(name: str) -> list[tuple[Any, Adapter]]:
    """The OpInfos (with adapters) whose samples feed overload ``name``."""
    packet = name.split(".")[1]
    sources = OPINFO_SOURCES.get(name, [(packet, _standard)])
    found = []
    for info_name, adapter in sources:
        for info in _op_db().get(info_name, []):
            variant = _VARIANTS.get((info_name, name))
            if variant is None or info.variant_test_name == variant:
                found.append((info, adapter))
    return found


# --- generators for ops without OpInfo samples ---------------------------------------

def _t(shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    from torch.testing import make_tensor

    return make_tensor(shape, dtype=dtype, device="cpu", low=-9 if dtype in FLOATS else None,
                       high=9 if dtype in FLOATS else None)


def _gen_to_copy(dtype: torch.dtype) -> Iterator[Args]:
    for target in DTYPES:
        yield (_t((3, 4), dtype),), {"dtype": target}
    yield (_t((2, 0, 3), dtype),), {"dtype": torch.float32}


def _gen_alias(dtype: torch.dtype) -> Iterator[Args]:
    yield (_t((3, 4), dtype),), {}
    yield (_t((), dtype),), {}


def _gen_copy(dtype: torch.dtype) -> Iterator[Args]:
    yield (_t((3, 4), dtype), _t((3, 4), dtype)), {}
    yield (_t((2, 3, 4), dtype), _t((4,), dtype)), {}
    yield (_t((3, 4), dtype), _t((3, 4), torch.float32)), {}


def _gen_arange(dtype: torch.dtype) -> Iterator[Args]:
    if dtype == torch.bool:
        return
    for start, end, step in ((0, 10, 1), (2, 11, 3), (5, -3, -2)):
        if dtype == torch.uint8 and end < 0:
            continue
        yield (start, end, step), {"dtype": dtype}
    if dtype in FLOATS:
        yield (0.5, 3.0, 0.25), {"dtype": dtype}


def _gen_full(dtype: torch.dtype) -> Iterator[Args]:
    value = True if dtype == torch.bool else 3
    yield ([2, 3], value), {"dtype": dtype}
    yield ([0, 4], value), {"dtype": dtype}


def _gen_empty(dtype: torch.dtype) -> Iterator[Args]:
    yield ([2, 3],), {"dtype": dtype}
    yield ([0],), {"dtype": dtype}


def _gen_empty_strided(dtype: torch.dtype) -> Iterator[Args]:
    yield ([2, 3], [3, 1]), {"dtype": dtype}


def _gen_scalar_tensor(dtype: torch.dtype) -> Iterator[Args]:
    yield (True if dtype == torch.bool else 5,), {"dtype": dtype}


def _gen_slice(dtype: torch.dtype) -> Iterator[Args]:
    x = _t((5, 6, 3), dtype)
    yield (x, 1, 1, 5, 2), {}
    yield (x, 0, -3, None, 1), {}
    yield (x, 2, 0, 100, 1), {}


def _gen_random(dtype: torch.dtype) -> Iterator[Args]:
    if dtype in FLOATS:
        yield ([3, 4],), {"dtype": dtype}


def _gen_randperm(dtype: torch.dtype) -> Iterator[Args]:
    if dtype in (torch.int32, torch.int64, torch.float32, torch.float64):
        yield (7,), {"dtype": dtype}


def _gen_native_dropout(dtype: torch.dtype) -> Iterator[Args]:
    if dtype in FLOATS:
        yield (_t((4, 5), dtype), 0.5, False), {}
        yield (_t((4, 5), dtype), 0.0, True), {}


def _gen_embedding_bag(dtype: torch.dtype) -> Iterator[Args]:
    if dtype not in FLOATS:
        return
    weight = _t((10, 3), dtype)
    indices = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9])
    offsets = torch.tensor([0, 3, 5])
    for mode in (0, 1, 2):
        yield (weight, indices, offsets, False, mode), {}


GENERATORS: dict[str, Callable[[torch.dtype], Iterator[Args]]] = {
    "aten._to_copy.default": _gen_to_copy,
    "aten._embedding_bag.default": _gen_embedding_bag,
    "aten.alias.default": _gen_alias,
    "aten.copy.default": _gen_copy,
    "aten.arange.start_step": _gen_arange,
    "aten.full.default": _gen_full,
    "aten.empty.memory_format": _gen_empty,
    "aten.empty_strided.default": _gen_empty_strided,
    "aten.scalar_tensor.default": _gen_scalar_tensor,
    "aten.slice.Tensor": _gen_slice,
    "aten.rand.default": _gen_random,
    "aten.randn.default": _gen_random,
    "aten.randperm.default": _gen_randperm,
    "aten.native_dropout.default": _gen_native_dropout,
}

# How outputs are compared: "values" (default), "shape" (uninitialised or
# random values: shape and dtype only), "unit" (rand: in [0, 1)),
# "permutation" (randperm), "first" (only output 0 is specified by PyTorch),
# "sort" (values exact; indices valid and consistent, since ties may order
# either way).
CHECKS: dict[str, str] = {
    "aten.sort.default": "sort",
    "aten.sort.stable": "sort",
    "aten.topk.default": "sort",
    "aten.empty.memory_format": "shape",
    "aten.empty_strided.default": "shape",
    "aten.rand.default": "unit",
    "aten.randn.default": "shape",
    "aten.randperm.default": "permutation",
    "aten._embedding_bag.default": "first",
}


def check_kind(name: str) -> str:
    return CHECKS.get(name, "values")


# --- sample selection ------------------------------------------------------------------

@dataclass
class Sample:
    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)
    source: str = ""


def _fits_schema(op: OpOverload, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    schema_args = op._schema.arguments
    if len(args) > len(schema_args):
        return False
    names = {a.name for a in schema_args}
    if set(kwargs) - names:
        return False
    bound = dict(zip((a.name for a in schema_args), args, strict=False)) | kwargs
    for a in schema_args:
        if a.name not in bound:
            continue
        takes_tensor = "Tensor" in str(a.type)
        has_tensor = any(isinstance(v, torch.Tensor) for v in pytree.tree_leaves(bound[a.name]))
        if has_tensor and not takes_tensor:
            return False
    return True


def _scalarize(op: OpOverload, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Args:
    """A tensor where the overload takes a Scalar (``add.Scalar`` fed the samples of
    ``add``): use the tensor's first element."""
    args = list(args)
    for i, a in enumerate(op._schema.arguments[: len(args)]):
        kind = str(a.type)
        takes_scalar = ("Scalar" in kind or "number" in kind) and "Tensor" not in kind
        if takes_scalar and isinstance(args[i], torch.Tensor):
            t = args[i]
            args[i] = t.flatten()[0].item() if t.numel() else 1
    return tuple(args), kwargs


def _runs_in_eager(op: OpOverload, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    try:
        result = op(*args, **kwargs)
    except Exception:  # noqa: BLE001 - any failure means the sample does not fit
        return False
    leaves = pytree.tree_leaves(result)
    return all(not (isinstance(v, torch.Tensor) and v.is_complex()) for v in leaves)


def supported_dtypes(name: str) -> list[torch.dtype]:
    """The dtypes of ``DTYPES`` the op's OpInfo declares for CPU (all for generators)."""
    if name in GENERATORS:
        return list(DTYPES)
    declared: set[torch.dtype] = set()
    for info, _ in opinfos(name):
        declared |= set(info.supported_dtypes("cpu"))
    return [d for d in DTYPES if d in declared]


def samples(name: str, dtype: torch.dtype, limit: int | None = None) -> list[Sample]:
    """The kept samples of overload ``name`` for ``dtype``, in a fixed order; with
    ``limit``, the first ``limit`` of them (generating no more than needed)."""
    torch.manual_seed(zlib.crc32(f"{name}/{dtype}".encode()))
    op = op_from_name(name)
    kept: list[Sample] = []
    if name in GENERATORS:
        candidates: Iterator[tuple[Args | None, str]] = (
            (a, "generator") for a in GENERATORS[name](dtype)
        )
    else:
        candidates = _opinfo_candidates(name, dtype, lazy=limit is not None)
    for fitted, source in candidates:
        if fitted is None:
            continue
        args, kwargs = _scalarize(op, *fitted)
        if _fits_schema(op, args, kwargs) and _runs_in_eager(op, args, kwargs):
            kept.append(Sample(args, kwargs, source))
            if limit is not None and len(kept) >= limit:
                break
    return kept


def _opinfo_candidates(name: str, dtype: torch.dtype,
                       lazy: bool = False) -> Iterator[tuple[Args | None, str]]:
    """Each OpInfo sample, adapted. ``lazy`` generates them one at a time (a caller
    that stops early skips the rest); otherwise all are generated first, so the
    random values do not depend on what the caller runs in between."""
    for info, adapter in opinfos(name):
        if dtype not in info.supported_dtypes("cpu"):
            continue
        label = info.name + (f".{info.variant_test_name}" if info.variant_test_name else "")
        try:
            generated = iter(info.sample_inputs("cpu", dtype, requires_grad=False))
            if not lazy:
                generated = iter(list(generated))
        except Exception:  # noqa: BLE001 - a broken generator yields no samples
            continue
        while True:
            try:
                s = next(generated)
            except StopIteration:
                break
            except Exception:  # noqa: BLE001 - a generator that breaks midway ends there
                break
            try:
                yield adapter(s), f"OpInfo {label}"
            except (KeyError, IndexError, TypeError, ValueError):
                yield None, label


def pick(count: int, limit: int) -> list[int]:
    """``limit`` indices spread evenly over ``range(count)``."""
    if count <= limit:
        return list(range(count))
    if limit <= 1:
        return [0]
    return sorted({round(i * (count - 1) / (limit - 1)) for i in range(limit)})
