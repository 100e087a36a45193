// Int8 convolution as an implicit GEMM (op_quantized_conv2d.cpp, for every
// ungrouped convolution but 1×1 stride 1): no im2col.
//
// Once per call, the input image is copied into the microkernel's activation
// layout: channels in groups of G (4 uint8 x + 128 for VNNI, 2 int16 x − zx
// otherwise), padded with the zero point, and split into s_h·s_w phase planes
// (phase (py, px) holds padded rows py, py + s_h, ... and columns px, ...).
// Outputs are then numbered over whole rows of the phase planes' width, so the
// activations of k group (tap, channel group) for outputs n .. n + nr − 1 are
// nr·G contiguous elements at a fixed offset from output n: the microkernel
// reads them in place, one offset per k group (qgemm.h's *_at kernels). The
// columns past the output's width are computed and dropped.
//
// The weights are packed at prepare with k ordered (tap, channel group, G);
// the sums, and so the outputs, are those of the packed GEMM (exact int32).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/quantized/util/qgemm.h"
#include "runtime/kernel/kernel_context.h"

namespace ember::kernels::quantized {

struct QConvGeometry {
  int64_t cin, ih, iw, kh, kw, oh, ow;
  // pt, pl: top and left padding (the bottom and right follow from oh, ow).
  int64_t sh, sw, pt, pl, dh, dw;
};

/// True when kAmx may pack this convolution (qconv_pack_weights, qconv_run):
/// an AMX host and whole 16-group tiles of channels per tap (cin a multiple
/// of 64). Other convolutions take qgemm_kind().
bool qconv_amx_applies(int64_t cin);

/// Bytes of packed weights for c_out × cin × kh × kw.
size_t qconv_packed_bytes(QGemmKind kind, int64_t c_out, int64_t cin, int64_t kh, int64_t kw);

/// Packs w (c_out × cin × kh × kw int8, contiguous) into `data` and its row
/// sums into `row_sums` (c_out values). The result's k is cin·kh·kw; its kp
/// counts the channel groups' padding.
QPackedWeights qconv_pack_weights(QGemmKind kind, const int8_t* w, int64_t c_out, int64_t cin,
                                  int64_t kh, int64_t kw, void* data, int32_t* row_sums);

/// Scratch bytes qconv_run needs with `threads` threads.
size_t qconv_scratch_bytes(const QPackedWeights& w, const QConvGeometry& g, size_t threads);

/// One image: out = epilogue(W ∗ (x − zx)), x one image's cin × ih × iw int8
/// (NCHW), e.c its c_out × oh × ow int8 output (e.c_rs = oh·ow, e.c_cs = 1;
/// int8 output only). `scratch` holds qconv_scratch_bytes bytes.
void qconv_run(KernelContext& ctx, const QPackedWeights& w, const QConvGeometry& g,
               const int8_t* x, int32_t zx, const QEpilogue& e, void* scratch);

}  // namespace ember::kernels::quantized
