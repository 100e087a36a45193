"""The tables zoo_bench.py writes into BENCHMARKS.md, from its measurements:
median of the round medians per framework, GFLOP/s and share of the FMA peak
of the best Ember path, and the ratios against the fastest float32 peer and
OpenVINO's default precision. Imports neither torch nor a peer, so tests can
format made-up results."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from peers import Measure

# (key, column header), in the order of the main table.
FP32_PEERS = {"eager": "eager", "ort": "ONNX Runtime", "openvino_f32": "OpenVINO f32",
              "ncnn": "ncnn fp32"}
EMBER_FP32 = {"portable": "Ember portable", "xnnpack": "Ember + XNNPACK"}
LOW_PRECISION = {"openvino_default": "OpenVINO default", "bf16": "Ember bf16"}
FRAMEWORKS = {**FP32_PEERS, **EMBER_FP32, **LOW_PRECISION}
# An fp32 framework whose output is further than this from eager's (max |Δ| ÷
# max |eager|) ran a different model: its cells say so instead of a time.
FP32_TOLERANCE = 1e-2
SHORT = {"eager": "eager", "ort": "ORT", "openvino_f32": "OV f32", "ncnn": "ncnn",
         "portable": "portable", "xnnpack": "xnn", "openvino_default": "OV default",
         "bf16": "bf16"}


@dataclass
class ModelResult:
    name: str
    gflop: float | None = None  # per forward call, counted on eager
    delegated: str = ""
    arena: dict[str, tuple[int, int]] = field(default_factory=dict)  # variant -> (arena, bound)
    pte_bytes: dict[str, int] = field(default_factory=dict)
    errs: dict[str, float] = field(default_factory=dict)  # framework -> max |Δ| ÷ max |eager|
    failed: dict[str, str] = field(default_factory=dict)  # framework -> why it has no numbers
    rounds: dict[tuple[str, int], list[Measure]] = field(default_factory=dict)

    def add(self, kind: str, threads: int, m: Measure) -> None:
        self.rounds.setdefault((kind, threads), []).append(m)
        if m.err is not None:
            self.errs.setdefault(kind, m.err)

    def wrong(self, kind: str) -> str | None:
        """Why `kind`'s output does not count, if it is float32 and off."""
        err = self.errs.get(kind)
        if kind in LOW_PRECISION or err is None or err <= FP32_TOLERANCE:
            return None
        return f"output differs from eager (max |Δ| ÷ max |eager| = {err:.1e})"

    def latency(self, kind: str, threads: int) -> float | None:
        """Median of the round medians; None when no round measured it (or
        its output was wrong)."""
        if self.wrong(kind):
            return None
        got = [m.latency for m in self.rounds.get((kind, threads), []) if m.latency is not None]
        return statistics.median(got) if got else None

    def why(self, kind: str, threads: int) -> str | None:
        """Why `kind` has no latency at `threads`, if it has none."""
        if kind in self.failed:
            return self.failed[kind]
        if self.wrong(kind):
            return self.wrong(kind)
        errors = [m.error for m in self.rounds.get((kind, threads), []) if m.error]
        return errors[-1] if errors and self.latency(kind, threads) is None else None

    def first(self, kind: str, threads: int) -> Measure:
        """The first round's measurement that has numbers (load time, RSS)."""
        return next((m for m in self.rounds.get((kind, threads), []) if m.latency is not None),
                    Measure())


class Footnotes:
    """Numbered reasons for n/a cells, one per distinct (framework, reason)."""

    def __init__(self) -> None:
        self.notes: dict[str, int] = {}

    def mark(self, text: str) -> str:
        n = self.notes.setdefault(text, len(self.notes) + 1)
        return f"n/a [{n}]"

    def lines(self) -> list[str]:
        return [f"[{n}] {text}" for text, n in self.notes.items()]


def fmt_ms(s: float | None) -> str:
    if s is None:
        return "n/a"
    ms = s * 1e3
    return f"{ms:.0f}" if ms >= 1000 else f"{ms:.1f}" if ms >= 10 else f"{ms:.2f}"


def fmt_mib(n: int | None) -> str:
    return "n/a" if n is None else f"{n / 2**20:.0f}"


def best(r: ModelResult, kinds, threads: int) -> tuple[str | None, float | None]:
    """The fastest of `kinds` at `threads`: (key, median seconds)."""
    have = [(r.latency(k, threads), k) for k in kinds if r.latency(k, threads) is not None]
    if not have:
        return None, None
    lat, k = min(have)
    return k, lat


def main_table(results: list[ModelResult], threads: list[int], peak_per_core: float | None,
               notes: Footnotes) -> list[str]:
    heads = (["model", "GFLOP", "threads"] + list(FP32_PEERS.values()) + list(EMBER_FP32.values())
             + ["best Ember GFLOP/s", "% of FMA peak", "best Ember ÷ fastest fp32 peer"]
             + list(LOW_PRECISION.values()) + ["Ember bf16 ÷ OpenVINO default"])
    lines = ["| " + " | ".join(heads) + " |", "|---|---:|---:|" + "---:|" * (len(heads) - 3)]
    for r in results:
        for t in threads:
            gflop = "n/a" if r.gflop is None else f"{r.gflop:.1f}" if r.gflop >= 1 else f"{r.gflop:.2g}"
            cells = [r.name, gflop, str(t)]
            for k, head in {**FP32_PEERS, **EMBER_FP32}.items():
                lat = r.latency(k, t)
                why = r.why(k, t)
                cells.append(fmt_ms(lat) if lat is not None or not why
                             else notes.mark(f"{head}, {r.name}: {why}"))
            ek, elat = best(r, EMBER_FP32, t)
            pk, plat = best(r, FP32_PEERS, t)
            if elat and r.gflop:
                gflops = r.gflop / elat
                cells.append(f"{gflops:.1f} ({SHORT[ek]})")
                cells.append(f"{100 * gflops / (peak_per_core * t):.0f}%" if peak_per_core
                             else "n/a")
            else:
                cells += ["n/a", "n/a"]
            cells.append(f"{elat / plat:.2f} ({SHORT[pk]})" if elat and plat else "n/a")
            for k, head in LOW_PRECISION.items():
                lat = r.latency(k, t)
                why = r.why(k, t)
                cells.append(fmt_ms(lat) if lat is not None or not why
                             else notes.mark(f"{head}, {r.name}: {why}"))
            b, d = r.latency("bf16", t), r.latency("openvino_default", t)
            cells.append(f"{b / d:.2f}" if b and d else "n/a")
            lines.append("| " + " | ".join(cells) + " |")
    return lines


def detail_table(results: list[ModelResult], threads: int) -> list[str]:
    """Load, memory and error per model; load and RSS at `threads`."""
    kinds_load = ["ort", "openvino_f32", "ncnn", "portable", "xnnpack"]
    kinds_rss = ["eager", "ort", "openvino_f32", "ncnn", "portable", "xnnpack"]
    kinds_err = ["ort", "openvino_f32", "openvino_default", "ncnn", "portable", "xnnpack", "bf16"]
    lines = [
        "| model | Ember + XNNPACK delegation | arena / bound MiB (portable; xnn) | .pte MiB "
        "(portable / xnn) | load ms (" + " / ".join(SHORT[k] for k in kinds_load) + ") | peak RSS "
        "MiB (" + " / ".join(SHORT[k] for k in kinds_rss) + ") | max err ÷ max \\|eager\\| ("
        + " / ".join(SHORT[k] for k in kinds_err) + ") |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results:
        ap, ax = r.arena.get("portable", (0, 0)), r.arena.get("xnnpack", (0, 0))
        load = " / ".join(fmt_ms(r.first(k, threads).load) for k in kinds_load)
        rss = " / ".join(fmt_mib(r.first(k, threads).rss) for k in kinds_rss)
        errs = " / ".join(f"{r.errs[k]:.0e}" if k in r.errs else "n/a" for k in kinds_err)
        lines.append(
            f"| {r.name} | {r.delegated or 'n/a'} | {ap[0] / 2**20:.1f} / {ap[1] / 2**20:.1f}; "
            f"{ax[0] / 2**20:.1f} / {ax[1] / 2**20:.1f} | {fmt_mib(r.pte_bytes.get('portable'))}"
            f" / {fmt_mib(r.pte_bytes.get('xnnpack'))} | {load} | {rss} | {errs} |")
    return lines


def report(results: list[ModelResult], threads: list[int], peak: dict[str, float],
           header: list[str]) -> str:
    """The whole generated block: `header` lines (host, versions, conditions)
    first, then the tables and footnotes. `peak`: measured GFLOP/s of one core
    per ISA (fma_peak_bench); the % column uses the highest."""
    peak_per_core = max(peak.values()) if peak else None
    notes = Footnotes()
    peak_text = (", ".join(f"{isa} {v:.0f}" for isa, v in peak.items())
                 + " GFLOP/s per core; `bench/peak/fma_peak_bench`, this run"
                 if peak else "not measured: no fma_peak_bench in the build")
    lines = header + [
        "",
        ("Median ms per forward call (lower is better), median of the round medians; each "
        "framework in its own process, rounds interleaving all frameworks. GFLOP: counted on "
        "eager (`torch.utils.flop_counter`, multiply-adds of convolutions, matrix products and "
        "attention as 2 flops). `best Ember`: the faster of Ember portable and Ember + XNNPACK "
        f"(float32). % of FMA peak: its GFLOP/s over threads × the measured fp32 FMA peak of one "
        f"core ({peak_text}). `fastest fp32 peer`: the "
        "fastest of eager, ONNX Runtime, OpenVINO f32 and ncnn fp32 at the same thread count "
        "(< 1: Ember is faster). OpenVINO default = its own default inference precision "
        "(bf16 on CPUs with AVX512-BF16 or AMX); Ember bf16 = `ExecutorchBackendConfig("
        "precision=\"bf16\")` on Ember's portable kernels."),
        "",
    ]
    lines += main_table(results, threads, peak_per_core, notes)
    lines += ["", *notes.lines()] if notes.notes else []
    lines += [
        "",
        (f"Load = time to a ready session in the worker (eager: unpickling and the first call; "
        f"ONNX Runtime: InferenceSession; OpenVINO: read + compile; ncnn: load_param + "
        f"load_model; Ember: mmap + Program::load + load_method in ember-run, where XNNPACK packs "
        f"weights). Peak RSS = the worker process's VmHWM (Python workers include the "
        f"interpreter and their package). Arena = Ember's planned activation memory against its "
        f"lower bound. Errors: each framework's output against eager float32. Load and RSS at "
        f"{threads[0]} thread(s)."),
        "",
    ]
    lines += detail_table(results, threads[0])
    return "\n".join(lines)
