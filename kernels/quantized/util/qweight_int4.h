// Weight-only int4 linear layers (op_quantized_linear_weight_only.cpp) with
// the weight repacked two values per byte at prepare, for decoding: the
// matrix-vector product reads 0.75 bytes per weight (16 bytes of nibbles and
// 8 of scale and zero term per 32) instead of the file's 1.25 (one int8 per
// value, a float scale and zero point per group of 32).
//
// Packed layout: rows in blocks of kInt4Rows (4; the last block padded with
// zero scales); a block holds every group's tiles, then every group's header
//   float s[4], c[4]      the rows' scale and zero term c = −z·s (z null: 0),
// padded to 64 bytes. A group has one tile per 32 k (the last one padded) of
// 64 bytes,
//   byte 4j + r holding row r's q[32t + j] + 8 in its low nibble and
//   q[32t + 16 + j] + 8 in its high one (j < 16).
// So W[n][k] = q·s + c, and one 64-byte load gives 4 rows × 32 weights: in
// each 32-bit lane j, bits 8r..8r+3 and 8r+4..8r+7 are row r's weights j and
// j + 16, which line up with two 16-float loads of x. The kernels build a
// 16-entry table (q·s + c for q in −8..7) per row and group and look the
// shifted lanes up in it (AVX-512 VPERMPS reads an index's low 4 bits; AVX2
// two 8-entry VPERMPS and a blend; baseline a scalar table), so the scale and
// zero point cost nothing per weight and the activations stay float.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/portable/util/cpu_isa.h"

namespace ember::kernels::quantized {

inline constexpr int64_t kInt4Rows = 4;

struct Int4Weights {
  int64_t n = 0, k = 0, group = 0, groups = 0;
  int64_t tiles = 0;        // 32-wide tiles per group: ceil(group / 32)
  int64_t block_bytes = 0;  // 4 rows: groups · (64 · tiles + 32), to a multiple of 64
  const uint8_t* data = nullptr;  // ceil(n / 4) blocks
};

/// True when every one of `count` values is in [−8, 7] (so the int8 weight is
/// an int4 one and packs exactly); otherwise false, with the first value out
/// of range and its index in *bad / *bad_index.
bool qweight_int4_fits(const int8_t* w, int64_t count, int* bad, int64_t* bad_index);

/// Bytes qweight_int4_pack writes (64-aligned memory expected).
size_t qweight_int4_packed_bytes(int64_t n, int64_t k, int64_t group);

/// Packs w (n × k int8, values in [−8, 7]), scales and zeros (n × k / group
/// floats, zeros may be null) into `mem`; the result points into `mem`.
Int4Weights qweight_int4_pack(const int8_t* w, const float* scales, const float* zeros,
                              int64_t n, int64_t k, int64_t group, void* mem);

/// The dequantized weight W[row][col] the kernels use (q·s + c).
float qweight_int4_at(const Int4Weights& w, int64_t row, int64_t col);

/// W[row][k0 + i] for i in [0, count) into dst[i · stride] (the GEMM's
/// panels for prompts, which dequantize as they pack).
void qweight_int4_dequantize(const Int4Weights& w, int64_t row, int64_t k0, int64_t count,
                             float* dst, int64_t stride);

/// y[m·n + r] = Σ_k x[m·k + k'] · W[r][k'] + bias[r] for input rows m in
/// [0, rows) (1 to 4) and weight rows r in [first, last); first a multiple of
/// 4, last too unless it is n. Each weight is decoded once for all the rows.
/// `isa` picks the build (cpu_isa() in the op; tests pass each level).
void qweight_int4_gemv(const Int4Weights& w, const float* x, int64_t rows, int64_t first,
                       int64_t last, const float* bias, float* y,
                       portable::Isa isa = portable::cpu_isa());

}  // namespace ember::kernels::quantized
