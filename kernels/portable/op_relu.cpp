// aten::relu.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
// Floating and integral dtypes (not bool, as in
// PyTorch); NaN stays NaN.
#include "kernels/portable/util/unary.h"
#include "kernels/generated/functions/portable/op_relu.h"

namespace ember::kernels::portable {
void relu_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  run_unary_op<kRealTypes, false>(ctx, self, out, [](auto x) {
    using T = decltype(x);
    return x < T(0) ? T(0) : x;
  });
}

}  // namespace ember::kernels::portable
