// sdpa_f32 (see sdpa_f32.h). A tile is up to kSdpaTileRows query rows of one
// cache head: the heads that share it at one or more positions, so each key
// and value row read from the cache serves all of them (grouped-query
// attention without repeating the cache). Keys are visited in blocks of
// kKeys up to the tile's last visible position; per block the scores go into
// a small buffer, then the online softmax: the running maximum m and sum l
// of each row are updated, the accumulated output rescaled by exp(m_old -
// m_new), and the block's probabilities times the value rows added. Every
// inner loop is unit-stride over the head dim or the block, and is
// vectorised by the compiler in the AVX2 and AVX-512 builds (isa_target.h).
#include "kernels/portable/util/sdpa_f32.h"

#include <limits>

#include "kernels/portable/util/fast_math.h"
#include "kernels/portable/util/isa_target.h"

namespace ember::kernels::portable {
namespace {

constexpr int kLanes = 16;     // independent partial sums: one zmm, two ymm
constexpr int64_t kKeys = 64;  // key positions per block
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// max that keeps m when v is NaN (vectorises as maxps; softmax_f32.cpp).
[[gnu::always_inline]] inline float max_skip_nan(float m, float v) { return m < v ? v : m; }

// Sum of kLanes partial sums, as a fixed tree (the same order in every build).
[[gnu::always_inline]] inline float lane_sum(float* part) {
  for (int w = kLanes / 2; w > 0; w /= 2) {
    for (int k = 0; k < w; ++k) part[k] += part[k + w];
  }
  return part[0];
}

// Scores of R query rows against keys [j0, j0 + nb): s[r][jj] = qs[r] · k[j0 + jj].
template <int R>
[[gnu::always_inline]] inline void block_scores(const float (*qs)[kSdpaMaxHeadDim],
                                                const float* kb, int64_t d_len, int64_t nb,
                                                float (*s)[kKeys]) {
  for (int64_t jj = 0; jj < nb; ++jj) {
    const float* kj = kb + jj * d_len;
    float part[R][kLanes] = {};
    int64_t d = 0;
    for (; d + kLanes <= d_len; d += kLanes) {
      for (int r = 0; r < R; ++r) {
        for (int k = 0; k < kLanes; ++k) part[r][k] += qs[r][d + k] * kj[d + k];
      }
    }
    for (; d < d_len; ++d) {
      for (int r = 0; r < R; ++r) part[r][0] += qs[r][d] * kj[d];
    }
    for (int r = 0; r < R; ++r) s[r][jj] = lane_sum(part[r]);
  }
}

// One tile: rows t0 .. t0 + nrows - 1 (nrows <= R) of cache head g in batch b.
// Row t is query head g·group + t % group at position index t / group.
template <int R>
[[gnu::always_inline]] inline void tile(const SdpaF32Problem& p, int64_t b, int64_t g, int64_t t0,
                                        int64_t nrows) {
  const int64_t group = p.heads / p.kv_heads;
  const int64_t d_len = p.head_dim;
  const int64_t end = p.start + p.seq;
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
    limit[r] = p.causal ? p.start + i + 1 : end;
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
    block_scores<R>(qs, kh + j0 * d_len, d_len, nb, s);
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
      for (int64_t jj = 0; jj < kKeys; ++jj) sr[jj] = fast_expf(sr[jj] - mx);
      for (int k = 0; k < kLanes; ++k) lanes[k] = 0.0f;
      for (int64_t jj = 0; jj < kKeys; jj += kLanes) {
        for (int k = 0; k < kLanes; ++k) lanes[k] += sr[jj + k];
      }
      const float corr = fast_expf(m[r] - mx);  // 0 for the first visible block
      l[r] = l[r] * corr + lane_sum(lanes);
      m[r] = mx;
      if (corr != 1.0f) {
        for (int64_t d = 0; d < d_len; ++d) acc[r][d] *= corr;
      }
    }
    const float* vb = vh + j0 * d_len;
    for (int64_t jj = 0; jj < nb; ++jj) {
      const float* vj = vb + jj * d_len;
      for (int64_t r = 0; r < nrows; ++r) {
        const float w = s[r][jj];
        float* a = acc[r];
        for (int64_t d = 0; d < d_len; ++d) a[d] += w * vj[d];
      }
    }
  }
  for (int64_t r = 0; r < nrows; ++r) {
    // l = 0: no visible position (all masked); eager's CPU SDPA gives zeros.
    const float inv = l[r] == 0.0f ? 0.0f : 1.0f / l[r];
    for (int64_t d = 0; d < d_len; ++d) orow[r][d] = acc[r][d] * inv;
  }
}

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
      tile<1>(p, b, g, t0, n);
    } else if (n <= 2) {
      tile<2>(p, b, g, t0, n);
    } else if (n <= 4) {
      tile<4>(p, b, g, t0, n);
    } else {
      tile<kSdpaTileRows>(p, b, g, t0, n);
    }
  }
}

static_assert(kSdpaTileRows == 8, "units() picks tiles of 1, 2, 4 or 8 rows");
static_assert(kKeys % kLanes == 0, "blocks are whole lanes");

#if EMBER_ISA_X86
EMBER_TARGET_AVX2_FMA void sdpa_f32_avx2(const SdpaF32Problem& p, int64_t begin, int64_t end) {
  units(p, begin, end);
}
EMBER_TARGET_AVX512 void sdpa_f32_avx512(const SdpaF32Problem& p, int64_t begin, int64_t end) {
  units(p, begin, end);
}
#endif

void sdpa_f32_baseline(const SdpaF32Problem& p, int64_t begin, int64_t end) {
  units(p, begin, end);
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
