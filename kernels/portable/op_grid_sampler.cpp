// aten::grid_sampler_2d.out(Tensor input, Tensor grid, int interpolation_mode, int padding_mode,
//     bool align_corners, *, Tensor(a!) out) -> Tensor(a!)
// input [N, C, H, W], grid [N, Ho, Wo, 2], out [N, C, Ho, Wo].
//
// Interpolation 0 (bilinear), 1 (nearest, ties to even) and 2 (bicubic:
// cubic convolution with A = -0.75 over a 4×4 neighbourhood, padding applied
// to each tap). Padding 0 (zeros), 1 (border), 2 (reflection), with eager's
// unnormalize / clip / reflect arithmetic. Floating dtypes; grid has input's
// dtype. Any dim orders. float16/bfloat16 round every step of the coordinate
// and bilinear arithmetic to their own precision, as eager's CPU kernel for
// them does (it computes in the 16-bit type), so results match it bit for bit.
//
// aten::grid_sampler_3d.out(Tensor input, Tensor grid, int interpolation_mode, int padding_mode,
//     bool align_corners, *, Tensor(a!) out) -> Tensor(a!)
// input [N, C, D, H, W], grid [N, Do, Ho, Wo, 3] (x, y, z), out [N, C, Do, Ho, Wo].
// Interpolation 0 (trilinear: the 8 corners in eager's order, weights the
// products (x1 - x)(y1 - y)(z1 - z) ... left to right) and 1 (nearest);
// eager has no 3-D bicubic. Padding modes and coordinate arithmetic as 2-D.
#include <cmath>
#include <type_traits>

#include "kernels/generated/functions/portable/op_grid_sampler.h"
#include "kernels/portable/util/binary.h"

namespace ember::kernels::portable {
namespace {

template <typename CT>
CT reflect(CT in, int64_t twice_low, int64_t twice_high) {
  if (twice_low == twice_high) return CT(0);
  const CT lo = static_cast<CT>(twice_low) / 2;
  const CT span = static_cast<CT>(twice_high - twice_low) / 2;
  in = std::fabs(in - lo);
  const CT extra = std::fmod(in, span);
  const int64_t flips = static_cast<int64_t>(std::floor(in / span));
  return flips % 2 == 0 ? extra + lo : span - extra + lo;
}

// v rounded to storage type S's precision (identity for float and double).
template <typename S, typename CT>
CT round_to(CT v) {
  if constexpr (std::is_same_v<S, Half> || std::is_same_v<S, BFloat16>) {
    return convert<CT>(convert<S>(v));
  } else {
    return v;
  }
}

// A grid coordinate in [-1, 1] as a pixel coordinate, each step rounded to S.
template <typename S, typename CT>
CT unnormalize(CT coord, int64_t size, bool align_corners) {
  auto r = [](CT v) { return round_to<S>(v); };
  return align_corners ? r(r(r(coord + 1) / 2) * r(static_cast<CT>(size - 1)))
                       : r(r(r(r(coord + 1) * r(static_cast<CT>(size))) - 1) / 2);
}

// Applies the padding mode to a pixel coordinate (border clips, reflection
// reflects then clips, zeros leaves it).
template <typename CT>
CT pad_coordinate(CT coord, int64_t size, int64_t padding, bool align_corners) {
  auto clip = [size](CT v) {
    const CT hi = static_cast<CT>(size - 1);
    return v < 0 ? CT(0) : v > hi ? hi : v;
  };
  if (padding == 1) {
    coord = clip(coord);
  } else if (padding == 2) {
    coord = align_corners ? reflect(coord, 0, 2 * (size - 1)) : reflect(coord, -1, 2 * size - 1);
    coord = clip(coord);
  }
  return coord;
}

// Keeps far-away or non-finite coordinates out of int64 overflow.
template <typename CT>
CT finite_coordinate(CT coord) {
  return !std::isfinite(coord) || std::fabs(coord) > CT(1e9) ? CT(-100) : coord;
}

template <typename S, typename CT>
CT source_index(CT coord, int64_t size, int64_t padding, bool align_corners) {
  return finite_coordinate(round_to<S>(
      pad_coordinate(unnormalize<S>(coord, size, align_corners), size, padding, align_corners)));
}

// Cubic convolution weights (A = -0.75) of the taps at -1, 0, 1, 2 from
// floor(x), for fraction t; every step rounded to S.
template <typename S, typename CT>
void cubic_weights(CT t, CT* w) {
  auto r = [](CT v) { return round_to<S>(v); };
  const CT a = CT(-0.75);  // a + 2, a + 3, 5a, 8a and 4a are exact in every float type.
  auto near = [&](CT x) { return r(r(r(r(r((a + 2) * x) - (a + 3)) * x) * x) + 1); };  // |x| <= 1
  auto far = [&](CT x) {  // 1 < |x| < 2
    return r(r(r(r(r(r(a * x) - 5 * a) * x) + 8 * a) * x) - 4 * a);
  };
  w[0] = far(r(t + 1));
  w[1] = near(t);
  w[2] = near(r(1 - t));
  w[3] = far(r(2 - t));
}

// sum v[k] * w[k] in eager's order, every step rounded to S.
template <typename S, typename CT>
CT cubic_interp(const CT* v, const CT* w) {
  auto r = [](CT x) { return round_to<S>(x); };
  return r(r(r(r(v[0] * w[0]) + r(v[1] * w[1])) + r(v[2] * w[2])) + r(v[3] * w[3]));
}

template <typename S>
void grid_sample(const Tensor& input, const Tensor& grid, int64_t mode, int64_t padding,
                 bool align_corners, Tensor& out) {
  using CT = compute_t<S>;
  const int64_t n_batch = input.sizes[0], channels = input.sizes[1];
  const int64_t h = input.sizes[2], w = input.sizes[3];
  const int64_t oh = grid.sizes[1], ow = grid.sizes[2];
  const S* x = input.data_ptr<const S>();
  const S* g = grid.data_ptr<const S>();
  S* y = out.data_ptr<S>();
  const int64_t* is = input.strides;
  const int64_t* gs = grid.strides;
  const int64_t* os = out.strides;
  auto inside = [h, w](int64_t yy, int64_t xx) { return yy >= 0 && yy < h && xx >= 0 && xx < w; };
  for (int64_t n = 0; n < n_batch; ++n) {
    for (int64_t i = 0; i < oh; ++i) {
      for (int64_t j = 0; j < ow; ++j) {
        const S* gp = g + n * gs[0] + i * gs[1] + j * gs[2];
        const CT ix = source_index<S>(convert<CT>(gp[0]), w, padding, align_corners);
        const CT iy = source_index<S>(convert<CT>(gp[gs[3]]), h, padding, align_corners);
        const S* plane = x + n * is[0];
        S* dst = y + n * os[0] + i * os[2] + j * os[3];
        if (mode == 2) {
          const CT bx = finite_coordinate(unnormalize<S>(convert<CT>(gp[0]), w, align_corners));
          const CT by = finite_coordinate(unnormalize<S>(convert<CT>(gp[gs[3]]), h, align_corners));
          const CT fx = std::floor(bx), fy = std::floor(by);
          CT wx[4], wy[4];
          cubic_weights<S>(round_to<S>(bx - fx), wx);
          cubic_weights<S>(round_to<S>(by - fy), wy);
          // Each tap goes through the padding mode on its own.
          int64_t tx[4], ty[4];
          for (int k = 0; k < 4; ++k) {
            tx[k] = static_cast<int64_t>(finite_coordinate(
                pad_coordinate(fx - 1 + static_cast<CT>(k), w, padding, align_corners)));
            ty[k] = static_cast<int64_t>(finite_coordinate(
                pad_coordinate(fy - 1 + static_cast<CT>(k), h, padding, align_corners)));
          }
          for (int64_t c = 0; c < channels; ++c) {
            CT rows[4];
            for (int r = 0; r < 4; ++r) {
              CT v[4];
              for (int k = 0; k < 4; ++k) {
                v[k] = inside(ty[r], tx[k])
                           ? convert<CT>(plane[c * is[1] + ty[r] * is[2] + tx[k] * is[3]])
                           : CT(0);
              }
              rows[r] = cubic_interp<S>(v, wx);
            }
            dst[c * os[1]] = convert<S>(cubic_interp<S>(rows, wy));
          }
          continue;
        }
        if (mode == 1) {
          const int64_t xn = static_cast<int64_t>(std::nearbyint(ix));
          const int64_t yn = static_cast<int64_t>(std::nearbyint(iy));
          const bool ok = inside(yn, xn);
          for (int64_t c = 0; c < channels; ++c) {
            dst[c * os[1]] = ok ? plane[c * is[1] + yn * is[2] + xn * is[3]] : convert<S>(0.0f);
          }
          continue;
        }
        const int64_t x0 = static_cast<int64_t>(std::floor(ix));
        const int64_t y0 = static_cast<int64_t>(std::floor(iy));
        auto r = [](CT v) { return round_to<S>(v); };
        const CT wx1 = r(ix - static_cast<CT>(x0)), wx0 = r(static_cast<CT>(x0 + 1) - ix);
        const CT wy1 = r(iy - static_cast<CT>(y0)), wy0 = r(static_cast<CT>(y0 + 1) - iy);
        const int64_t cx[4] = {x0, x0 + 1, x0, x0 + 1};
        const int64_t cy[4] = {y0, y0, y0 + 1, y0 + 1};
        const CT cw[4] = {r(wx0 * wy0), r(wx1 * wy0), r(wx0 * wy1), r(wx1 * wy1)};
        for (int64_t c = 0; c < channels; ++c) {
          CT acc = 0;
          for (int k = 0; k < 4; ++k) {
            if (inside(cy[k], cx[k])) {
              const CT v = convert<CT>(plane[c * is[1] + cy[k] * is[2] + cx[k] * is[3]]);
              acc = r(acc + r(v * cw[k]));
            }
          }
          dst[c * os[1]] = convert<S>(acc);
        }
      }
    }
  }
}

template <typename S>
void grid_sample_3d(const Tensor& input, const Tensor& grid, int64_t mode, int64_t padding,
                    bool align_corners, Tensor& out) {
  using CT = compute_t<S>;
  const int64_t n_batch = input.sizes[0], channels = input.sizes[1];
  const int64_t d = input.sizes[2], h = input.sizes[3], w = input.sizes[4];
  const int64_t od = grid.sizes[1], oh = grid.sizes[2], ow = grid.sizes[3];
  const S* x = input.data_ptr<const S>();
  const S* g = grid.data_ptr<const S>();
  S* y = out.data_ptr<S>();
  const int64_t* is = input.strides;
  const int64_t* gs = grid.strides;
  const int64_t* os = out.strides;
  auto inside = [d, h, w](int64_t zz, int64_t yy, int64_t xx) {
    return zz >= 0 && zz < d && yy >= 0 && yy < h && xx >= 0 && xx < w;
  };
  auto r = [](CT v) { return round_to<S>(v); };
  for (int64_t n = 0; n < n_batch; ++n) {
    const S* vol = x + n * is[0];
    for (int64_t k = 0; k < od; ++k) {
      for (int64_t i = 0; i < oh; ++i) {
        for (int64_t j = 0; j < ow; ++j) {
          const S* gp = g + n * gs[0] + k * gs[1] + i * gs[2] + j * gs[3];
          const CT ix = source_index<S>(convert<CT>(gp[0]), w, padding, align_corners);
          const CT iy = source_index<S>(convert<CT>(gp[gs[4]]), h, padding, align_corners);
          const CT iz = source_index<S>(convert<CT>(gp[2 * gs[4]]), d, padding, align_corners);
          S* dst = y + n * os[0] + k * os[2] + i * os[3] + j * os[4];
          if (mode == 1) {
            const int64_t xn = static_cast<int64_t>(std::nearbyint(ix));
            const int64_t yn = static_cast<int64_t>(std::nearbyint(iy));
            const int64_t zn = static_cast<int64_t>(std::nearbyint(iz));
            const bool ok = inside(zn, yn, xn);
            for (int64_t c = 0; c < channels; ++c) {
              dst[c * os[1]] =
                  ok ? vol[c * is[1] + zn * is[2] + yn * is[3] + xn * is[4]] : convert<S>(0.0f);
            }
            continue;
          }
          const int64_t x0 = static_cast<int64_t>(std::floor(ix));
          const int64_t y0 = static_cast<int64_t>(std::floor(iy));
          const int64_t z0 = static_cast<int64_t>(std::floor(iz));
          // Distances to the far (0) and near (1) side along each axis.
          const CT dx[2] = {r(static_cast<CT>(x0 + 1) - ix), r(ix - static_cast<CT>(x0))};
          const CT dy[2] = {r(static_cast<CT>(y0 + 1) - iy), r(iy - static_cast<CT>(y0))};
          const CT dz[2] = {r(static_cast<CT>(z0 + 1) - iz), r(iz - static_cast<CT>(z0))};
          // Eager's corner order: tnw, tne, tsw, tse, bnw, bne, bsw, bse (t/b: z,
          // n/s: y, w/e: x).
          int64_t cx[8], cy[8], cz[8];
          CT cw[8];
          for (int q = 0; q < 8; ++q) {
            const int bx = q & 1, by = (q >> 1) & 1, bz = (q >> 2) & 1;
            cx[q] = x0 + bx;
            cy[q] = y0 + by;
            cz[q] = z0 + bz;
            cw[q] = r(r(dx[bx] * dy[by]) * dz[bz]);
          }
          for (int64_t c = 0; c < channels; ++c) {
            CT acc = 0;
            for (int q = 0; q < 8; ++q) {
              if (inside(cz[q], cy[q], cx[q])) {
                const CT v = convert<CT>(
                    vol[c * is[1] + cz[q] * is[2] + cy[q] * is[3] + cx[q] * is[4]]);
                acc = r(acc + r(v * cw[q]));
              }
            }
            dst[c * os[1]] = convert<S>(acc);
          }
        }
      }
    }
  }
}

}  // namespace

void grid_sampler_2d_out(KernelContext& ctx, const Tensor& input, const Tensor& grid,
                         int64_t interpolation_mode, int64_t padding_mode, bool align_corners,
                         Tensor& out) {
  EMBER_KERNEL_CHECK(ctx, interpolation_mode >= 0 && interpolation_mode <= 2,
                     "interpolation_mode: expected 0 (bilinear), 1 (nearest) or 2 (bicubic), "
                     "got %lld",
                     static_cast<long long>(interpolation_mode));
  EMBER_KERNEL_CHECK(ctx, padding_mode >= 0 && padding_mode <= 2,
                     "padding_mode: expected 0 (zeros), 1 (border) or 2 (reflection), got %lld",
                     static_cast<long long>(padding_mode));
  EMBER_KERNEL_CHECK(ctx, input.dim == 4, "input: expected [N, C, H, W], got shape %s",
                     ShapeStr(input.shape()).c_str());
  EMBER_KERNEL_CHECK(ctx, grid.dim == 4 && grid.sizes[0] == input.sizes[0] &&
                              grid.sizes[3] == 2,
                     "grid: expected [%d, Ho, Wo, 2], got shape %s", input.sizes[0],
                     ShapeStr(grid.shape()).c_str());
  EMBER_KERNEL_CHECK(ctx, input.sizes[2] > 0 && input.sizes[3] > 0,
                     "input: spatial dims must be non-empty, got shape %s",
                     ShapeStr(input.shape()).c_str());
  if (!is_floating_type(input.dtype)) {
    fail_dtype(ctx, "input", input.dtype);
    return;
  }
  if (!check_dtype(ctx, grid, "grid", input.dtype) ||
      !check_dtype(ctx, out, "out", input.dtype)) {
    return;
  }
  const int32_t sizes[4] = {input.sizes[0], input.sizes[1], grid.sizes[1], grid.sizes[2]};
  if (!resize_out(ctx, out, sizes)) return;
  if (out.numel == 0) return;
  (void)dispatch_dtype<kFloating>(input.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    grid_sample<S>(input, grid, interpolation_mode, padding_mode, align_corners, out);
  });
}

void grid_sampler_3d_out(KernelContext& ctx, const Tensor& input, const Tensor& grid,
                         int64_t interpolation_mode, int64_t padding_mode, bool align_corners,
                         Tensor& out) {
  EMBER_KERNEL_CHECK(ctx, interpolation_mode == 0 || interpolation_mode == 1,
                     "interpolation_mode: expected 0 (bilinear) or 1 (nearest) for 3-D, got %lld",
                     static_cast<long long>(interpolation_mode));
  EMBER_KERNEL_CHECK(ctx, padding_mode >= 0 && padding_mode <= 2,
                     "padding_mode: expected 0 (zeros), 1 (border) or 2 (reflection), got %lld",
                     static_cast<long long>(padding_mode));
  EMBER_KERNEL_CHECK(ctx, input.dim == 5, "input: expected [N, C, D, H, W], got shape %s",
                     ShapeStr(input.shape()).c_str());
  EMBER_KERNEL_CHECK(ctx, grid.dim == 5 && grid.sizes[0] == input.sizes[0] &&
                              grid.sizes[4] == 3,
                     "grid: expected [%d, Do, Ho, Wo, 3], got shape %s", input.sizes[0],
                     ShapeStr(grid.shape()).c_str());
  EMBER_KERNEL_CHECK(ctx, input.sizes[2] > 0 && input.sizes[3] > 0 && input.sizes[4] > 0,
                     "input: spatial dims must be non-empty, got shape %s",
                     ShapeStr(input.shape()).c_str());
  if (!is_floating_type(input.dtype)) {
    fail_dtype(ctx, "input", input.dtype);
    return;
  }
  if (!check_dtype(ctx, grid, "grid", input.dtype) ||
      !check_dtype(ctx, out, "out", input.dtype)) {
    return;
  }
  const int32_t sizes[5] = {input.sizes[0], input.sizes[1], grid.sizes[1], grid.sizes[2],
                            grid.sizes[3]};
  if (!resize_out(ctx, out, sizes)) return;
  if (out.numel == 0) return;
  (void)dispatch_dtype<kFloating>(input.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    grid_sample_3d<S>(input, grid, interpolation_mode, padding_mode, align_corners, out);
  });
}

}  // namespace ember::kernels::portable
