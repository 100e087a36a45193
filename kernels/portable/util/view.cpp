#include "kernels/portable/util/view.h"

#include "kernels/portable/util/binary.h"

namespace ember::kernels::portable {

bool check_view_copy_args(KernelContext& ctx, const Tensor& self, const Tensor& out) {
  return check_supported(ctx, self, "self") && check_dtype(ctx, out, "out", self.dtype);
}

bool check_index_dtype(KernelContext& ctx, const Tensor& index, const char* name) {
  if (index.dtype != ScalarType::Long && index.dtype != ScalarType::Int) {
    ctx.fail(Error::InvalidArgument, "%s: expected dtype int64 or int32, got %s", name,
             scalar_type_name(index.dtype));
    return false;
  }
  return true;
}

bool checked_index(KernelContext& ctx, int64_t value, int64_t size, int32_t dim, bool wrap,
                   const char* name, int64_t* out) {
  const int64_t v = (wrap && value < 0) ? value + size : value;
  if (v < 0 || v >= size) {
    ctx.fail(Error::InvalidArgument, "%s: index %lld is out of bounds for dim %d with size %lld",
             name, static_cast<long long>(value), dim, static_cast<long long>(size));
    return false;
  }
  *out = v;
  return true;
}

}  // namespace ember::kernels::portable
