// Float convolution on the channel-blocked layout NCHW16c: a tensor
// [N, ⌈C/16⌉, H, W, 16], the 16 channels of a block contiguous for each
// position (channels past C are zero). ember_fused::conv2d_nchw16c
// (op_conv2d_nchw16c.cpp) runs on it; passes/nchw16c_layout.py keeps a
// CNN's activations in it from the first convolution to the last.
//
// Why the layout: a 1×1 convolution on NCHW is a GEMM whose activation
// operand must be repacked into panels on every call, and whose output tiles
// are scattered over channel planes. In NCHW16c the activation of a position
// is one contiguous run per block: the kernel broadcasts input values in
// place (no packing), multiplies them by 16 output channels of a weight
// packed at prepare, and stores each position's block as one vector. A
// kernel tap is an offset into the (zero-bordered) input, so a 3×3 layer is
// the same loop with nine offsets (a direct convolution, no im2col).
//
// The register tile is P consecutive output positions of one output row ×
// the (up to four) 16-channel blocks of a weight group: 7 × 4 vectors with
// AVX-512 (gemm's 8×32 tile has 16 accumulators; 28 here), 6 × one block (two
// ymm halves) with AVX2, plain loops the compiler vectorises otherwise. Each
// output is the same chain of fused multiply-adds on AVX-512 and AVX2 (tap
// by tap, channel by channel, from zero), then + bias, + residual, clamp, so
// the two give the same bits; the portable loops round each product.
#pragma once

#include <cstdint>

#include "kernels/portable/util/line_prefetch.h"
#include "runtime/kernel/kernel_context.h"

namespace ember::kernels::portable {

inline constexpr int64_t kNchw16cBlock = 16;

/// Output-channel blocks a weight group holds: the tile's width.
inline constexpr int64_t kNchw16cGroupBlocks = 4;

/// True when `t` is a contiguous float32 NCHW16c tensor [N, C/16, H, W, 16];
/// else false after failing, naming it `name`.
bool check_nchw16c_tensor(KernelContext& ctx, const Tensor& t, const char* name);

/// One conv2d_nchw16c call's geometry (one group; dilation 1).
struct Nchw16cConv {
  int64_t cin = 0, cout = 0;  // channels (the weight's; the tensors pad them to 16)
  // The input is plain NCHW [cin ≤ 16, H, W] rather than blocked (a stem's
  // few channels: blocking them would multiply its work by 16 / cin).
  bool plain_input = false;
  int64_t kh = 1, kw = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_h = 0, pad_w = 0;
  int64_t in_h = 0, in_w = 0, out_h = 0, out_w = 0;

  int64_t cin_blocks() const { return (cin + kNchw16cBlock - 1) / kNchw16cBlock; }
  int64_t cout_blocks() const { return (cout + kNchw16cBlock - 1) / kNchw16cBlock; }
  bool padded() const { return pad_h != 0 || pad_w != 0; }
  // A 1×1, stride-1 layer without padding reads position i of the plane for
  // output i: its plane is one long row (fewer tile tails).
  bool pointwise() const {
    return kh == 1 && kw == 1 && stride_h == 1 && stride_w == 1 && !padded() && !plain_input;
  }
  // Floats per input position and channel step in the input's layout.
  int64_t in_lanes() const { return plain_input ? 1 : kNchw16cBlock; }
};

/// Floats of the packed weight: per group of kNchw16cGroupBlocks output
/// blocks, [tap][input channel (padded to 16)][group blocks × 16].
int64_t nchw16c_packed_weight_floats(const Nchw16cConv& g);

/// Packs a float32 OIHW weight [cout, cin, kh, kw] (contiguous) into `dst`
/// (nchw16c_packed_weight_floats(g) floats); padded channels are zero.
void nchw16c_pack_weight(const Nchw16cConv& g, const float* oihw, float* dst);

/// Floats of scratch one call needs: the zero-bordered copy of one image's
/// input (blocked, or plain NCHW) when the layer pads (else 0).
int64_t nchw16c_scratch_floats(const Nchw16cConv& g);

/// The epilogue: + bias (cout_blocks·16 floats, zero past cout; required),
/// + residual (out's layout; null: none), then clamp to [lo, hi] when `clamp`.
struct Nchw16cEpilogue {
  const float* bias = nullptr;
  const float* residual = nullptr;
  bool clamp = false;  // NaN stays NaN, as clamp in eager
  float lo = -__builtin_inff(), hi = __builtin_inff();
};

/// One tile row's work for a row kernel: `n` consecutive output positions of
/// one output row and one weight group.
struct Nchw16cRow {
  const float* in;          // the input for the row's first position, tap (0, 0)
  int64_t in_step;          // floats between consecutive positions' inputs (stride·16;
                            // stride for a plain input)
  bool plain;               // the input is plain NCHW (Nchw16cConv::plain_input)
  int32_t channels;         // input channels per block (16; cin for a plain input)
  int64_t in_channel;       // floats between input channels (1; H·W for a plain input)
  const int64_t* tap_off;   // per tap: floats from `in`
  int32_t taps;
  int64_t cin_blocks;
  int64_t in_block;         // floats between input channel blocks
  const float* w;           // the group's packed weight
  int32_t blocks;           // output blocks in the group (1..kNchw16cGroupBlocks)
  int32_t last_lanes;       // channels of the group's last block that exist (1..16)
  const float* bias;        // the group's bias
  const float* residual;    // at the row's first position (null: none)
  float* out;               // at the row's first position, the group's first block
  int64_t out_block;        // floats between output channel blocks
  int64_t n;
  bool clamp;
  float lo, hi;
  // A depth chunk of a split sum (nchw16c_conv_units on a weight past L2):
  // start from the partial sums in `out` rather than zero, and, without
  // `finish`, store the raw sums (no bias, residual, clamp or lane mask).
  // Same chain of multiply-adds either way, so the same bits.
  bool accumulate = false;
  bool finish = true;
  // Lines of the next chunk's weight to request, spread over the row's
  // tiles and their input-channel blocks (nchw16c_row_prefetch).
  const char* prefetch = nullptr;
  int64_t prefetch_lines = 0;
};

/// A row kernel's software prefetch of the next chunk's weight: its lines
/// spread over the row's `tiles` tiles and their input-channel blocks.
inline LinePrefetch<> nchw16c_row_prefetch(const Nchw16cRow& r, int64_t tiles) {
  return LinePrefetch<>(r.prefetch, r.prefetch_lines, tiles * r.taps * r.cin_blocks);
}

/// How a vector row kernel cuts a row of n positions into tiles of `tile`:
/// `full` whole tiles, then `first` and `second` positions (either may be
/// 0). A short tail shares the last full tile's positions (7 = 4 + 3 for
/// tiles of 6, not 6 + 1): a one-position tile keeps too few FMA chains in
/// flight for the FMA units.
struct Nchw16cRowSplit {
  int64_t full, first, second;
};
inline Nchw16cRowSplit nchw16c_split_row(int64_t n, int64_t tile) {
  int64_t full = n / tile, rest = n % tile;
  if (rest != 0 && full > 0) {
    --full;
    rest += tile;
  }
  if (rest > tile) return {full, (rest + 1) / 2, rest / 2};
  return {full, rest, 0};
}

/// The row kernels: AVX-512 and AVX2 builds (strides 1 and 2) and the
/// portable loops (any stride). The caller picks by cpu_isa().
void nchw16c_row_avx512(const Nchw16cRow& r);
void nchw16c_row_avx2(const Nchw16cRow& r);
void nchw16c_row_portable(const Nchw16cRow& r);

/// Which row kernel conv2d_nchw16c runs.
enum class Nchw16cKernel : uint8_t { kPortable, kAvx2, kAvx512 };

/// The row kernel for this host (cpu_isa()) and geometry: the vector builds
/// take strides 1 and 2.
Nchw16cKernel nchw16c_kernel_for(const Nchw16cConv& g);

/// True when nchw16c_conv_units splits each weight group's sums in depth
/// chunks (each chunk over all rows while it is in L1, partial sums in the
/// output): a packed weight past L2 (1 MiB), which is then read from memory
/// once per call instead of waiting on memory at each group's first row, or
/// one of at least 256 KiB whose input fits L2 (1 MiB), where each tile would
/// otherwise stream its group's weight from L2. ResNet-50: its 7×7-stage 3×3
/// layers 2.1 → 1.3 ms, its 14×14-stage 1×1 layers 0.61 → 0.51 ms.
bool nchw16c_splits_depth(const Nchw16cConv& g);

/// The convolution of work units [unit_first, unit_last) of one image: a
/// unit is (weight group, output row), row-major when the packed weight fits
/// L2 (1 MiB) and the sums are not split, else group-major. `in` is the image's
/// input (its zero-bordered copy when g.padded(): nchw16c_pad_input), `out`
/// and ep.residual the image's.
void nchw16c_conv_units(const Nchw16cConv& g, Nchw16cKernel kernel, const float* in,
                        const float* packed_w, const Nchw16cEpilogue& ep, float* out,
                        int64_t unit_first, int64_t unit_last);

/// Work units of one image: groups × output rows (a pointwise layer's plane
/// is cut into rows of nchw16c_pointwise_row positions).
int64_t nchw16c_units(const Nchw16cConv& g);

/// Copies one image's input [cin_blocks, in_h, in_w, 16] (plain: [cin, in_h,
/// in_w]) into `dst` as planes of hp × wp (0: in_h + 2·pad_h and in_w +
/// 2·pad_w, nchw16c_scratch_floats) with the input at (pad_h, pad_w) and
/// zeros around it.
void nchw16c_pad_input(const Nchw16cConv& g, const float* in, float* dst, int64_t hp = 0,
                       int64_t wp = 0);

}  // namespace ember::kernels::portable
