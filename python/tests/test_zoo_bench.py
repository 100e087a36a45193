"""The `make bench` model table (bench/models/zoo_bench.py, peers.py,
zoo_report.py) on made-up numbers and on a small zoo model, so its worker,
export and report code cannot rot between benchmark runs. Times nothing
that is checked: the workers run with tiny time targets. Each peer's worker
runs only where its package is installed (bench/requirements-peers.txt, not
part of the test venv); without it, the export records why the column is
n/a."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench" / "models"))

from peers import Measure
from zoo_report import FP32_TOLERANCE, ModelResult, report

PEER_PACKAGES = {"ort": "onnxruntime", "openvino_f32": "openvino",
                 "openvino_default": "openvino", "ncnn": "ncnn"}


def made_up() -> ModelResult:
    r = ModelResult("resnet50", gflop=8.0, delegated="1 delegates, 0 portable ops")
    for t, scale in ((1, 1.0), (2, 0.5)):
        for rnd in range(3):
            jitter = 1.0 + 0.1 * rnd  # the median round is the middle one
            r.add("eager", t, Measure(0.080 * scale * jitter, 0.5, 400 << 20, 0.0))
            r.add("ort", t, Measure(0.040 * scale * jitter, 0.3, 600 << 20, 1e-6))
            r.add("openvino_f32", t, Measure(0.050 * scale * jitter, 0.4, 500 << 20, 1e-6))
            r.add("openvino_default", t, Measure(0.010 * scale * jitter, 0.4, 500 << 20, 0.1))
            r.add("portable", t, Measure(0.100 * scale * jitter, 0.001, 120 << 20))
            r.add("xnnpack", t, Measure(0.044 * scale * jitter, 0.1, 250 << 20))
            r.add("bf16", t, Measure(0.030 * scale * jitter, 0.001, 70 << 20))
    r.failed["ncnn"] = "pnnx: cannot convert"
    r.errs.update({"portable": 1e-6, "xnnpack": 2e-6, "bf16": 0.1})
    return r


def test_report_medians_ratios_peak_and_footnotes():
    wrong = ModelResult("gpt2", gflop=22.0)
    wrong.add("eager", 1, Measure(0.2, 1.0, 1 << 30, 0.0))
    wrong.add("ncnn", 1, Measure(0.1, 0.1, 1 << 29, 10 * FP32_TOLERANCE))
    wrong.add("portable", 1, Measure(error="failed: crashed (SIGSEGV)"))
    text = report([made_up(), wrong], [1, 2], {"avx2": 100.0, "avx512": 200.0}, ["- host"])
    rows = {tuple(c.strip() for c in line.split("|")[1:4]): line for line in text.splitlines()
            if line.startswith(("| resnet50 |", "| gpt2 |"))}
    one = rows[("resnet50", "8.0", "1")]
    # medians of the rounds; best Ember = XNNPACK 48.4 ms -> 8 / 0.0484 GFLOP/s, 83% of 1 × 200;
    # fastest fp32 peer = ORT 44.0 ms; bf16 33.0 ÷ OpenVINO default 11.0.
    assert "| 88.0 | 44.0 | 55.0 | n/a [1] | 110.0 | 48.4 |" in one
    assert "| 165.3 (xnn) | 83% | 1.10 (ORT) | 11.0 | 33.0 | 3.00 |" in one
    two = rows[("resnet50", "8.0", "2")]
    assert "| 330.6 (xnn) | 83% | 1.10 (ORT) |" in two  # 2 threads: twice the peak
    assert "[1] ncnn fp32, resnet50: pnnx: cannot convert" in text
    # a wrong fp32 output and a failed run are n/a with their reasons, never a number
    g = rows[("gpt2", "22.0", "1")]
    assert "| 200.0 | n/a | n/a | n/a [2] | n/a [3] |" in g
    assert "[2] ncnn fp32, gpt2: output differs from eager" in text
    assert "[3] Ember portable, gpt2: failed: crashed (SIGSEGV)" in text
    assert "avx2 100, avx512 200 GFLOP/s per core" in text
    assert "| resnet50 | 1 delegates, 0 portable ops |" in text


def test_flop_count_has_matmuls_convolutions_and_attention():
    pytest.importorskip("transformers")
    from zoo_bench import count_gflop

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 4, 3, padding=1, groups=1)
            self.fc = torch.nn.Linear(8, 8)

        def forward(self, x, q):
            a = torch.nn.functional.scaled_dot_product_attention(q, q, q)
            return self.conv(x).sum() + self.fc(a).sum()

    x, q = torch.randn(1, 3, 5, 5), torch.randn(1, 2, 16, 8)
    conv = 2 * 4 * 25 * 3 * 9
    fc = 2 * (2 * 16) * 8 * 8
    attention = 2 * (2 * 2 * 16 * 16 * 8)
    assert count_gflop(Net(), (x, q)) * 1e9 == pytest.approx(conv + fc + attention)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """bert_base at its small size, exported for every framework whose
    package is here; the others recorded as not installed."""
    pytest.importorskip("transformers")
    from zoo_bench import export_model

    out = tmp_path_factory.mktemp("zoo")
    kinds = ["eager", "ort", "openvino_f32", "openvino_default", "ncnn", "portable", "xnnpack"]
    res, paths = export_model("bert_base", out, kinds, size="small")
    return res, paths, out


def test_export_and_ember_and_eager_workers(exported):
    from installed import tool
    from peers import run_worker
    from zoo_bench import measure

    res, paths, out = exported
    for kind, package in PEER_PACKAGES.items():
        if importlib.util.find_spec(package) is None:
            assert "not installed" in res.failed[kind]
    assert res.gflop and res.errs["portable"] < 1e-4 and res.errs["xnnpack"] < 1e-4
    # Ember through ember-run in a child process, as the bench runs it.
    m = measure("portable", res, paths, out, Path(tool("ember-run")), 1, 0.01, {})
    assert m.error is None and m.latency > 0 and m.load is not None, m.error
    res.add("portable", 1, m)
    # The eager worker in this process (a child would spend seconds importing
    # torch and transformers); it sets torch's thread count, so restore it.
    threads = torch.get_num_threads()
    try:
        d = run_worker("eager", out, "bert_base", 1, 0.01)
    finally:
        torch.set_num_threads(threads)
    assert d["err"] == 0.0 and d["latency"] > 0
    res.add("eager", 1, Measure(d["latency"], d["load"], d["rss"], d["err"]))
    row = next([c.strip() for c in line.split("|")[1:-1]]
               for line in report([res], [1], {}, []).splitlines()
               if line.startswith("| bert_base |"))
    assert row[2] == "1" and row[3] != "n/a" and row[7] != "n/a"  # threads, eager, portable


@pytest.mark.parametrize("kind", list(PEER_PACKAGES))
def test_peer_worker(exported, kind):
    if importlib.util.find_spec(PEER_PACKAGES[kind]) is None:
        pytest.skip(f"{PEER_PACKAGES[kind]} is not installed (bench/requirements-peers.txt)")
    from zoo_bench import measure

    res, paths, out = exported
    assert kind not in res.failed, res.failed.get(kind)
    m = measure(kind, res, paths, out, None, 1, 0.01, {})
    assert m.error is None and m.latency > 0, m.error
    assert m.err < (0.05 if kind == "openvino_default" else 1e-4)
