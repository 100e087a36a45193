#include "kernels/portable/util/conv_winograd_f2.h"

#include <cstring>

#include "kernels/portable/util/gemm.h"
#include "kernels/portable/util/parallel.h"

namespace ember::kernels::portable {
namespace {

constexpr int64_t kXi = 16;  // 4×4 transformed values per tile.

// G of F(2, 3), in double: the weight transform runs once, at prepare.
constexpr double kG[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};

// A GEMM operand read from panels packed for another tile (never in
// practice: the tiles are fixed per process).
using PanelSource = PackedPanelsSource<float>;

int64_t panel_offset(int64_t rows, int64_t depth, int tile, int64_t block, int64_t r,
                     int64_t c) {
  return packed_panels_offset(rows, depth, tile, block, GemmBlocking<float>::kKCPacked, r, c);
}

struct Layout {
  int64_t tiles_x, tiles, v_stride, m_floats;
  int mr;
  Layout(int64_t ic, int64_t oc, int64_t out_h, int64_t out_w)
      : tiles_x((out_w + 1) / 2),
        tiles(winograd_f2_tiles(out_h, out_w)),
        v_stride(packed_panels_size(tiles, ic, gemm_mr<float>(), GemmBlocking<float>::kMC)),
        m_floats(kXi * tiles * oc),
        mr(gemm_mr<float>()) {}
  int64_t floats() const { return kXi * v_stride + m_floats; }
};

// V for input channels [c0, c1) of image b: each tile's 4×4 input block d
// (zero outside the input), Bᵀ d B, into the 16 A operands' panels; rows
// past the last tile in its strip stay zero.
void input_transform(const WinogradIo& io, int64_t ic, const Layout& l, int64_t b, int64_t c0,
                     int64_t c1, float* v) {
  using B = GemmBlocking<float>;
  const int64_t last_block = (l.tiles - 1) / B::kMC * B::kMC;
  const int64_t rows_end = last_block + (l.tiles - last_block + l.mr - 1) / l.mr * l.mr;
  for (int64_t c = c0; c < c1; ++c) {
    const float* plane = io.x + b * io.x_n + c * io.x_c;
    for (int64_t t = 0; t < l.tiles; ++t) {
      const int64_t y0 = (t / l.tiles_x) * 2 - io.pad_h, x0 = (t % l.tiles_x) * 2 - io.pad_w;
      float d[4][4];
      for (int i = 0; i < 4; ++i) {
        const int64_t iy = y0 + i;
        for (int j = 0; j < 4; ++j) {
          const int64_t ix = x0 + j;
          d[i][j] = iy >= 0 && iy < io.in_h && ix >= 0 && ix < io.in_w
                        ? plane[iy * io.x_h + ix * io.x_w]
                        : 0.0f;
        }
      }
      float e[4][4];  // Bᵀ d: down the columns.
      for (int j = 0; j < 4; ++j) {
        e[0][j] = d[0][j] - d[2][j];
        e[1][j] = d[1][j] + d[2][j];
        e[2][j] = d[2][j] - d[1][j];
        e[3][j] = d[1][j] - d[3][j];
      }
      const int64_t at = panel_offset(l.tiles, ic, l.mr, B::kMC, t, c);
      for (int i = 0; i < 4; ++i) {  // (Bᵀ d) B: along the rows.
        v[(i * 4 + 0) * l.v_stride + at] = e[i][0] - e[i][2];
        v[(i * 4 + 1) * l.v_stride + at] = e[i][1] + e[i][2];
        v[(i * 4 + 2) * l.v_stride + at] = e[i][2] - e[i][1];
        v[(i * 4 + 3) * l.v_stride + at] = e[i][1] - e[i][3];
      }
    }
    for (int64_t t = l.tiles; t < rows_end; ++t) {
      const int64_t at = panel_offset(l.tiles, ic, l.mr, B::kMC, t, c);
      for (int64_t xi = 0; xi < kXi; ++xi) v[xi * l.v_stride + at] = 0.0f;
    }
  }
}

// out for output channels [o0, o1) of image b from M[xi][t][o]: Aᵀ m A per
// tile plus the bias, then the fused op's residual and clamp row by row.
void output_transform(const WinogradIo& io, int64_t oc, const Layout& l, int64_t b, int64_t o0,
                      int64_t o1, const float* m) {
  const int64_t stride_xi = l.tiles * oc;
  for (int64_t o = o0; o < o1; ++o) {
    const float bias = io.bias != nullptr ? io.bias[o * io.bias_stride] : 0.0f;
    float* plane = io.out + b * io.o_n + o * io.o_c;
    for (int64_t t = 0; t < l.tiles; ++t) {
      const float* mt = m + t * oc + o;
      float s[2][4];  // Aᵀ m: down the columns.
      for (int j = 0; j < 4; ++j) {
        const float m0 = mt[(0 * 4 + j) * stride_xi], m1 = mt[(1 * 4 + j) * stride_xi];
        const float m2 = mt[(2 * 4 + j) * stride_xi], m3 = mt[(3 * 4 + j) * stride_xi];
        s[0][j] = (m0 + m1) + m2;
        s[1][j] = (m1 - m2) - m3;
      }
      const int64_t y0 = (t / l.tiles_x) * 2, x0 = (t % l.tiles_x) * 2;
      for (int i = 0; i < 2; ++i) {
        if (y0 + i >= io.out_h) break;
        float* row = plane + (y0 + i) * io.o_h;
        row[x0 * io.o_w] = ((s[i][0] + s[i][1]) + s[i][2]) + bias;
        if (x0 + 1 < io.out_w) row[(x0 + 1) * io.o_w] = ((s[i][1] - s[i][2]) - s[i][3]) + bias;
      }
    }
    if (io.epilogue != nullptr) {
      for (int64_t oh = 0; oh < io.out_h; ++oh) {
        GemmEpilogue<float> row = *io.epilogue;
        if (row.residual != nullptr) row.residual += b * io.r_n + o * io.r_c + oh * io.r_h;
        row.apply(1, io.out_w, plane + oh * io.o_h, 0, io.o_w);
      }
    }
  }
}

}  // namespace

int64_t winograd_f2_weight_floats(int64_t oc, int64_t ic) {
  return kXi * packed_panels_size(oc, ic, gemm_nr<float>(), GemmBlocking<float>::kNC);
}

WinogradWeights winograd_f2_pack_weights(const float* w, int64_t s_oc, int64_t s_ic,
                                         int64_t s_h, int64_t s_w, int64_t oc, int64_t ic,
                                         float* dst) {
  using B = GemmBlocking<float>;
  WinogradWeights u;
  u.packed = dst;
  u.oc = oc;
  u.ic = ic;
  u.form = WinogradForm::kF2TileRows;
  u.tile = gemm_nr<float>();
  u.xi_stride = packed_panels_size(oc, ic, u.tile, B::kNC);
  u.weight = w;
  u.s_oc = s_oc;
  u.s_ic = s_ic;
  u.s_h = s_h;
  u.s_w = s_w;
  std::memset(dst, 0, static_cast<size_t>(kXi * u.xi_stride) * sizeof(float));
  for (int64_t o = 0; o < oc; ++o) {
    for (int64_t c = 0; c < ic; ++c) {
      const float* g = w + o * s_oc + c * s_ic;
      const int64_t at = panel_offset(oc, ic, u.tile, B::kNC, o, c);
      for (int a = 0; a < 4; ++a) {
        double gg[3];  // Row a of G g.
        winograd_g_row(kG, a, g, s_h, s_w, gg);
        for (int bb = 0; bb < 4; ++bb) {
          const double v = gg[0] * kG[bb][0] + gg[1] * kG[bb][1] + gg[2] * kG[bb][2];
          dst[(a * 4 + bb) * u.xi_stride + at] = static_cast<float>(v);
        }
      }
    }
  }
  return u;
}

size_t winograd_f2_scratch_bytes(int64_t ic, int64_t oc, int64_t out_h, int64_t out_w) {
  return static_cast<size_t>(Layout(ic, oc, out_h, out_w).floats()) * sizeof(float);
}

bool winograd_f2_conv(KernelContext& ctx, const WinogradIo& io, const WinogradWeights& u,
                      void* scratch, size_t scratch_bytes) {
  using B = GemmBlocking<float>;
  const int64_t ic = u.ic, oc = u.oc;
  const Layout l(ic, oc, io.out_h, io.out_w);
  if (scratch == nullptr ||
      static_cast<int64_t>(scratch_bytes / sizeof(float)) < l.floats()) {
    return false;
  }
  float* v = static_cast<float*>(scratch);
  float* m = v + kXi * l.v_stride;
  for (int64_t b = 0; b < io.batch; ++b) {
    // One slice of channels, of products and of output channels per thread.
    parallel_range(ctx, ic, 1, 1,
                   [&](int64_t c0, int64_t c1) { input_transform(io, ic, l, b, c0, c1, v); });
    parallel_range(ctx, kXi, 1, 1, [&](int64_t x0, int64_t x1) {
      for (int64_t xi = x0; xi < x1; ++xi) {
        const float* vx = v + xi * l.v_stride;
        const float* ux = u.packed + xi * u.xi_stride;
        gemm<float>(l.tiles, oc, ic,
                    PackedA<float, PanelSource>{{vx, l.tiles, ic, l.mr},
                                                {vx, l.tiles, ic, l.mr, B::kMC}},
                    PackedB<float, PanelSource>{{ux, oc, ic, u.tile}, {ux, oc, ic, u.tile, B::kNC}},
                    1.0f, 0.0f, m + xi * l.tiles * oc, oc, 1);
      }
    });
    parallel_range(ctx, oc, 1, 1,
                   [&](int64_t o0, int64_t o1) { output_transform(io, oc, l, b, o0, o1, m); });
  }
  return true;
}

}  // namespace ember::kernels::portable
