// Integer GEMM for the fused quantized ops (op_quantized_linear.cpp,
// op_quantized_conv2d.cpp):
//
//   acc[m][n] = Σ_k W[m][k] · (X[k][n] − zx)             (exact, int32)
//   C[m][n]   = requantised or scaled acc (QEpilogue)
//
// W is an int8 weight matrix (M output channels × K), packed once at prepare
// (qgemm_pack_weights); X holds int8 activations with zero point zx, packed
// per call by a source (linear rows, or convolution windows) into the
// microkernel's layout. Three microkernels, chosen once per process by
// qgemm_kind():
//   - kAvx512Vnni: qs8_gemm_8x32_avx512vnni, VPDPBUSD on groups of 4 k. It
//     multiplies unsigned by signed bytes, so activations are packed as
//     x + 128 (uint8) and each row's Σ_k W[m][k] · (128 + zx) is subtracted
//     in the epilogue (row_sums, computed at pack time);
//   - kAvx2: qs8_gemm_6x16_avx2, VPMADDWD on pairs of k with both operands
//     widened to int16 (x − zx fits int16; VPMADDUBSW would saturate);
//   - kBaseline: the same int16 layout and a plain loop.
// A fourth, kAmx (qs8_gemm_32x32_amx: TDPBSUD on AMX tiles, the VNNI kind's
// activations and epilogue arithmetic), is never qgemm_kind()'s answer: ops
// ask for it where it pays (op_quantized_conv2d: its 1×1 layers, and
// qconv_implicit.h's convolutions with channels in whole 64s) when
// qgemm_amx_available(). Its weights are 32-row strips stored as chunks of
// 16 groups × 32 rows × 4 bytes (one 1 KiB A tile per 16 rows), k padded
// to 64; a 32-column activation strip is two B tiles (rows 128 bytes apart).
// All kinds give the same int32 sums (exact arithmetic), so their outputs are
// bit-identical; tests compare them on every host level (EMBER_ISA caps it).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/quantized/util/qparams.h"
#include "runtime/kernel/kernel_context.h"

namespace ember::kernels::quantized {

enum class QGemmKind : uint8_t { kBaseline = 0, kAvx2 = 1, kAvx512Vnni = 2, kAmx = 3 };

/// The microkernel family this process runs: AVX-512 VNNI when cpu_isa() is
/// avx512 and the host has VNNI, AVX2 when cpu_isa() is at least avx2.
QGemmKind qgemm_kind();

/// True when the kAmx kind runs here (cpu_isa() is amx).
bool qgemm_amx_available();

/// True when kAmx runs here and pays for an M × K weight: its 32-row strips
/// and 64-deep k padding add at most half again to the multiply-adds. More
/// padding runs slower than VNNI (MobileNetV2's 16- to 32-channel 1×1
/// layers: 1.3–2× slower on the tiles).
bool qgemm_amx_pays(int64_t m, int64_t k);

/// "baseline", "avx2", "avx512vnni" or "amx".
const char* qgemm_kind_name(QGemmKind kind);

/// Tile and packing layout of one kind.
struct QGemmLayout {
  int mr;       // Rows of W per microkernel tile.
  int nr;       // Columns of X per tile.
  int group;    // k values packed together (4 for VNNI, 2 for int16 pairs).
  int elem;     // Bytes per packed element (1: int8/uint8, 2: int16).
  int kalign;   // k is padded to a multiple of this (the group; 64 for AMX's tiles).
};
QGemmLayout qgemm_layout(QGemmKind kind);

/// Weights packed for one kind: ceil(M/mr) strips of mr rows, each
/// kp/group × mr × group elements (k padded with zeros to kp); kAmx orders
/// a strip's groups chunk by chunk of 16 (see above).
struct QPackedWeights {
  QGemmKind kind = QGemmKind::kBaseline;
  int64_t m = 0;
  int64_t k = 0;
  int64_t kp = 0;               // k rounded up to the layout's group.
  const void* data = nullptr;
  const int32_t* row_sums = nullptr;  // Σ_k W[m][k], per row.
};

/// Bytes of packed data for an m×k weight matrix.
size_t qgemm_packed_bytes(QGemmKind kind, int64_t m, int64_t k);

/// Writes the packed layout of `kind` for m rows and kg k groups into
/// `data`: element t of group g of row r is value(r, g, t) (which returns 0
/// for the padding: r >= m, or a k past the real depth).
template <typename F>
void qgemm_pack_strips(QGemmKind kind, int64_t m, int64_t kg, void* data, F value) {
  const QGemmLayout l = qgemm_layout(kind);
  const int64_t strips = (m + l.mr - 1) / l.mr;
  const bool tiles = kind == QGemmKind::kAmx;
  for (int64_t s = 0; s < strips; ++s) {
    for (int64_t g = 0; g < kg; ++g) {
      for (int i = 0; i < l.mr; ++i) {
        const int64_t r = s * l.mr + i;
        for (int t = 0; t < l.group; ++t) {
          const int8_t v = r < m ? value(r, g, t) : int8_t{0};
          const int64_t at =
              tiles ? s * kg * l.mr * 4 + (g / 16) * (l.mr * 64) + i * 64 + (g % 16) * 4 + t
                    : ((s * kg + g) * l.mr + i) * l.group + t;
          if (l.elem == 1) {
            static_cast<int8_t*>(data)[at] = v;
          } else {
            static_cast<int16_t*>(data)[at] = v;
          }
        }
      }
    }
  }
}

/// Packs W (row m at w + m·row_stride, k contiguous int8 values) into `data`
/// (qgemm_packed_bytes bytes) and its row sums into `row_sums` (m values).
QPackedWeights qgemm_pack_weights(QGemmKind kind, const int8_t* w, int64_t m, int64_t k,
                                  int64_t row_stride, void* data, int32_t* row_sums);

/// What happens to each tile's sums. Row m's value is
///   v = float(acc + zshift · row_sums[m]) · (scale[m] · scale_mul) + offset[m]
/// (offset null: 0). With int8 output: clamp(round_half_even(v), lo − zp, hi − zp) + zp.
/// With float output: v. C[m][n] lives at c + m·c_rs + n·c_cs (elements).
struct QEpilogue {
  const float* scale = nullptr;
  float scale_mul = 1.0f;
  const float* offset = nullptr;
  bool float_out = false;
  int32_t zp = 0;
  int32_t lo = -128;
  int32_t hi = 127;
  void* c = nullptr;
  int64_t c_rs = 0;
  int64_t c_cs = 0;
};

/// Activations for one GEMM: X[k][n] for k < K, n < N, int8 with zero point zx.
/// `rows`: X[k][n] = x[n·ld + k] (a linear layer's input, tokens × K).
/// `conv`: X[(ci·kh + ky)·kw + kx][oy·ow + ox] = x[ci][iy][ix] with
///   iy = oy·stride_h − pad_h + ky·dil_h (likewise ix), zx where outside.
struct QActivations {
  enum class Kind : uint8_t { kRows, kConv } kind = Kind::kRows;
  const int8_t* x = nullptr;
  int32_t zx = 0;
  int64_t n = 0;
  // kRows
  int64_t ld = 0;
  // kConv (one image and one group: x points at its first input channel)
  int64_t channels = 0, ih = 0, iw = 0, kh = 0, kw = 0, oh = 0, ow = 0;
  int64_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dil_h = 1, dil_w = 1;
};

/// Scratch bytes qgemm_run needs with `threads` threads.
size_t qgemm_scratch_bytes(const QPackedWeights& w, int64_t n, size_t threads);

/// C = epilogue(W · (X − zx)). `scratch` holds qgemm_scratch_bytes(w, x.n,
/// ctx.threads()) bytes. Splits the work over ctx's thread pool.
void qgemm_run(KernelContext& ctx, const QPackedWeights& w, const QActivations& x,
               const QEpilogue& e, void* scratch);

namespace qgemm_detail {

/// Microkernels: acc (mr × nr int32, row-major) = Σ over kg groups of the
/// packed A strip times the packed B strip.
void qs8_gemm_6x16_baseline(int64_t kg, const int16_t* a, const int16_t* b, int32_t* acc);
void qs8_gemm_6x16_avx2(int64_t kg, const int16_t* a, const int16_t* b, int32_t* acc);
void qs8_gemm_8x32_avx512vnni(int64_t kg, const int8_t* a, const uint8_t* b, int32_t* acc);
/// kAmx: acc 32 × 32; kg a multiple of 16; the tiles configured (AmxTiles).
void qs8_gemm_32x32_amx(int64_t kg, const int8_t* a, const uint8_t* b, int32_t* acc);
/// The same with group g's 128 bytes of activations at b + boff[g], 16
/// consecutive groups (from a multiple of 16) group_stride bytes apart: one
/// B tile per 16 columns (qconv_implicit.h).
void qs8_gemm_32x32_amx_at(int64_t kg, const int8_t* a, const uint8_t* b, const int64_t* boff,
                           int64_t group_stride, int32_t* acc);

/// The same with group g's activations at b + boff[g] (elements) instead of
/// packed one after another (qconv_implicit.h reads them in place).
void qs8_gemm_6x16_baseline_at(int64_t kg, const int16_t* a, const int16_t* b,
                               const int64_t* boff, int32_t* acc);
void qs8_gemm_6x16_avx2_at(int64_t kg, const int16_t* a, const int16_t* b, const int64_t* boff,
                           int32_t* acc);

/// One tile's int8 epilogue (QEpilogue with rows along m, columns contiguous):
/// pointers already at the tile's first row and column.
struct QTileStore {
  const float* scale;
  float scale_mul;
  const float* offset;  // May be null.
  const int32_t* row_sums;
  int32_t zshift;
  float lo, hi;  // lo − zp, hi − zp
  int32_t zp;
  int8_t* c;
  int64_t c_rs;
};

/// qs8_gemm_8x32_avx512vnni with the int8 epilogue applied in registers and
/// `rows` × `cols` of the tile stored (bit-identical to store_tile's).
void qs8_gemm_8x32_avx512vnni_requant(int64_t kg, const int8_t* a, const uint8_t* b,
                                      const QTileStore& t, int rows, int cols);
void qs8_gemm_8x32_avx512vnni_at_requant(int64_t kg, const int8_t* a, const uint8_t* b,
                                         const int64_t* boff, const QTileStore& t, int rows,
                                         int cols);

/// The int8 epilogue of `rows` × `cols` of kAmx's 32×32 sums (acc, rows of
/// 32, without the row corrections), 8 rows at a time as
/// qs8_gemm_8x32_avx512vnni_requant stores them (the same bits).
void store_rows_int8_avx512(const int32_t* acc, const QTileStore& t, int rows, int cols);

/// qs8_gemm_6x16_avx2 with the int8 epilogue applied in vectors and `rows` ×
/// `cols` of the tile stored (bit-identical to store_tile's).
void qs8_gemm_6x16_avx2_requant(int64_t kg, const int16_t* a, const int16_t* b,
                                const QTileStore& t, int rows, int cols);
void qs8_gemm_6x16_avx2_at_requant(int64_t kg, const int16_t* a, const int16_t* b,
                                   const int64_t* boff, const QTileStore& t, int rows, int cols);

/// How a GEMM of m_strips × n_strips tiles is shared by `threads` tasks.
/// Columns come in blocks of at most max_strips_per_block strips (a block's
/// activations stay in L2). Either each task takes whole blocks with every
/// weight strip (by columns: the block count is a multiple of the task
/// count, so the tasks get the same number of strips, give or take one per
/// block), or each takes a share of the weight strips over every block (by
/// rows), whichever leaves the busiest task fewer outputs; on a tie, by
/// columns unless rows_on_tie (the implicit convolution: its activations are
/// filled once for every task, so by rows each task reads half the weights
/// and packs nothing twice; ResNet-50 int8's 3×3 layers on 7×7: −15% at 2
/// threads, where 1×1 layers, which pack per task, lost 3–15%).
struct QSplit {
  int64_t blocks;            // Column blocks.
  int64_t strips_per_block;  // The last block may have fewer.
  int64_t tasks;
  bool by_rows;
};
QSplit qsplit(int64_t m_strips, int mr, int64_t n_strips, int nr, int64_t max_strips_per_block,
              int64_t threads, bool rows_on_tie = false);

/// Task t's blocks and weight strips under s: [*b0, *b1) and [*m0, *m1).
void qsplit_task(const QSplit& s, int64_t m_strips, int64_t t, int64_t* b0, int64_t* b1,
                 int64_t* m0, int64_t* m1);

/// The VNNI layout of `groups` k groups of a 32-column strip whose rows
/// are channel planes read in place: group g's element t of column j is
/// x[(4g + t)·plane + j] + 128 for j < cols, pad + 128 past them. Needs AVX2
/// (every VNNI host has it).
void pack_planes4_x32_vnni(const int8_t* x, int64_t plane, int64_t groups, int cols, int8_t pad,
                           uint8_t* dst);

/// The AVX2 layout (int16 pairs) of `groups` k groups of a 16-column strip
/// whose rows are channel planes read in place: group g's element t of
/// column j is x[(2g + t)·plane + j] − zx for j < cols, 0 past them.
void pack_planes2_x16_avx2(const int8_t* x, int64_t plane, int64_t groups, int cols, int32_t zx,
                           int16_t* dst);

/// True when the host can run qs8_gemm_8x32_avx512vnni.
bool host_has_avx512_vnni();

}  // namespace qgemm_detail

}  // namespace ember::kernels::quantized
