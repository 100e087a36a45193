// Weight-only int8 linear layers (op_quantized_linear_weight_only.cpp) with
// the weight repacked at prepare for decoding: 4 weight rows interleaved, so
// the matrix-vector product reads one stream of whole 64-byte lines.
//
// Why: reading the file's row-major weight one row at a time, a core kept
// too few cache-line misses in flight. On a Zen 4 EPYC host (DRAM read 24
// GB/s on one core) it read 9-10 G weights/s; the same instructions over
// 4 interleaved rows read 21-23 (the x vector is loaded once per line of
// 4 rows × 16 weights instead of once per 16 weights, so more of the load
// queue holds weight misses). The int4 layout (qweight_int4.h) is
// interleaved the same way.
//
// Packed layout: rows in blocks of kInt8Rows (4; the last block padded with
// zero rows and scales). A block is ceil(k / 16) lines of 64 bytes; line c
// holds row r's weights 16c .. 16c + 15 at bytes 16r .. 16r + 15 (zeros past
// k). After the blocks: the scales as [block][group][4] floats, then the zero
// points the same way when some zero point is not 0 (`zeros` null otherwise).
// Group sizes are k (per channel) or multiples of 16, so a line never spans
// two groups (qweight_int8_packs).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/portable/util/cpu_isa.h"

namespace ember::kernels::quantized {

inline constexpr int64_t kInt8Rows = 4;
inline constexpr int64_t kInt8Chunk = 16;  // k per row per line

struct Int8Weights {
  int64_t n = 0, k = 0, group = 0, groups = 0;
  int64_t chunks = 0;              // ceil(k / 16): lines per block
  const int8_t* data = nullptr;    // ceil(n / 4) blocks of chunks × 64 bytes
  const float* scales = nullptr;   // [block][group][4]
  const float* zeros = nullptr;    // [block][group][4], or null: every zero point is 0
};

/// True when this layout takes a weight of k columns in groups of `group`:
/// one group per row, or groups that are multiples of 16.
bool qweight_int8_packs(int64_t k, int64_t group);

/// Bytes qweight_int8_pack writes (64-aligned memory expected); with_zeros:
/// some zero point is not 0 (qweight_int8_has_zeros).
size_t qweight_int8_packed_bytes(int64_t n, int64_t k, int64_t group, bool with_zeros);

/// True when zeros is not null and one of its `count` values is not 0.
bool qweight_int8_has_zeros(const float* zeros, int64_t count);

/// Packs w (n × k int8, row-major), scales and zeros (n × k / group floats,
/// zeros may be null) into `mem`; the result points into `mem`.
/// qweight_int8_packs(k, group) must hold.
Int8Weights qweight_int8_pack(const int8_t* w, const float* scales, const float* zeros,
                              int64_t n, int64_t k, int64_t group, void* mem);

/// W[row][k0 + i] = (float(q) − z) · s for i in [0, count) into dst[i] (a
/// prompt's GEMM panels, dequantized as they are packed): the bits of
/// qweight_dequantize on the file's row.
void qweight_int8_dequantize(const Int8Weights& w, int64_t row, int64_t k0, int64_t count,
                             float* dst, portable::Isa isa = portable::cpu_isa());

/// y[m·n + r] = Σ_k x[m·k + k'] · W[r][k'] + bias[r] for input rows m in
/// [0, rows) (1 to 4) and weight rows r in [first, last); first a multiple of
/// 4, last too unless it is n. Computed as Σ_g s·(Σ x·q) − Σ_g s·z·(Σ x) in
/// vector lanes; the ISA builds differ in the last bits only.
void qweight_int8_gemv(const Int8Weights& w, const float* x, int64_t rows, int64_t first,
                       int64_t last, const float* bias, float* y,
                       portable::Isa isa = portable::cpu_isa());

}  // namespace ember::kernels::quantized
