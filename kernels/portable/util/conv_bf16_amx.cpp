#include "kernels/portable/util/conv_bf16_amx.h"

#include <cstring>

#include "kernels/portable/util/amx.h"
#include "kernels/portable/util/conv_phase_planes.h"
#include "kernels/portable/util/gemm_bf16.h"

#if defined(__x86_64__) && defined(__linux__) && (defined(__GNUC__) || defined(__clang__))
#define EMBER_CONV_BF16_AMX 1
#include "kernels/portable/util/amx_block.h"
#else
#define EMBER_CONV_BF16_AMX 0
#endif

namespace ember::kernels::portable {
namespace {

constexpr int64_t kStrip = 32;  // Output channels per weight strip, positions per block.
constexpr int64_t kPairs = 16;  // Channel pairs per k chunk (one tile row of 64 bytes).
constexpr int64_t kChannels = 2 * kPairs;
// Positions per task unit: a unit's B rows (every chunk's) are read for each
// of its weight strips, so several 32-position blocks share them.
constexpr int64_t kUnitBlocks = 4;

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }
size_t round64(size_t v) { return (v + 63) / 64 * 64; }

// The phase planes (plane rounded to whole 64-byte rows), then the k chunks.
struct Plan : ConvPhasePlanes {
  int64_t pairs, groups, taps, chunks;
  size_t act_bytes, offsets_bytes, row_bytes;
};

Plan make_plan(const ConvBf16AmxGeometry& g) {
  Plan p;
  static_cast<ConvPhasePlanes&>(p) =
      conv_phase_planes(g.oh, g.ow, g.kh, g.kw, g.sh, g.sw, g.dh, g.dw, kStrip);
  p.plane = round_up(p.plane, 16);
  p.pairs = g.cin / 2;
  p.groups = g.cin / kChannels;
  p.taps = g.kh * g.kw;
  p.chunks = p.taps * p.groups;
  p.act_bytes = round64(static_cast<size_t>(p.pairs * p.phases * p.plane) * 4);
  p.offsets_bytes = round64(static_cast<size_t>(p.chunks) * sizeof(int64_t));
  p.row_bytes = round64(static_cast<size_t>(g.iw) * 4);
  return p;
}

// Pair q's rows into its phase planes (zero elsewhere): each value rounded
// to bf16 once. The planes are cleared whole first: one memset per plane
// costs less than one per gap between rows (qconv_implicit does the same).
// `row`: iw words of scratch.
void fill_pair(const ConvBf16AmxGeometry& g, const Plan& p, const float* x, int64_t q,
               uint32_t* act, uint32_t* row, Bf16GemmKind kind) {
  uint32_t* planes = act + q * p.phases * p.plane;
  std::memset(planes, 0, static_cast<size_t>(p.phases * p.plane) * 4);
  const float* c0 = x + 2 * q * g.ih * g.iw;
  const float* c1 = c0 + g.ih * g.iw;
  // Columns an output reads: padded column px = ix + pl below wneed.
  int64_t cols = p.wneed - g.pl;
  if (cols > g.iw) cols = g.iw;
  for (int64_t iy = 0; iy < g.ih; ++iy) {
    const int64_t py = iy + g.pt;
    if (py >= p.hneed || cols <= 0) continue;
    uint32_t* base = planes + (py % g.sh) * g.sw * p.plane + (py / g.sh) * p.wp;
    if (g.sw == 1) {
      bf16_round_row_pairs(c0 + iy * g.iw, c1 + iy * g.iw, cols, base + g.pl, kind);
      continue;
    }
    bf16_round_row_pairs(c0 + iy * g.iw, c1 + iy * g.iw, cols, row, kind);
    // Column phase px of the padded row: input columns ix0, ix0 + sw, ...
    for (int64_t px = 0; px < g.sw; ++px) {
      const int64_t ix0 = ((px - g.pl) % g.sw + g.sw) % g.sw;
      uint32_t* dst = base + px * p.plane + (ix0 + g.pl) / g.sw;
      for (int64_t ix = ix0, j = 0; ix < cols; ix += g.sw, ++j) dst[j] = row[ix];
    }
  }
}

// The finished 32×32 block (acc, 32 floats per row) of output channels
// m0.. and flattened positions n0..: the columns that are outputs go to out,
// then the epilogue on each run of them within an output row.
void store_block(const ConvBf16AmxGeometry& g, const Plan& p, const float* acc, int64_t m0,
                 int64_t rows, int64_t n0, const GemmEpilogue<float>* ep, float* out) {
  const int64_t plane_out = g.oh * g.ow;
  int64_t n = n0;
  const int64_t end = n0 + kStrip < p.n ? n0 + kStrip : p.n;
  while (n < end) {
    const int64_t oy = n / p.wp, ox = n % p.wp;
    if (ox >= g.ow) {
      n += p.wp - ox;  // Past the output's columns: to the next row.
      continue;
    }
    int64_t len = g.ow - ox;
    if (len > end - n) len = end - n;
    const int64_t at = oy * g.ow + ox;
    for (int64_t i = 0; i < rows; ++i) {
      std::memcpy(out + (m0 + i) * plane_out + at, acc + i * kStrip + (n - n0),
                  static_cast<size_t>(len) * sizeof(float));
    }
    // The bf16 GEMM's epilogue (vectorised where the host allows).
    if (ep != nullptr) {
      bf16_detail::epilogue(Bf16GemmKind::kAmx, ep->at(m0, at), rows, len,
                            out + m0 * plane_out + at, plane_out);
    }
    n += len;
  }
}

#if EMBER_CONV_BF16_AMX

EMBER_TARGET_AMX void block_amx(int64_t chunks, const uint32_t* a, const uint32_t* act,
                                const int64_t* offsets, int64_t n0, int64_t b_rs, float* acc) {
  amx_block_32x32<AmxProduct::kBf16>(
      chunks, [a](int64_t i) { return a + i * kStrip * kPairs; }, 64, 16 * 64,
      [act, offsets, n0](int64_t i) { return act + offsets[i] + n0; }, b_rs, acc, kStrip * 4,
      false);
}

#endif

}  // namespace

bool conv_bf16_amx_applies(int64_t cin, int64_t groups, int64_t kh, int64_t kw) {
  return EMBER_CONV_BF16_AMX && bf16_gemm_kind() == Bf16GemmKind::kAmx && groups == 1 &&
         cin > 0 && cin % kChannels == 0 && kh * kw > 1;
}

size_t conv_bf16_amx_weight_bytes(int64_t cout, int64_t cin, int64_t kh, int64_t kw) {
  const int64_t chunks = kh * kw * (cin / kChannels);
  return static_cast<size_t>(round_up(cout, kStrip) * chunks * kPairs) * 4;
}

ConvBf16AmxWeights conv_bf16_amx_pack(const uint16_t* w, int64_t cout, int64_t cin, int64_t kh,
                                      int64_t kw, void* memory) {
  const int64_t taps = kh * kw, groups = cin / kChannels, chunks = taps * groups;
  auto* d = static_cast<uint32_t*>(memory);
  for (int64_t s = 0; s < round_up(cout, kStrip) / kStrip; ++s) {
    for (int64_t i = 0; i < chunks; ++i) {
      const int64_t t = i / groups, grp = i % groups;
      uint32_t* tile = d + (s * chunks + i) * kStrip * kPairs;
      for (int64_t r = 0; r < kStrip; ++r) {
        const int64_t m = s * kStrip + r;
        for (int64_t j = 0; j < kPairs; ++j) {
          uint32_t word = 0;
          if (m < cout) {
            const int64_t c = grp * kChannels + 2 * j;
            word = static_cast<uint32_t>(w[(m * cin + c) * taps + t]) |
                   static_cast<uint32_t>(w[(m * cin + c + 1) * taps + t]) << 16;
          }
          tile[r * kPairs + j] = word;
        }
      }
    }
  }
  return {d, cout, cin, kh, kw};
}

size_t conv_bf16_amx_scratch_bytes(const ConvBf16AmxGeometry& g, size_t threads) {
  const Plan p = make_plan(g);
  return p.act_bytes + p.offsets_bytes + p.row_bytes * threads;
}

void conv_bf16_amx_run(KernelContext& ctx, const ConvBf16AmxWeights& w,
                       const ConvBf16AmxGeometry& g, const float* x,
                       const GemmEpilogue<float>* ep, float* out, void* scratch) {
#if EMBER_CONV_BF16_AMX
  const Plan p = make_plan(g);
  auto* act = static_cast<uint32_t*>(scratch);
  auto* offsets =
      reinterpret_cast<int64_t*>(static_cast<uint8_t*>(scratch) + p.act_bytes);
  auto* rows_scratch = static_cast<uint8_t*>(scratch) + p.act_bytes + p.offsets_bytes;
  if (ep != nullptr && ep->empty()) ep = nullptr;
  // Chunk i (tap t = i / groups, channel group i % groups): its B tile's
  // first row, in words from act, before the block's first position.
  for (int64_t i = 0; i < p.chunks; ++i) {
    const int64_t t = i / p.groups, grp = i % p.groups;
    const int64_t ry = (t / g.kw) * g.dh, rx = (t % g.kw) * g.dw;
    const int64_t phase = (ry % g.sh) * g.sw + rx % g.sw;
    offsets[i] = (grp * kPairs * p.phases + phase) * p.plane + (ry / g.sh) * p.wp + rx / g.sw;
  }
  const Bf16GemmKind kind = bf16_gemm_kind();
  int64_t fill_tasks = static_cast<int64_t>(ctx.threads());
  if (fill_tasks > p.pairs) fill_tasks = p.pairs;
  auto fill = [&](size_t t) {
    auto* row = reinterpret_cast<uint32_t*>(rows_scratch + t * p.row_bytes);
    const int64_t begin = p.pairs * static_cast<int64_t>(t) / fill_tasks;
    const int64_t end = p.pairs * (static_cast<int64_t>(t) + 1) / fill_tasks;
    for (int64_t q = begin; q < end; ++q) fill_pair(g, p, x, q, act, row, kind);
  };
  if (fill_tasks <= 1) {
    fill(0);
  } else {
    ctx.parallel_for(static_cast<size_t>(fill_tasks), fill);
  }
  // Units: kUnitBlocks blocks of 32 positions × one weight strip, the strips
  // of a position range consecutive (so a task's units share B rows).
  const int64_t strips = round_up(w.cout, kStrip) / kStrip;
  const int64_t ranges = (p.n + kStrip * kUnitBlocks - 1) / (kStrip * kUnitBlocks);
  const int64_t units = ranges * strips;
  int64_t tasks = static_cast<int64_t>(ctx.threads());
  if (tasks > units) tasks = units;
  const int64_t b_rs = p.phases * p.plane * 4;
  const int64_t strip_words = p.chunks * kStrip * kPairs;
  auto run = [&](size_t t) {
    const AmxTiles tiles(true);
    alignas(64) float acc[kStrip * kStrip];
    const int64_t begin = units * static_cast<int64_t>(t) / tasks;
    const int64_t end = units * (static_cast<int64_t>(t) + 1) / tasks;
    for (int64_t u = begin; u < end; ++u) {
      const int64_t range = u / strips, s = u % strips;
      const int64_t m0 = s * kStrip;
      const int64_t rows = w.cout - m0 < kStrip ? w.cout - m0 : kStrip;
      for (int64_t b = 0; b < kUnitBlocks; ++b) {
        const int64_t n0 = (range * kUnitBlocks + b) * kStrip;
        if (n0 >= p.n) break;
        block_amx(p.chunks, w.data + s * strip_words, act, offsets, n0, b_rs, acc);
        store_block(g, p, acc, m0, rows, n0, ep, out);
      }
    }
  };
  if (tasks <= 1) {
    run(0);
  } else {
    ctx.parallel_for(static_cast<size_t>(tasks), run);
  }
#else
  (void)ctx, (void)w, (void)g, (void)x, (void)ep, (void)out, (void)scratch;
#endif
}

}  // namespace ember::kernels::portable
