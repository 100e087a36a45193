// bf16 convolution as an implicit GEMM on AMX tiles (Ember's bf16 precision,
// op_convolution.cpp's bfloat16-weight path on hosts whose bf16_gemm_kind()
// is kAmx), for 2-D convolutions with one group, input channels in whole
// 32s and a kernel larger than 1×1.
//
// The GEMM path rounds its float32 input into bf16 columns for every tap of
// every call (im2col): on tiles that rounding, not the products, was most of
// a 3×3 layer's time. Here each input value is rounded once, into channel-
// pair phase planes: pair q's plane for phase (py, px) holds bf16(x[2q]) and
// bf16(x[2q + 1]) of padded rows py, py + sh, ... and columns px, px + sw,
// ... side by side (one 32-bit word per position), zero in the padding. The
// outputs are computed over whole rows of the phase planes' width (columns
// past the output's are computed and dropped), so every tap (ky, kx) reads
// 16 consecutive outputs' pairs from one phase plane at a fixed offset, and
// the 16 pairs of 16 channel pairs are one B tile whose rows are the pair
// planes. The weights are A tiles: 32 output channels × 16 channel pairs of
// one tap per k chunk, packed at prepare. Each product is TDPBF16PS's, summed
// in float32; the bias, residual and clamp are the GEMM's epilogue
// (GemmEpilogue::apply) on each finished 32×32 block.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/portable/util/gemm_epilogue.h"
#include "runtime/kernel/kernel_context.h"

namespace ember::kernels::portable {

struct ConvBf16AmxGeometry {
  int64_t cin, ih, iw, kh, kw, oh, ow;
  int64_t sh, sw, pt, pl, dh, dw;  // pt, pl: top and left padding.
};

/// The weights packed for the tiles: ceil(cout / 32) strips of chunks
/// (tap-major, then groups of 32 input channels), each 32 rows × 16 words.
struct ConvBf16AmxWeights {
  const uint32_t* data = nullptr;
  int64_t cout = 0, cin = 0, kh = 0, kw = 0;
};

/// True when the tiles run this convolution: bf16_gemm_kind() is kAmx, one
/// group, input channels a multiple of 32, a kernel larger than 1×1. (A 1×1
/// layer rounds each input value once on the GEMM path too; strided, its
/// phase planes would round the three quarters no output reads: ResNet-50's
/// downsampling layers ran 1.3–2.9× slower here.)
bool conv_bf16_amx_applies(int64_t cin, int64_t groups, int64_t kh, int64_t kw);

/// Bytes conv_bf16_amx_pack writes (64-byte aligned memory).
size_t conv_bf16_amx_weight_bytes(int64_t cout, int64_t cin, int64_t kh, int64_t kw);

/// w: cout × cin × kh × kw bf16 bits, contiguous.
ConvBf16AmxWeights conv_bf16_amx_pack(const uint16_t* w, int64_t cout, int64_t cin, int64_t kh,
                                      int64_t kw, void* memory);

/// Scratch bytes conv_bf16_amx_run needs for g with `threads` workers.
size_t conv_bf16_amx_scratch_bytes(const ConvBf16AmxGeometry& g, size_t threads);

/// out (cout planes of oh × ow float32, contiguous) = the convolution of one
/// image x (cin planes of ih × iw float32, contiguous) with w, then `ep` (may
/// be null; its row bias indexed by output channel, its residual like out:
/// residual[c · res_rs + (oy · ow + ox) · res_cs]). `scratch`: 64-byte
/// aligned, conv_bf16_amx_scratch_bytes(g, ctx.threads()) bytes.
void conv_bf16_amx_run(KernelContext& ctx, const ConvBf16AmxWeights& w,
                       const ConvBf16AmxGeometry& g, const float* x,
                       const GemmEpilogue<float>* ep, float* out, void* scratch);

}  // namespace ember::kernels::portable
