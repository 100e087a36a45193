// Elementwise loops over broadcast, strided operands.
//
// The kernel picks the storage type S of the computation (the promoted dtype);
// values are converted to compute_t<S>, combined with `op`, and stored in the
// output's dtype. When every operand already has dtype S the loops use typed
// pointers (and unit-stride rows vectorise); mixed dtypes convert per element.
#pragma once

#include <cstdint>

#include "kernels/portable/util/broadcast.h"
#include "kernels/portable/util/dtype.h"
#include "kernels/portable/util/parallel.h"
#include "runtime/core/tensor.h"

namespace ember::kernels::portable {

/// Runs `body` (a StridedLoop::run callback) over all of `loop`, split over
/// ctx's pool in 64-element-aligned slices when ctx is given and the loop is
/// large. Elementwise only: each element is computed as on one thread.
template <int N, typename Body>
void run_elementwise(KernelContext* ctx, const StridedLoop<N>& loop, int64_t numel,
                     const Body& body) {
  if (ctx == nullptr || numel < 2 * kParallelMinCopyElements) {
    loop.run(body);
    return;
  }
  parallel_range(*ctx, numel, kParallelMinCopyElements, 64,
                 [&](int64_t begin, int64_t end) { loop.run_slice(begin, end, body); });
}

template <typename S>
constexpr ScalarType dtype_of() {
  if constexpr (std::is_same_v<S, float>) return ScalarType::Float;
  else if constexpr (std::is_same_v<S, double>) return ScalarType::Double;
  else if constexpr (std::is_same_v<S, Half>) return ScalarType::Half;
  else if constexpr (std::is_same_v<S, BFloat16>) return ScalarType::BFloat16;
  else if constexpr (std::is_same_v<S, uint8_t>) return ScalarType::Byte;
  else if constexpr (std::is_same_v<S, int8_t>) return ScalarType::Char;
  else if constexpr (std::is_same_v<S, int16_t>) return ScalarType::Short;
  else if constexpr (std::is_same_v<S, int32_t>) return ScalarType::Int;
  else if constexpr (std::is_same_v<S, int64_t>) return ScalarType::Long;
  else {
    // `bool` is a compute type, never storage: typed bool loops use BoolByte.
    static_assert(std::is_same_v<S, BoolByte>, "not a storage type (bool tensors are BoolByte)");
    return ScalarType::Bool;
  }
}

/// out = op(in) elementwise; `in` and `out` have the same sizes (any dim
/// orders). op: compute_t<S> -> compute_t<S>. With ctx, large tensors split
/// over its thread pool (op must then be safe to call concurrently).
template <typename S, typename Op>
void apply_unary(const Tensor& in, Tensor& out, Op op, KernelContext* ctx = nullptr) {
  using CT = compute_t<S>;
  constexpr ScalarType kS = dtype_of<S>();
  const int64_t* strides[2] = {out.strides, in.strides};
  StridedLoop<2> loop;
  loop.init(out.shape(), strides);
  if (in.dtype == kS && out.dtype == kS) {
    S* const o = out.data_ptr<S>();
    const S* const a = in.data_ptr<const S>();
    run_elementwise(ctx, loop, out.numel, [&](const int64_t* off, int64_t n, const int64_t* st) {
      S* po = o + off[0];
      const S* pa = a + off[1];
      if (st[0] == 1 && st[1] == 1) {
        for (int64_t i = 0; i < n; ++i) po[i] = convert<S>(op(convert<CT>(pa[i])));
      } else {
        for (int64_t i = 0; i < n; ++i) {
          po[i * st[0]] = convert<S>(op(convert<CT>(pa[i * st[1]])));
        }
      }
    });
    return;
  }
  loop.run([&](const int64_t* off, int64_t n, const int64_t* st) {
    for (int64_t i = 0; i < n; ++i) {
      const CT v = load_as<CT>(in.data, in.dtype, off[1] + i * st[1]);
      store_as<CT>(out.data, out.dtype, off[0] + i * st[0], op(v));
    }
  });
}

/// out = op(a, b) with a and b broadcast to out's sizes (checked by the
/// caller). op: (compute_t<S>, compute_t<S>) -> compute_t<S>. With ctx,
/// large outputs split over its thread pool.
template <typename S, typename Op>
void apply_binary(const Tensor& a, const Tensor& b, Tensor& out, Op op,
                  KernelContext* ctx = nullptr) {
  using CT = compute_t<S>;
  constexpr ScalarType kS = dtype_of<S>();
  int64_t sa[kTensorMaxDim];
  int64_t sb[kTensorMaxDim];
  broadcast_strides(a, out.shape(), sa);
  broadcast_strides(b, out.shape(), sb);
  const int64_t* strides[3] = {out.strides, sa, sb};
  StridedLoop<3> loop;
  loop.init(out.shape(), strides);
  if (a.dtype == kS && b.dtype == kS && out.dtype == kS) {
    S* const o = out.data_ptr<S>();
    const S* const pa0 = a.data_ptr<const S>();
    const S* const pb0 = b.data_ptr<const S>();
    run_elementwise(ctx, loop, out.numel, [&](const int64_t* off, int64_t n, const int64_t* st) {
      S* po = o + off[0];
      const S* pa = pa0 + off[1];
      const S* pb = pb0 + off[2];
      if (st[0] == 1 && st[1] == 1 && st[2] == 1) {
        for (int64_t i = 0; i < n; ++i) {
          po[i] = convert<S>(op(convert<CT>(pa[i]), convert<CT>(pb[i])));
        }
      } else if (st[0] == 1 && st[1] == 1 && st[2] == 0) {
        const CT bv = convert<CT>(pb[0]);
        for (int64_t i = 0; i < n; ++i) po[i] = convert<S>(op(convert<CT>(pa[i]), bv));
      } else if (st[0] == 1 && st[1] == 0 && st[2] == 1) {
        const CT av = convert<CT>(pa[0]);
        for (int64_t i = 0; i < n; ++i) po[i] = convert<S>(op(av, convert<CT>(pb[i])));
      } else {
        for (int64_t i = 0; i < n; ++i) {
          po[i * st[0]] = convert<S>(op(convert<CT>(pa[i * st[1]]), convert<CT>(pb[i * st[2]])));
        }
      }
    });
    return;
  }
  loop.run([&](const int64_t* off, int64_t n, const int64_t* st) {
    for (int64_t i = 0; i < n; ++i) {
      const CT x = load_as<CT>(a.data, a.dtype, off[1] + i * st[1]);
      const CT y = load_as<CT>(b.data, b.dtype, off[2] + i * st[2]);
      store_as<CT>(out.data, out.dtype, off[0] + i * st[0], op(x, y));
    }
  });
}

}  // namespace ember::kernels::portable
