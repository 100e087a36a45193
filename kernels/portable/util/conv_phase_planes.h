// The phase planes the implicit-GEMM convolutions read their input from
// (quantized/util/qconv_implicit.h for int8, util/conv_bf16_amx.h for bf16):
// the padded input split by stride phase, phase (py, px) holding padded rows
// py, py + sh, ... and columns px, px + sw, ..., so every tap (ky, kx) reads
// one phase plane at a fixed offset. The outputs are computed over whole rows
// of the planes' width wp (the columns past the output's are computed and
// dropped): output oy·wp + ox reads tap (ky, kx) at that index plus
// ((ky·dh) / sh)·wp + (kx·dw) / sw in phase ((ky·dh) % sh, (kx·dw) % sw).
#pragma once

#include <cstdint>

namespace ember::kernels::portable {

struct ConvPhasePlanes {
  int64_t phases;        // sh · sw
  int64_t hneed, wneed;  // Padded rows and columns the outputs read.
  int64_t hp, wp;        // One phase plane's rows and columns.
  int64_t n;             // Flattened outputs: oh rows of wp.
  int64_t max_off;       // The largest tap offset.
  int64_t plane;         // Elements per phase plane, with room for the last block's overrun.
};

/// The planes of a convolution whose outputs are computed in blocks of
/// `block` flattened positions.
inline ConvPhasePlanes conv_phase_planes(int64_t oh, int64_t ow, int64_t kh, int64_t kw,
                                         int64_t sh, int64_t sw, int64_t dh, int64_t dw,
                                         int64_t block) {
  ConvPhasePlanes p;
  p.phases = sh * sw;
  p.hneed = (oh - 1) * sh + (kh - 1) * dh + 1;
  p.wneed = (ow - 1) * sw + (kw - 1) * dw + 1;
  p.hp = (p.hneed + sh - 1) / sh;
  p.wp = (p.wneed + sw - 1) / sw;
  p.n = oh * p.wp;
  p.max_off = ((kh - 1) * dh / sh) * p.wp + ((kw - 1) * dw) / sw;
  p.plane = (p.n + block - 1) / block * block + p.max_off;
  if (p.plane < p.hp * p.wp) p.plane = p.hp * p.wp;
  return p;
}

}  // namespace ember::kernels::portable
