// ember_fused::rope.out(Tensor x, Tensor cos, Tensor sin, *, Tensor(a!) out) -> Tensor(a!)
//
// Rotary position embedding in the half-split form of transformers' Llama
// family (passes/fuse_rope.py fuses the seven ops it exports as):
//   out = x·cos + rotate_half(x)·sin,  rotate_half(x) = cat(−x[..., h:], x[..., :h])
// float32; x's last dim even (2h); cos and sin the same shape, broadcast to
// x's (right-aligned, each dim 1 or x's; their last dim 1 or x's); out takes
// x's shape; any strides. Products and sums round as the op-by-op graph's
// (util/rope_f32.h): eager's bits. Rows split over the pool.
#include "kernels/portable/util/args.h"
#include "kernels/portable/util/parallel.h"
#include "kernels/portable/util/rope_f32.h"
#include "kernels/generated/functions/portable/op_rope.h"

namespace ember::kernels::portable {
namespace {

// cos/sin's stride for x's dim d (right-aligned): 0 where they broadcast.
int64_t table_stride(const Tensor& t, const Tensor& x, int32_t d) {
  const int32_t td = d - (x.dim - t.dim);
  if (td < 0 || t.sizes[td] == 1) return 0;
  return t.strides[td];
}

bool broadcasts_to(const Tensor& t, const Tensor& x) {
  if (t.dim > x.dim) return false;
  for (int32_t d = 0; d < t.dim; ++d) {
    const int32_t xd = d + (x.dim - t.dim);
    if (t.sizes[d] != 1 && t.sizes[d] != x.sizes[xd]) return false;
  }
  return true;
}

}  // namespace

Error rope_out_prepare(KernelPrepareContext& ctx, const Tensor& x, const Tensor& cos,
                       const Tensor& sin, Tensor& out) {
  EMBER_PREPARE_CHECK(ctx, x.dtype == ScalarType::Float,
                      "x: dtype %s is not supported (float32 only)", scalar_type_name(x.dtype));
  EMBER_PREPARE_CHECK(ctx, cos.dtype == ScalarType::Float && sin.dtype == ScalarType::Float &&
                               out.dtype == ScalarType::Float,
                      "cos, sin and out must be x's float32, got %s, %s and %s",
                      scalar_type_name(cos.dtype), scalar_type_name(sin.dtype),
                      scalar_type_name(out.dtype));
  return Error::Ok;
}

void rope_out(KernelContext& ctx, const Tensor& x, const Tensor& cos, const Tensor& sin,
              Tensor& out) {
  EMBER_KERNEL_CHECK(ctx, x.dtype == ScalarType::Float && cos.dtype == ScalarType::Float &&
                              sin.dtype == ScalarType::Float && out.dtype == ScalarType::Float,
                     "x, cos, sin and out must be float32");
  EMBER_KERNEL_CHECK(ctx, x.dim >= 1 && x.sizes[x.dim - 1] % 2 == 0,
                     "x's last dim must be even (the two halves rotate), got %d dims, last %d",
                     static_cast<int>(x.dim), x.dim >= 1 ? static_cast<int>(x.sizes[x.dim - 1])
                                                         : 0);
  bool same = cos.dim == sin.dim;
  for (int32_t d = 0; same && d < cos.dim; ++d) same = cos.sizes[d] == sin.sizes[d];
  EMBER_KERNEL_CHECK(ctx, same, "cos and sin must have the same shape");
  EMBER_KERNEL_CHECK(ctx, broadcasts_to(cos, x),
                     "cos and sin (%d dims) must broadcast to x's shape (%d dims)",
                     static_cast<int>(cos.dim), static_cast<int>(x.dim));
  if (!resize_out(ctx, out, x.shape())) return;
  if (out.numel == 0) return;
  EMBER_KERNEL_CHECK(ctx, out.data != x.data, "out must not be x's memory");
  const int32_t last = x.dim - 1;
  const int64_t n = x.sizes[last];
  const int64_t rows = out.numel / n;
  const float* xp = x.data_ptr<const float>();
  const float* cp = cos.data_ptr<const float>();
  const float* sp = sin.data_ptr<const float>();
  float* yp = out.data_ptr<float>();
  const int64_t cs = table_stride(cos, x, last), ss = table_stride(sin, x, last);
  // The same layout for cos and sin (same shape; both contiguous in practice).
  bool same_layout = cs == ss;
  for (int32_t d = 0; same_layout && d < last; ++d) {
    same_layout = table_stride(cos, x, d) == table_stride(sin, x, d);
  }
  EMBER_KERNEL_CHECK(ctx, same_layout, "cos and sin must have the same strides");
  parallel_range(ctx, rows, kParallelMinCopyElements / n + 1, 1, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      int64_t xo = 0, yo = 0, to = 0, rest = r;
      for (int32_t d = last - 1; d >= 0; --d) {
        const int64_t i = rest % x.sizes[d];
        rest /= x.sizes[d];
        xo += i * x.strides[d];
        yo += i * out.strides[d];
        to += i * table_stride(cos, x, d);
      }
      rope_row_f32(xp + xo, x.strides[last], cp + to, sp + to, cs, n, yp + yo,
                   out.strides[last]);
    }
  });
}

}  // namespace ember::kernels::portable
