// quantized_decomposed::quantize_per_tensor.out(Tensor input, float scale, int zero_point,
//     int quant_min, int quant_max, ScalarType dtype, *, Tensor(a!) out) -> Tensor(a!)
// quantized_decomposed::quantize_per_tensor.tensor_out(Tensor input, Tensor scale,
//     Tensor zero_point, int quant_min, int quant_max, ScalarType dtype, *, Tensor(a!) out)
// quantized_decomposed::quantize_per_channel.out(Tensor input, Tensor scales,
//     Tensor zero_points, int axis, int quant_min, int quant_max, ScalarType dtype, *,
//     Tensor(a!) out) -> Tensor(a!)
//
// out = clamp(round_half_even(input * (1 / scale)) + zero_point, quant_min, quant_max),
// computed as PyTorch does: in float32, except per channel with float64
// scales (then in float64). Input float32 (16-bit floats are widened).
#include "kernels/portable/util/args.h"
#include "kernels/quantized/util/dispatch.h"
#include "kernels/quantized/util/qop_args.h"
#include "kernels/quantized/util/qparams.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember::kernels::quantized {
namespace {

using portable::convert;
using portable::fail_dtype;
using portable::resize_out;

constexpr QParamArgs kPerTensor{1, 2, 3, 4, 5};
constexpr QParamArgs kPerChannel{1, 2, 4, 5, 6};

// Checks what every variant shares; on success `*input`, `*out` are set and
// `out` has the input's shape.
bool prepare(KernelContext& ctx, EValue** args, const QParamArgs& layout, int out_index,
             Tensor** input, Tensor** out) {
  if (!read_qop_tensors(ctx, args, layout, out_index, input, out)) return false;
  const auto dtype = static_cast<ScalarType>(args[layout.dtype]->as_int);
  if ((*out)->dtype != dtype) {
    ctx.fail(Error::InvalidArgument, "out: dtype %s differs from dtype %s",
             scalar_type_name((*out)->dtype), scalar_type_name(dtype));
    return false;
  }
  if (!is_quantize_input_dtype((*input)->dtype)) {
    fail_dtype(ctx, "input", (*input)->dtype);
    return false;
  }
  return resize_out(ctx, **out, (*input)->shape());
}

void quantize_per_tensor_out(KernelContext& ctx, EValue** args) {
  Tensor *input = nullptr, *out = nullptr;
  if (!prepare(ctx, args, kPerTensor, 6, &input, &out)) return;
  double scale = 1.0;
  int64_t zp = 0;
  if (!read_per_tensor_params(ctx, args, 1, 2, &scale, &zp)) return;
  // PyTorch multiplies a float32 tensor by the Python float 1/scale in float32.
  const auto inv = static_cast<float>(1.0 / scale);
  const auto z = static_cast<float>(zp);
  const auto qmin = static_cast<float>(args[3]->as_int);
  const auto qmax = static_cast<float>(args[4]->as_int);
  const bool ok = dispatch_quantize_input(input->dtype, [&](auto in_tag) {
    using In = typename decltype(in_tag)::type;
    (void)dispatch_quant_dtype(out->dtype, [&](auto out_tag) {
      using Q = typename decltype(out_tag)::type;
      map_with_channel<In, Q>(*input, *out, -1, [&](In x, int64_t) {
        return static_cast<Q>(quantize_value(convert<float>(x), inv, z, qmin, qmax));
      });
    });
  });
  if (!ok) fail_dtype(ctx, "input", input->dtype);
}

void quantize_per_channel_out(KernelContext& ctx, EValue** args) {
  Tensor *input = nullptr, *out = nullptr;
  if (!prepare(ctx, args, kPerChannel, 7, &input, &out)) return;
  ChannelQParams p;
  if (!read_channel_qparams(ctx, args, kPerChannel, *input, &p)) return;
  dispatch_scale_dtype(p.scales->dtype, [&](auto ct_tag) {
    using CT = typename decltype(ct_tag)::type;
    const auto qmin = static_cast<CT>(args[4]->as_int);
    const auto qmax = static_cast<CT>(args[5]->as_int);
    (void)dispatch_quantize_input(input->dtype, [&](auto in_tag) {
      using In = typename decltype(in_tag)::type;
      (void)dispatch_quant_dtype(out->dtype, [&](auto out_tag) {
        using Q = typename decltype(out_tag)::type;
        const CT* s = p.scales->data_ptr<const CT>();
        map_with_channel<In, Q>(*input, *out, p.axis, [&](In x, int64_t c) {
          // 1 / scales is a tensor op in the scales' dtype; so is the product.
          const CT inv = CT(1) / s[c * p.scale_step];
          const auto z = static_cast<CT>(p.zero_point(c));
          return static_cast<Q>(quantize_value(convert<CT>(convert<float>(x)), inv, z, qmin, qmax));
        });
      });
    });
  });
}

}  // namespace

EMBER_REGISTER_KERNEL_WITH_CHECK("quantized_decomposed::quantize_per_tensor.out",
                                 quantize_per_tensor_out, 8, load_check_qparams<kPerTensor>);
EMBER_REGISTER_KERNEL_WITH_CHECK("quantized_decomposed::quantize_per_tensor.tensor_out",
                                 quantize_per_tensor_out, 8, load_check_qparams<kPerTensor>);
EMBER_REGISTER_KERNEL_WITH_CHECK("quantized_decomposed::quantize_per_channel.out",
                                 quantize_per_channel_out, 9, load_check_qparams<kPerChannel>);

}  // namespace ember::kernels::quantized
