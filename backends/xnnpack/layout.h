// NCHW <-> NHWC for the delegate's boundary: PyTorch programs hold
// activations as NCHW, XNNPACK computes in NHWC.
#pragma once

#include <cstdint>

namespace ember::backends::xnnpack {

/// How a delegate argument's memory meets XNNPACK's value.
enum class ArgumentLayout {
  kAsIs,        // already what XNNPACK reads or writes: bound without a copy
  kConvert,     // NCHW in the program, NHWC inside: staged through a transpose
  kUnreadable,  // no conversion exists for this dim order
};

/// The layout of an argument of `rank` dims in `dim_order` bound to an
/// external value that is NHWC inside when `nchw`. The one rule shared by
/// `execute` and the ahead-of-time check (`check_graph_blob`): contiguous
/// memory is read as is (or converted when `nchw`), channels-last (0,2,3,1)
/// memory only by an `nchw` value, which it already matches.
ArgumentLayout argument_layout(bool nchw, int32_t rank, const uint8_t* dim_order);

/// dst[n][s][c] = src[n][c][s] for `plane` = H*W spatial positions.
void nchw_to_nhwc(const float* src, float* dst, int64_t n, int64_t c, int64_t plane);

/// dst[n][c][s] = src[n][s][c].
void nhwc_to_nchw(const float* src, float* dst, int64_t n, int64_t c, int64_t plane);

}  // namespace ember::backends::xnnpack
