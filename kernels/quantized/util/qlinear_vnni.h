// The int8 GEMM of the linear layers (op_quantized_linear.cpp) on hosts with
// AVX-512 VNNI, token-major:
//
//   acc[t][n] = Σ_k (X[t][k] − zx) · W[n][k]
//   C[t][n]   = requantised or scaled acc (QEpilogue's arithmetic)
//
// qgemm.h puts weight rows on the broadcast side and tokens along the
// vector, which suits convolutions (the output's contiguous axis is the
// pixels) but not a linear layer, whose output is tokens × channels: each
// tile had to be written back transposed, one scalar at a time, and every
// weight strip was streamed from memory once per block of 32 tokens. Here
// the weights are the vector operand (panels of 32 output channels, packed
// once at prepare), a token's 4 activation bytes are the broadcast one, read
// in place from the quantized rows, so
//   - each 8×32 tile's epilogue is per-channel vectors stored along the row;
//   - a panel is loaded from memory once per call and reused from the
//     caches by every tile of tokens.
// Activations arrive as x + 128 (uint8, VPDPBUSD's unsigned operand) in rows
// of kp bytes; Σ_k W[n][k] · (128 + zx) is subtracted per channel.
//
// On AMX hosts (cpu_isa() amx; qlinear_amx_available) the same layout feeds
// TDPBUSD tiles: a panel's 16 groups of 4 k are a B tile per 16 channels
// (rows 128 bytes apart), 16 tokens' 64 bytes of activations an A tile read
// in place (rows kp bytes apart). Weights packed with `amx` pad k to whole
// 64-byte tiles and the activation rows to whole 32-token blocks; calls of
// fewer than 16 tokens run the VNNI tiles on the same packing.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/quantized/util/qgemm.h"
#include "runtime/kernel/kernel_context.h"

namespace ember::kernels::quantized {

/// Weights packed in panels of 32 output channels: panel p, group g (4 k)
/// is 128 bytes, byte j·4 + t = W[32p + j][4g + t] (zero past n or k).
struct QLinearWeights {
  int64_t n = 0;   // Output channels.
  int64_t k = 0;   // Input features.
  int64_t kp = 0;  // k rounded up to 4 (64 with amx).
  bool amx = false;  // Packed for the AMX tiles (qlinear_amx_available()).
  const int8_t* data = nullptr;
  const int32_t* col_sums = nullptr;  // Σ_k W[n][k], per output channel.
};

/// True when this process runs AMX tiles (cpu_isa() is amx).
bool qlinear_amx_available();

/// Bytes of packed data for an n×k weight.
size_t qlinear_packed_bytes(int64_t n, int64_t k, bool amx = false);

/// Packs W (n×k, row-major int8) into `data` (qlinear_packed_bytes bytes) and
/// its per-channel sums into `col_sums` (n values); with `amx` (only where
/// qlinear_amx_available()) k is padded to 64.
QLinearWeights qlinear_pack_weights(const int8_t* w, int64_t n, int64_t k, void* data,
                                    int32_t* col_sums, bool amx = false);

/// Bytes of the activation rows qlinear_run reads: tokens × kp, rounded up
/// (with amx, whole 32-token blocks of rows of k padded to 64).
size_t qlinear_rows_bytes(int64_t tokens, int64_t k, bool amx = false);

/// Writes tokens rows of k int8 values (x + t·k) as uint8 x + 128 in rows of
/// kp bytes at dst (qlinear_rows_bytes), the padding as 128 (with amx, the
/// rows up to the 32-token block too).
void qlinear_pack_rows(const int8_t* x, int64_t tokens, int64_t k, uint8_t* dst,
                       bool amx = false);

/// quantize_f32_s8 of tokens rows of k float32 values (x + t·k) with
/// (1 / scale = inv, zero point zp, int8's full range), written as
/// qlinear_pack_rows writes them: the same bytes as the two in sequence.
void qlinear_quantize_rows(const float* x, int64_t tokens, int64_t k, float inv, int32_t zp,
                           uint8_t* dst, bool amx = false);

/// C = epilogue(X·Wᵀ) for `tokens` rows of packed activations `xu`
/// (qlinear_pack_rows) with zero point zx. e's scale/offset are per output
/// channel; C[t][n] is at e.c + t·w.n + n (e.c_rs and e.c_cs are not read).
/// Splits the work over ctx's thread pool. Only on hosts where
/// qgemm_kind() is kAvx512Vnni.
void qlinear_run(KernelContext& ctx, const QLinearWeights& w, const uint8_t* xu, int64_t tokens,
                 int32_t zx, const QEpilogue& e);

}  // namespace ember::kernels::quantized
