// Prim ops that read sizes or values out of tensors, or alias/copy them.
//
//   aten::sym_size.int(Tensor self, int dim) -> SymInt
//       Writes Int self.size(dim) (dim may be negative).
//   aten::sym_numel(Tensor self) -> SymInt
//       Writes Int numel.
//   aten::_local_scalar_dense(Tensor self) -> Scalar
//       self holds exactly one element; writes Double for floating dtypes,
//       Int for integral, Bool for bool.
//   executorch_prim::et_view.default(Tensor self, SymInt[] size) -> Tensor
//       Makes out (the return value) alias self's data with sizes `size` (one
//       entry may be -1); no copy. self and out must have the same dtype and
//       the contiguous dim order.
//   executorch_prim::et_copy_index.tensor(Tensor(a!) copy_to, Tensor copy_from,
//       SymInt index) -> ()
//       Copies copy_from into copy_to[index] along dim 0; a dynamically shaped
//       copy_to grows dim 0 to index + 1 when needed (within its planned
//       capacity).
#include "kernels/portable/util/args.h"
#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/copy.h"
#include "kernels/generated/functions/prim/tensor_ops.h"

namespace ember::kernels::prim {
namespace {
using portable::ShapeStr;
}  // namespace

void sym_size_int(KernelContext& ctx, const Tensor& self, int64_t dim, EValue& result) {
  EMBER_KERNEL_CHECK(ctx, self.dim > 0, "self: a 0-dim tensor has no sizes");
  int32_t d = 0;
  if (!portable::normalize_dim(ctx, dim, self.dim, "dim", &d)) return;
  result.tag = Tag::Int;
  result.as_int = self.sizes[d];
}

void sym_numel(KernelContext&, const Tensor& self, EValue& result) {
  result.tag = Tag::Int;
  result.as_int = self.numel;
}

void _local_scalar_dense(KernelContext& ctx, const Tensor& self, EValue& result) {
  EMBER_KERNEL_CHECK(ctx, self.numel == 1, "self: expected one element, got shape %s",
                     ShapeStr(self.shape()).c_str());
  if (!portable::check_supported(ctx, self, "self")) return;
  if (self.dtype == ScalarType::Bool) {
    result.tag = Tag::Bool;
    result.as_bool = portable::load_as<bool>(self.data, self.dtype, 0);
  } else if (is_floating_type(self.dtype)) {
    result.tag = Tag::Double;
    result.as_double = portable::load_as<double>(self.data, self.dtype, 0);
  } else {
    result.tag = Tag::Int;
    result.as_int = portable::load_as<int64_t>(self.data, self.dtype, 0);
  }
}

void et_view(KernelContext& ctx, const Tensor& self, IntSpan size, Tensor& out) {
  if (!portable::check_dtype(ctx, out, "out", self.dtype)) return;
  EMBER_KERNEL_CHECK(ctx, self.is_contiguous_dim_order(),
                     "self: a view needs the contiguous dim order");
  EMBER_KERNEL_CHECK(ctx, out.is_contiguous_dim_order(),
                     "out: a view needs the contiguous dim order");
  int32_t shape[kTensorMaxDim];
  if (!portable::infer_view_sizes(ctx, size, self.numel, "size", shape)) return;
  // out's memory is self's: its capacity is what self has.
  const size_t self_bytes = self.capacity_bytes > self.nbytes() ? self.capacity_bytes
                                                                 : self.nbytes();
  out.capacity_bytes = self_bytes;
  if (!portable::resize_out(ctx, out, {shape, size.size()})) return;
  out.data = self.data;
}

void et_copy_index_tensor(KernelContext& ctx, Tensor& copy_to, const Tensor& copy_from,
                          int64_t index) {
  if (!portable::check_supported(ctx, copy_from, "copy_from") ||
      !portable::check_dtype(ctx, copy_to, "copy_to", copy_from.dtype)) {
    return;
  }
  bool same = copy_to.dim == copy_from.dim + 1;
  for (int32_t d = 0; same && d < copy_from.dim; ++d) {
    same = copy_to.sizes[d + 1] == copy_from.sizes[d];
  }
  EMBER_KERNEL_CHECK(ctx, same, "copy_to of shape %s cannot hold copy_from of shape %s per index",
                     ShapeStr(copy_to.shape()).c_str(), ShapeStr(copy_from.shape()).c_str());
  EMBER_KERNEL_CHECK(ctx, index >= 0 && index < INT32_MAX, "index: %lld is negative",
                     static_cast<long long>(index));
  if (index >= copy_to.sizes[0]) {
    int32_t grown[kTensorMaxDim];
    for (int32_t d = 0; d < copy_to.dim; ++d) grown[d] = copy_to.sizes[d];
    grown[0] = static_cast<int32_t>(index + 1);
    const Error err = copy_to.resize({grown, static_cast<size_t>(copy_to.dim)});
    if (err != Error::Ok) {
      ctx.fail(err, "index: %lld is out of range for copy_to of shape %s",
               static_cast<long long>(index), ShapeStr(copy_to.shape()).c_str());
      return;
    }
  }
  // A view of copy_to[index] with copy_to's strides.
  Tensor slot = copy_to;
  slot.dim = copy_to.dim - 1;
  slot.sizes = copy_to.sizes + 1;
  slot.strides = copy_to.strides + 1;
  slot.numel = copy_from.numel;
  slot.data = static_cast<char*>(copy_to.data) +
              index * copy_to.strides[0] * static_cast<int64_t>(element_size(copy_to.dtype));
  portable::strided_copy(copy_from, copy_from.strides, slot);
}

}  // namespace ember::kernels::prim
