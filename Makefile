# Ember: the two commands.
#   make demo   set everything up, export a small CNN to model.pte (and model_xnnpack.pte,
#               with the XNNPACK delegate), run both with ember-run
#   make test   set everything up and run the whole test suite (C++ and Python)

VENV        ?= .venv
PY          := $(VENV)/bin/python
PIP         := $(VENV)/bin/pip
BUILD_DIR   ?= build/py
JOBS        ?= 2
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
export CMAKE_BUILD_PARALLEL_LEVEL := $(JOBS)
export CCACHE_BASEDIR := $(CURDIR)
# The sanitizer build has debug info, whose compile directory ccache would
# otherwise hash: without this, every fresh checkout misses the cache.
export CCACHE_NOHASHDIR := 1

.PHONY: demo test setup system-deps venv install install-with-tests test-cpp test-python test-sanitizers size-check size-report bench bench-llm-deps fuzz op-coverage op-coverage-opinfo op-coverage-all clean

demo: install
	$(PY) examples/export_cnn.py --out model.pte
	$(VENV)/bin/ember-inspect model.pte | head -n 40
	$(VENV)/bin/ember-run model.pte --iters 50
	$(VENV)/bin/ember-run model_xnnpack.pte --iters 50

test: install-with-tests test-cpp test-python test-sanitizers size-check

setup: install

system-deps:
	@scripts/install-system-deps.sh

# torch==2.13.0 is a CPU build already on disk; any other version downloads gigabytes.
$(VENV)/.stamp: requirements-dev.txt | system-deps
	python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -r requirements-dev.txt
	touch $@

venv: system-deps $(VENV)/.stamp

# VENV and BUILD_DIR can be overridden so several checkouts or developers
# can build side by side: make install VENV=/path/venv BUILD_DIR=build/mine
# One CMake build serves both: the Python package and, with tests on, the
# GoogleTest binaries that ctest runs from the same build directory.
install: venv
	$(PIP) install -q --no-build-isolation -Cbuild-dir=$(BUILD_DIR) -Ccmake.define.EMBER_BUILD_TESTS=OFF .

install-with-tests: venv
	$(PIP) install -q --no-build-isolation -Cbuild-dir=$(BUILD_DIR) -Ccmake.define.EMBER_BUILD_TESTS=ON .

test-cpp:
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS)

# The core (Program, Method, loader, registries; no kernels, no delegates)
# in a size-optimised build with -fno-exceptions -fno-rtti: fails when the
# stripped binary passes the gate. A size check, not a timing.
SIZE_BUILD_DIR := build/size
CORE_SIZE_GATE := 40000
size-check: venv
	cmake -S . -B $(SIZE_BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=MinSizeRel \
	  -DEMBER_BUILD_SIZE_TEST=ON -DEMBER_BUILD_SIZE_REPORT=OFF -DEMBER_BUILD_TOOLS=OFF \
	  -DEMBER_ERROR_MESSAGES=OFF -DEMBER_THREADS=OFF \
	  -DCMAKE_CXX_FLAGS="-fno-asynchronous-unwind-tables" > /dev/null
	cmake --build $(SIZE_BUILD_DIR) --target ember_core_size -j $(JOBS)
	$(PY) runtime/test/size/check_size.py $(SIZE_BUILD_DIR)/ember_core_size --gate $(CORE_SIZE_GATE) \
	  --program tests/programs/m.pte --forbid libpthreadpool

# Sizes of the core and of Module runners with no kernels, MobileNetV2's
# kernels (selective) and every kernel, in the size-check build (a report,
# never part of `make test`: it compiles every kernel size-optimised).
size-report: install
	cmake -S . -B $(SIZE_BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=MinSizeRel \
	  -DEMBER_BUILD_SIZE_TEST=ON -DEMBER_BUILD_SIZE_REPORT=ON -DEMBER_BUILD_TOOLS=OFF \
	  -DEMBER_ERROR_MESSAGES=OFF -DEMBER_THREADS=OFF \
	  -DCMAKE_CXX_FLAGS="-fno-asynchronous-unwind-tables" > /dev/null
	cmake --build $(SIZE_BUILD_DIR) --target ember_core_size ember_size_runner_none \
	  ember_size_runner_mobilenet_v2 ember_size_runner_all -j $(JOBS)
	$(PY) runtime/test/size/size_report.py --build-dir $(SIZE_BUILD_DIR)

# The runtime, loader, writer and kernel tests again under ASan + UBSan (LSan on).
ASAN_BUILD_DIR := build/asan
test-sanitizers: venv
	cmake -S . -B $(ASAN_BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DEMBER_SANITIZE=address,undefined -DEMBER_BUILD_TESTS=ON -DEMBER_BUILD_TOOLS=OFF \
	  -DEMBER_BUILD_PYTHON=OFF > /dev/null
	cmake --build $(ASAN_BUILD_DIR) -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --test-dir $(ASAN_BUILD_DIR) --output-on-failure -j $(JOBS)

# Coverage-guided fuzzing of Program::load + load_method + execute (libFuzzer,
# ASan + UBSan), seeded with the checked-in programs. Findings land in
# build/fuzz/crash-*; copy each into tests/fuzz_regressions/ with its fix.
FUZZ_SECONDS ?= 300
FUZZ_DIR     := build/fuzz
fuzz:
	@EMBER_EXTRA_PACKAGES="clang-14 libclang-rt-14-dev" scripts/install-system-deps.sh
	cmake -S . -B $(FUZZ_DIR) -G Ninja -DCMAKE_CXX_COMPILER=clang++-14 \
	  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEMBER_FUZZ=ON -DEMBER_SANITIZE=address,undefined \
	  -DEMBER_BUILD_TESTS=OFF -DEMBER_BUILD_TOOLS=OFF -DEMBER_WERROR=OFF > /dev/null
	cmake --build $(FUZZ_DIR) -j $(JOBS) --target ember_program_fuzzer
	mkdir -p $(FUZZ_DIR)/corpus
	cp tests/programs/*.pte $(FUZZ_DIR)/corpus/
	$(FUZZ_DIR)/fuzz/ember_program_fuzzer $(FUZZ_DIR)/corpus -dict=fuzz/ember.dict \
	  -max_total_time=$(FUZZ_SECONDS) -max_len=65536 -print_final_stats=1 \
	  -artifact_prefix=$(FUZZ_DIR)/crash-

# The tests of the kernels that have ISA-specific builds (GEMM, convolution,
# float32 unary spans, softmax, layer norm, sums) and the models on the
# portable kernels run a second time on the baseline builds (EMBER_ISA caps the
# dispatch; docs/determinism.md), so every ISA path the host has is checked
# against eager and the models' bounds. XNNPACK picks its own microkernels.
ISA_BASELINE_TESTS := test_kernels_vs_eager.py test_kernels_conv_vs_eager.py test_conv_winograd_end_to_end.py \
  test_kernels_prepared_vs_eager.py test_quantized_fused.py test_quantized_dynamic_intx.py \
  test_kernels_elementwise_vs_eager.py test_kernels_reduce_vs_eager.py test_reduction_order.py \
  test_bf16_precision.py test_xnnpack_models.py -k "not xnnpack]"
# The tests of the kernels with an AMX build (the bf16 GEMM, the int8 linear
# layers), run again under EMBER_ISA=avx512
# on AMX hosts.
ISA_AMX_TESTS := test_bf16_precision.py test_quantized_fused.py
test-python:
	@$(PY) -c "import ember._C as c; print('kernels dispatch on', c.cpu_isa(), '(host:', c.host_isa() + ')')"
	cd python/tests && $(CURDIR)/$(PY) -m pytest -q -p no:cacheprovider -n $(JOBS) --dist loadfile .
	@echo "Again with EMBER_ISA=baseline:"
	cd python/tests && EMBER_ISA=baseline $(CURDIR)/$(PY) -m pytest -q -p no:cacheprovider -n $(JOBS) --dist loadfile \
	  $(ISA_BASELINE_TESTS)
	@host=$$($(PY) -c 'import ember._C as c; print(c.host_isa())'); \
	if [ "$$host" = avx512 ] || [ "$$host" = amx ]; then \
	  echo "Again with EMBER_ISA=avx2 (the host has AVX-512, so the AVX2 builds run only here):"; \
	  (cd python/tests && EMBER_ISA=avx2 $(CURDIR)/$(PY) -m pytest -q -p no:cacheprovider -n $(JOBS) \
	    --dist loadfile $(ISA_BASELINE_TESTS)) || exit 1; \
	fi; \
	if [ "$$host" = amx ]; then \
	  echo "Again with EMBER_ISA=avx512 (the host has AMX, so the AVX-512 paths it replaces run only here):"; \
	  (cd python/tests && EMBER_ISA=avx512 $(CURDIR)/$(PY) -m pytest -q -p no:cacheprovider -n $(JOBS) \
	    --dist loadfile $(ISA_AMX_TESTS)) || exit 1; \
	fi

# Benchmarks (never part of `make test`): the peers (ONNX Runtime, OpenVINO,
# ncnn via pnnx; bench/requirements-peers.txt, which pins torch so pip keeps it)
# into the venv, the Google Benchmark binaries in their own build dir, then the
# model/kernel comparison and the zoo models against every peer, which rewrite
# their blocks of BENCHMARKS.md. ZOO_ARGS goes to zoo_bench.py, e.g.
# ZOO_ARGS="--rounds 2 --target-s 0.5 --models resnet50 bert_base".
BENCH_BUILD_DIR := build/bench
bench: install
	$(PIP) install -q -r bench/requirements-peers.txt
	cmake -S . -B $(BENCH_BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release \
	  -DEMBER_BUILD_BENCH=ON -DEMBER_BUILD_TESTS=OFF -DEMBER_BUILD_PYTHON=OFF > /dev/null
	cmake --build $(BENCH_BUILD_DIR) -j $(JOBS)
	$(PY) bench/models/run.py --build-dir $(BENCH_BUILD_DIR)
	$(PY) bench/models/zoo_bench.py --build-dir $(BENCH_BUILD_DIR) $(ZOO_ARGS)

# The LLM benchmark's peer (bench/requirements-llm.txt): llama.cpp, built by pip from
# llama-cpp-python's sources for this host's CPU only, at most $(JOBS) compile jobs.
LLAMACPP_CMAKE_ARGS := -DGGML_NATIVE=ON -DGGML_CUDA=OFF -DGGML_VULKAN=OFF -DGGML_METAL=OFF \
  -DGGML_BLAS=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF
bench-llm-deps: venv
	CMAKE_ARGS="$(LLAMACPP_CMAKE_ARGS)" CMAKE_BUILD_PARALLEL_LEVEL=$(JOBS) \
	  $(PIP) install -r bench/requirements-llm.txt

# The core ATen conformance sweep (tens of minutes; never part of `make test`,
# which runs a fixed subset): every core op's OpInfo samples as one-op programs
# through the runtime, compared with eager; rewrites docs/op-coverage.md.
# OP_SAMPLES: samples per (op, dtype), spread over PyTorch's list.
OP_SAMPLES ?= 2
op-coverage: install
	$(PY) -m ember.testing.conformance --max-samples $(OP_SAMPLES) --quiet \
	  --out docs/op-coverage.md --json $(BUILD_DIR)/op-coverage.json

# The OpInfo sweep (one sample: about 6 min in float32 on 2 busy cores, 14 min in
# float32 bfloat16 int64, ~40 min in every dtype; never part of
# `make test`, which runs test_opinfo_sweep.py on a handful of entries): every
# entry of PyTorch's OpInfo database (op_db), its Python-level op (F.gelu,
# torch.linalg.vector_norm, Tensor methods, ...) on its own samples as one-op
# programs through the runtime, compared with eager; each case that does not
# pass is classified by cause (missing op or kernel, kernel refusal, mismatch,
# export failure, deliberate limit). Rewrites docs/op-coverage-opinfo.md and
# docs/op-coverage-opinfo.json (one result per line).
# OPINFO_SAMPLES: the first runnable samples per (entry, dtype);
# OPINFO_DTYPES: the dtypes swept (empty: every dtype Ember has). A long sweep
# can be split: sweep some dtypes per run into separate --json files, then
# `python -m ember.testing.conformance --opinfo --merge a.json b.json --json ... --out ...`.
# op-coverage-all runs both sweeps.
OPINFO_SAMPLES ?= 1
OPINFO_DTYPES  ?= float32
op-coverage-opinfo: install
	$(PY) -m ember.testing.conformance --opinfo --max-samples $(OPINFO_SAMPLES) \
	  $(if $(OPINFO_DTYPES),--dtypes $(OPINFO_DTYPES)) \
	  --out docs/op-coverage-opinfo.md --json docs/op-coverage-opinfo.json

op-coverage-all: op-coverage op-coverage-opinfo

clean:
	rm -rf build model.pte model_xnnpack.pte

# The C++ package and the wheel (docs/cpp-packages.md). test-package: an installed
# runtime-only build and examples/cpp_app against it, and as add_subdirectory
# (python/tests/test_cpp_package.py, also part of test-python). test-wheel: the
# wheel, built in its own build dir (ccache serves $(BUILD_DIR)'s objects), in a
# fresh venv, run from outside the tree (python/tests/test_wheel.py).
WHEEL_BUILD_DIR := build/wheel
# test_cpp_package.py builds with $(BUILD_DIR)'s compiler, so ccache serves its objects.
export EMBER_BUILD_DIR := $(BUILD_DIR)
.PHONY: test-package test-wheel
test-package: venv
	cd python/tests && $(abspath $(PY)) -m pytest -q -p no:cacheprovider test_cpp_package.py
test-wheel: venv
	rm -rf $(WHEEL_BUILD_DIR)-dist
	$(PIP) wheel -q --no-build-isolation --no-deps -Cbuild-dir=$(WHEEL_BUILD_DIR) . -w $(WHEEL_BUILD_DIR)-dist
	@ls -l $(WHEEL_BUILD_DIR)-dist/ember-*.whl
	cd python/tests && EMBER_TEST_WHEEL="$$(ls $(CURDIR)/$(WHEEL_BUILD_DIR)-dist/ember-*.whl)" \
	  $(abspath $(PY)) -m pytest -q -p no:cacheprovider test_wheel.py
test: test-wheel
