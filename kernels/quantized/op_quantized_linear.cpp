// ember_quantized::linear.out(Tensor input, float input_scale, int input_zero_point,
//     Tensor weight, Tensor weight_scales, Tensor? bias, float output_scale,
//     int output_zero_point, int output_min, int output_max, *, Tensor(a!) out)
// ember_quantized::linear_dynamic.out(Tensor input, Tensor weight, Tensor weight_scales,
//     Tensor? bias, int quant_min, int quant_max, float eps, *, Tensor(a!) out)
//
// What ember.exir.passes.fuse_quantized_ops makes of pt2e's
//   quantize(addmm(dequantize(bias), dequantize(x), permute(dequantize(w)))):
// input int8 [..., K] with (input_scale, input_zero_point), weight int8 [N, K]
// symmetric with one scale per output channel, bias float32 [N] (the
// dequantized int32 bias). out int8 [..., N] =
//   clamp(round_half_even(Σ_k w·(x − zx) · s_x·s_w[n] / s_y + bias[n] / s_y) + zy,
//         output_min, output_max)
// (a fused relu or hardtanh is the clamp range). The products are summed
// exactly in int32 (qgemm.h); eager sums dequantized floats, so a value can
// land one step away where eager's float sum sits on a rounding tie.
//
// linear_dynamic: input float32; its per-tensor parameters are chosen at run
// time as choose_qparams.tensor does, the input quantized as
// quantize_per_tensor.tensor does, and out float32 = Σ_k w·(x − zx) · s_x·s_w[n]
// + bias[n].
//
// Prepare packs the weight for the microkernel (it is not read again), and
// computes the per-channel factors; everything the program fixes is checked
// there.
#include <cstring>

#include "kernels/generated/functions/quantized/op_quantized_linear.h"
#include "kernels/portable/util/args.h"
#include "kernels/quantized/util/qgemm.h"
#include "kernels/quantized/util/qlinear_avx2.h"
#include "kernels/quantized/util/qlinear_params.h"
#include "kernels/quantized/util/qlinear_vnni.h"
#include "kernels/quantized/util/qparams.h"

namespace ember::kernels::quantized {
namespace {

using portable::resize_out;

// On AVX-512 VNNI hosts the weight is packed for the token-major GEMM
// (qlinear_vnni.h; on AMX hosts for its tiles), on AVX2 ones for its int16 counterpart
// (qlinear_avx2.h), elsewhere for qgemm.h's; w.m and w.k are set either way.
struct LinearState {
  QPackedWeights w;
  QLinearWeights lw;
  QLinear16Weights lw16;
  bool token_major = false;
  bool token_major16 = false;
  QChannelFactors f;
};

// Scratch bytes of one call over `tokens` rows, beyond the op's own.
size_t gemm_scratch(const LinearState& s, int64_t tokens, size_t threads) {
  if (s.token_major) return qlinear_rows_bytes(tokens, s.w.k, s.lw.amx);
  if (s.token_major16) return qlinear16_rows_bytes(tokens, s.w.k);
  return qgemm_scratch_bytes(s.w, tokens, threads);
}

// C = epilogue(W · (X − zx)) for int8 rows x (tokens × k); `scratch` holds
// gemm_scratch bytes.
void run_gemm(KernelContext& ctx, const LinearState& s, const int8_t* x, int32_t zx,
              int64_t tokens, QEpilogue e, void* scratch) {
  if (s.token_major) {
    auto* rows = static_cast<uint8_t*>(scratch);
    qlinear_pack_rows(x, tokens, s.w.k, rows, s.lw.amx);
    qlinear_run(ctx, s.lw, rows, tokens, zx, e);
    return;
  }
  if (s.token_major16) {
    auto* rows = static_cast<int16_t*>(scratch);
    qlinear16_pack_rows(x, tokens, s.w.k, zx, rows);
    qlinear16_run(ctx, s.lw16, rows, tokens, e);
    return;
  }
  QActivations a;
  a.kind = QActivations::Kind::kRows;
  a.x = x;
  a.zx = zx;
  a.n = tokens;
  a.ld = s.w.k;
  e.c_rs = 1;
  e.c_cs = s.w.m;
  qgemm_run(ctx, s.w, a, e, scratch);
}

// Tokens of `input` ([..., K]) and out's shape ([..., N]); false after failing.
bool linear_shapes(KernelContext& ctx, const Tensor& input, const LinearState& s,
                   Tensor& out, int64_t* tokens) {
  if (input.dim < 1 || input.sizes[input.dim - 1] != s.w.k) {
    ctx.fail(Error::InvalidArgument, "input's last dimension must be the weight's %lld "
             "input features (input has %d dimensions, last %d)",
             static_cast<long long>(s.w.k), static_cast<int>(input.dim),
             input.dim > 0 ? static_cast<int>(input.sizes[input.dim - 1]) : 0);
    return false;
  }
  if (!input.is_contiguous_dim_order()) {
    ctx.fail(Error::InvalidArgument, "input must have contiguous dim order");
    return false;
  }
  int32_t shape[kTensorMaxDim];
  for (int i = 0; i < input.dim; ++i) shape[i] = input.sizes[i];
  shape[input.dim - 1] = static_cast<int32_t>(s.w.m);
  if (!resize_out(ctx, out, std::span<const int32_t>(shape, static_cast<size_t>(input.dim)))) {
    return false;
  }
  *tokens = s.w.k > 0 ? input.numel / s.w.k : 0;
  return true;
}

Error prepare_linear(KernelPrepareContext& ctx, const Tensor& input,
                     const Tensor& weight, const Tensor& weight_scales, const Tensor* bias,
                     double input_scale, double output_scale, size_t extra_scratch,
                     size_t scratch_per_token) {
  LinearState* s = ctx.allocate_state<LinearState>();
  if (s == nullptr) return ctx.failure();
  if (Error e = prepare_channel_factors(ctx, weight, 2, weight_scales, bias, input_scale,
                                        output_scale, &s->f);
      e != Error::Ok) {
    return e;
  }
  const int64_t n = weight.sizes[0], k = weight.sizes[1];
  const QGemmKind kind = qgemm_kind();
  s->token_major = kind == QGemmKind::kAvx512Vnni;
  s->token_major16 = kind == QGemmKind::kAvx2;
  const bool amx = s->token_major && qlinear_amx_available();
  const size_t bytes = s->token_major     ? qlinear_packed_bytes(n, k, amx)
                       : s->token_major16 ? qlinear16_packed_bytes(n, k)
                                          : qgemm_packed_bytes(kind, n, k);
  void* data = ctx.allocate(bytes);
  // Per-channel weight sums: the int16 layout takes x − zx and needs none.
  auto* sums = s->token_major16 ? nullptr
                                : static_cast<int32_t*>(
                                      ctx.allocate(static_cast<size_t>(n) * sizeof(int32_t)));
  if (data == nullptr || (sums == nullptr && !s->token_major16)) return ctx.failure();
  if (s->token_major16) {
    // The rows arrive as x − zx: no per-channel sums.
    s->lw16 = qlinear16_pack_weights(weight.data_ptr<const int8_t>(), n, k, data);
    s->w.kind = kind;
    s->w.m = n;
    s->w.k = k;
  } else if (s->token_major) {
    s->lw = qlinear_pack_weights(weight.data_ptr<const int8_t>(), n, k, data, sums, amx);
    s->w.kind = kind;
    s->w.m = n;
    s->w.k = k;
  } else {
    s->w = qgemm_pack_weights(kind, weight.data_ptr<const int8_t>(), n, k, k, data, sums);
  }
  const int64_t tokens = k > 0 ? input.numel / k : 0;  // Planned size: a dynamic one's bound.
  ctx.reserve_scratch(gemm_scratch(*s, tokens, ctx.threads()) + extra_scratch +
                      scratch_per_token * static_cast<size_t>(tokens));
  ctx.set_state(s);
  ctx.mark_packed(weight);
  return Error::Ok;
}

}  // namespace

Error linear_out_prepare(KernelPrepareContext& ctx, const Tensor& input, double input_scale,
                         int64_t input_zero_point, const Tensor& weight,
                         const Tensor& weight_scales, const Tensor* bias, double output_scale,
                         int64_t output_zero_point, int64_t output_min, int64_t output_max,
                         Tensor& out) {
  if (Error e = check_static_qargs(ctx, input, "input", input_scale, input_zero_point, out,
                                   output_scale, output_zero_point, output_min, output_max);
      e != Error::Ok) {
    return e;
  }
  return prepare_linear(ctx, input, weight, weight_scales, bias, input_scale, output_scale,
                        0, 0);
}

void linear_out(KernelContext& ctx, const Tensor& input, double, int64_t input_zero_point,
                const Tensor&, const Tensor&, const Tensor*, double, int64_t output_zero_point,
                int64_t output_min, int64_t output_max, Tensor& out) {
  const auto* s = static_cast<const LinearState*>(ctx.state());
  EMBER_KERNEL_CHECK(ctx, s != nullptr, "not prepared");
  EMBER_KERNEL_CHECK(ctx, input.dtype == ScalarType::Char, "input must be int8, got %s",
                     scalar_type_name(input.dtype));
  int64_t tokens = 0;
  if (!linear_shapes(ctx, input, *s, out, &tokens)) return;
  if (tokens == 0 || s->w.m == 0) return;
  QEpilogue e;
  e.scale = s->f.scale;
  e.offset = s->f.offset;
  e.zp = static_cast<int32_t>(output_zero_point);
  e.lo = static_cast<int32_t>(output_min);
  e.hi = static_cast<int32_t>(output_max);
  e.c = out.data;
  const size_t need = gemm_scratch(*s, tokens, ctx.threads());
  void* scratch = ctx.scratch(need);
  EMBER_KERNEL_CHECK(ctx, need == 0 || scratch != nullptr,
                     "%zu bytes of scratch memory needed, %zu reserved", need,
                     ctx.scratch_size());
  run_gemm(ctx, *s, input.data_ptr<const int8_t>(), static_cast<int32_t>(input_zero_point),
           tokens, e, scratch);
}

Error linear_dynamic_out_prepare(KernelPrepareContext& ctx, const Tensor& input,
                                 const Tensor& weight, const Tensor& weight_scales,
                                 const Tensor* bias, int64_t quant_min, int64_t quant_max,
                                 double eps, Tensor& out) {
  if (input.dtype != ScalarType::Float) {
    return ctx.fail(Error::InvalidProgram, "input: dtype %s is not supported (float32 only)",
                    scalar_type_name(input.dtype));
  }
  if (!(quant_min == -128 && quant_max == 127)) {
    return ctx.fail(Error::InvalidProgram, "[quant_min, quant_max] = [%lld, %lld]; the "
                    "kernel quantizes activations to int8's full range [-128, 127]",
                    static_cast<long long>(quant_min), static_cast<long long>(quant_max));
  }
  if (!(eps > 0.0 && eps < 1.0)) {
    return ctx.fail(Error::InvalidProgram, "eps %g must lie in (0, 1)", eps);
  }
  if (input.dtype != ScalarType::Float || out.dtype != ScalarType::Float) {
    return ctx.fail(Error::InvalidProgram, "input and out must be float32, got %s and %s",
                    scalar_type_name(input.dtype), scalar_type_name(out.dtype));
  }
  const int64_t k = weight.dim == 2 ? weight.sizes[1] : 0;
  // The quantized input (one byte per element) goes before the GEMM's scratch.
  return prepare_linear(ctx, input, weight, weight_scales, bias, 1.0, 1.0, 64,
                        static_cast<size_t>(k));
}

void linear_dynamic_out(KernelContext& ctx, const Tensor& input, const Tensor&, const Tensor&,
                        const Tensor*, int64_t quant_min, int64_t quant_max, double eps,
                        Tensor& out) {
  const auto* s = static_cast<const LinearState*>(ctx.state());
  EMBER_KERNEL_CHECK(ctx, s != nullptr, "not prepared");
  EMBER_KERNEL_CHECK(ctx, input.dtype == ScalarType::Float, "input must be float32, got %s",
                     scalar_type_name(input.dtype));
  int64_t tokens = 0;
  if (!linear_shapes(ctx, input, *s, out, &tokens)) return;
  if (tokens == 0 || s->w.m == 0) return;
  if (s->w.k == 0) {
    float* o = out.data_ptr<float>();
    for (int64_t t = 0; t < tokens; ++t) {
      for (int64_t c = 0; c < s->w.m; ++c) o[t * s->w.m + c] = s->f.offset ? s->f.offset[c] : 0.0f;
    }
    return;
  }
  const size_t q_bytes = (static_cast<size_t>(input.numel) + 63) / 64 * 64;
  const size_t gemm_bytes = gemm_scratch(*s, tokens, ctx.threads());
  auto* scratch = static_cast<uint8_t*>(ctx.scratch(q_bytes + gemm_bytes));
  EMBER_KERNEL_CHECK(ctx, scratch != nullptr, "%zu bytes of scratch memory needed, %zu "
                     "reserved", q_bytes + gemm_bytes, ctx.scratch_size());
  const float* xf = input.data_ptr<const float>();
  float scale = 0.0f;
  int64_t zp = 0;
  choose_qparams_f32(xf, input.numel, quant_min, quant_max, eps, &scale, &zp);
  // quantize_per_tensor.tensor: float32 input times the float32 of 1 / scale.
  const auto inv = static_cast<float>(1.0 / static_cast<double>(scale));
  const auto zf = static_cast<float>(zp);
  QEpilogue e;
  e.scale = s->f.scale;
  e.scale_mul = scale;
  e.offset = s->f.offset;
  e.float_out = true;
  e.c = out.data;
  if (s->token_major) {
    // Quantized straight into the GEMM's rows.
    qlinear_quantize_rows(xf, tokens, s->w.k, inv, static_cast<int32_t>(zp), scratch + q_bytes,
                          s->lw.amx);
    qlinear_run(ctx, s->lw, scratch + q_bytes, tokens, static_cast<int32_t>(zp), e);
    return;
  }
  auto* xq = reinterpret_cast<int8_t*>(scratch);
  quantize_f32_s8(xf, xq, input.numel, inv, -128.0f - zf, 127.0f - zf, static_cast<int32_t>(zp));
  run_gemm(ctx, *s, xq, static_cast<int32_t>(zp), tokens, e, scratch + q_bytes);
}

}  // namespace ember::kernels::quantized
