"""The size report (make size-report): stripped sizes of the core and of a
Module runner with no kernels, with MobileNetV2's kernels only (a selective
build from tests/oplists/mobilenet_v2.txt) and with every kernel, all from the
size-optimised build of `make size-check` (MinSizeRel, no exceptions, RTTI or
unwind tables, error messages off, single-threaded). Each runner runs
MobileNetV2 (exported here, at the zoo's small size: the same operators) to
show it works, or refuses it naming the missing operator.

    python3 size_report.py --build-dir build/size
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def export_mobilenet_v2(path: Path) -> None:
    import torch
    from torch.export import export

    from ember.exir import to_edge
    from ember.testing.model_zoo import build

    model, inputs = build("mobilenet_v2", "small")
    with torch.no_grad():
        program = to_edge(export(model, inputs)).to_executorch()
    program.save(str(path))


def stripped_size(binary: Path) -> int:
    out = binary.with_suffix(".stripped")
    subprocess.run(["strip", "-o", str(out), str(binary)], check=True)
    return out.stat().st_size


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build-dir", type=Path, required=True)
    args = parser.parse_args()
    pte = args.build_dir / "mobilenet_v2.pte"
    export_mobilenet_v2(pte)
    rows = [
        ("core (Program, Method, loaders, registries)", "ember_core_size", None),
        ("Module runner, no kernels", "ember_size_runner_none", "refuses"),
        ("Module runner, MobileNetV2's kernels (selective)", "ember_size_runner_mobilenet_v2", "runs"),
        ("Module runner, every kernel", "ember_size_runner_all", "runs"),
    ]
    ok = True
    print("| binary | stripped bytes | MobileNetV2 |\n|---|---:|---|")
    for label, target, expect in rows:
        binary = args.build_dir / target
        size = stripped_size(binary)
        result = "-"
        if expect is not None:
            run = subprocess.run([str(binary.with_suffix(".stripped")), str(pte)],
                                 capture_output=True, text=True)
            if run.returncode == 0:
                result = "runs"
            else:
                result = "refuses: " + run.stderr.strip().splitlines()[-1][:90]
            if not result.startswith(expect):
                ok = False
        print(f"| {label} | {size:,} | {result} |")
    if not ok:
        print("size-report: a runner did not behave as expected", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
