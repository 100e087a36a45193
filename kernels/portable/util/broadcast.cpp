#include "kernels/portable/util/broadcast.h"

namespace ember::kernels::portable {

bool broadcast_shapes(std::span<const int32_t> a, std::span<const int32_t> b, int32_t* out,
                      int32_t* out_dim) {
  const size_t n = a.size() > b.size() ? a.size() : b.size();
  if (n > static_cast<size_t>(kTensorMaxDim)) return false;
  for (size_t i = 0; i < n; ++i) {
    // i counts from the right.
    const int32_t sa = i < a.size() ? a[a.size() - 1 - i] : 1;
    const int32_t sb = i < b.size() ? b[b.size() - 1 - i] : 1;
    int32_t s;
    if (sa == sb || sb == 1) {
      s = sa;
    } else if (sa == 1) {
      s = sb;
    } else {
      return false;
    }
    out[n - 1 - i] = s;
  }
  *out_dim = static_cast<int32_t>(n);
  return true;
}

bool broadcastable_to(const Tensor& t, std::span<const int32_t> shape) {
  if (t.dim > static_cast<int32_t>(shape.size())) return false;
  const size_t lead = shape.size() - static_cast<size_t>(t.dim);
  for (int32_t d = 0; d < t.dim; ++d) {
    const int32_t s = t.sizes[d];
    if (s != 1 && s != shape[lead + d]) return false;
  }
  return true;
}

void broadcast_strides(const Tensor& t, std::span<const int32_t> shape, int64_t* strides) {
  const size_t lead = shape.size() - static_cast<size_t>(t.dim);
  for (size_t d = 0; d < shape.size(); ++d) {
    if (d < lead) {
      strides[d] = 0;
    } else {
      const int32_t td = static_cast<int32_t>(d - lead);
      strides[d] = (t.sizes[td] == 1 && shape[d] != 1) ? 0 : t.strides[td];
    }
  }
}

bool same_layout(const Tensor& a, const Tensor& b) {
  if (a.dim != b.dim) return false;
  for (int32_t d = 0; d < a.dim; ++d) {
    if (a.sizes[d] != b.sizes[d]) return false;
    if (a.sizes[d] != 1 && a.strides[d] != b.strides[d]) return false;
  }
  return true;
}

}  // namespace ember::kernels::portable
