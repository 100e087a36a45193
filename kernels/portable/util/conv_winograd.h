// Winograd F(4×4, 3×3) convolution for float32 (Lavin & Gray, "Fast
// Algorithms for Convolutional Neural Networks", 2016; points 0, ±1, ±2, ∞).
//
// A 3×3, stride-1, undilated, ungrouped 2-D convolution computes each 4×4
// block of output ("tile") from a 6×6 block of input with 36 products per
// (output channel, input channel) instead of 144:
//   Y = Aᵀ [ Σ_ic (G g Gᵀ) ⊙ (Bᵀ d B) ] A.
// The weight transform U = G g Gᵀ runs once, at prepare, straight into the
// GEMM's packed A panels (36 matrices of OC × IC). Execute transforms the
// input tiles into V (36 matrices of IC × tiles), runs the 36 GEMMs
// M = U·V, and transforms M back into the output, adding the bias. The
// transforms and the V/M buffers live in the method's scratch memory
// (KernelContext::scratch), a band of tile rows at a time.
//
// Error: the transforms scale values by up to 5 (Bᵀ) and 8 (Aᵀ) and G has
// 1/6 and 1/24, so the rounding error is larger than a direct sum's:
// measured 2e-6 to 9e-6 of the output's largest magnitude for 16 to 256
// input channels (im2col: ~3e-7); tests hold it to 3e-5
// (op_convolution_winograd_test.cpp, test_conv_winograd_end_to_end.py).
// A non-finite input makes every output of the 4×4 tiles whose 6×6 input
// block holds it non-finite, not only its 3×3 neighbourhood (tested).
// Every output is the same sum in the same order for any thread count;
// EMBER_WINOGRAD=0 (read once, at the first load) keeps the im2col path.
#pragma once

#include "kernels/portable/util/gemm_epilogue.h"

#include <cstddef>
#include <cstdint>

#include "kernels/portable/util/gemm.h"
#include "runtime/kernel/kernel_context.h"

namespace ember::kernels::portable {

/// How the 36 products run. Tiles as the GEMM's columns: M = U·V with U the
/// packed A operand (OC × IC) and V's tiles filling NR-wide B panels. On small
/// planes a band has too few tiles for that (14×14: 20 columns of a 32-wide
/// panel; 7×7: 6), so there the tiles are the rows: Mᵀ = Vᵀ·Uᵀ with Uᵀ
/// packed at prepare as B panels (IC × OC) and V in MR-row A panels; each
/// product is transposed into M for the same output transform.
/// kF2TileRows: Winograd F(2×2, 3×3) instead, with the tiles as the rows, for
/// planes too small for F(4×4, 3×3)'s tiles (conv_winograd_f2.h).
enum class WinogradForm : uint8_t { kNone, kTileColumns, kTileRows, kF2TileRows };

/// The transformed weight U, packed as 36 GEMM A operands (OC × IC each), or
/// for kTileRows as 36 B operands (Uᵀ, IC × OC each).
struct WinogradWeights {
  const float* packed = nullptr;
  int64_t oc = 0, ic = 0;
  int64_t xi_stride = 0;  // Floats between two of the 36 matrices.
  int tile = 0;           // The MR (NR for kTileRows) they were packed for.
  WinogradForm form = WinogradForm::kTileColumns;
  // The weight they came from: a GEMM whose tile is not `tile` packs from it
  // (never in practice: the tile is fixed per process, gemm_mr).
  const float* weight = nullptr;
  int64_t s_oc = 0, s_ic = 0, s_h = 0, s_w = 0;
};

/// Elements of the input and output as strides, the 2-D geometry and bias.
struct WinogradIo {
  const float* x = nullptr;
  int64_t x_n = 0, x_c = 0, x_h = 0, x_w = 0;  // Strides in elements.
  int64_t batch = 0, in_h = 0, in_w = 0, pad_h = 0, pad_w = 0;
  float* out = nullptr;
  int64_t o_n = 0, o_c = 0, o_h = 0, o_w = 0;  // Strides in elements.
  int64_t out_h = 0, out_w = 0;
  const float* bias = nullptr;  // Null: no bias.
  int64_t bias_stride = 0;
  // ember_fused::fused_convolution's residual and clamp, applied to each
  // output row as it is written (row_bias unused); null: none.
  const GemmEpilogue<float>* epilogue = nullptr;
  int64_t r_n = 0, r_c = 0, r_h = 0;  // The residual's strides (its W stride is res_cs).
};

/// G of F(4×4, 3×3) (points 0, ±1, ±2, ∞), in double: the weight transform
/// runs once, at prepare (here and in conv_nchw16c_winograd.cpp).
inline constexpr double kWinogradF43G[6][3] = {{1.0 / 4, 0, 0},
                                               {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                                               {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                                               {1.0 / 24, 1.0 / 12, 1.0 / 6},
                                               {1.0 / 24, -1.0 / 12, 1.0 / 6},
                                               {0, 0, 1}};

/// Row a of G·g, in double, for a 3×3 weight g (strides s_h, s_w in
/// elements) and a weight transform G of three columns (F(4×4, 3×3)'s six
/// rows, F(2×2, 3×3)'s four): gg[j] = Σ_k G[a][k] · g[k][j].
template <size_t kRows>
inline void winograd_g_row(const double (&G)[kRows][3], int a, const float* g, int64_t s_h,
                           int64_t s_w, double gg[3]) {
  for (int j = 0; j < 3; ++j) {
    gg[j] = G[a][0] * g[j * s_w] + G[a][1] * g[s_h + j * s_w] + G[a][2] * g[2 * s_h + j * s_w];
  }
}

/// False when EMBER_WINOGRAD=0 is set (read once).
bool winograd_enabled();

/// The form a 3×3, stride-1, undilated, ungrouped convolution of these
/// channel counts and output size takes, or kNone where the transforms do not
/// pay (measured; BENCHMARKS.md): enough tiles and channels to amortise them,
/// and on small planes enough channels for the transformed weight's products.
WinogradForm winograd_form(int64_t ic, int64_t oc, int64_t out_h, int64_t out_w);

/// winograd_form(...) != kNone.
bool winograd_suits(int64_t ic, int64_t oc, int64_t out_h, int64_t out_w);

/// Floats the packed U takes in `form`.
int64_t winograd_weight_floats(int64_t oc, int64_t ic,
                               WinogradForm form = WinogradForm::kTileColumns);

/// Packs U = G g Gᵀ of weight `w` ([OC, IC, 3, 3] with the given strides,
/// in elements) into `dst` (winograd_weight_floats(oc, ic, form) floats).
WinogradWeights winograd_pack_weights(const float* w, int64_t s_oc, int64_t s_ic, int64_t s_h,
                                      int64_t s_w, int64_t oc, int64_t ic, float* dst,
                                      WinogradForm form = WinogradForm::kTileColumns);

/// Scratch bytes a call with this geometry needs on `threads` threads (a
/// band of at most about 2 MiB of transformed tiles, at least one tile row).
size_t winograd_scratch_bytes(int64_t ic, int64_t oc, int64_t out_h, int64_t out_w,
                              size_t threads, WinogradForm form = WinogradForm::kTileColumns);

/// out = conv(x, w) + bias through the transforms and 36 GEMMs. `scratch`
/// has `scratch_bytes` ≥ winograd_scratch_bytes(...) of this geometry;
/// false (nothing written) when it has less.
bool winograd_conv(KernelContext& ctx, const WinogradIo& io, const WinogradWeights& u,
                   void* scratch, size_t scratch_bytes);

}  // namespace ember::kernels::portable
