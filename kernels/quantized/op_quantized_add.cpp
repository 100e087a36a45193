// ember_quantized::add.out(Tensor a, float a_scale, int a_zero_point, Tensor b,
//     float b_scale, int b_zero_point, float output_scale, int output_zero_point,
//     int output_min, int output_max, *, Tensor(a!) out) -> Tensor(a!)
//
// What ember.exir.passes.fuse_quantized_ops makes of pt2e's
//   quantize([relu](add(dequantize(a), dequantize(b))))
// (a residual connection): a, b and out int8 of one shape. Each element is
// computed with eager's float32 operations in eager's order,
//   y = (a − za)·sa + (b − zb)·sb,  out = clamp(round_half_even(y · (1/sy)) + zy, lo, hi),
// so the result is bit-identical to the unfused chain; it just reads two int8
// tensors and writes one instead of going through three float32 ones.
#include <cstring>

#include "kernels/generated/functions/quantized/op_quantized_add.h"
#include "kernels/portable/util/args.h"
#include "kernels/portable/util/cpu_isa.h"
#include "kernels/portable/util/isa_target.h"
#include "kernels/portable/util/parallel.h"
#include "kernels/quantized/util/qgemm.h"
#include "kernels/quantized/util/qlinear_params.h"

#if EMBER_ISA_X86
#include <immintrin.h>
// GCC 12's AVX-512 conversion, min and max intrinsics start from
// _mm512_undefined_ps(), which -Wmaybe-uninitialized reports as a false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace ember::kernels::quantized {
namespace {

using portable::parallel_range;
using portable::resize_out;

// Values, not references, and restrict pointers: an int8 store may alias
// anything, and the loop would reload every parameter instead of vectorising.
// Inlined into baseline, AVX2 and AVX-512 builds, none of which contracts
// into FMAs, so all round every product and sum as eager's separate kernels do.
inline __attribute__((always_inline)) void add_loop(const int8_t* __restrict pa,
                                                    const int8_t* __restrict pb,
                                                    int8_t* __restrict po, int64_t n, float sa,
                                                    float za, float sb, float zb, float inv,
                                                    float lo, float hi, int32_t zy) {
  for (int64_t i = 0; i < n; ++i) {
    const float y = (static_cast<float>(pa[i]) - za) * sa + (static_cast<float>(pb[i]) - zb) * sb;
    po[i] = requantize(y * inv, lo, hi, zy);
  }
}

void add_span_baseline(const int8_t* pa, const int8_t* pb, int8_t* po, int64_t n, float sa,
                       float za, float sb, float zb, float inv, float lo, float hi, int32_t zy) {
  add_loop(pa, pb, po, n, sa, za, sb, zb, inv, lo, hi, zy);
}

#if EMBER_ISA_X86
// The vector spans are written out: GCC's vectorised add_loop widened
// through int16, shuffled halves back together and clamped with blends,
// about twice the instructions (6 G elements/s on a 3 GHz core, which is
// what ResNet-50's residual adds ran at, in cache or not). Each keeps
// add_loop's float operations (no FMA: the target allows none here, and the
// products and sums are separate intrinsics) and rounds half to even with
// CVTPS2DQ once the value is clamped, as requantize does with its magic
// number.
__attribute__((target("avx2"))) void add_span_avx2(const int8_t* pa, const int8_t* pb,
                                                   int8_t* po, int64_t n, float sa, float za,
                                                   float sb, float zb, float inv, float lo,
                                                   float hi, int32_t zy) {
  const __m256 vsa = _mm256_set1_ps(sa), vza = _mm256_set1_ps(za);
  const __m256 vsb = _mm256_set1_ps(sb), vzb = _mm256_set1_ps(zb);
  const __m256 vinv = _mm256_set1_ps(inv), vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi);
  const __m256i vzy = _mm256_set1_epi32(zy);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    int64_t qa, qb;
    std::memcpy(&qa, pa + i, 8);
    std::memcpy(&qb, pb + i, 8);
    const __m256 fa = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_cvtsi64_si128(qa)));
    const __m256 fb = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_cvtsi64_si128(qb)));
    const __m256 y = _mm256_add_ps(_mm256_mul_ps(_mm256_sub_ps(fa, vza), vsa),
                                   _mm256_mul_ps(_mm256_sub_ps(fb, vzb), vsb));
    const __m256 v = _mm256_min_ps(_mm256_max_ps(_mm256_mul_ps(y, vinv), vlo), vhi);
    const __m256i q = _mm256_add_epi32(_mm256_cvtps_epi32(v), vzy);
    // In [−128, 127] already: the saturating packs only narrow.
    const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    const int64_t out = _mm_cvtsi128_si64(_mm_packs_epi16(w, w));
    std::memcpy(po + i, &out, 8);
  }
  add_loop(pa + i, pb + i, po + i, n - i, sa, za, sb, zb, inv, lo, hi, zy);
}

__attribute__((target("avx512f,avx512bw,avx512vl"))) void add_span_avx512(
    const int8_t* pa, const int8_t* pb, int8_t* po, int64_t n, float sa, float za, float sb,
    float zb, float inv, float lo, float hi, int32_t zy) {
  const __m512 vsa = _mm512_set1_ps(sa), vza = _mm512_set1_ps(za);
  const __m512 vsb = _mm512_set1_ps(sb), vzb = _mm512_set1_ps(zb);
  const __m512 vinv = _mm512_set1_ps(inv), vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
  const __m512i vzy = _mm512_set1_epi32(zy);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : __mmask16((1u << (n - i)) - 1u);
    const __m512 fa = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, pa + i)));
    const __m512 fb = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, pb + i)));
    const __m512 y = _mm512_add_ps(_mm512_mul_ps(_mm512_sub_ps(fa, vza), vsa),
                                   _mm512_mul_ps(_mm512_sub_ps(fb, vzb), vsb));
    const __m512 v = _mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(y, vinv), vlo), vhi);
    _mm_mask_storeu_epi8(po + i, m,
                         _mm512_cvtepi32_epi8(_mm512_add_epi32(_mm512_cvtps_epi32(v), vzy)));
  }
}
#endif

void add_span(const int8_t* pa, const int8_t* pb, int8_t* po, int64_t n, float sa, float za,
              float sb, float zb, float inv, float lo, float hi, int32_t zy) {
#if EMBER_ISA_X86
  if (portable::cpu_isa() >= portable::Isa::kAvx512) {
    add_span_avx512(pa, pb, po, n, sa, za, sb, zb, inv, lo, hi, zy);
    return;
  }
  if (portable::cpu_isa() >= portable::Isa::kAvx2) {
    add_span_avx2(pa, pb, po, n, sa, za, sb, zb, inv, lo, hi, zy);
    return;
  }
#endif
  add_span_baseline(pa, pb, po, n, sa, za, sb, zb, inv, lo, hi, zy);
}

}  // namespace

Error add_out_prepare(KernelPrepareContext& ctx, const Tensor& a, double a_scale,
                      int64_t a_zero_point, const Tensor& b, double b_scale, int64_t b_zero_point,
                      double output_scale, int64_t output_zero_point, int64_t output_min,
                      int64_t output_max, Tensor& out) {
  if (Error e = check_static_qargs(ctx, a, "a", a_scale, a_zero_point, out, output_scale,
                                   output_zero_point, output_min, output_max);
      e != Error::Ok) {
    return e;
  }
  return check_static_qargs(ctx, b, "b", b_scale, b_zero_point, out, output_scale,
                            output_zero_point, output_min, output_max);
}

void add_out(KernelContext& ctx, const Tensor& a, double a_scale, int64_t a_zero_point,
             const Tensor& b, double b_scale, int64_t b_zero_point, double output_scale,
             int64_t output_zero_point, int64_t output_min, int64_t output_max, Tensor& out) {
  EMBER_KERNEL_CHECK(ctx, a.dtype == ScalarType::Char && b.dtype == ScalarType::Char,
                     "a and b must be int8, got %s and %s", scalar_type_name(a.dtype),
                     scalar_type_name(b.dtype));
  bool same = a.dim == b.dim;
  for (int i = 0; same && i < a.dim; ++i) same = a.sizes[i] == b.sizes[i];
  EMBER_KERNEL_CHECK(ctx, same, "a and b must have the same shape (no broadcasting)");
  bool same_order = true;
  for (int i = 0; same_order && i < a.dim; ++i) same_order = a.dim_order[i] == b.dim_order[i];
  EMBER_KERNEL_CHECK(ctx, same_order, "a and b must have the same dim order");
  if (!resize_out(ctx, out, a.shape())) return;
  bool out_order = true;
  for (int i = 0; out_order && i < a.dim; ++i) out_order = a.dim_order[i] == out.dim_order[i];
  EMBER_KERNEL_CHECK(ctx, out_order, "out must have the inputs' dim order");
  const auto* pa = a.data_ptr<const int8_t>();
  const auto* pb = b.data_ptr<const int8_t>();
  auto* po = out.data_ptr<int8_t>();
  // dequantize_per_tensor: (float(q) − zero_point) · scale, scale rounded to float32.
  const auto sa = static_cast<float>(a_scale), sb = static_cast<float>(b_scale);
  const auto za = static_cast<float>(a_zero_point), zb = static_cast<float>(b_zero_point);
  // quantize_per_tensor: y · float32(1 / scale).
  const auto inv = static_cast<float>(1.0 / output_scale);
  const auto zy = static_cast<int32_t>(output_zero_point);
  const auto lo = static_cast<float>(output_min - zy), hi = static_cast<float>(output_max - zy);
  parallel_range(ctx, a.numel, portable::kParallelMinCopyElements, 64,
                 [&](int64_t begin, int64_t end) {
                   add_span(pa + begin, pb + begin, po + begin, end - begin, sa, za, sb, zb, inv,
                            lo, hi, zy);
                 });
}

}  // namespace ember::kernels::quantized
