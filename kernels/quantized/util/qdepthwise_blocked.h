// Depthwise int8 convolution 16 channels at a time, the channels along the
// vector (one AVX-512 vector, or two AVX2 halves: op_quantized_conv2d.cpp's
// depthwise path on planes small enough, qdepthwise_blocked_applies).
//
// qdepthwise.h computes one channel plane at a time: its fill, chunking and
// copy-out cost about the same on a 7×7 plane as on a much larger one, and
// a stride-2 plane's flattened rows are half padding columns. Here a block
// of 16 consecutive channel planes is transposed once into a padded grid of
// pixels, each pixel 16 float32 values x − zx (0 in the padding), so every
// output pixel of the block is one vector of 16 channels: Σ over the taps of
// grid[pixel + tap] · w[tap], one FMA per tap whatever the stride, padding or
// dilation. 3-wide kernels (MobileNetV2's) load each kernel row's grid
// pixels once for 8 outputs of a row and their three column taps. The sums are exact: each product is an integer of at most
// 127·255 in magnitude and at most 64 taps keep every partial sum below
// 2^24, so float32 holds them exactly and the requantisation (the plane
// path's, same float operations) gives the same bits.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/quantized/util/qdepthwise.h"

namespace ember::kernels::quantized {

/// True when the blocked form runs g's planes: an AVX2 or AVX-512 host
/// (cpu_isa()), at most 64 taps, at least 16 channels, a padded input of at
/// most 4096 pixels (its grid, 256 KiB, stays in the L2 cache), and at most
/// 256 output pixels with a stride above 1, 64 with stride 1. The grid's
/// 64-byte loads bound this form by the L1 cache's load rate: on larger
/// planes, and stride-1 ones from 14×14, the plane path, whose vectors are
/// full of outputs, was as fast or faster (MobileNetV2's layers:
/// docs/quantization.md); on small planes, where it pays a fixed cost per
/// plane and stride 2 leaves its rows half padding, this one is faster.
bool qdepthwise_blocked_applies(const QDepthwiseGeometry& g, int64_t channels);

/// Bytes of the weights of the blocks (channels / 16 of them).
size_t qdepthwise_blocked_weights_bytes(int64_t channels, int64_t taps);

/// w: channels × taps int8 → per block of 16 channels, per tap, 16 float32
/// weights (the block's channel order). memory: qdepthwise_blocked_weights_bytes
/// bytes, 64-byte aligned. Channels past the last whole block are not written.
const float* qdepthwise_blocked_weights(const int8_t* w, int64_t channels, int64_t taps,
                                        void* memory);

/// Scratch bytes one qdepthwise_block16 call needs (64-byte aligned).
size_t qdepthwise_blocked_scratch_bytes(const QDepthwiseGeometry& g);

/// 16 output planes (oh × ow int8 each, consecutive: out + c·oh·ow) from 16
/// input planes (ih × iw, consecutive: x + c·ih·iw) with zero point zx:
/// clamp(round_half_even(acc · scale[c] + offset[c]), lo, hi) + zy, lo and
/// hi already less zy; offset may be null. w: the block's taps × 16
/// weights (qdepthwise_blocked_weights). Only where
/// qdepthwise_blocked_applies(g, ...).
void qdepthwise_block16(const QDepthwiseGeometry& g, const float* w, const int8_t* x, int32_t zx,
                        const float* scale, const float* offset, float lo, float hi, int32_t zy,
                        int8_t* out, void* scratch);

/// The 16×16 byte transpose the block's edges use, for tests: out[c][r] =
/// rows[r][c] (16 rows of 16 bytes in, 16 of 16 out).
void qdepthwise_transpose16(const int8_t* rows, int8_t* out);

}  // namespace ember::kernels::quantized
