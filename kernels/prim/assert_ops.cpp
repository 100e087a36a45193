// Run-time assertions on scalars, used for the shape guards the emitter puts
// at the start of a method with dynamic shapes (docs/dynamic-shapes.md).
//
//   aten::_assert_scalar(Scalar self, str assert_msg) -> ()
//       args: self, assert_msg (no return slot). Fails with InvalidArgument
//       and the message when self is false or zero; does nothing otherwise.
//       The method stops there and can run again with the next inputs.
#include "runtime/kernel/kernel_registry.h"

namespace ember::kernels::prim {
namespace {

void assert_scalar(KernelContext& ctx, EValue** args) {
  const EValue* self = args[0];
  if (self == nullptr || !self->is_scalar()) {
    ctx.fail(Error::InvalidArgument, "self must be an Int, Double or Bool, got %s",
             self ? tag_name(self->tag) : "null");
    return;
  }
  if (self->scalar_as_double() != 0.0) return;
  const EValue* msg = args[1];
  if (msg != nullptr && msg->tag == Tag::String) {
    ctx.fail(Error::InvalidArgument, "%.*s", static_cast<int>(msg->as_string.size()),
             msg->as_string.data());
  } else {
    ctx.fail(Error::InvalidArgument, "assertion failed");
  }
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::_assert_scalar", assert_scalar, 2);

}  // namespace ember::kernels::prim
