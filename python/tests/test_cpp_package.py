"""The C++ package (docs/cpp-packages.md): `cmake --install` of a runtime-only
build gives headers, static libraries and EmberConfig.cmake; the example app
(examples/cpp_app) built against that prefix with find_package(Ember), and
built again with Ember as an add_subdirectory, runs .pte files made here and
prints what eager computes.

The builds live in build/pkg and build/pkg-sub of this checkout, next to the
Python build (build/py): same depth, same compiler, same flags, so ccache
serves the kernels compiled there and the builds take seconds, not minutes."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.export import export

from ember.exir import to_edge

ROOT = Path(__file__).resolve().parents[2]
CMAKE = shutil.which("cmake")
NINJA = shutil.which("ninja")
pytestmark = pytest.mark.skipif(CMAKE is None or NINJA is None, reason="needs cmake and ninja")

PKG_BUILD = ROOT / "build/pkg"
PREFIX = PKG_BUILD / "prefix"
SUB_BUILD = ROOT / "build/pkg-sub"
# What an app needs: the runtime and Module, every kernel, the delegates.
PACKAGE_TARGETS = ["ember_extension", "ember_portable_kernels", "ember_kernel_registry_all",
                   "ember_backend_demo", "ember_backend_xnnpack"]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(CCACHE_BASEDIR=str(ROOT), CCACHE_NOHASHDIR="1")
    return env


def _compiler_args() -> list[str]:
    """The Python build's compiler (ccache keys include the compiler's name)."""
    cache = ROOT / os.environ.get("EMBER_BUILD_DIR", "build/py") / "CMakeCache.txt"
    if cache.exists():
        for line in cache.read_text().splitlines():
            if line.startswith("CMAKE_CXX_COMPILER:"):
                return [f"-DCMAKE_CXX_COMPILER={line.split('=', 1)[1]}"]
    return []


def _run(args: list, **kw) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(a) for a in args], capture_output=True, text=True, env=_env(), **kw)
    assert proc.returncode == 0, f"{args}\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    return proc


def _configure(src: Path, build: Path, *defs: str) -> None:
    _run([CMAKE, "-S", src, "-B", build, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
          "-DEMBER_WERROR=ON", *_compiler_args(), *defs])


@pytest.fixture(scope="module")
def prefix() -> Path:
    """A runtime-only build (no tools, tests or Python), installed."""
    _configure(ROOT, PKG_BUILD, "-DEMBER_BUILD_TOOLS=OFF", "-DEMBER_BUILD_TESTS=OFF",
               "-DEMBER_BUILD_PYTHON=OFF", f"-DCMAKE_INSTALL_PREFIX={PREFIX}")
    _run([CMAKE, "--build", PKG_BUILD, "--target", *PACKAGE_TARGETS])
    shutil.rmtree(PREFIX, ignore_errors=True)
    _run([CMAKE, "--install", PKG_BUILD])
    return PREFIX


@pytest.fixture(scope="module")
def app(prefix: Path) -> Path:
    build = PKG_BUILD / "app"
    shutil.rmtree(build, ignore_errors=True)
    _configure(ROOT / "examples/cpp_app", build, f"-DCMAKE_PREFIX_PATH={prefix}")
    _run([CMAKE, "--build", build])
    return build / "ember_cpp_app"


class Net(torch.nn.Module):
    """Convolution (channels-last output order is the runtime's business),
    linear and an integer output: three outputs of different kinds."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.fc = torch.nn.Linear(4 * 6 * 6, 5)

    def forward(self, x, idx):
        y = torch.relu(self.conv(x))
        return y, self.fc(y.flatten(1)), idx * 3 + 1


def _inputs():
    torch.manual_seed(0)
    return (torch.randn(2, 3, 6, 6), torch.arange(-3, 3, dtype=torch.int64).reshape(2, 3))


def _save_inputs(tmp_path: Path, inputs) -> list[Path]:
    paths = []
    for i, t in enumerate(inputs):
        p = tmp_path / f"input_{i}.npy"
        np.save(p, t.numpy())
        paths.append(p)
    return paths


def _parse(stdout: str) -> list[np.ndarray]:
    lines = stdout.splitlines()
    outs = []
    for header, values in zip(lines[::2], lines[1::2]):
        dtype, shape = header.split(": ", 1)[1].split(" ", 1)
        sizes = [int(s) for s in shape.strip("[]").split(",") if s.strip()]
        np_dtype = np.dtype(dtype).type
        outs.append(np.array([float(v) if np_dtype in (np.float32, np.float64) else int(v)
                              for v in values.split()], dtype=np_dtype).reshape(sizes))
    return outs


def _check_like_eager(got: list[np.ndarray], want) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want):
        w = w.detach().numpy()
        assert g.dtype == w.dtype and g.shape == w.shape
        if np.issubdtype(w.dtype, np.floating):
            # float32 GEMM/convolution order differs from eager's: relative to the magnitude.
            assert np.max(np.abs(g - w)) <= 1e-5 * max(1.0, float(np.max(np.abs(w))))
        else:
            np.testing.assert_array_equal(g, w)


@pytest.fixture(scope="module")
def net_pte(tmp_path_factory) -> tuple[Path, list[Path], tuple]:
    tmp = tmp_path_factory.mktemp("cpp_app")
    model, inputs = Net().eval(), _inputs()
    pte = tmp / "net.pte"
    to_edge(export(model, inputs)).to_executorch().save(str(pte))
    with torch.no_grad():
        want = model(*inputs)
    return pte, _save_inputs(tmp, inputs), want


def test_install_layout(prefix):
    for header in ["runtime/executor/program.h", "runtime/core/tensor.h",
                   "extension/module/module.h", "extension/tensor/owned_tensor.h",
                   "extension/data_loader/file_data_loader.h",
                   "extension/bundled_program/bundled_program.h",
                   "runtime/executor/event_tracer.h", "runtime/backend/backend_interface.h"]:
        assert (prefix / "include/ember" / header).is_file(), header
    assert not list((prefix / "include/ember").rglob("test")), "test helpers are not installed"
    libdir = next(d for d in [prefix / "lib", prefix / "lib64"] if d.is_dir())
    for lib in ["ember_runtime", "ember_extension", "ember_portable_kernels",
                "ember_kernel_registry_all", "ember_backend_xnnpack"]:
        assert (libdir / f"lib{lib}.a").is_file(), lib
    for f in ["EmberConfig.cmake", "EmberConfigVersion.cmake", "EmberTargets.cmake",
              "EmberDeps.cmake"]:
        assert (libdir / "cmake/Ember" / f).is_file(), f


def _find_package(tmp_path: Path, prefix: Path, version: str) -> subprocess.CompletedProcess:
    """A project with no languages that only finds Ember and checks its targets."""
    tmp_path.mkdir()
    (tmp_path / "CMakeLists.txt").write_text(f"""
cmake_minimum_required(VERSION 3.24)
project(probe LANGUAGES NONE)
find_package(Ember {version} CONFIG REQUIRED)
foreach(t runtime module portable_kernels demo_backend xnnpack_backend)
  if(NOT TARGET Ember::${{t}})
    message(FATAL_ERROR "no Ember::${{t}}")
  endif()
endforeach()
message(STATUS "Ember ${{Ember_VERSION}} threads=${{Ember_THREADS}}")
""")
    return subprocess.run([CMAKE, "-S", str(tmp_path), "-B", str(tmp_path / "b"),
                           f"-DCMAKE_PREFIX_PATH={prefix}"], capture_output=True, text=True)


def test_find_package_targets_and_version(prefix, tmp_path):
    ok = _find_package(tmp_path / "ok", prefix, "0.1")
    assert ok.returncode == 0, ok.stderr
    assert "Ember 0.1.0 threads=ON" in ok.stdout
    # 0.x: another minor version is not compatible (EmberConfigVersion.cmake).
    newer = _find_package(tmp_path / "newer", prefix, "0.2")
    assert newer.returncode != 0 and "0.1.0" in newer.stderr


def test_installed_app_runs_like_eager(app, net_pte):
    pte, inputs, want = net_pte
    out = _run([app, pte, *inputs]).stdout
    assert out.startswith("output 0: float32 [2, 4, 6, 6]\n")
    _check_like_eager(_parse(out), want)


def test_installed_app_runs_an_xnnpack_program(app, tmp_path):
    """Ember::xnnpack_backend is linked whole: its registration survives."""
    from ember.backends.xnnpack import XnnpackPartitioner

    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
    inputs = (torch.randn(4, 8),)
    program = to_edge(export(model.eval(), inputs)).to_backend(XnnpackPartitioner()).to_executorch()
    pte = tmp_path / "mlp_xnnpack.pte"
    program.save(str(pte))
    assert b"XnnpackBackend" in pte.read_bytes()
    with torch.no_grad():
        want = (model(*inputs),)
    _check_like_eager(_parse(_run([app, pte, *_save_inputs(tmp_path, inputs)]).stdout), want)


def test_installed_app_reports_errors(app, net_pte):
    pte, inputs, _ = net_pte
    few = subprocess.run([str(app), str(pte), str(inputs[0])], capture_output=True, text=True)
    assert few.returncode == 1 and "takes 2 inputs, 1 given" in few.stderr
    wrong = subprocess.run([str(app), str(pte), str(inputs[1]), str(inputs[0])],
                           capture_output=True, text=True)
    assert wrong.returncode == 1 and "setting an input" in wrong.stderr
    missing = subprocess.run([str(app), str(pte), "--method", "nope", *map(str, inputs)],
                             capture_output=True, text=True)
    assert missing.returncode == 1 and "loading the method" in missing.stderr


def test_add_subdirectory_app_runs_like_eager(net_pte):
    """Ember as a subdirectory of another project (its PROJECT_SOURCE_DIR, not
    CMAKE_SOURCE_DIR, locates the schema and op list). EMBER_GENERATED_DIR at the
    top of the build tree keeps the compile commands, and so ccache, shared."""
    shutil.rmtree(SUB_BUILD, ignore_errors=True)
    _configure(ROOT / "examples/cpp_app", SUB_BUILD, f"-DEMBER_SOURCE_DIR={ROOT}",
               f"-DEMBER_GENERATED_DIR={SUB_BUILD / 'generated'}")
    _run([CMAKE, "--build", SUB_BUILD])
    built = {p.name for p in (SUB_BUILD / "ember").rglob("*.a")}
    assert "libember_program.a" not in built, "EXCLUDE_FROM_ALL: only what the app links"
    pte, inputs, want = net_pte
    _check_like_eager(_parse(_run([SUB_BUILD / "ember_cpp_app", pte, *inputs]).stdout), want)
