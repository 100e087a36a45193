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
#include <immintrin.h>

namespace ember::kernels::portable {

__attribute__((target("amx-tile,amx-bf16"))) void bf16_gemm_32x32_amx(
    int64_t kp, const uint32_t* a, const uint32_t* b, float* c, int64_t c_rs, bool accumulate) {
  const int64_t cs = c_rs * static_cast<int64_t>(sizeof(float));
  float* c1 = c + 16 * c_rs;
  if (accumulate) {
    _tile_loadd(0, c, cs);
    _tile_loadd(1, c + 16, cs);
    _tile_loadd(2, c1, cs);
    _tile_loadd(3, c1 + 16, cs);
  } else {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
  }
  for (int64_t q = 0; q < kp; q += 16) {
    _tile_loadd(4, a, 64);
    _tile_loadd(5, a + 256, 64);
    _tile_loadd(6, b, 128);
    _tile_loadd(7, b + 16, 128);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
    a += 512;
    b += 512;
  }
  _tile_stored(0, c, cs);
  _tile_stored(1, c + 16, cs);
  _tile_stored(2, c1, cs);
  _tile_stored(3, c1 + 16, cs);
}

}  // namespace ember::kernels::portable

#else

namespace ember::kernels::portable {

// Never called off x86-64 Linux (bf16_gemm_kind_available(kAmx) is false).
void bf16_gemm_32x32_amx(int64_t, const uint32_t*, const uint32_t*, float*, int64_t, bool) {}

}  // namespace ember::kernels::portable

#endif
