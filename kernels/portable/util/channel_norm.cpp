#include "kernels/portable/util/channel_norm.h"

#include "kernels/portable/util/args.h"

namespace ember::kernels::portable {

bool check_channel_tensor(KernelContext& ctx, const Tensor* t, const char* name, int64_t c) {
  if (t == nullptr) return true;
  if (t->dim != 1 || t->sizes[0] != c) {
    ctx.fail(Error::InvalidArgument, "%s: expected shape [%lld], got %s", name,
             static_cast<long long>(c), ShapeStr(t->shape()).c_str());
    return false;
  }
  if (!is_floating_type(t->dtype)) {
    fail_dtype(ctx, name, t->dtype);
    return false;
  }
  return true;
}

}  // namespace ember::kernels::portable
