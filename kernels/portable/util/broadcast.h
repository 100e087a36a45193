// Broadcasting and strided iteration shared by the elementwise kernels.
//
// An op over N operands (operand 0 is the output) is described by the output
// sizes and, per operand, strides in elements laid over the output's shape
// (0 on broadcast dims). `for_each_row` coalesces dims that are contiguous for
// every operand, then calls `f(offsets, n, inner_strides)` once per innermost
// row: a contiguous op becomes a single row of numel elements.
#pragma once

#include <cstdint>
#include <span>

#include "runtime/core/tensor.h"

namespace ember::kernels::portable {

/// The broadcast of shapes `a` and `b` (NumPy rules) into `out`/`out_dim`;
/// false when they do not broadcast.
bool broadcast_shapes(std::span<const int32_t> a, std::span<const int32_t> b, int32_t* out,
                      int32_t* out_dim);

/// True when `t` broadcasts to `shape`.
bool broadcastable_to(const Tensor& t, std::span<const int32_t> shape);

/// Strides of `t` seen with `shape` (right-aligned; 0 where `t` is broadcast).
/// `t` must broadcast to `shape`.
void broadcast_strides(const Tensor& t, std::span<const int32_t> shape, int64_t* strides);

/// True when `a` and `b` have equal sizes and strides.
bool same_layout(const Tensor& a, const Tensor& b);

template <int N>
struct StridedLoop {
  int32_t dim = 0;
  int64_t sizes[kTensorMaxDim];
  int64_t strides[N][kTensorMaxDim];

  /// Sets up over `shape` with one stride array per operand.
  void init(std::span<const int32_t> shape, const int64_t* const* operand_strides) {
    // Drop size-1 dims, then merge dim d into d+1 when every operand steps
    // through d exactly as a continuation of d+1.
    dim = 0;
    for (size_t d = 0; d < shape.size(); ++d) {
      if (shape[d] == 1) continue;
      if (dim > 0) {
        bool mergeable = true;
        for (int k = 0; k < N; ++k) {
          mergeable = mergeable && strides[k][dim - 1] == operand_strides[k][d] * shape[d];
        }
        if (mergeable) {
          sizes[dim - 1] *= shape[d];
          for (int k = 0; k < N; ++k) strides[k][dim - 1] = operand_strides[k][d];
          continue;
        }
      }
      sizes[dim] = shape[d];
      for (int k = 0; k < N; ++k) strides[k][dim] = operand_strides[k][d];
      ++dim;
    }
  }

  /// Calls f(const int64_t* offsets, int64_t n, const int64_t* inner_strides)
  /// for each innermost row. Nothing is called when an extent is 0.
  template <typename F>
  void run(F&& f) const {
    int64_t offsets[N] = {};
    int64_t inner[N] = {};
    if (dim == 0) {
      f(offsets, int64_t{1}, inner);
      return;
    }
    for (int32_t d = 0; d < dim; ++d) {
      if (sizes[d] == 0) return;
    }
    for (int k = 0; k < N; ++k) inner[k] = strides[k][dim - 1];
    const int64_t n = sizes[dim - 1];
    int64_t counter[kTensorMaxDim] = {};
    while (true) {
      f(offsets, n, inner);
      // Advance the outer index like an odometer.
      int32_t d = dim - 2;
      for (; d >= 0; --d) {
        ++counter[d];
        for (int k = 0; k < N; ++k) offsets[k] += strides[k][d];
        if (counter[d] < sizes[d]) break;
        for (int k = 0; k < N; ++k) offsets[k] -= strides[k][d] * sizes[d];
        counter[d] = 0;
      }
      if (d < 0) return;
    }
  }

  /// As run, but only over elements [begin, end) of the loop's logical
  /// (row-major) order: the first and last rows may be partial. For
  /// splitting one loop over threads.
  template <typename F>
  void run_slice(int64_t begin, int64_t end, F&& f) const {
    int64_t offsets[N] = {};
    int64_t inner[N] = {};
    if (begin >= end) return;
    if (dim == 0) {
      f(offsets, int64_t{1}, inner);
      return;
    }
    for (int k = 0; k < N; ++k) inner[k] = strides[k][dim - 1];
    const int64_t n = sizes[dim - 1];
    int64_t counter[kTensorMaxDim] = {};
    int64_t row = begin / n;
    int64_t col = begin % n;
    for (int32_t d = dim - 2; d >= 0; --d) {
      counter[d] = row % sizes[d];
      row /= sizes[d];
      for (int k = 0; k < N; ++k) offsets[k] += counter[d] * strides[k][d];
    }
    int64_t remaining = end - begin;
    while (true) {
      const int64_t take = n - col < remaining ? n - col : remaining;
      int64_t at[N];
      for (int k = 0; k < N; ++k) at[k] = offsets[k] + col * inner[k];
      f(at, take, inner);
      remaining -= take;
      if (remaining == 0) return;
      col = 0;
      for (int32_t d = dim - 2; d >= 0; --d) {
        ++counter[d];
        for (int k = 0; k < N; ++k) offsets[k] += strides[k][d];
        if (counter[d] < sizes[d]) break;
        for (int k = 0; k < N; ++k) offsets[k] -= strides[k][d] * sizes[d];
        counter[d] = 0;
      }
    }
  }
};

}  // namespace ember::kernels::portable
