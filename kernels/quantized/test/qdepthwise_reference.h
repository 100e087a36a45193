// The direct loop the depthwise tests (qdepthwise_test.cpp,
// qdepthwise_blocked_test.cpp) hold their kernels to, and the geometry of
// their cases: exact int32 sums, then the kernels' requantisation (the
// product and the sum rounded apart, as requantize() with no FMA).
#pragma once

#include <cstdint>
#include <string>

#include "kernels/quantized/util/qdepthwise.h"
#include "kernels/quantized/util/qparams.h"

namespace ember::kernels::quantized {

struct DepthwiseCase {
  int64_t ih, iw, kh, kw, sh, sw, ph, pw, pb, pr, dh, dw;
};

/// The case's geometry, with its output size.
inline QDepthwiseGeometry geometry_of(const DepthwiseCase& c) {
  QDepthwiseGeometry g{c.ih, c.iw, c.kh, c.kw, 0, 0, c.sh, c.sw, c.ph, c.pw, c.dh, c.dw,
                       c.pb, c.pr};
  g.oh = (c.ih + c.ph + c.pb - c.dh * (c.kh - 1) - 1) / c.sh + 1;
  g.ow = (c.iw + c.pw + c.pr - c.dw * (c.kw - 1) - 1) / c.sw + 1;
  return g;
}

inline std::string describe(const DepthwiseCase& c) {
  return "plane " + std::to_string(c.ih) + "x" + std::to_string(c.iw) + " kernel " +
         std::to_string(c.kh) + "x" + std::to_string(c.kw) + " stride " + std::to_string(c.sh) +
         "," + std::to_string(c.sw);
}

/// out (g.oh × g.ow) of one plane x (ih × iw) with weights w (kh × kw).
inline void direct_depthwise(const QDepthwiseGeometry& g, const int8_t* x, const int8_t* w,
                             int32_t zx, float scale, float offset, float lo, float hi, int32_t zy,
                             int8_t* out) {
  for (int64_t oy = 0; oy < g.oh; ++oy) {
    for (int64_t ox = 0; ox < g.ow; ++ox) {
      int32_t acc = 0;
      for (int64_t ky = 0; ky < g.kh; ++ky) {
        for (int64_t kx = 0; kx < g.kw; ++kx) {
          const int64_t iy = oy * g.sh - g.ph + ky * g.dh, ix = ox * g.sw - g.pw + kx * g.dw;
          if (iy < 0 || iy >= g.ih || ix < 0 || ix >= g.iw) continue;
          acc += w[ky * g.kw + kx] * (x[iy * g.iw + ix] - zx);
        }
      }
      out[oy * g.ow + ox] = requantize(static_cast<float>(acc) * scale + offset, lo, hi, zy);
    }
  }
}

}  // namespace ember::kernels::quantized
