// aten::_cdist_forward.out(Tensor x1, Tensor x2, float p, int? compute_mode, *, Tensor(a!) out)
//   x1 [*, P, M], x2 [*, R, M], out [*, P, R]; the batch dims broadcast.
// aten::_pdist_forward.out(Tensor self, float p=2., *, Tensor(a!) out)
//   self [N, M], out [N·(N-1)/2]: pairs (i, j), i < j, in order.
//
// p-norm distances for p >= 0 (p = 0 counts differing coordinates, p = inf
// takes the largest), accumulated in float64. compute_mode only chooses eager's
// matmul shortcut for p = 2; Ember always computes directly. Floating dtypes.
#include <cmath>

#include "kernels/portable/util/binary.h"
#include "kernels/generated/functions/portable/op_cdist.h"

namespace ember::kernels::portable {
namespace {

template <typename S>
double distance(const S* a, int64_t sa, const S* b, int64_t sb, int64_t m, double p) {
  double acc = 0;
  if (p == 0) {
    for (int64_t i = 0; i < m; ++i) acc += convert<double>(a[i * sa]) != convert<double>(b[i * sb]);
    return acc;
  }
  if (std::isinf(p)) {
    for (int64_t i = 0; i < m; ++i) {
      const double d = std::fabs(convert<double>(a[i * sa]) - convert<double>(b[i * sb]));
      acc = d > acc || std::isnan(d) ? d : acc;
    }
    return acc;
  }
  if (p == 1) {
    for (int64_t i = 0; i < m; ++i) acc += std::fabs(convert<double>(a[i * sa]) - convert<double>(b[i * sb]));
    return acc;
  }
  if (p == 2) {
    for (int64_t i = 0; i < m; ++i) {
      const double d = convert<double>(a[i * sa]) - convert<double>(b[i * sb]);
      acc += d * d;
    }
    return std::sqrt(acc);
  }
  for (int64_t i = 0; i < m; ++i) {
    acc += std::pow(std::fabs(convert<double>(a[i * sa]) - convert<double>(b[i * sb])), p);
  }
  return std::pow(acc, 1.0 / p);
}

bool check_p(KernelContext& ctx, double p) {
  if (!(p >= 0)) {
    ctx.fail(Error::InvalidArgument, "p: must be a non-negative value, got %g", p);
    return false;
  }
  return true;
}

}  // namespace

void _cdist_forward_out(KernelContext& ctx, const Tensor& x1, const Tensor& x2, double p,
                        std::optional<int64_t> compute_mode, Tensor& out) {
  (void)compute_mode;  // Only picks eager's matmul shortcut for p = 2.
  if (!check_p(ctx, p)) return;
  EMBER_KERNEL_CHECK(ctx, x1.dim >= 2 && x2.dim >= 2,
                     "x1, x2: expected at least 2-D tensors, got shapes %s and %s",
                     ShapeStr(x1.shape()).c_str(), ShapeStr(x2.shape()).c_str());
  EMBER_KERNEL_CHECK(ctx, x1.sizes[x1.dim - 1] == x2.sizes[x2.dim - 1],
                     "x1, x2: shapes %s and %s differ in the last dim",
                     ShapeStr(x1.shape()).c_str(), ShapeStr(x2.shape()).c_str());
  if (!is_floating_type(x1.dtype)) {
    fail_dtype(ctx, "x1", x1.dtype);
    return;
  }
  if (!check_dtype(ctx, x2, "x2", x1.dtype) || !check_dtype(ctx, out, "out", x1.dtype)) {
    return;
  }
  int32_t batch[kTensorMaxDim];
  int32_t nb = 0;
  EMBER_KERNEL_CHECK(ctx,
                     broadcast_shapes({x1.sizes, static_cast<size_t>(x1.dim - 2)},
                                      {x2.sizes, static_cast<size_t>(x2.dim - 2)}, batch, &nb) &&
                         nb + 2 <= kTensorMaxDim,
                     "x1, x2: batch dims of shapes %s and %s do not broadcast",
                     ShapeStr(x1.shape()).c_str(), ShapeStr(x2.shape()).c_str());
  const int64_t rows1 = x1.sizes[x1.dim - 2];
  const int64_t rows2 = x2.sizes[x2.dim - 2];
  const int64_t m = x1.sizes[x1.dim - 1];
  int32_t sizes[kTensorMaxDim];
  for (int32_t d = 0; d < nb; ++d) sizes[d] = batch[d];
  sizes[nb] = static_cast<int32_t>(rows1);
  sizes[nb + 1] = static_cast<int32_t>(rows2);
  if (!resize_out(ctx, out, {sizes, static_cast<size_t>(nb + 2)})) return;
  if (out.numel == 0) return;
  // Batch strides, 0 where an operand broadcasts.
  int64_t s1[kTensorMaxDim], s2[kTensorMaxDim];
  for (int32_t d = 0; d < nb; ++d) {
    const int32_t d1 = d - (nb - (x1.dim - 2));
    const int32_t d2 = d - (nb - (x2.dim - 2));
    s1[d] = d1 >= 0 && x1.sizes[d1] != 1 ? x1.strides[d1] : 0;
    s2[d] = d2 >= 0 && x2.sizes[d2] != 1 ? x2.strides[d2] : 0;
  }
  const int64_t* strides[3] = {out.strides, s1, s2};
  StridedLoop<3> loop;
  loop.init({batch, static_cast<size_t>(nb)}, strides);
  (void)dispatch_dtype<kFloating>(x1.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    const S* a0 = x1.data_ptr<const S>();
    const S* b0 = x2.data_ptr<const S>();
    S* o0 = out.data_ptr<S>();
    const int64_t a_row = x1.strides[x1.dim - 2], a_col = x1.strides[x1.dim - 1];
    const int64_t b_row = x2.strides[x2.dim - 2], b_col = x2.strides[x2.dim - 1];
    const int64_t o_row = out.strides[nb], o_col = out.strides[nb + 1];
    loop.run([&](const int64_t* off, int64_t n, const int64_t* st) {
      for (int64_t bi = 0; bi < n; ++bi) {
        const S* a = a0 + off[1] + bi * st[1];
        const S* b = b0 + off[2] + bi * st[2];
        S* o = o0 + off[0] + bi * st[0];
        for (int64_t i = 0; i < rows1; ++i) {
          for (int64_t j = 0; j < rows2; ++j) {
            o[i * o_row + j * o_col] =
                convert<S>(distance(a + i * a_row, a_col, b + j * b_row, b_col, m, p));
          }
        }
      }
    });
  });
}

void _pdist_forward_out(KernelContext& ctx, const Tensor& self, double p, Tensor& out) {
  if (!check_p(ctx, p)) return;
  EMBER_KERNEL_CHECK(ctx, self.dim == 2, "self: expected a 2-D tensor, got shape %s",
                     ShapeStr(self.shape()).c_str());
  if (!is_floating_type(self.dtype)) {
    fail_dtype(ctx, "self", self.dtype);
    return;
  }
  if (!check_dtype(ctx, out, "out", self.dtype)) return;
  const int64_t n = self.sizes[0];
  const int64_t m = self.sizes[1];
  const int64_t pairs = n * (n - 1) / 2;
  EMBER_KERNEL_CHECK(ctx, pairs <= INT32_MAX, "self: %lld rows give too many pairs",
                     static_cast<long long>(n));
  const int32_t size[1] = {static_cast<int32_t>(n > 1 ? pairs : 0)};
  if (!resize_out(ctx, out, size)) return;
  (void)dispatch_dtype<kFloating>(self.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    const S* x = self.data_ptr<const S>();
    S* o = out.data_ptr<S>();
    int64_t k = 0;
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = i + 1; j < n; ++j, ++k) {
        o[k * out.strides[0]] = convert<S>(distance(x + i * self.strides[0], self.strides[1],
                                                    x + j * self.strides[0], self.strides[1],
                                                    m, p));
      }
    }
  });
}

}  // namespace ember::kernels::portable
