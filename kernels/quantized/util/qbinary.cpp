#include "kernels/quantized/util/qbinary.h"

#include <cstring>

#include "kernels/portable/util/args.h"
#include "kernels/portable/util/broadcast.h"
#include "kernels/portable/util/cpu_isa.h"
#include "kernels/portable/util/elementwise.h"
#include "kernels/portable/util/isa_target.h"
#include "kernels/quantized/util/qlinear_params.h"
#include "kernels/quantized/util/qparams.h"

#if EMBER_ISA_X86
#include <immintrin.h>
// GCC 12's AVX-512 conversion, min and max intrinsics start from
// _mm512_undefined_ps(), which -Wmaybe-uninitialized reports as a false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace ember::kernels::quantized {
namespace {

using portable::StridedLoop;

// The call's arguments as the spans use them: dequantize_per_tensor computes
// (float(q) − zero_point) · scale with the scale rounded to float32;
// quantize_per_tensor multiplies by float32(1 / scale).
struct Params {
  float sa, za, sb, zb, inv, lo, hi;
  int32_t zy;
};

Params params_of(const QBinaryArgs& q) {
  const auto zy = static_cast<int32_t>(q.output_zero_point);
  return {static_cast<float>(q.a_scale),
          static_cast<float>(q.a_zero_point),
          static_cast<float>(q.b_scale),
          static_cast<float>(q.b_zero_point),
          static_cast<float>(1.0 / q.output_scale),
          static_cast<float>(q.output_min - zy),
          static_cast<float>(q.output_max - zy),
          zy};
}

template <QBinaryOp kOp>
inline float combine(float x, float y) {
  if constexpr (kOp == QBinaryOp::kAdd) return x + y;
  else return x * y;
}

// Values, not references, and restrict pointers: an int8 store may alias
// anything, and the loop would reload every parameter instead of vectorising.
// The target allows no FMA and this is ISO C++ (no contraction), so every
// product and sum is rounded as eager's separate kernels round it.
template <QBinaryOp kOp, bool kScalarB>
inline __attribute__((always_inline)) void span_loop(const int8_t* __restrict pa,
                                                     const int8_t* __restrict pb,
                                                     int8_t* __restrict po, int64_t n, Params p) {
  const float yb = kScalarB ? (static_cast<float>(pb[0]) - p.zb) * p.sb : 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    const float x = (static_cast<float>(pa[i]) - p.za) * p.sa;
    const float y = kScalarB ? yb : (static_cast<float>(pb[i]) - p.zb) * p.sb;
    po[i] = requantize(combine<kOp>(x, y) * p.inv, p.lo, p.hi, p.zy);
  }
}

template <QBinaryOp kOp, bool kScalarB>
void span_baseline(const int8_t* pa, const int8_t* pb, int8_t* po, int64_t n, Params p) {
  span_loop<kOp, kScalarB>(pa, pb, po, n, p);
}

#if EMBER_ISA_X86
// The vector spans are written out: GCC's vectorised span_loop widened
// through int16, shuffled halves back together and clamped with blends,
// about twice the instructions. Each keeps span_loop's float operations and
// rounds half to even with CVTPS2DQ once the value is clamped, as requantize
// does with its magic number.
template <QBinaryOp kOp>
__attribute__((target("avx2"))) inline __m256 combine8(__m256 x, __m256 y) {
  if constexpr (kOp == QBinaryOp::kAdd) return _mm256_add_ps(x, y);
  else return _mm256_mul_ps(x, y);
}

template <QBinaryOp kOp, bool kScalarB>
__attribute__((target("avx2"))) void span_avx2(const int8_t* pa, const int8_t* pb, int8_t* po,
                                               int64_t n, Params p) {
  const __m256 vsa = _mm256_set1_ps(p.sa), vza = _mm256_set1_ps(p.za);
  const __m256 vsb = _mm256_set1_ps(p.sb), vzb = _mm256_set1_ps(p.zb);
  const __m256 vinv = _mm256_set1_ps(p.inv), vlo = _mm256_set1_ps(p.lo), vhi = _mm256_set1_ps(p.hi);
  const __m256i vzy = _mm256_set1_epi32(p.zy);
  const __m256 yb = _mm256_set1_ps(kScalarB ? (static_cast<float>(pb[0]) - p.zb) * p.sb : 0.0f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    int64_t qa;
    std::memcpy(&qa, pa + i, 8);
    const __m256 fa = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_cvtsi64_si128(qa)));
    const __m256 x = _mm256_mul_ps(_mm256_sub_ps(fa, vza), vsa);
    __m256 y = yb;
    if constexpr (!kScalarB) {
      int64_t qb;
      std::memcpy(&qb, pb + i, 8);
      const __m256 fb = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_cvtsi64_si128(qb)));
      y = _mm256_mul_ps(_mm256_sub_ps(fb, vzb), vsb);
    }
    const __m256 v = _mm256_min_ps(_mm256_max_ps(_mm256_mul_ps(combine8<kOp>(x, y), vinv), vlo), vhi);
    const __m256i q = _mm256_add_epi32(_mm256_cvtps_epi32(v), vzy);
    // In [−128, 127] already: the saturating packs only narrow.
    const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    const int64_t out = _mm_cvtsi128_si64(_mm_packs_epi16(w, w));
    std::memcpy(po + i, &out, 8);
  }
  span_loop<kOp, kScalarB>(pa + i, kScalarB ? pb : pb + i, po + i, n - i, p);
}

template <QBinaryOp kOp>
__attribute__((target("avx512f"))) inline __m512 combine16(__m512 x, __m512 y) {
  if constexpr (kOp == QBinaryOp::kAdd) return _mm512_add_ps(x, y);
  else return _mm512_mul_ps(x, y);
}

template <QBinaryOp kOp, bool kScalarB>
__attribute__((target("avx512f,avx512bw,avx512vl"))) void span_avx512(const int8_t* pa,
                                                                       const int8_t* pb,
                                                                       int8_t* po, int64_t n,
                                                                       Params p) {
  const __m512 vsa = _mm512_set1_ps(p.sa), vza = _mm512_set1_ps(p.za);
  const __m512 vsb = _mm512_set1_ps(p.sb), vzb = _mm512_set1_ps(p.zb);
  const __m512 vinv = _mm512_set1_ps(p.inv), vlo = _mm512_set1_ps(p.lo), vhi = _mm512_set1_ps(p.hi);
  const __m512i vzy = _mm512_set1_epi32(p.zy);
  const __m512 yb = _mm512_set1_ps(kScalarB ? (static_cast<float>(pb[0]) - p.zb) * p.sb : 0.0f);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : __mmask16((1u << (n - i)) - 1u);
    const __m512 fa = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, pa + i)));
    const __m512 x = _mm512_mul_ps(_mm512_sub_ps(fa, vza), vsa);
    __m512 y = yb;
    if constexpr (!kScalarB) {
      const __m512 fb = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, pb + i)));
      y = _mm512_mul_ps(_mm512_sub_ps(fb, vzb), vsb);
    }
    const __m512 v =
        _mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(combine16<kOp>(x, y), vinv), vlo), vhi);
    _mm_mask_storeu_epi8(po + i, m,
                         _mm512_cvtepi32_epi8(_mm512_add_epi32(_mm512_cvtps_epi32(v), vzy)));
  }
}
#endif

template <QBinaryOp kOp, bool kScalarB>
void span(const int8_t* pa, const int8_t* pb, int8_t* po, int64_t n, Params p) {
#if EMBER_ISA_X86
  if (portable::cpu_isa() >= portable::Isa::kAvx512) {
    span_avx512<kOp, kScalarB>(pa, pb, po, n, p);
    return;
  }
  if (portable::cpu_isa() >= portable::Isa::kAvx2) {
    span_avx2<kOp, kScalarB>(pa, pb, po, n, p);
    return;
  }
#endif
  span_baseline<kOp, kScalarB>(pa, pb, po, n, p);
}

// Both ops are commutative in float32 (x + y and x · y round the same either
// way), so a row whose a is the broadcast one swaps the operands and their
// parameters and takes the scalar-b span.
Params swapped(Params p) {
  return {p.sb, p.zb, p.sa, p.za, p.inv, p.lo, p.hi, p.zy};
}

template <QBinaryOp kOp>
void row(const int8_t* pa, const int8_t* pb, int8_t* po, int64_t n, const int64_t* st, Params p) {
  if (st[0] == 1 && st[1] == 1 && st[2] == 1) {
    span<kOp, false>(pa, pb, po, n, p);
  } else if (st[0] == 1 && st[1] == 1 && st[2] == 0) {
    span<kOp, true>(pa, pb, po, n, p);
  } else if (st[0] == 1 && st[1] == 0 && st[2] == 1) {
    span<kOp, true>(pb, pa, po, n, swapped(p));
  } else {
    for (int64_t i = 0; i < n; ++i) {
      const float x = (static_cast<float>(pa[i * st[1]]) - p.za) * p.sa;
      const float y = (static_cast<float>(pb[i * st[2]]) - p.zb) * p.sb;
      po[i * st[0]] = requantize(combine<kOp>(x, y) * p.inv, p.lo, p.hi, p.zy);
    }
  }
}

}  // namespace

Error qbinary_prepare(KernelPrepareContext& ctx, const Tensor& a, const Tensor& b,
                      const QBinaryArgs& q, Tensor& out) {
  if (Error e = check_static_qargs(ctx, a, "a", q.a_scale, q.a_zero_point, out, q.output_scale,
                                   q.output_zero_point, q.output_min, q.output_max);
      e != Error::Ok) {
    return e;
  }
  return check_static_qargs(ctx, b, "b", q.b_scale, q.b_zero_point, out, q.output_scale,
                            q.output_zero_point, q.output_min, q.output_max);
}

void qbinary_out(KernelContext& ctx, QBinaryOp op, const Tensor& a, const Tensor& b,
                 const QBinaryArgs& q, Tensor& out) {
  EMBER_KERNEL_CHECK(ctx, a.dtype == ScalarType::Char && b.dtype == ScalarType::Char,
                     "a and b must be int8, got %s and %s", scalar_type_name(a.dtype),
                     scalar_type_name(b.dtype));
  EMBER_KERNEL_CHECK(ctx, out.dtype == ScalarType::Char, "out must be int8, got %s",
                     scalar_type_name(out.dtype));
  int32_t shape[kTensorMaxDim];
  int32_t dim = 0;
  EMBER_KERNEL_CHECK(ctx, portable::broadcast_shapes(a.shape(), b.shape(), shape, &dim),
                     "a of shape %s and b of shape %s do not broadcast",
                     portable::ShapeStr(a.shape()).c_str(), portable::ShapeStr(b.shape()).c_str());
  if (!portable::resize_out(ctx, out, {shape, static_cast<size_t>(dim)})) return;
  int64_t sa[kTensorMaxDim];
  int64_t sb[kTensorMaxDim];
  portable::broadcast_strides(a, out.shape(), sa);
  portable::broadcast_strides(b, out.shape(), sb);
  const int64_t* strides[3] = {out.strides, sa, sb};
  StridedLoop<3> loop;
  loop.init(out.shape(), strides);
  const auto* pa = a.data_ptr<const int8_t>();
  const auto* pb = b.data_ptr<const int8_t>();
  auto* po = out.data_ptr<int8_t>();
  const Params p = params_of(q);
  portable::run_elementwise(&ctx, loop, out.numel,
                            [&](const int64_t* off, int64_t n, const int64_t* st) {
                              if (op == QBinaryOp::kAdd) {
                                row<QBinaryOp::kAdd>(pa + off[1], pb + off[2], po + off[0], n, st, p);
                              } else {
                                row<QBinaryOp::kMul>(pa + off[1], pb + off[2], po + off[0], n, st, p);
                              }
                            });
}

void qbinary_span(QBinaryOp op, const int8_t* a, const int8_t* b, bool b_scalar, int8_t* out,
                  int64_t n, const QBinaryArgs& q) {
  const Params p = params_of(q);
  if (op == QBinaryOp::kAdd) {
    b_scalar ? span<QBinaryOp::kAdd, true>(a, b, out, n, p) : span<QBinaryOp::kAdd, false>(a, b, out, n, p);
  } else {
    b_scalar ? span<QBinaryOp::kMul, true>(a, b, out, n, p) : span<QBinaryOp::kMul, false>(a, b, out, n, p);
  }
}

}  // namespace ember::kernels::quantized
