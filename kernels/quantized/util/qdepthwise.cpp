#include "kernels/quantized/util/qdepthwise.h"

#include <cstring>

#include "kernels/portable/util/cpu_isa.h"
#include "kernels/portable/util/isa_target.h"
#include "kernels/quantized/util/qgemm.h"

namespace ember::kernels::quantized {
namespace {

struct Layout {
  int64_t hp, wp;        // One phase plane's rows and columns.
  int64_t plane;         // Elements per phase plane (with slack for the last rows' overrun).
  int64_t phases;        // sh · sw
  size_t acc_offset;     // Bytes before the accumulators.
};

Layout layout_of(const QDepthwiseGeometry& g) {
  Layout l;
  const int64_t hpad = g.ih + g.ph + g.pb, wpad = g.iw + g.pw + g.pr;
  l.hp = (hpad + g.sh - 1) / g.sh;
  l.wp = (wpad + g.sw - 1) / g.sw;
  // A tap reads up to (kw − 1)·dw / sw columns past a row's start, so the
  // flattened loop over oh·wp outputs can run that far past the last row.
  l.plane = (l.hp + 1) * l.wp + (g.kw * g.dw) / g.sw + 16;
  l.phases = g.sh * g.sw;
  l.acc_offset = (static_cast<size_t>(l.plane * l.phases) * sizeof(int16_t) + 63) / 64 * 64;
  return l;
}

// The loops the compiler vectorises; restrict pointers because an int8
// store may alias anything. Inlined into a baseline and an AVX2 build, neither
// with FMA, so the requantisation rounds alike (the sums are exact).
// |x − zx| ≤ 255 and |w| ≤ 128, so each product fits int16 (one 16-bit
// multiply per lane); the sum over taps does not, so it widens to int32.
inline __attribute__((always_inline)) void tap(int32_t* __restrict acc,
                                               const int16_t* __restrict src, int64_t n,
                                               int16_t w) {
  for (int64_t i = 0; i < n; ++i) acc[i] += static_cast<int16_t>(w * src[i]);
}

inline __attribute__((always_inline)) void store_row(const int32_t* __restrict acc,
                                                     int8_t* __restrict o, int64_t n, float scale,
                                                     float offset, float lo, float hi, int32_t zy) {
  for (int64_t j = 0; j < n; ++j) {
    o[j] = requantize(static_cast<float>(acc[j]) * scale + offset, lo, hi, zy);
  }
}

inline __attribute__((always_inline)) void deinterleave2(int16_t* __restrict d,
                                                         const int8_t* __restrict src,
                                                         int64_t n, int32_t zx) {
  for (int64_t c = 0; c < n; ++c) d[c] = static_cast<int16_t>(src[2 * c] - zx);
}

inline __attribute__((always_inline)) void plane_body(const QDepthwiseGeometry& g,
                                                      const int8_t* x, int32_t zx,
                                                      const int8_t* w, float scale, float offset,
                                                      float lo, float hi, int32_t zy,
                                                      int8_t* out, void* scratch) {
  const Layout l = layout_of(g);
  auto* phase = static_cast<int16_t*>(scratch);
  auto* acc = reinterpret_cast<int32_t*>(static_cast<uint8_t*>(scratch) + l.acc_offset);
  std::memset(phase, 0, static_cast<size_t>(l.plane * l.phases) * sizeof(int16_t));
  for (int64_t iy = 0; iy < g.ih; ++iy) {
    const int64_t py = iy + g.ph;
    int16_t* base = phase + (py % g.sh) * g.sw * l.plane + (py / g.sh) * l.wp;
    const int8_t* row = x + iy * g.iw;
    if (g.sw == 1) {
      int16_t* d = base + g.pw;
      for (int64_t ix = 0; ix < g.iw; ++ix) d[ix] = static_cast<int16_t>(row[ix] - zx);
    } else {
      // Column phase by column phase: input columns ix ≡ px0 − pw (mod sw)
      // land at consecutive places of phase px0.
      for (int64_t px0 = 0; px0 < g.sw; ++px0) {
        const int64_t first = ((px0 - g.pw) % g.sw + g.sw) % g.sw;
        int16_t* d = base + px0 * l.plane + (first + g.pw) / g.sw;
        const int64_t count = first < g.iw ? (g.iw - first + g.sw - 1) / g.sw : 0;
        const int8_t* src = row + first;
        if (g.sw == 2) {
          deinterleave2(d, src, count, zx);  // a constant stride vectorises
        } else {
          for (int64_t c = 0; c < count; ++c) d[c] = static_cast<int16_t>(src[c * g.sw] - zx);
        }
      }
    }
  }
  const int64_t n = g.oh * l.wp;
  std::memset(acc, 0, static_cast<size_t>(n) * sizeof(int32_t));
  for (int64_t ky = 0; ky < g.kh; ++ky) {
    const int64_t ry = ky * g.dh;
    for (int64_t kx = 0; kx < g.kw; ++kx) {
      const int64_t rx = kx * g.dw;
      const int16_t* src = phase + ((ry % g.sh) * g.sw + rx % g.sw) * l.plane +
                           (ry / g.sh) * l.wp + rx / g.sw;
      tap(acc, src, n, static_cast<int16_t>(w[ky * g.kw + kx]));
    }
  }
  // Requantised in one pass over all rows (short rows would leave the vector
  // loop), into the phase planes' memory, which the taps no longer need.
  auto* q = reinterpret_cast<int8_t*>(phase);
  store_row(acc, q, n, scale, offset, lo, hi, zy);
  for (int64_t oy = 0; oy < g.oh; ++oy) {
    std::memcpy(out + oy * g.ow, q + oy * l.wp, static_cast<size_t>(g.ow));
  }
}

void plane_baseline(const QDepthwiseGeometry& g, const int8_t* x, int32_t zx, const int8_t* w,
                    float scale, float offset, float lo, float hi, int32_t zy, int8_t* out,
                    void* scratch) {
  plane_body(g, x, zx, w, scale, offset, lo, hi, zy, out, scratch);
}

#if EMBER_ISA_X86
__attribute__((target("avx2"))) void plane_avx2(const QDepthwiseGeometry& g, const int8_t* x,
                                                int32_t zx, const int8_t* w, float scale,
                                                float offset, float lo, float hi, int32_t zy,
                                                int8_t* out, void* scratch) {
  plane_body(g, x, zx, w, scale, offset, lo, hi, zy, out, scratch);
}
#endif

}  // namespace

size_t qdepthwise_scratch_bytes(const QDepthwiseGeometry& g) {
  const Layout l = layout_of(g);
  return l.acc_offset + static_cast<size_t>(g.oh * l.wp) * sizeof(int32_t);
}

void qdepthwise_plane(const QDepthwiseGeometry& g, const int8_t* x, int32_t zx, const int8_t* w,
                      float scale, float offset, float lo, float hi, int32_t zy, int8_t* out,
                      void* scratch) {
#if EMBER_ISA_X86
  if (portable::cpu_isa() >= portable::Isa::kAvx2) {
    plane_avx2(g, x, zx, w, scale, offset, lo, hi, zy, out, scratch);
    return;
  }
#endif
  plane_baseline(g, x, zx, w, scale, offset, lo, hi, zy, out, scratch);
}

}  // namespace ember::kernels::quantized
