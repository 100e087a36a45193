// Winograd F(4×4, 3×3) for the NCHW16c convolution (conv_nchw16c.h): a 3×3,
// stride-1 layer on a large plane computes each 4×4 block of output (a tile)
// from a 6×6 block of input with 36 products per input and output channel
// instead of 144 (Lavin & Gray 2016; the transforms of conv_winograd.h):
//   Y = Aᵀ [ Σ_c (G g Gᵀ) ⊙ (Bᵀ d B) ] A.
// On the blocked layout every step works on whole 16-channel vectors:
//   - the weight transform U = G g Gᵀ runs once, at prepare, into 36
//     pointwise weights packed as nchw16c_pack_weight packs a 1×1 layer's;
//   - the input transform turns each tile's 6×6 positions of a block into 36
//     vectors, written as 36 blocked "planes" V[ξ] of the band's tiles;
//   - the 36 products M[ξ] = V[ξ]·U[ξ] are pointwise layers on those planes,
//     run by the row kernels of the direct convolution (nchw16c_conv_units);
//   - the output transform turns each tile's 36 vectors of M into its 4×4
//     outputs, then + bias, + residual, clamp, as the direct kernel does.
// Bands of tile rows keep V and M within a few MiB of scratch.
//
// Error: the transforms scale values by up to 5 (Bᵀ) and 8 (Aᵀ), so a
// result differs from the direct sum by more than its rounding: a few 1e-6
// of the output's magnitude (conv_winograd.h measured 2e-6 to 9e-6 for the
// same transforms); the tests hold it to 3e-5. A non-finite input makes all
// 16 outputs of the tiles whose 6×6 input block holds it non-finite.
#pragma once

#include <cstdint>

#include "kernels/portable/util/conv_nchw16c.h"
#include "runtime/kernel/kernel_context.h"

namespace ember::kernels::portable {

/// Whether a blocked layer takes Winograd: 3×3, stride 1, a blocked input,
/// an output plane of at least 28×28 positions (smaller ones have too few
/// tiles per transformed weight: measured slower), and EMBER_WINOGRAD is not 0.
bool nchw16c_winograd_applies(const Nchw16cConv& g);

/// Floats of the transformed, packed weight: 36 pointwise packed weights.
int64_t nchw16c_winograd_weight_floats(const Nchw16cConv& g);

/// U = G g Gᵀ of a float32 OIHW weight [cout, cin, 3, 3] (contiguous), in
/// double then rounded once, packed into `dst`.
void nchw16c_winograd_pack_weight(const Nchw16cConv& g, const float* oihw, float* dst);

/// Floats of scratch one call needs: the zero-bordered input and one band's
/// V and M.
int64_t nchw16c_winograd_scratch_floats(const Nchw16cConv& g);

/// One image: out = conv(in, w) + bias (+ residual, clamp: ep) through the
/// transforms, on ctx's threads. `in` is the image's blocked input, `u` the
/// packed transformed weight, `zeros` cout_blocks·16 zero floats (the bias
/// of the 36 products), `scratch` nchw16c_winograd_scratch_floats(g) floats.
void nchw16c_winograd(KernelContext& ctx, const Nchw16cConv& g, Nchw16cKernel kernel,
                      const float* in, const float* u, const Nchw16cEpilogue& ep,
                      const float* zeros, float* out, float* scratch);

}  // namespace ember::kernels::portable
