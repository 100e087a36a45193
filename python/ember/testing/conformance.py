"""Core ATen conformance: each sample as a one-op program, run by Ember, compared with eager.

For every case ``(op, dtype, sample)``: wrap the overload in an ``nn.Module``
(tensor arguments become inputs, everything else is baked in), then
``torch.export`` -> ``to_edge`` -> ``to_executorch`` -> ``.pte`` -> the C++
runtime through the bindings, and compare with eager PyTorch. Each case is
classified:

- ``pass``
- ``fail``: the runtime raised, crashed, timed out, or the result differs
  (with the largest error)
- ``unsupported``: the pipeline cannot produce a program for it (export,
  to_edge or to_executorch raised) or the runtime has no kernel for an op of
  the program (named)

When PyTorch's core decomposition table replaces the op (reflection pads,
``select_scatter``, ``fill``, ...), the case runs the decomposed program, as a
user exporting that op gets it, and counts by what that program does; the
result's ``decomposed`` field names the ops it ran instead.

Cases run in a worker process, one at a time, each time-boxed: a crash or a
hang costs that case, never the sweep.

    python -m ember.testing.conformance --out docs/op-coverage.md
"""

from __future__ import annotations

import argparse
import json
import os
import re
import select
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from typing import Any

import torch

# Largest allowed |got - want| <= atol + rtol * |want|, per dtype, in one place.
# float32 is PyTorch's own default for comparisons; 16-bit floats are computed
# through float32 by Ember's kernels and may round once more. Integers and
# bool are exact.
TOLERANCES: dict[torch.dtype, tuple[float, float]] = {  # dtype: (rtol, atol)
    torch.float32: (1.3e-6, 1e-5),
    torch.float64: (1e-7, 1e-7),
    torch.float16: (1e-3, 1e-3),
    torch.bfloat16: (1.6e-2, 1e-2),
}
# The bindings cross through NumPy, which has no bfloat16: bfloat16 cases run
# a program that takes and returns float32 and converts to bfloat16 and back
# around the op (exact both ways), so the op itself runs in bfloat16.
VIA_FLOAT32 = (torch.bfloat16,)
CASE_TIMEOUT_S = 60.0


@dataclass
class Result:
    op: str
    dtype: str
    index: int
    status: str  # pass | fail | unsupported
    reason: str = ""  # category, e.g. "no kernel", "mismatch", "export"
    detail: str = ""
    source: str = ""
    decomposed: str = ""  # when the op itself left the program: the ops that replaced it


def _first_line(e: BaseException) -> str:
    text = f"{type(e).__name__}: {e}".strip()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return (lines[0] if lines else type(e).__name__)[:300]


class OneOp(torch.nn.Module):
    """Calls ``op`` with the sample's arguments; tensors come in as inputs."""

    def __init__(self, op: Any, spec: Any, constants: list[Any], tensor_slots: list[int],
                 via_float32: bool) -> None:
        super().__init__()
        self.op, self.spec, self.constants = op, spec, constants
        self.tensor_slots, self.via_float32 = tensor_slots, via_float32

    def forward(self, *tensors: torch.Tensor) -> Any:
        leaves = list(self.constants)
        for slot, t in zip(self.tensor_slots, tensors, strict=True):
            leaves[slot] = t.to(torch.bfloat16) if self.via_float32 and t.dtype == torch.float32 \
                else t
        args, kwargs = torch.utils._pytree.tree_unflatten(leaves, self.spec)
        out = self.op(*args, **kwargs)
        if not self.via_float32:
            return out
        return torch.utils._pytree.tree_map(
            lambda v: v.to(torch.float32)
            if isinstance(v, torch.Tensor) and v.dtype == torch.bfloat16 else v, out)


def _aten_op(target: Any) -> Any:
    """The OpOverload of an edge op (OpOverloads themselves have an unrelated ``.op``)."""
    from ember.exir.dialects.edge._ops import EdgeOpOverload

    return target.op if isinstance(target, EdgeOpOverload) else target


def _program_ops(program: Any) -> list[str]:
    names = []
    for node in program.graph_module.graph.nodes:
        if node.op != "call_function":
            continue
        target = _aten_op(node.target)
        if isinstance(target, torch._ops.OpOverload):
            names.append(f"{target.namespace}::{target._schema.name.split('::')[1]}"
                         + (f".{target._overloadname}" if target._overloadname != "default"
                            else ""))
    return names


def _edge_ops(program: Any) -> set[str]:
    found = set()
    for node in program.graph_module.graph.nodes:
        target = _aten_op(node.target)
        if node.op == "call_function" and isinstance(target, torch._ops.OpOverload):
            found.add(str(target))
    return found


def _target_kept(name: str, edge_ops: set[str]) -> bool:
    """Whether the edge program still computes ``name``: itself, its ``*_copy`` view
    variant, or (Ember's scalars-to-tensors pass) its ``.Tensor`` twin for a
    ``.Scalar`` overload."""
    _, packet, overload = name.split(".")
    twins = {name, f"aten.{packet}_copy.{overload}",
             f"aten.{packet}.{overload.replace('Scalar', 'Tensor')}"}
    return bool(twins & edge_ops)


def run_case(name: str, dtype: torch.dtype, sample: Any) -> Result:
    """Export, lower and run one sample; compare with eager."""
    from ember.exir import to_edge
    from ember.runtime import Runtime
    from ember.testing.op_samples import check_kind, dtype_name, op_from_name

    op = op_from_name(name)
    result = Result(name, dtype_name(dtype), -1, "fail", source=sample.source)
    leaves, spec = torch.utils._pytree.tree_flatten((sample.args, sample.kwargs))
    slots = [i for i, v in enumerate(leaves) if isinstance(v, torch.Tensor)]
    via = dtype in VIA_FLOAT32
    inputs = [leaves[i].clone() for i in slots]
    if via:
        inputs = [t.float() if t.dtype == torch.bfloat16 else t for t in inputs]
    constants = [None if isinstance(v, torch.Tensor) else v for v in leaves]
    module = OneOp(op, spec, constants, slots, via)

    def unsupported(reason: str, detail: str) -> Result:
        result.status, result.reason, result.detail = "unsupported", reason, detail
        return result

    torch.manual_seed(0)
    try:
        expected = module(*[t.clone() for t in inputs])
    except Exception as e:  # noqa: BLE001 - e.g. as_strided reaching past a view's storage
        return unsupported("sample needs a view input",
                           "program inputs are dense copies; eager on a copy raises "
                           + _first_line(e))

    try:
        exported = torch.export.export(module, tuple(inputs), strict=False)
    except Exception as e:  # noqa: BLE001
        return unsupported("export", _first_line(e))
    try:
        edge = to_edge(exported)
    except Exception as e:  # noqa: BLE001
        return unsupported("to_edge", _first_line(e))
    edge_ops = _edge_ops(edge.exported_program())
    if not _target_kept(name, edge_ops):
        # What a user exporting this op runs: judge that program.
        result.decomposed = ", ".join(sorted(edge_ops)) or "no op"
    try:
        lowered = edge.to_executorch()
        pte = lowered.buffer
    except Exception as e:  # noqa: BLE001
        return unsupported("to_executorch", _first_line(e))
    registered = set(Runtime.get().registered_kernels)
    missing = sorted({k for k in _program_ops(lowered.exported_program()) if k not in registered})
    if missing:
        return unsupported("no kernel", ", ".join(missing))
    try:
        method = Runtime.get().load_program(pte).load_method("forward")
        got = method.execute(inputs)
    except Exception as e:  # noqa: BLE001
        return classify_runtime_error(result, _first_line(e))
    problem = compare(got, expected, dtype, check_kind(name),
                      _bound_args(op, sample.args, sample.kwargs))
    if problem:
        result.reason, result.detail = problem
    else:
        result.status = "pass"
    return result


def classify_runtime_error(result: Result, message: str) -> Result:
    """A kernel missing at load time is 'unsupported (no kernel)'; anything else fails."""
    match = re.search(r"no kernel is registered for operator (\S+)", message)
    if match:
        result.status, result.reason, result.detail = "unsupported", "no kernel", match[1]
    else:
        result.status, result.reason, result.detail = "fail", "runtime error", message
    return result


def _bound_args(op: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """The op's arguments by schema name, defaults filled in."""
    bound: dict[str, Any] = {}
    for i, a in enumerate(op._schema.arguments):
        if i < len(args):
            bound[a.name] = args[i]
        elif a.name in kwargs:
            bound[a.name] = kwargs[a.name]
        elif a.has_default_value():
            bound[a.name] = a.default_value
    return bound


def compare(got: list[Any], expected: Any, dtype: torch.dtype, kind: str,
            args: dict[str, Any] | None = None) -> tuple[str, str] | None:
    """None when ``got`` matches; else (category, detail). ``args``: the op's
    arguments by name (the "sort" check needs ``self`` and ``dim``)."""
    want = [v for v in torch.utils._pytree.tree_leaves(expected)]
    if len(got) != len(want):
        return "mismatch", f"{len(got)} outputs, expected {len(want)}"
    if kind == "first":
        got, want = got[:1], want[:1]
    if kind == "sort":
        return _compare_sort(got, want, dtype, args or {})
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        if not isinstance(w, torch.Tensor):
            if g != w:
                return "mismatch", f"output {i}: {g!r} != {w!r}"
            continue
        if not isinstance(g, torch.Tensor):
            return "mismatch", f"output {i}: got {type(g).__name__}, expected a tensor"
        if tuple(g.shape) != tuple(w.shape) or g.dtype != w.dtype:
            return "mismatch", (f"output {i}: {g.dtype}{list(g.shape)} "
                                f"vs eager {w.dtype}{list(w.shape)}")
        if kind == "shape":
            continue
        if kind == "unit":
            if g.numel() and not bool(((g >= 0) & (g < 1)).all()):
                return "mismatch", f"output {i}: values outside [0, 1)"
            continue
        if kind == "permutation":
            if not torch.equal(g.sort().values, torch.arange(g.numel(), dtype=g.dtype)):
                return "mismatch", f"output {i}: not a permutation"
            continue
        problem = _values_differ(g, w, dtype)
        if problem:
            return "mismatch", f"output {i}: {problem}"
    return None


def _compare_sort(got: list[Any], want: list[Any], dtype: torch.dtype,
                  args: dict[str, Any]) -> tuple[str, str] | None:
    """sort/topk: (values, indices). Values must match eager's; indices may
    differ where values tie (eager's order among equal keys is unspecified), so
    they must be in range, distinct along ``dim``, and pick the values out of
    ``self``."""
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        if not isinstance(g, torch.Tensor):
            return "mismatch", f"output {i}: got {type(g).__name__}, expected a tensor"
        if tuple(g.shape) != tuple(w.shape) or g.dtype != w.dtype:
            return "mismatch", (f"output {i}: {g.dtype}{list(g.shape)} "
                                f"vs eager {w.dtype}{list(w.shape)}")
    values, indices = got
    problem = _values_differ(values, want[0], dtype)
    if problem and args.get("sorted", True) is False and values.dim():
        # topk(sorted=False): eager's order is unspecified too; compare as sets.
        dim = args.get("dim", -1)
        problem = _values_differ(values.sort(dim).values, want[0].sort(dim).values, dtype)
    if problem:
        return "mismatch", f"output 0: {problem}"
    if args.get("stable") is True:  # A stable sort's order among ties is specified.
        problem = _values_differ(indices, want[1], dtype)
        return ("mismatch", f"output 1: {problem}") if problem else None
    self = args.get("self")
    if not isinstance(self, torch.Tensor):
        return "mismatch", "output 1: cannot check indices without self"
    if self.dim() == 0:
        if bool((indices != 0).any()):
            return "mismatch", "output 1: a 0-dim input's index must be 0"
        return None
    dim = args.get("dim", -1) % self.dim()
    if indices.numel() == 0:
        return None
    if bool(((indices < 0) | (indices >= self.shape[dim])).any()):
        return "mismatch", f"output 1: index out of range for dim {dim} of size {self.shape[dim]}"
    if indices.shape[dim] > 1 and bool((indices.sort(dim).values.diff(dim=dim) == 0).any()):
        return "mismatch", f"output 1: an index repeats along dim {dim}"
    picked = self.gather(dim, indices).to(values.dtype)
    same = (picked == values) | (picked.isnan() & values.isnan()) if picked.is_floating_point() \
        else picked == values
    if not bool(same.all()):
        return "mismatch", (f"output 1: {int((~same).sum())}/{values.numel()} indices do not "
                            "point at their values")
    return None


def _values_differ(got: torch.Tensor, want: torch.Tensor, dtype: torch.dtype) -> str | None:
    if not want.is_floating_point():
        if torch.equal(got, want):
            return None
        bad = (got != want).sum().item()
        return f"{bad}/{want.numel()} elements differ (exact dtype {want.dtype})"
    # A bfloat16 case returns its bfloat16 results as float32: judge them as bfloat16.
    tolerance_dtype = dtype if dtype in VIA_FLOAT32 and want.dtype == torch.float32 else want.dtype
    rtol, atol = TOLERANCES.get(tolerance_dtype, TOLERANCES[torch.float32])
    g, w = got.double(), want.double()
    both_nan = g.isnan() & w.isnan()
    same_inf = g.isinf() & w.isinf() & (g == w)
    ok = both_nan | same_inf | ((g - w).abs() <= atol + rtol * w.abs())
    if bool(ok.all()):
        return None
    err = (g - w).abs()[~ok]
    worst = err.nan_to_num(nan=float("inf")).max().item()
    return (f"max abs error {worst:.3g} over {int((~ok).sum())}/{w.numel()} elements "
            f"(rtol {rtol:g}, atol {atol:g})")


# --- worker process: runs cases it reads as JSON lines, writes one result per line ----------

def _cache_cia_ops() -> None:
    """torch.export recomputes the set of CompositeImplicitAutograd ops on every
    ``run_decompositions`` (~0.5 s of each case); the set cannot change inside
    the worker, so compute it once."""
    import functools

    import torch._export.utils as export_utils
    import torch.export.decomp_utils as decomp_utils
    import torch.export.exported_program as exported_program

    cached = functools.cache(export_utils._collect_all_valid_cia_ops)
    for module in (export_utils, decomp_utils, exported_program):
        if hasattr(module, "_collect_all_valid_cia_ops"):
            module._collect_all_valid_cia_ops = cached


def worker_ready() -> Any:
    """Starts a sweep worker's side of the protocol: returns the stream to
    answer on (stdout; stray prints go to stderr) after saying it is ready."""
    import warnings

    warnings.filterwarnings("ignore")
    _cache_cia_ops()
    out = sys.stdout
    sys.stdout = sys.stderr  # stray prints must not corrupt the protocol
    out.write(json.dumps({"ready": True}) + "\n")
    out.flush()
    return out


def _worker() -> None:
    from ember.testing.op_samples import dtype_from_name, samples

    out = worker_ready()
    cache: dict[tuple[str, str], list[Any]] = {}
    for line in sys.stdin:
        request = json.loads(line)
        name, dtype_s, index = request["op"], request["dtype"], request["index"]
        key = (name, dtype_s)
        if key not in cache:
            cache.clear()
            cache[key] = samples(name, dtype_from_name(dtype_s))
        if index is None:  # how many samples the op has in this dtype
            out.write(json.dumps({"count": len(cache[key])}) + "\n")
            out.flush()
            continue
        try:
            result = run_case(name, dtype_from_name(dtype_s), cache[key][index])
        except Exception as e:  # noqa: BLE001 - the harness itself failed on this case
            result = Result(name, dtype_s, index, "fail", "harness error", _first_line(e))
        result.index = index
        out.write(json.dumps(asdict(result)) + "\n")
        out.flush()


class Runner:
    """A worker subprocess, restarted after a crash or a timeout."""

    worker_module = "ember.testing.conformance"

    def __init__(self, timeout: float = CASE_TIMEOUT_S) -> None:
        self.timeout = timeout
        self.proc: subprocess.Popen[str] | None = None

    def _start(self) -> None:
        env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", self.worker_module, "--worker"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True, env=env)
        if self._readline(600.0) is None:
            raise RuntimeError("conformance worker did not start")

    def _readline(self, timeout: float) -> str | None:
        assert self.proc is not None and self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            return None
        line = self.proc.stdout.readline()
        return line or None

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def count(self, name: str, dtype: str) -> int:
        """The number of samples of ``name`` in ``dtype`` (0 if generating them fails)."""
        if self.proc is None:
            self._start()
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"op": name, "dtype": dtype, "index": None}) + "\n")
        self.proc.stdin.flush()
        line = self._readline(self.timeout)
        if line is None:
            self.stop()
            return 0
        return int(json.loads(line)["count"])

    def run(self, name: str, dtype: str, index: int) -> Result:
        if self.proc is None:
            self._start()
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"op": name, "dtype": dtype, "index": index}) + "\n")
        self.proc.stdin.flush()
        # The first case of an (op, dtype) also generates its samples.
        line = self._readline(self.timeout)
        if line is None:
            crashed = self.proc.poll() is not None
            code = self.proc.returncode
            self.stop()
            if crashed:
                return Result(name, dtype, index, "fail", "crash", f"worker exited ({code})")
            return Result(name, dtype, index, "fail", "timeout", f"> {self.timeout:g} s")
        return Result(**json.loads(line))


def plan(ops: Iterable[str], max_samples: int,
         runner: Runner) -> Iterator[tuple[str, str, list[int], int]]:
    """(op, dtype, chosen sample indices, number of samples) for every tested op and dtype."""
    from ember.testing.op_samples import dtype_name, exclusion, pick, supported_dtypes

    for name in ops:
        if exclusion(name):
            continue
        for dtype in supported_dtypes(name):
            count = runner.count(name, dtype_name(dtype))
            yield name, dtype_name(dtype), pick(count, max_samples), count


def sweep(ops: list[str], max_samples: int, timeout: float, log: Any = None) -> dict[str, Any]:
    """Run every case; returns the data the coverage report is made of."""
    from ember.testing.op_samples import core_ops, exclusion, supported_dtypes

    runner = Runner(timeout)
    results: list[Result] = []
    no_samples: dict[str, list[str]] = {}
    started = time.time()
    try:
        for name, dtype, indices, count in plan(ops, max_samples, runner):
            if count == 0:
                no_samples.setdefault(name, []).append(dtype)
            for index in indices:
                r = runner.run(name, dtype, index)
                results.append(r)
                if log:
                    log.write(f"{name} {dtype} #{index}: {r.status} {r.reason} {r.detail}"[:200]
                              + "\n")
                    log.flush()
    finally:
        runner.stop()
    excluded = {n: exclusion(n) for n in core_ops() if exclusion(n)}
    no_dtypes = [n for n in ops if n not in excluded and not supported_dtypes(n)]
    return {
        "torch": torch.__version__,
        "max_samples": max_samples,
        "timeout": timeout,
        "seconds": round(time.time() - started),
        "ops": ops,
        "excluded": excluded,
        "no_samples": no_samples,
        "no_dtypes": no_dtypes,
        "results": [asdict(r) for r in results],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--opinfo", action="store_true",
                        help="sweep every OpInfo of PyTorch's op_db (the Python API) instead of "
                        "the core ATen overloads (ember.testing.opinfo_sweep)")
    parser.add_argument("--out", default=None, help="markdown report to write (default "
                        "docs/op-coverage.md, with --opinfo docs/op-coverage-opinfo.md)")
    parser.add_argument("--json", default=None, help="also write the raw results here")
    parser.add_argument("--ops", nargs="*", help="only these overloads (e.g. aten.add.Tensor)")
    parser.add_argument("--opinfos", nargs="*",
                        help="with --opinfo: only these entries (name, or name:variant)")
    parser.add_argument("--dtypes", nargs="*",
                        help="with --opinfo: only these dtypes (default: every dtype Ember has)")
    parser.add_argument("--resume", action="store_true",
                        help="with --opinfo: keep the entries already in --json, run the rest")
    parser.add_argument("--merge", nargs="*", metavar="JSON",
                        help="with --opinfo: no sweep; merge the results of sweeps of other "
                        "dtypes (their --json files) into --json and the report")
    parser.add_argument("--rerun", nargs="*",
                        help="with --resume: run these entries again (drop their results)")
    parser.add_argument("--max-samples", type=int, default=4,
                        help="samples per (op, dtype): the core sweep spreads them over "
                        "PyTorch's list, the OpInfo sweep takes the first runnable ones")
    parser.add_argument("--timeout", type=float, default=CASE_TIMEOUT_S, help="seconds per case")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    if args.worker:
        _worker()
        return 0
    if args.opinfo:
        from ember.testing import opinfo_sweep

        args.out = args.out or "docs/op-coverage-opinfo.md"
        return opinfo_sweep.main(args)
    args.out = args.out or "docs/op-coverage.md"
    from ember.testing.coverage_report import write_report
    from ember.testing.op_samples import core_ops

    ops = args.ops or core_ops()
    data = sweep(ops, args.max_samples, args.timeout, None if args.quiet else sys.stderr)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(data, f, indent=1)
    summary = write_report(data, args.out)
    print(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
