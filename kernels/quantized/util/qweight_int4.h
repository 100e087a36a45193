// Weight-only int4 linear layers (op_quantized_linear_weight_only.cpp) with
// the weight repacked two values per byte at prepare, for decoding: at groups
// of 32 the matrix-vector product reads 0.625 bytes per weight (16 bytes of
// nibbles and a float scale per 32; 0.75 with a nonzero zero point's term)
// instead of the file's 1.25 (one int8 per value, a float scale and zero
// point per group).
//
// Packed layout: rows in blocks of kInt4Rows (4; the last block padded with
// zero scales). Per row and group a header: the scale s and, when some zero
// term c = −z·s is not 0 (`zero_term`), c: W[n][k] = q·s + c. A group's
// weights are tiles of 32 k (the last one padded), 64 bytes each for the 4
// rows: byte 4j + r holds row r's q[32t + j] + 8 in its low nibble and
// q[32t + 16 + j] + 8 in its high one (j < 16). A block is a stream of 64-byte
// lines: sets of 4 groups (2 with zero terms), each set one line of headers
// (float s[4] per group, or s[4], c[4]) then the set's tiles.
//
// One 64-byte load gives 4 rows × 32 weights: in each 32-bit lane j, bits
// 8r..8r+3 and 8r+4..8r+7 are row r's weights j and j + 16, which line up
// with two 16-float loads of x. The kernels build a 16-entry table (q·s + c
// for q in −8..7) per row and group and look the shifted lanes up in it
// (AVX-512 VPERMPS reads an index's low 4 bits; AVX2 two 8-entry VPERMPS and
// a blend; baseline a scalar table), so the scale and zero point cost nothing
// per weight and the activations stay float.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/portable/util/cpu_isa.h"

namespace ember::kernels::quantized {

inline constexpr int64_t kInt4Rows = 4;

struct Int4Weights {
  int64_t n = 0, k = 0, group = 0, groups = 0;
  int64_t tiles = 0;        // 32-wide tiles per group: ceil(group / 32)
  bool zero_term = false;   // headers hold c (else every c is 0 and only s is stored)
  int64_t block_bytes = 0;  // 4 rows: the tiles and header lines of every group
  const uint8_t* data = nullptr;  // ceil(n / 4) blocks
};

/// True when every one of `count` values is in [−8, 7] (so the int8 weight is
/// an int4 one and packs exactly); otherwise false, with the first value out
/// of range and its index in *bad / *bad_index.
bool qweight_int4_fits(const int8_t* w, int64_t count, int* bad, int64_t* bad_index);

/// True when some zero term −z·s is not 0 (then every header carries c).
bool qweight_int4_has_zero_term(const float* scales, const float* zeros, int64_t count);

/// Bytes qweight_int4_pack writes (64-aligned memory expected); zero_term:
/// qweight_int4_has_zero_term of the scales and zeros packed.
size_t qweight_int4_packed_bytes(int64_t n, int64_t k, int64_t group, bool zero_term);

/// Packs w (n × k int8, values in [−8, 7]), scales and zeros (n × k / group
/// floats, zeros may be null) into `mem`; the result points into `mem`.
Int4Weights qweight_int4_pack(const int8_t* w, const float* scales, const float* zeros,
                              int64_t n, int64_t k, int64_t group, void* mem);

/// The same from int4 values two per byte (the program's uint8 [n, k / 2],
/// k even): byte j of a row holds value 2j + 8 in its low nibble and value
/// 2j + 1 + 8 in its high one (ember_quantized.pack_int4).
Int4Weights qweight_int4_pack_nibbles(const uint8_t* w, const float* scales, const float* zeros,
                                      int64_t n, int64_t k, int64_t group, void* mem);

/// The dequantized weight W[row][col] the kernels use (q·s + c).
float qweight_int4_at(const Int4Weights& w, int64_t row, int64_t col);

/// W[row][k0 + i] for i in [0, count) into dst[i · stride] (the GEMM's
/// panels for prompts, which dequantize as they pack). With stride 1 and k0
/// on a 32-wide tile, the AVX2/AVX-512 builds look whole tiles up in a table
/// (the same values as the plain loop).
void qweight_int4_dequantize(const Int4Weights& w, int64_t row, int64_t k0, int64_t count,
                             float* dst, int64_t stride,
                             portable::Isa isa = portable::cpu_isa());

/// y[m·n + r] = Σ_k x[m·k + k'] · W[r][k'] + bias[r] for input rows m in
/// [0, rows) (1 to 4) and weight rows r in [first, last); first a multiple of
/// 4, last too unless it is n. Each weight is decoded once for all the rows.
/// `isa` picks the build (cpu_isa() in the op; tests pass each level).
void qweight_int4_gemv(const Int4Weights& w, const float* x, int64_t rows, int64_t first,
                       int64_t last, const float* bias, float* y,
                       portable::Isa isa = portable::cpu_isa());

}  // namespace ember::kernels::quantized
