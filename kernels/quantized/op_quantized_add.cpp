// ember_quantized::add.out(Tensor a, float a_scale, int a_zero_point, Tensor b,
//     float b_scale, int b_zero_point, float output_scale, int output_zero_point,
//     int output_min, int output_max, *, Tensor(a!) out) -> Tensor(a!)
//
// What ember.exir.passes.fuse_quantized_ops makes of pt2e's
//   quantize([relu](add(dequantize(a), dequantize(b))))
// (a residual connection): a, b and out int8 of one shape. Each element is
// computed with eager's float32 operations in eager's order,
//   y = (a − za)·sa + (b − zb)·sb,  out = clamp(round_half_even(y · (1/sy)) + zy, lo, hi),
// so the result is bit-identical to the unfused chain; it just reads two int8
// tensors and writes one instead of going through three float32 ones.
#include "kernels/generated/functions/quantized/op_quantized_add.h"
#include "kernels/portable/util/args.h"
#include "kernels/portable/util/cpu_isa.h"
#include "kernels/portable/util/isa_target.h"
#include "kernels/portable/util/parallel.h"
#include "kernels/quantized/util/qgemm.h"
#include "kernels/quantized/util/qlinear_params.h"

namespace ember::kernels::quantized {
namespace {

using portable::parallel_range;
using portable::resize_out;

// Values, not references, and restrict pointers: an int8 store may alias
// anything, and the loop would reload every parameter instead of vectorising.
// Inlined into baseline, AVX2 and AVX-512 builds, none of which contracts
// into FMAs, so all round every product and sum as eager's separate kernels do.
inline __attribute__((always_inline)) void add_loop(const int8_t* __restrict pa,
                                                    const int8_t* __restrict pb,
                                                    int8_t* __restrict po, int64_t n, float sa,
                                                    float za, float sb, float zb, float inv,
                                                    float lo, float hi, int32_t zy) {
  for (int64_t i = 0; i < n; ++i) {
    const float y = (static_cast<float>(pa[i]) - za) * sa + (static_cast<float>(pb[i]) - zb) * sb;
    po[i] = requantize(y * inv, lo, hi, zy);
  }
}

void add_span_baseline(const int8_t* pa, const int8_t* pb, int8_t* po, int64_t n, float sa,
                       float za, float sb, float zb, float inv, float lo, float hi, int32_t zy) {
  add_loop(pa, pb, po, n, sa, za, sb, zb, inv, lo, hi, zy);
}

#if EMBER_ISA_X86
__attribute__((target("avx2"))) void add_span_avx2(const int8_t* pa, const int8_t* pb,
                                                   int8_t* po, int64_t n, float sa, float za,
                                                   float sb, float zb, float inv, float lo,
                                                   float hi, int32_t zy) {
  add_loop(pa, pb, po, n, sa, za, sb, zb, inv, lo, hi, zy);
}

// AVX-512F has fused multiply-adds, which GCC would contract the loop's
// products and sums into (one rounding instead of two): fp-contract=off
// keeps eager's bits.
__attribute__((target("avx512f,avx512bw,avx512vl,prefer-vector-width=512"),
               optimize("fp-contract=off"))) void
add_span_avx512(const int8_t* pa, const int8_t* pb, int8_t* po, int64_t n, float sa, float za,
                float sb, float zb, float inv, float lo, float hi, int32_t zy) {
  add_loop(pa, pb, po, n, sa, za, sb, zb, inv, lo, hi, zy);
}
#endif

void add_span(const int8_t* pa, const int8_t* pb, int8_t* po, int64_t n, float sa, float za,
              float sb, float zb, float inv, float lo, float hi, int32_t zy) {
#if EMBER_ISA_X86
  if (portable::cpu_isa() >= portable::Isa::kAvx512) {
    add_span_avx512(pa, pb, po, n, sa, za, sb, zb, inv, lo, hi, zy);
    return;
  }
  if (portable::cpu_isa() >= portable::Isa::kAvx2) {
    add_span_avx2(pa, pb, po, n, sa, za, sb, zb, inv, lo, hi, zy);
    return;
  }
#endif
  add_span_baseline(pa, pb, po, n, sa, za, sb, zb, inv, lo, hi, zy);
}

}  // namespace

Error add_out_prepare(KernelPrepareContext& ctx, const Tensor& a, double a_scale,
                      int64_t a_zero_point, const Tensor& b, double b_scale, int64_t b_zero_point,
                      double output_scale, int64_t output_zero_point, int64_t output_min,
                      int64_t output_max, Tensor& out) {
  if (Error e = check_static_qargs(ctx, a, "a", a_scale, a_zero_point, out, output_scale,
                                   output_zero_point, output_min, output_max);
      e != Error::Ok) {
    return e;
  }
  return check_static_qargs(ctx, b, "b", b_scale, b_zero_point, out, output_scale,
                            output_zero_point, output_min, output_max);
}

void add_out(KernelContext& ctx, const Tensor& a, double a_scale, int64_t a_zero_point,
             const Tensor& b, double b_scale, int64_t b_zero_point, double output_scale,
             int64_t output_zero_point, int64_t output_min, int64_t output_max, Tensor& out) {
  EMBER_KERNEL_CHECK(ctx, a.dtype == ScalarType::Char && b.dtype == ScalarType::Char,
                     "a and b must be int8, got %s and %s", scalar_type_name(a.dtype),
                     scalar_type_name(b.dtype));
  bool same = a.dim == b.dim;
  for (int i = 0; same && i < a.dim; ++i) same = a.sizes[i] == b.sizes[i];
  EMBER_KERNEL_CHECK(ctx, same, "a and b must have the same shape (no broadcasting)");
  bool same_order = true;
  for (int i = 0; same_order && i < a.dim; ++i) same_order = a.dim_order[i] == b.dim_order[i];
  EMBER_KERNEL_CHECK(ctx, same_order, "a and b must have the same dim order");
  if (!resize_out(ctx, out, a.shape())) return;
  bool out_order = true;
  for (int i = 0; out_order && i < a.dim; ++i) out_order = a.dim_order[i] == out.dim_order[i];
  EMBER_KERNEL_CHECK(ctx, out_order, "out must have the inputs' dim order");
  const auto* pa = a.data_ptr<const int8_t>();
  const auto* pb = b.data_ptr<const int8_t>();
  auto* po = out.data_ptr<int8_t>();
  // dequantize_per_tensor: (float(q) − zero_point) · scale, scale rounded to float32.
  const auto sa = static_cast<float>(a_scale), sb = static_cast<float>(b_scale);
  const auto za = static_cast<float>(a_zero_point), zb = static_cast<float>(b_zero_point);
  // quantize_per_tensor: y · float32(1 / scale).
  const auto inv = static_cast<float>(1.0 / output_scale);
  const auto zy = static_cast<int32_t>(output_zero_point);
  const auto lo = static_cast<float>(output_min - zy), hi = static_cast<float>(output_max - zy);
  parallel_range(ctx, a.numel, portable::kParallelMinCopyElements, 64,
                 [&](int64_t begin, int64_t end) {
                   add_span(pa + begin, pb + begin, po + begin, end - begin, sa, za, sb, zb, inv,
                            lo, hi, zy);
                 });
}

}  // namespace ember::kernels::quantized
