// aten::div.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
// True division: integral and bool inputs divide in float32 (so out must be
// floating); x/0 gives ±inf or NaN.
#include "kernels/portable/util/binary_driver.h"
#include "kernels/generated/functions/portable/op_div.h"

namespace ember::kernels::portable {

void div_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out) {
  binary_tensor_out<kFloating, true>(ctx, self, other, out, [](auto x, auto y) { return x / y; });
}

}  // namespace ember::kernels::portable
