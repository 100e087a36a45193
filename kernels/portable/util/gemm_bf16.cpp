#include "kernels/portable/util/gemm_bf16.h"

#include "kernels/portable/util/amx.h"
#include "kernels/portable/util/cpu_isa.h"
#include "kernels/portable/util/gemm.h"
#include "kernels/portable/util/half.h"
#include "kernels/portable/util/parallel.h"

namespace ember::kernels::portable {

namespace {

// k pairs per block: an 8×32 tile's B slice (16 KiB) and A strip (4 KiB)
// stay in L1 across a block's row strips.
using bf16_detail::kKcp;
// Rows of A packed per block (72 KiB of words, L2): 4 and 8 divide it.
using bf16_detail::kMc;
using bf16_detail::epilogue;

bool host_has_avx512_bf16() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512bf16");
#else
  return false;
#endif
}

int tile_mr(Bf16GemmKind kind) {
  return kind == Bf16GemmKind::kAmx ? 32 : kind == Bf16GemmKind::kAvx512Bf16 ? 8 : 4;
}
int tile_nr(Bf16GemmKind kind) { return kind >= Bf16GemmKind::kAvx512Bf16 ? 32 : 16; }

// The AVX-512 kinds share the rounding loops and the epilogue.
Bf16GemmKind vector_kind(Bf16GemmKind kind) {
  return kind == Bf16GemmKind::kAmx ? Bf16GemmKind::kAvx512Bf16 : kind;
}

struct Bf16GemmArgs {
  int64_t m;
  const float* a;
  int64_t a_rs;
  int64_t a_cs;
  const Bf16PackedWeight* w;
  float* c;
  int64_t c_rs;
  const GemmEpilogue<float>* ep;
};

// Rounds rows [i0, i0 + mc) of A, k pairs [p0, p0 + kcp), into MR-row strips;
// rows past m and pairs past k (AMX's depth padding) are zero. A strip is
// pair-major, row fastest, or for the AMX tiles (kTiles) 16-pair chunks of
// kMR rows × 16 pairs, so that each 16-row tile is 1 KiB of consecutive words.
template <int kMR, bool kTiles>
void pack_a(const Bf16GemmArgs& g, int64_t i0, int64_t mc, int64_t p0, int64_t kcp,
            uint32_t* dst) {
  const int64_t k = g.w->k;
  const int64_t count = (2 * (p0 + kcp) < k ? 2 * (p0 + kcp) : k) - 2 * p0;
  const int64_t filled = (count + 1) / 2;
  const Bf16GemmKind kind = vector_kind(g.w->kind);
  if constexpr (kTiles) {
    for (int64_t s = 0; s < mc; s += kMR) {
      uint32_t* d = dst + s * kcp;
      alignas(64) uint32_t row[kKcp];
      for (int ii = 0; ii < kMR; ++ii) {
        if (s + ii < mc) {
          bf16_round_pairs(g.a + (i0 + s + ii) * g.a_rs + 2 * p0 * g.a_cs, count, g.a_cs, row,
                           kind);
          for (int64_t q = filled; q < kcp; ++q) row[q] = 0;
        } else {
          for (int64_t q = 0; q < kcp; ++q) row[q] = 0;
        }
        for (int64_t c0 = 0; c0 < kcp; c0 += 16) {
          uint32_t* t = d + c0 * kMR + ii * 16;
          for (int64_t q = 0; q < 16; ++q) t[q] = row[c0 + q];
        }
      }
    }
    return;
  }
  alignas(64) uint32_t rows[kMR][kKcp];
  for (int64_t s = 0; s < mc; s += kMR) {
    for (int ii = 0; ii < kMR; ++ii) {
      const int64_t i = i0 + s + ii;
      if (s + ii < mc) {
        bf16_round_pairs(g.a + i * g.a_rs + 2 * p0 * g.a_cs, count, g.a_cs, rows[ii], kind);
        for (int64_t q = filled; q < kcp; ++q) rows[ii][q] = 0;
      } else {
        for (int64_t q = 0; q < kcp; ++q) rows[ii][q] = 0;
      }
    }
    uint32_t* d = dst + s * kcp;
    for (int64_t q = 0; q < kcp; ++q) {
      for (int ii = 0; ii < kMR; ++ii) d[q * kMR + ii] = rows[ii][q];
    }
  }
}

// Rows [m0, m1) by column strips [s0, s1) of C: k-block-major, then row
// block, then weight strip (its k-block stays in L1 across the block's row
// strips). Each C element sums its k-blocks in order, whatever the split.
//
// The AMX microkernel's tiles are configured for the part (on its thread).
template <int kMR, int kNR, auto kMicro>
void run_part(const Bf16GemmArgs& g, int64_t m0, int64_t m1, int64_t s0, int64_t s1) {
  constexpr bool kTiles = kMR == 32;  // Only bf16_gemm_32x32_amx has 32-row tiles.
  constexpr int64_t kMcBlock = kTiles ? 128 : kMc;  // Whole 32-row strips.
  const AmxTiles tiles(kTiles);
  const Bf16PackedWeight& w = *g.w;
  const int64_t kp = bf16_packed_pairs(w.k, w.kind);
  alignas(64) uint32_t apack[kMc * kKcp];
  alignas(64) float tile[kMR * kNR];
  // Each tile's epilogue without the activation, which follows per block.
  GemmEpilogue<float> tile_ep{};
  if (g.ep != nullptr) {
    tile_ep = *g.ep;
    tile_ep.activate = false;
  }
  for (int64_t pc = 0; pc < kp; pc += kKcp) {
    const int64_t kcp = kp - pc < kKcp ? kp - pc : kKcp;
    const bool first = pc == 0;
    const bool last = pc + kcp == kp;
    for (int64_t ic = m0; ic < m1; ic += kMcBlock) {
      const int64_t mc = m1 - ic < kMcBlock ? m1 - ic : kMcBlock;
      pack_a<kMR, kTiles>(g, ic, mc, pc, kcp, apack);
      for (int64_t s = s0; s < s1; ++s) {
        const int64_t j0 = s * kNR;
        const int64_t nr = w.n - j0 < kNR ? w.n - j0 : kNR;
        const uint32_t* bp = w.data + s * kp * kNR + pc * kNR;
        // A model's weights come from memory once per call, and AMX's tile
        // loads stall on them: the next strip's k-block is prefetched into
        // L2, a share before each row strip (Xeon, BERT's 128 × 3072 × 768
        // from memory: 373 → 478 GFLOP/s on AMX, one row 951 → 780 µs).
        const uint32_t* next = s + 1 < s1 ? bp + kp * kNR : nullptr;
        const int64_t next_lines = kcp * kNR / 16;
        const int64_t row_strips = (mc + kMR - 1) / kMR;
        const int64_t lines_per_strip = (next_lines + row_strips - 1) / row_strips;
        for (int64_t ir = 0; ir < mc; ir += kMR) {
          const int64_t mr = mc - ir < kMR ? mc - ir : kMR;
          float* ct = g.c + (ic + ir) * g.c_rs + j0;
          const uint32_t* ap = apack + ir * kcp;
          const int64_t l0 = ir / kMR * lines_per_strip;
          const int64_t l1 = l0 + lines_per_strip < next_lines ? l0 + lines_per_strip : next_lines;
          if constexpr (kTiles) {
            // On AMX the share is requested a few lines per k chunk inside
            // the block (a burst before it filled the line fill buffers).
            if (mr == kMR && nr == kNR) {
              bf16_gemm_32x32_amx_pf(kcp, ap, bp, ct, g.c_rs, !first,
                                     next != nullptr && l0 < l1 ? next + l0 * 16 : nullptr,
                                     next != nullptr && l0 < l1 ? l1 - l0 : 0);
              if (last && g.ep != nullptr) {
                epilogue(w.kind, tile_ep.at(ic + ir, j0), mr, nr, ct, g.c_rs);
              }
              continue;
            }
          }
          if (next != nullptr) {
            for (int64_t l = l0; l < l1; ++l) __builtin_prefetch(next + l * 16, 0, 2);
          }
          if (mr == kMR && nr == kNR) {
            kMicro(kcp, ap, bp, ct, g.c_rs, !first);
          } else {
            kMicro(kcp, ap, bp, tile, kNR, false);
            for (int64_t i = 0; i < mr; ++i) {
              float* row = ct + i * g.c_rs;
              const float* t = tile + i * kNR;
              if (first) {
                for (int64_t j = 0; j < nr; ++j) row[j] = t[j];
              } else {
                for (int64_t j = 0; j < nr; ++j) row[j] += t[j];
              }
            }
          }
          if (last && g.ep != nullptr) {
            epilogue(w.kind, tile_ep.at(ic + ir, j0), mr, nr, ct, g.c_rs);
          }
        }
      }
      // The activation (GELU) on the finished row block, whole rows of the
      // part's columns at once: per 32-column tile its span loops cost more
      // than the activation (gemm.h's BlockActivation).
      if (last && g.ep != nullptr && g.ep->activate) {
        const int64_t j0 = s0 * kNR, j1 = s1 * kNR < w.n ? s1 * kNR : w.n;
        g.ep->activate_block(mc, j1 - j0, g.c + ic * g.c_rs + j0, g.c_rs, 1);
      }
    }
  }
}

template <int kMR, int kNR, auto kMicro>
void run(KernelContext& ctx, const Bf16GemmArgs& g) {
  const int64_t strips = (g.w->n + kNR - 1) / kNR;
  if (g.m * g.w->n * g.w->k < kGemmParallelMinMacs || ctx.threads() <= 1) {
    run_part<kMR, kNR, kMicro>(g, 0, g.m, 0, strips);
    return;
  }
  // Split the way whose busiest thread has fewer elements of C (as
  // gemm_parallel); rows go in units of 48 (a multiple of the 4- and 8-row
  // tiles; 64 for AMX's 32), so a thread's strips are the strips one thread
  // would make and each row's sums round the same way.
  constexpr int64_t kMUnit = kMR == 32 ? 64 : 48;
  const int64_t threads = static_cast<int64_t>(ctx.threads());
  auto busiest = [threads](int64_t total, int64_t unit, int64_t units) {
    const int64_t tasks = units < threads ? units : threads;
    const int64_t most = (units + tasks - 1) / tasks * unit;
    return most < total ? most : total;
  };
  const int64_t by_n = busiest(g.w->n, kNR, strips) * g.m;
  const int64_t by_m = busiest(g.m, kMUnit, (g.m + kMUnit - 1) / kMUnit) * g.w->n;
  if (by_n <= by_m) {
    parallel_range(ctx, strips, 1, 1, [&](int64_t first, int64_t last) {
      run_part<kMR, kNR, kMicro>(g, 0, g.m, first, last);
    });
  } else {
    parallel_range(ctx, g.m, kMUnit, kMUnit, [&](int64_t first, int64_t last) {
      run_part<kMR, kNR, kMicro>(g, first, last, 0, strips);
    });
  }
}

// W's pair q of row j as one word; zero past n or k.
uint32_t pair_word(const uint16_t* w, int64_t n, int64_t k, int64_t w_rs, int64_t w_cs, int64_t j,
                   int64_t q) {
  if (j >= n || 2 * q >= k) return 0;
  uint32_t word = w[j * w_rs + 2 * q * w_cs];
  if (2 * q + 1 < k) word |= static_cast<uint32_t>(w[j * w_rs + (2 * q + 1) * w_cs]) << 16;
  return word;
}

// Strips of `tile` rows of W (n × k), kp k pairs each (zero past k), pair by
// pair, row fastest.
void pack_pairs(const uint16_t* w, int64_t n, int64_t k, int64_t w_rs, int64_t w_cs, int64_t tile,
                int64_t kp, uint32_t* dst) {
  for (int64_t j0 = 0; j0 < n; j0 += tile) {
    uint32_t* strip = dst + j0 * kp;
    for (int64_t q = 0; q < kp; ++q) {
      for (int64_t jj = 0; jj < tile; ++jj) {
        strip[q * tile + jj] = pair_word(w, n, k, w_rs, w_cs, j0 + jj, q);
      }
    }
  }
}

// AMX's A layout: strips of 32 rows, each kp pairs as 16-pair chunks of
// 32 rows × 16 words.
void pack_rows_amx(const uint16_t* w, int64_t n, int64_t k, int64_t w_rs, int64_t w_cs,
                   int64_t kp, uint32_t* dst) {
  for (int64_t j0 = 0; j0 < n; j0 += 32) {
    uint32_t* strip = dst + j0 * kp;
    for (int64_t c0 = 0; c0 < kp; c0 += 16) {
      for (int64_t jj = 0; jj < 32; ++jj) {
        for (int64_t q = 0; q < 16; ++q) {
          strip[c0 * 32 + jj * 16 + q] = pair_word(w, n, k, w_rs, w_cs, j0 + jj, c0 + q);
        }
      }
    }
  }
}

}  // namespace

namespace bf16_detail {

void epilogue(Bf16GemmKind kind, const GemmEpilogue<float>& ep, int64_t mr, int64_t nr, float* c,
              int64_t c_rs) {
  if (f32_epilogue_vectorisable(ep, 1)) {
    if (kind >= Bf16GemmKind::kAvx512Bf16) {
      f32_epilogue_avx512f(ep, mr, nr, c, c_rs);
      return;
    }
    if (kind == Bf16GemmKind::kAvx2) {
      f32_epilogue_avx2(ep, mr, nr, c, c_rs);
      return;
    }
  }
  ep.apply(mr, nr, c, c_rs, 1);
}

}  // namespace bf16_detail

Bf16GemmKind bf16_gemm_kind() {
  static const Bf16GemmKind kind = [] {
    if (cpu_isa() >= Isa::kAmx && host_has_avx512_bf16()) return Bf16GemmKind::kAmx;
    if (cpu_isa() >= Isa::kAvx512 && host_has_avx512_bf16()) return Bf16GemmKind::kAvx512Bf16;
    if (cpu_isa() >= Isa::kAvx2) return Bf16GemmKind::kAvx2;
    return Bf16GemmKind::kBaseline;
  }();
  return kind;
}

bool bf16_gemm_kind_available(Bf16GemmKind kind) {
  switch (kind) {
    case Bf16GemmKind::kBaseline: return true;
    case Bf16GemmKind::kAvx2: return host_isa() >= Isa::kAvx2;
    case Bf16GemmKind::kAvx512Bf16: return host_isa() >= Isa::kAvx512 && host_has_avx512_bf16();
    case Bf16GemmKind::kAmx: return host_isa() >= Isa::kAmx && host_has_avx512_bf16();
  }
  return false;
}

const char* bf16_gemm_kind_name(Bf16GemmKind kind) {
  switch (kind) {
    case Bf16GemmKind::kBaseline: return "baseline";
    case Bf16GemmKind::kAvx2: return "avx2";
    case Bf16GemmKind::kAvx512Bf16: return "avx512bf16";
    case Bf16GemmKind::kAmx: return "amx";
  }
  return "?";
}

int64_t bf16_packed_pairs(int64_t k, Bf16GemmKind kind) {
  const int64_t kp = (k + 1) / 2;
  return kind == Bf16GemmKind::kAmx ? (kp + 15) / 16 * 16 : kp;
}

int64_t bf16_packed_weight_words(int64_t n, int64_t k, Bf16GemmKind kind) {
  const int64_t nr = tile_nr(kind);
  return (n + nr - 1) / nr * nr * bf16_packed_pairs(k, kind);
}

Bf16PackedWeight bf16_pack_weight(const uint16_t* w, int64_t n, int64_t k, int64_t w_rs,
                                  int64_t w_cs, Bf16GemmKind kind, uint32_t* dst) {
  pack_pairs(w, n, k, w_rs, w_cs, tile_nr(kind), bf16_packed_pairs(k, kind), dst);
  return Bf16PackedWeight{dst, n, k, kind};
}

int64_t bf16_packed_rows_words(int64_t m, int64_t k, Bf16GemmKind kind) {
  const int64_t mr = tile_mr(kind);
  return (m + mr - 1) / mr * mr * bf16_packed_pairs(k, kind);
}

Bf16PackedWeight bf16_pack_weight_rows(const uint16_t* w, int64_t m, int64_t k, int64_t w_rs,
                                       int64_t w_cs, Bf16GemmKind kind, uint32_t* dst) {
  const int64_t kp = bf16_packed_pairs(k, kind);
  if (kind == Bf16GemmKind::kAmx) {
    pack_rows_amx(w, m, k, w_rs, w_cs, kp, dst);
  } else {
    pack_pairs(w, m, k, w_rs, w_cs, tile_mr(kind), kp, dst);
  }
  return Bf16PackedWeight{dst, m, k, kind};
}

void bf16_gemm(KernelContext& ctx, int64_t m, const float* a, int64_t a_rs, int64_t a_cs,
               const Bf16PackedWeight& w, float* c, int64_t c_rs,
               const GemmEpilogue<float>* ep) {
  if (m <= 0 || w.n <= 0) return;
  if (ep != nullptr && ep->empty()) ep = nullptr;
  if (w.k <= 0) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < w.n; ++j) c[i * c_rs + j] = 0.0f;
    }
    if (ep != nullptr) ep->apply(m, w.n, c, c_rs, 1);
    return;
  }
  const Bf16GemmArgs g{m, a, a_rs, a_cs, &w, c, c_rs, ep};
  switch (w.kind) {
    case Bf16GemmKind::kAmx:
      // The AMX weight is the AVX512-BF16 layout with zero pairs appended.
      if (m < kBf16AmxMinRows) {
        run<8, 32, bf16_gemm_8x32_avx512bf16>(ctx, g);
      } else {
        run<32, 32, bf16_gemm_32x32_amx>(ctx, g);
      }
      return;
    case Bf16GemmKind::kAvx512Bf16: run<8, 32, bf16_gemm_8x32_avx512bf16>(ctx, g); return;
    case Bf16GemmKind::kAvx2: run<4, 16, bf16_gemm_4x16_avx2_fma>(ctx, g); return;
    case Bf16GemmKind::kBaseline: run<4, 16, bf16_gemm_4x16_baseline>(ctx, g); return;
  }
}

void bf16_gemm_4x16_baseline(int64_t kp, const uint32_t* a, const uint32_t* b, float* c,
                             int64_t c_rs, bool accumulate) {
  float acc[4][16];
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 16; ++j) acc[i][j] = accumulate ? c[i * c_rs + j] : 0.0f;
  }
  for (int64_t q = 0; q < kp; ++q) {
    float be[16], bo[16];
    for (int j = 0; j < 16; ++j) {
      be[j] = bits_float(b[q * 16 + j] << 16);
      bo[j] = bits_float(b[q * 16 + j] & 0xffff0000u);
    }
    for (int i = 0; i < 4; ++i) {
      const float ae = bits_float(a[q * 4 + i] << 16);
      const float ao = bits_float(a[q * 4 + i] & 0xffff0000u);
      for (int j = 0; j < 16; ++j) acc[i][j] = (acc[i][j] + ae * be[j]) + ao * bo[j];
    }
  }
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 16; ++j) c[i * c_rs + j] = acc[i][j];
  }
}

namespace bf16_detail {
// The vectorised stride-1 loops (gemm_bf16_avx2.cpp, gemm_bf16_avx512.cpp):
// each handles a multiple of its width and returns how many floats it took.
int64_t round_pairs_avx2(const float* src, int64_t count, uint32_t* words);
int64_t round_pairs_avx512(const float* src, int64_t count, uint32_t* words);
int64_t round_row_pairs_avx2(const float* r0, const float* r1, int64_t n, uint32_t* words);
int64_t round_row_pairs_avx512(const float* r0, const float* r1, int64_t n, uint32_t* words);
}  // namespace bf16_detail

void bf16_round_pairs(const float* src, int64_t count, int64_t stride, uint32_t* words,
                      Bf16GemmKind kind) {
  int64_t done = 0;
  kind = vector_kind(kind);
  if (stride == 1 && kind == Bf16GemmKind::kAvx512Bf16) {
    done = bf16_detail::round_pairs_avx512(src, count, words);
  } else if (stride == 1 && kind == Bf16GemmKind::kAvx2) {
    done = bf16_detail::round_pairs_avx2(src, count, words);
  }
  for (int64_t e = done; e < count; e += 2) {
    uint32_t word = BFloat16::from_float(src[e * stride]);
    if (e + 1 < count) word |= static_cast<uint32_t>(BFloat16::from_float(src[(e + 1) * stride])) << 16;
    words[e / 2] = word;
  }
}

void bf16_round_row_pairs(const float* r0, const float* r1, int64_t n, uint32_t* words,
                          Bf16GemmKind kind) {
  int64_t done = 0;
  kind = vector_kind(kind);
  if (kind == Bf16GemmKind::kAvx512Bf16) {
    done = bf16_detail::round_row_pairs_avx512(r0, r1, n, words);
  } else if (kind == Bf16GemmKind::kAvx2) {
    done = bf16_detail::round_row_pairs_avx2(r0, r1, n, words);
  }
  for (int64_t j = done; j < n; ++j) {
    uint32_t word = BFloat16::from_float(r0[j]);
    if (r1 != nullptr) word |= static_cast<uint32_t>(BFloat16::from_float(r1[j])) << 16;
    words[j] = word;
  }
}

}  // namespace ember::kernels::portable
