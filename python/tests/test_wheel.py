"""The wheel is self-contained (docs/cpp-packages.md): installed into a fresh
venv, ember._C and the tools load only the C/C++ base libraries (libc, libm,
libstdc++, libgcc_s, ...) from the system and everything else from the
libraries bundled in ember/lib, and run programs from a directory outside the
tree. Every binary is stripped.

Needs the wheel: `make test-wheel` builds it and sets EMBER_TEST_WHEEL; without
it the tests are skipped. torch and numpy come from this interpreter's
site-packages through a .pth file (appended to the fresh venv's path, after its
own site-packages, so the wheel's ember is the one imported): nothing is
downloaded."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.export import export

from ember.exir import to_edge

WHEEL = os.environ.get("EMBER_TEST_WHEEL")
pytestmark = pytest.mark.skipif(not WHEEL, reason="EMBER_TEST_WHEEL not set (make test-wheel)")

# What a Debian base system has; the rest must come from the wheel.
BASE_LIBS = re.compile(r"^(linux-vdso|ld-linux[-\w]*|libc|libm|libdl|librt|libpthread|libgcc_s|"
                       r"libstdc\+\+)\.so")


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("LD_LIBRARY_PATH", "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    return env


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("wheel") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    py = root / "bin/python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "-q",
                    "--no-deps", "--no-index", WHEEL], check=True, env=_clean_env())
    site = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_path('platlib'))"],
                               capture_output=True, text=True, check=True).stdout.strip())
    # torch, numpy (and whatever else ember imports) from this interpreter.
    (site / "zz_ember_test_deps.pth").write_text(str(Path(torch.__file__).parents[1]) + "\n")
    return root


def _site(venv: Path) -> Path:
    return next((venv / "lib").glob("python3*/site-packages"))


def _elf_files(venv: Path) -> list[Path]:
    ember = _site(venv) / "ember"
    tools = [venv / "bin" / t for t in ("ember-run", "ember-inspect", "ember-oplist", "ember-llm")
             if (venv / "bin" / t).exists() or t != "ember-llm"]
    return [*ember.glob("_C*.so"), *tools, *sorted((ember / "lib").iterdir())]


def test_wheel_bundles_its_libraries(venv):
    bundled = sorted(p.name for p in (_site(venv) / "ember/lib").iterdir())
    assert {"libXNNPACK.so.0", "libpthreadpool.so.0", "libcpuinfo.so.0"} <= set(bundled), bundled


def test_ldd_resolves_everything_to_base_or_bundled(venv):
    """ldd of the extension and the tools lists every library they load,
    their dependencies' dependencies too (libXNNPACK's libcpuinfo): the
    entry points' DT_RPATH serves the bundled libraries as well."""
    lib_dir = (_site(venv) / "ember/lib").resolve()
    for elf in _elf_files(venv)[:4]:
        out = subprocess.run(["ldd", str(elf)], capture_output=True, text=True, check=True,
                             env=_clean_env()).stdout
        assert "not found" not in out, f"{elf}:\n{out}"
        for line in out.splitlines():
            name = line.split()[0]
            if BASE_LIBS.match(Path(name).name):
                continue
            path = Path(line.split("=>")[1].split("(")[0].strip()).resolve()
            assert path.parent == lib_dir, f"{elf.name} loads {name} from {path}, not the wheel"


def test_bundled_libraries_need_only_base_or_bundled(venv):
    lib_dir = _site(venv) / "ember/lib"
    bundled = {p.name for p in lib_dir.iterdir()}
    for lib in lib_dir.iterdir():
        out = subprocess.run(["readelf", "-d", str(lib)], capture_output=True, text=True,
                             check=True).stdout
        for needed in re.findall(r"\(NEEDED\)\s+Shared library: \[(.+)\]", out):
            assert BASE_LIBS.match(needed) or needed in bundled, f"{lib.name} needs {needed}"


def test_binaries_are_stripped(venv):
    for elf in _elf_files(venv):
        out = subprocess.run(["readelf", "-S", "-W", str(elf)], capture_output=True, text=True,
                             check=True).stdout
        assert ".symtab" not in out and ".debug_info" not in out, elf


def test_program_outside_the_tree(venv, tmp_path):
    """A script run from a directory of its own: the wheel's ember exports
    nothing here; it loads .pte files (portable and XNNPACK) made by this
    checkout and compares with eager, and the tools run them."""
    from ember.backends.xnnpack import XnnpackPartitioner

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(), torch.nn.Flatten(),
                                torch.nn.Linear(8 * 6 * 6, 4)).eval()
    x = torch.randn(2, 3, 8, 8)
    with torch.no_grad():
        want = model(x).numpy()
    exported = export(model, (x,))
    to_edge(exported).to_executorch().save(str(tmp_path / "net.pte"))
    to_edge(exported).to_backend(XnnpackPartitioner()).to_executorch().save(
        str(tmp_path / "net_xnnpack.pte"))
    np.save(tmp_path / "x.npy", x.numpy())
    np.save(tmp_path / "want.npy", want)
    (tmp_path / "run.py").write_text(textwrap.dedent(f"""
        import sys
        import numpy as np
        import torch
        import ember
        from ember.runtime import Runtime
        assert ember.__file__.startswith({str(venv)!r}), ember.__file__
        x = torch.from_numpy(np.load("x.npy"))
        want = np.load("want.npy")
        for name in ("net.pte", "net_xnnpack.pte"):
            out = Runtime.get().load_program(name).load_method("forward").execute([x])[0].numpy()
            err = float(np.max(np.abs(out - want)))
            assert err <= 1e-5 * max(1.0, float(np.max(np.abs(want)))), (name, err)
        print("ok", ember.__file__)
    """))
    env = _clean_env()
    proc = subprocess.run([str(venv / "bin/python"), "run.py"], cwd=tmp_path, capture_output=True,
                          text=True, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("ok " + str(venv))
    for pte in ("net.pte", "net_xnnpack.pte"):
        run = subprocess.run([str(venv / "bin/ember-run"), pte, "--input", "x.npy", "--iters", "1"],
                             cwd=tmp_path, capture_output=True, text=True, env=env)
        assert run.returncode == 0 and "output 0: float32" in run.stdout, run.stdout + run.stderr
    for tool in ("ember-inspect", "ember-oplist"):
        proc = subprocess.run([str(venv / "bin" / tool), "net_xnnpack.pte"], cwd=tmp_path,
                              capture_output=True, text=True, env=env)
        assert proc.returncode == 0, proc.stderr
