// Shared by batch norm and group norm: iteration over the spatial positions
// of one (batch, channel) plane of an [N, C, *] tensor, for an input and an
// output that may have different dim orders (e.g. channels-last), and the
// per-channel parameters, statistics and affine map built on it.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/portable/util/broadcast.h"
#include "kernels/portable/util/dtype.h"
#include "kernels/portable/util/reduce.h"
#include "runtime/core/tensor.h"
#include "runtime/kernel/kernel_context.h"

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

/// Fails unless `t` (a per-channel weight, bias or statistic; null for None)
/// is [c] with a floating dtype.
bool check_channel_tensor(KernelContext& ctx, const Tensor* t, const char* name, int64_t c);

/// Element c of a per-channel tensor as double; `fallback` when t is null.
inline double channel_value(const Tensor* t, int64_t c, double fallback) {
  return t == nullptr ? fallback : load_as<double>(t->data, t->dtype, c * t->strides[0]);
}

/// The planes (n, c) with n in [n_begin, n_end) and c in [c_begin, c_end).
struct PlaneBlock {
  int64_t n_begin, n_end, c_begin, c_end;
};

/// Mean and 1 / sqrt(biased variance + eps) of x over `block` (`count`
/// elements) in float64: a sum, then the squared deviations from the mean.
template <typename S>
void block_moments(const Tensor& x, const PlaneLoop& loop, const PlaneBlock& block, double count,
                   double eps, double* mean, double* rstd) {
  const S* xp = x.data_ptr<const S>();
  auto add = [](double p, double q) { return p + q; };
  double sum = 0;
  for (int64_t n = block.n_begin; n < block.n_end; ++n) {
    for (int64_t c = block.c_begin; c < block.c_end; ++c) {
      loop.rows(0, PlaneLoop::in_base(x, n, c),
                [&](int64_t, int64_t io, int64_t m, int64_t, int64_t is) {
                  sum += reduce_row<double>(xp + io, m, is, 0.0, add, add);
                });
    }
  }
  const double mu = sum / count;
  double sq = 0;
  for (int64_t n = block.n_begin; n < block.n_end; ++n) {
    for (int64_t c = block.c_begin; c < block.c_end; ++c) {
      loop.rows(0, PlaneLoop::in_base(x, n, c),
                [&](int64_t, int64_t io, int64_t m, int64_t, int64_t is) {
                  for (int64_t i = 0; i < m; ++i) {
                    const double d = convert<double>(xp[io + i * is]) - mu;
                    sq += d * d;
                  }
                });
    }
  }
  *mean = mu;
  *rstd = 1.0 / std::sqrt(sq / count + eps);
}

/// y = x * scale + shift over plane (n, c), in S's compute type.
template <typename S>
void plane_affine(const Tensor& x, Tensor& y, const PlaneLoop& loop, int64_t n, int64_t c,
                  compute_t<S> scale, compute_t<S> shift) {
  using CT = compute_t<S>;
  const S* xp = x.data_ptr<const S>();
  S* yp = y.data_ptr<S>();
  loop.rows(PlaneLoop::out_base(y, n, c), PlaneLoop::in_base(x, n, c),
            [&](int64_t oo, int64_t io, int64_t m, int64_t os, int64_t is) {
              for (int64_t i = 0; i < m; ++i) {
                yp[oo + i * os] = convert<S>(convert<CT>(xp[io + i * is]) * scale + shift);
              }
            });
}

}  // namespace ember::kernels::portable
