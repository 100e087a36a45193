// aten::grid_sampler_2d.out(Tensor input, Tensor grid, int interpolation_mode, int padding_mode,
//     bool align_corners, *, Tensor(a!) out) -> Tensor(a!)
// args: input [N, C, H, W], grid [N, Ho, Wo, 2], interpolation_mode, padding_mode,
// align_corners, out [N, C, Ho, Wo], out(return).
//
// Interpolation 0 (bilinear) and 1 (nearest, ties to even); 2 (bicubic)
// fails with NotSupported. Padding 0 (zeros), 1 (border), 2 (reflection),
// with eager's unnormalize / clip / reflect arithmetic. Floating dtypes; grid
// has input's dtype. Any dim orders.
#include <cmath>

#include "kernels/portable/util/binary.h"
#include "runtime/kernel/kernel_registry.h"

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

template <typename CT>
CT source_index(CT coord, int64_t size, int64_t padding, bool align_corners) {
  coord = align_corners ? (coord + 1) / 2 * static_cast<CT>(size - 1)
                        : ((coord + 1) * static_cast<CT>(size) - 1) / 2;
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
  // Keep far-away or non-finite coordinates out of int64 overflow.
  if (!std::isfinite(coord) || std::fabs(coord) > CT(1e9)) coord = CT(-100);
  return coord;
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
        const CT ix = source_index<CT>(convert<CT>(gp[0]), w, padding, align_corners);
        const CT iy = source_index<CT>(convert<CT>(gp[gs[3]]), h, padding, align_corners);
        const S* plane = x + n * is[0];
        S* dst = y + n * os[0] + i * os[2] + j * os[3];
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
        const CT wx1 = ix - static_cast<CT>(x0), wx0 = 1 - wx1;
        const CT wy1 = iy - static_cast<CT>(y0), wy0 = 1 - wy1;
        const int64_t cx[4] = {x0, x0 + 1, x0, x0 + 1};
        const int64_t cy[4] = {y0, y0, y0 + 1, y0 + 1};
        const CT cw[4] = {wx0 * wy0, wx1 * wy0, wx0 * wy1, wx1 * wy1};
        for (int64_t c = 0; c < channels; ++c) {
          CT acc = 0;
          for (int k = 0; k < 4; ++k) {
            if (inside(cy[k], cx[k])) {
              acc += convert<CT>(plane[c * is[1] + cy[k] * is[2] + cx[k] * is[3]]) * cw[k];
            }
          }
          dst[c * os[1]] = convert<S>(acc);
        }
      }
    }
  }
}

void grid_sampler_2d_out(KernelContext& ctx, EValue** args) {
  Tensor* input = tensor_arg(ctx, args, 0, "input");
  if (input == nullptr) return;
  Tensor* grid = tensor_arg(ctx, args, 1, "grid");
  if (grid == nullptr) return;
  int64_t mode = 0, padding = 0;
  if (!int_arg(ctx, args, 2, "interpolation_mode", &mode) ||
      !int_arg(ctx, args, 3, "padding_mode", &padding)) {
    return;
  }
  bool align_corners = false;
  if (!bool_arg(ctx, args, 4, "align_corners", &align_corners)) return;
  Tensor* out = tensor_arg(ctx, args, 5, "out");
  if (out == nullptr) return;
  if (mode == 2) {
    ctx.fail(Error::NotSupported, "interpolation_mode: bicubic (2) is not supported");
    return;
  }
  EMBER_KERNEL_CHECK(ctx, mode == 0 || mode == 1,
                     "interpolation_mode: expected 0 (bilinear) or 1 (nearest), got %lld",
                     static_cast<long long>(mode));
  EMBER_KERNEL_CHECK(ctx, padding >= 0 && padding <= 2,
                     "padding_mode: expected 0 (zeros), 1 (border) or 2 (reflection), got %lld",
                     static_cast<long long>(padding));
  EMBER_KERNEL_CHECK(ctx, input->dim == 4, "input: expected [N, C, H, W], got shape %s",
                     ShapeStr(input->shape()).c_str());
  EMBER_KERNEL_CHECK(ctx, grid->dim == 4 && grid->sizes[0] == input->sizes[0] &&
                              grid->sizes[3] == 2,
                     "grid: expected [%d, Ho, Wo, 2], got shape %s", input->sizes[0],
                     ShapeStr(grid->shape()).c_str());
  EMBER_KERNEL_CHECK(ctx, input->sizes[2] > 0 && input->sizes[3] > 0,
                     "input: spatial dims must be non-empty, got shape %s",
                     ShapeStr(input->shape()).c_str());
  if (!is_floating_type(input->dtype)) {
    fail_dtype(ctx, "input", input->dtype);
    return;
  }
  if (!check_dtype(ctx, *grid, "grid", input->dtype) ||
      !check_dtype(ctx, *out, "out", input->dtype)) {
    return;
  }
  const int32_t sizes[4] = {input->sizes[0], input->sizes[1], grid->sizes[1], grid->sizes[2]};
  if (!resize_out(ctx, *out, sizes)) return;
  if (out->numel == 0) return;
  (void)dispatch_dtype<kFloating>(input->dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    grid_sample<S>(*input, *grid, mode, padding, align_corners, *out);
  });
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::grid_sampler_2d.out", grid_sampler_2d_out, 7);

}  // namespace ember::kernels::portable
