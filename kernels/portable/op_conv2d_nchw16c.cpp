// ember_fused::conv2d_nchw16c.out(Tensor input, Tensor weight, Tensor? bias, int[2] stride,
//     int[2] padding, Tensor? residual, float? min, float? max, *, Tensor(a!) out) -> Tensor(a!)
//
// A float32 2-D convolution (one group, dilation 1) on the channel-blocked
// layout NCHW16c, then + residual, then clamp(min, max): input
// [N, ⌈Cin/16⌉, H, W, 16] (or a plain NCHW [N, Cin ≤ 16, H, W]: a stem's
// three channels are read as they are, not padded to a block), weight the model's OIHW [Cout, Cin, KH, KW]
// (packed at prepare when it is a constant, as the pass makes sure; else
// into scratch on every call), bias [Cout], residual and out
// [N, ⌈Cout/16⌉, OH, OW, 16]; channels past Cout are written as zero.
// passes/nchw16c_layout.py writes it for the convolutions of a CNN, between
// to_nchw16c and from_nchw16c (op_nchw16c_layout.cpp). The kernel is
// util/conv_nchw16c.h: a direct convolution that reads the input in place,
// with the epilogue on each tile's registers; a 3×3 stride-1 layer on a large
// plane runs Winograd F(4×4, 3×3) instead (util/conv_nchw16c_winograd.h;
// EMBER_WINOGRAD=0 keeps the direct one).
#include <cstring>

#include "kernels/portable/util/args.h"
#include "kernels/portable/util/conv_nchw16c.h"
#include "kernels/portable/util/conv_nchw16c_winograd.h"
#include "kernels/portable/util/gemm.h"
#include "kernels/portable/util/parallel.h"
#include "kernels/generated/functions/portable/op_conv2d_nchw16c.h"

namespace ember::kernels::portable {
namespace {

constexpr int64_t kB = kNchw16cBlock;
constexpr int64_t kMaxTaps = 64;  // conv_nchw16c.cpp's tap table

struct Nchw16cPrepared {
  Nchw16cConv g;            // at the planned input size
  const float* weight;      // nchw16c_pack_weight; null: packed per call into scratch
  const float* bias;        // cout_blocks·16, zero past cout; null: per call
  Nchw16cKernel kernel;
  // Winograd F(4×4, 3×3) (conv_nchw16c_winograd.h), chosen at prepare for a
  // constant weight: the transformed weight and the products' zero bias.
  const float* winograd = nullptr;
  const float* zeros = nullptr;
};

// Scratch floats of a call: the packed weight and the bias when they were not
// constants, then the zero-bordered input when the layer pads (64-byte
// multiples each).
int64_t round16(int64_t v) { return (v + 15) / 16 * 16; }
int64_t weight_scratch(const Nchw16cConv& g, bool packed) {
  return packed ? 0 : round16(nchw16c_packed_weight_floats(g));
}
int64_t bias_scratch(const Nchw16cConv& g, bool copied) {
  return copied ? 0 : round16(g.cout_blocks() * kNchw16cBlock);
}

// The bias padded to whole blocks into `dst`.
void copy_bias(const Nchw16cConv& g, const Tensor* bias, float* dst) {
  std::memset(dst, 0, static_cast<size_t>(g.cout_blocks() * kNchw16cBlock) * sizeof(float));
  if (bias != nullptr) {
    std::memcpy(dst, bias->data_ptr<const float>(), static_cast<size_t>(g.cout) * sizeof(float));
  }
}

bool contiguous(const Tensor& t) { return t.is_contiguous_dim_order(); }

// The geometry for `input` (checked: a blocked float32 tensor whose blocks
// hold the weight's input channels), or false after failing.
template <typename Ctx>
bool geometry(Ctx& ctx, const Tensor& input, const Tensor& weight, IntSpan stride,
              IntSpan padding, Nchw16cConv* g) {
#define EMBER_GEOMETRY_FAIL(...)                   \
  do {                                             \
    (void)ctx.fail(Error::InvalidArgument, __VA_ARGS__); \
    return false;                                  \
  } while (0)
  if (input.dtype != ScalarType::Float) {
    EMBER_GEOMETRY_FAIL("input: dtype %s is not supported (float32 only)", scalar_type_name(input.dtype));
  }
  const bool plain = input.dim == 4;
  if (!contiguous(input) || !(plain || (input.dim == 5 && input.size(4) == kB))) {
    EMBER_GEOMETRY_FAIL("input: expected a contiguous NCHW16c tensor [N, C/16, H, W, 16] (or an "
                        "NCHW [N, C ≤ 16, H, W] one), got %d dimensions", input.dim);
  }
  if (weight.dtype != ScalarType::Float || weight.dim != 4) {
    EMBER_GEOMETRY_FAIL("weight: expected a float32 [Cout, Cin, KH, KW] tensor, got %s with %d "
                "dimensions", scalar_type_name(weight.dtype), weight.dim);
  }
  if (stride.size() != 2 || padding.size() != 2) {
    EMBER_GEOMETRY_FAIL("stride and padding: expected 2 values each, got %zu and %zu", stride.size(),
                padding.size());
  }
  g->cout = weight.size(0);
  g->cin = weight.size(1);
  g->kh = weight.size(2);
  g->kw = weight.size(3);
  g->stride_h = stride[0];
  g->stride_w = stride[1];
  g->pad_h = padding[0];
  g->pad_w = padding[1];
  g->plain_input = plain;
  g->in_h = input.size(2);
  g->in_w = input.size(3);
  if (g->cout < 1 || g->cin < 1 || g->kh < 1 || g->kw < 1 || g->kh * g->kw > kMaxTaps) {
    EMBER_GEOMETRY_FAIL("weight: [%lld, %lld, %lld, %lld] is not supported (at least one output and "
                "input channel, at most %lld kernel taps)",
                static_cast<long long>(g->cout), static_cast<long long>(g->cin),
                static_cast<long long>(g->kh), static_cast<long long>(g->kw),
                static_cast<long long>(kMaxTaps));
  }
  if (plain && (g->cin != input.size(1) || g->cin > kB)) {
    EMBER_GEOMETRY_FAIL("input: an NCHW input of %d channels for the weight's %lld input channels "
                        "(it takes at most %lld; block larger ones with to_nchw16c)",
                        input.size(1), static_cast<long long>(g->cin), static_cast<long long>(kB));
  }
  if (!plain && g->cin_blocks() != input.size(1)) {
    EMBER_GEOMETRY_FAIL("input: %d channel blocks, the weight's %lld input channels need %lld",
                input.size(1), static_cast<long long>(g->cin),
                static_cast<long long>(g->cin_blocks()));
  }
  if (g->stride_h < 1 || g->stride_w < 1 || g->pad_h < 0 || g->pad_w < 0) {
    EMBER_GEOMETRY_FAIL("stride [%lld, %lld] and padding [%lld, %lld]: strides must be at least 1 "
                "and padding at least 0",
                static_cast<long long>(g->stride_h), static_cast<long long>(g->stride_w),
                static_cast<long long>(g->pad_h), static_cast<long long>(g->pad_w));
  }
  const int64_t span_h = g->in_h + 2 * g->pad_h - g->kh;
  const int64_t span_w = g->in_w + 2 * g->pad_w - g->kw;
  if (span_h < 0 || span_w < 0) {
    EMBER_GEOMETRY_FAIL("input: %lld×%lld padded by [%lld, %lld] is smaller than the %lld×%lld kernel",
                static_cast<long long>(g->in_h), static_cast<long long>(g->in_w),
                static_cast<long long>(g->pad_h), static_cast<long long>(g->pad_w),
                static_cast<long long>(g->kh), static_cast<long long>(g->kw));
  }
  g->out_h = span_h / g->stride_h + 1;
  g->out_w = span_w / g->stride_w + 1;
  return true;
#undef EMBER_GEOMETRY_FAIL
}

// out's blocked shape for the geometry.
bool resize_blocked(KernelContext& ctx, const Tensor& input, const Nchw16cConv& g, Tensor& out) {
  const int32_t sizes[5] = {input.size(0), static_cast<int32_t>(g.cout_blocks()),
                            static_cast<int32_t>(g.out_h), static_cast<int32_t>(g.out_w),
                            static_cast<int32_t>(kB)};
  return resize_out(ctx, out, sizes);
}

}  // namespace

Error conv2d_nchw16c_out_prepare(KernelPrepareContext& ctx, const Tensor& input,
                                 const Tensor& weight, const Tensor* bias, IntSpan stride,
                                 IntSpan padding, const Tensor* residual,
                                 std::optional<double> min, std::optional<double> max,
                                 Tensor& out) {
  Nchw16cConv g;
  if (!geometry(ctx, input, weight, stride, padding, &g)) return ctx.failure();
  EMBER_PREPARE_CHECK(ctx, contiguous(weight), "weight: must be contiguous");
  if (bias != nullptr) {
    EMBER_PREPARE_CHECK(ctx, bias->dtype == ScalarType::Float && bias->dim == 1 &&
                                 bias->size(0) == g.cout,
                        "bias: expected a float32 [%lld] tensor", static_cast<long long>(g.cout));
  }
  EMBER_PREPARE_CHECK(ctx, out.dtype == ScalarType::Float,
                      "out: dtype %s is not the input's float32", scalar_type_name(out.dtype));
  EMBER_PREPARE_CHECK(ctx, out.dim == 5 && contiguous(out),
                      "out: expected a contiguous NCHW16c tensor, got %d dimensions", out.dim);
  if (residual != nullptr) {
    EMBER_PREPARE_CHECK(ctx, residual->dtype == ScalarType::Float,
                        "residual: dtype %s is not the input's float32",
                        scalar_type_name(residual->dtype));
    EMBER_PREPARE_CHECK(ctx, residual->dim == 5 && contiguous(*residual),
                        "residual: expected a contiguous NCHW16c tensor, got %d dimensions",
                        residual->dim);
  }
  EMBER_PREPARE_CHECK(ctx, !(min && max && *min > *max), "min: %g is greater than max %g",
                      min ? *min : 0.0, max ? *max : 0.0);

  auto* state = ctx.allocate_state<Nchw16cPrepared>();
  if (state == nullptr) return ctx.failure();
  state->g = g;
  state->kernel = nchw16c_kernel_for(g);
  if (ctx.is_constant(weight) && nchw16c_winograd_applies(g)) {
    auto* u = static_cast<float*>(
        ctx.allocate(static_cast<size_t>(nchw16c_winograd_weight_floats(g)) * sizeof(float)));
    auto* z = static_cast<float*>(
        ctx.allocate(static_cast<size_t>(g.cout_blocks() * kB) * sizeof(float)));
    if (u == nullptr || z == nullptr) return ctx.failure();
    nchw16c_winograd_pack_weight(g, weight.data_ptr<const float>(), u);
    std::memset(z, 0, static_cast<size_t>(g.cout_blocks() * kB) * sizeof(float));
    ctx.mark_packed(weight);
    state->winograd = u;
    state->zeros = z;
  } else if (ctx.is_constant(weight)) {
    auto* w = static_cast<float*>(
        ctx.allocate(static_cast<size_t>(nchw16c_packed_weight_floats(g)) * sizeof(float)));
    if (w == nullptr) return ctx.failure();
    nchw16c_pack_weight(g, weight.data_ptr<const float>(), w);
    ctx.mark_packed(weight);
    state->weight = w;
  }
  if (bias == nullptr || ctx.is_constant(*bias)) {
    auto* b = static_cast<float*>(
        ctx.allocate(static_cast<size_t>(g.cout_blocks() * kB) * sizeof(float)));
    if (b == nullptr) return ctx.failure();
    copy_bias(g, bias, b);
    if (bias != nullptr) ctx.mark_packed(*bias);
    state->bias = b;
  }
  const bool packed = state->weight != nullptr || state->winograd != nullptr;
  const int64_t floats = weight_scratch(g, packed) + bias_scratch(g, state->bias != nullptr) +
                         (state->winograd != nullptr ? nchw16c_winograd_scratch_floats(g)
                                                     : nchw16c_scratch_floats(g));
  ctx.reserve_scratch(static_cast<size_t>(floats) * sizeof(float));
  ctx.set_state(state);
  return Error::Ok;
}

void conv2d_nchw16c_out(KernelContext& ctx, const Tensor& input, const Tensor& weight,
                        const Tensor* bias, IntSpan stride, IntSpan padding,
                        const Tensor* residual, std::optional<double> min,
                        std::optional<double> max, Tensor& out) {
  const auto* p = static_cast<const Nchw16cPrepared*>(ctx.state());
  EMBER_KERNEL_CHECK(ctx, p != nullptr, "the kernel was not prepared (load_method runs it)");
  Nchw16cConv g;
  if (!geometry(ctx, input, weight, stride, padding, &g)) return;
  // The packed weight and the scratch were sized for the planned input; a
  // dynamic input may be smaller, never another layer.
  EMBER_KERNEL_CHECK(ctx, g.cout == p->g.cout && g.cin == p->g.cin && g.kh == p->g.kh &&
                              g.kw == p->g.kw,
                     "weight: its shape changed since load");
  if (!resize_blocked(ctx, input, g, out)) return;
  if (residual != nullptr) {
    if (!check_same_shape(ctx, *residual, "residual", out, "out")) return;
    EMBER_KERNEL_CHECK(ctx, !tensors_overlap(*residual, out) || residual->data == out.data,
                       "residual: its memory overlaps the output's (the memory plan must "
                       "keep them apart)");
  }
  EMBER_KERNEL_CHECK(ctx, !tensors_overlap(input, out),
                     "input: its memory overlaps the output's (the memory plan must keep them "
                     "apart)");
  if (bias != nullptr) {
    EMBER_KERNEL_CHECK(ctx, bias->dtype == ScalarType::Float && bias->numel == g.cout,
                       "bias: expected a float32 [%lld] tensor", static_cast<long long>(g.cout));
  }
  const bool winograd = p->winograd != nullptr;
  const int64_t w_floats = weight_scratch(g, p->weight != nullptr || winograd);
  const int64_t b_floats = bias_scratch(g, p->bias != nullptr);
  const int64_t floats = w_floats + b_floats + (winograd ? nchw16c_winograd_scratch_floats(g)
                                                         : nchw16c_scratch_floats(g));
  auto* scratch = static_cast<float*>(ctx.scratch(static_cast<size_t>(floats) * sizeof(float)));
  EMBER_KERNEL_CHECK(ctx, floats == 0 || scratch != nullptr,
                     "needs %zu bytes of scratch, the method has %zu (a larger input than the "
                     "planned one?)", static_cast<size_t>(floats) * sizeof(float),
                     ctx.scratch_size());
  const float* packed_w = p->weight;
  if (packed_w == nullptr && !winograd) {
    nchw16c_pack_weight(g, weight.data_ptr<const float>(), scratch);
    packed_w = scratch;
  }
  const float* packed_b = p->bias;
  if (packed_b == nullptr) {
    copy_bias(g, bias, scratch + w_floats);
    packed_b = scratch + w_floats;
  }
  float* padded = scratch != nullptr ? scratch + w_floats + b_floats : nullptr;
  Nchw16cEpilogue ep;
  ep.bias = packed_b;
  ep.clamp = min.has_value() || max.has_value();
  if (min) ep.lo = static_cast<float>(*min);
  if (max) ep.hi = static_cast<float>(*max);
  const int64_t in_image = input.numel / (input.size(0) > 0 ? input.size(0) : 1);
  const int64_t out_image = out.numel / (out.size(0) > 0 ? out.size(0) : 1);
  const int64_t units = nchw16c_units(g);
  const int64_t macs = g.cout * g.out_h * g.out_w * g.cin * g.kh * g.kw;
  for (int64_t n = 0; n < input.size(0); ++n) {
    const float* x = input.data_ptr<const float>() + n * in_image;
    ep.residual = residual != nullptr ? residual->data_ptr<const float>() + n * out_image : nullptr;
    if (winograd) {
      nchw16c_winograd(ctx, g, p->kernel, x, p->winograd, ep, p->zeros,
                       out.data_ptr<float>() + n * out_image, padded);
      continue;
    }
    if (g.padded()) {
      nchw16c_pad_input(g, x, padded);
      x = padded;
    }
    float* o = out.data_ptr<float>() + n * out_image;
    auto run = [&](int64_t first, int64_t last) {
      nchw16c_conv_units(g, p->kernel, x, packed_w, ep, o, first, last);
    };
    if (macs < kGemmParallelMinMacs) {
      run(0, units);
    } else {
      parallel_range(ctx, units, 1, 1, run);
    }
  }
}

}  // namespace ember::kernels::portable
