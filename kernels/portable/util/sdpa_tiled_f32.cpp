// sdpa_tiled_f32 (see sdpa_tiled_f32.h). Both products are computed by the
// GEMM microkernel of the build (AVX-512 8×32, AVX2+FMA 6×16, portable 8×8)
// on operands packed in its strips:
//
//   Sᵀ[keys × queries] = scale · K·Qᵀ   A: key rows (packed once per head),
//                                       B: the block's query rows, transposed
//   O[queries × dv]   += P·V            A: P, i.e. Sᵀ read down its columns,
//                                       B: value rows (packed once per head)
//
// Computing Sᵀ rather than S puts each query row in a column: the softmax
// runs down the key rows with one vector lane per query row (no horizontal
// sums), and P's A strips, MR consecutive query rows per key, are contiguous
// runs of Sᵀ. The column loops always run over all kSdpaTiledQueries rows
// (a constant trip count, which GCC vectorises at -O2); rows past the block's
// end hold zero scores from zero-padded Qᵀ strips and are never written out.
#include "kernels/portable/util/sdpa_tiled_f32.h"

#include <cstring>
#include <limits>

#include "kernels/portable/util/fast_math.h"
#include "kernels/portable/util/gemm.h"
#include "kernels/portable/util/isa_target.h"
#include "kernels/portable/util/parallel.h"

#if EMBER_ISA_X86
#include <immintrin.h>
#endif

// GCC 12's AVX-512 intrinsics start from _mm512_undefined_ps(), which the
// -O2 ASan build reports as maybe-uninitialized (false positives).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace ember::kernels::portable {
namespace {

constexpr int64_t kQ = kSdpaTiledQueries;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// max that keeps m when v is NaN (as sdpa_f32.cpp and softmax_f32.cpp).
[[gnu::always_inline]] inline float max_skip_nan(float m, float v) { return m < v ? v : m; }

#if EMBER_ISA_X86
// e^x for the softmax's x = score − row maximum (<= 0, −inf, or NaN), 16 at a
// time: 2^n · 2^f with t = x·log2(e), n = round(t), f = t − n in [−0.5, 0.5],
// 2^f by its degree-6 Taylor polynomial (relative error 1.2e-7) and the 2^n
// by VSCALEFPS, which underflows to 0 without the exponent-field tricks and
// range fix-ups of fast_expf: about half its instructions, and the
// exponentials are a quarter of this kernel at head dim 64. With a mask,
// lanes with t <= −125 (e^x below 2^−125, a masked score's −inf among them)
// are exactly 0 and never computed (below); without, t is clamped at −200
// (−inf gives exactly 0: f = 0, p = 1, 2^−200 rounds to 0). NaN stays NaN
// (VMAXPS returns its second operand, t, when t is NaN).
template <bool kMasked>
__attribute__((target("avx512f"), always_inline)) inline __m512 exp_nonpositive_avx512(
    __m512 x) {
  const __m512 t0 = _mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f));
  // kMasked (a causal limit or a mask: −inf scores): lanes at or below
  // t = −125 are 0 without computing them, since a result in or below the
  // subnormal range costs the core a microcode assist (with −inf clamped to
  // 2^−200, GPT-2's causal attention ran 1.5× slower than the unmasked one).
  // NaN lanes are live (an unordered compare). Unmasked attention skips the
  // compare (7% of a 128-token call) and clamps at −200.
  const __mmask16 live =
      kMasked ? _mm512_cmp_ps_mask(t0, _mm512_set1_ps(-125.0f), _CMP_NLE_UQ) : 0xffff;
  const __m512 t = _mm512_max_ps(_mm512_set1_ps(kMasked ? -125.0f : -200.0f), t0);
  const __m512 n = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 f = _mm512_sub_ps(t, n);
  __m512 p = _mm512_set1_ps(1.5403530393381609e-4f);  // ln2^6 / 6!
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.3333558146428443e-3f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(9.6181291076284772e-3f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.5504108664821580e-2f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.4022650695910071e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.9314718055994531e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
  if constexpr (kMasked) return _mm512_maskz_scalef_ps(live, p, n);
  return _mm512_scalef_ps(p, n);
}

// p = e^(sr[i] − base[i]) over rows [0, nb) of Sᵀ, csum[i] += p, written
// straight into P·V's A strips (pp: 8-row strips of nb keys, 8 floats a key,
// what pack_a<8> makes of Sᵀ's columns): the separate packing pass over the
// block cost 8% of a 1500-token attention. A call per key block (the block
// templates are not compiled for AVX-512).
template <bool kMasked>
__attribute__((target("avx512f"), noinline)) void exp_rows_avx512(
    const float* st, const float* base, float* csum, int64_t nb, float* pp) {
  __m512 b[kQ / 16], c[kQ / 16];
  for (int v = 0; v < kQ / 16; ++v) {
    b[v] = _mm512_loadu_ps(base + 16 * v);
    c[v] = _mm512_loadu_ps(csum + 16 * v);
  }
  const int64_t strip = 8 * nb;
  for (int64_t j = 0; j < nb; ++j) {
    const float* sr = st + j * kQ;
    for (int v = 0; v < kQ / 16; ++v) {
      const __m512 e =
          exp_nonpositive_avx512<kMasked>(_mm512_sub_ps(_mm512_loadu_ps(sr + 16 * v), b[v]));
      _mm256_storeu_ps(pp + 2 * v * strip + j * 8, _mm512_castps512_ps256(e));
      _mm256_storeu_ps(pp + (2 * v + 1) * strip + j * 8,
                       _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(e), 1)));
      c[v] = _mm512_add_ps(c[v], e);
    }
  }
  for (int v = 0; v < kQ / 16; ++v) _mm512_storeu_ps(csum + 16 * v, c[v]);
}
#endif

constexpr int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }
constexpr size_t align64(size_t bytes) { return (bytes + 63) / 64 * 64; }

// Where everything lives in the scratch, for one build's tile.
struct Layout {
  int64_t mr = 0, nr = 0;
  int64_t key_block = 0;  // keys per block: 16 A strips
  int64_t d = 0;          // head dim (the score product's depth)
  int64_t dv_pad = 0;     // head dim rounded up to NR (O's row stride)
  int64_t keys = 0;       // positions any row may read
  int64_t k_panel = 0, v_panel = 0;           // floats per cache head
  int64_t qt = 0, st = 0, pp = 0, o = 0;      // floats of one block's buffers
  size_t shared_bytes = 0, per_thread_bytes = 0;
};

Layout layout(int64_t mr, int64_t nr, const SdpaF32Problem& p) {
  Layout l;
  l.mr = mr;
  l.nr = nr;
  l.key_block = 16 * mr;
  l.d = p.head_dim;
  l.dv_pad = round_up(p.head_dim, nr);
  l.keys = p.keys();
  l.k_panel = round_up(l.keys, mr) * l.d;
  l.v_panel = l.keys * l.dv_pad;
  const int64_t q_pad = round_up(kQ, mr);
  l.qt = l.d * kQ;
  l.st = l.key_block * kQ;
  l.pp = q_pad * l.key_block;
  l.o = q_pad * l.dv_pad;
  l.shared_bytes = align64(sizeof(float) * static_cast<size_t>(p.batch * p.kv_heads) *
                           static_cast<size_t>(l.k_panel + l.v_panel));
  l.per_thread_bytes =
      align64(sizeof(float) * static_cast<size_t>(l.qt + l.st + l.pp + l.o + 3 * kQ));
  return l;
}

// Phase 1: cache heads [begin, end) (b·kv_heads + g) into their panels.
template <int MR, int NR>
[[gnu::always_inline]] inline void pack_heads(const SdpaF32Problem& p, const Layout& l,
                                              float* shared, int64_t begin, int64_t end) {
  for (int64_t u = begin; u < end; ++u) {
    const int64_t in = u * p.cache_len * p.head_dim;
    float* kp = shared + u * (l.k_panel + l.v_panel);
    float* vp = kp + l.k_panel;
    StridedMatrix<float>{p.k + in, p.head_dim, 1}.template pack_a<MR>(0, l.keys, 0, l.d, kp);
    const StridedMatrix<float> v{p.v + in, p.head_dim, 1};
    for (int64_t j0 = 0; j0 < l.keys; j0 += l.key_block) {
      const int64_t nb = l.keys - j0 < l.key_block ? l.keys - j0 : l.key_block;
      v.template pack_b<NR>(j0, nb, 0, p.head_dim, vp + j0 * l.dv_pad);
    }
  }
}

// Adds the mask to, and applies the causal limit on, rows [0, nb) of the
// key block at j0 (columns: the block's nq query rows from q0).
[[gnu::always_inline]] inline void mask_block(const SdpaF32Problem& p, int64_t b, int64_t h,
                                              int64_t q0, int64_t nq, int64_t j0, int64_t nb,
                                              float* st) {
  if (p.mask != nullptr) {
    const int64_t base = b * p.mask_strides[0] + h * p.mask_strides[1] + q0 * p.mask_strides[2];
    const int64_t rs = p.mask_strides[2];
    for (int64_t j = 0; j < nb; ++j) {
      float* sr = st + j * kQ;
      const int64_t at = base + j0 + j;
      if (p.mask_is_bool) {
        const char* m = static_cast<const char*>(p.mask) + at;
        for (int64_t i = 0; i < nq; ++i) sr[i] = m[i * rs] != 0 ? sr[i] : kNegInf;
      } else {
        const float* m = static_cast<const float*>(p.mask) + at;
        for (int64_t i = 0; i < nq; ++i) sr[i] += m[i * rs];
      }
    }
  }
  if (p.causal) {
    // Query row i (position start + q0 + i) sees key positions <= its own.
    for (int64_t j = 0; j < nb; ++j) {
      const int64_t first = j0 + j - p.start - q0;  // the first row that sees this key
      float* sr = st + j * kQ;
      for (int64_t i = 0; i < nq && i < first; ++i) sr[i] = kNegInf;
    }
  }
}

// The keys a boolean mask lets the nq query rows from q0 see lie below the
// returned bound (at most `limit`): keys past the last one any row sees add
// nothing (exp(-inf) = 0 in the sums, nothing to O), so the blocks stop
// there. A causal mask passed as a tensor (GPT-2's) bounds the first query
// block at its own rows: 1/4 of a 128-token call's products. Boolean only:
// eager adds a float mask to the scores, so a NaN score under a -inf float
// mask still makes its row NaN there.
[[gnu::always_inline]] inline int64_t mask_key_limit(const SdpaF32Problem& p, int64_t b,
                                                     int64_t h, int64_t q0, int64_t nq,
                                                     int64_t limit) {
  if (p.mask == nullptr || !p.mask_is_bool) return limit;
  const int64_t base = b * p.mask_strides[0] + h * p.mask_strides[1] + q0 * p.mask_strides[2];
  const char* m = static_cast<const char*>(p.mask) + base;
  int64_t seen = 0;
  for (int64_t i = 0; i < nq; ++i) {
    const char* row = m + i * p.mask_strides[2];
    for (int64_t j = limit - 1; j >= seen; --j) {
      if (row[j] != 0) {
        seen = j + 1;
        break;
      }
    }
    if (seen == limit) break;
  }
  return seen;
}

// Phase 2, one block: query rows [q0, q0 + nq) of head h in batch b.
// kAvx512Exp: the exponentials by exp_rows_avx512 (the AVX-512 build).
template <int MR, int NR, auto kMicro, bool kAvx512Exp>
[[gnu::always_inline]] inline void block(const SdpaF32Problem& p, const Layout& l,
                                         const float* shared, float* buf, int64_t b, int64_t h,
                                         int64_t q0) {
  const int64_t nq = p.seq - q0 < kQ ? p.seq - q0 : kQ;
  const int64_t d = l.d, dv_pad = l.dv_pad;
  float* qt = buf;
  float* st = qt + l.qt;
  float* pp = st + l.st;
  float* o = pp + l.pp;
  float* m = o + l.o;
  float* lsum = m + kQ;
  float* corr = lsum + kQ;
  const int64_t row0 = ((b * p.heads + h) * p.seq + q0) * d;
  // Qᵀ: every strip defined (zeros past nq), so every score is finite.
  if (nq < kQ) std::memset(qt, 0, sizeof(float) * static_cast<size_t>(l.qt));
  StridedMatrix<float>{p.q + row0, 1, d}.template pack_b<NR>(0, d, 0, nq, qt);
  std::memset(o, 0, sizeof(float) * static_cast<size_t>(l.o));
  for (int64_t i = 0; i < kQ; ++i) {
    m[i] = kNegInf;
    lsum[i] = 0.0f;
  }
  const int64_t g = h / (p.heads / p.kv_heads);
  const float* kp = shared + (b * p.kv_heads + g) * (l.k_panel + l.v_panel);
  const float* vp = kp + l.k_panel;
  int64_t limit = l.keys;
  if (p.causal && p.start + q0 + nq < limit) limit = p.start + q0 + nq;
  limit = mask_key_limit(p, b, h, q0, nq, limit);
  const int64_t a_strips = (nq + MR - 1) / MR;
  for (int64_t j0 = 0; j0 < limit; j0 += l.key_block) {
    const int64_t nb = limit - j0 < l.key_block ? limit - j0 : l.key_block;
    const int64_t key_strips = (nb + MR - 1) / MR;
    for (int64_t js = 0; js < kQ / NR; ++js) {
      for (int64_t s = 0; s < key_strips; ++s) {
        kMicro(d, kp + (j0 + s * MR) * d, qt + js * NR * d, st + s * MR * kQ + js * NR, kQ,
               p.scale, 0.0f);
      }
    }
    mask_block(p, b, h, q0, nq, j0, nb, st);
    // Online softmax down the columns: new maxima, the old sums' correction,
    // the block's probabilities in place and their sums.
    alignas(64) float mx[kQ], base[kQ], csum[kQ];
    for (int64_t i = 0; i < kQ; ++i) mx[i] = m[i];
    for (int64_t j = 0; j < nb; ++j) {
      const float* sr = st + j * kQ;
      for (int64_t i = 0; i < kQ; ++i) mx[i] = max_skip_nan(mx[i], sr[i]);
    }
    for (int64_t i = 0; i < kQ; ++i) {
      // A column with nothing visible yet keeps zeros (exp(-inf - 0)).
      base[i] = mx[i] == kNegInf ? 0.0f : mx[i];
      corr[i] = fast_expf(m[i] - base[i]);
      m[i] = mx[i];
      csum[i] = 0.0f;
    }
#if EMBER_ISA_X86
    if constexpr (kAvx512Exp) {
      static_assert(!kAvx512Exp || MR == 8, "exp_rows_avx512 writes 8-row strips");
      if (p.causal || p.mask != nullptr) {
        exp_rows_avx512<true>(st, base, csum, nb, pp);
      } else {
        exp_rows_avx512<false>(st, base, csum, nb, pp);
      }
    } else
#endif
    {
      for (int64_t j = 0; j < nb; ++j) {
        float* sr = st + j * kQ;
        for (int64_t i = 0; i < kQ; ++i) {
          const float e = fast_exp_or_zero(sr[i] - base[i]);
          sr[i] = e;
          csum[i] += e;
        }
      }
    }
    for (int64_t i = 0; i < kQ; ++i) lsum[i] = lsum[i] * corr[i] + csum[i];
    if (j0 > 0) {
      for (int64_t i = 0; i < nq; ++i) {
        if (corr[i] == 1.0f) continue;
        float* orow = o + i * dv_pad;
        for (int64_t x = 0; x < dv_pad; ++x) orow[x] *= corr[i];
      }
    }
    // O += P·V (P already in strips on AVX-512).
    if constexpr (!kAvx512Exp) {
      StridedMatrix<float>{st, 1, kQ}.template pack_a<MR>(0, nq, 0, nb, pp);
    }
    // The block's value strips hold all its packed keys (a causal limit may
    // use fewer): strips are `packed` rows apart, the product reads nb.
    const float* vb = vp + j0 * dv_pad;
    const int64_t packed = l.keys - j0 < l.key_block ? l.keys - j0 : l.key_block;
    for (int64_t vs = 0; vs < dv_pad / NR; ++vs) {
      for (int64_t s = 0; s < a_strips; ++s) {
        kMicro(nb, pp + s * MR * nb, vb + vs * NR * packed, o + s * MR * dv_pad + vs * NR,
               dv_pad, 1.0f, 1.0f);
      }
    }
  }
  for (int64_t i = 0; i < nq; ++i) {
    // l = 0: no visible position (all masked); eager's CPU SDPA gives zeros.
    const float inv = lsum[i] == 0.0f ? 0.0f : 1.0f / lsum[i];
    float* out = p.out + row0 + i * d;
    const float* orow = o + i * dv_pad;
    for (int64_t x = 0; x < d; ++x) out[x] = orow[x] * inv;
  }
}

template <int MR, int NR, auto kMicro, bool kAvx512Exp>
[[gnu::always_inline]] inline void blocks(const SdpaF32Problem& p, const Layout& l,
                                          const float* shared, float* buf, int64_t begin,
                                          int64_t end) {
  const int64_t qblocks = (p.seq + kQ - 1) / kQ;
  for (int64_t u = begin; u < end; ++u) {
    const int64_t qb = u % qblocks;
    const int64_t h = (u / qblocks) % p.heads;
    const int64_t b = u / qblocks / p.heads;
    block<MR, NR, kMicro, kAvx512Exp>(p, l, shared, buf, b, h, qb * kQ);
  }
}

// One build: its tile and its two phases (compiled for its ISA).
struct Build {
  int64_t mr, nr;
  void (*pack_heads)(const SdpaF32Problem&, const Layout&, float*, int64_t, int64_t);
  void (*blocks)(const SdpaF32Problem&, const Layout&, const float*, float*, int64_t, int64_t);
};

constexpr int kBaseMR = GemmTile<float>::kMR, kBaseNR = GemmTile<float>::kNR;

void pack_heads_baseline(const SdpaF32Problem& p, const Layout& l, float* shared, int64_t begin,
                         int64_t end) {
  pack_heads<kBaseMR, kBaseNR>(p, l, shared, begin, end);
}
void blocks_baseline(const SdpaF32Problem& p, const Layout& l, const float* shared, float* buf,
                     int64_t begin, int64_t end) {
  blocks<kBaseMR, kBaseNR, gemm_detail::micro_tile<float, kBaseMR, kBaseNR>, false>(
      p, l, shared, buf, begin, end);
}

#if EMBER_ISA_X86
EMBER_TARGET_AVX2_FMA void pack_heads_avx2(const SdpaF32Problem& p, const Layout& l,
                                           float* shared, int64_t begin, int64_t end) {
  pack_heads<6, 16>(p, l, shared, begin, end);
}
EMBER_TARGET_AVX2_FMA void blocks_avx2(const SdpaF32Problem& p, const Layout& l,
                                       const float* shared, float* buf, int64_t begin,
                                       int64_t end) {
  blocks<6, 16, f32_gemm_6x16_avx2_fma, false>(p, l, shared, buf, begin, end);
}
EMBER_TARGET_AVX512 void pack_heads_avx512(const SdpaF32Problem& p, const Layout& l,
                                           float* shared, int64_t begin, int64_t end) {
  pack_heads<8, 32>(p, l, shared, begin, end);
}
EMBER_TARGET_AVX512 void blocks_avx512(const SdpaF32Problem& p, const Layout& l,
                                       const float* shared, float* buf, int64_t begin,
                                       int64_t end) {
  blocks<8, 32, f32_gemm_8x32_avx512f, true>(p, l, shared, buf, begin, end);
}
#endif

Build build_for(Isa isa) {
#if EMBER_ISA_X86
  if (isa >= Isa::kAvx512) return {8, 32, pack_heads_avx512, blocks_avx512};
  if (isa >= Isa::kAvx2) return {6, 16, pack_heads_avx2, blocks_avx2};
#else
  (void)isa;
#endif
  return {kBaseMR, kBaseNR, pack_heads_baseline, blocks_baseline};
}

static_assert(kQ % 32 == 0 && kQ % kBaseNR == 0, "a block is whole B strips in every build");

}  // namespace

bool sdpa_tiled_f32_applies(const SdpaF32Problem& p) {
  return p.seq >= kSdpaTiledMinRows && p.head_dim >= 1 &&
         p.head_dim <= kSdpaTiledMaxHeadDim && p.kv_heads > 0 && p.heads % p.kv_heads == 0;
}

size_t sdpa_tiled_f32_scratch_bytes(Isa isa, const SdpaF32Problem& p, size_t threads) {
  const Build bd = build_for(isa);
  const Layout l = layout(bd.mr, bd.nr, p);
  return l.shared_bytes + l.per_thread_bytes * (threads > 0 ? threads : 1);
}

void sdpa_tiled_f32_at(Isa isa, KernelContext& ctx, const SdpaF32Problem& p, void* scratch) {
  const Build bd = build_for(isa);
  const Layout l = layout(bd.mr, bd.nr, p);
  float* shared = static_cast<float*>(scratch);
  char* per_thread = static_cast<char*>(scratch) + l.shared_bytes;
  parallel_slices(ctx, p.batch * p.kv_heads, [&](int64_t begin, int64_t end, size_t) {
    bd.pack_heads(p, l, shared, begin, end);
  });
  const int64_t units = p.batch * p.heads * ((p.seq + kQ - 1) / kQ);
  parallel_slices(ctx, units, [&](int64_t begin, int64_t end, size_t t) {
    float* buf = reinterpret_cast<float*>(per_thread + t * l.per_thread_bytes);
    bd.blocks(p, l, shared, buf, begin, end);
  });
}

void sdpa_tiled_f32(KernelContext& ctx, const SdpaF32Problem& p, void* scratch) {
  sdpa_tiled_f32_at(cpu_isa(), ctx, p, scratch);
}

}  // namespace ember::kernels::portable
