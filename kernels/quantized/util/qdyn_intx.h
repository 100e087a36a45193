// The integer kernels of ember_quantized::linear_dynamic_intx
// (op_quantized_linear_dynamic_intx.cpp): torchao's 8da4w / 8da8w linear
// layers. Activations are quantized per row (token) to int8 with their own
// scale and zero point; weights are int4 or int8, symmetric, one float scale
// per group of `group` input features.
//
//   y[r][n] = sx[r] · Σ_g s[n][g] · Σ_{k in g} (qx[r][k] − zx[r]) · w[n][k] + bias[n]
//
// The products are summed exactly in int32 per group, then in float32.
//
// Packed weight layout (what prepare makes of the file's weight): each row of
// K values is padded with zeros to Kp = K rounded up to 64 and cut into
// chunks of 64. int8: the chunk's 64 bytes. int4: 32 bytes per chunk, byte i
// holding w[64c + i] + 8 in its low nibble and w[64c + 32 + i] + 8 in its
// high nibble, so one 256-bit load gives 64 weights in order (AVX-512: low
// then high nibbles; AVX2: two vectors of 32, one per half).
//
// With AVX-512 VNNI and groups that are multiples of 32 (`tiled`), the
// weight is stored in tiles of 16 output columns instead: for each tile and
// each block of 32 k, 8 vectors of 64 bytes, vector q holding w[col][4q + i]
// at byte 4·col + i (VPDPBUSD's operand: one broadcast group of 4 activation
// bytes times 16 columns). int4 blocks are 4 × 64 bytes, vector m holding
// quad 2m in the low nibbles and quad 2m + 1 in the high ones, as w + 8 (the
// sums are corrected by 8 · Σ u per block). Scales are stored per tile and
// group as 16 floats; s1 and the columns padded to 16.
//
// Activations are passed as uint8 u = qx + 128 (the operand VPDPBUSD wants
// unsigned), Kp bytes per row (the padding is read and multiplied by zero).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/quantized/util/qgemm.h"

namespace ember::kernels::quantized {

struct IntxWeights {
  QGemmKind kind = QGemmKind::kBaseline;
  int bits = 4;           // 4 or 8
  int64_t n = 0, k = 0;   // output and input features
  int64_t kp = 0;         // k rounded up to 64
  int64_t group = 0;      // input features per scale
  int64_t scale_stride = 0;  // floats of `scales` per row
  const uint8_t* w = nullptr;   // n rows of row_bytes()
  const float* scales = nullptr;  // n × scale_stride: the group scales (0 past k)
  const float* s1 = nullptr;  // [n]: Σ_g s[n][g] · Σ_{k in g} w[n][k]
  const float* bias = nullptr;  // [n] or null

  bool tiled = false;     // the VNNI tile layout (below) instead of rows of chunks

  int64_t row_bytes() const { return bits == 4 ? kp / 2 : kp; }
};

/// Bytes the packed weight, scales and s1 take (one allocation, 64-aligned parts).
size_t intx_packed_bytes(int bits, int64_t n, int64_t k, int64_t group);

/// Packs the file's weight into `mem` (intx_packed_bytes) for the kind this
/// process runs (qgemm_kind()). `weight`: int8 [n, k] (bits 8), or uint8
/// [n, k / 2] with w[n][2j] + 8 in byte j's low nibble and w[n][2j + 1] + 8
/// in its high nibble (bits 4). `scales`: float32 [n, k / group].
IntxWeights intx_pack(QGemmKind kind, int bits, const uint8_t* weight, const float* scales,
                      int64_t n, int64_t k, int64_t group, const float* bias, void* mem);

/// The unpacked value of weight (row, col), for tests and the reference.
int intx_weight_at(const IntxWeights& w, int64_t row, int64_t col);

/// torchao's per-token asymmetric int8 quantization of one row of k floats
/// (choose_qparams_affine ASYMMETRIC, eps = FLT_MIN, then quantize_affine),
/// written as u = q + 128 into kp bytes (zeros past k).
void intx_quantize_row(const float* x, int64_t k, int64_t kp, uint8_t* u, float* scale,
                       int32_t* zero_point);

/// y[r * ldy + c] for rows [0, rows) and columns c in [first, last) (first a
/// multiple of 16, and last too unless it is n: the tiled layout's tiles), from
/// activations u (rows × kp bytes) with per-row scale sx and zero point zx.
void intx_linear_rows(const IntxWeights& w, const uint8_t* u, const float* sx,
                      const int32_t* zx, int64_t rows, int64_t first, int64_t last, float* y,
                      int64_t ldy);

}  // namespace ember::kernels::quantized
