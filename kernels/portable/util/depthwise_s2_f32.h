// Float depthwise 3×3 convolution with stride 2 (MobileNet's downsampling
// layers), one channel plane at a time, in bands of output rows. Each band's
// padded input rows are split into four phase planes (row parity × column
// parity) of width wp = out_w + 1, so that every tap reads one phase plane at
// a fixed offset and the band's outputs run as one long row of rows·wp
// (output t = oh·wp + ow reads phase (dy mod 2, dx mod 2) at
// t + (dy / 2)·wp + dx / 2); the column past each row's end is dropped. The
// row path this replaces spent its time per row (edges, vector tails), which
// on 7×7 and 14×14 outputs is most of the work.
#pragma once

#include <cstdint>

namespace ember::kernels::portable {

/// Floats of scratch dw3x3_s2_plane_f32 needs (16 KiB, 64-byte aligned).
inline constexpr int64_t kDw3x3S2Scratch = 4096;

/// True when dw3x3_s2_plane_f32 takes planes with out_w output columns (a
/// band of at least one row fits the scratch).
bool dw3x3_s2_takes(int64_t out_w);

/// out[oh·o_h + ow] = bias + Σ w9[3·dy + dx] · x[(2·oh + dy − pad_h)·x_h + 2·ow + dx − pad_w]
/// for oh < out_h, ow < out_w, the input zero outside in_h × in_w (x's
/// columns contiguous, out's too). Each output is the row path's sum
/// (bias + row 0 + row 1 + row 2, each row's three products in order).
void dw3x3_s2_plane_f32(const float* x, int64_t in_h, int64_t in_w, int64_t x_h, int64_t pad_h,
                        int64_t pad_w, const float* w9, float bias, float* out, int64_t out_h,
                        int64_t out_w, int64_t o_h, float* scratch);

}  // namespace ember::kernels::portable
