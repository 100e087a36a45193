// aten::convolution.out(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride,
//     SymInt[] padding, SymInt[] dilation, bool transposed, SymInt[] output_padding,
//     SymInt groups, *, Tensor(a!) out) -> Tensor(a!)
// args: input, weight, bias (None or Tensor), stride, padding, dilation,
// transposed, output_padding, groups, out, out(return).
//
// 1-D ([N, C, L]) and 2-D ([N, C, H, W]) convolution with groups, float32 and
// float64 (all tensors one dtype), any dim orders (e.g. channels-last).
// Transposed convolution fails with NotSupported. Each (batch, group) is one
// GEMM: out[OCg × OH·OW] = weight[OCg × Cg·KH·KW] · columns, where the im2col
// columns are packed straight into the GEMM's panels (no column buffer).
#include "kernels/portable/util/args.h"
#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/gemm.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember::kernels::portable {
namespace {

struct ConvGeometry {
  int64_t c_per_group, kh, kw;
  int64_t in_h, in_w, out_h, out_w;
  int64_t stride_h, stride_w, pad_h, pad_w, dil_h, dil_w;
};

// A = weight of one group seen as [OCg, Cg·KH·KW]; k decodes to (c, kh, kw).
template <typename T>
struct WeightSource {
  const T* w;  // At the group's first output channel.
  int64_t s_oc, s_c, s_h, s_w;
  const ConvGeometry* g;

  void pack_a(int64_t i0, int64_t mc, int64_t p0, int64_t kc, T* dst) const {
    constexpr int kMR = GemmBlocking<T>::kMR;
    const int64_t khw = g->kh * g->kw;
    for (int64_t s = 0; s < mc; s += kMR) {
      const int64_t rows = mc - s < kMR ? mc - s : kMR;
      for (int64_t p = 0; p < kc; ++p) {
        const int64_t k = p0 + p;
        const int64_t c = k / khw;
        const int64_t r = k - c * khw;
        const int64_t y = r / g->kw;
        const int64_t x = r - y * g->kw;
        const T* src = w + (i0 + s) * s_oc + c * s_c + y * s_h + x * s_w;
        T* d = dst + p * kMR;
        for (int64_t ii = 0; ii < kMR; ++ii) d[ii] = ii < rows ? src[ii * s_oc] : T(0);
      }
      dst += kc * kMR;
    }
  }
};

// B = im2col columns of one (batch, group): [Cg·KH·KW, OH·OW], zero outside
// the input (padding).
template <typename T>
struct Im2colSource {
  const T* x;  // At the batch's and group's first input channel.
  int64_t s_c, s_h, s_w;
  const ConvGeometry* g;

  void pack_b(int64_t p0, int64_t kc, int64_t j0, int64_t nc, T* dst) const {
    constexpr int kNR = GemmBlocking<T>::kNR;
    const int64_t khw = g->kh * g->kw;
    for (int64_t s = 0; s < nc; s += kNR) {
      const int64_t cols = nc - s < kNR ? nc - s : kNR;
      // Top-left input coordinates of each output position in the strip.
      int64_t ih0[kNR];
      int64_t iw0[kNR];
      for (int64_t jj = 0; jj < kNR; ++jj) {
        const int64_t col = j0 + s + (jj < cols ? jj : 0);
        const int64_t oh = col / g->out_w;
        const int64_t ow = col - oh * g->out_w;
        ih0[jj] = oh * g->stride_h - g->pad_h;
        iw0[jj] = ow * g->stride_w - g->pad_w;
      }
      for (int64_t p = 0; p < kc; ++p) {
        const int64_t k = p0 + p;
        const int64_t c = k / khw;
        const int64_t r = k - c * khw;
        const int64_t y = r / g->kw;
        const int64_t xx = r - y * g->kw;
        const T* plane = x + c * s_c;
        T* d = dst + p * kNR;
        for (int64_t jj = 0; jj < kNR; ++jj) {
          const int64_t ih = ih0[jj] + y * g->dil_h;
          const int64_t iw = iw0[jj] + xx * g->dil_w;
          const bool inside = jj < cols && ih >= 0 && ih < g->in_h && iw >= 0 && iw < g->in_w;
          d[jj] = inside ? plane[ih * s_h + iw * s_w] : T(0);
        }
      }
      dst += kc * kNR;
    }
  }
};

// Reads a stride/padding/dilation list: one value per spatial dim, or one
// value for all. False after failing.
bool spatial_list(KernelContext& ctx, EValue** args, int index, const char* name,
                  int32_t spatial, int64_t min_value, int64_t* out) {
  std::span<const int64_t> list;
  if (!int_list_arg(ctx, args, index, name, &list)) return false;
  if (list.size() != 1 && list.size() != static_cast<size_t>(spatial)) {
    ctx.fail(Error::InvalidArgument, "%s: expected %d values, got %s", name, spatial,
             ShapeStr(list).c_str());
    return false;
  }
  for (int32_t i = 0; i < spatial; ++i) {
    out[i] = list[list.size() == 1 ? 0 : i];
    if (out[i] < min_value || out[i] > INT32_MAX) {
      ctx.fail(Error::InvalidArgument, "%s: %s has a value below %lld", name,
               ShapeStr(list).c_str(), static_cast<long long>(min_value));
      return false;
    }
  }
  return true;
}

template <typename T>
void run_conv(const Tensor& input, const Tensor& weight, const Tensor* bias, int64_t groups,
              const ConvGeometry& g, Tensor& out) {
  const bool is_2d = input.dim == 4;
  const int64_t batch = input.sizes[0];
  const int64_t oc_total = weight.sizes[0];
  const int64_t ocg = oc_total / groups;
  const int64_t k = g.c_per_group * g.kh * g.kw;
  const int64_t n = g.out_h * g.out_w;
  // Strides with the 1-D case seen as H == 1.
  const int64_t in_sc = input.strides[1];
  const int64_t in_sh = is_2d ? input.strides[2] : 0;
  const int64_t in_sw = input.strides[is_2d ? 3 : 2];
  const int64_t w_sh = is_2d ? weight.strides[2] : 0;
  const int64_t w_sw = weight.strides[is_2d ? 3 : 2];
  // Stride of the flattened output position; a single-column plane steps by H.
  const int64_t out_sw = !is_2d ? out.strides[2] : g.out_w == 1 ? out.strides[2] : out.strides[3];
  const T* x = input.data_ptr<const T>();
  const T* w = weight.data_ptr<const T>();
  T* o = out.data_ptr<T>();
  // A 1×1, stride-1, unpadded kernel reads the input as a plain matrix.
  const bool pointwise = g.kh == 1 && g.kw == 1 && g.stride_h == 1 && g.stride_w == 1 &&
                         g.pad_h == 0 && g.pad_w == 0 && (g.in_h == 1 || in_sh == g.in_w * in_sw);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t grp = 0; grp < groups; ++grp) {
      T* c = o + b * out.strides[0] + grp * ocg * out.strides[1];
      T beta = T(0);
      if (bias != nullptr) {
        const T* bv = bias->data_ptr<const T>();
        for (int64_t i = 0; i < ocg; ++i) {
          const T v = bv[(grp * ocg + i) * bias->strides[0]];
          T* row = c + i * out.strides[1];
          for (int64_t j = 0; j < n; ++j) row[j * out_sw] = v;
        }
        beta = T(1);
      }
      const WeightSource<T> a{w + grp * ocg * weight.strides[0], weight.strides[0],
                              weight.strides[1], w_sh, w_sw, &g};
      const T* xg = x + b * input.strides[0] + grp * g.c_per_group * in_sc;
      if (pointwise) {
        gemm<T>(ocg, n, k, a, StridedMatrix<T>{xg, in_sc, in_sw}, T(1), beta, c, out.strides[1],
                out_sw);
      } else {
        gemm<T>(ocg, n, k, a, Im2colSource<T>{xg, in_sc, in_sh, in_sw, &g}, T(1), beta, c,
                out.strides[1], out_sw);
      }
    }
  }
}

void convolution_out(KernelContext& ctx, EValue** args) {
  Tensor* input = tensor_arg(ctx, args, 0, "input");
  if (input == nullptr) return;
  Tensor* weight = tensor_arg(ctx, args, 1, "weight");
  if (weight == nullptr) return;
  Tensor* bias = nullptr;
  if (!optional_tensor_arg(ctx, args, 2, "bias", &bias)) return;
  bool transposed = false;
  if (!bool_arg(ctx, args, 6, "transposed", &transposed)) return;
  if (transposed) {
    ctx.fail(Error::NotSupported, "transposed: transposed convolution is not supported");
    return;
  }
  int64_t groups = 1;
  if (!int_arg(ctx, args, 8, "groups", &groups)) return;
  Tensor* out = tensor_arg(ctx, args, 9, "out");
  if (out == nullptr) return;

  EMBER_KERNEL_CHECK(ctx, input->dim == 3 || input->dim == 4,
                     "input: expected [N, C, L] or [N, C, H, W], got shape %s",
                     ShapeStr(input->shape()).c_str());
  EMBER_KERNEL_CHECK(ctx, weight->dim == input->dim,
                     "weight: shape %s does not match input of shape %s",
                     ShapeStr(weight->shape()).c_str(), ShapeStr(input->shape()).c_str());
  const int32_t spatial = input->dim - 2;
  int64_t stride[2];
  int64_t padding[2];
  int64_t dilation[2];
  if (!spatial_list(ctx, args, 3, "stride", spatial, 1, stride) ||
      !spatial_list(ctx, args, 4, "padding", spatial, 0, padding) ||
      !spatial_list(ctx, args, 5, "dilation", spatial, 1, dilation)) {
    return;
  }
  std::span<const int64_t> output_padding;
  if (!int_list_arg(ctx, args, 7, "output_padding", &output_padding)) return;

  const int64_t c_in = input->sizes[1];
  const int64_t oc = weight->sizes[0];
  EMBER_KERNEL_CHECK(ctx, groups >= 1 && c_in % groups == 0 && oc % groups == 0,
                     "groups: %lld does not divide input channels %lld and output channels %lld",
                     static_cast<long long>(groups), static_cast<long long>(c_in),
                     static_cast<long long>(oc));
  EMBER_KERNEL_CHECK(ctx, weight->sizes[1] == c_in / groups,
                     "weight: shape %s expects %d input channels per group, input of shape %s "
                     "with %lld groups has %lld",
                     ShapeStr(weight->shape()).c_str(), weight->sizes[1],
                     ShapeStr(input->shape()).c_str(), static_cast<long long>(groups),
                     static_cast<long long>(c_in / groups));
  if (bias != nullptr) {
    EMBER_KERNEL_CHECK(ctx, bias->dim == 1 && bias->sizes[0] == oc,
                       "bias: expected shape [%lld], got %s", static_cast<long long>(oc),
                       ShapeStr(bias->shape()).c_str());
    if (!check_dtype(ctx, *bias, "bias", input->dtype)) return;
  }
  if (!check_dtype(ctx, *weight, "weight", input->dtype) ||
      !check_dtype(ctx, *out, "out", input->dtype)) {
    return;
  }

  ConvGeometry g{};
  g.c_per_group = c_in / groups;
  g.kh = spatial == 2 ? weight->sizes[2] : 1;
  g.kw = weight->sizes[spatial == 2 ? 3 : 2];
  g.in_h = spatial == 2 ? input->sizes[2] : 1;
  g.in_w = input->sizes[spatial == 2 ? 3 : 2];
  g.stride_h = spatial == 2 ? stride[0] : 1;
  g.stride_w = stride[spatial - 1];
  g.pad_h = spatial == 2 ? padding[0] : 0;
  g.pad_w = padding[spatial - 1];
  g.dil_h = spatial == 2 ? dilation[0] : 1;
  g.dil_w = dilation[spatial - 1];
  const int64_t span_h = g.dil_h * (g.kh - 1) + 1;
  const int64_t span_w = g.dil_w * (g.kw - 1) + 1;
  EMBER_KERNEL_CHECK(ctx, g.in_h + 2 * g.pad_h >= span_h && g.in_w + 2 * g.pad_w >= span_w,
                     "input: padded input of shape %s is smaller than the dilated kernel of "
                     "weight shape %s",
                     ShapeStr(input->shape()).c_str(), ShapeStr(weight->shape()).c_str());
  g.out_h = (g.in_h + 2 * g.pad_h - span_h) / g.stride_h + 1;
  g.out_w = (g.in_w + 2 * g.pad_w - span_w) / g.stride_w + 1;

  int32_t shape[4];
  shape[0] = input->sizes[0];
  shape[1] = static_cast<int32_t>(oc);
  if (spatial == 2) {
    shape[2] = static_cast<int32_t>(g.out_h);
    shape[3] = static_cast<int32_t>(g.out_w);
  } else {
    shape[2] = static_cast<int32_t>(g.out_w);
  }
  if (!resize_out(ctx, *out, {shape, static_cast<size_t>(input->dim)})) return;
  // The GEMM writes an output plane as one strided row per channel.
  if (spatial == 2 && g.out_h > 1 && g.out_w > 1 &&
      out->strides[2] != g.out_w * out->strides[3]) {
    ctx.fail(Error::NotSupported,
             "out: dim order with W outside H (strides [%lld, %lld, %lld, %lld]) is not "
             "supported",
             static_cast<long long>(out->strides[0]), static_cast<long long>(out->strides[1]),
             static_cast<long long>(out->strides[2]), static_cast<long long>(out->strides[3]));
    return;
  }
  if (out->numel == 0) return;
  const bool ok = dispatch_dtype<kF32F64>(input->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    run_conv<T>(*input, *weight, bias, groups, g, *out);
  });
  if (!ok) fail_dtype(ctx, "input", input->dtype);
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::convolution.out", convolution_out, 11);

}  // namespace ember::kernels::portable
