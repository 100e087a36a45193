// aten::upsample_nearest2d.vec_out(Tensor input, SymInt[]? output_size, float[]? scale_factors,
//     *, Tensor(a!) out)
// aten::upsample_bilinear2d.vec_out(Tensor input, SymInt[]? output_size, bool align_corners,
//     float[]? scale_factors, *, Tensor(a!) out)
//
// input [N, C, H, W], any dim order. Exactly one of output_size and
// scale_factors is given; with scale factors the output is floor(in · scale)
// and source coordinates use 1/scale, as eager does. Index and weight
// arithmetic follows eager's CPU kernels (float for nearest, the op math type
// for bilinear). Nearest: real dtypes; bilinear: floating dtypes and uint8
// (eager's fixed-point algorithm, below).
#include <cmath>

#include "kernels/generated/functions/portable/op_upsample.h"
#include "kernels/portable/util/binary.h"

namespace ember::kernels::portable {
namespace {

struct Resize {
  int64_t in[2], out[2];
  double scale[2];  // The given scale factor, or 0 for none.
};

bool read_resize(KernelContext& ctx, const Tensor& input, std::optional<IntSpan> output_size,
                 std::optional<DoubleSpan> scale_factors, Resize* r) {
  if (input.dim != 4) {
    ctx.fail(Error::InvalidArgument, "input: expected [N, C, H, W], got shape %s",
             ShapeStr(input.shape()).c_str());
    return false;
  }
  if (output_size.has_value() == scale_factors.has_value()) {
    ctx.fail(Error::InvalidArgument, "output_size, scale_factors: exactly one must be given");
    return false;
  }
  r->in[0] = input.sizes[2];
  r->in[1] = input.sizes[3];
  if (output_size.has_value()) {
    const IntSpan size = *output_size;
    if (size.size() != 2 || size[0] <= 0 || size[1] <= 0 || size[0] > INT32_MAX ||
        size[1] > INT32_MAX) {
      ctx.fail(Error::InvalidArgument, "output_size: expected 2 positive values, got %s",
               ShapeStr(size).c_str());
      return false;
    }
    r->out[0] = size[0];
    r->out[1] = size[1];
    r->scale[0] = r->scale[1] = 0;
  } else {
    const DoubleSpan scales = *scale_factors;
    if (scales.size() != 2) {
      ctx.fail(Error::InvalidArgument,
               "scale_factors: expected a list of 2 floats, got %zu values", scales.size());
      return false;
    }
    for (int i = 0; i < 2; ++i) {
      const double s = scales[i];
      const double o = std::floor(static_cast<double>(r->in[i]) * s);
      if (!(s > 0) || o < 1 || o > INT32_MAX) {
        ctx.fail(Error::InvalidArgument,
                 "scale_factors: %g applied to size %lld gives no output (or too large)", s,
                 static_cast<long long>(r->in[i]));
        return false;
      }
      r->out[i] = static_cast<int64_t>(o);
      r->scale[i] = s;
    }
  }
  for (int i = 0; i < 2; ++i) {
    if (r->in[i] == 0) {
      ctx.fail(Error::InvalidArgument, "input: spatial dims must be non-empty, got shape %s",
               ShapeStr(input.shape()).c_str());
      return false;
    }
  }
  return true;
}

bool resize_upsample_out(KernelContext& ctx, const Tensor& input, Tensor& out, const Resize& r) {
  if (!check_dtype(ctx, out, "out", input.dtype)) return false;
  const int32_t sizes[4] = {input.sizes[0], input.sizes[1], static_cast<int32_t>(r.out[0]),
                            static_cast<int32_t>(r.out[1])};
  return resize_out(ctx, out, sizes);
}

template <typename T>
T scale_value(double scale, int64_t in, int64_t out) {
  return scale > 0 ? static_cast<T>(1.0 / scale) : static_cast<T>(in) / static_cast<T>(out);
}

int64_t nearest_index(int64_t o, int64_t in, int64_t out, double scale) {
  if (out == in) return o;
  if (out == 2 * in) return o >> 1;
  const float s = scale_value<float>(scale, in, out);
  const int64_t i = static_cast<int64_t>(std::floor(static_cast<float>(o) * s));
  return i < in - 1 ? i : in - 1;
}

template <typename S>
void upsample_nearest(const Tensor& x, Tensor& y, const Resize& r) {
  const S* xp = x.data_ptr<const S>();
  S* yp = y.data_ptr<S>();
  for (int64_t n = 0; n < x.sizes[0]; ++n) {
    for (int64_t c = 0; c < x.sizes[1]; ++c) {
      const S* plane = xp + n * x.strides[0] + c * x.strides[1];
      S* oplane = yp + n * y.strides[0] + c * y.strides[1];
      for (int64_t oh = 0; oh < r.out[0]; ++oh) {
        const S* row = plane + nearest_index(oh, r.in[0], r.out[0], r.scale[0]) * x.strides[2];
        S* orow = oplane + oh * y.strides[2];
        for (int64_t ow = 0; ow < r.out[1]; ++ow) {
          orow[ow * y.strides[3]] =
              row[nearest_index(ow, r.in[1], r.out[1], r.scale[1]) * x.strides[3]];
        }
      }
    }
  }
}

// Source index and weights of output position o along one dim.
template <typename CT>
void linear_source(int64_t o, int64_t in, int64_t out, bool align_corners, double scale,
                   int64_t* i0, int64_t* step, CT* l0, CT* l1) {
  const CT s = align_corners ? (out > 1 ? static_cast<CT>(in - 1) / static_cast<CT>(out - 1)
                                        : CT(0))
                             : scale_value<CT>(scale, in, out);
  CT src = align_corners ? s * static_cast<CT>(o) : s * (static_cast<CT>(o) + CT(0.5)) - CT(0.5);
  if (!align_corners && src < 0) src = 0;
  *i0 = static_cast<int64_t>(src);
  *step = *i0 < in - 1 ? 1 : 0;
  CT lambda = src - static_cast<CT>(*i0);
  lambda = lambda < 0 ? CT(0) : lambda > 1 ? CT(1) : lambda;
  *l1 = lambda;
  *l0 = CT(1) - lambda;
}

template <typename S>
void upsample_bilinear(const Tensor& x, Tensor& y, const Resize& r, bool align_corners) {
  using CT = compute_t<S>;
  const S* xp = x.data_ptr<const S>();
  S* yp = y.data_ptr<S>();
  for (int64_t n = 0; n < x.sizes[0]; ++n) {
    for (int64_t c = 0; c < x.sizes[1]; ++c) {
      const S* plane = xp + n * x.strides[0] + c * x.strides[1];
      S* oplane = yp + n * y.strides[0] + c * y.strides[1];
      for (int64_t oh = 0; oh < r.out[0]; ++oh) {
        int64_t h0, hp;
        CT h0l, h1l;
        linear_source<CT>(oh, r.in[0], r.out[0], align_corners, r.scale[0], &h0, &hp, &h0l, &h1l);
        const S* row0 = plane + h0 * x.strides[2];
        const S* row1 = row0 + hp * x.strides[2];
        for (int64_t ow = 0; ow < r.out[1]; ++ow) {
          int64_t w0, wp;
          CT w0l, w1l;
          linear_source<CT>(ow, r.in[1], r.out[1], align_corners, r.scale[1], &w0, &wp, &w0l,
                            &w1l);
          const int64_t a = w0 * x.strides[3];
          const int64_t b = (w0 + wp) * x.strides[3];
          const CT v = h0l * (w0l * convert<CT>(row0[a]) + w1l * convert<CT>(row0[b])) +
                       h1l * (w0l * convert<CT>(row1[a]) + w1l * convert<CT>(row1[b]));
          oplane[oh * y.strides[2] + ow * y.strides[3]] = convert<S>(v);
        }
      }
    }
  }
}

// uint8 bilinear, as eager computes it (established black-box): separable,
// the W pass first, each pass with fixed-point weights round(w · 2^P), where
// P is the largest precision keeping that pass's largest weight below 2^15
// (int16 weights), a rounding bias of 2^(P-1), and the W pass's result
// clamped to uint8 before the H pass; weights and source positions in double.
// Unlike the float path, a position whose second source clamps to the edge
// weighs its one source fully, and a pass whose output size equals its input
// size copies (even when a scale factor other than 1 gave that size).
struct FixedTaps {
  int64_t i0 = 0, i1 = 0;  // source indices
  int64_t q0 = 0, q1 = 0;  // fixed-point weights
};

int fixed_point_precision(int64_t in, int64_t out, bool align_corners, double scale) {
  double max_weight = in == out ? 1.0 : 0.0;  // a copy: one weight of 1
  for (int64_t o = 0; o < out && in != out; ++o) {
    int64_t i0, step;
    double l0, l1;
    linear_source<double>(o, in, out, align_corners, scale, &i0, &step, &l0, &l1);
    const double w = step == 0 ? 1.0 : (l0 > l1 ? l0 : l1);
    if (w > max_weight) max_weight = w;
  }
  int precision = 0;
  while (precision < 30 && max_weight * double(int64_t{1} << (precision + 1)) <
                               32768.0) {
    ++precision;
  }
  return precision;
}

FixedTaps fixed_taps(int64_t o, int64_t in, int64_t out, bool align_corners, double scale,
                     int precision) {
  int64_t i0 = o, step = 0;
  double l0 = 1, l1 = 0;
  if (in != out) linear_source<double>(o, in, out, align_corners, scale, &i0, &step, &l0, &l1);
  if (step == 0) {
    l0 = 1;
    l1 = 0;
  }
  const double one = static_cast<double>(int64_t{1} << precision);
  return {i0, i0 + step, std::llround(l0 * one), std::llround(l1 * one)};
}

uint8_t fixed_blend(const FixedTaps& t, int64_t a, int64_t b, int precision) {
  const int64_t acc = (int64_t{1} << (precision - 1)) + t.q0 * a + t.q1 * b;
  const int64_t v = acc >> precision;
  return static_cast<uint8_t>(v < 0 ? 0 : v > 255 ? 255 : v);
}

void upsample_bilinear_u8(const Tensor& x, Tensor& y, const Resize& r, bool align_corners) {
  const uint8_t* xp = x.data_ptr<const uint8_t>();
  uint8_t* yp = y.data_ptr<uint8_t>();
  const int ph = fixed_point_precision(r.in[0], r.out[0], align_corners, r.scale[0]);
  const int pw = fixed_point_precision(r.in[1], r.out[1], align_corners, r.scale[1]);
  for (int64_t n = 0; n < x.sizes[0]; ++n) {
    for (int64_t c = 0; c < x.sizes[1]; ++c) {
      const uint8_t* plane = xp + n * x.strides[0] + c * x.strides[1];
      uint8_t* oplane = yp + n * y.strides[0] + c * y.strides[1];
      for (int64_t oh = 0; oh < r.out[0]; ++oh) {
        const FixedTaps th = fixed_taps(oh, r.in[0], r.out[0], align_corners, r.scale[0], ph);
        const uint8_t* row0 = plane + th.i0 * x.strides[2];
        const uint8_t* row1 = plane + th.i1 * x.strides[2];
        for (int64_t ow = 0; ow < r.out[1]; ++ow) {
          const FixedTaps tw = fixed_taps(ow, r.in[1], r.out[1], align_corners, r.scale[1], pw);
          const int64_t a = tw.i0 * x.strides[3], b = tw.i1 * x.strides[3];
          // The W pass at both source rows, then the H pass.
          const uint8_t top = fixed_blend(tw, row0[a], row0[b], pw);
          const uint8_t bottom = fixed_blend(tw, row1[a], row1[b], pw);
          oplane[oh * y.strides[2] + ow * y.strides[3]] = fixed_blend(th, top, bottom, ph);
        }
      }
    }
  }
}

}  // namespace

void upsample_nearest2d_vec_out(KernelContext& ctx, const Tensor& input,
                                std::optional<IntSpan> output_size,
                                std::optional<DoubleSpan> scale_factors, Tensor& out) {
  Resize r;
  if (!read_resize(ctx, input, output_size, scale_factors, &r) ||
      !resize_upsample_out(ctx, input, out, r)) {
    return;
  }
  if (out.numel == 0) return;
  const bool ok = dispatch_dtype<kRealTypes>(input.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    upsample_nearest<S>(input, out, r);
  });
  if (!ok) fail_dtype(ctx, "input", input.dtype);
}

void upsample_bilinear2d_vec_out(KernelContext& ctx, const Tensor& input,
                                 std::optional<IntSpan> output_size, bool align_corners,
                                 std::optional<DoubleSpan> scale_factors, Tensor& out) {
  Resize r;
  if (!read_resize(ctx, input, output_size, scale_factors, &r) ||
      !resize_upsample_out(ctx, input, out, r)) {
    return;
  }
  if (out.numel == 0) return;
  if (input.dtype == ScalarType::Byte) {
    upsample_bilinear_u8(input, out, r, align_corners);
    return;
  }
  const bool ok = dispatch_dtype<kFloating>(input.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    upsample_bilinear<S>(input, out, r, align_corners);
  });
  if (!ok) fail_dtype(ctx, "input", input.dtype);
}

}  // namespace ember::kernels::portable
