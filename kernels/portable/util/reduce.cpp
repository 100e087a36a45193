#include "kernels/portable/util/reduce.h"

namespace ember::kernels::portable {

void reduce_dims_all(int32_t rank, ReduceDims* out) {
  out->rank = rank;
  for (int32_t d = 0; d < kTensorMaxDim; ++d) out->reduced[d] = d < rank;
}

bool reduce_dims_one(KernelContext& ctx, int64_t dim, int32_t rank, const char* name,
                     ReduceDims* out) {
  int32_t d = 0;
  if (!normalize_dim(ctx, dim, rank, name, &d)) return false;
  *out = ReduceDims{};
  out->rank = rank;
  if (rank > 0) out->reduced[d] = true;
  return true;
}

void scan_plan(const Tensor& self, int32_t dim, const Tensor& out, ScanPlan* scan) {
  ReduceDims dims;
  dims.rank = self.dim;
  if (self.dim > 0) dims.reduced[dim] = true;
  scan->plan.init(self, dims, out);
  scan->len = self.dim == 0 ? 1 : self.sizes[dim];
  scan->in_step = self.dim == 0 ? 0 : self.strides[dim];
  scan->out_step = self.dim == 0 ? 0 : out.strides[dim];
}

bool reduce_dims_list(KernelContext& ctx, std::optional<IntSpan> dim, const char* name,
                      int32_t rank, ReduceDims* out) {
  if (!dim.has_value() || dim->empty()) {
    reduce_dims_all(rank, out);
    return true;
  }
  const IntSpan list = *dim;
  *out = ReduceDims{};
  out->rank = rank;
  bool seen_scalar_dim = false;  // A 0-dim tensor's single "dim".
  for (int64_t d64 : list) {
    int32_t d = 0;
    if (!normalize_dim(ctx, d64, rank, name, &d)) return false;
    bool& slot = rank == 0 ? seen_scalar_dim : out->reduced[d];
    if (slot) {
      ctx.fail(Error::InvalidArgument, "%s: dim %d appears multiple times in %s", name, d,
               ShapeStr(list).c_str());
      return false;
    }
    slot = true;
  }
  return true;
}

int32_t reduced_sizes(const Tensor& in, const ReduceDims& dims, bool keepdim, int32_t* sizes) {
  int32_t r = 0;
  for (int32_t d = 0; d < in.dim; ++d) {
    if (!dims.reduced[d]) {
      sizes[r++] = in.sizes[d];
    } else if (keepdim) {
      sizes[r++] = 1;
    }
  }
  return r;
}

bool resize_reduced(KernelContext& ctx, const Tensor& in, const ReduceDims& dims, bool keepdim,
                    Tensor& out) {
  int32_t sizes[kTensorMaxDim];
  const int32_t r = reduced_sizes(in, dims, keepdim, sizes);
  return resize_out(ctx, out, {sizes, static_cast<size_t>(r)});
}

bool check_nonempty_reduction(KernelContext& ctx, const Tensor& in, const ReduceDims& dims,
                              const char* what) {
  if (in.dim == 0) return true;
  for (int32_t d = 0; d < in.dim; ++d) {
    if (dims.reduced[d] && in.sizes[d] == 0) {
      ctx.fail(Error::InvalidArgument,
               "%s: expected reduction dim %d to have non-zero size (input shape %s)", what, d,
               ShapeStr(in.shape()).c_str());
      return false;
    }
  }
  return true;
}

bool optional_dtype(KernelContext& ctx, std::optional<int64_t> value, const char* name,
                    ScalarType* dtype, bool* has) {
  *has = false;
  if (!value.has_value()) return true;
  *dtype = static_cast<ScalarType>(*value);
  if (!is_supported_dtype(*dtype)) {
    ctx.fail(Error::InvalidArgument, "%s: unsupported dtype %lld", name,
             static_cast<long long>(*value));
    return false;
  }
  *has = true;
  return true;
}

void ReducePlan::init(const Tensor& in, const ReduceDims& dims, const Tensor& out) {
  // Kept dims, paired with their output dim.
  int32_t kept_sizes[kTensorMaxDim];
  int64_t kept_out[kTensorMaxDim];
  int64_t kept_in[kTensorMaxDim];
  int32_t nk = 0;
  const bool keepdim = out.dim == in.dim;
  int32_t od = 0;
  red_dim = 0;
  reduce_numel = 1;
  for (int32_t d = 0; d < in.dim; ++d) {
    if (dims.reduced[d]) {
      reduce_numel *= in.sizes[d];
      if (keepdim) ++od;
      if (in.sizes[d] == 1) continue;
      if (red_dim > 0 && red_strides[red_dim - 1] == in.strides[d] * in.sizes[d]) {
        red_sizes[red_dim - 1] *= in.sizes[d];
        red_strides[red_dim - 1] = in.strides[d];
      } else {
        red_sizes[red_dim] = in.sizes[d];
        red_strides[red_dim] = in.strides[d];
        ++red_dim;
      }
      continue;
    }
    kept_sizes[nk] = in.sizes[d];
    kept_in[nk] = in.strides[d];
    kept_out[nk] = out.strides[od];
    ++nk;
    ++od;
  }
  const int64_t* strides[2] = {kept_out, kept_in};
  kept.init({kept_sizes, static_cast<size_t>(nk)}, strides);
}

}  // namespace ember::kernels::portable
