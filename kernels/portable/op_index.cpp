// Advanced indexing: reading and writing `self[indices]`.
//
// aten::index.Tensor_out(Tensor self, Tensor?[] indices, *, Tensor(a!) out) -> Tensor(a!)
//   out = self[indices] (see util/advanced_index.h for the indexing rules).
//   With a mask the result size depends on the data: out must be dynamically
//   bounded with room for it.
// aten::index_put.out(Tensor self, Tensor?[] indices, Tensor values,
//     bool accumulate=False, *, Tensor(a!) out) -> Tensor(a!)
//   out = self, then out[indices] = values (broadcast to the indexed shape),
//   or += with accumulate (repeated indices add up; without it the last write
//   wins).
// All dtypes; out and values must have self's dtype. An index out of range
// fails the kernel naming the index and dim.
#include "kernels/portable/util/advanced_index.h"
#include "kernels/portable/util/args.h"
#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/broadcast.h"
#include "kernels/portable/util/copy.h"
#include "kernels/portable/util/view.h"
#include "kernels/generated/functions/portable/op_index.h"

namespace ember::kernels::portable {

void index_Tensor_out(KernelContext& ctx, const Tensor& self, TensorList indices, Tensor& out) {
  if (!check_supported(ctx, self, "self") || !check_dtype(ctx, out, "out", self.dtype)) return;
  AdvancedIndex plan;
  if (!plan.init(ctx, self, indices, "indices")) return;
  if (!resize_out(ctx, out, plan.shape())) return;
  if (out.numel == 0) return;
  dispatch_element_size(self.dtype, [&](auto tag) {
    using U = typename decltype(tag)::type;
    const U* s = self.data_ptr<U>();
    U* o = out.data_ptr<U>();
    for_each_index(plan.shape(), [&](const int32_t* idx) {
      int64_t off = 0;
      if (!plan.offset(ctx, idx, self.strides, "indices", &off)) return false;
      o[offset_of(idx, out.strides, out.dim)] = s[off];
      return true;
    });
  });
}

void index_put_out(KernelContext& ctx, const Tensor& self, TensorList indices,
                   const Tensor& values, bool accumulate, Tensor& out) {
  if (!check_supported(ctx, self, "self") || !check_dtype(ctx, values, "values", self.dtype) ||
      !check_dtype(ctx, out, "out", self.dtype)) {
    return;
  }
  AdvancedIndex plan;
  if (!plan.init(ctx, self, indices, "indices")) return;
  EMBER_KERNEL_CHECK(ctx, broadcastable_to(values, plan.shape()),
                     "values: shape %s does not broadcast to the indexed shape %s",
                     ShapeStr(values.shape()).c_str(), ShapeStr(plan.shape()).c_str());
  if (!resize_out(ctx, out, self.shape())) return;
  if (out.numel == 0) return;
  if (out.data != self.data) strided_copy(self, self.strides, out);
  int64_t vstrides[kTensorMaxDim];
  broadcast_strides(values, plan.shape(), vstrides);
  const int32_t rdim = plan.result_dim;
  (void)dispatch_dtype<kAllTypes>(self.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    const S* v = values.data_ptr<S>();
    S* o = out.data_ptr<S>();
    for_each_index(plan.shape(), [&](const int32_t* idx) {
      int64_t off = 0;
      if (!plan.offset(ctx, idx, out.strides, "indices", &off)) return false;
      const S x = v[offset_of(idx, vstrides, rdim)];
      if (accumulate) {
        using CT = compute_t<S>;
        o[off] = convert<S>(wrap_add(convert<CT>(o[off]), convert<CT>(x)));
      } else {
        o[off] = x;
      }
      return true;
    });
  });
}

}  // namespace ember::kernels::portable
