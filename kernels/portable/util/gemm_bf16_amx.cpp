// bf16_gemm_32x32_amx: the bf16 GEMM microkernel on AMX tiles (gemm_bf16.h),
// compiled through a target attribute and called only when
// bf16_gemm_kind_available(kAmx), inside an AmxTiles scope (amx.h: every
// tile 16 rows × 64 bytes).
//
// A 32×32 float32 block of C is four accumulator tiles (0–3). Per 16 k pairs
// it loads two A tiles (rows 0–15 and 16–31: 1 KiB each, consecutive in the
// kAmx row layout) and two B tiles (columns 0–15 and 16–31 of the 32-column
// strip: 16 pair rows of 64 bytes, 128 bytes apart), and issues four
// TDPBF16PS, each 16×16×32 multiply-adds. Like VDPBF16PS it treats bf16
// subnormal inputs as zero and rounds each pair's sum into float32.
#include "kernels/portable/util/gemm_bf16.h"

#if defined(__x86_64__) && defined(__linux__) && (defined(__GNUC__) || defined(__clang__))
#include "kernels/portable/util/amx_block.h"

namespace ember::kernels::portable {

EMBER_TARGET_AMX void bf16_gemm_32x32_amx(int64_t kp, const uint32_t* a, const uint32_t* b,
                                          float* c, int64_t c_rs, bool accumulate) {
  // A chunk is 16 pairs: 32 rows × 16 words of A, 16 pair rows × 32 words of B.
  amx_block_32x32<AmxProduct::kBf16>(
      kp / 16, [a](int64_t i) { return a + i * 512; }, 64, 1024,
      [b](int64_t i) { return b + i * 512; }, 128, c, c_rs * 4, accumulate);
}

EMBER_TARGET_AMX void bf16_gemm_32x32_amx_pf(int64_t kp, const uint32_t* a, const uint32_t* b,
                                             float* c, int64_t c_rs, bool accumulate,
                                             const void* prefetch, int64_t prefetch_lines) {
  const int64_t chunks = kp / 16;
  const AmxPrefetch pf(prefetch, prefetch_lines, chunks);
  amx_block_32x32<AmxProduct::kBf16>(
      chunks, [a](int64_t i) { return a + i * 512; }, 64, 1024,
      [b](int64_t i) { return b + i * 512; }, 128, c, c_rs * 4, accumulate, pf);
}

}  // namespace ember::kernels::portable

#else

namespace ember::kernels::portable {

// Never called off x86-64 Linux (bf16_gemm_kind_available(kAmx) is false).
void bf16_gemm_32x32_amx(int64_t, const uint32_t*, const uint32_t*, float*, int64_t, bool) {}
void bf16_gemm_32x32_amx_pf(int64_t, const uint32_t*, const uint32_t*, float*, int64_t, bool,
                            const void*, int64_t) {}

}  // namespace ember::kernels::portable

#endif
