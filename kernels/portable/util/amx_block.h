// The 32×32 block every AMX kernel computes (amx.h's tile shape): four
// accumulator tiles (0–3: rows 0–15 / 16–31 × columns 0–15 / 16–31), two A
// tiles (4–5: the block's rows 0–15 and 16–31 of a 64-byte k chunk) and two
// B tiles (6–7: the chunk's 16 rows of columns 0–15 and 16–31, 64 bytes
// apart), four tile products per chunk. The callers differ in the product
// (bf16 pairs into float32, or int8 quads into int32 with either operand
// unsigned) and in where each chunk's operands lie.
//
// Include only in a file compiled for AMX through kAmxTarget's attribute on
// the caller: the tile intrinsics are inline assembly, the product macros
// need the features.
#pragma once

#include <cstdint>

#include "kernels/portable/util/line_prefetch.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define EMBER_TARGET_AMX __attribute__((target("amx-tile,amx-bf16,amx-int8")))

namespace ember::kernels::portable {

enum class AmxProduct : uint8_t {
  kBf16,  // TDPBF16PS: bf16 pairs, float32 sums.
  kU8S8,  // TDPBUSD: unsigned A bytes × signed B bytes, int32 sums.
  kS8U8,  // TDPBSUD: signed A bytes × unsigned B bytes.
};

/// C (32 rows of 128 bytes, c_rs bytes apart) = A·B over `chunks` k chunks,
/// plus C's own values when `accumulate`. Chunk i's A tiles are at a_at(i)
/// and a_at(i) + a_half (rows a_rs bytes apart), its B tiles at b_at(i) and
/// b_at(i) + 64 (rows b_rs bytes apart). The tiles must be configured
/// (AmxTiles).
/// The next weight strip's lines, requested a few per chunk while a block
/// runs (into L2) instead of stalling the first tile load that needs them.
using AmxPrefetch = LinePrefetch<2>;

template <AmxProduct kProduct, typename AAt, typename BAt>
EMBER_TARGET_AMX [[gnu::always_inline]] inline void amx_block_32x32(
    int64_t chunks, const AAt& a_at, int64_t a_rs, int64_t a_half, const BAt& b_at,
    int64_t b_rs, void* c, int64_t c_rs, bool accumulate, AmxPrefetch pf = {}) {
  auto* c0 = static_cast<uint8_t*>(c);
  uint8_t* c1 = c0 + 16 * c_rs;
  if (accumulate) {
    _tile_loadd(0, c0, c_rs);
    _tile_loadd(1, c0 + 64, c_rs);
    _tile_loadd(2, c1, c_rs);
    _tile_loadd(3, c1 + 64, c_rs);
  } else {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
  }
  for (int64_t i = 0; i < chunks; ++i) {
    pf.step();
    const auto* a = reinterpret_cast<const uint8_t*>(a_at(i));
    const auto* b = reinterpret_cast<const uint8_t*>(b_at(i));
    _tile_loadd(4, a, a_rs);
    _tile_loadd(5, a + a_half, a_rs);
    _tile_loadd(6, b, b_rs);
    _tile_loadd(7, b + 64, b_rs);
    if constexpr (kProduct == AmxProduct::kBf16) {
      _tile_dpbf16ps(0, 4, 6);
      _tile_dpbf16ps(1, 4, 7);
      _tile_dpbf16ps(2, 5, 6);
      _tile_dpbf16ps(3, 5, 7);
    } else if constexpr (kProduct == AmxProduct::kU8S8) {
      _tile_dpbusd(0, 4, 6);
      _tile_dpbusd(1, 4, 7);
      _tile_dpbusd(2, 5, 6);
      _tile_dpbusd(3, 5, 7);
    } else {
      _tile_dpbsud(0, 4, 6);
      _tile_dpbsud(1, 4, 7);
      _tile_dpbsud(2, 5, 6);
      _tile_dpbsud(3, 5, 7);
    }
  }
  _tile_stored(0, c0, c_rs);
  _tile_stored(1, c0 + 64, c_rs);
  _tile_stored(2, c1, c_rs);
  _tile_stored(3, c1 + 64, c_rs);
}

}  // namespace ember::kernels::portable

#endif
