// The dim-order copies other exporters of the format write where Ember's
// exporter used to write aten::_to_copy.out / aten::clone.out:
//   dim_order_ops::_to_dim_order_copy.out(Tensor self, *, bool non_blocking=False,
//       int[]? dim_order=None, Tensor(a!) out) -> Tensor(a!)
//   dim_order_ops::_clone_dim_order.out(Tensor self, *, bool non_blocking=False,
//       int[]? dim_order=None, Tensor(a!) out) -> Tensor(a!)
// args: self, non_blocking, dim_order (None or IntList), out, out(return).
// Both copy self into out, whose dim order (fixed in the program) is the
// layout asked for; `dim_order` must name that layout (None: contiguous), so a
// program whose argument disagrees with the out tensor it planned is refused
// (at load_method, and by the kernel itself). _to_dim_order_copy converts to
// out's dtype as _to_copy does; _clone_dim_order keeps the dtype.
#include <cstdio>

#include "kernels/portable/util/args.h"
#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/copy.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember::kernels::portable {
namespace {

constexpr int kSelf = 0, kNonBlocking = 1, kDimOrder = 2, kOut = 3;

// Formats a dim order as "[0, 2, 3, 1]".
template <typename T>
void format_order(const T* order, size_t n, char* buf, size_t size) {
  size_t used = 0;
  used += snprintf(buf + used, size - used, "[");
  for (size_t i = 0; i < n && used < size; ++i) {
    used += snprintf(buf + used, size - used, i ? ", %lld" : "%lld",
                     static_cast<long long>(order[i]));
  }
  if (used < size) snprintf(buf + used, size - used, "]");
}

// True when `dim_order` (None or an IntList) is out's dim order; otherwise
// false with `msg` naming both.
template <size_t N>
bool dim_order_matches(const EValue* dim_order, const Tensor& out, char (&msg)[N]) {
  constexpr size_t size = N;
  if (dim_order == nullptr || !(dim_order->is_none() || dim_order->tag == Tag::IntList)) {
    snprintf(msg, size, "dim_order: expected None or an int list, got %s",
             dim_order ? tag_name(dim_order->tag) : "null");
    return false;
  }
  char want[96];
  char got[96];
  format_order(out.dim_order, static_cast<size_t>(out.dim), got, sizeof(got));
  if (dim_order->is_none()) {
    if (out.is_contiguous_dim_order()) return true;
    snprintf(msg, size, "dim_order is None (contiguous) but out has dim order %s", got);
    return false;
  }
  const std::span<const int64_t> order = dim_order->as_int_list.get();
  bool same = order.size() == static_cast<size_t>(out.dim);
  for (size_t i = 0; same && i < order.size(); ++i) same = order[i] == out.dim_order[i];
  if (same) return true;
  format_order(order.data(), order.size(), want, sizeof(want));
  snprintf(msg, size,
           "dim_order %s disagrees with out's dim order %s: the program must plan out in the "
           "layout it asks for",
           want, got);
  return false;
}

Error dim_order_load_check(EValue* const* args, const bool* constant, size_t num_args) {
  (void)constant;
  (void)num_args;  // The argument count was checked against the signature.
  const EValue* out = args[kOut];
  if (out == nullptr || !out->is_tensor()) return Error::Ok;  // The kernel names it.
  char msg[320];
  if (dim_order_matches(args[kDimOrder], out->to_tensor(), msg)) return Error::Ok;
  return set_error(Error::InvalidProgram, "%s", msg);
}

// The shared body; `same_dtype` for clone.
void dim_order_copy(KernelContext& ctx, EValue** args, bool same_dtype) {
  Tensor* self = tensor_arg(ctx, args, kSelf, "self");
  if (self == nullptr) return;
  bool non_blocking = false;
  if (!bool_arg(ctx, args, kNonBlocking, "non_blocking", &non_blocking)) return;
  Tensor* out = tensor_arg(ctx, args, kOut, "out");
  if (out == nullptr) return;
  char msg[320];
  if (!dim_order_matches(args[kDimOrder], *out, msg)) {
    ctx.fail(Error::InvalidArgument, "%s", msg);
    return;
  }
  if (!check_supported(ctx, *self, "self")) return;
  if (same_dtype ? !check_dtype(ctx, *out, "out", self->dtype) : !check_supported(ctx, *out, "out")) {
    return;
  }
  if (!resize_out(ctx, *out, self->shape())) return;
  strided_copy(*self, self->strides, *out);
}

void to_dim_order_copy_out(KernelContext& ctx, EValue** args) { dim_order_copy(ctx, args, false); }
void clone_dim_order_out(KernelContext& ctx, EValue** args) { dim_order_copy(ctx, args, true); }

}  // namespace

EMBER_REGISTER_KERNEL_WITH_CHECK("dim_order_ops::_to_dim_order_copy.out", to_dim_order_copy_out,
                                 5, dim_order_load_check);
EMBER_REGISTER_KERNEL_WITH_CHECK("dim_order_ops::_clone_dim_order.out", clone_dim_order_out, 5,
                                 dim_order_load_check);

}  // namespace ember::kernels::portable
