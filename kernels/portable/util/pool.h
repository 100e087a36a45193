// Pooling geometry shared by avg/max/adaptive pooling over 2 or 3 spatial
// dims. A 2-D pool is a 3-D pool with depth 1; an unbatched input
// ([C, H, W] or [C, D, H, W]) has batch 1. Offsets come from strides, so any
// dim order (channels-last) works.
#pragma once

#include <cstdint>
#include <optional>

#include "kernels/portable/util/args.h"
#include "runtime/core/tensor.h"
#include "runtime/kernel/kernel_args.h"

namespace ember::kernels::portable {

struct PoolGeometry {
  int32_t nd = 2;  // Spatial dims of the op (2 or 3).
  int64_t batch = 1, channels = 1;
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1};  // Depth, height, width.
  int64_t k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, p[3] = {0, 0, 0}, d[3] = {1, 1, 1};
  int64_t in_n = 0, in_c = 0, in_sp[3] = {0, 0, 0};  // Input strides.

  /// Output strides for the same logical positions.
  int64_t out_n = 0, out_c = 0, out_sp[3] = {0, 0, 0};

  int64_t in_offset(int64_t n, int64_t c) const { return n * in_n + c * in_c; }
  int64_t out_offset(int64_t n, int64_t c) const { return n * out_n + c * out_c; }
};

/// Adaptive pooling's window for output cell o of a dim:
/// [floor(o·in/out), ceil((o+1)·in/out)).
inline int64_t adaptive_start(int64_t o, int64_t out, int64_t in) { return (o * in) / out; }
inline int64_t adaptive_end(int64_t o, int64_t out, int64_t in) {
  return ((o + 1) * in + out - 1) / out;
}

/// Checks input rank (nd+1 or nd+2, non-empty non-batch dims) and fills the
/// input part of `g`. False after failing.
bool pool_input(KernelContext& ctx, const Tensor& input, int32_t nd, PoolGeometry* g);

/// Reads kernel_size / stride / padding / dilation lists of nd or 1 values
/// (an empty stride means the kernel size; no dilation: 1) and computes the
/// output size with eager's rounding (ceil_mode keeps the last window only
/// when it starts inside the input or left padding). False after failing.
bool pool_windows(KernelContext& ctx, IntSpan kernel_size, IntSpan stride, IntSpan padding,
                  std::optional<IntSpan> dilation, bool ceil_mode, PoolGeometry* g);

/// Resizes out to the input's shape with the spatial dims set to g->out and
/// records its strides in g. False after failing.
bool pool_resize_out(KernelContext& ctx, const Tensor& input, Tensor& out, PoolGeometry* g);

/// Output strides of a second output (the indices of max pooling).
void pool_out_strides(const Tensor& input, const Tensor& out, int32_t nd, int64_t* n,
                      int64_t* c, int64_t* sp);

}  // namespace ember::kernels::portable
