"""The core size check (make size-check): strips the size-check binary,
prints its sections, checks that it still works (loads a program and refuses
its first kernel call with OperatorMissing, since no kernels are linked),
that it needs none of the --forbid libraries (a single-threaded build links
no pthreadpool) and fails when the stripped file is larger than the gate.

    python3 check_size.py BINARY --gate BYTES --program PROGRAM.pte [--forbid LIB ...]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path


def needed_libraries(binary: Path) -> list[str]:
    """The DT_NEEDED entries of an ELF file (readelf -d)."""
    out = subprocess.run(["readelf", "-d", str(binary)], capture_output=True, text=True,
                         check=True).stdout
    return [line.split("[", 1)[1].split("]", 1)[0] for line in out.splitlines()
            if "(NEEDED)" in line]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("binary", type=Path)
    parser.add_argument("--gate", type=int, required=True, help="most bytes allowed, stripped")
    parser.add_argument("--program", type=Path, required=True)
    parser.add_argument("--forbid", action="append", default=[],
                        help="a shared library the binary must not need (name prefix)")
    args = parser.parse_args()
    stripped = args.binary.with_suffix(".stripped")
    subprocess.run(["strip", "-o", str(stripped), str(args.binary)], check=True)
    run = subprocess.run([str(stripped), str(args.program)], capture_output=True, text=True)
    if run.returncode != 3 or not ("no kernel is registered" in run.stderr
                                   or "OperatorMissing" in run.stderr):
        print(f"size-check: {stripped} did not load {args.program} as expected "
              f"(exit {run.returncode}): {run.stderr.strip()}", file=sys.stderr)
        return 1
    needed = needed_libraries(stripped)
    bad = [lib for lib in needed if any(lib.startswith(prefix) for prefix in args.forbid)]
    if bad:
        print(f"size-check: {stripped} needs {', '.join(bad)}", file=sys.stderr)
        return 1
    print(f"needs: {', '.join(needed) or 'nothing'}")
    size = stripped.stat().st_size
    if shutil.which("size"):
        sections = subprocess.run(["size", "-A", str(stripped)], capture_output=True, text=True).stdout
        rows = [line.split() for line in sections.splitlines()[2:] if line.strip()]
        big = sorted((r for r in rows if len(r) == 3 and r[1].isdigit() and r[0] != "Total"),
                     key=lambda r: -int(r[1]))[:6]
        print("| section | bytes |\n|---|---|")
        for name, nbytes, _ in big:
            print(f"| {name} | {int(nbytes):,} |")
    verdict = "within" if size <= args.gate else "OVER"
    print(f"core runtime: {size:,} bytes stripped ({verdict} the gate of {args.gate:,})")
    return 0 if size <= args.gate else 1


if __name__ == "__main__":
    sys.exit(main())
