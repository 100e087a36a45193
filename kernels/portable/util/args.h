// Checks kernels share on their (typed) arguments and the out tensor.
//
// Each helper fails the kernel (through `ctx.fail`) with a message naming the
// argument and returns false, so a kernel writes
//   if (!check_dtype(ctx, out, "out", self.dtype)) return;
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "runtime/core/evalue.h"
#include "runtime/core/tensor.h"
#include "runtime/kernel/kernel_context.h"

namespace ember::kernels::portable {

/// A shape formatted for messages: `ShapeStr(t.shape()).c_str()`; lives until
/// the end of the full expression.
struct ShapeStr {
  char buf[160];
  explicit ShapeStr(std::span<const int32_t> sizes) { format_shape(sizes, buf, sizeof(buf)); }
  explicit ShapeStr(std::span<const int64_t> sizes);
  const char* c_str() const { return buf; }
};

/// Checks a `SymInt[] size` argument (at most kTensorMaxDim sizes, each in
/// [0, 2^31)) and copies it into `shape`. False after failing.
bool size_to_shape(KernelContext& ctx, std::span<const int64_t> size, int32_t* shape);

/// Resizes `out` to `sizes` (rank must match); false after failing with a
/// message giving both shapes.
bool resize_out(KernelContext& ctx, Tensor& out, std::span<const int32_t> sizes);

/// Fails unless `t` has dtype `want`.
bool check_dtype(KernelContext& ctx, const Tensor& t, const char* name, ScalarType want);

/// Fails unless `a` and `b` have the same sizes.
bool check_same_shape(KernelContext& ctx, const Tensor& a, const char* a_name, const Tensor& b,
                      const char* b_name);

/// True when the bytes `a`'s elements can touch and those of `b` overlap
/// (a residual read after the GEMM wrote out must be apart from it).
bool tensors_overlap(const Tensor& a, const Tensor& b);

/// Fails with "<name>: unsupported dtype <dtype>".
void fail_dtype(KernelContext& ctx, const char* name, ScalarType t);

/// Normalises a possibly negative dim into [0, rank); false after failing.
bool normalize_dim(KernelContext& ctx, int64_t dim, int32_t rank, const char* name,
                   int32_t* out);

/// Turns a view's `size` list (one entry may be -1) into sizes for `numel`
/// elements; false after failing with a message naming `name`.
bool infer_view_sizes(KernelContext& ctx, std::span<const int64_t> size, int64_t numel,
                      const char* name, int32_t* out);

}  // namespace ember::kernels::portable
