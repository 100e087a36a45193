// Elementwise loops whose output type differs from the computation type
// (comparisons → bool, where, clamp with tensor bounds), and a ternary loop.
//
// Inputs are read as compute_t<S>, `op` returns a value convertible to
// compute_t<O>, stored in out's dtype. When every dtype matches (inputs S,
// out O) the loops use typed pointers so unit-stride rows vectorise; mixed
// dtypes convert per element through load_as/store_as.
#pragma once

#include <cstdint>

#include "kernels/portable/util/broadcast.h"
#include "kernels/portable/util/dtype.h"
#include "kernels/portable/util/elementwise.h"
#include "runtime/core/tensor.h"

namespace ember::kernels::portable {

/// out = op(in); in and out have the same sizes (any dim orders).
template <typename S, typename O, typename Op>
void apply_unary_to(const Tensor& in, Tensor& out, Op op) {
  using CT = compute_t<S>;
  using CO = compute_t<O>;
  const int64_t* strides[2] = {out.strides, in.strides};
  StridedLoop<2> loop;
  loop.init(out.shape(), strides);
  if (in.dtype == dtype_of<S>() && out.dtype == dtype_of<O>()) {
    O* const o = out.data_ptr<O>();
    const S* const a = in.data_ptr<const S>();
    loop.run([&](const int64_t* off, int64_t n, const int64_t* st) {
      O* po = o + off[0];
      const S* pa = a + off[1];
      if (st[0] == 1 && st[1] == 1) {
        for (int64_t i = 0; i < n; ++i) po[i] = convert<O>(static_cast<CO>(op(convert<CT>(pa[i]))));
      } else {
        for (int64_t i = 0; i < n; ++i) {
          po[i * st[0]] = convert<O>(static_cast<CO>(op(convert<CT>(pa[i * st[1]]))));
        }
      }
    });
    return;
  }
  loop.run([&](const int64_t* off, int64_t n, const int64_t* st) {
    for (int64_t i = 0; i < n; ++i) {
      const CT v = load_as<CT>(in.data, in.dtype, off[1] + i * st[1]);
      store_as<CO>(out.data, out.dtype, off[0] + i * st[0], static_cast<CO>(op(v)));
    }
  });
}

/// out = op(a, b) with a and b broadcast to out's sizes (checked by the caller).
template <typename S, typename O, typename Op>
void apply_binary_to(const Tensor& a, const Tensor& b, Tensor& out, Op op) {
  using CT = compute_t<S>;
  using CO = compute_t<O>;
  int64_t sa[kTensorMaxDim];
  int64_t sb[kTensorMaxDim];
  broadcast_strides(a, out.shape(), sa);
  broadcast_strides(b, out.shape(), sb);
  const int64_t* strides[3] = {out.strides, sa, sb};
  StridedLoop<3> loop;
  loop.init(out.shape(), strides);
  constexpr ScalarType kS = dtype_of<S>();
  if (a.dtype == kS && b.dtype == kS && out.dtype == dtype_of<O>()) {
    O* const o = out.data_ptr<O>();
    const S* const pa0 = a.data_ptr<const S>();
    const S* const pb0 = b.data_ptr<const S>();
    loop.run([&](const int64_t* off, int64_t n, const int64_t* st) {
      O* po = o + off[0];
      const S* pa = pa0 + off[1];
      const S* pb = pb0 + off[2];
      if (st[0] == 1 && st[1] == 1 && st[2] == 1) {
        for (int64_t i = 0; i < n; ++i) {
          po[i] = convert<O>(static_cast<CO>(op(convert<CT>(pa[i]), convert<CT>(pb[i]))));
        }
      } else if (st[0] == 1 && st[1] == 1 && st[2] == 0) {
        const CT bv = convert<CT>(pb[0]);
        for (int64_t i = 0; i < n; ++i) {
          po[i] = convert<O>(static_cast<CO>(op(convert<CT>(pa[i]), bv)));
        }
      } else {
        for (int64_t i = 0; i < n; ++i) {
          po[i * st[0]] = convert<O>(
              static_cast<CO>(op(convert<CT>(pa[i * st[1]]), convert<CT>(pb[i * st[2]]))));
        }
      }
    });
    return;
  }
  loop.run([&](const int64_t* off, int64_t n, const int64_t* st) {
    for (int64_t i = 0; i < n; ++i) {
      const CT x = load_as<CT>(a.data, a.dtype, off[1] + i * st[1]);
      const CT y = load_as<CT>(b.data, b.dtype, off[2] + i * st[2]);
      store_as<CO>(out.data, out.dtype, off[0] + i * st[0], static_cast<CO>(op(x, y)));
    }
  });
}

/// out = op(c, x, y) with c read as compute_t<C>, x and y as compute_t<S>,
/// all three broadcast to out's sizes (checked by the caller).
template <typename C, typename S, typename Op>
void apply_ternary(const Tensor& c, const Tensor& x, const Tensor& y, Tensor& out, Op op) {
  using CC = compute_t<C>;
  using CT = compute_t<S>;
  int64_t sc[kTensorMaxDim];
  int64_t sx[kTensorMaxDim];
  int64_t sy[kTensorMaxDim];
  broadcast_strides(c, out.shape(), sc);
  broadcast_strides(x, out.shape(), sx);
  broadcast_strides(y, out.shape(), sy);
  const int64_t* strides[4] = {out.strides, sc, sx, sy};
  StridedLoop<4> loop;
  loop.init(out.shape(), strides);
  constexpr ScalarType kS = dtype_of<S>();
  if (c.dtype == dtype_of<C>() && x.dtype == kS && y.dtype == kS && out.dtype == kS) {
    S* const o = out.data_ptr<S>();
    const C* const pc0 = c.data_ptr<const C>();
    const S* const px0 = x.data_ptr<const S>();
    const S* const py0 = y.data_ptr<const S>();
    loop.run([&](const int64_t* off, int64_t n, const int64_t* st) {
      S* po = o + off[0];
      const C* pc = pc0 + off[1];
      const S* px = px0 + off[2];
      const S* py = py0 + off[3];
      if (st[0] == 1 && st[1] == 1 && st[2] == 1 && st[3] == 1) {
        for (int64_t i = 0; i < n; ++i) {
          po[i] = convert<S>(
              static_cast<CT>(op(convert<CC>(pc[i]), convert<CT>(px[i]), convert<CT>(py[i]))));
        }
      } else {
        for (int64_t i = 0; i < n; ++i) {
          po[i * st[0]] = convert<S>(static_cast<CT>(op(convert<CC>(pc[i * st[1]]),
                                                        convert<CT>(px[i * st[2]]),
                                                        convert<CT>(py[i * st[3]]))));
        }
      }
    });
    return;
  }
  loop.run([&](const int64_t* off, int64_t n, const int64_t* st) {
    for (int64_t i = 0; i < n; ++i) {
      const CC cv = load_as<CC>(c.data, c.dtype, off[1] + i * st[1]);
      const CT xv = load_as<CT>(x.data, x.dtype, off[2] + i * st[2]);
      const CT yv = load_as<CT>(y.data, y.dtype, off[3] + i * st[3]);
      store_as<CT>(out.data, out.dtype, off[0] + i * st[0], static_cast<CT>(op(cv, xv, yv)));
    }
  });
}

}  // namespace ember::kernels::portable
