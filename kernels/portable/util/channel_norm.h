// Shared by batch norm and group norm: iteration over the spatial positions
// of one (batch, channel) plane of an [N, C, *] tensor, for an input and an
// output that may have different dim orders (e.g. channels-last).
#pragma once

#include <cstdint>

#include "kernels/portable/util/broadcast.h"
#include "runtime/core/tensor.h"

namespace ember::kernels::portable {

struct PlaneLoop {
  StridedLoop<2> spatial;  // Operand 0: out, operand 1: in; dims 2..
  int64_t hw = 1;          // Spatial positions per plane.

  void init(const Tensor& in, const Tensor& out) {
    const int64_t* strides[2] = {out.strides + 2, in.strides + 2};
    spatial.init({in.sizes + 2, static_cast<size_t>(in.dim - 2)}, strides);
    hw = 1;
    for (int32_t d = 2; d < in.dim; ++d) hw *= in.sizes[d];
  }

  /// Offsets of plane (n, c) in out and in.
  static int64_t out_base(const Tensor& out, int64_t n, int64_t c) {
    return n * out.strides[0] + c * out.strides[1];
  }
  static int64_t in_base(const Tensor& in, int64_t n, int64_t c) {
    return n * in.strides[0] + c * in.strides[1];
  }

  /// f(out_offset, in_offset, count, out_stride, in_stride) per row of the plane.
  template <typename F>
  void rows(int64_t out0, int64_t in0, F&& f) const {
    spatial.run([&](const int64_t* off, int64_t n, const int64_t* st) {
      f(out0 + off[0], in0 + off[1], n, st[0], st[1]);
    });
  }
};

}  // namespace ember::kernels::portable
