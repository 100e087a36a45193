// The measured float32 FMA peak of one core, per ISA the host has: the
// ceiling GEMM and convolution GFLOP/s are reported against (BENCHMARKS.md,
// "% of peak"). Each loop runs independent chains of vector FMAs from
// registers, enough chains to cover the FMA latency on both FMA ports, so
// nothing but the FMA units limits it. The int8 peaks are the same for the
// instructions Ember's int8 GEMMs are built on (kernels/quantized/util/qgemm.h):
// VPDPBUSD on VNNI hosts, VPMADDWD plus VPADDD on AVX2 ones, and on AMX hosts
// the tile products (TDPBUSD for int8, TDPBF16PS for bf16): four independent
// 16×16 accumulator tiles from two A and two B tiles kept in the tile
// registers, as the 32×32 block every AMX kernel computes (amx_block.h).
//
//   fma_peak_bench [--benchmark_format=json]
// Counter "GFLOP/s" = 2 flops × lanes × FMAs per second; "GMAC/s" = int8 (or
// int16 pair) multiply-adds per second.
#include <benchmark/benchmark.h>

#include <cstdint>

#include "kernels/portable/util/amx.h"
#include "kernels/portable/util/cpu_isa.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "kernels/portable/util/amx_block.h"
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
    // Every chain in a register the compiler cannot see through, or it merges the
    // chains that compute the same values.
    __asm__ volatile("" : "+x"(c0), "+x"(c1), "+x"(c2), "+x"(c3), "+x"(c4), "+x"(c5), "+x"(c6),
                     "+x"(c7), "+x"(c8), "+x"(c9), "+x"(c10), "+x"(c11));
  }
  __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(c0, c1), _mm256_add_ps(c2, c3)),
                           _mm256_add_ps(_mm256_add_ps(c4, c5), _mm256_add_ps(c6, c7)));
  s = _mm256_add_ps(s, _mm256_add_ps(_mm256_add_ps(c8, c9), _mm256_add_ps(c10, c11)));
  return _mm256_cvtss_f32(s);
}

// 16 chains of zmm FMAs (AVX-512F): 16 × 16 lanes per iteration. Named
// variables, not an array: GCC kept an array on the stack, a load and a store
// around every FMA.
__attribute__((target("avx512f"), noinline)) float fma_loop_avx512(int64_t iters, float seed) {
  __m512 a = _mm512_set1_ps(seed), b = _mm512_set1_ps(0.999f);
  __m512 c0 = a, c1 = a, c2 = a, c3 = a, c4 = a, c5 = a, c6 = a, c7 = a, c8 = a, c9 = a,
         c10 = a, c11 = a, c12 = a, c13 = a, c14 = a, c15 = a;
  for (int64_t i = 0; i < iters; ++i) {
    c0 = _mm512_fmadd_ps(c0, b, a);
    c1 = _mm512_fmadd_ps(c1, b, a);
    c2 = _mm512_fmadd_ps(c2, b, a);
    c3 = _mm512_fmadd_ps(c3, b, a);
    c4 = _mm512_fmadd_ps(c4, b, a);
    c5 = _mm512_fmadd_ps(c5, b, a);
    c6 = _mm512_fmadd_ps(c6, b, a);
    c7 = _mm512_fmadd_ps(c7, b, a);
    c8 = _mm512_fmadd_ps(c8, b, a);
    c9 = _mm512_fmadd_ps(c9, b, a);
    c10 = _mm512_fmadd_ps(c10, b, a);
    c11 = _mm512_fmadd_ps(c11, b, a);
    c12 = _mm512_fmadd_ps(c12, b, a);
    c13 = _mm512_fmadd_ps(c13, b, a);
    c14 = _mm512_fmadd_ps(c14, b, a);
    c15 = _mm512_fmadd_ps(c15, b, a);
    // Every chain in a register the compiler cannot see through, or it merges the
    // chains that compute the same values (at most 30 asm operands: two statements).
    __asm__ volatile("" : "+v"(c0), "+v"(c1), "+v"(c2), "+v"(c3), "+v"(c4), "+v"(c5), "+v"(c6),
                     "+v"(c7));
    __asm__ volatile("" : "+v"(c8), "+v"(c9), "+v"(c10), "+v"(c11), "+v"(c12), "+v"(c13),
                     "+v"(c14), "+v"(c15));
  }
  __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(c0, c1), _mm512_add_ps(c2, c3)),
                           _mm512_add_ps(_mm512_add_ps(c4, c5), _mm512_add_ps(c6, c7)));
  s = _mm512_add_ps(s, _mm512_add_ps(_mm512_add_ps(c8, c9), _mm512_add_ps(c10, c11)));
  s = _mm512_add_ps(s, _mm512_add_ps(_mm512_add_ps(c12, c13), _mm512_add_ps(c14, c15)));
  // Not _mm512_reduce_add_ps: GCC 12 warns (-Werror=uninitialized) inside its header.
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, s);
  float sum = 0.0f;
  for (float v : lanes) sum += v;
  return sum;
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

// 12 chains of zmm VPDPBUSD (AVX-512 VNNI): 64 u8 × s8 multiply-adds each.
__attribute__((target("avx512f,avx512bw,avx512vnni"), noinline)) int32_t vnni_loop_avx512(
    int64_t iters, int32_t seed) {
  const __m512i a = _mm512_set1_epi32(seed), b = _mm512_set1_epi32(0x01020304);
  __m512i c0 = a, c1 = a, c2 = a, c3 = a, c4 = a, c5 = a, c6 = a, c7 = a, c8 = a, c9 = a,
          c10 = a, c11 = a;
  for (int64_t i = 0; i < iters; ++i) {
    c0 = _mm512_dpbusd_epi32(c0, a, b);
    c1 = _mm512_dpbusd_epi32(c1, a, b);
    c2 = _mm512_dpbusd_epi32(c2, a, b);
    c3 = _mm512_dpbusd_epi32(c3, a, b);
    c4 = _mm512_dpbusd_epi32(c4, a, b);
    c5 = _mm512_dpbusd_epi32(c5, a, b);
    c6 = _mm512_dpbusd_epi32(c6, a, b);
    c7 = _mm512_dpbusd_epi32(c7, a, b);
    c8 = _mm512_dpbusd_epi32(c8, a, b);
    c9 = _mm512_dpbusd_epi32(c9, a, b);
    c10 = _mm512_dpbusd_epi32(c10, a, b);
    c11 = _mm512_dpbusd_epi32(c11, a, b);
    __asm__ volatile("" : "+v"(c0), "+v"(c1), "+v"(c2), "+v"(c3), "+v"(c4), "+v"(c5));
    __asm__ volatile("" : "+v"(c6), "+v"(c7), "+v"(c8), "+v"(c9), "+v"(c10), "+v"(c11));
  }
  __m512i s = _mm512_add_epi32(_mm512_add_epi32(_mm512_add_epi32(c0, c1), _mm512_add_epi32(c2, c3)),
                               _mm512_add_epi32(_mm512_add_epi32(c4, c5), _mm512_add_epi32(c6, c7)));
  s = _mm512_add_epi32(s, _mm512_add_epi32(_mm512_add_epi32(c8, c9), _mm512_add_epi32(c10, c11)));
  alignas(64) int32_t lanes[16];
  _mm512_store_si512(lanes, s);
  int32_t sum = 0;
  for (int32_t v : lanes) sum += v;
  return sum;
}

// 12 chains of ymm VPMADDWD then VPADDD (the AVX2 int8 GEMM's inner step:
// int16 pairs): 16 multiply-adds per pair of instructions.
__attribute__((target("avx2"), noinline)) int32_t maddwd_loop_avx2(int64_t iters, int32_t seed) {
  const __m256i a = _mm256_set1_epi32(seed), b = _mm256_set1_epi32(0x00030002);
  __m256i c0 = a, c1 = a, c2 = a, c3 = a, c4 = a, c5 = a, c6 = a, c7 = a, c8 = a, c9 = a,
          c10 = a, c11 = a;
  for (int64_t i = 0; i < iters; ++i) {
    c0 = _mm256_add_epi32(_mm256_madd_epi16(c0, b), a);
    c1 = _mm256_add_epi32(_mm256_madd_epi16(c1, b), a);
    c2 = _mm256_add_epi32(_mm256_madd_epi16(c2, b), a);
    c3 = _mm256_add_epi32(_mm256_madd_epi16(c3, b), a);
    c4 = _mm256_add_epi32(_mm256_madd_epi16(c4, b), a);
    c5 = _mm256_add_epi32(_mm256_madd_epi16(c5, b), a);
    c6 = _mm256_add_epi32(_mm256_madd_epi16(c6, b), a);
    c7 = _mm256_add_epi32(_mm256_madd_epi16(c7, b), a);
    c8 = _mm256_add_epi32(_mm256_madd_epi16(c8, b), a);
    c9 = _mm256_add_epi32(_mm256_madd_epi16(c9, b), a);
    c10 = _mm256_add_epi32(_mm256_madd_epi16(c10, b), a);
    c11 = _mm256_add_epi32(_mm256_madd_epi16(c11, b), a);
    __asm__ volatile("" : "+x"(c0), "+x"(c1), "+x"(c2), "+x"(c3), "+x"(c4), "+x"(c5), "+x"(c6),
                     "+x"(c7), "+x"(c8), "+x"(c9), "+x"(c10), "+x"(c11));
  }
  __m256i s = _mm256_add_epi32(_mm256_add_epi32(_mm256_add_epi32(c0, c1), _mm256_add_epi32(c2, c3)),
                               _mm256_add_epi32(_mm256_add_epi32(c4, c5), _mm256_add_epi32(c6, c7)));
  s = _mm256_add_epi32(s, _mm256_add_epi32(_mm256_add_epi32(c8, c9), _mm256_add_epi32(c10, c11)));
  alignas(32) int32_t lanes[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), s);
  int32_t sum = 0;
  for (int32_t v : lanes) sum += v;
  return sum;
}

bool host_has_avx512_vnni() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw");
}

void BM_int8_peak_avx2(benchmark::State& state) {
  if (host_isa() < Isa::kAvx2) {
    state.SkipWithError("the host has no AVX2");
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(maddwd_loop_avx2(kIters, 1));
  state.counters["GMAC/s"] = benchmark::Counter(
      double(state.iterations()) * double(kIters) * 12 * 16 / 1e9, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_int8_peak_avx2)->Name("int8_peak/avx2")->Unit(benchmark::kMillisecond);

void BM_int8_peak_avx512vnni(benchmark::State& state) {
  if (host_isa() < Isa::kAvx512 || !host_has_avx512_vnni()) {
    state.SkipWithError("the host has no AVX-512 VNNI");
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(vnni_loop_avx512(kIters, 1));
  state.counters["GMAC/s"] = benchmark::Counter(
      double(state.iterations()) * double(kIters) * 12 * 64 / 1e9, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_int8_peak_avx512vnni)->Name("int8_peak/avx512vnni")->Unit(benchmark::kMillisecond);

// Four tile products per iteration on the 32×32 block's tiles: 0–3 the
// accumulators, 4–5 A, 6–7 B (zeros: the rate does not depend on the values).
template <bool kBf16>
EMBER_TARGET_AMX __attribute__((noinline)) int32_t tile_loop_amx(int64_t iters) {
  alignas(64) static uint8_t operand[16 * 64] = {};
  alignas(64) static int32_t result[16 * 16];
  _tile_loadd(4, operand, 64);
  _tile_loadd(5, operand, 64);
  _tile_loadd(6, operand, 64);
  _tile_loadd(7, operand, 64);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  for (int64_t i = 0; i < iters; ++i) {
    if constexpr (kBf16) {
      _tile_dpbf16ps(0, 4, 6);
      _tile_dpbf16ps(1, 4, 7);
      _tile_dpbf16ps(2, 5, 6);
      _tile_dpbf16ps(3, 5, 7);
    } else {
      _tile_dpbusd(0, 4, 6);
      _tile_dpbusd(1, 4, 7);
      _tile_dpbusd(2, 5, 6);
      _tile_dpbusd(3, 5, 7);
    }
  }
  _tile_stored(0, result, 64);
  _tile_stored(1, result, 64);
  _tile_stored(2, result, 64);
  _tile_stored(3, result, 64);
  return result[0];
}

// Multiply-adds per tile product: 16 × 16 outputs of 64 int8 or 32 bf16 pairs.
template <bool kBf16>
void BM_tile_peak_amx(benchmark::State& state) {
  if (host_isa() < Isa::kAmx) {
    state.SkipWithError("the host has no AMX tiles (or Linux did not grant them)");
    return;
  }
  constexpr int64_t kTileIters = kIters / 16;  // A tile product is 16 × 64 ZMM VNNI steps.
  const ember::kernels::portable::AmxTiles tiles(true);
  for (auto _ : state) benchmark::DoNotOptimize(tile_loop_amx<kBf16>(kTileIters));
  const double macs = double(state.iterations()) * double(kTileIters) * 4 * 16 * 16 *
                      (kBf16 ? 32 : 64);
  if (kBf16) {
    state.counters["GFLOP/s"] = benchmark::Counter(2 * macs / 1e9, benchmark::Counter::kIsRate);
  } else {
    state.counters["GMAC/s"] = benchmark::Counter(macs / 1e9, benchmark::Counter::kIsRate);
  }
}
BENCHMARK(BM_tile_peak_amx<false>)->Name("int8_peak/amx")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_tile_peak_amx<true>)->Name("bf16_peak/amx")->Unit(benchmark::kMillisecond);

#endif

}  // namespace

BENCHMARK_MAIN();
