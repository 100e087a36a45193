#include "kernels/portable/util/conv_winograd.h"

#include "kernels/portable/util/conv_winograd_f2.h"

#include <cstdlib>
#include <cstring>

#include "kernels/portable/util/parallel.h"
#include "kernels/portable/util/transpose_f32.h"

// The transforms are adds and multiplies by constants written out in a fixed
// order; the AVX2 copies below are the same code compiled for wider vectors
// (no FMA, so nothing is contracted: both give the same bits).
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define EMBER_WINOGRAD_AVX2 1
#define EMBER_TARGET_AVX2 __attribute__((target("avx2")))
#else
#define EMBER_WINOGRAD_AVX2 0
#define EMBER_TARGET_AVX2
#endif

namespace ember::kernels::portable {
namespace {

constexpr int64_t kXi = 36;                         // 6×6 transformed values per tile.
constexpr size_t kBandBytes = size_t{2} << 20;      // V and M of one band of tile rows.

constexpr auto& kG = kWinogradF43G;

// GEMM A source: matrix xi = (a, b) of U, U[xi][o][c] = (G g[o][c] Gᵀ)[a][b].
struct WeightTransformSource {
  const float* w;
  int64_t s_oc, s_ic, s_h, s_w;
  int xi;

  // The same sums in the same order as winograd_pack_weights.
  float at(int64_t o, int64_t c) const {
    const int a = xi / 6, b = xi % 6;
    double gg[3];
    winograd_g_row(kG, a, w + o * s_oc + c * s_ic, s_h, s_w, gg);
    return static_cast<float>(gg[0] * kG[b][0] + gg[1] * kG[b][1] + gg[2] * kG[b][2]);
  }

  template <int kMR>
  void pack_a(int64_t i0, int64_t mc, int64_t p0, int64_t kc, float* dst) const {
    for (int64_t s = 0; s < mc; s += kMR) {
      const int64_t rows = mc - s < kMR ? mc - s : kMR;
      for (int64_t p = 0; p < kc; ++p) {
        for (int64_t ii = 0; ii < kMR; ++ii) {
          dst[p * kMR + ii] = ii < rows ? at(i0 + s + ii, p0 + p) : 0.0f;
        }
      }
      dst += kc * kMR;
    }
  }

  // Uᵀ as a B operand (kTileRows): B[c][o] = U[xi][o][c].
  template <int kNR>
  void pack_b(int64_t p0, int64_t kc, int64_t j0, int64_t nc, float* dst) const {
    for (int64_t s = 0; s < nc; s += kNR) {
      const int64_t cols = nc - s < kNR ? nc - s : kNR;
      for (int64_t p = 0; p < kc; ++p) {
        for (int64_t jj = 0; jj < kNR; ++jj) {
          dst[p * kNR + jj] = jj < cols ? at(j0 + s + jj, p0 + p) : 0.0f;
        }
      }
      dst += kc * kNR;
    }
  }
};

struct Tiles {
  int64_t x, y;  // Tiles across and down.
  Tiles(int64_t out_h, int64_t out_w) : x((out_w + 3) / 4), y((out_h + 3) / 4) {}
};

// out[r][e] = (Bᵀ d)[r] for d[i] = in[i][e], e < n: the 1-D input transform.
[[gnu::always_inline]] inline void input_transform(const float* const* in, float* const* out,
                                                   int64_t n) {
  const float* __restrict d0 = in[0];
  const float* __restrict d1 = in[1];
  const float* __restrict d2 = in[2];
  const float* __restrict d3 = in[3];
  const float* __restrict d4 = in[4];
  const float* __restrict d5 = in[5];
  float* __restrict o0 = out[0];
  float* __restrict o1 = out[1];
  float* __restrict o2 = out[2];
  float* __restrict o3 = out[3];
  float* __restrict o4 = out[4];
  float* __restrict o5 = out[5];
  // The buffers never overlap: without ivdep GCC would need more run-time
  // alias checks than it versions for and leave the loop scalar.
#pragma GCC ivdep
  for (int64_t e = 0; e < n; ++e) {
    o0[e] = (4.0f * d0[e] - 5.0f * d2[e]) + d4[e];
    o1[e] = -4.0f * (d1[e] + d2[e]) + (d3[e] + d4[e]);
    o2[e] = 4.0f * (d1[e] - d2[e]) + (d4[e] - d3[e]);
    o3[e] = 2.0f * (d3[e] - d1[e]) + (d4[e] - d2[e]);
    o4[e] = 2.0f * (d1[e] - d3[e]) + (d4[e] - d2[e]);
    o5[e] = (4.0f * d1[e] - 5.0f * d3[e]) + d5[e];
  }
}

// out[j][e] = (Aᵀ m)[j] (+ bias) for m[r] = in[r][e], e < n: the 1-D output transform.
template <bool kBias>
[[gnu::always_inline]] inline void output_transform(const float* const* in, float* const* out,
                                                    int64_t n, float bias) {
  const float* __restrict m0 = in[0];
  const float* __restrict m1 = in[1];
  const float* __restrict m2 = in[2];
  const float* __restrict m3 = in[3];
  const float* __restrict m4 = in[4];
  const float* __restrict m5 = in[5];
  float* __restrict o0 = out[0];
  float* __restrict o1 = out[1];
  float* __restrict o2 = out[2];
  float* __restrict o3 = out[3];
#pragma GCC ivdep
  for (int64_t e = 0; e < n; ++e) {
    const float s12 = m1[e] + m2[e], d12 = m1[e] - m2[e];
    const float s34 = m3[e] + m4[e], d34 = m3[e] - m4[e];
    float y0 = (m0[e] + s12) + s34;
    float y1 = d12 + 2.0f * d34;
    float y2 = s12 + 4.0f * s34;
    float y3 = (d12 + 8.0f * d34) + m5[e];
    if constexpr (kBias) {
      y0 += bias;
      y1 += bias;
      y2 += bias;
      y3 += bias;
    }
    o0[e] = y0;
    o1[e] = y1;
    o2[e] = y2;
    o3[e] = y3;
  }
}

// A band of tile rows. V, M and the transform buffers index a tile (ty, tx)
// of the band as column (ty - ty0)·(tiles.x + 1) + tx: one spare column per
// tile row lets every transform run along the whole band as one contiguous
// vector (the spare column's values are computed and never written out).
// Where V's element (channel c, column t) of one matrix sits: V is written
// as PackedPanels (gemm.h) of cols × ic, so the 36 GEMMs read it in place
// instead of packing it again: the NR-column strips of the B operand in
// blocks of kNC columns (kTileColumns), or the MR-row strips of the A
// operand in blocks of kMC rows (kTileRows; a tile is a row there). Both
// in gemm_blocked_packed_b's depth blocks.
struct VPanels {
  int64_t cols, ic;
  int tile;           // NR, or MR for kTileRows.
  int64_t block;      // kNC, or kMC for kTileRows.
  // The start of the tile-wide strip holding column t0 (a multiple of the
  // tile) for channel c: the strip's `tile` columns are contiguous there.
  int64_t strip(int64_t c, int64_t t0) const {
    return packed_panels_offset(cols, ic, tile, block, GemmBlocking<float>::kKCPacked, t0, c);
  }
};

VPanels v_panels(int64_t cols, int64_t ic, WinogradForm form) {
  using B = GemmBlocking<float>;
  return form == WinogradForm::kTileRows ? VPanels{cols, ic, gemm_mr<float>(), B::kMC}
                                         : VPanels{cols, ic, gemm_nr<float>(), B::kNC};
}

struct Band {
  int64_t batch;      // Which image.
  int64_t ty0, rows;  // Tile rows [ty0, ty0 + rows).
  int64_t stride;     // tiles.x + 1: columns per tile row.
  int64_t cols;       // rows · stride: the row length of M and the buffers.
  VPanels layout;     // Where V's values go.
  int64_t v_stride;   // Floats between two of V's 36 matrices.
};

inline int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// V's panels read element by element, for a GEMM whose tile is not the
// layout's (never in practice: the tiles are fixed per process).
PackedPanelsSource<float> v_source(const float* v, const VPanels& l) {
  return {v, l.cols, l.ic, l.tile, l.block};
}

// Floats of one thread's transform buffers for a band (input side: 6 rows ×
// 4 column phases of the band's input and their vertical transform; output
// side: 24 + 16 rows, fewer).
inline int64_t thread_floats(int64_t cols) { return 48 * cols; }

// Row `ih` of one input plane as its four column phases: phase k holds
// columns 4j + k - pad_w for j < stride (zero outside the input).
[[gnu::always_inline]] inline void gather_phases(const WinogradIo& io, const float* src,
                                                 int64_t stride, float* p0, int64_t pstride) {
  float* p[4] = {p0, p0 + pstride, p0 + 2 * pstride, p0 + 3 * pstride};
  // Columns j whose four phases are all inside the input.
  int64_t lo = (io.pad_w + 3) / 4;
  int64_t hi = io.in_w + io.pad_w - 4 >= 0 ? (io.in_w + io.pad_w - 4) / 4 + 1 : 0;
  if (hi > stride) hi = stride;
  if (lo > hi) lo = hi;
  auto edge = [&](int64_t j) {
    for (int64_t k = 0; k < 4; ++k) {
      const int64_t iw = 4 * j + k - io.pad_w;
      p[k][j] = iw >= 0 && iw < io.in_w ? src[iw * io.x_w] : 0.0f;
    }
  };
  for (int64_t j = 0; j < lo; ++j) edge(j);
  if (io.x_w == 1) {
    const float* s = src - io.pad_w;
    float* __restrict q0 = p[0];
    float* __restrict q1 = p[1];
    float* __restrict q2 = p[2];
    float* __restrict q3 = p[3];
#pragma GCC ivdep
    for (int64_t j = lo; j < hi; ++j) {
      q0[j] = s[4 * j];
      q1[j] = s[4 * j + 1];
      q2[j] = s[4 * j + 2];
      q3[j] = s[4 * j + 3];
    }
  } else {
    for (int64_t j = lo; j < hi; ++j) {
      for (int64_t k = 0; k < 4; ++k) p[k][j] = src[(4 * j + k - io.pad_w) * io.x_w];
    }
  }
  for (int64_t j = hi; j < stride; ++j) edge(j);
}

// V[xi][c][t] for input channels [c0, c1) of one band; `buf` is this
// thread's thread_floats(band.cols).
[[gnu::always_inline]] inline void input_band(const WinogradIo& io, int64_t ic,
                                              const Band& band, int64_t c0, int64_t c1,
                                              float* v, float* buf) {
  const int64_t cols = band.cols;
  float* rows = buf;                // [6 rows i][4 phases k][cols]
  float* vert = buf + 24 * cols;    // [6 rows r][4 phases k][cols]
  for (int64_t c = c0; c < c1; ++c) {
    const float* plane = io.x + band.batch * io.x_n + c * io.x_c;
    for (int64_t t = 0; t < band.rows; ++t) {
      for (int64_t i = 0; i < 6; ++i) {
        float* dst = rows + i * 4 * cols + t * band.stride;
        const int64_t ih = (band.ty0 + t) * 4 - io.pad_h + i;
        if (ih < 0 || ih >= io.in_h) {
          for (int64_t k = 0; k < 4; ++k) {
            std::memset(dst + k * cols, 0, static_cast<size_t>(band.stride) * sizeof(float));
          }
        } else {
          gather_phases(io, plane + ih * io.x_h, band.stride, dst, cols);
        }
      }
    }
    // Down the columns: vert[r] = Σ_i Bᵀ[r][i] rows[i], each phase alike.
    for (int64_t k = 0; k < 4; ++k) {
      const float* in[6];
      float* out[6];
      for (int i = 0; i < 6; ++i) {
        in[i] = rows + (i * 4 + k) * cols;
        out[i] = vert + (i * 4 + k) * cols;
      }
      input_transform(in, out, cols);
    }
    // Along each row: tile j reads columns 4j .. 4j + 5, i.e. phases 0..3 at
    // j and phases 0, 1 at j + 1 (the spare column's read of j + 1 runs into
    // the next tile row or phase, still inside `vert`: computed, never used).
    // Straight into V's panels, one strip of the layout's tile at a time.
    const VPanels& layout = band.layout;
    (void)ic;
    for (int64_t t0 = 0; t0 < cols; t0 += layout.tile) {
      const int64_t n = cols - t0 < layout.tile ? cols - t0 : layout.tile;
      const int64_t at = layout.strip(c, t0);
      for (int64_t r = 0; r < 6; ++r) {
        const float* vr = vert + r * 4 * cols + t0;
        const float* hin[6] = {vr, vr + cols, vr + 2 * cols, vr + 3 * cols, vr + 1, vr + cols + 1};
        float* hout[6];
        for (int64_t col = 0; col < 6; ++col) hout[col] = v + (r * 6 + col) * band.v_stride + at;
        input_transform(hin, hout, n);
        for (int64_t col = 0; col < 6; ++col) {
          for (int64_t jj = n; jj < layout.tile; ++jj) hout[col][jj] = 0.0f;
        }
      }
    }
  }
}

// out for output channels [o0, o1) of one band from M[xi][o][t].
template <bool kBias>
[[gnu::always_inline]] inline void output_band(const WinogradIo& io, int64_t oc,
                                               const Band& band, int64_t o0, int64_t o1,
                                               const float* m, float* buf) {
  const int64_t cols = band.cols;
  float* rows = buf;              // [6][4][cols]: Aᵀ along each row of M.
  float* ys = buf + 24 * cols;    // [4][4][cols]: each tile's 16 outputs.
  const int64_t full = io.out_w / 4;  // Tiles whose four columns are all inside.
  const int64_t tail = io.out_w - 4 * full;
  for (int64_t o = o0; o < o1; ++o) {
    const float bias = kBias ? io.bias[o * io.bias_stride] : 0.0f;
    float* plane = io.out + band.batch * io.o_n + o * io.o_c;
    for (int64_t r = 0; r < 6; ++r) {
      const float* in[6];
      float* out[4];
      for (int64_t col = 0; col < 6; ++col) in[col] = m + ((r * 6 + col) * oc + o) * cols;
      for (int64_t j = 0; j < 4; ++j) out[j] = rows + (r * 4 + j) * cols;
      output_transform<false>(in, out, cols, 0.0f);
    }
    for (int64_t j = 0; j < 4; ++j) {
      const float* in[6];
      float* out[4];
      for (int64_t r = 0; r < 6; ++r) in[r] = rows + (r * 4 + j) * cols;
      for (int64_t i = 0; i < 4; ++i) out[i] = ys + (i * 4 + j) * cols;
      output_transform<kBias>(in, out, cols, bias);
    }
    for (int64_t t = 0; t < band.rows; ++t) {
      for (int64_t i = 0; i < 4; ++i) {
        const int64_t oh = (band.ty0 + t) * 4 + i;
        if (oh >= io.out_h) break;
        float* orow = plane + oh * io.o_h;
        const float* y0 = ys + (i * 4 + 0) * cols + t * band.stride;
        const float* y1 = y0 + cols;
        const float* y2 = y0 + 2 * cols;
        const float* y3 = y0 + 3 * cols;
        if (io.o_w == 1) {
          float* __restrict d = orow;
#pragma GCC ivdep
          for (int64_t tx = 0; tx < full; ++tx) {
            d[4 * tx] = y0[tx];
            d[4 * tx + 1] = y1[tx];
            d[4 * tx + 2] = y2[tx];
            d[4 * tx + 3] = y3[tx];
          }
        } else {
          for (int64_t tx = 0; tx < full; ++tx) {
            float* d = orow + 4 * tx * io.o_w;
            d[0] = y0[tx];
            d[io.o_w] = y1[tx];
            d[2 * io.o_w] = y2[tx];
            d[3 * io.o_w] = y3[tx];
          }
        }
        const float* yj[4] = {y0, y1, y2, y3};
        for (int64_t j = 0; j < tail; ++j) orow[(4 * full + j) * io.o_w] = yj[j][full];
        if (io.epilogue != nullptr) {
          GemmEpilogue<float> row = *io.epilogue;
          if (row.residual != nullptr) {
            row.residual += band.batch * io.r_n + o * io.r_c + oh * io.r_h;
          }
          row.apply(1, io.out_w, orow, 0, io.o_w);
        }
      }
    }
  }
}

using InputBandFn = void (*)(const WinogradIo&, int64_t, const Band&, int64_t, int64_t, float*,
                             float*);
using OutputBandFn = void (*)(const WinogradIo&, int64_t, const Band&, int64_t, int64_t,
                              const float*, float*);

void input_band_base(const WinogradIo& io, int64_t ic, const Band& b, int64_t c0, int64_t c1,
                     float* v, float* buf) {
  input_band(io, ic, b, c0, c1, v, buf);
}
template <bool kBias>
void output_band_base(const WinogradIo& io, int64_t oc, const Band& b, int64_t o0, int64_t o1,
                      const float* m, float* buf) {
  output_band<kBias>(io, oc, b, o0, o1, m, buf);
}
#if EMBER_WINOGRAD_AVX2
EMBER_TARGET_AVX2 void input_band_avx2(const WinogradIo& io, int64_t ic, const Band& b,
                                       int64_t c0, int64_t c1, float* v, float* buf) {
  input_band(io, ic, b, c0, c1, v, buf);
}
template <bool kBias>
EMBER_TARGET_AVX2 void output_band_avx2(const WinogradIo& io, int64_t oc, const Band& b,
                                        int64_t o0, int64_t o1, const float* m, float* buf) {
  output_band<kBias>(io, oc, b, o0, o1, m, buf);
}
#endif

// Scratch floats for a band of `rows` tile rows: every thread's buffers,
// V (in the GEMM's packed panels: the Band's v_stride) and M; for
// kTileRows also every thread's Mᵀ of one product before its transpose.
int64_t band_floats(int64_t ic, int64_t oc, const Tiles& t, int64_t threads, int64_t rows,
                    WinogradForm form) {
  const int64_t cols = rows * (t.x + 1);
  const VPanels l = v_panels(cols, ic, form);
  const int64_t v_stride = packed_panels_size(cols, ic, l.tile, l.block);
  const int64_t mt = form == WinogradForm::kTileRows ? threads * cols * oc : 0;
  return threads * thread_floats(cols) + kXi * v_stride + kXi * oc * cols + mt;
}

// The most tile rows a band can have in `floats` of scratch (0: not one).
int64_t band_rows_for(int64_t floats, int64_t ic, int64_t oc, const Tiles& t, int64_t threads,
                      WinogradForm form) {
  int64_t rows = 0;
  while (rows < t.y && band_floats(ic, oc, t, threads, rows + 1, form) <= floats) ++rows;
  return rows;
}

}  // namespace

bool winograd_enabled() {
  static const bool enabled = [] {
    const char* v = std::getenv("EMBER_WINOGRAD");
    return v == nullptr || std::strcmp(v, "0") != 0;
  }();
  return enabled;
}

WinogradForm winograd_form(int64_t ic, int64_t oc, int64_t out_h, int64_t out_w) {
  if (ic < 16 || oc < 16 || out_h < 4 || out_w < 4) return WinogradForm::kNone;
  // Each transformed weight meets `tiles` input tiles per call (an im2col
  // weight meets 16× as many pixels): below 16 tiles a U four times the
  // weight's size streams for too few products (512 → 512 channels at 7×7,
  // 4 tiles: 1.04× im2col's speed with 4× its memory).
  const Tiles t(out_h, out_w);
  const int64_t tiles = t.x * t.y;
  if (tiles < 16) {
    // F(2×2, 3×3) on planes of 16 or more of its 2×2 tiles (7×7 to 12×12):
    // 16 products per tile, a U 1.8× the weight, so it pays where the
    // channels make the products dominate the transforms (Zen 4, 512 → 512
    // at 7×7: im2col 2.83–2.90 ms, F(2, 3) 2.36–2.71 at 1 thread; 1.69–1.93
    // against 1.20–1.31 at 2).
    return ic >= 64 && oc >= 64 && winograd_f2_tiles(out_h, out_w) >= 16
               ? WinogradForm::kF2TileRows
               : WinogradForm::kNone;
  }
  // Tiles as the GEMM's rows on small planes: a band's few tiles fill MR-row
  // strips where they would leave much of an NR-wide column panel empty.
  // Zen 4, 1 thread: 256 → 256 at 14×14 (16 tiles) 2.45 → 1.63 ms with
  // AVX-512 (im2col 2.71), 2.8 → 2.0 with AVX2; 128 → 128 at 28×28 (49
  // tiles) 1.53 → 1.05 with AVX-512's 32-wide panels but no faster with
  // AVX2's 16-wide ones. On larger planes the columns fill the panels and the
  // rows form's transposes of M cost more (64 → 64 at 56×56, AVX-512: 1.07
  // ms as columns, 1.48 as rows).
  if (tiles < 32 || (tiles < 100 && gemm_nr<float>() >= 32)) return WinogradForm::kTileRows;
  return WinogradForm::kTileColumns;
}

bool winograd_suits(int64_t ic, int64_t oc, int64_t out_h, int64_t out_w) {
  return winograd_form(ic, oc, out_h, out_w) != WinogradForm::kNone;
}

int64_t winograd_weight_floats(int64_t oc, int64_t ic, WinogradForm form) {
  using B = GemmBlocking<float>;
  if (form == WinogradForm::kF2TileRows) return winograd_f2_weight_floats(oc, ic);
  if (form == WinogradForm::kTileRows) return kXi * packed_panels_size(oc, ic, gemm_nr<float>(), B::kNC);
  return kXi * packed_panels_size(oc, ic, gemm_mr<float>(), B::kMC);
}

WinogradWeights winograd_pack_weights(const float* w, int64_t s_oc, int64_t s_ic, int64_t s_h,
                                      int64_t s_w, int64_t oc, int64_t ic, float* dst,
                                      WinogradForm form) {
  using B = GemmBlocking<float>;
  if (form == WinogradForm::kF2TileRows) {
    return winograd_f2_pack_weights(w, s_oc, s_ic, s_h, s_w, oc, ic, dst);
  }
  const bool rows_form = form == WinogradForm::kTileRows;
  WinogradWeights u;
  u.packed = dst;
  u.oc = oc;
  u.ic = ic;
  u.form = rows_form ? WinogradForm::kTileRows : WinogradForm::kTileColumns;
  u.tile = rows_form ? gemm_nr<float>() : gemm_mr<float>();
  // OC is the A operand's rows (blocks of kMC) or the B operand's columns (kNC).
  const int64_t block_oc = rows_form ? B::kNC : B::kMC;
  u.xi_stride = packed_panels_size(oc, ic, u.tile, block_oc);
  u.weight = w;
  u.s_oc = s_oc;
  u.s_ic = s_ic;
  u.s_h = s_h;
  u.s_w = s_w;
  // Row a of G g, then its six products with Gᵀ (in double), stored where
  // pack_a_panels (pack_b_panels for Uᵀ) would put them: in the tile-wide
  // strip of the (o, c) block of kMC (kNC) × kKCPacked (the depth blocks of
  // the packed-B loop), padding zero. Row-major over a keeps the writes in
  // six streams (one transform of (o, c) at a time scatters over 36
  // matrices megabytes apart: 4× slower at load).
  std::memset(dst, 0, static_cast<size_t>(kXi * u.xi_stride) * sizeof(float));
  for (int a = 0; a < 6; ++a) {
    for (int64_t o = 0; o < oc; ++o) {
      for (int64_t c = 0; c < ic; ++c) {
        const int64_t offset =
            packed_panels_offset(oc, ic, u.tile, block_oc, B::kKCPacked, o, c);
        double gg[3];  // Row a of G g.
        winograd_g_row(kG, a, w + o * s_oc + c * s_ic, s_h, s_w, gg);
        for (int b = 0; b < 6; ++b) {
          const double v = gg[0] * kG[b][0] + gg[1] * kG[b][1] + gg[2] * kG[b][2];
          dst[(a * 6 + b) * u.xi_stride + offset] = static_cast<float>(v);
        }
      }
    }
  }
  return u;
}

size_t winograd_scratch_bytes(int64_t ic, int64_t oc, int64_t out_h, int64_t out_w,
                              size_t threads, WinogradForm form) {
  if (form == WinogradForm::kF2TileRows) return winograd_f2_scratch_bytes(ic, oc, out_h, out_w);
  const Tiles t(out_h, out_w);
  const int64_t threads_n = threads < 1 ? 1 : static_cast<int64_t>(threads);
  const int64_t budget = static_cast<int64_t>(kBandBytes / sizeof(float));
  int64_t rows = band_rows_for(budget, ic, oc, t, threads_n, form);
  if (rows < 1) rows = 1;
  return static_cast<size_t>(band_floats(ic, oc, t, threads_n, rows, form)) * sizeof(float);
}

bool winograd_conv(KernelContext& ctx, const WinogradIo& io, const WinogradWeights& u,
                   void* scratch, size_t scratch_bytes) {
  if (u.form == WinogradForm::kF2TileRows) return winograd_f2_conv(ctx, io, u, scratch, scratch_bytes);
  const Tiles tiles(io.out_h, io.out_w);
  const int64_t ic = u.ic, oc = u.oc;
  const WinogradForm form = u.form;
  const int64_t threads = static_cast<int64_t>(ctx.threads() < 1 ? 1 : ctx.threads());
  const int64_t have = scratch != nullptr ? static_cast<int64_t>(scratch_bytes / sizeof(float)) : 0;
  const int64_t band_rows = band_rows_for(have, ic, oc, tiles, threads, form);
  if (band_rows < 1) return false;
  float* base = static_cast<float*>(scratch);

  InputBandFn in_fn = input_band_base;
  OutputBandFn out_fn = io.bias != nullptr ? output_band_base<true> : output_band_base<false>;
#if EMBER_WINOGRAD_AVX2
  if (cpu_has_avx2_fma()) {
    in_fn = input_band_avx2;
    out_fn = io.bias != nullptr ? output_band_avx2<true> : output_band_avx2<false>;
  }
#endif
  for (int64_t b = 0; b < io.batch; ++b) {
    for (int64_t ty0 = 0; ty0 < tiles.y; ty0 += band_rows) {
      const int64_t rows = ty0 + band_rows < tiles.y ? band_rows : tiles.y - ty0;
      const int64_t cols = rows * (tiles.x + 1);
      const VPanels layout = v_panels(cols, ic, form);
      const Band band{b, ty0, rows, tiles.x + 1, cols, layout,
                      packed_panels_size(cols, ic, layout.tile, layout.block)};
      // threads × thread_floats(cols), then V, then M (then each thread's Mᵀ).
      float* bufs = base;
      float* v = bufs + threads * thread_floats(band.cols);
      float* m = v + kXi * band.v_stride;
      parallel_slices(ctx, ic, [&](int64_t c0, int64_t c1, size_t task) {
        in_fn(io, ic, band, c0, c1, v, bufs + task * thread_floats(band.cols));
      });
      if (form == WinogradForm::kTileRows) {
        float* mt_base = m + kXi * oc * cols;
        parallel_slices(ctx, kXi, [&](int64_t x0, int64_t x1, size_t task) {
          float* mt = mt_base + task * cols * oc;
          for (int64_t xi = x0; xi < x1; ++xi) {
            const WeightTransformSource fallback{u.weight, u.s_oc, u.s_ic, u.s_h, u.s_w,
                                                 static_cast<int>(xi)};
            const float* vx = v + xi * band.v_stride;
            gemm<float>(cols, oc, ic,
                        PackedA<float, PackedPanelsSource<float>>{{vx, cols, ic, layout.tile}, v_source(vx, layout)},
                        PackedB<float, WeightTransformSource>{
                            {u.packed + xi * u.xi_stride, oc, ic, u.tile}, fallback},
                        1.0f, 0.0f, mt, oc, 1);
            transpose_f32(mt, oc, m + xi * oc * cols, cols, cols, oc);
          }
        });
      } else {
        parallel_range(ctx, kXi, 1, 1, [&](int64_t x0, int64_t x1) {
          for (int64_t xi = x0; xi < x1; ++xi) {
            const PackedPanels<float> panels{u.packed + xi * u.xi_stride, oc, ic, u.tile};
            const WeightTransformSource fallback{u.weight, u.s_oc, u.s_ic, u.s_h, u.s_w,
                                                 static_cast<int>(xi)};
            const float* vx = v + xi * band.v_stride;
            const PackedPanels<float> v_panels{vx, band.cols, ic, layout.tile};
            gemm<float>(oc, band.cols, ic,
                        PackedA<float, WeightTransformSource>{panels, fallback},
                        PackedB<float, PackedPanelsSource<float>>{v_panels, v_source(vx, layout)}, 1.0f, 0.0f,
                        m + xi * oc * band.cols, band.cols, 1);
          }
        });
      }
      parallel_slices(ctx, oc, [&](int64_t o0, int64_t o1, size_t task) {
        out_fn(io, oc, band, o0, o1, m, bufs + task * thread_floats(band.cols));
      });
    }
  }
  return true;
}

}  // namespace ember::kernels::portable
