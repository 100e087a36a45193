// Depthwise int8 convolution of one channel plane (op_quantized_conv2d.cpp's
// depthwise path), requantised like the GEMM path's epilogue.
//
// The plane is first copied, as int8 and padded with the input's zero point,
// into s_h·s_w phase planes (phase (py, px) holds padded rows py, py + s_h, ...
// and columns px, px + s_w, ...), so every tap (ky, kx) reads one phase plane
// at a fixed offset. The outputs are then computed over whole rows of the
// phase planes' width, flattened: a chunk of 32 (AVX-512) or 16 (AVX2)
// consecutive outputs takes every tap from one contiguous load, whatever the
// plane's width or stride, and stays in registers until it is requantised;
// the columns past the output's width are computed and dropped.
//
// Sums: Σ w·x over the taps, less zx·Σw (padding holds zx, so the identity
// holds at the borders too). Products w·x fit int16 and pairs of taps are
// summed into int32 lanes (VPMADDWD), so every build gives the exact sums and,
// with the same float operations (no FMA) afterwards, the same bits.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ember::kernels::quantized {

struct QDepthwiseGeometry {
  int64_t ih, iw, kh, kw, oh, ow;
  int64_t sh, sw, ph, pw, dh, dw;  // ph, pw: top and left padding
  int64_t pb, pr;                  // bottom and right padding
};

/// One op's weights as the planes read them, computed once at prepare: per
/// channel, the taps' weights in pairs (two int16 in one int32, the first in
/// the low half; an odd count's last partner has weight 0) and zx·Σw.
struct QDepthwiseWeights {
  int64_t taps = 0, pairs = 0;
  int32_t zx = 0;
  const int32_t* pair_w = nullptr;  // channels × pairs
  const int32_t* corr = nullptr;    // channels
};

/// Bytes qdepthwise_weights needs.
size_t qdepthwise_weights_bytes(int64_t channels, int64_t taps);

/// w: channels × taps int8 (taps = kh·kw); memory: qdepthwise_weights_bytes
/// bytes, 4-byte aligned.
QDepthwiseWeights qdepthwise_weights(const int8_t* w, int64_t channels, int64_t taps, int32_t zx,
                                     void* memory);

/// The phase planes of one geometry, shared by every plane of one call.
/// With `masks`, the plane is read in place instead (qdepthwise_reads_in_place).
struct QDepthwiseLayout {
  QDepthwiseGeometry g;
  int64_t hp, wp;  // One phase plane's rows and columns.
  int64_t plane;   // Bytes per phase plane, with room for the last chunk's overrun.
  int64_t n;       // Flattened outputs: oh rows of wp (in place: oh·ow).
  int64_t pairs;
  // 2 · pairs, from the first phase plane's start (in place: from the input
  // plane's, negative above and left of it); may be null.
  const int64_t* tap_offset;
  const uint32_t* masks = nullptr;  // In place: qdepthwise_in_place_masks.
};

/// Number of tap offsets qdepthwise_layout writes: kh·kw rounded up to even.
int64_t qdepthwise_offset_count(const QDepthwiseGeometry& g);

/// True when planes of g can be read in place, without phase planes: stride
/// 1 with the output as wide as the input (a "same" padding), on CPUs with
/// AVX-512 VNNI (qgemm_kind()), whose masked loads read the image's rows
/// straight across its borders. The flattened output n = oy·ow + ox then
/// reads tap (ky, kx) at n + (ky·dh − ph)·iw + kx·dw − pw, and a per-tap
/// mask of each 32-output chunk says which outputs have the tap inside the
/// image (the others read the zero point). No scratch per plane.
bool qdepthwise_reads_in_place(const QDepthwiseGeometry& g);

/// Number of words qdepthwise_in_place_masks writes: per 32-output chunk,
/// one mask per offset and a flag.
int64_t qdepthwise_mask_count(const QDepthwiseGeometry& g);

/// The in-place masks of g (qdepthwise_mask_count words): bit i of chunk k's
/// mask for offset t is set when output 32k + i exists and its tap t is
/// inside the image (the odd count's zero-weight partner: never); the flag
/// after them is 1 when every tap of every output of the chunk is inside
/// (plain loads: masked ones cost a second load per tap, which made 112×112
/// planes slower than their phase planes). Computed once per geometry (at
/// prepare): a few microseconds on a 112×112 plane.
void qdepthwise_in_place_masks(const QDepthwiseGeometry& g, uint32_t* masks);

/// The layout of g, with its tap offsets written to `offsets`
/// (qdepthwise_offset_count values) unless it is null. With `masks` (from
/// qdepthwise_in_place_masks; only when qdepthwise_reads_in_place(g)), the
/// in-place layout.
QDepthwiseLayout qdepthwise_layout(const QDepthwiseGeometry& g, int64_t* offsets,
                                   const uint32_t* masks = nullptr);

/// Scratch bytes one qdepthwise_plane call needs (of the phase-plane layout;
/// the in-place one needs none).
size_t qdepthwise_scratch_bytes(const QDepthwiseGeometry& g);

/// out (oh × ow int8) = requantised depthwise convolution of x (ih × iw int8,
/// zero point w.zx) with channel c's weights: clamp(round_half_even(acc ·
/// scale + offset), lo, hi) + zy, with lo, hi already less zy. `scratch`
/// holds qdepthwise_scratch_bytes(l.g) bytes (64-byte aligned).
void qdepthwise_plane(const QDepthwiseLayout& l, const QDepthwiseWeights& w, int64_t c,
                      const int8_t* x, float scale, float offset, float lo, float hi, int32_t zy,
                      int8_t* out, void* scratch);

}  // namespace ember::kernels::quantized
