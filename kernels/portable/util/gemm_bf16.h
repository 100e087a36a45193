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
// Three microkernels, by what the host has (cpu_isa(), capped by EMBER_ISA):
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

#include "kernels/portable/util/gemm_epilogue.h"
#include "runtime/kernel/kernel_context.h"

namespace ember::kernels::portable {

/// Which microkernel (and packed layout) a bf16 GEMM uses.
enum class Bf16GemmKind : uint8_t {
  kBaseline = 0,
  kAvx2 = 1,
  kAvx512Bf16 = 2,
};

/// The fastest kind this host runs: kAvx512Bf16 when cpu_isa() is avx512 and
/// the CPU has AVX512-BF16, kAvx2 when cpu_isa() is at least avx2.
Bf16GemmKind bf16_gemm_kind();

/// True when this host can run `kind` (tests loop over the kinds it can).
bool bf16_gemm_kind_available(Bf16GemmKind kind);

/// "baseline", "avx2" or "avx512bf16".
const char* bf16_gemm_kind_name(Bf16GemmKind kind);

/// A weight packed for one kind (see the file comment for the layout).
struct Bf16PackedWeight {
  const uint32_t* data = nullptr;
  int64_t n = 0;  // Columns of C (rows of the weight).
  int64_t k = 0;  // Depth.
  Bf16GemmKind kind = Bf16GemmKind::kBaseline;
};

/// 32-bit words bf16_pack_weight writes for an n × k weight and `kind`.
int64_t bf16_packed_weight_words(int64_t n, int64_t k, Bf16GemmKind kind);

/// Packs W (n × k bf16 bit patterns, W[j][p] at w[j * w_rs + p * w_cs]) for
/// `kind` into `dst` (bf16_packed_weight_words(n, k, kind) words).
Bf16PackedWeight bf16_pack_weight(const uint16_t* w, int64_t n, int64_t k, int64_t w_rs,
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

}  // namespace ember::kernels::portable
