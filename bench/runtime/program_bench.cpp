// Program::load, Program::load_method (Verification::Full vs Minimal) and
// Method::execute for .pte files named on the command line or in
// EMBER_BENCH_PTE (colon-separated). bench/models/run.py generates the files.
//
//   program_bench a.pte b.pte [--benchmark_format=json]
//   EMBER_BENCH_PTE=a.pte:b.pte program_bench
//
// The file is read into 64-byte-aligned memory once, so load times cover
// parsing, verification and method construction, not disk I/O.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "extension/tensor/owned_tensor.h"
#include "runtime/core/data_loader.h"
#include "runtime/executor/program.h"

using namespace ember;

namespace {

struct FreeDeleter {
  void operator()(uint8_t* p) const { std::free(p); }
};
using Bytes = std::unique_ptr<uint8_t, FreeDeleter>;

Bytes aligned(size_t size) {
  const size_t rounded = ((size == 0 ? 1 : size) + 63) & ~size_t{63};
  return Bytes(static_cast<uint8_t*>(std::aligned_alloc(64, rounded)));
}

std::string stem(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  const size_t dot = base.rfind('.');
  return dot == std::string::npos ? base : base.substr(0, dot);
}

// One .pte held in memory, plus the memory a method needs.
struct PteFile {
  std::string path;
  Bytes data;
  size_t size = 0;
  std::string method;
  std::vector<Bytes> planned;
  std::vector<std::span<uint8_t>> planned_spans;
  Bytes pool;
  size_t pool_size = 0;

  bool read() {
    std::ifstream f(path, std::ios::binary);
    if (!f) return false;
    std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    size = bytes.size();
    data = aligned(size);
    std::memcpy(data.get(), bytes.data(), size);
    return true;
  }

  // Sizes the planned buffers and the method allocator from a first load.
  bool prepare() {
    BufferDataLoader loader(data.get(), size);
    Result<Program> program = Program::load(&loader);
    if (!program.ok()) return false;
    Result<const char*> name = program->get_method_name(0);
    if (!name.ok()) return false;
    method = name.get();
    for (size_t i = 0; i < program->num_methods(); ++i) {
      if (std::strcmp(program->get_method_name(i).get(), "forward") == 0) method = "forward";
    }
    Result<MethodMeta> meta = program->method_meta(method.c_str());
    if (!meta.ok()) return false;
    for (size_t i = 0; i < meta->num_planned_buffers(); ++i) {
      const auto bytes = static_cast<size_t>(meta->planned_buffer_size(i).get());
      planned.push_back(aligned(bytes));
      planned_spans.emplace_back(planned.back().get(), bytes);
    }
    pool_size = 4096 + meta->num_values() * 256 + meta->num_instructions() * 128;
    for (int attempt = 0; attempt < 8; ++attempt, pool_size *= 2) {
      pool = aligned(pool_size);
      MemoryAllocator allocator(pool.get(), pool_size);
      MemoryManager mm(&allocator, std::span<std::span<uint8_t>>(planned_spans));
      Result<Method> m = program->load_method(method.c_str(), &mm);
      if (m.ok()) return true;
      if (m.error() != Error::MemoryAllocationFailed) return false;
    }
    return false;
  }
};

void bm_program_load(benchmark::State& state, PteFile* f, Program::Verification v) {
  for (auto _ : state) {
    BufferDataLoader loader(f->data.get(), f->size);
    Result<Program> program = Program::load(&loader, v);
    if (!program.ok()) {
      state.SkipWithError(last_error_message());
      return;
    }
    benchmark::DoNotOptimize(program->num_methods());
  }
}

// Program::load followed by load_method: what an app pays before its first execute().
void bm_load_method(benchmark::State& state, PteFile* f, Program::Verification v) {
  MemoryAllocator allocator(f->pool.get(), f->pool_size);
  MemoryManager mm(&allocator, std::span<std::span<uint8_t>>(f->planned_spans));
  for (auto _ : state) {
    allocator.reset();
    BufferDataLoader loader(f->data.get(), f->size);
    Result<Program> program = Program::load(&loader, v);
    if (!program.ok()) {
      state.SkipWithError(last_error_message());
      return;
    }
    Result<Method> method = program->load_method(f->method.c_str(), &mm);
    if (!method.ok()) {
      state.SkipWithError(last_error_message());
      return;
    }
    benchmark::DoNotOptimize(method->num_steps());
  }
}


void bm_execute(benchmark::State& state, PteFile* f) {
  BufferDataLoader loader(f->data.get(), f->size);
  Result<Program> program = Program::load(&loader);
  if (!program.ok()) {
    state.SkipWithError(last_error_message());
    return;
  }
  MemoryAllocator allocator(f->pool.get(), f->pool_size);
  MemoryManager mm(&allocator, std::span<std::span<uint8_t>>(f->planned_spans));
  Result<Method> method = program->load_method(f->method.c_str(), &mm);
  if (!method.ok()) {
    state.SkipWithError(last_error_message());
    return;
  }
  const MethodMeta meta = method->method_meta();
  std::vector<extension::OwnedTensor> inputs;
  std::mt19937 rng(0);
  std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
  for (size_t i = 0; i < meta.num_inputs(); ++i) {
    Result<TensorInfo> info = meta.input_tensor_info(i);
    if (!info.ok()) {
      state.SkipWithError("only tensor inputs are supported");
      return;
    }
    auto& in = inputs.emplace_back(info->dtype, info->sizes, info->dim_order);
    if (info->dtype == ScalarType::Float) {
      auto* p = reinterpret_cast<float*>(in.bytes().data());
      for (size_t j = 0; j < info->nbytes / sizeof(float); ++j) p[j] = uni(rng);
    }
    if (method->set_input(i, in.tensor()) != Error::Ok) {
      state.SkipWithError(last_error_message());
      return;
    }
  }
  for (auto _ : state) {
    if (method->execute() != Error::Ok) {
      state.SkipWithError(last_error_message());
      return;
    }
    benchmark::ClobberMemory();
  }
  state.counters["steps"] = static_cast<double>(method->num_steps());
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  std::vector<std::string> paths;
  for (int i = 1; i < argc; ++i) {
    if (argv[i][0] == '-') {
      std::fprintf(stderr, "program_bench: unknown argument '%s'\n", argv[i]);
      return 2;
    }
    paths.emplace_back(argv[i]);
  }
  if (const char* env = std::getenv("EMBER_BENCH_PTE"); env != nullptr && paths.empty()) {
    std::string s = env;
    for (size_t start = 0; start <= s.size();) {
      const size_t end = s.find(':', start);
      const size_t count = end == std::string::npos ? std::string::npos : end - start;
      const std::string p = s.substr(start, count);
      if (!p.empty()) paths.push_back(p);
      if (end == std::string::npos) break;
      start = end + 1;
    }
  }
  if (paths.empty()) {
    std::fprintf(stderr, "usage: program_bench FILE.pte ... (or EMBER_BENCH_PTE=a.pte:b.pte)\n");
    return 2;
  }
  std::vector<std::unique_ptr<PteFile>> files;
  for (const std::string& p : paths) {
    auto& f = *files.emplace_back(std::make_unique<PteFile>());
    f.path = p;
    if (!f.read()) {
      std::fprintf(stderr, "program_bench: cannot read %s\n", p.c_str());
      return 1;
    }
    if (!f.prepare()) {
      std::fprintf(stderr, "program_bench: cannot load %s: %s\n", p.c_str(), last_error_message());
      return 1;
    }
    const std::string name = stem(p);
    PteFile* fp = &f;
    for (auto [v, vname] : {std::pair{Program::Verification::Full, "full"},
                            std::pair{Program::Verification::Minimal, "minimal"}}) {
      benchmark::RegisterBenchmark(("program_load/" + name + "/" + vname).c_str(),
                                   [fp, v](benchmark::State& s) { bm_program_load(s, fp, v); });
      benchmark::RegisterBenchmark(("load_method/" + name + "/" + vname).c_str(),
                                   [fp, v](benchmark::State& s) { bm_load_method(s, fp, v); });
    }
    benchmark::RegisterBenchmark(("execute/" + name).c_str(),
                                 [fp](benchmark::State& s) { bm_execute(s, fp); });
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
