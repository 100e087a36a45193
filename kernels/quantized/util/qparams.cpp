#include "kernels/quantized/util/qparams.h"

#include <cinttypes>
#include <cstdarg>
#include <cstdio>

#include "kernels/portable/util/cpu_isa.h"
#include "kernels/portable/util/dtype.h"
#include "kernels/portable/util/isa_target.h"

#if EMBER_ISA_X86
#include <immintrin.h>
// GCC 12's AVX-512 min and max intrinsics start from _mm512_undefined_ps(),
// which -Wmaybe-uninitialized reports as a false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace ember::kernels::quantized {

bool quant_dtype_range(ScalarType t, int64_t* lo, int64_t* hi) {
  switch (t) {
    case ScalarType::Byte: *lo = 0; *hi = 255; return true;
    case ScalarType::Char: *lo = -128; *hi = 127; return true;
    case ScalarType::Short: *lo = -32768; *hi = 32767; return true;
    case ScalarType::Int: *lo = INT32_MIN; *hi = INT32_MAX; return true;
    default: return false;
  }
}

double load_scale(const Tensor& t, int64_t i) {
  return t.dtype == ScalarType::Double ? t.data_ptr<const double>()[i]
                                       : static_cast<double>(t.data_ptr<const float>()[i]);
}

int64_t load_zero_point(const Tensor& t, int64_t i) {
  return portable::load_as<int64_t>(t.data, t.dtype, i);
}

bool read_per_tensor_params(KernelContext& ctx, const Tensor& scale_t, const Tensor& zero_point_t,
                            double* scale, int64_t* zero_point) {
  if (scale_t.numel != 1 || zero_point_t.numel != 1) {
    ctx.fail(Error::InvalidArgument,
             "scale and zero_point tensors must have one element (got %lld and %lld)",
             static_cast<long long>(scale_t.numel), static_cast<long long>(zero_point_t.numel));
    return false;
  }
  *scale = load_scale(scale_t, 0);
  *zero_point = load_zero_point(zero_point_t, 0);
  return true;
}

bool is_quantize_input_dtype(ScalarType t) {
  return t == ScalarType::Float || t == ScalarType::Half || t == ScalarType::BFloat16;
}

namespace {

bool is_scale_valid(double s) { return std::isfinite(s) && s > 0.0; }

bool is_integer_dtype(ScalarType t) {
  return t == ScalarType::Byte || t == ScalarType::Char || t == ScalarType::Short ||
         t == ScalarType::Int || t == ScalarType::Long;
}

// Writes the message and returns false, so checks read `return fail(...)`.
bool fail(char* msg, size_t size, const char* format, ...) __attribute__((format(printf, 3, 4)));
bool fail(char* msg, size_t size, const char* format, ...) {
  va_list ap;
  va_start(ap, format);
  std::vsnprintf(msg, size, format, ap);
  va_end(ap);
  return false;
}

bool check_scales(const QParams& q, bool readable, char* msg, size_t size) {
  if (q.scale_tensor == nullptr) {
    if (is_scale_valid(q.scale)) return true;
    return fail(msg, size, "scale %g must be finite and > 0", q.scale);
  }
  const Tensor& t = *q.scale_tensor;
  if (t.dtype != ScalarType::Float && t.dtype != ScalarType::Double) {
    return fail(msg, size, "scale tensor must be float32 or float64, got %s",
                scalar_type_name(t.dtype));
  }
  if (!readable || t.data == nullptr) return true;
  for (int64_t i = 0; i < t.numel; ++i) {
    const double s = load_scale(t, i);
    if (!is_scale_valid(s)) {
      return fail(msg, size, "scale[%" PRId64 "] = %g must be finite and > 0", i, s);
    }
  }
  return true;
}

bool check_zero_points(const QParams& q, bool readable, int64_t lo, int64_t hi, ScalarType dtype,
                       char* msg, size_t size) {
  if (!q.has_zero_point) return true;
  if (q.zero_point_tensor == nullptr) {
    const int64_t z = q.zero_point;
    if (z < lo || z > hi) {
      return fail(msg, size, "zero_point %" PRId64 " is outside %s's range [%" PRId64
                  ", %" PRId64 "]", z, scalar_type_name(dtype), lo, hi);
    }
    return true;
  }
  const Tensor& t = *q.zero_point_tensor;
  if (!is_integer_dtype(t.dtype)) {
    return fail(msg, size, "zero_point tensor must have an integer dtype, got %s",
                scalar_type_name(t.dtype));
  }
  if (!readable || t.data == nullptr) return true;
  for (int64_t i = 0; i < t.numel; ++i) {
    const int64_t z = load_zero_point(t, i);
    if (z < lo || z > hi) {
      return fail(msg, size, "zero_point[%" PRId64 "] = %" PRId64 " is outside %s's range [%"
                  PRId64 ", %" PRId64 "]", i, z, scalar_type_name(dtype), lo, hi);
    }
  }
  return true;
}

}  // namespace

bool check_qparams(const QParams& q, const KernelPrepareContext* prepare, char* msg,
                   size_t msg_size) {
  const auto dtype = static_cast<ScalarType>(q.dtype);
  int64_t lo = 0, hi = 0;
  if (!quant_dtype_range(dtype, &lo, &hi)) {
    return fail(msg, msg_size, "dtype %s is not a quantized integer dtype",
                scalar_type_name(dtype));
  }
  const int64_t qmin = q.quant_min, qmax = q.quant_max;
  if (qmin > qmax || qmin < lo || qmax > hi) {
    return fail(msg, msg_size, "[quant_min, quant_max] = [%" PRId64 ", %" PRId64
                "] must be ordered and within %s's range [%" PRId64 ", %" PRId64 "]",
                qmin, qmax, scalar_type_name(dtype), lo, hi);
  }
  const auto can_read = [&](const Tensor* t) {
    return prepare == nullptr || (t != nullptr && prepare->is_constant(*t));
  };
  if (!check_scales(q, can_read(q.scale_tensor), msg, msg_size)) return false;
  return check_zero_points(q, can_read(q.zero_point_tensor), lo, hi, dtype, msg, msg_size);
}

Error prepare_qparams(KernelPrepareContext& ctx, const QParams& q) {
  char msg[256];
  if (check_qparams(q, &ctx, msg, sizeof(msg))) return Error::Ok;
  return ctx.fail(Error::InvalidProgram, "%s", msg);
}

bool run_check_qparams(KernelContext& ctx, const QParams& q) {
  char msg[256];
  if (check_qparams(q, nullptr, msg, sizeof(msg))) return true;
  ctx.fail(Error::InvalidArgument, "%s", msg);
  return false;
}

namespace {

// The range of n > 0 values by the rule lo = x < lo ? x : lo (likewise hi):
// a NaN is skipped unless it is x[0], which then stays. MINPS/MAXPS apply
// that rule per lane, so lanes that all start from x[0] and are combined by
// it give the scalar loop's result.
void minmax_baseline(const float* x, int64_t n, float* lo_out, float* hi_out) {
  float lo = x[0], hi = x[0];
  for (int64_t i = 1; i < n; ++i) {
    lo = x[i] < lo ? x[i] : lo;
    hi = x[i] > hi ? x[i] : hi;
  }
  *lo_out = lo;
  *hi_out = hi;
}

#if EMBER_ISA_X86
// The lanes' ranges combined by the same rule, then x[i, n) one by one.
void minmax_finish(const float* lo, const float* hi, int lanes, const float* x, int64_t i,
                   int64_t n, float* lo_out, float* hi_out) {
  float l = x[0], h = x[0];
  for (int j = 0; j < lanes; ++j) {
    l = lo[j] < l ? lo[j] : l;
    h = hi[j] > h ? hi[j] : h;
  }
  for (; i < n; ++i) {
    l = x[i] < l ? x[i] : l;
    h = x[i] > h ? x[i] : h;
  }
  *lo_out = l;
  *hi_out = h;
}

EMBER_TARGET_AVX512 void minmax_avx512(const float* x, int64_t n, float* lo_out,
                                       float* hi_out) {
  __m512 lo0 = _mm512_set1_ps(x[0]), hi0 = lo0, lo1 = lo0, hi1 = lo0;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512 a = _mm512_loadu_ps(x + i), b = _mm512_loadu_ps(x + i + 16);
    lo0 = _mm512_min_ps(a, lo0);
    hi0 = _mm512_max_ps(a, hi0);
    lo1 = _mm512_min_ps(b, lo1);
    hi1 = _mm512_max_ps(b, hi1);
  }
  float lo[32], hi[32];
  _mm512_storeu_ps(lo, lo0);
  _mm512_storeu_ps(lo + 16, lo1);
  _mm512_storeu_ps(hi, hi0);
  _mm512_storeu_ps(hi + 16, hi1);
  minmax_finish(lo, hi, 32, x, i, n, lo_out, hi_out);
}

EMBER_TARGET_AVX2_FMA void minmax_avx2(const float* x, int64_t n, float* lo_out, float* hi_out) {
  __m256 lo0 = _mm256_set1_ps(x[0]), hi0 = lo0, lo1 = lo0, hi1 = lo0;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 a = _mm256_loadu_ps(x + i), b = _mm256_loadu_ps(x + i + 8);
    lo0 = _mm256_min_ps(a, lo0);
    hi0 = _mm256_max_ps(a, hi0);
    lo1 = _mm256_min_ps(b, lo1);
    hi1 = _mm256_max_ps(b, hi1);
  }
  float lo[16], hi[16];
  _mm256_storeu_ps(lo, lo0);
  _mm256_storeu_ps(lo + 8, lo1);
  _mm256_storeu_ps(hi, hi0);
  _mm256_storeu_ps(hi + 8, hi1);
  minmax_finish(lo, hi, 16, x, i, n, lo_out, hi_out);
}
#endif

}  // namespace

namespace {

void quantize_f32_s8_baseline(const float* __restrict x, int8_t* __restrict o, int64_t n,
                              float inv, float lo_minus_zp, float hi_minus_zp, int32_t zp) {
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i] * inv;
    o[i] = requantize(v != v ? 0.0f : v, lo_minus_zp, hi_minus_zp, zp);
  }
}

#if EMBER_ISA_X86
// requantize's steps in 16 lanes: NaN to 0, clamp, round half to even
// (CVTPS2DQ in the default rounding mode, exact once clamped), + zp.
EMBER_TARGET_AVX512 void quantize_f32_s8_avx512(const float* __restrict x, int8_t* __restrict o,
                                                int64_t n, float inv, float lo_minus_zp,
                                                float hi_minus_zp, int32_t zp) {
  const __m512 vinv = _mm512_set1_ps(inv);
  const __m512 lo = _mm512_set1_ps(lo_minus_zp), hi = _mm512_set1_ps(hi_minus_zp);
  const __m512i vz = _mm512_set1_epi32(zp);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : __mmask16((1u << (n - i)) - 1u);
    __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), vinv);
    v = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, v, _CMP_ORD_Q), v);
    v = _mm512_min_ps(_mm512_max_ps(v, lo), hi);
    _mm_mask_storeu_epi8(o + i, m, _mm512_cvtepi32_epi8(_mm512_add_epi32(_mm512_cvtps_epi32(v), vz)));
  }
}
#endif

}  // namespace

void quantize_f32_s8(const float* __restrict x, int8_t* __restrict o, int64_t n, float inv,
                     float lo_minus_zp, float hi_minus_zp, int32_t zp) {
#if EMBER_ISA_X86
  if (portable::cpu_isa() >= portable::Isa::kAvx512) {
    quantize_f32_s8_avx512(x, o, n, inv, lo_minus_zp, hi_minus_zp, zp);
    return;
  }
#endif
  quantize_f32_s8_baseline(x, o, n, inv, lo_minus_zp, hi_minus_zp, zp);
}

void choose_qparams_f32(const float* x, int64_t n, int64_t qmin, int64_t qmax, double eps,
                        float* scale_out, int64_t* zero_point_out) {
  float lo, hi;
#if EMBER_ISA_X86
  const portable::Isa isa = portable::cpu_isa();
  if (isa >= portable::Isa::kAvx512) {
    minmax_avx512(x, n, &lo, &hi);
  } else if (isa >= portable::Isa::kAvx2) {
    minmax_avx2(x, n, &lo, &hi);
  } else {
    minmax_baseline(x, n, &lo, &hi);
  }
#else
  minmax_baseline(x, n, &lo, &hi);
#endif
  const float min_neg = lo < 0.0f ? lo : 0.0f;
  const float max_pos = hi > 0.0f ? hi : 0.0f;
  float scale = (max_pos - min_neg) / static_cast<float>(qmax - qmin);
  const auto eps_f = static_cast<float>(eps);
  scale = scale > eps_f ? scale : eps_f;
  // zero_point = quant_min - round(min / scale) in int32, then clamped.
  const auto rounded = static_cast<int64_t>(static_cast<int32_t>(std::nearbyint(min_neg / scale)));
  int64_t zp = qmin - rounded;
  zp = zp < qmin ? qmin : (zp > qmax ? qmax : zp);
  *scale_out = scale;
  *zero_point_out = zp;
}

}  // namespace ember::kernels::quantized
