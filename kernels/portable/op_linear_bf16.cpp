// ember_fused::linear_bf16.out(Tensor input, Tensor weight, Tensor? bias, *,
//     Tensor(a!) out) -> Tensor(a!)
// ember_fused::fused_linear_bf16.out(Tensor input, Tensor weight, Tensor? bias,
//     Tensor? residual, str activation="none", float? min=None, float? max=None,
//     *, Tensor(a!) out) -> Tensor(a!)
//
// out = bf16(input) · weightᵀ + bias: a linear layer in Ember's opt-in bf16
// precision (ExecutorchBackendConfig(precision="bf16"),
// passes/bf16_precision.py). input is float32 [..., k] and is rounded to bf16
// (nearest even) as the GEMM packs it; weight is a constant bfloat16 [n, k]
// packed once at load; products are summed in float32 and the float32 bias
// [n] is added to each tile after its last k-block; out is float32 [..., n].
// fused_linear_bf16 adds fused_linear's epilogue: + residual (out's shape)
// per tile, then clamp(min, max), then the activation ("gelu", "gelu_tanh")
// per finished row block, all in float32 while the block is in cache. The
// GEMM is util/gemm_bf16.h (AMX tiles or VDPBF16PS where the CPU has them).
#include <algorithm>

#include "kernels/portable/util/args.h"
#include "kernels/portable/util/gemm_bf16.h"
#include "kernels/portable/util/unary_f32.h"
#include "kernels/generated/functions/portable/op_linear_bf16.h"

namespace ember::kernels::portable {
namespace {

struct LinearBf16State {
  Bf16PackedWeight weight;
  const void* weight_data;  // The constant it was packed from.
};

// Rows of `input` as one m × k matrix: the leading dims must collapse into
// one stride (any layout of a 2-D input does).
bool row_stride(const Tensor& input, int64_t* rs) {
  const int32_t r = input.dim;
  *rs = r >= 2 ? input.strides[r - 2] : 0;
  for (int32_t d = 0; d + 2 < r; ++d) {
    if (input.sizes[d] != 1 && input.strides[d] != input.strides[d + 1] * input.sizes[d + 1]) {
      return false;
    }
  }
  return true;
}

// "none" → false; "gelu" / "gelu_tanh" → true and the unary_f32 op.
bool parse_activation(std::string_view name, bool* activate, UnaryF32* act) {
  *activate = name != "none";
  if (name == "gelu") *act = UnaryF32::GeluErf;
  else if (name == "gelu_tanh") *act = UnaryF32::GeluTanh;
  else return name == "none";
  return true;
}

Error prepare_linear(KernelPrepareContext& ctx, const Tensor& input, const Tensor& weight,
                     const Tensor* bias, const Tensor* residual, std::string_view activation,
                     std::optional<double> min, std::optional<double> max, Tensor& out) {
  bool activate = false;
  UnaryF32 act = UnaryF32::GeluErf;
  EMBER_PREPARE_CHECK(ctx, parse_activation(activation, &activate, &act),
                      "activation: must be 'none', 'gelu' or 'gelu_tanh', got '%.*s'",
                      static_cast<int>(activation.size()), activation.data());
  EMBER_PREPARE_CHECK(ctx, !(min && max && *min > *max), "min: %g is greater than max %g",
                      min ? *min : 0.0, max ? *max : 0.0);
  EMBER_PREPARE_CHECK(ctx, input.dtype == ScalarType::Float,
                      "input: dtype %s is not supported (float32 only)",
                      scalar_type_name(input.dtype));
  EMBER_PREPARE_CHECK(ctx, weight.dtype == ScalarType::BFloat16,
                      "weight: dtype %s, expected bfloat16", scalar_type_name(weight.dtype));
  EMBER_PREPARE_CHECK(ctx, weight.dim == 2, "weight: expected a 2-D [out, in] tensor, got %d-D",
                      weight.dim);
  EMBER_PREPARE_CHECK(ctx, out.dtype == ScalarType::Float, "out: dtype %s, expected float32",
                      scalar_type_name(out.dtype));
  EMBER_PREPARE_CHECK(ctx, input.dim >= 1 && input.sizes[input.dim - 1] == weight.sizes[1],
                      "input: its last dimension must be the weight's %d inputs",
                      weight.sizes[1]);
  if (bias != nullptr) {
    EMBER_PREPARE_CHECK(ctx, bias->dtype == ScalarType::Float, "bias: dtype %s, expected float32",
                        scalar_type_name(bias->dtype));
    EMBER_PREPARE_CHECK(ctx, bias->dim == 1 && bias->sizes[0] == weight.sizes[0],
                        "bias: expected shape [%d], one per output", weight.sizes[0]);
  }
  if (residual != nullptr) {
    EMBER_PREPARE_CHECK(ctx, residual->dtype == ScalarType::Float,
                        "residual: dtype %s, expected float32", scalar_type_name(residual->dtype));
    EMBER_PREPARE_CHECK(ctx, residual->dim == out.dim,
                        "residual: %d dimensions, the output has %d", residual->dim, out.dim);
  }
  EMBER_PREPARE_CHECK(ctx, ctx.is_constant(weight) && weight.data != nullptr,
                      "weight: must be a constant of the program (it is packed at load)");
  const int64_t n = weight.sizes[0];
  const int64_t k = weight.sizes[1];
  const Bf16GemmKind kind = bf16_gemm_kind();
  auto* state = ctx.allocate_state<LinearBf16State>();
  if (state == nullptr) return ctx.failure();
  const int64_t words = bf16_packed_weight_words(n, k, kind);
  auto* packed = static_cast<uint32_t*>(ctx.allocate(static_cast<size_t>(words) * 4, 64));
  if (packed == nullptr) return ctx.failure();
  state->weight = bf16_pack_weight(weight.data_ptr<const uint16_t>(), n, k, weight.strides[0],
                                   weight.strides[1], kind, packed);
  state->weight_data = weight.data;
  ctx.set_state(state);
  ctx.mark_packed(weight);
  return Error::Ok;
}

void run_linear(KernelContext& ctx, const Tensor& input, const Tensor& weight, const Tensor* bias,
                const Tensor* residual, std::string_view activation, std::optional<double> min,
                std::optional<double> max, Tensor& out) {
  const auto* state = static_cast<const LinearBf16State*>(ctx.state());
  // Prepare always leaves a state; a different weight would be a program the
  // method was not loaded with.
  EMBER_KERNEL_CHECK(ctx, state != nullptr && state->weight_data == weight.data,
                     "weight: not the constant packed at load");
  const int64_t n = state->weight.n;
  const int64_t k = state->weight.k;
  EMBER_KERNEL_CHECK(ctx, input.dim >= 1 && input.sizes[input.dim - 1] == k,
                     "input: shape %s, its last dimension must be %lld",
                     ShapeStr(input.shape()).c_str(), static_cast<long long>(k));
  int64_t a_rs = 0;
  EMBER_KERNEL_CHECK(ctx, row_stride(input, &a_rs),
                     "input: its leading dimensions of shape %s are not one strided run",
                     ShapeStr(input.shape()).c_str());
  int32_t shape[kTensorMaxDim];
  for (int32_t d = 0; d + 1 < input.dim; ++d) shape[d] = input.sizes[d];
  shape[input.dim - 1] = static_cast<int32_t>(n);
  if (!resize_out(ctx, out, std::span<const int32_t>(shape, static_cast<size_t>(input.dim)))) {
    return;
  }
  EMBER_KERNEL_CHECK(ctx, out.dim < 2 || out.strides[out.dim - 1] == 1,
                     "out: its last dimension must be contiguous");
  int64_t m = 1;
  for (int32_t d = 0; d + 1 < input.dim; ++d) m *= input.sizes[d];
  GemmEpilogue<float> ep{};
  if (bias != nullptr) {
    ep.col_bias = bias->data_ptr<const float>();
    ep.col_bias_stride = bias->strides[0];
  }
  if (residual != nullptr) {
    // Rows of the residual as out's: the same shape, its leading dims one run.
    int64_t r_rs = 0;
    EMBER_KERNEL_CHECK(ctx, std::ranges::equal(residual->shape(), out.shape()) &&
                                row_stride(*residual, &r_rs),
                       "residual: shape %s is not the output's %s as rows",
                       ShapeStr(residual->shape()).c_str(), ShapeStr(out.shape()).c_str());
    // The GEMM overwrites out before its epilogue reads the residual.
    EMBER_KERNEL_CHECK(ctx, !tensors_overlap(*residual, out),
                       "residual: its memory overlaps the output's (the memory plan must "
                       "keep them apart)");
    ep.residual = residual->data_ptr<const float>();
    ep.res_rs = residual->dim >= 2 ? r_rs : 0;
    ep.res_cs = residual->strides[residual->dim - 1];
  }
  if (min || max) {
    ep.clamp = true;
    if (min) ep.lo = static_cast<float>(*min);
    if (max) ep.hi = static_cast<float>(*max);
  }
  parse_activation(activation, &ep.activate, &ep.act);
  bf16_gemm(ctx, m, input.data_ptr<const float>(), a_rs, input.strides[input.dim - 1],
            state->weight, out.data_ptr<float>(), out.dim >= 2 ? out.strides[out.dim - 2] : n,
            &ep);
}

}  // namespace

Error linear_bf16_out_prepare(KernelPrepareContext& ctx, const Tensor& input, const Tensor& weight,
                              const Tensor* bias, Tensor& out) {
  return prepare_linear(ctx, input, weight, bias, nullptr, "none", std::nullopt, std::nullopt,
                        out);
}

void linear_bf16_out(KernelContext& ctx, const Tensor& input, const Tensor& weight,
                     const Tensor* bias, Tensor& out) {
  run_linear(ctx, input, weight, bias, nullptr, "none", std::nullopt, std::nullopt, out);
}

Error fused_linear_bf16_out_prepare(KernelPrepareContext& ctx, const Tensor& input,
                                    const Tensor& weight, const Tensor* bias,
                                    const Tensor* residual, std::string_view activation,
                                    std::optional<double> min, std::optional<double> max,
                                    Tensor& out) {
  return prepare_linear(ctx, input, weight, bias, residual, activation, min, max, out);
}

void fused_linear_bf16_out(KernelContext& ctx, const Tensor& input, const Tensor& weight,
                           const Tensor* bias, const Tensor* residual,
                           std::string_view activation, std::optional<double> min,
                           std::optional<double> max, Tensor& out) {
  run_linear(ctx, input, weight, bias, residual, activation, min, max, out);
}

}  // namespace ember::kernels::portable
