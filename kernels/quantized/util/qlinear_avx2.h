// The int8 GEMM of the linear layers (op_quantized_linear.cpp) on AVX2 hosts
// without AVX-512 VNNI, token-major, as qlinear_vnni.h is on VNNI hosts:
//
//   acc[t][n] = Σ_k (X[t][k] − zx) · W[n][k]
//   C[t][n]   = requantised or scaled acc (QEpilogue's arithmetic)
//
// qgemm.h's AVX2 kind puts weight rows on the broadcast side and tokens
// along the vector: a linear layer's output (tokens × channels) was stored
// transposed, one scalar at a time, and with a deep layer (BERT's 3072 → 768)
// only one 16-token strip of activations fitted its L2 block, so every
// weight strip was read from memory once per 16 tokens. Here the weights are
// the vector operand (panels of 16 output channels, int16 pairs of k packed
// once at prepare) and a token's pair of activations (x − zx, int16) is the
// broadcast one, so each tile's epilogue is per-channel vectors stored along
// the row and a panel is read from memory once per block of tokens.
// VPMADDWD sums each pair into an int32 lane: exact, like every other kind.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/quantized/util/qgemm.h"
#include "runtime/kernel/kernel_context.h"

namespace ember::kernels::quantized {

/// Weights packed in panels of 16 output channels: panel p, pair g (2 k) is
/// 32 int16, element j·2 + t = W[16p + j][2g + t] (zero past n or k).
struct QLinear16Weights {
  int64_t n = 0;   // Output channels.
  int64_t k = 0;   // Input features.
  int64_t kp = 0;  // k rounded up to 2.
  const int16_t* data = nullptr;
};

/// Bytes of packed data for an n×k weight.
size_t qlinear16_packed_bytes(int64_t n, int64_t k);

/// Packs W (n×k, row-major int8) into `data` (qlinear16_packed_bytes bytes,
/// 2-byte aligned).
QLinear16Weights qlinear16_pack_weights(const int8_t* w, int64_t n, int64_t k, void* data);

/// Bytes of the activation rows qlinear16_run reads: tokens × kp int16.
size_t qlinear16_rows_bytes(int64_t tokens, int64_t k);

/// Writes tokens rows of k int8 values (x + t·k) as int16 x − zx in rows of
/// kp values at dst (qlinear16_rows_bytes), the padding as 0. Needs AVX2.
void qlinear16_pack_rows(const int8_t* x, int64_t tokens, int64_t k, int32_t zx, int16_t* dst);

/// C = epilogue(X·Wᵀ) for `tokens` rows of packed activations `rows`
/// (qlinear16_pack_rows). e's scale/offset are per output channel; C[t][n]
/// is at e.c + t·w.n + n (e.c_rs and e.c_cs are not read). Splits the work
/// over ctx's thread pool. Needs AVX2 (qgemm_kind() kAvx2).
void qlinear16_run(KernelContext& ctx, const QLinear16Weights& w, const int16_t* rows,
                   int64_t tokens, const QEpilogue& e);

}  // namespace ember::kernels::quantized
