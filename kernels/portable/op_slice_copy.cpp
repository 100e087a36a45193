// Slicing and selecting along one dim, and their scatter inverses.
//
// aten::slice_copy.Tensor_out(Tensor self, int dim=0, SymInt? start=None,
//     SymInt? end=None, SymInt step=1, *, Tensor(a!) out) -> Tensor(a!)
//   Python slicing: negative start/end count from the end, both clamp to
//   [0, size]; step > 0.
// aten::slice_scatter.out(Tensor self, Tensor src, int dim=0, SymInt? start=None,
//     SymInt? end=None, SymInt step=1, *, Tensor(a!) out) -> Tensor(a!)
//   out = self with the slice replaced by src (whose shape must be the
//   slice's).
// aten::select_copy.int_out(Tensor self, int dim, SymInt index, *,
//     Tensor(a!) out) -> Tensor(a!)
//   Drops `dim`, keeping `index` (negative wraps).
// aten::select_scatter.out(Tensor self, Tensor src, int dim, SymInt index, *,
//     Tensor(a!) out) -> Tensor(a!)
// All dtypes; out (and src) must have self's dtype.
#include "kernels/portable/util/args.h"
#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/copy.h"
#include "kernels/portable/util/view.h"
#include "kernels/generated/functions/portable/op_slice_copy.h"

namespace ember::kernels::portable {
namespace {

struct SliceSpec {
  int32_t dim = 0;
  int64_t start = 0;
  int64_t step = 1;
  int32_t len = 0;
};

/// Checks dim/start/end/step against self (None start: 0, None end: the
/// size); false after failing.
bool parse_slice(KernelContext& ctx, const Tensor& self, int64_t dim,
                 std::optional<int64_t> start_arg, std::optional<int64_t> end_arg, int64_t step,
                 SliceSpec* s) {
  int64_t start = start_arg.value_or(0);
  int64_t end = end_arg.value_or(INT64_MAX);
  if (self.dim == 0) {
    ctx.fail(Error::InvalidArgument, "self: cannot slice a 0-dim tensor");
    return false;
  }
  if (!normalize_dim(ctx, dim, self.dim, "dim", &s->dim)) return false;
  if (step <= 0) {
    ctx.fail(Error::InvalidArgument, "step: must be positive, got %lld",
             static_cast<long long>(step));
    return false;
  }
  const int64_t size = self.sizes[s->dim];
  if (start < 0) start += size;
  if (end < 0) end += size;
  start = start < 0 ? 0 : (start > size ? size : start);
  end = end < start ? start : (end > size ? size : end);
  s->start = start;
  s->step = step;
  s->len = static_cast<int32_t>((end - start + step - 1) / step);
  return true;
}

/// `v` = the slice of `base` described by `s`.
void slice_view(const Tensor& base, const SliceSpec& s, TensorView& v) {
  for (int32_t d = 0; d < base.dim; ++d) {
    v.sizes[d] = base.sizes[d];
    v.strides[d] = base.strides[d];
  }
  v.sizes[s.dim] = s.len;
  v.strides[s.dim] = base.strides[s.dim] * s.step;
  v.finish(base, base.dim, s.len == 0 ? 0 : s.start * base.strides[s.dim]);
}

/// `v` = `base` with dim `dim` fixed at `index`.
void select_view(const Tensor& base, int32_t dim, int64_t index, TensorView& v) {
  int32_t k = 0;
  for (int32_t d = 0; d < base.dim; ++d) {
    if (d == dim) continue;
    v.sizes[k] = base.sizes[d];
    v.strides[k] = base.strides[d];
    ++k;
  }
  v.finish(base, base.dim - 1, index * base.strides[dim]);
}

/// Checks dim and index against self; false after failing.
bool parse_select(KernelContext& ctx, const Tensor& self, int64_t d, int64_t i, int32_t* dim,
                  int64_t* index) {
  if (self.dim == 0) {
    ctx.fail(Error::InvalidArgument, "self: cannot select from a 0-dim tensor");
    return false;
  }
  if (!normalize_dim(ctx, d, self.dim, "dim", dim)) return false;
  const int64_t size = self.sizes[*dim];
  if (i < -size || i >= size) {
    ctx.fail(Error::InvalidArgument, "index: %lld out of range for self of shape %s at dim %d",
             static_cast<long long>(i), ShapeStr(self.shape()).c_str(), *dim);
    return false;
  }
  *index = i < 0 ? i + size : i;
  return true;
}

/// Common checks: self supported, out (and src) of self's dtype.
bool check_operands(KernelContext& ctx, const Tensor& self, const Tensor* src, const Tensor& out) {
  if (!check_supported(ctx, self, "self")) return false;
  if (src != nullptr && !check_dtype(ctx, *src, "src", self.dtype)) return false;
  return check_dtype(ctx, out, "out", self.dtype);
}

}  // namespace

void slice_copy_Tensor_out(KernelContext& ctx, const Tensor& self, int64_t dim,
                           std::optional<int64_t> start, std::optional<int64_t> end, int64_t step,
                           Tensor& out) {
  if (!check_operands(ctx, self, nullptr, out)) return;
  SliceSpec s;
  if (!parse_slice(ctx, self, dim, start, end, step, &s)) return;
  TensorView v;
  slice_view(self, s, v);
  if (!resize_out(ctx, out, v.t.shape())) return;
  if (out.numel == 0) return;
  strided_copy(v.t, v.strides, out);
}

void slice_scatter_out(KernelContext& ctx, const Tensor& self, const Tensor& src, int64_t dim,
                       std::optional<int64_t> start, std::optional<int64_t> end, int64_t step,
                       Tensor& out) {
  if (!check_operands(ctx, self, &src, out)) return;
  SliceSpec s;
  if (!parse_slice(ctx, self, dim, start, end, step, &s)) return;
  if (!resize_out(ctx, out, self.shape())) return;
  TensorView v;
  slice_view(out, s, v);
  if (!check_same_shape(ctx, src, "src", v.t, "the slice")) return;
  if (out.numel == 0) return;
  if (out.data != self.data) strided_copy(self, self.strides, out);
  if (v.t.numel > 0) strided_copy(src, src.strides, v.t);
}

void select_copy_int_out(KernelContext& ctx, const Tensor& self, int64_t dim, int64_t index,
                         Tensor& out) {
  if (!check_operands(ctx, self, nullptr, out)) return;
  int32_t d = 0;
  int64_t i = 0;
  if (!parse_select(ctx, self, dim, index, &d, &i)) return;
  TensorView v;
  select_view(self, d, i, v);
  if (!resize_out(ctx, out, v.t.shape())) return;
  if (out.numel == 0) return;
  strided_copy(v.t, v.strides, out);
}

void select_scatter_out(KernelContext& ctx, const Tensor& self, const Tensor& src, int64_t dim,
                        int64_t index, Tensor& out) {
  if (!check_operands(ctx, self, &src, out)) return;
  int32_t d = 0;
  int64_t i = 0;
  if (!parse_select(ctx, self, dim, index, &d, &i)) return;
  if (!resize_out(ctx, out, self.shape())) return;
  TensorView v;
  select_view(out, d, i, v);
  if (!check_same_shape(ctx, src, "src", v.t, "the selected slice")) return;
  if (out.numel == 0) return;
  if (out.data != self.data) strided_copy(self, self.strides, out);
  strided_copy(src, src.strides, v.t);
}

}  // namespace ember::kernels::portable
