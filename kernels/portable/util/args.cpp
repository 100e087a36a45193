#include "kernels/portable/util/args.h"

#include <cstdint>
#include <cstdio>

namespace ember::kernels::portable {

ShapeStr::ShapeStr(std::span<const int64_t> sizes) {
  size_t pos = 0;
  buf[0] = '\0';
  auto put = [&](const char* fmt, long long v) {
    if (pos + 1 >= sizeof(buf)) return;
    const int n = std::snprintf(buf + pos, sizeof(buf) - pos, fmt, v);
    if (n > 0) pos += static_cast<size_t>(n);
    if (pos >= sizeof(buf)) pos = sizeof(buf) - 1;
  };
  put("[", 0);
  for (size_t i = 0; i < sizes.size(); ++i) put(i == 0 ? "%lld" : ", %lld", sizes[i]);
  put("]", 0);
}

bool resize_out(KernelContext& ctx, Tensor& out, std::span<const int32_t> sizes) {
  if (static_cast<int32_t>(sizes.size()) != out.dim) {
    ctx.fail(Error::InvalidArgument, "out: has rank %d (shape %s) but the result has shape %s",
             out.dim, ShapeStr(out.shape()).c_str(), ShapeStr(sizes).c_str());
    return false;
  }
  // A failed resize leaves out's shape as it was, so it is formatted only
  // then: this runs on every kernel call.
  const Error err = out.resize(sizes);
  if (err != Error::Ok) {
    ctx.fail(err, "out: has shape %s but the result has shape %s (%s)", ShapeStr(out.shape()).c_str(),
             ShapeStr(sizes).c_str(),
             out.dynamism == TensorShapeDynamism::Static ? "static shape"
                                                         : "exceeds its planned capacity");
    return false;
  }
  return true;
}

bool check_dtype(KernelContext& ctx, const Tensor& t, const char* name, ScalarType want) {
  if (t.dtype != want) {
    ctx.fail(Error::InvalidArgument, "%s: expected dtype %s, got %s", name,
             scalar_type_name(want), scalar_type_name(t.dtype));
    return false;
  }
  return true;
}

bool check_same_shape(KernelContext& ctx, const Tensor& a, const char* a_name, const Tensor& b,
                      const char* b_name) {
  bool same = a.dim == b.dim;
  for (int32_t i = 0; same && i < a.dim; ++i) same = a.sizes[i] == b.sizes[i];
  if (!same) {
    ctx.fail(Error::InvalidArgument, "%s has shape %s but %s has shape %s", a_name,
             ShapeStr(a.shape()).c_str(), b_name, ShapeStr(b.shape()).c_str());
  }
  return same;
}

void fail_dtype(KernelContext& ctx, const char* name, ScalarType t) {
  ctx.fail(Error::InvalidArgument, "%s: unsupported dtype %s", name, scalar_type_name(t));
}

bool normalize_dim(KernelContext& ctx, int64_t dim, int32_t rank, const char* name,
                   int32_t* out) {
  const int64_t r = rank == 0 ? 1 : rank;  // A 0-dim tensor accepts dim 0 and -1.
  if (dim < -r || dim >= r) {
    ctx.fail(Error::InvalidArgument, "%s: dim %lld out of range for rank %d", name,
             static_cast<long long>(dim), rank);
    return false;
  }
  *out = static_cast<int32_t>(dim < 0 ? dim + r : dim);
  return true;
}

bool size_to_shape(KernelContext& ctx, std::span<const int64_t> size, int32_t* shape) {
  if (size.size() > static_cast<size_t>(kTensorMaxDim)) {
    ctx.fail(Error::InvalidArgument, "size: %zu dims exceed the maximum of %d", size.size(),
             kTensorMaxDim);
    return false;
  }
  for (size_t d = 0; d < size.size(); ++d) {
    if (size[d] < 0 || size[d] > INT32_MAX) {
      ctx.fail(Error::InvalidArgument, "size: invalid size %s", ShapeStr(size).c_str());
      return false;
    }
    shape[d] = static_cast<int32_t>(size[d]);
  }
  return true;
}

bool infer_view_sizes(KernelContext& ctx, std::span<const int64_t> size, int64_t numel,
                      const char* name, int32_t* out) {
  if (size.size() > static_cast<size_t>(kTensorMaxDim)) {
    ctx.fail(Error::InvalidArgument, "%s: %zu dims exceed the maximum of %d", name, size.size(),
             kTensorMaxDim);
    return false;
  }
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < size.size(); ++i) {
    if (size[i] == -1 && infer < 0) {
      infer = static_cast<int>(i);
      continue;
    }
    if (size[i] < 0 || size[i] > INT32_MAX) {
      ctx.fail(Error::InvalidArgument, "%s: invalid size %lld at dim %zu of %s", name,
               static_cast<long long>(size[i]), i, ShapeStr(size).c_str());
      return false;
    }
    known *= size[i];
    if (known > (int64_t{1} << 48)) known = int64_t{1} << 48;  // Stays a mismatch, no overflow.
    out[i] = static_cast<int32_t>(size[i]);
  }
  if (infer >= 0) {
    if (known == 0 || numel % known != 0 || numel / known > INT32_MAX) {
      ctx.fail(Error::InvalidArgument, "%s: shape %s is invalid for input of size %lld", name,
               ShapeStr(size).c_str(), static_cast<long long>(numel));
      return false;
    }
    out[infer] = static_cast<int32_t>(numel / known);
    known = numel;
  }
  if (known != numel) {
    ctx.fail(Error::InvalidArgument, "%s: shape %s is invalid for input of size %lld", name,
             ShapeStr(size).c_str(), static_cast<long long>(numel));
    return false;
  }
  return true;
}

namespace {

// The bytes a tensor's elements can touch, as [first, last).
void extent(const Tensor& t, const char** first, const char** last) {
  int64_t span = 0;
  for (int32_t d = 0; d < t.dim; ++d) {
    if (t.sizes[d] == 0) span = -1;
    if (span >= 0) span += (t.sizes[d] - 1) * (t.strides[d] < 0 ? -t.strides[d] : t.strides[d]);
  }
  *first = static_cast<const char*>(t.data);
  *last = *first + (span < 0 ? 0 : (span + 1) * static_cast<int64_t>(element_size(t.dtype)));
}

}  // namespace

bool tensors_overlap(const Tensor& a, const Tensor& b) {
  const char *a0, *a1, *b0, *b1;
  extent(a, &a0, &a1);
  extent(b, &b0, &b1);
  return a0 < b1 && b0 < a1;
}

}  // namespace ember::kernels::portable
