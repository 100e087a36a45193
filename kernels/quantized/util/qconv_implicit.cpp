#include "kernels/quantized/util/qconv_implicit.h"

#include <cstring>

#include "kernels/portable/util/amx.h"
#include "kernels/portable/util/conv_phase_planes.h"
#include "kernels/portable/util/copy.h"
#include "kernels/quantized/util/qinterleave.h"
#include "kernels/quantized/util/qparams.h"

namespace ember::kernels::quantized {
namespace {

using namespace qgemm_detail;

// A block's activations (every channel group's rows around its columns) are
// sized to stay in L2 while every weight strip is multiplied by them.
constexpr int64_t kBlockBytes = 256 * 1024;

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }
size_t round64(size_t v) { return (v + 63) / 64 * 64; }

// The phase planes (in pixels, the last strip's overrun included), then the
// GEMM's blocking.
struct Plan : portable::ConvPhasePlanes {
  QGemmLayout layout;
  int64_t cg;         // Channel groups.
  int64_t kg;         // k groups: taps · cg.
  int64_t block_cols; // Columns per block (a multiple of nr).
  uint64_t rows_read;  // Bit r: some tap reads row phase r (all set past 64 phases).
  uint64_t cols_read;  // Bit c: some tap reads column phase c.
  size_t data_offset; // Scratch bytes before the activations (after the k groups' offsets).
  size_t tile_offset; // Scratch bytes before the per-task output tiles.
};

Plan make_plan(QGemmKind kind, const QConvGeometry& g) {
  Plan p;
  p.layout = qgemm_layout(kind);
  const int64_t group = p.layout.group;
  p.cg = (g.cin + group - 1) / group;
  static_cast<portable::ConvPhasePlanes&>(p) = portable::conv_phase_planes(
      g.oh, g.ow, g.kh, g.kw, g.sh, g.sw, g.dh, g.dw, p.layout.nr);
  const int64_t max_off = p.max_off;
  p.kg = g.kh * g.kw * p.cg;
  const int64_t column_bytes = p.cg * p.phases * group * p.layout.elem;
  int64_t cols = kBlockBytes / column_bytes - max_off;
  cols = cols / p.layout.nr * p.layout.nr;
  if (cols < p.layout.nr) cols = p.layout.nr;
  p.block_cols = cols;
  // A 1×1 stride-2 convolution reads one phase of four: the others are not copied.
  p.rows_read = g.sh > 64 ? ~uint64_t{0} : 0;
  p.cols_read = g.sw > 64 ? ~uint64_t{0} : 0;
  for (int64_t ky = 0; ky < g.kh && g.sh <= 64; ++ky) {
    p.rows_read |= uint64_t{1} << (ky * g.dh % g.sh);
  }
  for (int64_t kx = 0; kx < g.kw && g.sw <= 64; ++kx) {
    p.cols_read |= uint64_t{1} << (kx * g.dw % g.sw);
  }
  p.data_offset = round64(static_cast<size_t>(p.kg) * sizeof(int64_t));
  const size_t data_bytes =
      static_cast<size_t>(p.cg * p.phases * p.plane * group * p.layout.elem);
  p.tile_offset = p.data_offset + round64(data_bytes);
  return p;
}

// The tile buffer: one microkernel tile of int8 outputs, row-major (32 × 32
// at most: AMX's).
constexpr size_t kTileBytes = 32 * 32;

// Copies one channel group of the image into its phase planes.
// avx2: the int16 layout of the AVX2 kind, whose stride-1 rows pack in vectors.
template <typename Elem>
void fill_group(const Plan& p, const QConvGeometry& g, const int8_t* x, int32_t zx, int64_t c,
                Elem* base, bool avx2) {
  const int group = p.layout.group;
  const bool vnni = sizeof(Elem) == 1;
  const Elem pad = vnni ? static_cast<Elem>(static_cast<uint8_t>(zx) ^ 0x80u) : Elem{0};
  auto read = [](uint64_t mask, int64_t phase) { return phase >= 64 || (mask >> phase) & 1; };
  for (int64_t rp = 0; rp < g.sh; ++rp) {
    for (int64_t cp = 0; cp < g.sw; ++cp) {
      if (!read(p.rows_read, rp) || !read(p.cols_read, cp)) continue;
      Elem* plane = base + (rp * g.sw + cp) * p.plane * group;
      // The count in a local: stores through a byte pointer may alias the
      // plan, so GCC reloaded p.plane on every byte of this loop (80% of
      // the fill's time).
      const int64_t count = p.plane * group;
      if constexpr (sizeof(Elem) == 1) {
        std::memset(plane, static_cast<uint8_t>(pad), static_cast<size_t>(count));
      } else {
        for (int64_t i = 0; i < count; ++i) plane[i] = pad;
      }
    }
  }
  // The channels of this group; past cin, any real channel (its weights are 0).
  const int8_t* rows[4];
  for (int t = 0; t < group; ++t) {
    const int64_t ch = c * group + t < g.cin ? c * group + t : g.cin - 1;
    rows[t] = x + ch * g.ih * g.iw;
  }
  const int64_t cols = g.iw < p.wneed - g.pl ? g.iw : p.wneed - g.pl;  // Input columns read.
  // Row tails go through these (zeroed once: the bytes past a tail are
  // interleaved too, then dropped).
  alignas(16) int8_t tails[4][32] = {};
  alignas(16) uint8_t packed[128];
  for (int64_t iy = 0; iy < g.ih; ++iy) {
    const int64_t py = iy + g.pt;
    if (py >= p.hneed) break;
    if (!read(p.rows_read, py % g.sh)) continue;
    const int64_t row0 = (py % g.sh) * g.sw;  // Phase of this row's column 0.
    const int64_t r = py / g.sh;
    int64_t ix = 0;
    if constexpr (sizeof(Elem) == 1) {
      if (g.sw == 1) {
        // Whole runs of 32 pixels at once.
        Elem* d = base + (row0 * p.plane + r * p.wp + g.pl) * 4;
        for (; ix + 32 <= cols; ix += 32) {
          const int8_t* src[4] = {rows[0] + iy * g.iw + ix, rows[1] + iy * g.iw + ix,
                                  rows[2] + iy * g.iw + ix, rows[3] + iy * g.iw + ix};
          interleave4_x32_u8(src, d + ix * 4);
        }
        if (ix < cols) {
          // The last (cols − ix) < 32 pixels through a 32-pixel buffer: rows
          // of 28, 14 or 7 pixels would otherwise be all scalar tail.
          const int64_t left = cols - ix;
          const int8_t* src[4] = {tails[0], tails[1], tails[2], tails[3]};
          for (int t = 0; t < 4; ++t) {
            portable::copy_row_inline(tails[t], rows[t] + iy * g.iw + ix, left);
          }
          interleave4_x32_u8(src, packed);
          portable::copy_row_inline(d + ix * 4, packed, left * 4);
          ix = cols;
        }
      } else if (g.sw == 2) {
        // Runs of 64 columns, then of 32: split each channel's run into even
        // and odd columns, then interleave 32 (or 16) pixels of each column
        // phase at once. Column ix + pl of the padded row is pixel
        // (ix + pl) / 2 of phase (ix + pl) % 2.
        alignas(16) int8_t even[4][32], odd[4][32];
        const int8_t* ev[4] = {even[0], even[1], even[2], even[3]};
        const int8_t* od[4] = {odd[0], odd[1], odd[2], odd[3]};
        const int64_t pe0 = g.pl % 2, po0 = (g.pl + 1) % 2;  // Phases of even and odd columns.
        const bool even_read = read(p.cols_read, pe0), odd_read = read(p.cols_read, po0);
        for (int run = 64; run >= 32; run /= 2) {
          for (; ix + run <= cols; ix += run) {
            for (int t = 0; t < 4; ++t) {
              deinterleave2(rows[t] + iy * g.iw + ix, run, even[t], odd[t]);
            }
            Elem* de = base + ((row0 + pe0) * p.plane + r * p.wp + (ix + g.pl) / 2) * 4;
            Elem* dodd = base + ((row0 + po0) * p.plane + r * p.wp + (ix + 1 + g.pl) / 2) * 4;
            if (run == 64) {
              if (even_read) interleave4_u8<32>(ev, de);
              if (odd_read) interleave4_u8<32>(od, dodd);
            } else {
              if (even_read) interleave4_u8<16>(ev, de);
              if (odd_read) interleave4_u8<16>(od, dodd);
            }
          }
        }
        if (ix < cols) {
          // The last (cols − ix) < 32 columns through a 32-column buffer
          // (ix is even: column ix has the even columns' phase).
          const int64_t left = cols - ix;
          int8_t* tail = tails[0];
          for (int t = 0; t < 4; ++t) {
            portable::copy_row_inline(tail, rows[t] + iy * g.iw + ix, left);
            deinterleave2(tail, 32, even[t], odd[t]);
          }
          if (even_read) {
            interleave4_u8<16>(ev, packed);
            portable::copy_row_inline(
                base + ((row0 + pe0) * p.plane + r * p.wp + (ix + g.pl) / 2) * 4, packed,
                (left + 1) / 2 * 4);
          }
          if (odd_read && left > 1) {
            interleave4_u8<16>(od, packed);
            portable::copy_row_inline(
                base + ((row0 + po0) * p.plane + r * p.wp + (ix + 1 + g.pl) / 2) * 4, packed,
                left / 2 * 4);
          }
          ix = cols;
        }
      }
    } else {
      if (avx2 && g.sw == 1) {
        // Runs of 16 pixels of the group's two channels as int16 pairs, in
        // vectors; the rest below (through a buffer, a 7-wide row's cost
        // more than its scalar loop).
        Elem* d = base + (row0 * p.plane + r * p.wp + g.pl) * 2;
        const int8_t* r0 = rows[0] + iy * g.iw;
        const int64_t apart = rows[1] - rows[0];
        for (; ix + 16 <= cols; ix += 16) pack_planes2_x16_avx2(r0 + ix, apart, 1, 16, zx, d + ix * 2);
      } else if (avx2 && g.sw == 2) {
        // Runs of 32 columns: each channel's run split into its even and odd
        // columns, then 16 pixels of each column phase as int16 pairs in
        // vectors (this was the scalar loop below: ResNet-50's stride-2 3×3
        // layers ran 40% slower than stride-1 ones of the same size).
        alignas(16) int8_t even[2][16], odd[2][16];
        const int64_t pe0 = g.pl % 2, po0 = (g.pl + 1) % 2;  // Phases of even and odd columns.
        const bool even_read = read(p.cols_read, pe0), odd_read = read(p.cols_read, po0);
        for (; ix + 32 <= cols; ix += 32) {
          for (int t = 0; t < 2; ++t) deinterleave2(rows[t] + iy * g.iw + ix, 32, even[t], odd[t]);
          if (even_read) {
            pack_planes2_x16_avx2(even[0], 16, 1, 16, zx,
                                  base + ((row0 + pe0) * p.plane + r * p.wp + (ix + g.pl) / 2) * 2);
          }
          if (odd_read) {
            pack_planes2_x16_avx2(
                odd[0], 16, 1, 16, zx,
                base + ((row0 + po0) * p.plane + r * p.wp + (ix + 1 + g.pl) / 2) * 2);
          }
        }
        if (ix < cols) {
          // The last (cols − ix) < 32 columns through a 32-column buffer (ix
          // is even: column ix has the even columns' phase), as the VNNI form.
          const int64_t left = cols - ix;
          alignas(16) int8_t tail[2][32] = {};
          alignas(32) int16_t packed16[32];
          for (int t = 0; t < 2; ++t) {
            portable::copy_row_inline(tail[t], rows[t] + iy * g.iw + ix, left);
            deinterleave2(tail[t], 32, even[t], odd[t]);
          }
          if (even_read) {
            pack_planes2_x16_avx2(even[0], 16, 1, 16, zx, packed16);
            portable::copy_row_inline(
                base + ((row0 + pe0) * p.plane + r * p.wp + (ix + g.pl) / 2) * 2, packed16,
                (left + 1) / 2 * 2);
          }
          if (odd_read && left > 1) {
            pack_planes2_x16_avx2(odd[0], 16, 1, 16, zx, packed16);
            portable::copy_row_inline(
                base + ((row0 + po0) * p.plane + r * p.wp + (ix + 1 + g.pl) / 2) * 2, packed16,
                left / 2 * 2);
          }
          ix = cols;
        }
      }
    }
    for (; ix < cols; ++ix) {
      const int64_t pc = ix + g.pl;
      if (!read(p.cols_read, pc % g.sw)) continue;
      Elem* d = base + ((row0 + pc % g.sw) * p.plane + r * p.wp + pc / g.sw) * group;
      for (int t = 0; t < group; ++t) {
        const int8_t v = rows[t][iy * g.iw + ix];
        d[t] = vnni ? static_cast<Elem>(static_cast<uint8_t>(v) ^ 0x80u)
                    : static_cast<Elem>(static_cast<int16_t>(v) - static_cast<int16_t>(zx));
      }
    }
  }
}

// Copies a tile's valid outputs (columns inside the output's width) to out,
// without a library call per row piece (a 1×1 layer's tile is a few hundred
// cycles of sums; sixteen memcpy calls cost as much).
void scatter_tile(const Plan& p, const QConvGeometry& g, const QEpilogue& e, const int8_t* tile,
                  int64_t m0, int rows, int64_t n0) {
  const int nr = p.layout.nr;
  auto* out = static_cast<int8_t*>(e.c);
  int64_t j = 0;
  while (j < nr && n0 + j < p.n) {
    const int64_t n = n0 + j;
    const int64_t oy = n / p.wp, ox = n - oy * p.wp;
    int64_t run = p.wp - ox;
    if (run > nr - j) run = nr - j;
    const int64_t valid = g.ow - ox < run ? g.ow - ox : run;
    if (valid > 0) {
      for (int i = 0; i < rows; ++i) {
        portable::copy_row_inline(out + (m0 + i) * e.c_rs + oy * g.ow + ox, tile + i * nr + j,
                                  valid);
      }
    }
    j += run;
  }
}

template <typename AElem, typename BElem>
void run_kind(KernelContext& ctx, const QPackedWeights& w, const QConvGeometry& g,
              const int8_t* x, int32_t zx, const QEpilogue& e, void* scratch, const Plan& p) {
  auto* bytes = static_cast<uint8_t*>(scratch);
  auto* boff = reinterpret_cast<int64_t*>(bytes);
  auto* data = reinterpret_cast<BElem*>(bytes + p.data_offset);
  const int group = p.layout.group, mr = p.layout.mr, nr = p.layout.nr;
  for (int64_t ky = 0, k = 0; ky < g.kh; ++ky) {
    for (int64_t kx = 0; kx < g.kw; ++kx) {
      const int64_t ry = ky * g.dh, rx = kx * g.dw;
      const int64_t phase = (ry % g.sh) * g.sw + rx % g.sw;
      for (int64_t c = 0; c < p.cg; ++c, ++k) {
        boff[k] = ((c * p.phases + phase) * p.plane + (ry / g.sh) * p.wp + rx / g.sw) * group;
      }
    }
  }
  const int64_t threads = static_cast<int64_t>(ctx.threads());
  const int64_t group_elems = p.phases * p.plane * group;
  const bool avx2 = w.kind == QGemmKind::kAvx2;
  auto fill = [&](size_t t, int64_t tasks) {
    const int64_t begin = p.cg * static_cast<int64_t>(t) / tasks;
    const int64_t end = p.cg * (static_cast<int64_t>(t) + 1) / tasks;
    for (int64_t c = begin; c < end; ++c) fill_group<BElem>(p, g, x, zx, c, data + c * group_elems, avx2);
  };
  const int64_t fill_tasks = threads < p.cg ? threads : p.cg;
  if (fill_tasks <= 1) {
    fill(0, 1);
  } else {
    ctx.parallel_for(static_cast<size_t>(fill_tasks), [&](size_t t) { fill(t, fill_tasks); });
  }

  const int64_t n_strips = (p.n + nr - 1) / nr;
  const int64_t m_strips = (w.m + mr - 1) / mr;
  // Ties go to rows: the phase planes are shared, so each task then reads
  // only its share of the weights.
  const QSplit split = qsplit(m_strips, mr, n_strips, nr, p.block_cols / nr, threads, true);
  const bool amx = w.kind == QGemmKind::kAmx;
  const bool vnni = w.kind == QGemmKind::kAvx512Vnni || amx;
  const int32_t zshift = vnni ? -(128 + zx) : 0;
  // AMX: 16 consecutive k groups are one tap's 16 channel groups (cg is a
  // multiple of 16: qconv_amx_applies), a B tile whose rows are the channel
  // groups' planes, group_elems bytes apart.
  const int64_t group_stride = group_elems;
  const size_t a_strip = static_cast<size_t>(p.kg) * mr * group;
  const auto lo_zp = static_cast<float>(e.lo - e.zp), hi_zp = static_cast<float>(e.hi - e.zp);
  // Phase rows as wide as the output's (a 1×1 stride-2 layer, or a padded
  // image whose last column every tap reads): the flattened outputs are the
  // output's own, and tiles are stored in place.
  const bool in_place = p.wp == g.ow;
  auto task = [&](size_t t) {
    const portable::AmxTiles tiles(amx);
    auto* tile = reinterpret_cast<int8_t*>(bytes + p.tile_offset + t * kTileBytes);
    int64_t block_begin, block_end, strip_begin, strip_end;
    qsplit_task(split, m_strips, static_cast<int64_t>(t), &block_begin, &block_end, &strip_begin,
                &strip_end);
    alignas(64) int32_t acc[32 * 32];
    for (int64_t blk = block_begin; blk < block_end; ++blk) {
      const int64_t s_begin = blk * split.strips_per_block;
      const int64_t s_end = s_begin + split.strips_per_block < n_strips
                                ? s_begin + split.strips_per_block
                                : n_strips;
      for (int64_t ms = strip_begin; ms < strip_end; ++ms) {
        const AElem* a = static_cast<const AElem*>(w.data) + ms * a_strip;
        const int64_t m0 = ms * mr;
        const int rows = static_cast<int>(w.m - m0 < mr ? w.m - m0 : mr);
        for (int64_t s = s_begin; s < s_end; ++s) {
          const int64_t n0 = s * nr;
          const BElem* b = data + n0 * group;
          if constexpr (sizeof(BElem) == 1) {
            if (amx) {
              qs8_gemm_32x32_amx_at(p.kg, a, reinterpret_cast<const uint8_t*>(b), boff,
                                    group_stride, acc);
              const int cols = static_cast<int>(in_place && p.n - n0 < nr ? p.n - n0 : nr);
              const QTileStore ts{e.scale + m0, e.scale_mul, e.offset ? e.offset + m0 : nullptr,
                                  w.row_sums + m0, zshift, lo_zp, hi_zp, e.zp,
                                  in_place ? static_cast<int8_t*>(e.c) + m0 * e.c_rs + n0 : tile,
                                  in_place ? e.c_rs : nr};
              store_rows_int8_avx512(acc, ts, rows, cols);
              if (in_place) continue;
              scatter_tile(p, g, e, tile, m0, rows, n0);
              continue;
            }
            if (in_place) {
              const int cols = static_cast<int>(p.n - n0 < nr ? p.n - n0 : nr);
              const QTileStore ts{e.scale + m0, e.scale_mul, e.offset ? e.offset + m0 : nullptr,
                                  w.row_sums + m0, zshift, lo_zp, hi_zp, e.zp,
                                  static_cast<int8_t*>(e.c) + m0 * e.c_rs + n0, e.c_rs};
              qs8_gemm_8x32_avx512vnni_at_requant(p.kg, a, b, boff, ts, rows, cols);
              continue;
            }
            const QTileStore ts{e.scale + m0, e.scale_mul, e.offset ? e.offset + m0 : nullptr,
                                w.row_sums + m0, zshift, lo_zp, hi_zp, e.zp, tile, nr};
            qs8_gemm_8x32_avx512vnni_at_requant(p.kg, a, b, boff, ts, rows, nr);
          } else {
            if (w.kind == QGemmKind::kAvx2) {
              const QTileStore ts{e.scale + m0, e.scale_mul, e.offset ? e.offset + m0 : nullptr,
                                  w.row_sums + m0, zshift, lo_zp, hi_zp, e.zp,
                                  in_place ? static_cast<int8_t*>(e.c) + m0 * e.c_rs + n0 : tile,
                                  in_place ? e.c_rs : nr};
              qs8_gemm_6x16_avx2_at_requant(p.kg, a, b, boff, ts, rows,
                                            static_cast<int>(in_place && p.n - n0 < nr ? p.n - n0
                                                                                       : nr));
              if (in_place) continue;
            } else {
              qs8_gemm_6x16_baseline_at(p.kg, a, b, boff, acc);
              for (int i = 0; i < rows; ++i) {
                const int64_t m = m0 + i;
                const float sc = e.scale[m] * e.scale_mul;
                const float o = e.offset != nullptr ? e.offset[m] : 0.0f;
                for (int j = 0; j < nr; ++j) {
                  tile[i * nr + j] = requantize(static_cast<float>(acc[i * nr + j]) * sc + o,
                                                lo_zp, hi_zp, e.zp);
                }
              }
            }
          }
          scatter_tile(p, g, e, tile, m0, rows, n0);
        }
      }
    }
  };
  if (split.tasks <= 1) {
    task(0);
  } else {
    ctx.parallel_for(static_cast<size_t>(split.tasks), task);
  }
}

}  // namespace

bool qconv_amx_applies(int64_t cin) { return qgemm_amx_available() && cin % 64 == 0; }

size_t qconv_packed_bytes(QGemmKind kind, int64_t c_out, int64_t cin, int64_t kh, int64_t kw) {
  const QGemmLayout l = qgemm_layout(kind);
  const int64_t cg = (cin + l.group - 1) / l.group;
  return static_cast<size_t>(round_up(c_out, l.mr) * kh * kw * cg * l.group * l.elem);
}

QPackedWeights qconv_pack_weights(QGemmKind kind, const int8_t* w, int64_t c_out, int64_t cin,
                                  int64_t kh, int64_t kw, void* data, int32_t* row_sums) {
  const QGemmLayout l = qgemm_layout(kind);
  const int64_t cg = (cin + l.group - 1) / l.group;
  const int64_t taps = kh * kw, kg = taps * cg, k = cin * taps;
  QPackedWeights p;
  p.kind = kind;
  p.m = c_out;
  p.k = k;
  p.kp = kg * l.group;
  p.data = data;
  p.row_sums = row_sums;
  for (int64_t r = 0; r < c_out; ++r) {
    int32_t sum = 0;
    for (int64_t kk = 0; kk < k; ++kk) sum += w[r * k + kk];
    row_sums[r] = sum;
  }
  // Group gi is (tap, channel group); element t is channel c·G + t.
  qgemm_pack_strips(kind, c_out, kg, data, [&](int64_t r, int64_t gi, int t) {
    const int64_t tap = gi / cg, ch = gi % cg * l.group + t;
    return ch < cin ? w[(r * cin + ch) * taps + tap] : int8_t{0};
  });
  return p;
}

size_t qconv_scratch_bytes(const QPackedWeights& w, const QConvGeometry& g, size_t threads) {
  const Plan p = make_plan(w.kind, g);
  return p.tile_offset + kTileBytes * (threads < 1 ? 1 : threads);
}

void qconv_run(KernelContext& ctx, const QPackedWeights& w, const QConvGeometry& g,
               const int8_t* x, int32_t zx, const QEpilogue& e, void* scratch) {
  if (g.oh <= 0 || g.ow <= 0 || w.m <= 0) return;
  const Plan p = make_plan(w.kind, g);
  if (w.kind == QGemmKind::kAvx512Vnni || w.kind == QGemmKind::kAmx) {
    run_kind<int8_t, uint8_t>(ctx, w, g, x, zx, e, scratch, p);
  } else {
    run_kind<int16_t, int16_t>(ctx, w, g, x, zx, e, scratch, p);
  }
}

}  // namespace ember::kernels::quantized
