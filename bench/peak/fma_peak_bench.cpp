// The measured float32 FMA peak of one core, per ISA the host has: the
// ceiling GEMM and convolution GFLOP/s are reported against (BENCHMARKS.md,
// "% of peak"). Each loop runs independent chains of vector FMAs from
// registers, enough chains to cover the FMA latency on both FMA ports, so
// nothing but the FMA units limits it.
//
//   fma_peak_bench [--benchmark_format=json]
// Counter "GFLOP/s" = 2 flops × lanes × FMAs per second.
#include <benchmark/benchmark.h>

#include <cstdint>

#include "kernels/portable/util/cpu_isa.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define EMBER_PEAK_X86 1
#else
#define EMBER_PEAK_X86 0
#endif

namespace {

using ember::kernels::portable::host_isa;
using ember::kernels::portable::Isa;

constexpr int64_t kIters = 1 << 20;

#if EMBER_PEAK_X86

// 12 chains of ymm FMAs (AVX2+FMA): 12 × 8 lanes per iteration.
__attribute__((target("avx2,fma"), noinline)) float fma_loop_avx2(int64_t iters, float seed) {
  __m256 a = _mm256_set1_ps(seed), b = _mm256_set1_ps(0.999f);
  __m256 c0 = a, c1 = a, c2 = a, c3 = a, c4 = a, c5 = a, c6 = a, c7 = a, c8 = a, c9 = a,
         c10 = a, c11 = a;
  for (int64_t i = 0; i < iters; ++i) {
    c0 = _mm256_fmadd_ps(c0, b, a);
    c1 = _mm256_fmadd_ps(c1, b, a);
    c2 = _mm256_fmadd_ps(c2, b, a);
    c3 = _mm256_fmadd_ps(c3, b, a);
    c4 = _mm256_fmadd_ps(c4, b, a);
    c5 = _mm256_fmadd_ps(c5, b, a);
    c6 = _mm256_fmadd_ps(c6, b, a);
    c7 = _mm256_fmadd_ps(c7, b, a);
    c8 = _mm256_fmadd_ps(c8, b, a);
    c9 = _mm256_fmadd_ps(c9, b, a);
    c10 = _mm256_fmadd_ps(c10, b, a);
    c11 = _mm256_fmadd_ps(c11, b, a);
    __asm__ volatile("" : "+x"(c0), "+x"(c1), "+x"(c2), "+x"(c3), "+x"(c4), "+x"(c5));
  }
  __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(c0, c1), _mm256_add_ps(c2, c3)),
                           _mm256_add_ps(_mm256_add_ps(c4, c5), _mm256_add_ps(c6, c7)));
  s = _mm256_add_ps(s, _mm256_add_ps(_mm256_add_ps(c8, c9), _mm256_add_ps(c10, c11)));
  return _mm256_cvtss_f32(s);
}

// 16 chains of zmm FMAs (AVX-512F): 16 × 16 lanes per iteration.
__attribute__((target("avx512f"), noinline)) float fma_loop_avx512(int64_t iters, float seed) {
  __m512 a = _mm512_set1_ps(seed), b = _mm512_set1_ps(0.999f);
  __m512 c[16];
  for (auto& v : c) v = a;
  for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 16
    for (int j = 0; j < 16; ++j) c[j] = _mm512_fmadd_ps(c[j], b, a);
  }
  __m512 s = c[0];
  for (int j = 1; j < 16; ++j) s = _mm512_add_ps(s, c[j]);
  return _mm512_reduce_add_ps(s);
}

void BM_fma_peak_avx2(benchmark::State& state) {
  if (host_isa() < Isa::kAvx2) {
    state.SkipWithError("the host has no AVX2+FMA");
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(fma_loop_avx2(kIters, 1.0f));
  state.counters["GFLOP/s"] = benchmark::Counter(
      double(state.iterations()) * double(kIters) * 12 * 8 * 2 / 1e9, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_fma_peak_avx2)->Name("fma_peak/avx2")->Unit(benchmark::kMillisecond);

void BM_fma_peak_avx512(benchmark::State& state) {
  if (host_isa() < Isa::kAvx512) {
    state.SkipWithError("the host has no AVX-512");
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(fma_loop_avx512(kIters, 1.0f));
  state.counters["GFLOP/s"] = benchmark::Counter(
      double(state.iterations()) * double(kIters) * 16 * 16 * 2 / 1e9, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_fma_peak_avx512)->Name("fma_peak/avx512")->Unit(benchmark::kMillisecond);

#endif

}  // namespace

BENCHMARK_MAIN();
