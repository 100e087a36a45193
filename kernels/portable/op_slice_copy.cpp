// Slicing and selecting along one dim, and their scatter inverses.
//
// aten::slice_copy.Tensor_out(Tensor self, int dim=0, SymInt? start=None,
//     SymInt? end=None, SymInt step=1, *, Tensor(a!) out) -> Tensor(a!)
//   args: self, dim, start, end, step, out, out(return). Python slicing:
//   negative start/end count from the end, both clamp to [0, size]; step > 0.
// aten::slice_scatter.out(Tensor self, Tensor src, int dim=0, SymInt? start=None,
//     SymInt? end=None, SymInt step=1, *, Tensor(a!) out) -> Tensor(a!)
//   args: self, src, dim, start, end, step, out, out(return). out = self with
//   the slice replaced by src (whose shape must be the slice's).
// aten::select_copy.int_out(Tensor self, int dim, SymInt index, *,
//     Tensor(a!) out) -> Tensor(a!)
//   args: self, dim, index, out, out(return). Drops `dim`, keeping `index`
//   (negative wraps).
// aten::select_scatter.out(Tensor self, Tensor src, int dim, SymInt index, *,
//     Tensor(a!) out) -> Tensor(a!)
//   args: self, src, dim, index, out, out(return).
// All dtypes; out (and src) must have self's dtype.
#include "kernels/portable/util/args.h"
#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/copy.h"
#include "kernels/portable/util/view.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember::kernels::portable {
namespace {

/// Reads an optional int (None → `fallback`); false after failing.
bool optional_int_arg(KernelContext& ctx, EValue** args, int i, const char* name,
                      int64_t fallback, int64_t* out) {
  if (args[i] != nullptr && args[i]->is_none()) {
    *out = fallback;
    return true;
  }
  return int_arg(ctx, args, i, name, out);
}

struct SliceSpec {
  int32_t dim = 0;
  int64_t start = 0;
  int64_t step = 1;
  int32_t len = 0;
};

/// Parses dim/start/end/step at args[first..first+3] against self.
bool parse_slice(KernelContext& ctx, EValue** args, int first, const Tensor& self,
                 SliceSpec* s) {
  int64_t dim = 0, start = 0, end = 0, step = 1;
  if (!int_arg(ctx, args, first, "dim", &dim) ||
      !optional_int_arg(ctx, args, first + 1, "start", 0, &start) ||
      !optional_int_arg(ctx, args, first + 2, "end", INT64_MAX, &end) ||
      !int_arg(ctx, args, first + 3, "step", &step)) {
    return false;
  }
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

bool parse_select(KernelContext& ctx, EValue** args, int first, const Tensor& self,
                  int32_t* dim, int64_t* index) {
  int64_t d = 0, i = 0;
  if (!int_arg(ctx, args, first, "dim", &d) || !int_arg(ctx, args, first + 1, "index", &i)) {
    return false;
  }
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

void slice_copy_out(KernelContext& ctx, EValue** args) {
  Tensor* self = tensor_arg(ctx, args, 0, "self");
  Tensor* out = self ? tensor_arg(ctx, args, 5, "out") : nullptr;
  if (out == nullptr || !check_operands(ctx, *self, nullptr, *out)) return;
  SliceSpec s;
  if (!parse_slice(ctx, args, 1, *self, &s)) return;
  TensorView v;
  slice_view(*self, s, v);
  if (!resize_out(ctx, *out, v.t.shape())) return;
  if (out->numel == 0) return;
  strided_copy(v.t, v.strides, *out);
}

void slice_scatter_out(KernelContext& ctx, EValue** args) {
  Tensor* self = tensor_arg(ctx, args, 0, "self");
  Tensor* src = self ? tensor_arg(ctx, args, 1, "src") : nullptr;
  Tensor* out = src ? tensor_arg(ctx, args, 6, "out") : nullptr;
  if (out == nullptr || !check_operands(ctx, *self, src, *out)) return;
  SliceSpec s;
  if (!parse_slice(ctx, args, 2, *self, &s)) return;
  if (!resize_out(ctx, *out, self->shape())) return;
  TensorView v;
  slice_view(*out, s, v);
  if (!check_same_shape(ctx, *src, "src", v.t, "the slice")) return;
  if (out->numel == 0) return;
  if (out->data != self->data) strided_copy(*self, self->strides, *out);
  if (v.t.numel > 0) strided_copy(*src, src->strides, v.t);
}

void select_copy_out(KernelContext& ctx, EValue** args) {
  Tensor* self = tensor_arg(ctx, args, 0, "self");
  Tensor* out = self ? tensor_arg(ctx, args, 3, "out") : nullptr;
  if (out == nullptr || !check_operands(ctx, *self, nullptr, *out)) return;
  int32_t dim = 0;
  int64_t index = 0;
  if (!parse_select(ctx, args, 1, *self, &dim, &index)) return;
  TensorView v;
  select_view(*self, dim, index, v);
  if (!resize_out(ctx, *out, v.t.shape())) return;
  if (out->numel == 0) return;
  strided_copy(v.t, v.strides, *out);
}

void select_scatter_out(KernelContext& ctx, EValue** args) {
  Tensor* self = tensor_arg(ctx, args, 0, "self");
  Tensor* src = self ? tensor_arg(ctx, args, 1, "src") : nullptr;
  Tensor* out = src ? tensor_arg(ctx, args, 4, "out") : nullptr;
  if (out == nullptr || !check_operands(ctx, *self, src, *out)) return;
  int32_t dim = 0;
  int64_t index = 0;
  if (!parse_select(ctx, args, 2, *self, &dim, &index)) return;
  if (!resize_out(ctx, *out, self->shape())) return;
  TensorView v;
  select_view(*out, dim, index, v);
  if (!check_same_shape(ctx, *src, "src", v.t, "the selected slice")) return;
  if (out->numel == 0) return;
  if (out->data != self->data) strided_copy(*self, self->strides, *out);
  strided_copy(*src, src->strides, v.t);
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::slice_copy.Tensor_out", slice_copy_out, 7);
EMBER_REGISTER_KERNEL("aten::slice_scatter.out", slice_scatter_out, 8);
EMBER_REGISTER_KERNEL("aten::select_copy.int_out", select_copy_out, 5);
EMBER_REGISTER_KERNEL("aten::select_scatter.out", select_scatter_out, 6);

}  // namespace ember::kernels::portable
