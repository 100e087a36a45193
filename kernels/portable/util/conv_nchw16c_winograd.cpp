// Winograd F(4×4, 3×3) on NCHW16c (conv_nchw16c_winograd.h).
//
// The transforms are adds and multiplies by constants on 16-channel vectors
// (GCC's vector extension), written once and compiled three times: for the
// baseline (SSE2: four xmm a vector), AVX2 and AVX-512 (function targets
// that allow FMA in both, so those two contract alike and give the same
// bits). The 36 products run on the direct convolution's row kernels.
#include "kernels/portable/util/conv_nchw16c_winograd.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "kernels/portable/util/conv_winograd.h"
#include "kernels/portable/util/isa_target.h"
#include "kernels/portable/util/parallel.h"

// The 64-byte vector helpers are always inlined, never called across an ABI.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace ember::kernels::portable {
namespace {

constexpr int64_t kB = kNchw16cBlock;
constexpr int64_t kXi = 36;                      // 6×6 transformed values per tile
constexpr int64_t kMinPositions = 28 * 28;       // nchw16c_winograd_applies
// V and M of a band: at least 1 MiB (they stay in L2 between the transforms
// and the products), up to the transformed weight's size when that is larger
// (each band reads all of U again), at most 4 MiB. Measured on ResNet-50:
// 64 channels at 56×56 (U 0.6 MiB) 0.83 → 0.69 ms with 1 MiB bands against
// one band of 3.6 MiB; 128 at 28×28 (U 2.3 MiB) 0.62 ms with one band of
// 1.8 MiB against 0.72 with two.
constexpr int64_t kMinBandBytes = int64_t{1} << 20;
constexpr int64_t kMaxBandBytes = int64_t{4} << 20;

constexpr auto& kG = kWinogradF43G;

using V16 = float __attribute__((vector_size(kB * sizeof(float))));

[[gnu::always_inline]] inline V16 load(const float* p) {
  V16 v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
[[gnu::always_inline]] inline void store(float* p, V16 v) { std::memcpy(p, &v, sizeof(v)); }

// o = Bᵀ d (six values to six), the 1-D input transform.
[[gnu::always_inline]] inline void bt(const V16* d, int64_t ds, V16* o, int64_t os) {
  const V16 d0 = d[0], d1 = d[ds], d2 = d[2 * ds], d3 = d[3 * ds], d4 = d[4 * ds],
            d5 = d[5 * ds];
  o[0] = (4.0f * d0 - 5.0f * d2) + d4;
  o[os] = -4.0f * (d1 + d2) + (d3 + d4);
  o[2 * os] = 4.0f * (d1 - d2) + (d4 - d3);
  o[3 * os] = 2.0f * (d3 - d1) + (d4 - d2);
  o[4 * os] = 2.0f * (d1 - d3) + (d4 - d2);
  o[5 * os] = (4.0f * d1 - 5.0f * d3) + d5;
}

// y = Aᵀ m (six values to four), the 1-D output transform.
[[gnu::always_inline]] inline void at(const V16* m, int64_t ms, V16* y, int64_t ys) {
  const V16 s12 = m[ms] + m[2 * ms], d12 = m[ms] - m[2 * ms];
  const V16 s34 = m[3 * ms] + m[4 * ms], d34 = m[3 * ms] - m[4 * ms];
  y[0] = (m[0] + s12) + s34;
  y[ys] = d12 + 2.0f * d34;
  y[2 * ys] = s12 + 4.0f * s34;
  y[3 * ys] = (d12 + 8.0f * d34) + m[5 * ms];
}

struct Geometry {
  int64_t tx, ty;      // tiles across and down
  int64_t hp, wp;      // the zero-bordered input: 4·ty + 2 rows, 4·tx + 2 columns
  int64_t band_rows;   // tile rows per band
  int64_t cinb, coutb;
};

Geometry geometry(const Nchw16cConv& g) {
  Geometry q;
  q.tx = (g.out_w + 3) / 4;
  q.ty = (g.out_h + 3) / 4;
  q.hp = 4 * q.ty + 2;
  q.wp = 4 * q.tx + 2;
  q.cinb = g.cin_blocks();
  q.coutb = g.cout_blocks();
  const int64_t per_row = kXi * (q.cinb + q.coutb) * kB * q.tx;
  const int64_t u_bytes = kXi * q.cinb * q.coutb * kB * kB * static_cast<int64_t>(sizeof(float));
  const int64_t band_bytes = std::clamp(u_bytes, kMinBandBytes, kMaxBandBytes);
  q.band_rows = std::clamp<int64_t>(band_bytes / (per_row * static_cast<int64_t>(sizeof(float))),
                                    1, q.ty);
  return q;
}

// The band's 36 products' geometry: a pointwise layer over `tiles` positions.
Nchw16cConv product(const Nchw16cConv& g, int64_t tiles) {
  Nchw16cConv p;
  p.cin = g.cin;
  p.cout = g.cout;
  p.in_h = p.out_h = 1;
  p.in_w = p.out_w = tiles;
  return p;
}

// One tile's input transform for one block: the 6×6 vectors at `x` (the
// zero-bordered plane, row stride wp·16) into V[ξ] at `v` (ξ stride vs).
[[gnu::always_inline]] inline void input_tile(const float* x, int64_t wp, float* v, int64_t vs) {
  V16 d[36], t[36], o[36];
  for (int r = 0; r < 6; ++r) {
    for (int c = 0; c < 6; ++c) d[r * 6 + c] = load(x + (r * wp + c) * kB);
  }
  for (int c = 0; c < 6; ++c) bt(d + c, 6, t + c, 6);   // columns: t = Bᵀ d
  for (int r = 0; r < 6; ++r) bt(t + r * 6, 1, o + r * 6, 1);  // rows: o = t B
  for (int xi = 0; xi < 36; ++xi) store(v + xi * vs, o[xi]);
}

struct OutTile {
  float* out;             // the tile's first output of the block
  const float* residual;  // the same for the residual (null: none)
  int64_t rows, cols;     // outputs of the tile inside the plane (≤ 4)
  int64_t row_stride;     // floats between output rows (out_w·16)
  const float* bias;      // the block's 16
  int lanes;              // channels of the block that exist
  bool clamp;
  float lo, hi;
};

// One tile's output transform for one block: M[ξ] at `m` (ξ stride ms) into
// its 4×4 outputs, then + bias, + residual, clamp; padded lanes zero.
[[gnu::always_inline]] inline void output_tile(const float* m, int64_t ms, const OutTile& o) {
  V16 mm[36], t[24], y[16];
  for (int xi = 0; xi < 36; ++xi) mm[xi] = load(m + xi * ms);
  for (int c = 0; c < 6; ++c) at(mm + c, 6, t + c, 6);   // columns: t = Aᵀ m (4 × 6)
  for (int r = 0; r < 4; ++r) at(t + r * 6, 1, y + r * 4, 1);  // rows: y = t A (4 × 4)
  const V16 bias = load(o.bias);
  for (int64_t i = 0; i < o.rows; ++i) {
    for (int64_t j = 0; j < o.cols; ++j) {
      const int64_t off = i * o.row_stride + j * kB;
      V16 v = y[i * 4 + j] + bias;
      if (o.residual != nullptr) v += load(o.residual + off);
      float lanes[kB];
      store(lanes, v);
      for (int l = 0; l < kB; ++l) {
        float e = lanes[l];
        if (o.clamp) {  // NaN fails both tests and passes through
          e = e < o.lo ? o.lo : e;
          e = e > o.hi ? o.hi : e;
        }
        lanes[l] = l < o.lanes ? e : 0.0f;
      }
      std::memcpy(o.out + off, lanes, sizeof(lanes));
    }
  }
}

// The transforms of a band: units are (tile, block) pairs, tile-major.
struct BandArgs {
  const Nchw16cConv* g;
  const Geometry* q;
  const float* x;         // the zero-bordered input
  float* v;               // V[ξ][cb][t][16]
  float* m;               // M[ξ][cob][t][16]
  int64_t ty0, tiles;     // the band's first tile row and its tiles
  const Nchw16cEpilogue* ep;
  float* out;
};

[[gnu::always_inline]] inline void input_units_body(const BandArgs& a, int64_t first,
                                                    int64_t last) {
  const Geometry& q = *a.q;
  const int64_t vs = q.cinb * a.tiles * kB;  // floats between V[ξ] and V[ξ+1]
  for (int64_t u = first; u < last; ++u) {
    const int64_t t = u / q.cinb, cb = u % q.cinb;
    const int64_t ty = a.ty0 + t / q.tx, tx = t % q.tx;
    const float* x = a.x + ((cb * q.hp + 4 * ty) * q.wp + 4 * tx) * kB;
    input_tile(x, q.wp, a.v + (cb * a.tiles + t) * kB, vs);
  }
}

[[gnu::always_inline]] inline void output_units_body(const BandArgs& a, int64_t first,
                                                     int64_t last) {
  const Nchw16cConv& g = *a.g;
  const Geometry& q = *a.q;
  const int64_t ms = q.coutb * a.tiles * kB;
  const int64_t out_plane = g.out_h * g.out_w * kB;
  for (int64_t u = first; u < last; ++u) {
    const int64_t t = u / q.coutb, cob = u % q.coutb;
    const int64_t ty = a.ty0 + t / q.tx, tx = t % q.tx;
    const int64_t at = cob * out_plane + (4 * ty * g.out_w + 4 * tx) * kB;
    OutTile o;
    o.out = a.out + at;
    o.residual = a.ep->residual != nullptr ? a.ep->residual + at : nullptr;
    o.rows = std::min<int64_t>(4, g.out_h - 4 * ty);
    o.cols = std::min<int64_t>(4, g.out_w - 4 * tx);
    o.row_stride = g.out_w * kB;
    o.bias = a.ep->bias + cob * kB;
    o.lanes = static_cast<int>(std::min<int64_t>(kB, g.cout - cob * kB));
    o.clamp = a.ep->clamp;
    o.lo = a.ep->lo;
    o.hi = a.ep->hi;
    output_tile(a.m + (cob * a.tiles + t) * kB, ms, o);
  }
}

void input_units_base(const BandArgs& a, int64_t f, int64_t l) { input_units_body(a, f, l); }
void output_units_base(const BandArgs& a, int64_t f, int64_t l) { output_units_body(a, f, l); }
#if EMBER_ISA_X86
EMBER_TARGET_AVX2_FMA void input_units_avx2(const BandArgs& a, int64_t f, int64_t l) {
  input_units_body(a, f, l);
}
EMBER_TARGET_AVX2_FMA void output_units_avx2(const BandArgs& a, int64_t f, int64_t l) {
  output_units_body(a, f, l);
}
EMBER_TARGET_AVX512 void input_units_avx512(const BandArgs& a, int64_t f, int64_t l) {
  input_units_body(a, f, l);
}
EMBER_TARGET_AVX512 void output_units_avx512(const BandArgs& a, int64_t f, int64_t l) {
  output_units_body(a, f, l);
}
#endif

using UnitsFn = void (*)(const BandArgs&, int64_t, int64_t);

void transforms_for(Nchw16cKernel kernel, UnitsFn* in, UnitsFn* out) {
  *in = input_units_base;
  *out = output_units_base;
#if EMBER_ISA_X86
  if (kernel == Nchw16cKernel::kAvx512) {
    *in = input_units_avx512;
    *out = output_units_avx512;
  } else if (kernel == Nchw16cKernel::kAvx2) {
    *in = input_units_avx2;
    *out = output_units_avx2;
  }
#else
  (void)kernel;
#endif
}

bool winograd_env_enabled() {
  static const bool enabled = [] {
    const char* v = std::getenv("EMBER_WINOGRAD");
    return v == nullptr || std::strcmp(v, "0") != 0;
  }();
  return enabled;
}

}  // namespace

bool nchw16c_winograd_applies(const Nchw16cConv& g) {
  return g.kh == 3 && g.kw == 3 && g.stride_h == 1 && g.stride_w == 1 && !g.plain_input &&
         g.out_h * g.out_w >= kMinPositions && winograd_env_enabled();
}

int64_t nchw16c_winograd_weight_floats(const Nchw16cConv& g) {
  return kXi * nchw16c_packed_weight_floats(product(g, 1));
}

void nchw16c_winograd_pack_weight(const Nchw16cConv& g, const float* oihw, float* dst) {
  const Nchw16cConv p = product(g, 1);
  const int64_t per_xi = nchw16c_packed_weight_floats(p);
  const int64_t cinp = g.cin_blocks() * kB, cob = g.cout_blocks();
  for (int64_t xi = 0; xi < kXi; ++xi) {
    const int a = static_cast<int>(xi / 6), b = static_cast<int>(xi % 6);
    float* d = dst + xi * per_xi;
    // nchw16c_pack_weight's order for a 1×1 layer: per group, [cin][group width].
    for (int64_t b0 = 0; b0 < cob; b0 += kNchw16cGroupBlocks) {
      const int64_t width = std::min<int64_t>(kNchw16cGroupBlocks, cob - b0) * kB;
      for (int64_t ci = 0; ci < cinp; ++ci) {
        for (int64_t j = 0; j < width; ++j) {
          const int64_t co = b0 * kB + j;
          float u = 0.0f;
          if (co < g.cout && ci < g.cin) {
            // conv_winograd.cpp's sums, in its order.
            double gg[3];
            winograd_g_row(kG, a, oihw + (co * g.cin + ci) * 9, 3, 1, gg);
            u = static_cast<float>(gg[0] * kG[b][0] + gg[1] * kG[b][1] + gg[2] * kG[b][2]);
          }
          *d++ = u;
        }
      }
    }
  }
}

int64_t nchw16c_winograd_scratch_floats(const Nchw16cConv& g) {
  const Geometry q = geometry(g);
  const int64_t tiles = q.band_rows * q.tx;
  return q.cinb * q.hp * q.wp * kB + kXi * (q.cinb + q.coutb) * tiles * kB;
}

void nchw16c_winograd(KernelContext& ctx, const Nchw16cConv& g, Nchw16cKernel kernel,
                      const float* in, const float* u, const Nchw16cEpilogue& ep,
                      const float* zeros, float* out, float* scratch) {
  const Geometry q = geometry(g);
  // The input with its zero border, the plane grown to whole tiles.
  float* x = scratch;
  nchw16c_pad_input(g, in, x, q.hp, q.wp);
  float* v = x + q.cinb * q.hp * q.wp * kB;
  UnitsFn input_units, output_units;
  transforms_for(kernel, &input_units, &output_units);
  Nchw16cEpilogue none;
  none.bias = zeros;
  const int64_t u_floats = nchw16c_packed_weight_floats(product(g, 1));
  for (int64_t ty0 = 0; ty0 < q.ty; ty0 += q.band_rows) {
    const int64_t tiles = std::min(q.band_rows, q.ty - ty0) * q.tx;
    float* m = v + kXi * q.cinb * tiles * kB;
    const BandArgs a{&g, &q, x, v, m, ty0, tiles, &ep, out};
    parallel_range(ctx, tiles * q.cinb, q.cinb, 1,
                   [&](int64_t first, int64_t last) { input_units(a, first, last); });
    // M[ξ] = V[ξ]·U[ξ]: 36 pointwise layers over the band's tiles.
    const Nchw16cConv p = product(g, tiles);
    const int64_t units = nchw16c_units(p);
    parallel_range(ctx, kXi * units, 1, 1, [&](int64_t first, int64_t last) {
      for (int64_t w = first; w < last; ++w) {
        const int64_t xi = w / units, k = w % units;
        nchw16c_conv_units(p, kernel, v + xi * q.cinb * tiles * kB, u + xi * u_floats, none,
                           m + xi * q.coutb * tiles * kB, k, k + 1);
      }
    });
    parallel_range(ctx, tiles * q.coutb, q.coutb, 1,
                   [&](int64_t first, int64_t last) { output_units(a, first, last); });
  }
}

}  // namespace ember::kernels::portable
