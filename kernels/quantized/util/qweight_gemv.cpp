#include "kernels/quantized/util/qweight_gemv.h"

#include "kernels/portable/util/cpu_isa.h"
#include "kernels/portable/util/isa_target.h"

#if EMBER_ISA_X86
#include <immintrin.h>
// GCC 12's AVX-512 widening intrinsics start from _mm512_undefined_*(), which
// -Wmaybe-uninitialized reports as a false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace ember::kernels::quantized {
namespace {

constexpr int kLanes = 16;

// 16 lanes as one GCC vector: a zmm in the AVX-512 build, two ymm in the
// AVX2 one, four xmm in the baseline (the auto-vectoriser picked xmm for
// arrays of 16 even with 512-bit vectors allowed).
// The helpers returning them are always inlined, so the vector ABI GCC warns
// about never applies.
#pragma GCC diagnostic ignored "-Wpsabi"
typedef float F16 __attribute__((vector_size(64)));
typedef int8_t I16 __attribute__((vector_size(16)));

inline __attribute__((always_inline)) F16 load_f16(const float* p) {
  F16 v;
  __builtin_memcpy(&v, p, sizeof(v));
  return v;
}

// int8 → float: GCC 12 scalarises __builtin_convertvector of int8 vectors,
// so the x86 builds widen with intrinsics (kIsa: 0 baseline, 1 AVX2,
// 2 AVX-512). The helpers carry their ISA; GCC inlines them once gemv_body
// sits inside the function of the same ISA.
#if EMBER_ISA_X86
EMBER_TARGET_AVX512 inline F16 load_i8_avx512(const int8_t* p) {
  const __m512 v = _mm512_cvtepi32_ps(
      _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  F16 out;
  __builtin_memcpy(&out, &v, sizeof(out));
  return out;
}

EMBER_TARGET_AVX2_FMA inline F16 load_i8_avx2(const int8_t* p) {
  const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  const __m256 lo = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b));
  const __m256 hi = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(b, 8)));
  F16 out;
  __builtin_memcpy(&out, &lo, sizeof(lo));
  __builtin_memcpy(reinterpret_cast<char*>(&out) + sizeof(lo), &hi, sizeof(hi));
  return out;
}
#endif

template <int kIsa>
inline __attribute__((always_inline)) F16 load_i8_as_f16(const int8_t* p) {
#if EMBER_ISA_X86
  if constexpr (kIsa == 2) return load_i8_avx512(p);
  if constexpr (kIsa == 1) return load_i8_avx2(p);
#endif
  F16 out;
  for (int l = 0; l < kLanes; ++l) out[l] = static_cast<float>(p[l]);
  return out;
}

// The hardware prefetcher alone leaves DRAM idle: 8 KiB ahead of the weight
// stream (rows are contiguous, so across rows too) took int8 per channel
// from 21.7 to 27.8 GB/s on one thread (bench/kernels/qweight_gemv_bench.cpp).
inline __attribute__((always_inline)) void prefetch_ahead(const int8_t* p) {
  __builtin_prefetch(p + 8192);
}

// Σ_k x[k]·w[k] over one group, in 16 lanes with up to four independent
// chains (one would wait on every FMA's latency).
template <int kIsa>
inline __attribute__((always_inline)) F16 group_dot(const float* xg, const int8_t* wg,
                                                    int64_t group) {
  F16 v0 = {}, v1 = {}, v2 = {}, v3 = {};
  int64_t i = 0;
  for (; i + 4 * kLanes <= group; i += 4 * kLanes) {
    prefetch_ahead(wg + i);
    v0 += load_f16(xg + i) * load_i8_as_f16<kIsa>(wg + i);
    v1 += load_f16(xg + i + kLanes) * load_i8_as_f16<kIsa>(wg + i + kLanes);
    v2 += load_f16(xg + i + 2 * kLanes) * load_i8_as_f16<kIsa>(wg + i + 2 * kLanes);
    v3 += load_f16(xg + i + 3 * kLanes) * load_i8_as_f16<kIsa>(wg + i + 3 * kLanes);
  }
  for (; i + 2 * kLanes <= group; i += 2 * kLanes) {
    prefetch_ahead(wg + i);
    v1 += load_f16(xg + i) * load_i8_as_f16<kIsa>(wg + i);
    v2 += load_f16(xg + i + kLanes) * load_i8_as_f16<kIsa>(wg + i + kLanes);
  }
  if (i < group) v3 += load_f16(xg + i) * load_i8_as_f16<kIsa>(wg + i);
  return (v0 + v1) + (v2 + v3);
}

// Σ_k x[k]·(w[k] − z) = Σ_k x[k]·w[k] − z·Σ_k x[k]: the zero point costs one
// product per group (the group sums of x are shared by every row), and each
// group's scale multiplies 16 lane sums, so the lanes are added only once per
// row. Groups go in pairs, each into its own accumulator.
template <int kIsa>
inline __attribute__((always_inline)) void gemv_body(const float* x, const int8_t* w,
                                                     const float* scales, const float* zeros,
                                                     int64_t k, int64_t group, int64_t first,
                                                     int64_t last, const float* bias, float* y) {
  const int64_t groups = k / group;
  const bool lanes = group % kLanes == 0;
  // The group sums of x, once per call when they fit on the stack.
  constexpr int64_t kMaxSums = 1024;
  float sums[kMaxSums];
  const bool presummed = zeros != nullptr && groups <= kMaxSums;
  if (presummed) {
    for (int64_t g = 0; g < groups; ++g) {
      float lane[kLanes] = {};
      for (int64_t i = 0; i < group; ++i) lane[i % kLanes] += x[g * group + i];
      float t = 0.0f;
      for (int l = 0; l < kLanes; ++l) t += lane[l];
      sums[g] = t;
    }
  }
  for (int64_t r = first; r < last; ++r) {
    const int8_t* wr = w + r * k;
    const float* sr = scales + r * groups;
    const float* zr = zeros != nullptr ? zeros + r * groups : nullptr;
    F16 acc0 = {}, acc1 = {};
    float tail = 0.0f;
    if (lanes) {
      int64_t g = 0;
      for (; g + 2 <= groups; g += 2) {
        acc0 += sr[g] * group_dot<kIsa>(x + g * group, wr + g * group, group);
        acc1 += sr[g + 1] * group_dot<kIsa>(x + (g + 1) * group, wr + (g + 1) * group, group);
      }
      if (g < groups) acc0 += sr[g] * group_dot<kIsa>(x + g * group, wr + g * group, group);
    } else {
      for (int64_t g = 0; g < groups; ++g) {
        F16 v = {};
        for (int64_t i = 0; i < group; ++i) {
          v[i % kLanes] += x[g * group + i] * static_cast<float>(wr[g * group + i]);
        }
        acc0 += sr[g] * v;
      }
    }
    F16 acc = acc0 + acc1;
    if (zr != nullptr) {
      if (presummed) {
        // Σ_g s·z·(Σ x), in lanes of 16 groups.
        F16 t = {};
        int64_t g = 0;
        for (; g + kLanes <= groups; g += kLanes) {
          t += load_f16(sr + g) * load_f16(zr + g) * load_f16(sums + g);
        }
        for (; g < groups; ++g) tail += sr[g] * zr[g] * sums[g];
        acc -= t;
      } else {
        for (int64_t g = 0; g < groups; ++g) {
          float xs = 0.0f;
          for (int64_t i = 0; i < group; ++i) xs += x[g * group + i];
          tail += sr[g] * zr[g] * xs;
        }
      }
    }
    float lanes_sum[kLanes];
    __builtin_memcpy(lanes_sum, &acc, sizeof(lanes_sum));
    for (int width = kLanes / 2; width > 0; width /= 2) {
      for (int l = 0; l < width; ++l) lanes_sum[l] += lanes_sum[l + width];
    }
    const float sum = lanes_sum[0] - tail;
    y[r] = bias != nullptr ? sum + bias[r] : sum;
  }
}

void gemv_baseline(const float* x, const int8_t* w, const float* s, const float* z, int64_t k,
                   int64_t group, int64_t first, int64_t last, const float* bias, float* y) {
  gemv_body<0>(x, w, s, z, k, group, first, last, bias, y);
}

#if EMBER_ISA_X86
EMBER_TARGET_AVX2_FMA void gemv_avx2(const float* x, const int8_t* w, const float* s,
                                     const float* z, int64_t k, int64_t group, int64_t first,
                                     int64_t last, const float* bias, float* y) {
  gemv_body<1>(x, w, s, z, k, group, first, last, bias, y);
}

EMBER_TARGET_AVX512 void gemv_avx512(const float* x, const int8_t* w, const float* s,
                                     const float* z, int64_t k, int64_t group, int64_t first,
                                     int64_t last, const float* bias, float* y) {
  gemv_body<2>(x, w, s, z, k, group, first, last, bias, y);
}

// (float(w[i]) − z) · s for 8 values at a time: a subtraction then a
// product, which no FMA contracts, so the plain loop's bits.
EMBER_TARGET_AVX2_FMA void dequantize_avx2(const int8_t* w, int64_t count, float z, float s,
                                           float* dst) {
  const __m256 vz = _mm256_set1_ps(z), vs = _mm256_set1_ps(s);
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(w + i));
    const __m256 f = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b));
    _mm256_storeu_ps(dst + i, _mm256_mul_ps(_mm256_sub_ps(f, vz), vs));
  }
  for (; i < count; ++i) dst[i] = (static_cast<float>(w[i]) - z) * s;
}
#endif

}  // namespace

void qweight_dequantize(const int8_t* w, int64_t count, float z, float s, float* dst,
                        portable::Isa isa) {
#if EMBER_ISA_X86
  if (isa >= portable::Isa::kAvx2) {
    dequantize_avx2(w, count, z, s, dst);
    return;
  }
#else
  (void)isa;
#endif
  for (int64_t i = 0; i < count; ++i) dst[i] = (static_cast<float>(w[i]) - z) * s;
}

void qweight_gemv(const float* x, const int8_t* w, const float* scales, const float* zeros,
                  int64_t k, int64_t group, int64_t first, int64_t last, const float* bias,
                  float* y) {
#if EMBER_ISA_X86
  const portable::Isa isa = portable::cpu_isa();
  if (isa >= portable::Isa::kAvx512) {
    gemv_avx512(x, w, scales, zeros, k, group, first, last, bias, y);
    return;
  }
  if (isa >= portable::Isa::kAvx2) {
    gemv_avx2(x, w, scales, zeros, k, group, first, last, bias, y);
    return;
  }
#endif
  gemv_baseline(x, w, scales, zeros, k, group, first, last, bias, y);
}

}  // namespace ember::kernels::quantized
