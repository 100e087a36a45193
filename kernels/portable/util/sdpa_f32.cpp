// sdpa_f32 (see sdpa_f32.h). A tile is up to kSdpaTileRows query rows of one
// cache head: the heads that share it at one or more positions, so each key
// and value row read from the cache serves all of them (grouped-query
// attention without repeating the cache). Keys are visited in blocks of
// kKeys up to the tile's last visible position; per block the scores go into
// a small buffer, then the online softmax: the running maximum m and sum l
// of each row are updated, the accumulated output rescaled by exp(m_old -
// m_new), and the block's probabilities times the value rows added. The
// two products are written with vectors of the build's width (scores: one
// accumulator per row, each key row loaded once for the tile; values: four
// output vectors held over the block); the softmax loops are unit-stride
// and vectorised by the compiler. Three builds (isa_target.h): SSE2 with
// 4-float vectors, AVX2+FMA with 8, AVX-512 with 16; the sums run in a
// different order in each, so they agree to rounding, not bit for bit.
#include "kernels/portable/util/sdpa_f32.h"

#include <cstring>
#include <limits>

#include "kernels/portable/util/fast_math.h"
#include "kernels/portable/util/isa_target.h"

namespace ember::kernels::portable {
namespace {

constexpr int kLanes = 16;     // independent maxima and sums in the softmax loops
constexpr int64_t kKeys = 64;  // key positions per block
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// max that keeps m when v is NaN (vectorises as maxps; softmax_f32.cpp).
[[gnu::always_inline]] inline float max_skip_nan(float m, float v) { return m < v ? v : m; }

// Vectors of W floats (GCC/Clang vector extensions): each build picks the
// width of its registers (4: SSE2, 8: AVX2, 16: AVX-512), so one loop nest
// compiles to each ISA's instructions.
template <int W>
struct Vec {
  typedef float type __attribute__((vector_size(W * sizeof(float))));
};

// (Vectors pass by reference: by value, a wider vector than the baseline
// build's would change the calling convention.)
template <typename V>
[[gnu::always_inline]] inline void load(V& v, const float* p) {
  std::memcpy(&v, p, sizeof(v));
}

template <typename V>
[[gnu::always_inline]] inline void store(float* p, const V& v) {
  std::memcpy(p, &v, sizeof(v));
}

// Sum of the W lanes, adding halves (a fixed order for a given W).
template <int W>
[[gnu::always_inline]] inline float lane_sum(const typename Vec<W>::type& v) {
  if constexpr (W == 16) {
    const typename Vec<8>::type h = __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7) +
                                    __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);
    return lane_sum<8>(h);
  } else if constexpr (W == 8) {
    const typename Vec<4>::type h =
        __builtin_shufflevector(v, v, 0, 1, 2, 3) + __builtin_shufflevector(v, v, 4, 5, 6, 7);
    return lane_sum<4>(h);
  } else {
    static_assert(W == 4, "vectors of 4, 8 or 16 floats");
    return (v[0] + v[2]) + (v[1] + v[3]);
  }
}

// Scores of R query rows against keys [0, nb) of the block at kb:
// s[r][jj] = qs[r] · k[jj]. Each key row is loaded once for the R rows; one
// accumulator vector per row, summed across its lanes at the end.
template <int R, int W>
[[gnu::always_inline]] inline void block_scores(const float (*qs)[kSdpaMaxHeadDim],
                                                const float* kb, int64_t d_len, int64_t nb,
                                                float (*s)[kKeys]) {
  using V = typename Vec<W>::type;
  const int64_t d_vec = d_len / W * W;
  for (int64_t jj = 0; jj < nb; ++jj) {
    const float* kj = kb + jj * d_len;
    V acc[R];
    for (int r = 0; r < R; ++r) acc[r] = V{};
    for (int64_t d = 0; d < d_vec; d += W) {
      V kv, qv;
      load(kv, kj + d);
      for (int r = 0; r < R; ++r) {
        load(qv, qs[r] + d);
        acc[r] += qv * kv;
      }
    }
    for (int r = 0; r < R; ++r) {
      float t = lane_sum<W>(acc[r]);
      for (int64_t d = d_vec; d < d_len; ++d) t += qs[r][d] * kj[d];
      s[r][jj] = t;
    }
  }
}

// acc[0, d_len) += sum over jj < nb of p[jj] · v[jj]: the output of one row,
// four vectors of it at a time kept in registers over the whole block.
template <int W>
[[gnu::always_inline]] inline void block_values(const float* p, const float* vb, int64_t d_len,
                                                int64_t nb, float* acc) {
  using V = typename Vec<W>::type;
  int64_t d = 0;
  for (; d + 4 * W <= d_len; d += 4 * W) {
    V a0, a1, a2, a3, x;
    load(a0, acc + d);
    load(a1, acc + d + W);
    load(a2, acc + d + 2 * W);
    load(a3, acc + d + 3 * W);
    for (int64_t jj = 0; jj < nb; ++jj) {
      const V w = V{} + p[jj];
      const float* vj = vb + jj * d_len + d;
      load(x, vj);
      a0 += w * x;
      load(x, vj + W);
      a1 += w * x;
      load(x, vj + 2 * W);
      a2 += w * x;
      load(x, vj + 3 * W);
      a3 += w * x;
    }
    store(acc + d, a0);
    store(acc + d + W, a1);
    store(acc + d + 2 * W, a2);
    store(acc + d + 3 * W, a3);
  }
  for (; d + W <= d_len; d += W) {
    V a, x;
    load(a, acc + d);
    for (int64_t jj = 0; jj < nb; ++jj) {
      load(x, vb + jj * d_len + d);
      a += (V{} + p[jj]) * x;
    }
    store(acc + d, a);
  }
  for (; d < d_len; ++d) {
    float a = acc[d];
    for (int64_t jj = 0; jj < nb; ++jj) a += p[jj] * vb[jj * d_len + d];
    acc[d] = a;
  }
}

// One tile: rows t0 .. t0 + nrows - 1 (nrows <= R) of cache head g in batch b.
// Row t is query head g·group + t % group at position index t / group.
template <int R, int W>
[[gnu::always_inline]] inline void tile(const SdpaF32Problem& p, int64_t b, int64_t g, int64_t t0,
                                        int64_t nrows) {
  const int64_t group = p.heads / p.kv_heads;
  const int64_t d_len = p.head_dim;
  const int64_t end = p.keys();
  alignas(64) float qs[R][kSdpaMaxHeadDim];
  alignas(64) float acc[R][kSdpaMaxHeadDim];
  alignas(64) float s[R][kKeys];
  float m[R], l[R];
  int64_t limit[R];
  float* orow[R];
  const char* mrow[R];
  int64_t tile_limit = 0;
  for (int r = 0; r < R; ++r) {
    m[r] = kNegInf;
    l[r] = 0.0f;
    orow[r] = nullptr;
    mrow[r] = nullptr;
    limit[r] = 0;
    for (int64_t d = 0; d < d_len; ++d) acc[r][d] = 0.0f;
    if (r >= nrows) {
      for (int64_t d = 0; d < d_len; ++d) qs[r][d] = 0.0f;  // padding: scores unused
      continue;
    }
    const int64_t t = t0 + r;
    const int64_t i = t / group;
    const int64_t h = g * group + t % group;
    const int64_t row = ((b * p.heads + h) * p.seq + i) * d_len;
    const float* qr = p.q + row;
    for (int64_t d = 0; d < d_len; ++d) qs[r][d] = qr[d] * p.scale;
    orow[r] = p.out + row;
    limit[r] = p.causal && p.start + i + 1 < end ? p.start + i + 1 : end;
    if (limit[r] > tile_limit) tile_limit = limit[r];
    if (p.mask != nullptr) {
      const int64_t off = b * p.mask_strides[0] + h * p.mask_strides[1] + i * p.mask_strides[2];
      mrow[r] = static_cast<const char*>(p.mask) + off * (p.mask_is_bool ? 1 : 4);
    }
  }
  const int64_t head = (b * p.kv_heads + g) * p.cache_len * d_len;
  const float* kh = p.k + head;
  const float* vh = p.v + head;
  for (int64_t j0 = 0; j0 < tile_limit; j0 += kKeys) {
    const int64_t nb = tile_limit - j0 < kKeys ? tile_limit - j0 : kKeys;
    block_scores<R, W>(qs, kh + j0 * d_len, d_len, nb, s);
    for (int64_t r = 0; r < nrows; ++r) {
      float* sr = s[r];
      if (mrow[r] != nullptr) {
        if (p.mask_is_bool) {
          const char* mb = mrow[r] + j0;
          for (int64_t jj = 0; jj < nb; ++jj) sr[jj] = mb[jj] != 0 ? sr[jj] : kNegInf;
        } else {
          const float* mf = reinterpret_cast<const float*>(mrow[r]) + j0;
          for (int64_t jj = 0; jj < nb; ++jj) sr[jj] += mf[jj];
        }
      }
      // Positions past the row's last visible one, and the block's padding.
      const int64_t visible = limit[r] - j0 < nb ? (limit[r] - j0 > 0 ? limit[r] - j0 : 0) : nb;
      for (int64_t jj = visible; jj < kKeys; ++jj) sr[jj] = kNegInf;
      float lanes[kLanes];
      for (int k = 0; k < kLanes; ++k) lanes[k] = kNegInf;
      for (int64_t jj = 0; jj < kKeys; jj += kLanes) {
        for (int k = 0; k < kLanes; ++k) lanes[k] = max_skip_nan(lanes[k], sr[jj + k]);
      }
      float mx = m[r];
      for (int k = 0; k < kLanes; ++k) mx = max_skip_nan(mx, lanes[k]);
      if (mx == kNegInf) {
        // Nothing visible yet in this row: it adds nothing.
        for (int64_t jj = 0; jj < kKeys; ++jj) sr[jj] = 0.0f;
        continue;
      }
      for (int64_t jj = 0; jj < kKeys; ++jj) sr[jj] = fast_exp_or_zero(sr[jj] - mx);
      for (int k = 0; k < kLanes; ++k) lanes[k] = 0.0f;
      for (int64_t jj = 0; jj < kKeys; jj += kLanes) {
        for (int k = 0; k < kLanes; ++k) lanes[k] += sr[jj + k];
      }
      for (int w = kLanes / 2; w > 0; w /= 2) {
        for (int k = 0; k < w; ++k) lanes[k] += lanes[k + w];
      }
      const float corr = fast_exp_or_zero(m[r] - mx);  // 0 for the first visible block
      l[r] = l[r] * corr + lanes[0];
      m[r] = mx;
      if (corr != 1.0f) {
        for (int64_t d = 0; d < d_len; ++d) acc[r][d] *= corr;
      }
    }
    for (int64_t r = 0; r < nrows; ++r) block_values<W>(s[r], vh + j0 * d_len, d_len, nb, acc[r]);
  }
  for (int64_t r = 0; r < nrows; ++r) {
    // l = 0: no visible position (all masked); eager's CPU SDPA gives zeros.
    const float inv = l[r] == 0.0f ? 0.0f : 1.0f / l[r];
    for (int64_t d = 0; d < d_len; ++d) orow[r][d] = acc[r][d] * inv;
  }
}

template <int W>
[[gnu::always_inline]] inline void units(const SdpaF32Problem& p, int64_t begin, int64_t end) {
  const int64_t tiles = p.tiles_per_kv_head();
  const int64_t rows = (p.heads / p.kv_heads) * p.seq;
  for (int64_t u = begin; u < end; ++u) {
    const int64_t t = u % tiles;
    const int64_t g = (u / tiles) % p.kv_heads;
    const int64_t b = u / tiles / p.kv_heads;
    const int64_t t0 = t * kSdpaTileRows;
    const int64_t n = rows - t0 < kSdpaTileRows ? rows - t0 : kSdpaTileRows;
    // The narrowest tile that holds the rows: no work on padding for decode
    // without grouping (one row per head).
    if (n <= 1) {
      tile<1, W>(p, b, g, t0, n);
    } else if (n <= 2) {
      tile<2, W>(p, b, g, t0, n);
    } else if (n <= 4) {
      tile<4, W>(p, b, g, t0, n);
    } else {
      tile<kSdpaTileRows, W>(p, b, g, t0, n);
    }
  }
}

static_assert(kSdpaTileRows == 8, "units() picks tiles of 1, 2, 4 or 8 rows");
static_assert(kKeys % kLanes == 0, "blocks are whole lanes");

#if EMBER_ISA_X86
EMBER_TARGET_AVX2_FMA void sdpa_f32_avx2(const SdpaF32Problem& p, int64_t begin, int64_t end) {
  units<8>(p, begin, end);
}
EMBER_TARGET_AVX512 void sdpa_f32_avx512(const SdpaF32Problem& p, int64_t begin, int64_t end) {
  units<16>(p, begin, end);
}
#endif

void sdpa_f32_baseline(const SdpaF32Problem& p, int64_t begin, int64_t end) {
  units<4>(p, begin, end);
}

}  // namespace

void sdpa_f32_at(Isa isa, const SdpaF32Problem& p, int64_t begin, int64_t end) {
#if EMBER_ISA_X86
  if (isa >= Isa::kAvx512) {
    sdpa_f32_avx512(p, begin, end);
    return;
  }
  if (isa >= Isa::kAvx2) {
    sdpa_f32_avx2(p, begin, end);
    return;
  }
#else
  (void)isa;
#endif
  sdpa_f32_baseline(p, begin, end);
}

void sdpa_f32(const SdpaF32Problem& p, int64_t begin, int64_t end) {
  sdpa_f32_at(cpu_isa(), p, begin, end);
}

}  // namespace ember::kernels::portable
