// ember_quantized::linear_dynamic_intx.out(Tensor input, Tensor weight, Tensor weight_scales,
//     int group_size, int weight_bits, Tensor? bias, *, Tensor(a!) out) -> Tensor(a!)
//
// torchao's Int8DynamicActivationIntxWeightConfig ("8da4w", "8da8w"; found by
// ember.exir.passes.fuse_dynamic_intx_linear): every row (token) of the
// float32 input is quantized to int8 with its own scale and zero point, as
// torchao's choose_qparams_affine (ASYMMETRIC, eps = FLT_MIN) and
// quantize_affine compute them; the weight is symmetric int4 or int8 with one
// float32 scale per group of `group_size` input features:
//   out[r][n] = sx[r] · Σ_g s[n][g] · Σ_{k in g} (qx[r][k] − zx[r]) · w[n][k] + bias[n]
// weight: int8 [N, K] (weight_bits 8) or uint8 [N, K / 2] (weight_bits 4: two
// values per byte, w[n][2j] + 8 in byte j's low nibble, w[n][2j + 1] + 8 in
// its high nibble); weight_scales float32 [N, K / group_size]; bias float32 [N].
//
// Prepare repacks the weight into the kernels' layout (qdyn_intx.h) once; the
// products are exact int32 sums per group (VPDPBUSD with AVX-512 VNNI,
// VPMADDUBSW / VPMADDWD with AVX2, plain loops otherwise).
#include "kernels/generated/functions/quantized/op_quantized_linear_dynamic_intx.h"
#include "kernels/portable/util/args.h"
#include "kernels/portable/util/parallel.h"
#include "kernels/quantized/util/qdyn_intx.h"
#include "kernels/quantized/util/qop_args.h"

namespace ember::kernels::quantized {
namespace {

using portable::parallel_range;
using portable::resize_out;

size_t scratch_bytes(int64_t rows, int64_t kp) {
  return static_cast<size_t>(rows * kp + 63) / 64 * 64 +
         static_cast<size_t>(rows) * (sizeof(float) + sizeof(int32_t)) + 64;
}

}  // namespace

Error linear_dynamic_intx_out_prepare(KernelPrepareContext& ctx, const Tensor& input,
                                      const Tensor& weight, const Tensor& weight_scales,
                                      int64_t group_size, int64_t weight_bits,
                                      const Tensor* bias, Tensor& out) {
  if (const Error err = check_float_in_out(ctx, input, out); err != Error::Ok) return err;
  if (weight_bits != 4 && weight_bits != 8) {
    return ctx.fail(Error::InvalidProgram, "weight_bits %lld: 4 or 8 only",
                    static_cast<long long>(weight_bits));
  }
  const ScalarType wtype = weight_bits == 4 ? ScalarType::Byte : ScalarType::Char;
  if (weight.dtype != wtype || weight.dim != 2 || !ctx.is_constant(weight) ||
      weight.data == nullptr || !weight.is_contiguous_dim_order()) {
    return ctx.fail(Error::InvalidProgram, "weight must be a contiguous 2-d %s constant of the "
                    "program (weight_bits %lld), got %s", scalar_type_name(wtype),
                    static_cast<long long>(weight_bits), scalar_type_name(weight.dtype));
  }
  if (input.dim < 1) {
    return ctx.fail(Error::InvalidProgram, "input must have at least one dimension");
  }
  const int64_t k = input.sizes[input.dim - 1];
  const int64_t n = weight.sizes[0];
  if (weight_bits == 4 && k % 2 != 0) {
    return ctx.fail(Error::InvalidProgram, "input features %lld: int4 weights (two per byte) "
                    "need an even number", static_cast<long long>(k));
  }
  const int64_t wcols = weight_bits == 4 ? k / 2 : k;
  if (weight.sizes[1] != wcols) {
    return ctx.fail(Error::InvalidProgram, "weight has %d columns; %lld input features need "
                    "%lld (weight_bits %lld)", static_cast<int>(weight.sizes[1]),
                    static_cast<long long>(k), static_cast<long long>(wcols),
                    static_cast<long long>(weight_bits));
  }
  if (group_size < 1 || k % group_size != 0) {
    return ctx.fail(Error::InvalidProgram, "group_size %lld must be >= 1 and divide the %lld "
                    "input features", static_cast<long long>(group_size),
                    static_cast<long long>(k));
  }
  const int64_t groups = k / group_size;
  if (weight_scales.dtype != ScalarType::Float || weight_scales.numel != n * groups ||
      !ctx.is_constant(weight_scales) || weight_scales.data == nullptr ||
      !weight_scales.is_contiguous_dim_order()) {
    return ctx.fail(Error::InvalidProgram, "weight_scales must be a float32 constant with "
                    "%lld x %lld values", static_cast<long long>(n),
                    static_cast<long long>(groups));
  }
  if (bias != nullptr && (bias->dtype != ScalarType::Float || bias->numel != n ||
                          !ctx.is_constant(*bias) || bias->data == nullptr)) {
    return ctx.fail(Error::InvalidProgram, "bias must be a float32 constant with %lld values",
                    static_cast<long long>(n));
  }
  auto* state = ctx.allocate_state<IntxWeights>();
  void* mem = ctx.allocate(intx_packed_bytes(static_cast<int>(weight_bits), n, k, group_size));
  if (state == nullptr || mem == nullptr) return ctx.failure();
  *state = intx_pack(qgemm_kind(), static_cast<int>(weight_bits),
                     weight.data_ptr<const uint8_t>(), weight_scales.data_ptr<const float>(), n,
                     k, group_size, bias != nullptr ? bias->data_ptr<const float>() : nullptr,
                     mem);
  const int64_t rows = k > 0 ? input.numel / k : 0;  // Planned size: a dynamic one's bound.
  ctx.reserve_scratch(scratch_bytes(rows, state->kp));
  ctx.set_state(state);
  ctx.mark_packed(weight);
  return Error::Ok;
}

void linear_dynamic_intx_out(KernelContext& ctx, const Tensor& input, const Tensor&,
                             const Tensor&, int64_t, int64_t, const Tensor*, Tensor& out) {
  const auto* w = static_cast<const IntxWeights*>(ctx.state());
  EMBER_KERNEL_CHECK(ctx, w != nullptr, "not prepared");
  EMBER_KERNEL_CHECK(ctx, input.dtype == ScalarType::Float, "input must be float32, got %s",
                     scalar_type_name(input.dtype));
  EMBER_KERNEL_CHECK(ctx, input.dim >= 1 && input.sizes[input.dim - 1] == w->k,
                     "input's last dimension must be the weight's %lld input features",
                     static_cast<long long>(w->k));
  EMBER_KERNEL_CHECK(ctx, input.is_contiguous_dim_order(), "input must have contiguous dim order");
  int32_t shape[kTensorMaxDim];
  for (int i = 0; i < input.dim; ++i) shape[i] = input.sizes[i];
  shape[input.dim - 1] = static_cast<int32_t>(w->n);
  if (!resize_out(ctx, out, std::span<const int32_t>(shape, static_cast<size_t>(input.dim)))) {
    return;
  }
  const int64_t rows = w->k > 0 ? input.numel / w->k : 0;
  if (rows == 0 || w->n == 0) return;
  const size_t need = scratch_bytes(rows, w->kp);
  auto* scratch = static_cast<uint8_t*>(ctx.scratch(need));
  EMBER_KERNEL_CHECK(ctx, scratch != nullptr, "%zu bytes of scratch memory needed, %zu reserved",
                     need, ctx.scratch_size());
  uint8_t* u = scratch;
  auto* sx = reinterpret_cast<float*>(scratch + static_cast<size_t>(rows * w->kp + 63) / 64 * 64);
  auto* zx = reinterpret_cast<int32_t*>(sx + rows);
  const float* x = input.data_ptr<const float>();
  parallel_range(ctx, rows, 8, 1, [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) {
      intx_quantize_row(x + r * w->k, w->k, w->kp, u + r * w->kp, sx + r, zx + r);
    }
  });
  float* y = out.data_ptr<float>();
  parallel_range(ctx, w->n, 16, 16, [&](int64_t first, int64_t last) {
    intx_linear_rows(*w, u, sx, zx, rows, first, last, y, w->n);
  });
}

}  // namespace ember::kernels::quantized
