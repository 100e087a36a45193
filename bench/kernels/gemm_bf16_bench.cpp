// The bf16 GEMM (kernels/portable/util/gemm_bf16.h) per microkernel kind, in
// GFLOP/s: linear layers' bf16_gemm (the weight as B) and convolutions'
// bf16_gemm_weight_a (the weight as A, columns from a float32 matrix), on
// shapes from the zoo's models. Weights stay hot in cache (best case); every
// kind the host has runs, whatever EMBER_ISA says.
//
//   build/bench/bench/gemm_bf16_bench [--benchmark_filter=amx] [--threads=2]
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/portable/util/gemm.h"
#include "kernels/portable/util/gemm_bf16.h"
#include "kernels/portable/util/half.h"
#include "runtime/kernel/thread_pool.h"

namespace {

using namespace ember;
using namespace ember::kernels::portable;

int g_threads = 1;

struct Operands {
  std::vector<float> a;          // m × k (bf16_gemm) or k × n (weight_a's B).
  std::vector<uint16_t> w;       // n × k (or m × k) bf16 bits.
  std::vector<uint32_t> packed;
  std::vector<float> c;
};

Operands make(int64_t rows, int64_t cols, int64_t k, int64_t weight_rows) {
  std::mt19937 gen(1);
  std::uniform_real_distribution<float> dist(-1, 1);
  Operands o;
  o.a.resize(static_cast<size_t>(rows * k > cols * k ? rows * k : cols * k));
  for (auto& x : o.a) x = dist(gen);
  o.w.resize(static_cast<size_t>(weight_rows * k));
  for (auto& x : o.w) x = BFloat16(dist(gen)).bits;
  o.c.resize(static_cast<size_t>(rows * cols));
  return o;
}

// `cold`: the weight is one of as many copies as fill 256 MiB, a different
// one each call, so it comes from memory as a model's weights do.
void linear(benchmark::State& state, Bf16GemmKind kind, int64_t m, int64_t n, int64_t k,
            bool cold) {
  Operands o = make(m, n, k, n);
  const int64_t words = bf16_packed_weight_words(n, k, kind);
  const int64_t copies = cold ? (int64_t{256} << 20) / (words * 4) + 1 : 1;
  o.packed.resize(static_cast<size_t>(words * copies));
  std::vector<Bf16PackedWeight> ws;
  for (int64_t c = 0; c < copies; ++c) {
    ws.push_back(bf16_pack_weight(o.w.data(), n, k, k, 1, kind, o.packed.data() + c * words));
  }
  ThreadPool* pool = g_threads > 1 ? thread_pool_create(static_cast<size_t>(g_threads)) : nullptr;
  KernelContext ctx("bf16_gemm");
  ctx.set_thread_pool(pool);
  size_t next = 0;
  for (auto _ : state) {
    bf16_gemm(ctx, m, o.a.data(), k, 1, ws[next], o.c.data(), n, nullptr);
    next = next + 1 == ws.size() ? 0 : next + 1;
    benchmark::ClobberMemory();
  }
  if (pool != nullptr) thread_pool_destroy(pool);
  state.counters["GFLOPS"] = benchmark::Counter(2.0 * double(m) * double(n) * double(k) * 1e-9,
                                                benchmark::Counter::kIsIterationInvariantRate);
}

// The weight (m × k: output channels × reduction) as A, B a k × n matrix
// (a 1×1 convolution's input planes: n output positions).
void weight_a(benchmark::State& state, Bf16GemmKind kind, int64_t m, int64_t n, int64_t k) {
  Operands o = make(m, n, k, m);
  o.packed.resize(static_cast<size_t>(bf16_packed_rows_words(m, k, kind)));
  const Bf16PackedWeight a = bf16_pack_weight_rows(o.w.data(), m, k, k, 1, kind, o.packed.data());
  ThreadPool* pool = g_threads > 1 ? thread_pool_create(static_cast<size_t>(g_threads)) : nullptr;
  KernelContext ctx("bf16_gemm_weight_a");
  ctx.set_thread_pool(pool);
  for (auto _ : state) {
    bf16_gemm_weight_a(ctx, a, n, StridedMatrix<float>{o.a.data(), n, 1}, o.c.data(), n, nullptr);
    benchmark::ClobberMemory();
  }
  if (pool != nullptr) thread_pool_destroy(pool);
  state.counters["GFLOPS"] = benchmark::Counter(2.0 * double(m) * double(n) * double(k) * 1e-9,
                                                benchmark::Counter::kIsIterationInvariantRate);
}

void register_all() {
  struct Shape {
    const char* what;
    int64_t m, n, k;
  };
  const Shape linear_shapes[] = {
      {"bert_qkv", 128, 768, 768},  {"bert_ffn_up", 128, 3072, 768},
      {"bert_ffn_down", 128, 768, 3072}, {"square_512", 512, 512, 512},
      {"vit_qkv", 197, 2304, 768}, {"decode_row", 1, 3072, 768},
  };
  // Convolutions as weight-as-A GEMMs: ResNet-50's 1×1 layers on 56×56 and
  // 28×28 planes, a 3×3 layer's im2col depth on 28×28.
  const Shape conv_shapes[] = {
      {"r50_56_1x1_64to256", 256, 3136, 64}, {"r50_56_1x1_256to64", 64, 3136, 256},
      {"r50_28_1x1_512to128", 128, 784, 512}, {"r50_28_3x3_128", 128, 784, 1152},
  };
  for (Bf16GemmKind kind : {Bf16GemmKind::kBaseline, Bf16GemmKind::kAvx2,
                            Bf16GemmKind::kAvx512Bf16, Bf16GemmKind::kAmx}) {
    if (!bf16_gemm_kind_available(kind) || kind == Bf16GemmKind::kBaseline) continue;
    const std::string name = bf16_gemm_kind_name(kind);
    for (const Shape& s : linear_shapes) {
      for (bool cold : {false, true}) {
        const std::string what = std::string(s.what) + (cold ? "/cold" : "");
        benchmark::RegisterBenchmark(("linear/" + name + "/" + what).c_str(), linear, kind, s.m,
                                     s.n, s.k, cold)
            ->Unit(benchmark::kMicrosecond);
      }
    }
    for (const Shape& s : conv_shapes) {
      benchmark::RegisterBenchmark(("weight_a/" + name + "/" + s.what).c_str(), weight_a, kind,
                                   s.m, s.n, s.k)
          ->Unit(benchmark::kMicrosecond);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  // --threads=N (ours) before Google Benchmark's own flags.
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--threads=", 10) == 0) {
      g_threads = std::atoi(argv[i] + 10);
    } else {
      rest.push_back(argv[i]);
    }
  }
  int n = static_cast<int>(rest.size());
  benchmark::Initialize(&n, rest.data());
  register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
