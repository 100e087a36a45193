// NCHW <-> NHWC for the delegate's boundary: PyTorch programs hold
// activations as NCHW, XNNPACK computes in NHWC.
#pragma once

#include <cstdint>

namespace ember::backends::xnnpack {

/// dst[n][s][c] = src[n][c][s] for `plane` = H*W spatial positions.
void nchw_to_nhwc(const float* src, float* dst, int64_t n, int64_t c, int64_t plane);

/// dst[n][c][s] = src[n][s][c].
void nhwc_to_nchw(const float* src, float* dst, int64_t n, int64_t c, int64_t plane);

}  // namespace ember::backends::xnnpack
