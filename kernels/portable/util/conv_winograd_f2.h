// Winograd F(2×2, 3×3) for float32 3×3 stride-1 convolutions on small planes
// (ResNet's last stage, 7×7), the WinogradForm::kF2TileRows of conv_winograd.h.
//
// F(4×4, 3×3) leaves a 7×7 plane 4 tiles whose 36 transformed weights (4× the
// weight) stream from memory for too few products. F(2×2, 3×3) computes each
// 2×2 block of output from a 4×4 block of input with 16 products per
// (output channel, input channel) instead of 36:
//   Y = Aᵀ [ Σ_ic (G g Gᵀ) ⊙ (Bᵀ d B) ] A
// with Bᵀ = [1 0 −1 0; 0 1 1 0; 0 −1 1 0; 0 1 0 −1], G = [1 0 0; ½ ½ ½;
// ½ −½ ½; 0 0 1], Aᵀ = [1 1 1 0; 0 1 −1 −1]. The 16 products take the tiles
// as the GEMM's rows (a 7×7 plane's 16 tiles are two MR-row strips):
// Mᵀ = Vᵀ·Uᵀ with Uᵀ packed at prepare as B panels (IC × OC, 1.8× the
// weight) and V written by the input transform as A panels. The whole plane
// is one band (small planes only). The transforms only add, subtract and
// halve (G's ½ is exact), so the error is close to im2col's; every output is
// the same sum for any thread count.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/portable/util/conv_winograd.h"

namespace ember::kernels::portable {

/// 2×2 tiles of an out_h × out_w plane.
inline int64_t winograd_f2_tiles(int64_t out_h, int64_t out_w) {
  return ((out_h + 1) / 2) * ((out_w + 1) / 2);
}

/// Floats the packed Uᵀ takes.
int64_t winograd_f2_weight_floats(int64_t oc, int64_t ic);

/// Packs Uᵀ = (G g Gᵀ)ᵀ of weight `w` ([OC, IC, 3, 3], strides in elements)
/// into `dst` (winograd_f2_weight_floats floats) as 16 B operands.
WinogradWeights winograd_f2_pack_weights(const float* w, int64_t s_oc, int64_t s_ic,
                                         int64_t s_h, int64_t s_w, int64_t oc, int64_t ic,
                                         float* dst);

/// Scratch bytes a call needs (V and M of the whole plane; any thread count).
size_t winograd_f2_scratch_bytes(int64_t ic, int64_t oc, int64_t out_h, int64_t out_w);

/// out = conv(x, w) + bias (then io's epilogue) through the transforms and
/// 16 GEMMs; false (nothing written) when `scratch_bytes` is too small.
bool winograd_f2_conv(KernelContext& ctx, const WinogradIo& io, const WinogradWeights& u,
                      void* scratch, size_t scratch_bytes);

}  // namespace ember::kernels::portable
