// The dim-order copies other exporters of the format write where Ember's
// exporter used to write aten::_to_copy.out / aten::clone.out:
//   dim_order_ops::_to_dim_order_copy.out(Tensor self, *, bool non_blocking=False,
//       int[]? dim_order=None, Tensor(a!) out) -> Tensor(a!)
//   dim_order_ops::_clone_dim_order.out(Tensor self, *, bool non_blocking=False,
//       int[]? dim_order=None, Tensor(a!) out) -> Tensor(a!)
// Both copy self into out, whose dim order (fixed in the program) is the
// layout asked for; `dim_order` must name that layout (None: contiguous), so a
// program whose argument disagrees with the out tensor it planned is refused
// at load_method (the prepare step). _to_dim_order_copy converts to out's
// dtype as _to_copy does; _clone_dim_order keeps the dtype.
#include <cstdio>

#include "kernels/portable/util/args.h"
#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/copy.h"
#include "kernels/generated/functions/portable/op_dim_order_copy.h"

namespace ember::kernels::portable {
namespace {

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

// Both the argument and out's dim order are fixed by the program: prepare
// refuses a program where `dim_order` (None: contiguous) is not out's dim
// order, naming both.
Error check_dim_order(KernelPrepareContext& ctx, std::optional<IntSpan> dim_order,
                      const Tensor& out) {
  char want[96];
  char got[96];
  format_order(out.dim_order, static_cast<size_t>(out.dim), got, sizeof(got));
  if (!dim_order.has_value()) {
    if (out.is_contiguous_dim_order()) return Error::Ok;
    return ctx.fail(Error::InvalidProgram,
                    "dim_order is None (contiguous) but out has dim order %s", got);
  }
  const IntSpan order = *dim_order;
  bool same = order.size() == static_cast<size_t>(out.dim);
  for (size_t i = 0; same && i < order.size(); ++i) same = order[i] == out.dim_order[i];
  if (same) return Error::Ok;
  format_order(order.data(), order.size(), want, sizeof(want));
  return ctx.fail(Error::InvalidProgram,
                  "dim_order %s disagrees with out's dim order %s: the program must plan out in "
                  "the layout it asks for",
                  want, got);
}

// The shared body (prepare checked dim_order); `same_dtype` for clone.
void dim_order_copy(KernelContext& ctx, const Tensor& self, Tensor& out, bool same_dtype) {
  if (!check_supported(ctx, self, "self")) return;
  if (same_dtype ? !check_dtype(ctx, out, "out", self.dtype) : !check_supported(ctx, out, "out")) {
    return;
  }
  if (!resize_out(ctx, out, self.shape())) return;
  strided_copy(self, self.strides, out);
}

}  // namespace

Error _to_dim_order_copy_out_prepare(KernelPrepareContext& ctx, const Tensor& self,
                                     bool non_blocking, std::optional<IntSpan> dim_order,
                                     Tensor& out) {
  (void)self;
  (void)non_blocking;
  return check_dim_order(ctx, dim_order, out);
}

void _to_dim_order_copy_out(KernelContext& ctx, const Tensor& self, bool non_blocking,
                            std::optional<IntSpan> dim_order, Tensor& out) {
  (void)non_blocking;
  (void)dim_order;
  dim_order_copy(ctx, self, out, false);
}

Error _clone_dim_order_out_prepare(KernelPrepareContext& ctx, const Tensor& self,
                                   bool non_blocking, std::optional<IntSpan> dim_order,
                                   Tensor& out) {
  (void)self;
  (void)non_blocking;
  return check_dim_order(ctx, dim_order, out);
}

void _clone_dim_order_out(KernelContext& ctx, const Tensor& self, bool non_blocking,
                          std::optional<IntSpan> dim_order, Tensor& out) {
  (void)non_blocking;
  (void)dim_order;
  dim_order_copy(ctx, self, out, true);
}

}  // namespace ember::kernels::portable
