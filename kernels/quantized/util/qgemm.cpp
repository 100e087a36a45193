#include "kernels/quantized/util/qgemm.h"

#include <cstring>
#include <type_traits>

#include "kernels/portable/util/amx.h"
#include "kernels/portable/util/cpu_isa.h"
#include "kernels/quantized/util/qinterleave.h"

namespace ember::kernels::quantized {

using portable::cpu_isa;
using portable::Isa;

namespace qgemm_detail {

bool host_has_avx512_vnni() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw");
#else
  return false;
#endif
}

void qs8_gemm_6x16_baseline(int64_t kg, const int16_t* a, const int16_t* b, int32_t* acc) {
  int32_t sum[6][16] = {};
  for (int64_t g = 0; g < kg; ++g) {
    const int16_t* ag = a + g * 6 * 2;
    const int16_t* bg = b + g * 16 * 2;
    for (int i = 0; i < 6; ++i) {
      const int32_t a0 = ag[i * 2], a1 = ag[i * 2 + 1];
      for (int j = 0; j < 16; ++j) sum[i][j] += a0 * bg[j * 2] + a1 * bg[j * 2 + 1];
    }
  }
  std::memcpy(acc, sum, sizeof(sum));
}

void qs8_gemm_6x16_baseline_at(int64_t kg, const int16_t* a, const int16_t* b,
                               const int64_t* boff, int32_t* acc) {
  int32_t sum[6][16] = {};
  for (int64_t g = 0; g < kg; ++g) {
    const int16_t* ag = a + g * 6 * 2;
    const int16_t* bg = b + boff[g];
    for (int i = 0; i < 6; ++i) {
      const int32_t a0 = ag[i * 2], a1 = ag[i * 2 + 1];
      for (int j = 0; j < 16; ++j) sum[i][j] += a0 * bg[j * 2] + a1 * bg[j * 2 + 1];
    }
  }
  std::memcpy(acc, sum, sizeof(sum));
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

QSplit qsplit(int64_t m_strips, int mr, int64_t n_strips, int nr, int64_t max_strips_per_block,
              int64_t threads, bool rows_on_tie) {
  QSplit s{};
  if (max_strips_per_block < 1) max_strips_per_block = 1;
  const int64_t cache_blocks = ceil_div(n_strips, max_strips_per_block);
  if (threads <= 1 || (n_strips <= 1 && m_strips <= 1)) {
    s.blocks = cache_blocks;
    s.strips_per_block = ceil_div(n_strips, s.blocks);
    s.tasks = 1;
    return s;
  }
  // By columns: a multiple of the threads' count of blocks, as even as strips allow.
  int64_t blocks = ceil_div(cache_blocks, threads) * threads;
  if (blocks > n_strips) blocks = n_strips;
  const int64_t spb = ceil_div(n_strips, blocks);
  blocks = ceil_div(n_strips, spb);
  const int64_t col_tasks = blocks < threads ? blocks : threads;
  const int64_t busiest_cols = ceil_div(blocks, col_tasks) * spb * nr * (m_strips * mr);
  const int64_t row_tasks = m_strips < threads ? m_strips : threads;
  const int64_t busiest_rows = ceil_div(m_strips, row_tasks) * mr * (n_strips * nr);
  if (busiest_rows < busiest_cols || (rows_on_tie && busiest_rows == busiest_cols)) {
    s.blocks = cache_blocks;
    s.strips_per_block = ceil_div(n_strips, s.blocks);
    s.tasks = row_tasks;
    s.by_rows = true;
  } else {
    s.blocks = blocks;
    s.strips_per_block = spb;
    s.tasks = col_tasks;
  }
  return s;
}

void qsplit_task(const QSplit& s, int64_t m_strips, int64_t t, int64_t* b0, int64_t* b1,
                 int64_t* m0, int64_t* m1) {
  if (s.by_rows) {
    *b0 = 0;
    *b1 = s.blocks;
    *m0 = m_strips * t / s.tasks;
    *m1 = m_strips * (t + 1) / s.tasks;
  } else {
    *b0 = s.blocks * t / s.tasks;
    *b1 = s.blocks * (t + 1) / s.tasks;
    *m0 = 0;
    *m1 = m_strips;
  }
}

}  // namespace qgemm_detail

namespace {

using namespace qgemm_detail;

// Activation blocks are sized to stay in L2 (with the weight strip in L1)
// while the strips of one block are multiplied by every weight strip.
constexpr int64_t kBlockBytes = 192 * 1024;

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// Packs one strip (nr columns starting at column n0, valid `cols`) of
// activations into dst: kg groups of nr × group elements.
template <typename Elem, int kGroup>
struct StripPacker {
  const QActivations& x;
  int64_t k;   // Real depth.
  int64_t kg;  // Groups (depth padded to kGroup).
  int nr;
  bool vnni;   // uint8 = x + 128; else int16 = x − zx.
  bool avx2;   // The AVX2 kind: its 1×1 strips pack in vectors.

  Elem convert(int8_t v) const {
    if constexpr (sizeof(Elem) == 1) {
      return static_cast<Elem>(static_cast<uint8_t>(v) ^ 0x80u);
    } else {
      return static_cast<Elem>(static_cast<int16_t>(v) - static_cast<int16_t>(x.zx));
    }
  }

  void pack_rows(int64_t n0, int64_t cols, Elem* dst) const {
    const int8_t pad = static_cast<int8_t>(x.zx);
    const Elem pad_c = convert(pad);
    for (int j = 0; j < nr; ++j) {
      Elem* d = dst + j * kGroup;
      if (j >= cols) {
        for (int64_t g = 0; g < kg; ++g) {
          for (int t = 0; t < kGroup; ++t) d[g * nr * kGroup + t] = pad_c;
        }
        continue;
      }
      const int8_t* src = x.x + (n0 + j) * x.ld;
      const int64_t full = k / kGroup;
      if constexpr (sizeof(Elem) == 1 && kGroup == 4) {
        // One 32-bit move per group: 4 consecutive k of one token.
        for (int64_t g = 0; g < full; ++g) {
          uint32_t v;
          std::memcpy(&v, src + g * 4, 4);
          v ^= 0x80808080u;
          std::memcpy(d + g * nr * 4, &v, 4);
        }
      } else {
        for (int64_t g = 0; g < full; ++g) {
          for (int t = 0; t < kGroup; ++t) d[g * nr * kGroup + t] = convert(src[g * kGroup + t]);
        }
      }
      for (int64_t g = full; g < kg; ++g) {
        for (int t = 0; t < kGroup; ++t) {
          const int64_t kk = g * kGroup + t;
          d[g * nr * kGroup + t] = convert(kk < k ? src[kk] : pad);
        }
      }
    }
  }

  // Row `kk` of the im2col matrix over columns [n0, n0 + cols) into row[0, nr).
  void conv_row(int64_t kk, int64_t n0, int64_t cols, int8_t* row) const {
    const int8_t pad = static_cast<int8_t>(x.zx);
    if (kk >= k) {
      std::memset(row, static_cast<uint8_t>(pad), static_cast<size_t>(nr));
      return;
    }
    const int64_t kx = kk % x.kw;
    const int64_t ky = (kk / x.kw) % x.kh;
    const int64_t ci = kk / (x.kw * x.kh);
    int64_t j = 0;
    int64_t n = n0;
    while (j < cols) {
      const int64_t oy = n / x.ow;
      const int64_t ox = n - oy * x.ow;
      int64_t run = x.ow - ox;
      if (run > cols - j) run = cols - j;
      const int64_t iy = oy * x.stride_h - x.pad_h + ky * x.dil_h;
      if (iy < 0 || iy >= x.ih) {
        std::memset(row + j, static_cast<uint8_t>(pad), static_cast<size_t>(run));
      } else {
        const int8_t* src = x.x + (ci * x.ih + iy) * x.iw;
        const int64_t ix0 = ox * x.stride_w - x.pad_w + kx * x.dil_w;
        if (x.stride_w == 1) {
          // Padding on the left, a contiguous run, padding on the right.
          int64_t t = 0;
          for (; t < run && ix0 + t < 0; ++t) row[j + t] = pad;
          int64_t copy_end = x.iw - ix0;
          if (copy_end > run) copy_end = run;
          if (copy_end > t) {
            std::memcpy(row + j + t, src + ix0 + t, static_cast<size_t>(copy_end - t));
            t = copy_end;
          }
          for (; t < run; ++t) row[j + t] = pad;
        } else {
          for (int64_t t = 0; t < run; ++t) {
            const int64_t ix = ix0 + t * x.stride_w;
            row[j + t] = (ix >= 0 && ix < x.iw) ? src[ix] : pad;
          }
        }
      }
      j += run;
      n += run;
    }
    if (cols < nr) {
      std::memset(row + cols, static_cast<uint8_t>(pad), static_cast<size_t>(nr - cols));
    }
  }

  void pack_conv(int64_t n0, int64_t cols, Elem* dst) const {
    alignas(16) int8_t rows[kGroup][64];
    if constexpr (sizeof(Elem) == 1 && kGroup == 4) {
      if (nr == 32) {
        // A 1×1 stride-1 unpadded convolution reads its rows in place.
        const bool direct = x.kh == 1 && x.kw == 1 && x.stride_h == 1 && x.stride_w == 1 &&
                            x.pad_h == 0 && x.pad_w == 0;
        const int64_t plane = x.ih * x.iw;
        int64_t g = 0;
        if (direct) {
          g = k / 4;  // Whole groups of real channels.
          pack_planes4_x32_vnni(x.x + n0, plane, g, static_cast<int>(cols),
                                static_cast<int8_t>(x.zx), reinterpret_cast<uint8_t*>(dst));
        }
        for (; g < kg; ++g) {
          const int8_t* r[4];
          for (int t = 0; t < 4; ++t) {
            const int64_t kk = g * 4 + t;
            if (direct && kk < k && cols == nr) {
              r[t] = x.x + kk * plane + n0;
            } else {
              conv_row(kk, n0, cols, rows[t]);
              r[t] = rows[t];
            }
          }
          interleave4_x32_u8(r, reinterpret_cast<uint8_t*>(dst) + g * 128);
        }
        return;
      }
    }
    int64_t g0 = 0;
    if constexpr (sizeof(Elem) == 2 && kGroup == 2) {
      if (avx2 && nr == 16 && x.kh == 1 && x.kw == 1 && x.stride_h == 1 && x.stride_w == 1 &&
          x.pad_h == 0 && x.pad_w == 0) {
        // A 1×1 stride-1 unpadded convolution reads its rows in place.
        g0 = k / 2;  // Whole pairs of real channels.
        pack_planes2_x16_avx2(x.x + n0, x.ih * x.iw, g0, static_cast<int>(cols), x.zx, dst);
      }
    }
    for (int64_t g = g0; g < kg; ++g) {
      for (int t = 0; t < kGroup; ++t) conv_row(g * kGroup + t, n0, cols, rows[t]);
      Elem* d = dst + g * nr * kGroup;
      for (int j = 0; j < nr; ++j) {
        for (int t = 0; t < kGroup; ++t) d[j * kGroup + t] = convert(rows[t][j]);
      }
    }
  }

  void pack(int64_t n0, int64_t cols, Elem* dst) const {
    if (x.kind == QActivations::Kind::kRows) {
      pack_rows(n0, cols, dst);
    } else {
      pack_conv(n0, cols, dst);
    }
  }
};

// One tile's values, value(float(acc + corr) · s + o) per row, then the
// valid part stored: rows at once when columns are contiguous, else column
// by column (a linear layer's output is tokens × channels).
template <typename T, typename F>
void store_tile_as(const QEpilogue& e, const int32_t* row_sums, int32_t zshift,
                   const int32_t* acc, int nr, int64_t m0, int rows, int64_t n0, int cols,
                   F value) {
  T tile[32 * 32];
  for (int i = 0; i < rows; ++i) {
    const int64_t m = m0 + i;
    const int32_t corr = zshift * row_sums[m];
    const float s = e.scale[m] * e.scale_mul;
    const float o = e.offset != nullptr ? e.offset[m] : 0.0f;
    const int32_t* a = acc + i * nr;
    T* t = tile + i * nr;
    for (int j = 0; j < nr; ++j) t[j] = value(static_cast<float>(a[j] + corr) * s + o);
  }
  T* c = static_cast<T*>(e.c);
  if (e.c_cs == 1) {
    for (int i = 0; i < rows; ++i) {
      std::memcpy(c + (m0 + i) * e.c_rs + n0, tile + i * nr, static_cast<size_t>(cols) * sizeof(T));
    }
  } else {
    for (int j = 0; j < cols; ++j) {
      T* d = c + m0 * e.c_rs + (n0 + j) * e.c_cs;
      for (int i = 0; i < rows; ++i) d[i * e.c_rs] = tile[i * nr + j];
    }
  }
}

// Requantises (or scales) one tile's sums and stores the valid part.
void store_tile(const QEpilogue& e, const int32_t* row_sums, int32_t zshift, const int32_t* acc,
                int nr, int64_t m0, int rows, int64_t n0, int cols) {
  if (e.float_out) {
    store_tile_as<float>(e, row_sums, zshift, acc, nr, m0, rows, n0, cols,
                         [](float v) { return v; });
    return;
  }
  const float lo = static_cast<float>(e.lo - e.zp);
  const float hi = static_cast<float>(e.hi - e.zp);
  const int32_t zp = e.zp;
  store_tile_as<int8_t>(e, row_sums, zshift, acc, nr, m0, rows, n0, cols,
                        [lo, hi, zp](float v) { return requantize(v, lo, hi, zp); });
}

struct Plan {
  QGemmLayout layout;
  int64_t kg;
  int64_t block_cols;   // Columns per activation block (a multiple of nr).
  size_t block_bytes;   // Packed bytes of one block.
};

Plan make_plan(const QPackedWeights& w, int64_t n) {
  Plan p;
  p.layout = qgemm_layout(w.kind);
  p.kg = w.kp / p.layout.group;
  const int64_t strip_bytes = p.kg * p.layout.nr * p.layout.group * p.layout.elem;
  int64_t strips = strip_bytes > 0 ? kBlockBytes / strip_bytes : 1;
  if (strips < 1) strips = 1;
  const int64_t needed = (n + p.layout.nr - 1) / p.layout.nr;
  if (strips > needed) strips = needed < 1 ? 1 : needed;
  p.block_cols = strips * p.layout.nr;
  p.block_bytes = static_cast<size_t>(strips * strip_bytes);
  return p;
}

template <typename AElem, typename BElem, int kGroup, typename Micro>
void run_kind(KernelContext& ctx, const QPackedWeights& w, const QActivations& x,
              const QEpilogue& e, void* scratch, const Plan& p, Micro micro) {
  const int mr = p.layout.mr, nr = p.layout.nr;
  const int64_t m_strips = (w.m + mr - 1) / mr;
  const QSplit split = qsplit(m_strips, mr, (x.n + nr - 1) / nr, nr, p.block_cols / nr,
                              static_cast<int64_t>(ctx.threads()));
  const int64_t block_cols = split.strips_per_block * nr;
  const bool unsigned_x = w.kind == QGemmKind::kAvx512Vnni || w.kind == QGemmKind::kAmx;
  const int32_t zshift = unsigned_x ? -(128 + x.zx) : 0;
  const StripPacker<BElem, kGroup> packer{x, w.k, p.kg, nr, unsigned_x,
                                          w.kind == QGemmKind::kAvx2};
  const size_t a_strip = static_cast<size_t>(p.kg) * mr * kGroup;
  const size_t b_strip = static_cast<size_t>(p.kg) * nr * kGroup;
  // The VNNI and AVX2 microkernels store int8 rows themselves (the common
  // convolution case).
  const bool fused_store = (w.kind == QGemmKind::kAvx512Vnni || w.kind == QGemmKind::kAvx2) &&
                           !e.float_out && e.c_cs == 1;
  const auto lo_zp = static_cast<float>(e.lo - e.zp), hi_zp = static_cast<float>(e.hi - e.zp);
  const bool amx = w.kind == QGemmKind::kAmx;
  const bool amx_int8_rows = amx && !e.float_out && e.c_cs == 1;
  auto task = [&](size_t t) {
    const portable::AmxTiles tiles(amx);
    BElem* bpack = reinterpret_cast<BElem*>(static_cast<uint8_t*>(scratch) + t * p.block_bytes);
    int64_t block_begin, block_end, strip_begin, strip_end;
    qsplit_task(split, m_strips, static_cast<int64_t>(t), &block_begin, &block_end, &strip_begin,
                &strip_end);
    alignas(64) int32_t acc[32 * 32];
    for (int64_t blk = block_begin; blk < block_end; ++blk) {
      const int64_t c0 = blk * block_cols;
      int64_t ccount = x.n - c0;
      if (ccount > block_cols) ccount = block_cols;
      const int64_t nstrips = (ccount + nr - 1) / nr;
      for (int64_t s = 0; s < nstrips; ++s) {
        const int64_t cols = ccount - s * nr < nr ? ccount - s * nr : nr;
        packer.pack(c0 + s * nr, cols, bpack + s * b_strip);
      }
      for (int64_t ms = strip_begin; ms < strip_end; ++ms) {
        const AElem* a = static_cast<const AElem*>(w.data) + ms * a_strip;
        const int64_t m0 = ms * mr;
        const int rows = static_cast<int>(w.m - m0 < mr ? w.m - m0 : mr);
        for (int64_t s = 0; s < nstrips; ++s) {
          const int cols = static_cast<int>(ccount - s * nr < nr ? ccount - s * nr : nr);
          if (fused_store) {
            const QTileStore ts{e.scale + m0, e.scale_mul, e.offset ? e.offset + m0 : nullptr,
                                w.row_sums + m0, zshift, lo_zp, hi_zp, e.zp,
                                static_cast<int8_t*>(e.c) + m0 * e.c_rs + c0 + s * nr, e.c_rs};
            if constexpr (std::is_same_v<BElem, uint8_t>) {
              qs8_gemm_8x32_avx512vnni_requant(p.kg, a, bpack + s * b_strip, ts, rows, cols);
            } else {
              qs8_gemm_6x16_avx2_requant(p.kg, a, bpack + s * b_strip, ts, rows, cols);
            }
            continue;
          }
          micro(p.kg, a, bpack + s * b_strip, acc);
          if (amx_int8_rows) {
            const QTileStore ts{e.scale + m0, e.scale_mul, e.offset ? e.offset + m0 : nullptr,
                                w.row_sums + m0, zshift, lo_zp, hi_zp, e.zp,
                                static_cast<int8_t*>(e.c) + m0 * e.c_rs + c0 + s * nr, e.c_rs};
            store_rows_int8_avx512(acc, ts, rows, cols);
            continue;
          }
          store_tile(e, w.row_sums, zshift, acc, nr, m0, rows, c0 + s * nr, cols);
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

QGemmKind qgemm_kind() {
  static const QGemmKind kind = [] {
    const Isa isa = cpu_isa();
    if (isa >= Isa::kAvx512 && host_has_avx512_vnni()) return QGemmKind::kAvx512Vnni;
    if (isa >= Isa::kAvx2) return QGemmKind::kAvx2;
    return QGemmKind::kBaseline;
  }();
  return kind;
}

bool qgemm_amx_available() { return cpu_isa() >= Isa::kAmx && host_has_avx512_vnni(); }

bool qgemm_amx_pays(int64_t m, int64_t k) {
  if (!qgemm_amx_available() || m < 1 || k < 1) return false;
  const int64_t padded = (m + 31) / 32 * 32 * ((k + 63) / 64 * 64);
  return 2 * padded <= 3 * m * k;
}

const char* qgemm_kind_name(QGemmKind kind) {
  switch (kind) {
    case QGemmKind::kBaseline: return "baseline";
    case QGemmKind::kAvx2: return "avx2";
    case QGemmKind::kAvx512Vnni: return "avx512vnni";
    case QGemmKind::kAmx: return "amx";
  }
  return "unknown";
}

QGemmLayout qgemm_layout(QGemmKind kind) {
  if (kind == QGemmKind::kAmx) return {32, 32, 4, 1, 64};
  if (kind == QGemmKind::kAvx512Vnni) return {8, 32, 4, 1, 4};
  return {6, 16, 2, 2, 2};
}

size_t qgemm_packed_bytes(QGemmKind kind, int64_t m, int64_t k) {
  const QGemmLayout l = qgemm_layout(kind);
  return static_cast<size_t>(round_up(m, l.mr) * round_up(k, l.kalign) * l.elem);
}

QPackedWeights qgemm_pack_weights(QGemmKind kind, const int8_t* w, int64_t m, int64_t k,
                                  int64_t row_stride, void* data, int32_t* row_sums) {
  const QGemmLayout l = qgemm_layout(kind);
  QPackedWeights p;
  p.kind = kind;
  p.m = m;
  p.k = k;
  p.kp = round_up(k, l.kalign);
  p.data = data;
  p.row_sums = row_sums;
  const int64_t kg = p.kp / l.group;
  for (int64_t r = 0; r < m; ++r) {
    int32_t sum = 0;
    for (int64_t kk = 0; kk < k; ++kk) sum += w[r * row_stride + kk];
    row_sums[r] = sum;
  }
  qgemm_pack_strips(kind, m, kg, data, [&](int64_t r, int64_t g, int t) {
    const int64_t kk = g * l.group + t;
    return kk < k ? w[r * row_stride + kk] : int8_t{0};
  });
  return p;
}

size_t qgemm_scratch_bytes(const QPackedWeights& w, int64_t n, size_t threads) {
  if (n <= 0) return 0;
  return make_plan(w, n).block_bytes * (threads < 1 ? 1 : threads);
}

void qgemm_run(KernelContext& ctx, const QPackedWeights& w, const QActivations& x,
               const QEpilogue& e, void* scratch) {
  if (x.n <= 0 || w.m <= 0) return;
  const Plan p = make_plan(w, x.n);
  switch (w.kind) {
    case QGemmKind::kAmx:
      run_kind<int8_t, uint8_t, 4>(ctx, w, x, e, scratch, p, qs8_gemm_32x32_amx);
      return;
    case QGemmKind::kAvx512Vnni:
      run_kind<int8_t, uint8_t, 4>(ctx, w, x, e, scratch, p, qs8_gemm_8x32_avx512vnni);
      return;
    case QGemmKind::kAvx2:
      run_kind<int16_t, int16_t, 2>(ctx, w, x, e, scratch, p, qs8_gemm_6x16_avx2);
      return;
    case QGemmKind::kBaseline:
      run_kind<int16_t, int16_t, 2>(ctx, w, x, e, scratch, p, qs8_gemm_6x16_baseline);
      return;
  }
}

}  // namespace ember::kernels::quantized
