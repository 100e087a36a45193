#include "runtime/core/tensor.h"

#include <cstdio>

namespace ember {

void Tensor::update_strides() {
  int64_t stride = 1;
  for (int32_t i = dim - 1; i >= 0; --i) {
    const int32_t d = dim_order[i];
    strides[d] = stride;
    stride *= sizes[d];
  }
  numel = stride;
}

Error Tensor::resize(std::span<const int32_t> new_sizes) {
  char want[96];
  char have[96];
  EMBER_CHECK_OR_RETURN(static_cast<int32_t>(new_sizes.size()) == dim, Error::InvalidArgument,
                        "resize: rank %zu does not match tensor rank %d", new_sizes.size(), dim);
  bool same = true;
  for (int32_t i = 0; i < dim; ++i) same = same && new_sizes[i] == sizes[i];
  if (same) return Error::Ok;
  EMBER_CHECK_OR_RETURN(dynamism != TensorShapeDynamism::Static, Error::InvalidArgument,
                        "resize: static tensor of shape %s cannot take shape %s",
                        format_shape(shape(), have, sizeof(have)),
                        format_shape(new_sizes, want, sizeof(want)));
  const size_t esize = element_size(dtype);
  const int64_t n = checked_numel(new_sizes, static_cast<int64_t>(capacity_bytes / esize));
  EMBER_CHECK_OR_RETURN(n >= 0, Error::OutOfRange,
                        "resize: shape %s does not fit the %zu bytes planned for this tensor",
                        format_shape(new_sizes, want, sizeof(want)), capacity_bytes);
  for (int32_t i = 0; i < dim; ++i) sizes[i] = new_sizes[i];
  update_strides();
  return Error::Ok;
}

int64_t checked_numel(std::span<const int32_t> sizes, int64_t max_elements) {
  // An empty shape fits any capacity, even 0 bytes (an empty slice planned
  // for [1, 4, 48, 0] resized to [1, 4, 5, 0]), whatever comes before the 0.
  bool empty = false;
  for (int32_t s : sizes) {
    if (s < 0) return -1;
    empty = empty || s == 0;
  }
  if (empty) return 0;
  int64_t n = 1;
  for (int32_t s : sizes) {
    if (n > max_elements / s) return -1;
    n *= s;
  }
  return n <= max_elements ? n : -1;
}

const char* format_shape(std::span<const int32_t> sizes, char* buf, size_t buf_size) {
  size_t pos = 0;
  auto put = [&](const char* fmt, int32_t v) {
    if (pos < buf_size) {
      const int n = std::snprintf(buf + pos, buf_size - pos, fmt, v);
      if (n > 0) pos += static_cast<size_t>(n);
    }
  };
  if (buf_size == 0) return buf;
  buf[0] = '\0';
  if (pos < buf_size) pos += static_cast<size_t>(std::snprintf(buf, buf_size, "["));
  for (size_t i = 0; i < sizes.size(); ++i) put(i == 0 ? "%d" : ", %d", sizes[i]);
  if (pos < buf_size) std::snprintf(buf + pos, buf_size - pos, "]");
  return buf;
}

}  // namespace ember
