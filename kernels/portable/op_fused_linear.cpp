// ember_fused::fused_linear.out(Tensor input, Tensor mat2, Tensor? bias, Tensor? residual,
//     str activation="none", float? min=None, float? max=None, *, Tensor(a!) out) -> Tensor(a!)
//
// out = act(clamp(input · mat2 + bias + residual, min, max)), float32: what
// passes/fuse_linear_activation.py makes of a linear layer (addmm or mm, with
// the weight transposed as mat2 [k, n]) followed by a residual add and/or an
// activation (relu/hardtanh/clamp as min/max, GELU as `activation`: "gelu"
// or "gelu_tanh"). The product is aten::addmm.out's GEMM on the weight packed
// at prepare; the bias, residual, clamp and activation are its epilogue, done
// to each output tile while it is in L1, by the loops the unfused ops run
// (GemmEpilogue, unary_f32), so the result has the unfused program's bits.
#include <cstring>

#include "kernels/portable/util/args.h"
#include "kernels/portable/util/matmul.h"
#include "kernels/portable/util/matmul_out.h"
#include "kernels/generated/functions/portable/op_fused_linear.h"

namespace ember::kernels::portable {
namespace {

// "none" → false; "gelu" / "gelu_tanh" → true and the unary_f32 op.
bool parse_activation(std::string_view name, bool* activate, UnaryF32* act) {
  *activate = name != "none";
  if (name == "gelu") *act = UnaryF32::GeluErf;
  else if (name == "gelu_tanh") *act = UnaryF32::GeluTanh;
  else return name == "none";
  return true;
}

Error check_float(KernelPrepareContext& ctx, const Tensor& t, const char* name) {
  EMBER_PREPARE_CHECK(ctx, t.dtype == ScalarType::Float,
                      "%s: dtype %s is not supported (float32 only)", name,
                      scalar_type_name(t.dtype));
  return Error::Ok;
}

}  // namespace

Error fused_linear_out_prepare(KernelPrepareContext& ctx, const Tensor& input, const Tensor& mat2,
                               const Tensor* bias, const Tensor* residual,
                               std::string_view activation, std::optional<double> min,
                               std::optional<double> max, Tensor& out) {
  bool activate = false;
  UnaryF32 act = UnaryF32::GeluErf;
  EMBER_PREPARE_CHECK(ctx, parse_activation(activation, &activate, &act),
                      "activation: must be 'none', 'gelu' or 'gelu_tanh', got '%.*s'",
                      static_cast<int>(activation.size()), activation.data());
  const Tensor* floats[] = {&input, &mat2, bias, residual, &out};
  const char* names[] = {"input", "mat2", "bias", "residual", "out"};
  for (int i = 0; i < 5; ++i) {
    if (floats[i] == nullptr) continue;
    if (const Error err = check_float(ctx, *floats[i], names[i]); err != Error::Ok) return err;
  }
  EMBER_PREPARE_CHECK(ctx, input.dim == 2, "input: expected a 2-D tensor, got %d dimensions",
                      input.dim);
  EMBER_PREPARE_CHECK(ctx, mat2.dim == 2, "mat2: expected a 2-D tensor, got %d dimensions",
                      mat2.dim);
  EMBER_PREPARE_CHECK(ctx, bias == nullptr || bias->dim == 1,
                      "bias: expected a 1-D tensor, got %d dimensions", bias->dim);
  EMBER_PREPARE_CHECK(ctx, residual == nullptr || residual->dim == 2,
                      "residual: expected a 2-D tensor, got %d dimensions", residual->dim);
  EMBER_PREPARE_CHECK(ctx, !(min && max && *min > *max), "min: %g is greater than max %g",
                      min ? *min : 0.0, max ? *max : 0.0);
  return prepare_constant_mat2(ctx, input, mat2);
}

void fused_linear_out(KernelContext& ctx, const Tensor& input, const Tensor& mat2,
                      const Tensor* bias, const Tensor* residual, std::string_view activation,
                      std::optional<double> min, std::optional<double> max, Tensor& out) {
  // Prepare checked the dtypes, ranks, bounds and activation.
  EMBER_KERNEL_CHECK(ctx, input.sizes[1] == mat2.sizes[0],
                     "input of shape %s and mat2 of shape %s cannot be multiplied",
                     ShapeStr(input.shape()).c_str(), ShapeStr(mat2.shape()).c_str());
  const int64_t m = input.sizes[0], k = input.sizes[1], n = mat2.sizes[1];
  const int32_t shape[2] = {input.sizes[0], mat2.sizes[1]};
  EMBER_KERNEL_CHECK(ctx, bias == nullptr || bias->sizes[0] == n,
                     "bias: %d values for %lld output features", bias->sizes[0],
                     static_cast<long long>(n));
  if (residual != nullptr) {
    EMBER_KERNEL_CHECK(ctx, residual->sizes[0] == m && residual->sizes[1] == n,
                       "residual: shape %s is not the output's %s",
                       ShapeStr(residual->shape()).c_str(), ShapeStr(shape).c_str());
  }
  if (!resize_out(ctx, out, shape)) return;
  if (residual != nullptr) {
    // The GEMM overwrites out before its epilogue reads the residual.
    EMBER_KERNEL_CHECK(ctx, !tensors_overlap(*residual, out),
                       "residual: its memory overlaps the output's (the memory plan must "
                       "keep them apart)");
  }
  GemmEpilogue<float> ep{};
  if (bias != nullptr) {
    ep.col_bias = bias->data_ptr<const float>();
    ep.col_bias_stride = bias->strides[0];
  }
  if (residual != nullptr) {
    ep.residual = residual->data_ptr<const float>();
    ep.res_rs = residual->strides[0];
    ep.res_cs = residual->strides[1];
  }
  if (min || max) {
    ep.clamp = true;
    if (min) ep.lo = static_cast<float>(*min);
    if (max) ep.hi = static_cast<float>(*max);
  }
  parse_activation(activation, &ep.activate, &ep.act);
  const MatmulPrepared* prepared = prepared_mat2(ctx, mat2);
  matmul_strided<float>(ctx, m, n, k, MatView{input.data, 0, input.strides[0], input.strides[1]},
                        MatView{mat2.data, 0, mat2.strides[0], mat2.strides[1]},
                        MatView{out.data, 0, out.strides[0], out.strides[1]}, 1.0, 0.0,
                        prepared != nullptr ? &prepared->panels : nullptr, &ep);
}

}  // namespace ember::kernels::portable
