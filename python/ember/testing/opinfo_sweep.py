"""Every OpInfo of PyTorch's ``op_db`` as one-op programs through Ember, each failure by cause.

The core sweep (``ember.testing.conformance``) tests ATen overloads; users'
models call the Python API. This sweep takes each entry of
``torch.testing._internal.common_methods_invocations.op_db`` and calls its
``op`` (``torch.nn.functional.gelu``, ``torch.linalg.vector_norm``, a Tensor
method, ...) on the entry's own samples, in each dtype Ember has that the
entry supports on CPU, as a one-op program (``OneOp``: tensors become inputs,
everything else is baked in), through ``torch.export`` -> ``to_edge`` ->
``to_executorch`` -> the C++ runtime, compared with eager.

Every case gets a status and a cause that says what to build or why not:

=========  ===================================================================
status     cause
=========  ===================================================================
pass
fail       Ember is wrong: ``kernel refused: <message>``, ``mismatch``,
           ``crash``, ``timeout``, ``to_edge error``/``to_executorch error``
           (a pipeline bug), ``load error``
missing    Ember lacks something it could have: ``not core ATen: <op>`` (left
           by export, no PyTorch decomposition: a decomposition or kernel to
           write), ``no kernel: <op>`` (the runtime has no kernel for it),
           ``no out variant: <op>`` (``to_executorch`` cannot map it to a
           kernel), ``not implemented: ...`` (a pipeline feature), ``kernel
           refused: ... [NotSupported]`` (a kernel's missing feature)
export     ``torch.export`` itself fails (data-dependent shapes or values,
           ...): PyTorch's limit, not Ember's
limit      a deliberate limit: ``unsupported dtype: complex`` (Ember has no
           complex dtypes), ``unsupported dtype: <dtype>``, ``unbounded
           data-dependent shape`` (Ember plans memory for upper bounds:
           docs/dynamic-shapes.md)
sample     the sample cannot become a program (eager raises on dense copies
           of its inputs, or the OpInfo's generator raises)
=========  ===================================================================

Samples with sparse, complex, quantized or nested-tensor inputs are skipped
(a deliberate limit) and counted with their reason, not run.

    python -m ember.testing.conformance --opinfo --max-samples 1 \
        --out docs/op-coverage-opinfo.md --json docs/op-coverage-opinfo.json
"""

from __future__ import annotations

import functools
import json
import os
import re
import sys
import time
import zlib
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

import torch
from torch.utils import _pytree as pytree

from ember.testing.conformance import CASE_TIMEOUT_S, OneOp, Runner, _first_line, compare
from ember.testing.op_samples import DTYPES, dtype_from_name, dtype_name

# Samples looked at per (OpInfo, dtype) while looking for ones that are not
# deliberate limits; some generators yield thousands.
_SCAN_LIMIT = 64
# OpInfos whose outputs are uninitialised memory: shape and dtype only.
_UNINITIALISED = ("empty", "empty_like", "empty_strided", "empty_permuted", "new_empty",
                  "new_empty_strided")
# Value + index outputs where eager's order among ties is unspecified.
_SORT_ARGS = {"sort": ("self", "dim", "descending"), "topk": ("self", "k", "dim", "largest",
                                                              "sorted")}
# Eigenvectors and singular vectors are defined only up to sign (and a rotation
# within a repeated value): entry -> (index of the values, indices of the vector
# outputs, whether each is stored as rows (Vh) rather than columns).
_SIGN_AMBIGUOUS = {"linalg.eigh": (0, ((1, False),)), "linalg.svd": (1, ((0, False), (2, True))),
                   "svd": (1, ((0, False), (2, False)))}


@dataclass
class CaseResult:
    opinfo: str
    dtype: str
    index: int
    status: str  # pass | fail | missing | export | limit | sample
    cause: str = ""  # e.g. "no kernel: aten::foo.out", grouped in the report
    detail: str = ""  # the full first line of the error, the largest error, ...
    sample: str = ""  # what the sample is: shapes and constant arguments
    ops: list[str] = field(default_factory=list)  # every missing op of the case
    seconds: float = 0.0


def opinfo_key(info: Any) -> str:
    """``nn.functional.pad:reflect``: the entry's name and variant (unique in op_db)."""
    return info.name + (f":{info.variant_test_name}" if info.variant_test_name else "")


@functools.cache
def opinfo_db() -> dict[str, Any]:
    from torch.testing._internal.common_methods_invocations import op_db

    return {opinfo_key(info): info for info in op_db}


def opinfo_dtypes(key: str, wanted: tuple[torch.dtype, ...] = DTYPES) -> list[torch.dtype]:
    """The dtypes of ``wanted`` the entry supports on CPU, in ``DTYPES`` order."""
    declared = opinfo_db()[key].supported_dtypes("cpu")
    return [d for d in DTYPES if d in wanted and d in declared]


def other_dtypes(key: str) -> list[str]:
    """The CPU dtypes of the entry Ember has no counterpart of (complex, ...)."""
    declared = opinfo_db()[key].supported_dtypes("cpu")
    return sorted(dtype_name(d) for d in declared if d not in DTYPES)


def input_limit(sample: Any) -> str | None:
    """Why a sample's inputs are beyond Ember by design, or None."""
    for v in pytree.tree_leaves((sample.input, sample.args, sample.kwargs)):
        if not isinstance(v, torch.Tensor):
            continue
        if v.layout != torch.strided:
            return f"{str(v.layout).removeprefix('torch.')} input (Ember tensors are dense)"
        if getattr(v, "is_nested", False):
            return "nested-tensor input (Ember tensors are dense)"
        if v.is_quantized:
            return "quantized-tensor input (Ember quantizes through its own ops)"
        if v.is_complex():
            return "complex input (Ember has no complex dtypes)"
        if v.device.type != "cpu":
            return f"{v.device.type} input"
    return None


def samples(key: str, dtype: torch.dtype, limit: int) -> tuple[list[Any], Counter[str], str]:
    """Up to ``limit`` runnable samples of the entry in ``dtype`` (PyTorch's order,
    seeded per entry and dtype), the skipped ones by reason, and the generator's
    error if it raised."""
    torch.manual_seed(zlib.crc32(f"{key}/{dtype}".encode()))
    kept: list[Any] = []
    skipped: Counter[str] = Counter()
    try:
        for i, s in enumerate(opinfo_db()[key].sample_inputs("cpu", dtype, requires_grad=False)):
            if len(kept) >= limit or i >= _SCAN_LIMIT:
                break
            reason = input_limit(s)
            if reason:
                skipped[reason] += 1
            else:
                kept.append(s)
    except Exception as e:  # noqa: BLE001 - a broken generator: keep what it gave
        return kept, skipped, _first_line(e)
    return kept, skipped, ""


def describe(sample: Any) -> str:
    """``(f32[3, 4], dim=1)``: the sample's tensors by shape, other arguments by value."""
    def one(v: Any) -> str:
        if isinstance(v, torch.Tensor):
            return f"{dtype_name(v.dtype)}{list(v.shape)}"
        if isinstance(v, list | tuple) and any(isinstance(x, torch.Tensor) for x in v):
            return "[" + ", ".join(one(x) for x in v) + "]"
        return repr(v)

    parts = [one(sample.input)] + [one(a) for a in sample.args]
    parts += [f"{k}={one(v)}" for k, v in sample.kwargs.items()]
    return ("(" + ", ".join(parts) + ")")[:200]


def normalise(message: str) -> str:
    """A message with its numbers, shapes and names of values generalised, for grouping."""
    m = re.sub(r"\[[-\d, ]*\]", "[…]", message)
    m = re.sub(r"(node|instruction|value|input|output) (\d+|%\w+|\w+_\d+)\b", r"\1 …", m)
    m = re.sub(r"(?<![\w.])-?\d+(\.\d+)?(e[-+]?\d+)?(?![\w])", "N", m)
    m = re.sub(r"'[^']*'", "'…'", m)
    return m[:160]


# --- classification ---------------------------------------------------------------------

_NOT_CORE = re.compile(r"Operator (\S+) \(node \S+\) is not in the core ATen opset")
_NO_KERNEL = re.compile(r"no kernel is registered for operator (\S+)")


def export_cause(e: BaseException) -> str:
    """``export: <why>``, with the data-dependent cases named."""
    name, text = type(e).__name__, str(e)
    if name == "DynamicOutputShapeException" or "DynamicOutputShapeException" in text:
        op = re.search(r"aten\.\w+\.\w+", text)
        return f"export: data-dependent output shape ({op[0] if op else 'op'})"
    if name == "DataDependentOutputException":
        op = re.search(r"aten\.\w+\.\w+", text)
        return f"export: data-dependent output ({op[0] if op else 'op'})"
    if "data-dependent" in text or "data dependent" in text or "GuardOnDataDependent" in name:
        return "export: data-dependent value (a guard or int() on a tensor's value)"
    if name == "UnsupportedOperatorException":
        op = re.search(r"aten\.\w+\.\w+", text)
        return f"export: no fake-tensor kernel ({op[0] if op else text[:60]})"
    return "export: " + normalise(_first_line(e))


# Checks of data-dependent sizes, which to_edge removes (remove_asserts): not missing ops.
_REMOVED = re.compile(r"aten\.(_assert_\w+|sym_constrain_range\w*)\.")


def _non_core_left(exported: Any) -> list[str]:
    """The non-core ATen ops ``to_edge``'s decompositions leave (what the verifier rejects)."""
    from ember.exir.operator.kernel_ops import EMBER_KERNEL_OPS
    from ember.exir.passes.decompose_non_core import decompose_non_core

    ep = decompose_non_core(exported.run_decompositions())
    left = set()
    for node in ep.graph_module.graph.nodes:
        op = node.target
        if (node.op == "call_function" and isinstance(op, torch._ops.OpOverload)
                and op.namespace == "aten" and op not in EMBER_KERNEL_OPS
                and torch.Tag.core not in op.tags and torch.Tag.view_copy not in op.tags
                and not _REMOVED.match(str(op))):
            left.add(str(op))
    return sorted(left)


def _outputs_limit(value: Any) -> str | None:
    for v in pytree.tree_leaves(value):
        if isinstance(v, torch.Tensor):
            if v.is_complex():
                return "unsupported dtype: complex output (Ember has no complex dtypes)"
            if v.dtype not in DTYPES:
                return f"unsupported dtype: {dtype_name(v.dtype)} output"
            if v.layout != torch.strided:
                return f"unsupported layout: {str(v.layout).removeprefix('torch.')} output"
    return None


def _same(a: Any, b: Any) -> bool:
    la, lb = pytree.tree_leaves(a), pytree.tree_leaves(b)
    if len(la) != len(lb):
        return False
    for x, y in zip(la, lb, strict=True):
        if isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor):
            if x.shape != y.shape or not torch.equal(x.nan_to_num(), y.nan_to_num()):
                return False
        elif x != y and not (x != x and y != y):
            return False
    return True


def check_kind(key: str, expected: Any, again: Any) -> str:
    """How to compare: "shape" for outputs that are random (two eager runs with
    different seeds differ) or uninitialised, else "values"."""
    if key.split(":")[0] in _UNINITIALISED or not _same(expected, again):
        return "shape"
    return "values"


def _wrapped_by(exported: Any, hop: str) -> str:
    """The op a higher-order op (``with_effects(token, op, ...)``) wraps, or ""."""
    try:
        ep = exported.run_decompositions()
    except Exception:  # noqa: BLE001
        return ""
    for node in ep.graph_module.graph.nodes:
        if node.op == "call_function" and getattr(node.target, "__name__", "") == hop:
            ops = [a for a in node.args if isinstance(a, torch._ops.OpOverload)]
            return str(ops[0]) if ops else ""
    return ""


def _seeded(exported: Any) -> bool:
    """Whether the program draws random numbers (an op tagged nondeterministic_seeded)."""
    for node in exported.graph_module.graph.nodes:
        if node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload) \
                and torch.Tag.nondeterministic_seeded in node.target.tags:
            return True
    return False


def _compare_argsort(got: list[Any], expected: Any, sample: Any) -> tuple[str, str] | None:
    """argsort: eager's order among equal keys is unspecified (unless stable), so the
    indices must be a permutation along ``dim`` that sorts ``self`` as eager's does."""
    want = expected
    if len(got) != 1 or not isinstance(got[0], torch.Tensor):
        return "mismatch", f"{len(got)} outputs, expected 1 tensor"
    g, x = got[0], sample.input
    if g.shape != want.shape or g.dtype != want.dtype:
        return "mismatch", (f"output 0: {g.dtype}{list(g.shape)} "
                            f"vs eager {want.dtype}{list(want.shape)}")
    if x.dim() == 0 or g.numel() == 0:
        return None if torch.equal(g, want) else ("mismatch", "output 0: differs")
    bound = dict(zip(("dim", "descending"), sample.args, strict=False)) | dict(sample.kwargs)
    dim = bound.get("dim", -1) % x.dim()
    if bool(((g < 0) | (g >= x.shape[dim])).any()):
        return "mismatch", "output 0: index out of range"
    if not torch.equal(g.sort(dim).values, want.sort(dim).values):
        return "mismatch", f"output 0: not a permutation along dim {dim}"
    picked, wanted = x.gather(dim, g), x.gather(dim, want)
    same = (picked == wanted) | (picked.isnan() & wanted.isnan()) if x.is_floating_point() \
        else picked == wanted
    if not bool(same.all()):
        return "mismatch", (f"output 0: {int((~same).sum())}/{g.numel()} positions hold "
                            "another value than eager's order")
    if bound.get("stable") and not torch.equal(g, want):
        return "mismatch", "output 0: a stable sort's order among ties differs"
    return None


def _compare_sign_ambiguous(got: list[Any], expected: Any, dtype: torch.dtype, key: str
                            ) -> tuple[str, str] | None:
    """eigh/svd: values as usual; each vector output must have orthonormal columns, and
    match eager's after flipping each vector (a singular pair together) to eager's sign,
    where its value is apart from the others (a repeated one's vectors may rotate)."""
    values_at, vectors = _SIGN_AMBIGUOUS[key.split(":")[0]]
    want = torch.utils._pytree.tree_leaves(expected)
    plain = compare(got, want, dtype, "shape")  # count, shapes and dtypes
    if plain:
        return plain
    problem = compare([got[values_at]], [want[values_at]], dtype, "values")
    if problem:
        return problem
    vals = want[values_at].double()
    k = vals.shape[-1]
    if k == 0 or not vectors or got[vectors[0][0]].numel() == 0:  # compute_uv=False
        return None
    scale = vals.abs().amax(-1, keepdim=True).clamp_min(1e-30)
    gaps = torch.full_like(vals, float("inf"))
    if k > 1:
        d = (vals[..., 1:] - vals[..., :-1]).abs()
        gaps[..., 1:] = d
        gaps[..., :-1] = torch.minimum(gaps[..., :-1], d)
    apart = (gaps > 1e-3 * scale).unsqueeze(-2)  # (*, 1, k)
    cols = [(got[i].mT if rows else got[i], want[i].mT if rows else want[i])
            for i, rows in vectors]
    g0, w0 = cols[0][0][..., :k].double(), cols[0][1][..., :k].double()
    signs = torch.where((g0 * w0).sum(-2, keepdim=True) < 0, -1.0, 1.0)
    for i, (g, w) in zip((i for i, _ in vectors), cols, strict=True):
        g, w = g.double(), w.double()
        eye = torch.eye(g.shape[-1], dtype=torch.float64)
        if g.shape[-2] >= g.shape[-1] and not torch.allclose(g.mT @ g, eye, atol=1e-4):
            return "mismatch", f"output {i}: columns not orthonormal"
        gk = torch.where(apart, g[..., :k] * signs, 0.0)
        wk = torch.where(apart, w[..., :k], 0.0)
        problem = compare([gk.to(want[i].dtype)], [wk.to(want[i].dtype)], dtype, "values")
        if problem:
            return problem[0], f"output {i} (up to sign): {problem[1].split(': ', 1)[-1]}"
    return None


def _sort_args(key: str, sample: Any) -> dict[str, Any] | None:
    names = _SORT_ARGS.get(key.split(":")[0])
    if names is None:
        return None
    bound = dict(zip(names, (sample.input, *sample.args), strict=False)) | dict(sample.kwargs)
    bound.setdefault("dim", -1)
    return bound


def _judge_by_float64(module: Any, inputs: list[Any], got: list[Any], expected: Any,
                      dtype: torch.dtype) -> tuple[bool, str] | None:
    """A float case Ember and eager disagree on, judged against the op computed in
    float64 (every floating input widened): (passes, detail), or None when there is
    no such reference. Eager's float32 answer is not exact either (a transposed 3-D
    convolution with outputs in the hundreds is off by 3e-5 in eager, beyond the
    absolute tolerance); Ember passes when each floating output is no further from
    the float64 reference than eager's, element by element up to the dtype's
    tolerance of the reference, i.e. |got - ref| <= max(|eager - ref|, atol + rtol·|ref|)."""
    if dtype not in (torch.float32, torch.float16, torch.bfloat16):
        return None
    wide = [t.double() if t.is_floating_point() else t.clone() for t in inputs]
    try:
        reference = module(*wide)
    except Exception:  # noqa: BLE001 - the op has no float64 version
        return None
    want, ref = pytree.tree_leaves(expected), pytree.tree_leaves(reference)
    if len(want) != len(got) or len(ref) != len(got):
        return None
    from ember.testing.conformance import TOLERANCES

    rtol, atol = TOLERANCES[dtype]
    worst_ember = worst_eager = 0.0
    for g, w, r in zip(got, want, ref, strict=True):
        if not isinstance(w, torch.Tensor) or not w.is_floating_point():
            if compare([g], w, dtype, "values"):
                return None  # an exact output differs: not a rounding question
            continue
        if not isinstance(r, torch.Tensor) or r.dtype != torch.float64 or r.shape != w.shape \
                or not isinstance(g, torch.Tensor) or g.shape != w.shape:
            return None
        g64, w64 = g.double(), w.double()
        special = r.isnan() | r.isinf()
        if bool((special & ~((g64 == r) | (g64.isnan() & r.isnan()))).any()):
            return False, "float64 reference: NaN/inf positions differ"
        finite = ~special
        err_ember = (g64 - r).abs()[finite]
        err_eager = (w64 - r).abs()[finite]
        allowed = torch.maximum(err_eager, atol + rtol * r.abs()[finite])
        if bool((err_ember > allowed).any()) or bool(err_ember.isnan().any()):
            return False, (f"float64 reference: Ember off by {err_ember.max().item():.3g}, "
                           f"eager by {err_eager.max().item():.3g}")
        if err_ember.numel():
            worst_ember = max(worst_ember, err_ember.max().item())
            worst_eager = max(worst_eager, err_eager.max().item())
    return True, (f"eager {dtype_name(dtype)} differs; vs the float64 reference Ember is off by "
                  f"{worst_ember:.3g}, eager by {worst_eager:.3g}")


_COMPLEX_INTERMEDIATE = ("unsupported dtype: complex intermediate value (Ember has no complex "
                         "dtypes)")
# Ops Ember leaves out by design, with the reason the report gives.
_CHUNKED_CE = ("chunked cross-entropy computes the gradients in its forward to save training "
               "memory; inference runs the unchunked linear_cross_entropy, which Ember has")
_TRAINING_ONLY = {
    "torch_nn._linear_cross_entropy_batch_chunked.default": _CHUNKED_CE,
    "torch_nn._linear_cross_entropy_batch_chunked_no_reduction.default": _CHUNKED_CE,
}


def _complex_inside(exported: Any) -> bool:
    """Whether a value of the exported program, or of its core-ATen decomposition, is
    complex (hfft2 on a real input becomes _fft_c2c on a complex value)."""
    programs = [exported]
    try:
        programs.append(exported.run_decompositions())
    except Exception:  # noqa: BLE001
        pass
    for ep in programs:
        for node in ep.graph_module.graph.nodes:
            for v in pytree.tree_leaves(node.meta.get("val")):
                if isinstance(v, torch.Tensor) and v.is_complex():
                    return True
    return False


_NO_OUT_VARIANT = re.compile(r"operator (\S+) \(node \S+\) has no out variant")


def _lowering_failure(done: Any, e: BaseException) -> CaseResult:
    """Classify an error of ``to_executorch``."""
    message, name = _first_line(e), type(e).__name__
    if name == "UnboundedShapeError":  # docs/dynamic-shapes.md
        found = re.search(r"of (\w+) \(shape", message)
        op = re.sub(r"(_default|_\d+)+$", "", found[1]) if found else "op"
        op = "aten." + op.removeprefix("aten_") if op.startswith("aten_") else f"node {op}"
        return done("limit", f"unbounded data-dependent shape ({op}): Ember plans memory "
                    "for an upper bound", message)
    found = _NO_OUT_VARIANT.search(message)
    if found and found[1] in _TRAINING_ONLY:
        return done("limit", f"training-only op: {found[1]}: {_TRAINING_ONLY[found[1]]}", message)
    if found:
        return done("missing", f"no out variant: {found[1]}", message, [found[1]])
    if "complex" in message and "ScalarType" in message:
        return done("limit", _COMPLEX_INTERMEDIATE, message)
    if name == "NotImplementedError":
        return done("missing", "not implemented: " + normalise(message), message)
    return done("fail", "to_executorch error: " + normalise(message), message)


def run_case(key: str, dtype: torch.dtype, sample: Any, op: Any = None) -> CaseResult:
    """Export, lower and run one sample of the OpInfo ``key`` (or of ``op``, when
    given, named ``key``); compare with eager."""
    from ember.exir import to_edge
    from ember.runtime import Runtime
    from ember.testing.conformance import _program_ops

    op = op if op is not None else opinfo_db()[key].op
    result = CaseResult(key, dtype_name(dtype), -1, "fail", sample=describe(sample))

    def done(status: str, cause: str, detail: str = "", ops: list[str] | None = None
             ) -> CaseResult:
        result.status, result.cause, result.detail = status, cause, detail[:300]
        result.ops = ops or []
        return result

    leaves, spec = pytree.tree_flatten(((sample.input, *sample.args), dict(sample.kwargs)))
    slots = [i for i, v in enumerate(leaves) if isinstance(v, torch.Tensor)]
    inputs = [leaves[i].detach().clone() for i in slots]
    constants = [None if isinstance(v, torch.Tensor) else v for v in leaves]
    module = OneOp(op, spec, constants, slots, via_float32=False)

    try:
        torch.manual_seed(0)
        expected = module(*[t.clone() for t in inputs])
        torch.manual_seed(1)
        again = module(*[t.clone() for t in inputs])
    except Exception as e:  # noqa: BLE001
        return done("sample", "eager raises on dense copies of the inputs", _first_line(e))
    limit = _outputs_limit(expected)
    if limit:
        return done("limit", limit)
    if not inputs and not any(isinstance(v, torch.Tensor) for v in pytree.tree_leaves(expected)):
        return done("limit", "no tensor in or out (a shape function, computed at export): "
                    "nothing for a program to run", f"returns {type(expected).__name__}")
    kind = check_kind(key, expected, again)

    try:
        exported = torch.export.export(module, tuple(inputs), strict=False)
    except Exception as e:  # noqa: BLE001
        return done("export", export_cause(e), _first_line(e))
    if _seeded(exported):  # random even where two eager runs happen to agree
        kind = "shape"
    try:
        edge = to_edge(exported)
    except Exception as e:  # noqa: BLE001
        found = _NOT_CORE.search(str(e))
        if found and _complex_inside(exported):  # e.g. hfft2's _fft_c2c on a complex value
            return done("limit", _COMPLEX_INTERMEDIATE, f"{found[1]} on a complex value")
        if found:
            try:
                left = _non_core_left(exported) or [found[1]]
            except Exception:  # noqa: BLE001
                left = [found[1]]
            return done("missing", f"not core ATen: {found[1]}",
                        "left by export, and PyTorch has no decomposition for: "
                        + ", ".join(left), left)
        hop = re.search(r"Higher-order operator (\w+) is not supported", str(e))
        if hop:  # e.g. with_effects around an op with side effects (linalg error checks)
            wrapped = _wrapped_by(exported, hop[1])
            return done("missing", f"higher-order op: {hop[1]}"
                        + (f" ({wrapped})" if wrapped else "") + " not lowered",
                        _first_line(e), [f"{hop[1]}({wrapped})" if wrapped else hop[1]])
        return done("fail", "to_edge error: " + normalise(_first_line(e)), _first_line(e))
    try:
        lowered = edge.to_executorch()
        pte = lowered.buffer
    except Exception as e:  # noqa: BLE001
        return _lowering_failure(done, e)
    try:
        method = Runtime.get().load_program(pte).load_method("forward")
    except Exception as e:  # noqa: BLE001
        message = _first_line(e)
        found = _NO_KERNEL.search(message)
        if found:
            registered = set(Runtime.get().registered_kernels)
            missing = sorted({k for k in _program_ops(lowered.exported_program())
                              if k not in registered}) or [found[1]]
            return done("missing", f"no kernel: {found[1]}", message, missing)
        return done("fail", "load error: " + normalise(message), message)
    try:
        got = method.execute(inputs)
    except Exception as e:  # noqa: BLE001
        message = _first_line(e)
        # A kernel that names a case it does not support yet lacks a feature; any
        # other refusal of a valid program is a bug.
        status = "missing" if "[NotSupported]" in message else "fail"
        return done(status, "kernel refused: " + normalise(message), message)
    args = _sort_args(key, sample)
    if args is not None and kind == "values":
        kind = "sort"
    if key.split(":")[0] == "argsort" and kind == "values":
        problem = _compare_argsort(got, expected, sample)
    elif key.split(":")[0] in _SIGN_AMBIGUOUS and kind == "values":
        problem = _compare_sign_ambiguous(got, expected, dtype, key)
    else:
        problem = compare(got, expected, dtype, kind, args)
    if problem and kind == "values":
        settled = _selection_or_special_verdict(key, dtype, inputs, got, expected)
        if settled is not None:
            status, why = settled
            if status == "limit":
                return done("limit", why, problem[1])
            result.status, result.detail = "pass", why
            return result
        judged = _judge_by_float64(module, inputs, got, expected, dtype)
        if judged is not None:
            if judged[0]:
                result.status = "pass"
                result.detail = judged[1]
                return result
            problem = (problem[0], f"{problem[1]}; {judged[1]}")
    if problem:
        return done("fail", problem[0], problem[1])
    result.status = "pass"
    result.detail = "random or uninitialised output: shape and dtype checked" \
        if kind == "shape" else ""
    return result


# Entries whose indices eager leaves unspecified among equal values (kthvalue, median and mode
# docs): values must be eager's, indices must point at them.
_SELECTION = {"kthvalue", "median", "nanmedian", "masked.median", "mode"}
# Eager's float64 Bessel J/Y and Airy Ai are accurate to ~4e-6 absolute near x = 5 (Ai near -2);
# Ember's match mpmath to 1e-13 (python/tests/test_kernels_special_vs_eager.py).
_EAGER_FLOAT64_ATOL = {"special.bessel_j0": 1e-5, "special.bessel_j1": 1e-5,
                       "special.bessel_y0": 1e-5, "special.bessel_y1": 1e-5,
                       "special.airy_ai": 1e-5}


def _selection_or_special_verdict(key: str, dtype: torch.dtype, inputs: list[Any],
                                  got: list[Any], expected: Any) -> tuple[str, str] | None:
    """("pass" | "limit", why) for the known ways eager's answer is not the reference of
    these entries; None otherwise (the mismatch stands)."""
    base = key.split(":")[0]
    want = pytree.tree_leaves(expected)
    if base in _SELECTION and len(got) == 2 and len(want) == 2 and inputs:
        values, indices = got
        if compare([values], [want[0]], dtype, "values") is not None:
            return None
        x = inputs[0]
        dim = next((d for d in range(x.dim()) if values.dim() == x.dim()
                    and values.shape[d] == 1 and x.shape[d] != 1), None)
        for d in ([dim] if dim is not None else range(max(x.dim(), 1))):
            try:
                idx = indices if indices.dim() == x.dim() else indices.unsqueeze(d)
                val = values if values.dim() == x.dim() else values.unsqueeze(d)
                picked = x.gather(d, idx) if x.dim() else x
            except Exception:  # noqa: BLE001
                continue
            if bool(((picked == val) | (picked.isnan() & val.isnan())).all()):
                return "pass", "indices differ among equal values (unspecified in eager)"
        return None
    if base in _EAGER_FLOAT64_ATOL and dtype == torch.float64 and len(got) == 1:
        g, w = got[0].double(), want[0].double()
        ok = ((g - w).abs() <= _EAGER_FLOAT64_ATOL[base] * (1 + w.abs())) | (g.isnan() & w.isnan())
        if bool(ok.all()):
            return "pass", "within eager's own float64 accuracy (~4e-6 here)"
        return None
    if base in ("polygamma", "special.polygamma") and inputs and len(got) == 1:
        x = inputs[0].double()
        g, w = got[0].double(), want[0].double()
        differ = ~((g - w).abs() <= 1e-5 + 1.3e-6 * w.abs()) & ~(g.isnan() & w.isnan()) & (g != w)
        poles = (x <= 0) & (x == x.round())
        if bool(differ.any()) and bool((~differ | poles).all()):
            return "limit", ("polygamma at its poles (non-positive integers): Ember returns the "
                             "limit ±inf, eager a finite rounding artefact")
    return None


# --- worker and runner ---------------------------------------------------------------------

def _worker() -> None:
    from ember.testing.conformance import worker_ready

    out = worker_ready()
    cache: dict[tuple[str, str, int], list[Any]] = {}
    for line in sys.stdin:
        request = json.loads(line)
        if "plan" in request:  # the dtypes to run of an entry: the parent needs no op_db
            key, wanted = request["plan"], tuple(dtype_from_name(d) for d in request["dtypes"])
            out.write(json.dumps({"dtypes": [dtype_name(d) for d in opinfo_dtypes(key, wanted)],
                                  "any": bool(opinfo_dtypes(key)),
                                  "other_dtypes": other_dtypes(key)}) + "\n")
            out.flush()
            continue
        key, dtype_s, index, limit = (request["op"], request["dtype"], request["index"],
                                      request["limit"])
        cache_key = (key, dtype_s, limit)
        if index is None:  # generate the samples; report how many and what was skipped
            cache.clear()
            kept, skipped, error = samples(key, dtype_from_name(dtype_s), limit)
            cache[cache_key] = kept
            out.write(json.dumps({"count": len(kept), "skipped": skipped, "error": error})
                      + "\n")
            out.flush()
            continue
        if cache_key not in cache:  # a restarted worker
            cache.clear()
            cache[cache_key] = samples(key, dtype_from_name(dtype_s), limit)[0]
        started = time.time()
        try:
            result = run_case(key, dtype_from_name(dtype_s), cache[cache_key][index])
        except Exception as e:  # noqa: BLE001 - the harness itself failed on this case
            result = CaseResult(key, dtype_s, index, "fail", "harness error", _first_line(e))
        result.index, result.seconds = index, round(time.time() - started, 2)
        out.write(json.dumps(asdict(result)) + "\n")
        out.flush()


class OpInfoRunner(Runner):
    """The core sweep's time-boxed worker process, running OpInfo cases."""

    worker_module = "ember.testing.opinfo_sweep"

    def __init__(self, timeout: float = CASE_TIMEOUT_S, limit: int = 1) -> None:
        super().__init__(timeout)
        self.limit = limit

    def _ask(self, key: str, dtype: str, index: int | None) -> str | None:
        return self._send({"op": key, "dtype": dtype, "index": index, "limit": self.limit})

    def _send(self, request: dict[str, Any]) -> str | None:
        if self.proc is None:
            self._start()
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        return self._readline(self.timeout)

    def plan(self, key: str, dtypes: tuple[torch.dtype, ...]) -> dict[str, Any]:
        """{"dtypes": the entry's dtypes among ``dtypes``, "any": whether it has any
        of Ember's, "other_dtypes": its CPU dtypes Ember has no counterpart of}."""
        line = self._send({"plan": key, "dtypes": [dtype_name(d) for d in dtypes]})
        if line is None:
            self.stop()
            raise RuntimeError(f"the worker failed to look up the dtypes of {key}")
        return json.loads(line)

    def prepare(self, key: str, dtype: str) -> dict[str, Any]:
        """Generate the samples: {"count", "skipped": {reason: n}, "error"}."""
        line = self._ask(key, dtype, None)
        if line is None:
            self.stop()
            return {"count": 0, "skipped": {}, "error": "sample generation crashed or hung"}
        return json.loads(line)

    def run_opinfo(self, key: str, dtype: str, index: int) -> CaseResult:
        line = self._ask(key, dtype, index)
        if line is None:
            assert self.proc is not None
            crashed = self.proc.poll() is not None
            code = self.proc.returncode
            self.stop()
            if crashed:
                return CaseResult(key, dtype, index, "fail", "crash", f"worker exited ({code})")
            return CaseResult(key, dtype, index, "fail", "timeout", f"> {self.timeout:g} s")
        return CaseResult(**json.loads(line))


def sweep(keys: list[str], dtypes: tuple[torch.dtype, ...], max_samples: int, timeout: float,
          log: Any = None, previous: dict[str, Any] | None = None,
          checkpoint: Any = None) -> dict[str, Any]:
    """Run every case of the entries ``keys``; returns the data the report is made of.
    ``previous``: an earlier (partial) result to resume; ``checkpoint(data)`` is
    called after each entry."""
    runner = OpInfoRunner(timeout, max_samples)
    data: dict[str, Any] = previous or {"results": [], "entries": {}}
    data.update({"torch": torch.__version__, "max_samples": max_samples, "timeout": timeout,
                 "dtypes": [dtype_name(d) for d in dtypes], "opinfos": keys})
    spent = data.get("seconds", 0)
    started = time.time()
    try:
        for n, key in enumerate(keys, 1):
            if key in data["entries"]:
                continue
            entry_started = time.time()
            planned = runner.plan(key, dtypes)
            entry: dict[str, Any] = {"other_dtypes": planned["other_dtypes"], "skipped": {},
                                     "no_samples": [], "generator_errors": {}}
            results = []
            wanted = planned["dtypes"]
            if not wanted and not planned["any"]:
                if entry["other_dtypes"]:  # e.g. complex only: one case says so
                    why = " (Ember has no complex dtypes)" if any(
                        "complex" in d for d in entry["other_dtypes"]) else ""
                    results.append(CaseResult(
                        key, "-", 0, "limit",
                        "unsupported dtype: only " + ", ".join(entry["other_dtypes"]) + why))
                else:
                    entry["not_swept"] = "no dtype on CPU"
            elif not wanted:
                entry["not_swept"] = "none of the swept dtypes"
            for d in wanted:
                prepared = runner.prepare(key, d)
                for reason, count in prepared["skipped"].items():
                    entry["skipped"][reason] = entry["skipped"].get(reason, 0) + count
                if prepared["error"]:
                    entry["generator_errors"][d] = prepared["error"]
                if prepared["count"] == 0:
                    entry["no_samples"].append(d)
                    if prepared["error"] and not prepared["skipped"]:
                        results.append(CaseResult(key, d, 0, "sample", "OpInfo generator raises",
                                                  prepared["error"]))
                    elif prepared["skipped"]:
                        results.append(CaseResult(
                            key, d, 0, "limit", "every sample: " + next(iter(prepared["skipped"]))))
                for index in range(prepared["count"]):
                    results.append(runner.run_opinfo(key, d, index))
            entry["seconds"] = round(time.time() - entry_started, 1)
            data["entries"][key] = entry
            data["results"] += [asdict(r) for r in results]
            data["seconds"] = round(spent + time.time() - started)
            if log:
                c = Counter(r.status for r in results)
                causes = sorted({r.cause for r in results if r.status != "pass"})
                log.write(f"[{n}/{len(keys)}] {key}: {len(results)} cases, {c['pass']} pass"
                          + "".join(f", {c[s]} {s}" for s in ("fail", "missing", "export",
                                                               "limit", "sample") if c[s])
                          + f"; {entry['seconds']:.1f} s (elapsed {data['seconds']} s)"
                          + (f" [{'; '.join(causes)[:150]}]" if causes else "") + "\n")
                log.flush()
            if checkpoint:
                checkpoint(data)
    finally:
        runner.stop()
    return data


def main(args: Any) -> int:
    """``conformance --opinfo``: parsed arguments from ``conformance.main``."""
    from ember.testing.opinfo_report import write_report

    if args.merge:
        parts = []
        for path in args.merge:
            with open(path) as f:
                parts.append(json.load(f))
        data = merge(parts)
        if args.json:
            write_json(data, args.json)
        print(write_report(data, args.out))
        return 0
    keys = args.opinfos or sorted(opinfo_db())
    unknown = [k for k in keys if k not in opinfo_db()]
    if unknown:
        raise SystemExit(f"unknown OpInfo entries: {', '.join(unknown)}")
    dtypes = tuple(dtype_from_name(d) for d in args.dtypes) if args.dtypes else DTYPES
    previous = None
    if args.resume and args.json and os.path.exists(args.json):
        with open(args.json) as f:
            previous = json.load(f)
        again = set(args.rerun or ())
        previous["entries"] = {k: v for k, v in previous["entries"].items() if k not in again}
        previous["results"] = [r for r in previous["results"] if r["opinfo"] not in again]

    def checkpoint(data: dict[str, Any]) -> None:
        if args.json:
            write_json(data, args.json)

    data = sweep(keys, dtypes, args.max_samples, args.timeout,
                 None if args.quiet else sys.stderr, previous, checkpoint)
    if args.json:
        write_json(data, args.json)
    print(write_report(data, args.out))
    return 0


def merge(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """One sweep's data from sweeps of the same entries in different dtypes (a long
    sweep split over sessions: ``--dtypes float32`` and ``--dtypes float64 ...``)."""
    order = [dtype_name(d) for d in DTYPES]
    data = {k: v for k, v in parts[0].items() if k not in ("results", "entries")}
    data["dtypes"] = [d for d in order if any(d in p["dtypes"] for p in parts)]
    data["seconds"] = sum(p["seconds"] for p in parts)
    data["results"], data["entries"] = [], {}
    for p in parts:
        # A "-" case (no dtype Ember has) does not depend on the dtypes swept: keep one.
        data["results"] += [r for r in p["results"] if r["dtype"] != "-" or p is parts[0]]
        for key, e in p["entries"].items():
            into = data["entries"].setdefault(key, {**e, "skipped": {}, "no_samples": [],
                                                    "generator_errors": {}, "seconds": 0})
            for reason, n in e["skipped"].items():
                into["skipped"][reason] = into["skipped"].get(reason, 0) + n
            into["no_samples"] += e["no_samples"]
            into["generator_errors"].update(e["generator_errors"])
            into["seconds"] = round(into["seconds"] + e["seconds"], 1)
            if not e.get("not_swept"):
                into.pop("not_swept", None)
    return data


def write_json(data: dict[str, Any], path: str) -> None:
    """One result per line: diffable, and small enough to commit."""
    head = {k: v for k, v in data.items() if k not in ("results", "entries")}
    with open(path + ".tmp", "w") as f:
        f.write("{\n")
        for k, v in head.items():
            f.write(f" {json.dumps(k)}: {json.dumps(v)},\n")
        f.write(' "entries": {\n')
        f.write(",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}"
                           for k, v in data["entries"].items()))
        f.write('\n },\n "results": [\n')
        f.write(",\n".join("  " + json.dumps(r) for r in data["results"]))
        f.write("\n ]\n}\n")
    os.replace(path + ".tmp", path)


if __name__ == "__main__":
    if sys.argv[1:] == ["--worker"]:
        _worker()
