#include "kernels/portable/util/pool.h"

namespace ember::kernels::portable {
namespace {

bool read_list(KernelContext& ctx, IntSpan list, const char* name, int32_t nd,
               const int64_t* fallback, int64_t min_value, int64_t* out) {
  if (list.empty() && fallback != nullptr) {
    for (int32_t i = 0; i < nd; ++i) out[3 - nd + i] = fallback[3 - nd + i];
    return true;
  }
  if (list.size() != 1 && list.size() != static_cast<size_t>(nd)) {
    ctx.fail(Error::InvalidArgument, "%s: expected 1 or %d values, got %s", name, nd,
             ShapeStr(list).c_str());
    return false;
  }
  for (int32_t i = 0; i < nd; ++i) {
    const int64_t v = list[list.size() == 1 ? 0 : i];
    if (v < min_value || v > INT32_MAX) {
      ctx.fail(Error::InvalidArgument, "%s: %s must be >= %lld", name, ShapeStr(list).c_str(),
               static_cast<long long>(min_value));
      return false;
    }
    out[3 - nd + i] = v;
  }
  return true;
}

}  // namespace

bool pool_input(KernelContext& ctx, const Tensor& input, int32_t nd, PoolGeometry* g) {
  g->nd = nd;
  if (input.dim != nd + 1 && input.dim != nd + 2) {
    ctx.fail(Error::InvalidArgument, "input: expected a %dD or %dD tensor, got shape %s",
             nd + 1, nd + 2, ShapeStr(input.shape()).c_str());
    return false;
  }
  const bool batched = input.dim == nd + 2;
  for (int32_t d = batched ? 1 : 0; d < input.dim; ++d) {
    if (input.sizes[d] == 0) {
      ctx.fail(Error::InvalidArgument, "input: expected non-empty non-batch dims, got shape %s",
               ShapeStr(input.shape()).c_str());
      return false;
    }
  }
  const int32_t c_dim = batched ? 1 : 0;
  g->batch = batched ? input.sizes[0] : 1;
  g->in_n = batched ? input.strides[0] : 0;
  g->channels = input.sizes[c_dim];
  g->in_c = input.strides[c_dim];
  for (int32_t i = 0; i < nd; ++i) {
    g->in[3 - nd + i] = input.sizes[c_dim + 1 + i];
    g->in_sp[3 - nd + i] = input.strides[c_dim + 1 + i];
  }
  return true;
}

bool pool_windows(KernelContext& ctx, IntSpan kernel_size, IntSpan stride, IntSpan padding,
                  std::optional<IntSpan> dilation, bool ceil_mode, PoolGeometry* g) {
  const int32_t nd = g->nd;
  if (!read_list(ctx, kernel_size, "kernel_size", nd, nullptr, 1, g->k) ||
      !read_list(ctx, stride, "stride", nd, g->k, 1, g->s) ||
      !read_list(ctx, padding, "padding", nd, nullptr, 0, g->p)) {
    return false;
  }
  if (dilation.has_value() && !read_list(ctx, *dilation, "dilation", nd, nullptr, 1, g->d)) {
    return false;
  }
  for (int32_t i = 3 - nd; i < 3; ++i) {
    const int64_t span = g->d[i] * (g->k[i] - 1) + 1;
    if (g->p[i] > span / 2) {
      ctx.fail(Error::InvalidArgument,
               "padding: %lld should be at most half of the effective kernel size %lld",
               static_cast<long long>(g->p[i]), static_cast<long long>(span));
      return false;
    }
    const int64_t numer = g->in[i] + 2 * g->p[i] - span + (ceil_mode ? g->s[i] - 1 : 0);
    int64_t o = (numer >= 0 ? numer / g->s[i] : -((-numer + g->s[i] - 1) / g->s[i])) + 1;
    if (ceil_mode && (o - 1) * g->s[i] >= g->in[i] + g->p[i]) --o;
    if (o < 1) {
      ctx.fail(Error::InvalidArgument,
               "input: spatial size %lld with kernel %lld, padding %lld and dilation %lld "
               "gives an output size below 1",
               static_cast<long long>(g->in[i]), static_cast<long long>(g->k[i]),
               static_cast<long long>(g->p[i]), static_cast<long long>(g->d[i]));
      return false;
    }
    g->out[i] = o;
  }
  return true;
}

void pool_out_strides(const Tensor& input, const Tensor& out, int32_t nd, int64_t* n,
                      int64_t* c, int64_t* sp) {
  const bool batched = input.dim == nd + 2;
  const int32_t c_dim = batched ? 1 : 0;
  *n = batched ? out.strides[0] : 0;
  *c = out.strides[c_dim];
  for (int32_t i = 0; i < 3; ++i) sp[i] = 0;
  for (int32_t i = 0; i < nd; ++i) sp[3 - nd + i] = out.strides[c_dim + 1 + i];
}

bool pool_resize_out(KernelContext& ctx, const Tensor& input, Tensor& out, PoolGeometry* g) {
  int32_t sizes[kTensorMaxDim];
  const int32_t lead = input.dim - g->nd;
  for (int32_t d = 0; d < lead; ++d) sizes[d] = input.sizes[d];
  for (int32_t i = 0; i < g->nd; ++i) sizes[lead + i] = static_cast<int32_t>(g->out[3 - g->nd + i]);
  if (!resize_out(ctx, out, {sizes, static_cast<size_t>(input.dim)})) return false;
  pool_out_strides(input, out, g->nd, &g->out_n, &g->out_c, g->out_sp);
  return true;
}

}  // namespace ember::kernels::portable
