// aten::native_layer_norm.out(Tensor input, SymInt[] normalized_shape, Tensor? weight,
//     Tensor? bias, float eps, *, Tensor(a!) out0, Tensor(b!) out1, Tensor(c!) out2)
//
// out0 = (x - mean) * rstd * weight + bias over the last k dims; out1 = mean
// and out2 = rstd = 1 / sqrt(var + eps) (biased variance), shaped like input
// with the normalized dims set to 1. Floating dtypes; weight and bias have
// input's dtype (eager also accepts float32 weights for 16-bit input; Ember
// does not). float32 rows that are one unit-stride run (the transformer
// case) take layer_norm_f32.h's vectorised path (float32 lanes, two passes);
// otherwise statistics accumulate in float64 (two passes) and the
// normalizing pass runs in the compute type. Any dim orders for every tensor.
#include <cmath>
#include <type_traits>

#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/layer_norm_f32.h"
#include "kernels/portable/util/parallel.h"
#include "kernels/portable/util/reduce.h"
#include "kernels/generated/functions/portable/op_layer_norm.h"

namespace ember::kernels::portable {
namespace {

template <typename S>
void layer_norm(KernelContext& ctx, const Tensor& x, const Tensor* w, const Tensor* b,
                double eps, int32_t axis, Tensor& y, Tensor& mean, Tensor& rstd) {
  using CT = compute_t<S>;
  const int64_t zeros[kTensorMaxDim] = {};
  const int64_t* lead_strides[4] = {y.strides, x.strides, mean.strides, rstd.strides};
  StridedLoop<4> lead;
  lead.init({x.sizes, static_cast<size_t>(axis)}, lead_strides);
  const int32_t k = x.dim - axis;
  const int64_t* norm_strides[4] = {y.strides + axis, x.strides + axis,
                                    w != nullptr ? w->strides : zeros,
                                    b != nullptr ? b->strides : zeros};
  StridedLoop<4> norm;
  norm.init({x.sizes + axis, static_cast<size_t>(k)}, norm_strides);
  int64_t n = 1;
  for (int32_t d = axis; d < x.dim; ++d) n *= x.sizes[d];
  const S* xp = x.data_ptr<const S>();
  S* yp = y.data_ptr<S>();
  const S* wp = w != nullptr ? w->data_ptr<const S>() : nullptr;
  const S* bp = b != nullptr ? b->data_ptr<const S>() : nullptr;
  auto add = [](double p, double q) { return p + q; };
  // One unit-stride run for y, x and the present affine parameters.
  const bool unit_rows = norm.dim == 0 || (norm.strides[0][0] == 1 && norm.strides[1][0] == 1 &&
                                           (w == nullptr || norm.strides[2][0] == 1) &&
                                           (b == nullptr || norm.strides[3][0] == 1));
  if constexpr (std::is_same_v<S, float>) {
    if (unit_rows && lead.dim <= 1) {
      // Rows at one stride (e.g. [tokens, hidden]): split them over the pool.
      const int64_t rows = lead.dim == 0 ? 1 : lead.sizes[0];
      auto lead_stride = [&](int op) { return lead.dim == 0 ? int64_t{0} : lead.strides[op][0]; };
      parallel_range(ctx, rows, kParallelMinElements / n + 1, 1, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          float mu = 0, rs = 0;
          layer_norm_row_f32(xp + r * lead_stride(1), n, eps, wp, bp, yp + r * lead_stride(0),
                             &mu, &rs);
          store_as<double>(mean.data, mean.dtype, r * lead_stride(2), mu);
          store_as<double>(rstd.data, rstd.dtype, r * lead_stride(3), rs);
        }
      });
      return;
    }
  }
  lead.run([&](const int64_t* off, int64_t rows, const int64_t* st) {
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t yo = off[0] + r * st[0];
      const S* xr = xp + off[1] + r * st[1];
      if constexpr (std::is_same_v<S, float>) {
        if (unit_rows) {
          float mu = 0, rs = 0;
          layer_norm_row_f32(xr, n, eps, wp, bp, yp + yo, &mu, &rs);
          store_as<double>(mean.data, mean.dtype, off[2] + r * st[2], mu);
          store_as<double>(rstd.data, rstd.dtype, off[3] + r * st[3], rs);
          continue;
        }
      }
      double sum = 0;
      norm.run([&](const int64_t* o, int64_t m, const int64_t* s) {
        sum += reduce_row<double>(xr + o[1], m, s[1], 0.0, add, add);
      });
      const double mu = sum / static_cast<double>(n);
      double sq = 0;
      auto sq_step = [mu](double a, double v) { return a + (v - mu) * (v - mu); };
      norm.run([&](const int64_t* o, int64_t m, const int64_t* s) {
        sq += reduce_row<double>(xr + o[1], m, s[1], 0.0, sq_step, add);
      });
      const double rs = 1.0 / std::sqrt(sq / static_cast<double>(n) + eps);
      store_as<double>(mean.data, mean.dtype, off[2] + r * st[2], mu);
      store_as<double>(rstd.data, rstd.dtype, off[3] + r * st[3], rs);
      const CT cm = static_cast<CT>(mu);
      const CT cr = static_cast<CT>(rs);
      norm.run([&](const int64_t* o, int64_t m, const int64_t* s) {
        const S* p = xr + o[1];
        S* q = yp + yo + o[0];
        const S* pw = wp != nullptr ? wp + o[2] : nullptr;
        const S* pb = bp != nullptr ? bp + o[3] : nullptr;
        const bool unit = s[0] == 1 && s[1] == 1 && (pw == nullptr || s[2] == 1) &&
                          (pb == nullptr || s[3] == 1);
        if (unit && pw != nullptr && pb != nullptr) {  // The common case, vectorised.
          for (int64_t i = 0; i < m; ++i) {
            q[i] = convert<S>((convert<CT>(p[i]) - cm) * cr * convert<CT>(pw[i]) +
                              convert<CT>(pb[i]));
          }
        } else if (unit && pw == nullptr && pb == nullptr) {
          for (int64_t i = 0; i < m; ++i) q[i] = convert<S>((convert<CT>(p[i]) - cm) * cr);
        } else {
          for (int64_t i = 0; i < m; ++i) {
            CT v = (convert<CT>(p[i * s[1]]) - cm) * cr;
            if (pw != nullptr) v *= convert<CT>(pw[i * s[2]]);
            if (pb != nullptr) v += convert<CT>(pb[i * s[3]]);
            q[i * s[0]] = convert<S>(v);
          }
        }
      });
    }
  });
}

}  // namespace

void native_layer_norm_out(KernelContext& ctx, const Tensor& input, IntSpan normalized_shape,
                           const Tensor* weight, const Tensor* bias, double eps, Tensor& out0,
                           Tensor& out1, Tensor& out2) {
  const int32_t k = static_cast<int32_t>(normalized_shape.size());
  bool shape_ok = k >= 1 && k <= input.dim;
  for (int32_t i = 0; shape_ok && i < k; ++i) {
    shape_ok = normalized_shape[i] == input.sizes[input.dim - k + i];
  }
  EMBER_KERNEL_CHECK(ctx, shape_ok,
                     "normalized_shape: %s is not a non-empty suffix of input shape %s",
                     ShapeStr(normalized_shape).c_str(), ShapeStr(input.shape()).c_str());
  if (!is_floating_type(input.dtype)) {
    fail_dtype(ctx, "input", input.dtype);
    return;
  }
  for (const Tensor* p : {weight, bias}) {
    if (p == nullptr) continue;
    const char* name = p == weight ? "weight" : "bias";
    bool same = p->dim == k;
    for (int32_t i = 0; same && i < k; ++i) same = p->sizes[i] == normalized_shape[i];
    EMBER_KERNEL_CHECK(ctx, same, "%s: shape %s does not match normalized_shape %s", name,
                       ShapeStr(p->shape()).c_str(), ShapeStr(normalized_shape).c_str());
    if (!check_dtype(ctx, *p, name, input.dtype)) return;
  }
  if (!check_dtype(ctx, out0, "out0", input.dtype)) return;
  EMBER_KERNEL_CHECK(ctx, is_floating_type(out1.dtype) && is_floating_type(out2.dtype),
                     "out1/out2: expected floating dtypes, got %s and %s",
                     scalar_type_name(out1.dtype), scalar_type_name(out2.dtype));
  const int32_t axis = input.dim - k;
  int32_t stat_sizes[kTensorMaxDim];
  for (int32_t d = 0; d < input.dim; ++d) stat_sizes[d] = d < axis ? input.sizes[d] : 1;
  const std::span<const int32_t> stat_shape{stat_sizes, static_cast<size_t>(input.dim)};
  if (!resize_out(ctx, out0, input.shape()) || !resize_out(ctx, out1, stat_shape) ||
      !resize_out(ctx, out2, stat_shape)) {
    return;
  }
  if (out0.numel == 0) return;
  (void)dispatch_dtype<kFloating>(input.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    layer_norm<S>(ctx, input, weight, bias, eps, axis, out0, out1, out2);
  });
}

}  // namespace ember::kernels::portable
