// The bf16 GEMM behind Ember's opt-in bf16 precision (ember_fused::linear_bf16):
//   C[m×n] (float32) = bf16(A)[m×k] · Wᵀ, W a bf16 weight of n rows × k,
// with products of bf16 values (exact in float32) summed in float32 and the
// GemmEpilogue (bias, residual, clamp) applied after the last k-block.
//
// The weight is packed once, at a kernel's prepare step, as pairs: a k pair
// (W[j][2p], W[j][2p+1]) is one 32-bit word (low half the even k), and a strip
// of NR columns stores its words column-fastest, k pair by k pair, over the
// whole depth (odd k is padded with a zero). A is rounded to bf16 (to nearest
// even, as PyTorch's .bfloat16()) and packed the same way per call, MR rows
// per strip. That is the operand layout of AVX512-BF16's VDPBF16PS, which
// multiplies and adds one pair per float32 lane: 32 multiply-adds per
// instruction where a float32 FMA does 16.
//
// Four microkernels, by what the host has (cpu_isa(), capped by EMBER_ISA):
//   - bf16_gemm_32x32_amx: AMX tiles (TDPBF16PS: a 16×16 float32 tile gains a
//     16×32 by 32×16 bf16 product per instruction), Sapphire Rapids and later.
//     Its packed depth is padded to whole 16-pair tiles with zeros, and the
//     weight as A is stored tile by tile (see bf16_pack_weight_rows); as B it
//     is the AVX512-BF16 layout, so short products (m < kBf16AmxMinRows) run
//     bf16_gemm_8x32_avx512bf16 on the same packed weight;
//   - bf16_gemm_8x32_avx512bf16: VDPBF16PS (AVX512-BF16: Zen 4, Cooper Lake,
//     Sapphire Rapids and later);
//   - bf16_gemm_4x16_avx2_fma: widens each half of a pair with a shift or a
//     mask and uses two FMAs (any AVX2 host: the same numbers, half the weight
//     memory, no faster arithmetic);
//   - bf16_gemm_4x16_baseline: the same in plain C++.
// They differ only in how a pair's two products are rounded into the sum, so
// results agree to float32 rounding of the sums (tested), not bit for bit.
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/portable/util/amx.h"
#include "kernels/portable/util/gemm.h"
#include "kernels/portable/util/gemm_epilogue.h"
#include "kernels/portable/util/parallel.h"
#include "runtime/kernel/kernel_context.h"

namespace ember::kernels::portable {

/// Which microkernel (and packed layout) a bf16 GEMM uses.
enum class Bf16GemmKind : uint8_t {
  kBaseline = 0,
  kAvx2 = 1,
  kAvx512Bf16 = 2,
  kAmx = 3,
};

/// Products with fewer rows than this run on AVX512-BF16 even when the
/// weight is packed for AMX: a 16-row tile would be mostly padding.
inline constexpr int64_t kBf16AmxMinRows = 16;

/// The fastest kind this host runs: kAmx when cpu_isa() is amx, kAvx512Bf16
/// when it is avx512 and the CPU has AVX512-BF16, kAvx2 when it is at least avx2.
Bf16GemmKind bf16_gemm_kind();

/// True when this host can run `kind` (tests loop over the kinds it can).
bool bf16_gemm_kind_available(Bf16GemmKind kind);

/// "baseline", "avx2", "avx512bf16" or "amx".
const char* bf16_gemm_kind_name(Bf16GemmKind kind);

/// A weight packed for one kind (see the file comment for the layout).
struct Bf16PackedWeight {
  const uint32_t* data = nullptr;
  int64_t n = 0;  // Rows of the weight: C's columns in bf16_gemm, its rows in bf16_gemm_weight_a.
  int64_t k = 0;  // Depth.
  Bf16GemmKind kind = Bf16GemmKind::kBaseline;
};

/// k pairs per packed row or column: (k + 1) / 2, rounded up to a whole
/// 16-pair tile for kAmx.
int64_t bf16_packed_pairs(int64_t k, Bf16GemmKind kind);

/// 32-bit words bf16_pack_weight writes for an n × k weight and `kind`.
int64_t bf16_packed_weight_words(int64_t n, int64_t k, Bf16GemmKind kind);

/// Packs W (n × k bf16 bit patterns, W[j][p] at w[j * w_rs + p * w_cs]) for
/// `kind` into `dst` (bf16_packed_weight_words(n, k, kind) words).
Bf16PackedWeight bf16_pack_weight(const uint16_t* w, int64_t n, int64_t k, int64_t w_rs,
                                  int64_t w_cs, Bf16GemmKind kind, uint32_t* dst);

/// The same weight packed as the GEMM's A operand (bf16_gemm_weight_a): MR-row
/// strips of k pairs instead of NR-column ones. Words for an m × k weight.
/// kAmx stores each 32-row strip as 16-pair chunks of 32 rows × 16 words, so
/// an A tile (16 rows × 16 pairs) is 1 KiB of consecutive words.
int64_t bf16_packed_rows_words(int64_t m, int64_t k, Bf16GemmKind kind);
Bf16PackedWeight bf16_pack_weight_rows(const uint16_t* w, int64_t m, int64_t k, int64_t w_rs,
                                       int64_t w_cs, Bf16GemmKind kind, uint32_t* dst);

/// C = bf16(A) · Wᵀ, then `ep` (may be null) on every element. A is m × k
/// float32 at a[i * a_rs + p * a_cs]; C is m × n float32, rows c_rs apart
/// and contiguous (it must not overlap A or a residual). Runs on ctx's
/// thread pool with the microkernel `w` was packed for; every C element is
/// the same sum for any thread count.
void bf16_gemm(KernelContext& ctx, int64_t m, const float* a, int64_t a_rs, int64_t a_cs,
               const Bf16PackedWeight& w, float* c, int64_t c_rs,
               const GemmEpilogue<float>* ep);

// The microkernels: for an MR-row strip of A pairs (kp pairs × MR words) and
// an NR-column strip of W pairs (kp × NR words), write the full MR×NR tile of
// C (row stride c_rs) = A·B, plus what C held when `accumulate`. Call each
// only when bf16_gemm_kind_available says so.
// bf16_gemm_32x32_amx needs kp a multiple of 16, A in the kAmx row layout
// (32 rows × 16 words per 16-pair chunk), B as NR = 32 strips, and the tile
// configuration loaded on the calling thread (AmxTiles, amx.h).
void bf16_gemm_32x32_amx(int64_t kp, const uint32_t* a, const uint32_t* b, float* c,
                         int64_t c_rs, bool accumulate);
/// bf16_gemm_32x32_amx that also requests `prefetch_lines` 64-byte lines from
/// `prefetch` (into L2) spread over its k chunks. Same results.
void bf16_gemm_32x32_amx_pf(int64_t kp, const uint32_t* a, const uint32_t* b, float* c,
                            int64_t c_rs, bool accumulate, const void* prefetch,
                            int64_t prefetch_lines);
void bf16_gemm_8x32_avx512bf16(int64_t kp, const uint32_t* a, const uint32_t* b, float* c,
                               int64_t c_rs, bool accumulate);
void bf16_gemm_4x16_avx2_fma(int64_t kp, const uint32_t* a, const uint32_t* b, float* c,
                             int64_t c_rs, bool accumulate);
void bf16_gemm_4x16_baseline(int64_t kp, const uint32_t* a, const uint32_t* b, float* c,
                             int64_t c_rs, bool accumulate);

/// Rounds `count` floats (src[i * stride]) to bf16 and writes them as pairs:
/// words[q] = bf16(src[2q]) | bf16(src[2q + 1]) << 16, a missing last odd
/// element as zero. Vectorised per kind for stride 1.
void bf16_round_pairs(const float* src, int64_t count, int64_t stride, uint32_t* words,
                      Bf16GemmKind kind);

/// Rounds two rows of n floats to bf16 and pairs them column by column:
/// words[j] = bf16(r0[j]) | bf16(r1[j]) << 16 (r1 null: zero).
void bf16_round_row_pairs(const float* r0, const float* r1, int64_t n, uint32_t* words,
                          Bf16GemmKind kind);

/// C[m×n] = W[m×k] · bf16(B)[k×n], then `ep` (may be null): the weight as A,
/// packed by bf16_pack_weight_rows (convolution: output channels × output
/// positions). B is a gemm.h B source of float32 (pack_b<kNR>), rounded to
/// bf16 as it is packed. C rows are c_rs apart and contiguous. Runs on ctx's
/// thread pool; every C element is the same sum for any thread count.
template <typename BSource>
void bf16_gemm_weight_a(KernelContext& ctx, const Bf16PackedWeight& a, int64_t n,
                        const BSource& b, float* c, int64_t c_rs,
                        const GemmEpilogue<float>* ep);

}  // namespace ember::kernels::portable

// --- bf16_gemm_weight_a's loop nest (a template: B sources are the callers') ---

namespace ember::kernels::portable {
namespace bf16_detail {

inline constexpr int64_t kKcp = 128;  // k pairs per block (see gemm_bf16.cpp).
inline constexpr int64_t kMc = 144;   // Rows of the weight per block.
inline constexpr int64_t kNc = 96;    // Columns of B packed per block: 16 and 32 divide it.

void epilogue(Bf16GemmKind kind, const GemmEpilogue<float>& ep, int64_t mr, int64_t nr, float* c,
              int64_t c_rs);

// Columns [j0, j1) of C, all rows: for each block of kNc columns and kKcp
// pairs, B's strips are packed as floats by the source and rounded into pairs,
// then every weight strip of each kMc-row block meets them (a B strip stays in
// L1 across the block's weight strips).
//
// The AMX microkernel's tiles are configured for the part (on its thread);
// its weight blocks are 128 rows, whole 32-row strips.
template <int kMR, int kNR, auto kMicro, typename BSource>
void weight_a_part(const Bf16PackedWeight& a, const BSource& b, float* c, int64_t c_rs,
                   const GemmEpilogue<float>* ep, int64_t j0, int64_t j1) {
  constexpr bool kTiles = kMR == 32;  // Only bf16_gemm_32x32_amx has 32-row tiles.
  constexpr int64_t kMcBlock = kTiles ? 128 : kMc;
  const AmxTiles tiles(kTiles);
  const int64_t kp = bf16_packed_pairs(a.k, a.kind);
  alignas(64) float fstrip[2 * kKcp * kNR];
  alignas(64) uint32_t bpack[kKcp * kNc];
  alignas(64) float tile[kMR * kNR];
  for (int64_t jc = j0; jc < j1; jc += kNc) {
    const int64_t nc = j1 - jc < kNc ? j1 - jc : kNc;
    const int64_t strips = (nc + kNR - 1) / kNR;
    for (int64_t pc = 0; pc < kp; pc += kKcp) {
      const int64_t kcp = kp - pc < kKcp ? kp - pc : kKcp;
      const int64_t kc = 2 * (pc + kcp) < a.k ? 2 * kcp : a.k - 2 * pc;
      const bool first = pc == 0;
      const bool last = pc + kcp == kp;
      for (int64_t s = 0; s < strips; ++s) {
        const int64_t cols = nc - s * kNR < kNR ? nc - s * kNR : kNR;
        uint32_t* words = bpack + s * kcp * kNR;
        if constexpr (std::is_same_v<BSource, StridedMatrix<float>>) {
          if (b.cs == 1 && cols == kNR) {
            // Rows of a contiguous matrix (1×1 convolutions' planes) are
            // rounded in place, without the float copy: on AMX the copy and
            // the rounding took 70% of a 1×1 layer's time.
            const float* src = b.data + 2 * pc * b.rs + jc + s * kNR;
            for (int64_t q = 0; q < kcp; ++q) {
              if (2 * q >= kc) {
                for (int64_t j = 0; j < kNR; ++j) words[q * kNR + j] = 0;
                continue;
              }
              const float* r0 = src + 2 * q * b.rs;
              const float* r1 = 2 * q + 1 < kc ? r0 + b.rs : nullptr;
              // The rows are a plane apart: too many streams for the hardware
              // prefetcher. The next column block's part of them is fetched now.
              if (jc + kNc < j1) {
                __builtin_prefetch(r0 + kNc, 0, 2);
                __builtin_prefetch(r0 + kNc + 16, 0, 2);
                if (r1 != nullptr) {
                  __builtin_prefetch(r1 + kNc, 0, 2);
                  __builtin_prefetch(r1 + kNc + 16, 0, 2);
                }
              }
              bf16_round_row_pairs(r0, r1, kNR, words + q * kNR, a.kind);
            }
            continue;
          }
        }
        b.template pack_b<kNR>(2 * pc, kc, jc + s * kNR, cols, fstrip);
        for (int64_t q = 0; q < kcp; ++q) {
          if (2 * q >= kc) {  // The depth's padding to whole AMX tiles.
            for (int64_t j = 0; j < kNR; ++j) words[q * kNR + j] = 0;
            continue;
          }
          const float* r1 = 2 * q + 1 < kc ? fstrip + (2 * q + 1) * kNR : nullptr;
          bf16_round_row_pairs(fstrip + 2 * q * kNR, r1, kNR, words + q * kNR, a.kind);
        }
      }
      for (int64_t ic = 0; ic < a.n; ic += kMcBlock) {
        const int64_t mc = a.n - ic < kMcBlock ? a.n - ic : kMcBlock;
        for (int64_t s = 0; s < strips; ++s) {
          const int64_t nr = nc - s * kNR < kNR ? nc - s * kNR : kNR;
          const uint32_t* bp = bpack + s * kcp * kNR;
          for (int64_t ir = ic; ir < ic + mc; ir += kMR) {
            const int64_t mr = ic + mc - ir < kMR ? ic + mc - ir : kMR;
            const uint32_t* ap = a.data + ir * kp + pc * kMR;
            float* ct = c + ir * c_rs + jc + s * kNR;
            if (mr == kMR && nr == kNR) {
              kMicro(kcp, ap, bp, ct, c_rs, !first);
            } else {
              kMicro(kcp, ap, bp, tile, kNR, false);
              for (int64_t i = 0; i < mr; ++i) {
                for (int64_t j = 0; j < nr; ++j) {
                  float& v = ct[i * c_rs + j];
                  v = first ? tile[i * kNR + j] : v + tile[i * kNR + j];
                }
              }
            }
            if (last && ep != nullptr) {
              epilogue(a.kind, ep->at(ir, jc + s * kNR), mr, nr, ct, c_rs);
            }
          }
        }
      }
    }
  }
}

// Rows [i0, i1) of C (a split by output channel, for planes too small to
// split by column): the weight seen from row i0.
template <int kMR, int kNR, auto kMicro, typename BSource>
void weight_a_rows(const Bf16PackedWeight& a, const BSource& b, int64_t n, float* c,
                   int64_t c_rs, const GemmEpilogue<float>* ep, int64_t i0, int64_t i1) {
  Bf16PackedWeight part = a;
  part.data = a.data + i0 * bf16_packed_pairs(a.k, a.kind);
  part.n = i1 - i0;
  const GemmEpilogue<float> e = ep != nullptr ? ep->at(i0, 0) : GemmEpilogue<float>{};
  weight_a_part<kMR, kNR, kMicro>(part, b, c + i0 * c_rs, c_rs, ep != nullptr ? &e : nullptr, 0,
                                  n);
}

template <int kMR, int kNR, auto kMicro, typename BSource>
void weight_a_run(KernelContext& ctx, const Bf16PackedWeight& a, int64_t n, const BSource& b,
                  float* c, int64_t c_rs, const GemmEpilogue<float>* ep) {
  const int64_t threads = static_cast<int64_t>(ctx.threads());
  if (threads <= 1 || a.n * n * a.k < (int64_t{1} << 21)) {
    weight_a_part<kMR, kNR, kMicro>(a, b, c, c_rs, ep, 0, n);
    return;
  }
  // Whole kNc column blocks per thread, or whole 48-row groups of the weight
  // (a multiple of the 4- and 8-row tiles; 64 for AMX's 32) when that leaves
  // the busiest thread less.
  constexpr int64_t kRowUnit = kMR == 32 ? 64 : 48;
  auto busiest = [threads](int64_t total, int64_t unit) {
    const int64_t units = (total + unit - 1) / unit;
    const int64_t tasks = units < threads ? units : threads;
    const int64_t most = (units + tasks - 1) / tasks * unit;
    return most < total ? most : total;
  };
  if (busiest(n, kNc) * a.n <= busiest(a.n, kRowUnit) * n) {
    parallel_range(ctx, n, kNc, kNc, [&](int64_t first, int64_t last) {
      weight_a_part<kMR, kNR, kMicro>(a, b, c, c_rs, ep, first, last);
    });
  } else {
    parallel_range(ctx, a.n, kRowUnit, kRowUnit, [&](int64_t first, int64_t last) {
      weight_a_rows<kMR, kNR, kMicro>(a, b, n, c, c_rs, ep, first, last);
    });
  }
}

}  // namespace bf16_detail

template <typename BSource>
void bf16_gemm_weight_a(KernelContext& ctx, const Bf16PackedWeight& a, int64_t n,
                        const BSource& b, float* c, int64_t c_rs,
                        const GemmEpilogue<float>* ep) {
  if (a.n <= 0 || n <= 0) return;
  if (ep != nullptr && ep->empty()) ep = nullptr;
  if (a.k <= 0) {
    for (int64_t i = 0; i < a.n; ++i) {
      for (int64_t j = 0; j < n; ++j) c[i * c_rs + j] = 0.0f;
    }
    if (ep != nullptr) ep->apply(a.n, n, c, c_rs, 1);
    return;
  }
  switch (a.kind) {
    case Bf16GemmKind::kAmx:
      bf16_detail::weight_a_run<32, 32, bf16_gemm_32x32_amx>(ctx, a, n, b, c, c_rs, ep);
      return;
    case Bf16GemmKind::kAvx512Bf16:
      bf16_detail::weight_a_run<8, 32, bf16_gemm_8x32_avx512bf16>(ctx, a, n, b, c, c_rs, ep);
      return;
    case Bf16GemmKind::kAvx2:
      bf16_detail::weight_a_run<4, 16, bf16_gemm_4x16_avx2_fma>(ctx, a, n, b, c, c_rs, ep);
      return;
    case Bf16GemmKind::kBaseline:
      bf16_detail::weight_a_run<4, 16, bf16_gemm_4x16_baseline>(ctx, a, n, b, c, c_rs, ep);
      return;
  }
}

}  // namespace ember::kernels::portable
