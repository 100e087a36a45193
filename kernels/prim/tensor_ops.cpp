// Prim ops that read sizes or values out of tensors, or alias/copy them.
//
//   aten::sym_size.int(Tensor self, int dim) -> SymInt
//       args: self, dim, out(value). Writes Int self.size(dim) (dim may be negative).
//   aten::sym_numel(Tensor self) -> SymInt
//       args: self, out(value). Writes Int numel.
//   aten::_local_scalar_dense(Tensor self) -> Scalar
//       args: self, out(value). self holds exactly one element; writes Double
//       for floating dtypes, Int for integral, Bool for bool.
//   executorch_prim::et_view.default(Tensor self, SymInt[] size) -> Tensor
//       args: self, size, out(tensor). Makes out alias self's data with sizes
//       `size` (one entry may be -1); no copy. self and out must have the same
//       dtype and the contiguous dim order.
//   executorch_prim::et_copy_index.tensor(Tensor(a!) copy_to, Tensor copy_from,
//       SymInt index) -> ()
//       args: copy_to, copy_from, index (no return slot). Copies copy_from into
//       copy_to[index] along dim 0; a dynamically shaped copy_to grows dim 0 to
//       index + 1 when needed (within its planned capacity).
#include "kernels/portable/util/args.h"
#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/copy.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember::kernels::prim {
namespace {

using portable::ShapeStr;

void sym_size_int(KernelContext& ctx, EValue** args) {
  Tensor* self = portable::tensor_arg(ctx, args, 0, "self");
  if (self == nullptr) return;
  int64_t dim = 0;
  if (!portable::int_arg(ctx, args, 1, "dim", &dim)) return;
  EMBER_KERNEL_CHECK(ctx, self->dim > 0, "self: a 0-dim tensor has no sizes");
  int32_t d = 0;
  if (!portable::normalize_dim(ctx, dim, self->dim, "dim", &d)) return;
  args[2]->tag = Tag::Int;
  args[2]->as_int = self->sizes[d];
}

void sym_numel(KernelContext& ctx, EValue** args) {
  Tensor* self = portable::tensor_arg(ctx, args, 0, "self");
  if (self == nullptr) return;
  args[1]->tag = Tag::Int;
  args[1]->as_int = self->numel;
}

void local_scalar_dense(KernelContext& ctx, EValue** args) {
  Tensor* self = portable::tensor_arg(ctx, args, 0, "self");
  if (self == nullptr) return;
  EMBER_KERNEL_CHECK(ctx, self->numel == 1, "self: expected one element, got shape %s",
                     ShapeStr(self->shape()).c_str());
  if (!portable::check_supported(ctx, *self, "self")) return;
  EValue* out = args[1];
  if (self->dtype == ScalarType::Bool) {
    out->tag = Tag::Bool;
    out->as_bool = portable::load_as<bool>(self->data, self->dtype, 0);
  } else if (is_floating_type(self->dtype)) {
    out->tag = Tag::Double;
    out->as_double = portable::load_as<double>(self->data, self->dtype, 0);
  } else {
    out->tag = Tag::Int;
    out->as_int = portable::load_as<int64_t>(self->data, self->dtype, 0);
  }
}

void et_view(KernelContext& ctx, EValue** args) {
  Tensor* self = portable::tensor_arg(ctx, args, 0, "self");
  if (self == nullptr) return;
  std::span<const int64_t> size;
  if (!portable::int_list_arg(ctx, args, 1, "size", &size)) return;
  Tensor* out = portable::tensor_arg(ctx, args, 2, "out");
  if (out == nullptr) return;
  if (!portable::check_dtype(ctx, *out, "out", self->dtype)) return;
  EMBER_KERNEL_CHECK(ctx, self->is_contiguous_dim_order(),
                     "self: a view needs the contiguous dim order");
  EMBER_KERNEL_CHECK(ctx, out->is_contiguous_dim_order(),
                     "out: a view needs the contiguous dim order");
  int32_t shape[kTensorMaxDim];
  if (!portable::infer_view_sizes(ctx, size, self->numel, "size", shape)) return;
  // out's memory is self's: its capacity is what self has.
  const size_t self_bytes = self->capacity_bytes > self->nbytes() ? self->capacity_bytes
                                                                   : self->nbytes();
  out->capacity_bytes = self_bytes;
  if (!portable::resize_out(ctx, *out, {shape, size.size()})) return;
  out->data = self->data;
}

void et_copy_index(KernelContext& ctx, EValue** args) {
  Tensor* copy_to = portable::tensor_arg(ctx, args, 0, "copy_to");
  if (copy_to == nullptr) return;
  Tensor* copy_from = portable::tensor_arg(ctx, args, 1, "copy_from");
  if (copy_from == nullptr) return;
  int64_t index = 0;
  if (!portable::int_arg(ctx, args, 2, "index", &index)) return;
  if (!portable::check_supported(ctx, *copy_from, "copy_from") ||
      !portable::check_dtype(ctx, *copy_to, "copy_to", copy_from->dtype)) {
    return;
  }
  bool same = copy_to->dim == copy_from->dim + 1;
  for (int32_t d = 0; same && d < copy_from->dim; ++d) {
    same = copy_to->sizes[d + 1] == copy_from->sizes[d];
  }
  EMBER_KERNEL_CHECK(ctx, same, "copy_to of shape %s cannot hold copy_from of shape %s per index",
                     ShapeStr(copy_to->shape()).c_str(), ShapeStr(copy_from->shape()).c_str());
  EMBER_KERNEL_CHECK(ctx, index >= 0 && index < INT32_MAX, "index: %lld is negative",
                     static_cast<long long>(index));
  if (index >= copy_to->sizes[0]) {
    int32_t grown[kTensorMaxDim];
    for (int32_t d = 0; d < copy_to->dim; ++d) grown[d] = copy_to->sizes[d];
    grown[0] = static_cast<int32_t>(index + 1);
    const Error err = copy_to->resize({grown, static_cast<size_t>(copy_to->dim)});
    if (err != Error::Ok) {
      ctx.fail(err, "index: %lld is out of range for copy_to of shape %s",
               static_cast<long long>(index), ShapeStr(copy_to->shape()).c_str());
      return;
    }
  }
  // A view of copy_to[index] with copy_to's strides.
  Tensor slot = *copy_to;
  slot.dim = copy_to->dim - 1;
  slot.sizes = copy_to->sizes + 1;
  slot.strides = copy_to->strides + 1;
  slot.numel = copy_from->numel;
  slot.data = static_cast<char*>(copy_to->data) +
              index * copy_to->strides[0] * static_cast<int64_t>(element_size(copy_to->dtype));
  portable::strided_copy(*copy_from, copy_from->strides, slot);
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::sym_size.int", sym_size_int, 3);
EMBER_REGISTER_KERNEL("aten::sym_numel", sym_numel, 2);
EMBER_REGISTER_KERNEL("aten::_local_scalar_dense", local_scalar_dense, 2);
EMBER_REGISTER_KERNEL("executorch_prim::et_view.default", et_view, 3);
EMBER_REGISTER_KERNEL("executorch_prim::et_copy_index.tensor", et_copy_index, 3);

}  // namespace ember::kernels::prim
