// Direct convolution over 1 to 3 spatial dims, any real dtype: the path for
// what the GEMM convolution does not cover (3-D, float16/bfloat16, integers).
// A plain loop per output element, accumulating in float for the 16-bit
// floats and in wrapping int64 for integers (as eager's CPU kernels do).
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/dtype.h"
#include "runtime/core/tensor.h"

namespace ember::kernels::portable {

/// Geometry with the spatial dims right-aligned in 3 slots; unused leading
/// slots have size 1, kernel 1, stride 1, padding 0, dilation 1.
struct ConvDirectGeometry {
  int64_t in[3] = {1, 1, 1};
  int64_t out[3] = {1, 1, 1};
  int64_t k[3] = {1, 1, 1};
  int64_t stride[3] = {1, 1, 1};
  int64_t pad[3] = {0, 0, 0};
  int64_t dil[3] = {1, 1, 1};
};

/// out = conv(input, weight) + bias for [N, C, *spatial] tensors (any dim
/// orders); all tensors have dtype S; out is already sized.
template <typename S>
void conv_direct(const Tensor& input, const Tensor& weight, const Tensor* bias, int64_t groups,
                 const ConvDirectGeometry& g, Tensor& out) {
  using CT = compute_t<S>;
  using Acc = std::conditional_t<std::is_integral_v<CT>, int64_t, CT>;
  const int32_t nd = input.dim - 2;
  // Spatial strides right-aligned like the geometry (0 for unused slots).
  int64_t xs[3] = {0, 0, 0}, ws[3] = {0, 0, 0}, os[3] = {0, 0, 0};
  for (int32_t d = 0; d < nd; ++d) {
    xs[3 - nd + d] = input.strides[2 + d];
    ws[3 - nd + d] = weight.strides[2 + d];
    os[3 - nd + d] = out.strides[2 + d];
  }
  const int64_t batch = input.sizes[0];
  const int64_t oc_total = weight.sizes[0];
  const int64_t ocg = oc_total / groups;
  const int64_t cg = weight.sizes[1];
  const S* x = input.data_ptr<const S>();
  const S* w = weight.data_ptr<const S>();
  const S* bv = bias != nullptr ? bias->data_ptr<const S>() : nullptr;
  S* o = out.data_ptr<S>();
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t oc = 0; oc < oc_total; ++oc) {
      const S* xg = x + b * input.strides[0] + (oc / ocg) * cg * input.strides[1];
      const S* wo = w + oc * weight.strides[0];
      const Acc init = bv != nullptr ? static_cast<Acc>(convert<CT>(bv[oc * bias->strides[0]]))
                                     : Acc(0);
      S* ob = o + b * out.strides[0] + oc * out.strides[1];
      for (int64_t p0 = 0; p0 < g.out[0]; ++p0) {
        for (int64_t p1 = 0; p1 < g.out[1]; ++p1) {
          for (int64_t p2 = 0; p2 < g.out[2]; ++p2) {
            Acc acc = init;
            for (int64_t c = 0; c < cg; ++c) {
              const S* xc = xg + c * input.strides[1];
              const S* wc = wo + c * weight.strides[1];
              for (int64_t k0 = 0; k0 < g.k[0]; ++k0) {
                const int64_t i0 = p0 * g.stride[0] - g.pad[0] + k0 * g.dil[0];
                if (i0 < 0 || i0 >= g.in[0]) continue;
                for (int64_t k1 = 0; k1 < g.k[1]; ++k1) {
                  const int64_t i1 = p1 * g.stride[1] - g.pad[1] + k1 * g.dil[1];
                  if (i1 < 0 || i1 >= g.in[1]) continue;
                  const S* xr = xc + i0 * xs[0] + i1 * xs[1];
                  const S* wr = wc + k0 * ws[0] + k1 * ws[1];
                  for (int64_t k2 = 0; k2 < g.k[2]; ++k2) {
                    const int64_t i2 = p2 * g.stride[2] - g.pad[2] + k2 * g.dil[2];
                    if (i2 < 0 || i2 >= g.in[2]) continue;
                    const Acc xv = static_cast<Acc>(convert<CT>(xr[i2 * xs[2]]));
                    const Acc wv = static_cast<Acc>(convert<CT>(wr[k2 * ws[2]]));
                    acc = wrap_add(acc, wrap_mul(xv, wv));
                  }
                }
              }
            }
            ob[p0 * os[0] + p1 * os[1] + p2 * os[2]] = convert<S>(static_cast<CT>(acc));
          }
        }
      }
    }
  }
}

}  // namespace ember::kernels::portable
