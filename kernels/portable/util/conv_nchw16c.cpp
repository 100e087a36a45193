// The NCHW16c convolution's weight packing, work split and portable row
// kernel (conv_nchw16c.h); the vector row kernels are conv_nchw16c_avx512.cpp
// and conv_nchw16c_avx2.cpp.
#include "kernels/portable/util/conv_nchw16c.h"

#include <algorithm>
#include <cstring>

#include "kernels/portable/util/cpu_isa.h"
#include "runtime/core/scalar_type.h"

namespace ember::kernels::portable {
namespace {

constexpr int64_t kB = kNchw16cBlock;

// A pointwise layer's plane as rows of this many positions: a multiple of
// both vector tiles (7 and 6), so only a plane's last row has a tail, and
// small enough that a 14×14 plane still splits over two threads.
constexpr int64_t kPointwiseRow = 42;

// The largest packed weight whose layer iterates rows outside groups.
constexpr int64_t kRowsOuterWeightBytes = int64_t{1} << 20;

// A depth chunk's weight when a layer's sums are split: L1 holds it beside
// the rows' inputs.
constexpr int64_t kSplitChunkBytes = int64_t{32} << 10;

// Below the 1 MiB weight, a layer splits its sums when its weight is at
// least this and one image's input at most kSplitMaxInputBytes (each group
// reads all of the input, from L2 when it fits).
constexpr int64_t kSplitMinWeightBytes = int64_t{256} << 10;
constexpr int64_t kSplitMaxInputBytes = int64_t{1} << 20;

int64_t groups_of(const Nchw16cConv& g) {
  return (g.cout_blocks() + kNchw16cGroupBlocks - 1) / kNchw16cGroupBlocks;
}

int64_t rows_of(const Nchw16cConv& g) {
  return g.pointwise() ? (g.out_h * g.out_w + kPointwiseRow - 1) / kPointwiseRow : g.out_h;
}

}  // namespace

bool check_nchw16c_tensor(KernelContext& ctx, const Tensor& t, const char* name) {
  if (t.dtype != ScalarType::Float) {
    ctx.fail(Error::InvalidArgument, "%s: dtype %s is not supported (float32 only)", name,
             scalar_type_name(t.dtype));
    return false;
  }
  if (t.dim != 5 || t.size(4) != kB || !t.is_contiguous_dim_order()) {
    ctx.fail(Error::InvalidArgument,
             "%s: expected a contiguous NCHW16c tensor [N, C/16, H, W, 16], got %d dimensions",
             name, t.dim);
    return false;
  }
  return true;
}

int64_t nchw16c_packed_weight_floats(const Nchw16cConv& g) {
  return g.cout_blocks() * kB * g.kh * g.kw * g.cin_blocks() * kB;
}

void nchw16c_pack_weight(const Nchw16cConv& g, const float* oihw, float* dst) {
  const int64_t cinp = g.cin_blocks() * kB, taps = g.kh * g.kw, cob = g.cout_blocks();
  for (int64_t b0 = 0; b0 < cob; b0 += kNchw16cGroupBlocks) {
    const int64_t nb = std::min<int64_t>(kNchw16cGroupBlocks, cob - b0);
    const int64_t width = nb * kB;
    for (int64_t t = 0; t < taps; ++t) {
      for (int64_t ci = 0; ci < cinp; ++ci) {
        for (int64_t j = 0; j < width; ++j) {
          const int64_t co = b0 * kB + j;
          *dst++ = co < g.cout && ci < g.cin ? oihw[(co * g.cin + ci) * taps + t] : 0.0f;
        }
      }
    }
  }
}

int64_t nchw16c_scratch_floats(const Nchw16cConv& g) {
  if (!g.padded()) return 0;
  const int64_t planes = g.plain_input ? g.cin : g.cin_blocks();
  return planes * (g.in_h + 2 * g.pad_h) * (g.in_w + 2 * g.pad_w) * g.in_lanes();
}

void nchw16c_pad_input(const Nchw16cConv& g, const float* in, float* dst, int64_t hp,
                       int64_t wp) {
  if (hp == 0) hp = g.in_h + 2 * g.pad_h;
  if (wp == 0) wp = g.in_w + 2 * g.pad_w;
  const int64_t l = g.in_lanes();
  const int64_t right = wp - g.pad_w - g.in_w, below = hp - g.pad_h - g.in_h;
  const size_t row_bytes = static_cast<size_t>(g.in_w * l) * sizeof(float);
  const int64_t planes = g.plain_input ? g.cin : g.cin_blocks();
  for (int64_t cb = 0; cb < planes; ++cb) {
    float* plane = dst + cb * hp * wp * l;
    std::memset(plane, 0, static_cast<size_t>(g.pad_h * wp * l) * sizeof(float));
    for (int64_t y = 0; y < g.in_h; ++y) {
      float* row = plane + (g.pad_h + y) * wp * l;
      std::memset(row, 0, static_cast<size_t>(g.pad_w * l) * sizeof(float));
      std::memcpy(row + g.pad_w * l, in + (cb * g.in_h + y) * g.in_w * l, row_bytes);
      std::memset(row + (g.pad_w + g.in_w) * l, 0, static_cast<size_t>(right * l) * sizeof(float));
    }
    std::memset(plane + (g.pad_h + g.in_h) * wp * l, 0,
                static_cast<size_t>(below * wp * l) * sizeof(float));
  }
}

Nchw16cKernel nchw16c_kernel_for(const Nchw16cConv& g) {
  const bool vector_stride = g.stride_w == 1 || g.stride_w == 2;
  const Isa isa = cpu_isa();
  if (vector_stride && isa >= Isa::kAvx512) return Nchw16cKernel::kAvx512;
  if (vector_stride && isa >= Isa::kAvx2) return Nchw16cKernel::kAvx2;
  return Nchw16cKernel::kPortable;
}

bool nchw16c_splits_depth(const Nchw16cConv& g) {
  if (g.plain_input) return false;
  constexpr int64_t kF = static_cast<int64_t>(sizeof(float));
  const int64_t weight = nchw16c_packed_weight_floats(g) * kF;
  const int64_t input = g.cin_blocks() * g.in_h * g.in_w * kB * kF;
  return weight > kRowsOuterWeightBytes ||
         (weight >= kSplitMinWeightBytes && input <= kSplitMaxInputBytes);
}

int64_t nchw16c_units(const Nchw16cConv& g) { return groups_of(g) * rows_of(g); }

void nchw16c_conv_units(const Nchw16cConv& g, Nchw16cKernel kernel, const float* in,
                        const float* packed_w, const Nchw16cEpilogue& ep, float* out,
                        int64_t unit_first, int64_t unit_last) {
  const int64_t rows = rows_of(g), cob = g.cout_blocks();
  const int64_t hp = g.in_h + 2 * g.pad_h, wp = g.in_w + 2 * g.pad_w;
  const int64_t taps = g.kh * g.kw, l = g.in_lanes();
  int64_t tap_off[64];  // kh·kw ≤ 64 (checked at prepare)
  for (int64_t ky = 0; ky < g.kh; ++ky) {
    for (int64_t kx = 0; kx < g.kw; ++kx) tap_off[ky * g.kw + kx] = (ky * wp + kx) * l;
  }
  const int64_t in_plane = g.padded() ? hp * wp : g.in_h * g.in_w;
  const int64_t group_floats = kNchw16cGroupBlocks * kB * taps * g.cin_blocks() * kB;
  const int64_t out_plane = g.out_h * g.out_w * kB;
  void (*row_fn)(const Nchw16cRow&) = kernel == Nchw16cKernel::kAvx512 ? nchw16c_row_avx512
                                      : kernel == Nchw16cKernel::kAvx2 ? nchw16c_row_avx2
                                                                       : nchw16c_row_portable;
  // Units are (group, row) pairs. With a weight that fits L2 the rows are
  // outer: each input row is read from memory once and meets every group's
  // weights while in L1/L2 (a thread's share of the rows is its share of the
  // input). A larger weight makes the groups outer, and each group's sum is
  // split in depth chunks (below).
  const int64_t groups = groups_of(g);
  const bool split = nchw16c_splits_depth(g);
  const bool rows_outer =
      !split && nchw16c_packed_weight_floats(g) * static_cast<int64_t>(sizeof(float)) <=
                    kRowsOuterWeightBytes;
  auto make_row = [&](int64_t grp, int64_t y) {
    const int64_t b0 = grp * kNchw16cGroupBlocks;
    const int64_t nb = std::min<int64_t>(kNchw16cGroupBlocks, cob - b0);
    Nchw16cRow r{};
    int64_t out_pos = 0;
    if (g.pointwise()) {
      out_pos = y * kPointwiseRow;
      r.n = std::min<int64_t>(kPointwiseRow, g.out_h * g.out_w - out_pos);
      r.in = in + out_pos * kB;
      r.in_step = kB;
    } else {
      out_pos = y * g.out_w;
      r.n = g.out_w;
      r.in = in + y * g.stride_h * wp * l;
      r.in_step = g.stride_w * l;
    }
    r.tap_off = tap_off;
    r.taps = static_cast<int32_t>(taps);
    r.cin_blocks = g.cin_blocks();
    r.in_block = in_plane * kB;  // a plain input's 16 channels, a blocked one's block
    r.plain = g.plain_input;
    r.channels = static_cast<int32_t>(g.plain_input ? g.cin : kB);
    r.in_channel = g.plain_input ? in_plane : 1;
    r.w = packed_w + grp * group_floats;
    r.blocks = static_cast<int32_t>(nb);
    const int64_t last_channels = g.cout - (b0 + nb - 1) * kB;
    r.last_lanes = static_cast<int32_t>(std::min<int64_t>(kB, last_channels));
    r.bias = ep.bias + b0 * kB;
    r.out = out + b0 * out_plane + out_pos * kB;
    r.residual = ep.residual != nullptr ? ep.residual + b0 * out_plane + out_pos * kB : nullptr;
    r.out_block = out_plane;
    r.clamp = ep.clamp;
    r.lo = ep.lo;
    r.hi = ep.hi;
    return r;
  };
  // The depth split (nchw16c_splits_depth; not when the output is also the
  // residual, which the partial sums would overwrite): a group's sum runs in
  // chunks of one tap and kSplitChunkBytes of weight, each chunk over all of
  // the unit range's rows of that group while it is in L1, partial sums in
  // `out` (same bits: the same chain, stored and reloaded exactly). The
  // weight is read once, as one stream whose next chunk the row kernels
  // prefetch while they multiply.
  if (split && (ep.residual == nullptr || ep.residual != out)) {
    const int64_t cbs = g.cin_blocks();
    for (int64_t grp = unit_first / rows; grp < groups && grp * rows < unit_last; ++grp) {
      const int64_t y0 = std::max(unit_first, grp * rows) - grp * rows;
      const int64_t y1 = std::min(unit_last, (grp + 1) * rows) - grp * rows;
      const int64_t nb = std::min<int64_t>(kNchw16cGroupBlocks, cob - grp * kNchw16cGroupBlocks);
      const int64_t cb_floats = kB * nb * kB;  // one input block's weight for the group
      const int64_t chunk = std::max<int64_t>(
          1, kSplitChunkBytes / (cb_floats * static_cast<int64_t>(sizeof(float))));
      const float* group_w = packed_w + grp * group_floats;
      for (int64_t t = 0; t < taps; ++t) {
        for (int64_t cb0 = 0; cb0 < cbs; cb0 += chunk) {
          const int64_t cbn = std::min(chunk, cbs - cb0);
          const float* w = group_w + (t * cbs + cb0) * cb_floats;
          const bool last = t == taps - 1 && cb0 + cbn == cbs;
          // The next chunk: this group's, or the next group's first.
          const float* next = !last               ? w + cbn * cb_floats
                              : grp + 1 < groups ? packed_w + (grp + 1) * group_floats
                                                 : nullptr;
          const int64_t lines =
              next == nullptr ? 0 : chunk * cb_floats * static_cast<int64_t>(sizeof(float)) / 64;
          const int64_t per_row = (lines + (y1 - y0) - 1) / (y1 - y0);
          for (int64_t y = y0; y < y1; ++y) {
            Nchw16cRow r = make_row(grp, y);
            r.tap_off = tap_off + t;
            r.taps = 1;
            r.in += cb0 * r.in_block;
            r.cin_blocks = cbn;
            r.w = w;
            r.accumulate = t != 0 || cb0 != 0;
            r.finish = last;
            const int64_t first = (y - y0) * per_row;
            if (next != nullptr && first < lines) {
              r.prefetch = reinterpret_cast<const char*>(next) + first * 64;
              r.prefetch_lines = std::min(per_row, lines - first);
            }
            row_fn(r);
          }
        }
      }
    }
    return;
  }
  for (int64_t u = unit_first; u < unit_last; ++u) {
    const int64_t grp = rows_outer ? u % groups : u / rows;
    const int64_t y = rows_outer ? u / groups : u % rows;
    row_fn(make_row(grp, y));
  }
}

// The reference the vector kernels are tested against: each output from
// zero, tap by tap and channel by channel (r.channels per block; the packed
// weight always has 16 rows a block) (products rounded: no FMA in the
// baseline build), then + bias, + residual, clamp; padded lanes of the last
// block written as zero.
void nchw16c_row_portable(const Nchw16cRow& r) {
  for (int64_t i = 0; i < r.n; ++i) {
    for (int32_t b = 0; b < r.blocks; ++b) {
      float acc[kB] = {};
      float* o = r.out + b * r.out_block + i * kB;
      if (r.accumulate) std::memcpy(acc, o, sizeof(acc));
      const float* w = r.w;
      for (int32_t t = 0; t < r.taps; ++t) {
        const float* x = r.in + i * r.in_step + r.tap_off[t];
        for (int64_t cb = 0; cb < r.cin_blocks; ++cb) {
          const float* xc = x + cb * r.in_block;
          for (int64_t c = 0; c < r.channels; ++c) {
            const float xv = xc[c * r.in_channel];
            const float* wr = w + (c * r.blocks + b) * kB;
            for (int64_t l = 0; l < kB; ++l) acc[l] += xv * wr[l];
          }
          w += kB * r.blocks * kB;
        }
      }
      if (!r.finish) {
        std::memcpy(o, acc, sizeof(acc));
        continue;
      }
      const float* res = r.residual != nullptr ? r.residual + b * r.out_block + i * kB : nullptr;
      const int32_t lanes = b == r.blocks - 1 ? r.last_lanes : static_cast<int32_t>(kB);
      for (int64_t l = 0; l < kB; ++l) {
        float v = acc[l] + r.bias[b * kB + l];
        if (res != nullptr) v += res[l];
        if (r.clamp) {  // NaN fails both tests and passes through
          if (v < r.lo) v = r.lo;
          if (v > r.hi) v = r.hi;
        }
        o[l] = l < lanes ? v : 0.0f;
      }
    }
  }
}

}  // namespace ember::kernels::portable
