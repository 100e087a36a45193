// Run-time assertions on scalars, used for the shape guards the emitter puts
// at the start of a method with dynamic shapes (docs/dynamic-shapes.md).
//
//   aten::_assert_scalar(Scalar self, str assert_msg) -> ()
//       Fails with InvalidArgument and the message when self is false or
//       zero; does nothing otherwise. The method stops there and can run
//       again with the next inputs.
#include "kernels/generated/functions/prim/assert_ops.h"

namespace ember::kernels::prim {

void _assert_scalar(KernelContext& ctx, const EValue& self, std::string_view assert_msg) {
  if (self.scalar_as_double() != 0.0) return;
  ctx.fail(Error::InvalidArgument, "%.*s", static_cast<int>(assert_msg.size()),
           assert_msg.data());
}

}  // namespace ember::kernels::prim
