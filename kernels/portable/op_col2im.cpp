// aten::col2im.out(Tensor self, SymInt[2] output_size, int[2] kernel_size, int[2] dilation,
//     int[2] padding, int[2] stride, *, Tensor(a!) out) -> Tensor(a!)
// self [N, C·kh·kw, L] or [C·kh·kw, L]; out [N, C, H, W] or [C, H, W].
//
// The inverse of im2col: every column entry is added into its image position
// (overlapping windows sum). L must equal the number of sliding blocks.
// Floating dtypes (accumulated in the storage type, as eager); any dim orders.
#include "kernels/generated/functions/portable/op_col2im.h"
#include "kernels/portable/util/binary.h"

namespace ember::kernels::portable {
namespace {

bool pair_arg(KernelContext& ctx, IntSpan list, const char* name, int64_t min_value,
              int64_t* out) {
  if (list.size() != 2 || list[0] < min_value || list[1] < min_value || list[0] > INT32_MAX ||
      list[1] > INT32_MAX) {
    ctx.fail(Error::InvalidArgument, "%s: expected 2 values >= %lld, got %s", name,
             static_cast<long long>(min_value), ShapeStr(list).c_str());
    return false;
  }
  out[0] = list[0];
  out[1] = list[1];
  return true;
}

}  // namespace

void col2im_out(KernelContext& ctx, const Tensor& self, IntSpan output_size, IntSpan kernel_size,
                IntSpan dilation, IntSpan padding, IntSpan stride, Tensor& out) {
  int64_t size[2], k[2], d[2], p[2], s[2];
  if (!pair_arg(ctx, output_size, "output_size", 1, size) ||
      !pair_arg(ctx, kernel_size, "kernel_size", 1, k) ||
      !pair_arg(ctx, dilation, "dilation", 1, d) || !pair_arg(ctx, padding, "padding", 0, p) ||
      !pair_arg(ctx, stride, "stride", 1, s)) {
    return;
  }
  EMBER_KERNEL_CHECK(ctx, self.dim == 2 || self.dim == 3,
                     "self: expected [N, C*kh*kw, L] or [C*kh*kw, L], got shape %s",
                     ShapeStr(self.shape()).c_str());
  const bool batched = self.dim == 3;
  const int64_t rows = self.sizes[batched ? 1 : 0];
  const int64_t len = self.sizes[batched ? 2 : 1];
  const int64_t khw = k[0] * k[1];
  EMBER_KERNEL_CHECK(ctx, rows % khw == 0,
                     "self: dim of size %lld is not divisible by the kernel size %lld",
                     static_cast<long long>(rows), static_cast<long long>(khw));
  int64_t blocks[2];
  for (int i = 0; i < 2; ++i) {
    blocks[i] = (size[i] + 2 * p[i] - (d[i] * (k[i] - 1) + 1)) / s[i] + 1;
  }
  EMBER_KERNEL_CHECK(ctx, blocks[0] >= 1 && blocks[1] >= 1 && blocks[0] * blocks[1] == len,
                     "self: %lld columns, but output_size, kernel, dilation, padding and stride "
                     "give %lld x %lld blocks",
                     static_cast<long long>(len), static_cast<long long>(blocks[0]),
                     static_cast<long long>(blocks[1]));
  if (!is_floating_type(self.dtype)) {
    fail_dtype(ctx, "self", self.dtype);
    return;
  }
  if (!check_dtype(ctx, out, "out", self.dtype)) return;
  const int64_t channels = rows / khw;
  int32_t sizes[4];
  int32_t r = 0;
  if (batched) sizes[r++] = self.sizes[0];
  sizes[r++] = static_cast<int32_t>(channels);
  sizes[r++] = static_cast<int32_t>(size[0]);
  sizes[r++] = static_cast<int32_t>(size[1]);
  if (!resize_out(ctx, out, {sizes, static_cast<size_t>(r)})) return;
  if (out.numel == 0) return;
  const int64_t n_batch = batched ? self.sizes[0] : 1;
  const int64_t in_n = batched ? self.strides[0] : 0;
  const int64_t in_r = self.strides[batched ? 1 : 0];
  const int64_t in_l = self.strides[batched ? 2 : 1];
  const int32_t o0 = batched ? 1 : 0;
  const int64_t out_n = batched ? out.strides[0] : 0;
  const int64_t out_c = out.strides[o0], out_h = out.strides[o0 + 1];
  const int64_t out_w = out.strides[o0 + 2];
  (void)dispatch_dtype<kFloating>(self.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using CT = compute_t<S>;
    const S* x = self.data_ptr<const S>();
    S* y = out.data_ptr<S>();
    for (int64_t n = 0; n < n_batch; ++n) {
      for (int64_t c = 0; c < channels; ++c) {
        for (int64_t i = 0; i < size[0]; ++i) {
          for (int64_t j = 0; j < size[1]; ++j) {
            y[n * out_n + c * out_c + i * out_h + j * out_w] = convert<S>(0.0f);
          }
        }
      }
      for (int64_t row = 0; row < rows; ++row) {
        const int64_t kw_off = row % k[1];
        const int64_t kh_off = (row / k[1]) % k[0];
        const int64_t c = row / khw;
        for (int64_t bh = 0; bh < blocks[0]; ++bh) {
          const int64_t ih = bh * s[0] - p[0] + kh_off * d[0];
          if (ih < 0 || ih >= size[0]) continue;
          for (int64_t bw = 0; bw < blocks[1]; ++bw) {
            const int64_t iw = bw * s[1] - p[1] + kw_off * d[1];
            if (iw < 0 || iw >= size[1]) continue;
            S& dst = y[n * out_n + c * out_c + ih * out_h + iw * out_w];
            dst = convert<S>(convert<CT>(dst) +
                             convert<CT>(x[n * in_n + row * in_r + (bh * blocks[1] + bw) * in_l]));
          }
        }
      }
    }
  });
}

}  // namespace ember::kernels::portable
