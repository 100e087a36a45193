"""One framework timing one model in its own process: the workers behind
zoo_bench.py and bf16_bench.py, and the parent's side of starting them.

    python bench/models/peers.py WORKER --dir DIR --model NAME --threads T [--target-s S]

WORKER is eager, ort, openvino_f32, openvino_default or ncnn. DIR holds what
the parent exported for NAME: ``NAME_inputs.npz`` (the example inputs and
``ref``, eager's float32 output), ``NAME.onnx`` (torch.onnx, dynamo=True),
``NAME.ncnn.param/.bin`` (pnnx, fp16=0) and ``NAME_eager.pt`` (the eager module,
torch.save'd). A worker prints one JSON line: median latency (s), load time
(s), peak RSS (bytes), the output's max |Δ| ÷ max |ref|, and for OpenVINO the
precision it ran in.

Only the eager worker imports torch: the others import numpy and their own
package, so they can run from a Python that has no torch (bf16_bench.py's
``--peer-python``). Settings per peer follow /work/shared/docs/peers.md's
fairness rules: ONNX Runtime intra-op threads = T, inter-op 1, sequential;
OpenVINO INFERENCE_NUM_THREADS = T, one stream, latency hint, and
INFERENCE_PRECISION_HINT=f32 unless the default precision is asked for; ncnn
with fp16 storage, packing and arithmetic off (float32 throughout) and
num_threads = T.
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

WORKERS = ("eager", "ort", "openvino_f32", "openvino_default", "ncnn")


# --- timing -------------------------------------------------------------------------------


def time_callable(fn: Callable[[], Any], target_s: float, min_iters: int = 20,
                  warmup: int = 5) -> float:
    """Median seconds per call after `warmup` calls; enough calls to fill
    `target_s`. Warm-up stops early once it has used `target_s` (models that
    take seconds per call)."""
    t0 = time.perf_counter()
    for _ in range(warmup):
        fn()
        if time.perf_counter() - t0 > target_s:
            break
    t0 = time.perf_counter()
    fn()
    est = max(time.perf_counter() - t0, 1e-7)
    iters = int(min(max(target_s / est, min_iters), 20000))
    samples = []
    for _ in range(iters):
        s = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - s)
    return statistics.median(samples)


def peak_rss() -> int | None:
    """This process's VmHWM in bytes (per address space, reset at exec: wait4's
    ru_maxrss would count the parent's memory a child forked with)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def relative_error(got, ref) -> float:
    """max |got - ref| ÷ max |ref| over numpy arrays of the same size (ncnn
    drops the batch dimension, so shapes may differ by leading 1s)."""
    import numpy as np

    got = np.asarray(got, dtype=np.float64).reshape(-1)
    ref = np.asarray(ref, dtype=np.float64).reshape(-1)
    if got.size != ref.size:
        return float("inf")
    return float(np.abs(got - ref).max() / max(np.abs(ref).max(), 1e-30))


# --- workers (each in its own process) ------------------------------------------------------


def load_inputs(model_dir: Path, model: str):
    """The example inputs (a list of numpy arrays) and eager's output."""
    import numpy as np

    data = np.load(model_dir / f"{model}_inputs.npz")
    inputs = [data[f"arr_{i}"] for i in range(len(data.files) - 1)]
    return inputs, data["ref"]


def run_worker(kind: str, model_dir: Path, model: str, threads: int, target_s: float,
               min_iters: int = 3) -> dict:
    inputs, ref = load_inputs(model_dir, model)
    extra: dict = {}
    t0 = time.perf_counter()
    if kind == "eager":
        import torch

        torch.set_num_threads(threads)
        module = torch.load(model_dir / f"{model}_eager.pt", weights_only=False)
        args = [torch.from_numpy(a) for a in inputs]
        with torch.inference_mode():
            out = module(*args)
            load = time.perf_counter() - t0
            lat = time_callable(lambda: module(*args), target_s, min_iters, warmup=3)
        out = out.numpy()
    elif kind == "ort":
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        sess = ort.InferenceSession(str(model_dir / f"{model}.onnx"), opts,
                                    providers=["CPUExecutionProvider"])
        load = time.perf_counter() - t0
        feeds = {i.name: a for i, a in zip(sess.get_inputs(), inputs, strict=True)}
        out = sess.run(None, feeds)[0]
        lat = time_callable(lambda: sess.run(None, feeds), target_s, min_iters, warmup=3)
    elif kind.startswith("openvino"):
        import openvino as ov

        core = ov.Core()
        config = {"INFERENCE_NUM_THREADS": threads, "NUM_STREAMS": 1,
                  "PERFORMANCE_HINT": "LATENCY"}
        if kind == "openvino_f32":
            config["INFERENCE_PRECISION_HINT"] = "f32"
        compiled = core.compile_model(core.read_model(str(model_dir / f"{model}.onnx")), "CPU",
                                      config)
        extra["precision"] = re.sub(r"<Type: '(.*)'>", r"\1",
                                    str(compiled.get_property("INFERENCE_PRECISION_HINT")))
        request = compiled.create_infer_request()
        load = time.perf_counter() - t0
        out = request.infer(inputs)[compiled.output(0)].copy()
        lat = time_callable(lambda: request.infer(inputs), target_s, min_iters, warmup=3)
    elif kind == "ncnn":
        import ncnn
        import numpy as np

        net = ncnn.Net()
        net.opt.use_fp16_storage = False
        net.opt.use_fp16_packed = False
        net.opt.use_fp16_arithmetic = False
        net.opt.num_threads = threads
        net.load_param(str(model_dir / f"{model}.ncnn.param"))
        net.load_model(str(model_dir / f"{model}.ncnn.bin"))
        # ncnn has no int64 blobs: token ids go in as int32; batch 1 is implicit.
        mats = [ncnn.Mat(a.astype(np.int32) if a.dtype == np.int64 else a, batch_index=0).clone()
                for a in inputs]
        load = time.perf_counter() - t0

        def infer():
            with net.create_extractor() as ex:
                for i, m in enumerate(mats):
                    ex.input(f"in{i}", m)
                _, o = ex.extract("out0")
                return o

        out = np.array(infer().numpy(batch_index=0))
        lat = time_callable(infer, target_s, min_iters, warmup=3)
    else:
        raise ValueError(f"unknown worker {kind!r}; known: {', '.join(WORKERS)}")
    return {"latency": lat, "load": load, "rss": peak_rss(), "err": relative_error(out, ref),
            **extra}


# --- the parent's side ------------------------------------------------------------------------


@dataclass
class Measure:
    latency: float | None = None  # median seconds per call
    load: float | None = None  # seconds
    rss: int | None = None  # peak resident bytes of the process
    err: float | None = None  # max |Δ| ÷ max |eager|
    error: str | None = None  # why there is no latency


def run_child(cmd: list[str]) -> str:
    """stdout of one child process; its last stderr line on failure."""
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True)
    if proc.returncode < 0:
        raise RuntimeError(f"crashed ({signal.Signals(-proc.returncode).name})")
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()
        raise RuntimeError(tail[-1][:200] if tail else f"exit {proc.returncode}")
    return proc.stdout


def measure_worker(kind: str, model_dir: Path, model: str, threads: int, target_s: float,
                   python: str = sys.executable) -> tuple[Measure, dict]:
    """Runs one worker in a fresh process: its Measure and its JSON."""
    out = run_child([python, __file__, kind, "--dir", str(model_dir), "--model", model,
                     "--threads", str(threads), "--target-s", str(target_s)])
    d = json.loads(out.strip().splitlines()[-1])
    return Measure(d["latency"], d["load"], d["rss"], d.get("err")), d


_EMBER_RUN = r"load ([\d.]+) ms .*latency over \d+ runs: median ([\d.]+) ms"


def measure_ember(ember_run: Path, pte: Path, threads: int, target_s: float,
                  estimate: float | None = None) -> Measure:
    """ember-run over enough iterations to fill `target_s`, from `estimate`
    (seconds per call; measured with 3 calls first when None)."""
    if estimate is None:
        out = run_child([str(ember_run), str(pte), "--iters", "3", "--warmup", "1",
                         "--threads", str(threads)])
        m = re.search(_EMBER_RUN, out)
        if m is None:
            raise RuntimeError(f"cannot parse ember-run output: {out[:200]}")
        estimate = float(m.group(2)) * 1e-3
    iters = int(min(max(target_s / max(estimate, 1e-6), 3), 2000))
    warmup = 3 if estimate * 3 < target_s else 1
    out = run_child([str(ember_run), str(pte), "--iters", str(iters), "--warmup", str(warmup),
                     "--threads", str(threads)])
    m = re.search(_EMBER_RUN, out)
    if m is None:
        raise RuntimeError(f"cannot parse ember-run output: {out[:200]}")
    rss = re.search(r"peak RSS ([\d.]+) (KiB|MiB|GiB)", out)
    scale = {"KiB": 2**10, "MiB": 2**20, "GiB": 2**30}
    peak = int(float(rss.group(1)) * scale[rss.group(2)]) if rss else None
    return Measure(float(m.group(2)) * 1e-3, float(m.group(1)) * 1e-3, peak)


def cpu_flags() -> str:
    try:
        flags = next(line for line in Path("/proc/cpuinfo").read_text().splitlines()
                     if line.startswith("flags")).split()
    except (OSError, StopIteration):
        return "flags unknown"
    shown = [f for f in ("avx2", "avx512f", "avx512_bf16", "amx_bf16") if f in flags]
    return ", ".join(shown)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("worker", choices=WORKERS)
    ap.add_argument("--dir", type=Path, required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--target-s", type=float, default=1.0)
    args = ap.parse_args()
    print(json.dumps(run_worker(args.worker, args.dir, args.model, args.threads, args.target_s)))


if __name__ == "__main__":
    main()
