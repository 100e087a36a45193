#include "kernels/portable/util/depthwise_s2_f32.h"

#include <cstring>

#include "kernels/portable/util/copy.h"
#include "kernels/portable/util/cpu_isa.h"
#include "kernels/portable/util/gemm.h"
#include "kernels/portable/util/isa_target.h"

namespace ember::kernels::portable {
namespace {

// Output rows per band for wp-wide phase planes: four planes of
// (rows + 1)·wp + 1 floats (the last row's dropped column reads one past)
// and the band's rows·wp outputs.
int64_t band_rows(int64_t wp) { return (kDw3x3S2Scratch - 4 - 4 * wp) / (5 * wp); }

// The plane, compiled once per ISA level (always inlined into each build).
[[gnu::always_inline]] inline void plane_body(const float* x, int64_t in_h, int64_t in_w,
                                              int64_t x_h, int64_t pad_h, int64_t pad_w,
                                              const float* w9, float bias, float* out,
                                              int64_t out_h, int64_t out_w, int64_t o_h,
                                              float* scratch) {
  const int64_t wp = out_w + 1;
  const int64_t pw = 2 * out_w + 1;  // Padded columns the taps read.
  // Input columns [c_lo, c_hi) land in padded columns [c_lo + pad_w, c_hi + pad_w) < pw.
  const int64_t c_lo = pad_w > pw ? in_w : 0;
  int64_t c_hi = pw - pad_w < in_w ? pw - pad_w : in_w;
  if (c_hi < c_lo) c_hi = c_lo;
  const float w0 = w9[0], w1 = w9[1], w2 = w9[2], w3 = w9[3], w4 = w9[4], w5 = w9[5],
              w6 = w9[6], w7 = w9[7], w8 = w9[8];
  const int64_t band = band_rows(wp);
  for (int64_t oh0 = 0; oh0 < out_h; oh0 += band) {
    const int64_t rows = out_h - oh0 < band ? out_h - oh0 : band;
    const int64_t ps = (rows + 1) * wp + 1;
    float* phase = scratch;  // [row parity · 2 + column parity][ps]
    float* flat = scratch + 4 * ps;
    std::memset(phase, 0, sizeof(float) * static_cast<size_t>(4 * ps));
    // Padded rows 2·oh0 .. 2·(oh0 + rows) feed the band.
    for (int64_t pr = 2 * oh0; pr <= 2 * (oh0 + rows); ++pr) {
      const int64_t ih = pr - pad_h;
      if (ih < 0 || ih >= in_h) continue;
      const int64_t r = (pr >> 1) - oh0;
      float* even = phase + (pr & 1) * 2 * ps + r * wp;
      float* odd = even + ps;
      const float* src = x + ih * x_h;
      // Padded column pc = c + pad_w goes to column pc / 2 of the even or odd plane.
      int64_t c = c_lo;
      if (c < c_hi && ((c + pad_w) & 1) != 0) {
        odd[(c + pad_w) >> 1] = src[c];
        ++c;
      }
      // Pairs (even padded column, odd padded column): a stride-2 loop the
      // compiler vectorises with permutes.
      const int64_t pairs = (c_hi - c) / 2;
      float* __restrict e = even + ((c + pad_w) >> 1);
      float* __restrict o = odd + ((c + pad_w) >> 1);
      const float* s = src + c;
      for (int64_t i = 0; i < pairs; ++i) {
        e[i] = s[2 * i];
        o[i] = s[2 * i + 1];
      }
      c += 2 * pairs;
      if (c < c_hi) even[(c + pad_w) >> 1] = src[c];
    }
    // Tap (dy, dx) reads phase (dy & 1, dx & 1) at t + (dy >> 1)·wp + (dx >> 1).
    const float* ee = phase;           // even rows, even columns
    const float* eo = phase + ps;      // even rows, odd columns
    const float* oe = phase + 2 * ps;  // odd rows, even columns
    const float* oo = phase + 3 * ps;  // odd rows, odd columns
    const int64_t n = rows * wp;
    float* __restrict f = flat;
    for (int64_t t = 0; t < n; ++t) {
      const float r0 = w0 * ee[t] + w1 * eo[t] + w2 * ee[t + 1];
      const float r1 = w3 * oe[t] + w4 * oo[t] + w5 * oe[t + 1];
      const float r2 = w6 * ee[t + wp] + w7 * eo[t + wp] + w8 * ee[t + wp + 1];
      f[t] = bias + r0 + r1 + r2;
    }
    for (int64_t oh = 0; oh < rows; ++oh) {
      copy_row_inline(out + (oh0 + oh) * o_h, flat + oh * wp, out_w);
    }
  }
}

void plane_baseline(const float* x, int64_t in_h, int64_t in_w, int64_t x_h, int64_t pad_h,
                    int64_t pad_w, const float* w9, float bias, float* out, int64_t out_h,
                    int64_t out_w, int64_t o_h, float* scratch) {
  plane_body(x, in_h, in_w, x_h, pad_h, pad_w, w9, bias, out, out_h, out_w, o_h, scratch);
}

#if EMBER_ISA_X86
EMBER_TARGET_AVX2_FMA void plane_avx2(const float* x, int64_t in_h, int64_t in_w, int64_t x_h,
                                      int64_t pad_h, int64_t pad_w, const float* w9, float bias,
                                      float* out, int64_t out_h, int64_t out_w, int64_t o_h,
                                      float* scratch) {
  plane_body(x, in_h, in_w, x_h, pad_h, pad_w, w9, bias, out, out_h, out_w, o_h, scratch);
}
EMBER_TARGET_AVX512 void plane_avx512(const float* x, int64_t in_h, int64_t in_w, int64_t x_h,
                                      int64_t pad_h, int64_t pad_w, const float* w9, float bias,
                                      float* out, int64_t out_h, int64_t out_w, int64_t o_h,
                                      float* scratch) {
  plane_body(x, in_h, in_w, x_h, pad_h, pad_w, w9, bias, out, out_h, out_w, o_h, scratch);
}
#endif

}  // namespace

bool dw3x3_s2_takes(int64_t out_w) { return out_w >= 1 && band_rows(out_w + 1) >= 1; }

void dw3x3_s2_plane_f32(const float* x, int64_t in_h, int64_t in_w, int64_t x_h, int64_t pad_h,
                        int64_t pad_w, const float* w9, float bias, float* out, int64_t out_h,
                        int64_t out_w, int64_t o_h, float* scratch) {
#if EMBER_ISA_X86
  if (cpu_has_avx512f()) {
    plane_avx512(x, in_h, in_w, x_h, pad_h, pad_w, w9, bias, out, out_h, out_w, o_h, scratch);
    return;
  }
  if (cpu_has_avx2_fma()) {
    plane_avx2(x, in_h, in_w, x_h, pad_h, pad_w, w9, bias, out, out_h, out_w, o_h, scratch);
    return;
  }
#endif
  plane_baseline(x, in_h, in_w, x_h, pad_h, pad_w, w9, bias, out, out_h, out_w, o_h, scratch);
}

}  // namespace ember::kernels::portable
