// Depthwise int8 convolution of one channel plane (op_quantized_conv2d.cpp's
// depthwise path), requantised like the GEMM path's epilogue.
//
// The plane is first copied as x − zx (int16) into s_h·s_w phase planes of the
// padded input (phase (py, px) holds rows py, py + s_h, ... and columns px,
// px + s_w, ...), so every tap (ky, kx) reads one phase plane at a fixed
// offset. The accumulation then runs over whole output rows of the phase
// planes' width, one long contiguous loop per tap that vectorises whatever
// the plane's width or stride; the columns past the output's width are
// computed and dropped.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ember::kernels::quantized {

struct QDepthwiseGeometry {
  int64_t ih, iw, kh, kw, oh, ow;
  int64_t sh, sw, ph, pw, dh, dw;  // ph, pw: top and left padding
  int64_t pb, pr;                  // bottom and right padding
};

/// Scratch bytes one qdepthwise_plane call needs.
size_t qdepthwise_scratch_bytes(const QDepthwiseGeometry& g);

/// out (oh × ow int8) = requantised depthwise convolution of x (ih × iw int8,
/// zero point zx) with w (kh × kw int8): clamp(round_half_even(acc · scale +
/// offset), lo, hi) + zy, with lo, hi already less zy. `scratch` holds
/// qdepthwise_scratch_bytes(g) bytes (64-byte aligned).
void qdepthwise_plane(const QDepthwiseGeometry& g, const int8_t* x, int32_t zx, const int8_t* w,
                      float scale, float offset, float lo, float hi, int32_t zy, int8_t* out,
                      void* scratch);

}  // namespace ember::kernels::quantized
