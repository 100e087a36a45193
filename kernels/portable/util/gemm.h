// A cache-blocked GEMM for float and double, shared by mm, addmm, bmm and
// convolution:  C = alpha * A·B + beta * C  (beta == 0 ignores C's contents).
//
// Layout follows the usual blocking scheme: B is packed in KC×NC panels of
// NR-wide column strips, A in MC×KC blocks of MR-tall row strips, and an
// MR×NR register tile is accumulated by a microkernel. Pack buffers live on
// the stack (about 120 KiB for either type) so the kernel never allocates.
//
// Three microkernels, chosen at run time (the build passes no -march):
//   - a portable plain loop the compiler vectorises for whatever the build
//     targets (8×8 float, 4×8 double; baseline x86-64 gets SSE2);
//   - f32_gemm_6x16_avx2_fma (gemm_f32_avx2.cpp), compiled for AVX2+FMA with a
//     function attribute and used when cpu_isa() is avx2;
//   - f32_gemm_8x32_avx512f (gemm_f32_avx512.cpp), the same for AVX-512,
//     used when cpu_isa() is avx512. It gives the AVX2 kernel's bits.
// Tests call `gemm_portable`, `gemm_f32_avx2_fma` and `gemm_f32_avx512f`
// directly to compare them.
//
// Operands are "sources" that pack themselves, so a kernel can feed a GEMM
// without materialising a matrix (convolution packs im2col columns directly).
// A source for A provides
//   template <int kMR> void pack_a(int64_t i0, int64_t mc, int64_t p0, int64_t kc, T* dst) const
// writing ceil(mc/MR) strips, each kc × MR (row index fastest), zero-padded;
// a source for B provides
//   template <int kNR> void pack_b(int64_t p0, int64_t kc, int64_t j0, int64_t nc, T* dst) const
// writing ceil(nc/NR) strips, each kc × NR (column index fastest), zero-padded.
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/portable/util/dtype.h"
#include "kernels/portable/util/gemm_epilogue.h"
#include "kernels/portable/util/parallel.h"
#include "runtime/kernel/kernel_context.h"

namespace ember::kernels::portable {

template <typename T>
struct GemmTile;

// The portable tiles, measured with GCC 12 at -O2 on SSE2 and AVX2 builds:
// these shapes are the ones the compiler keeps in registers and vectorises
// on both (6×16 spills in plain C++ at -O2).
template <> struct GemmTile<float> { static constexpr int kMR = 8, kNR = 8; };
template <> struct GemmTile<double> { static constexpr int kMR = 4, kNR = 8; };

template <typename T>
struct GemmBlocking {
  // KC×NC of B (~48 KiB) stays in L2 across the A blocks; an MR×KC strip of A
  // stays in L1 across the NR strips of B. With B packed at prepare the loop
  // is A-block-major and a KC×NR strip of B stays in L1 across the kMC/MR
  // row strips of an A block (72 KiB, L2). kMC = 144 rather than 72 measured
  // 4–27% faster on the AVX2 EPYC over linear, 1×1/3×3-convolution-like and
  // square shapes (BENCHMARKS.md); kKC = 256 helped packed B but cost 20% on
  // im2col-like B.
  static constexpr int64_t kKC = 512 / static_cast<int64_t>(sizeof(T));  // 128 f32, 64 f64
  static constexpr int64_t kMC = 144;                                      // 4, 6, 8 divide it
  static constexpr int64_t kNC = 96;                                       // 8, 16, 32 divide it
  // The depth of a block when B was packed at prepare (pack_b_panels,
  // gemm_blocked_packed_b; also Winograd's V and U, which meet there): each
  // microkernel call does twice the work per C tile it loads and stores, and
  // the B strip (256 × 32 floats, 32 KiB) still fits L1. 8–15% faster on
  // linear layers from 128×768×768 to 1500×2048×512 (BENCHMARKS.md,
  // 2026-12-03); B packed per call keeps kKC.
  static constexpr int64_t kKCPacked = 1024 / static_cast<int64_t>(sizeof(T));  // 256 f32
  template <int kMR>
  static constexpr int64_t apack_size() { return ((kMC + kMR - 1) / kMR) * kMR * kKC; }
  // The most rows of an A block gemm_blocked_packed_b packs per call (A not
  // packed at prepare): the rows are cut into the whole number of blocks
  // nearest to m / kMC, balanced, so ViT's 197 tokens are one block of 200
  // rather than 144 + 53 (each A block reads all of B once): at most
  // 1.5 · kMC rows, rounded up to a tile.
  static constexpr int64_t kMCPerCall = 224;
  template <int kMR>
  static constexpr int64_t apack_packed_size() {
    return ((kMCPerCall + kMR - 1) / kMR) * kMR * kKCPacked;
  }
  template <int kNR>
  static constexpr int64_t bpack_size() { return ((kNC + kNR - 1) / kNR) * kNR * kKC; }
};

/// A dense matrix given by a pointer and strides in elements (any layout,
/// including transposed views).
template <typename T>
struct StridedMatrix {
  const T* data;
  int64_t rs;  // Row stride.
  int64_t cs;  // Column stride.

  T at(int64_t i, int64_t j) const { return data[i * rs + j * cs]; }

  template <int kMR>
  void pack_a(int64_t i0, int64_t mc, int64_t p0, int64_t kc, T* dst) const {
    for (int64_t s = 0; s < mc; s += kMR) {
      const int64_t rows = mc - s < kMR ? mc - s : kMR;
      if (rows == kMR && rs == 1) {
        // Column-major A (a transposed view): each k step is one contiguous run.
        const T* src = data + (i0 + s) + p0 * cs;
        for (int64_t p = 0; p < kc; ++p) {
          for (int ii = 0; ii < kMR; ++ii) dst[p * kMR + ii] = src[p * cs + ii];
        }
      } else if (rows == kMR) {
        // Row-major A: kMR read streams, one sequential write stream (a row
        // at a time would write every kMR-th element of the strip kMR times).
        const T* src[kMR];
        for (int ii = 0; ii < kMR; ++ii) src[ii] = data + (i0 + s + ii) * rs + p0 * cs;
        if (cs == 1) {
          for (int64_t p = 0; p < kc; ++p) {
            for (int ii = 0; ii < kMR; ++ii) dst[p * kMR + ii] = src[ii][p];
          }
        } else {
          for (int64_t p = 0; p < kc; ++p) {
            for (int ii = 0; ii < kMR; ++ii) dst[p * kMR + ii] = src[ii][p * cs];
          }
        }
      } else {
        for (int64_t ii = 0; ii < kMR; ++ii) {
          T* d = dst + ii;
          if (ii < rows) {
            const T* src = data + (i0 + s + ii) * rs + p0 * cs;
            for (int64_t p = 0; p < kc; ++p) d[p * kMR] = src[p * cs];
          } else {
            for (int64_t p = 0; p < kc; ++p) d[p * kMR] = T(0);
          }
        }
      }
      dst += kc * kMR;
    }
  }

  template <int kNR>
  void pack_b(int64_t p0, int64_t kc, int64_t j0, int64_t nc, T* dst) const {
    for (int64_t s = 0; s < nc; s += kNR) {
      const int64_t cols = nc - s < kNR ? nc - s : kNR;
      for (int64_t p = 0; p < kc; ++p) {
        const T* src = data + (p0 + p) * rs + (j0 + s) * cs;
        T* d = dst + p * kNR;
        if (cols == kNR && cs == 1) {
          for (int64_t jj = 0; jj < kNR; ++jj) d[jj] = src[jj];
        } else {
          for (int64_t jj = 0; jj < kNR; ++jj) d[jj] = jj < cols ? src[jj * cs] : T(0);
        }
      }
      dst += kc * kNR;
    }
  }
};

/// A GEMM operand packed once (at a kernel's prepare step, into memory from
/// the method allocator) in exactly the panels gemm_blocked packs per call:
/// for A (m×k, `rows` = m) the MR-row strips of each kMC×kKC block, for B
/// (k×n, `rows` = n) the NR-column strips of each kKCPacked×kNC block. Blocks are
/// stored row block by row block, each row block's depth blocks in order, so
/// the block at (r0, p0) starts at r0·k + padded(rows in the block)·p0
/// (kMC and kNC are multiples of every tile). `tile` is the MR or NR it was
/// packed for: a microkernel with another tile packs as usual.
template <typename T>
struct PackedPanels {
  const T* data = nullptr;
  int64_t rows = 0;
  int64_t depth = 0;
  int tile = 0;

  const T* block(int64_t r0, int64_t block_rows, int64_t p0) const {
    const int64_t len = rows - r0 < block_rows ? rows - r0 : block_rows;
    return data + r0 * depth + (len + tile - 1) / tile * tile * p0;
  }
};

/// Elements PackedPanels needs for `rows` × `depth` with tile `tile` in
/// blocks of `block_rows` rows.
inline int64_t packed_panels_size(int64_t rows, int64_t depth, int tile, int64_t block_rows) {
  const int64_t full = rows / block_rows * block_rows;
  const int64_t last = rows - full;
  return (full + (last + tile - 1) / tile * tile) * depth;
}

/// Where element (r, c) (row r, depth c) of `rows` × `depth` sits in
/// PackedPanels packed for `tile` in blocks of `block_rows` rows and depth
/// blocks of `depth_block` (kKCPacked for operands gemm_blocked_packed_b reads).
inline int64_t packed_panels_offset(int64_t rows, int64_t depth, int tile, int64_t block_rows,
                                    int64_t depth_block, int64_t r, int64_t c) {
  const int64_t rb = r / block_rows * block_rows;
  const int64_t len = rows - rb < block_rows ? rows - rb : block_rows;
  const int64_t padded = (len + tile - 1) / tile * tile;
  const int64_t pc = c / depth_block * depth_block;
  const int64_t kc = depth - pc < depth_block ? depth - pc : depth_block;
  return rb * depth + padded * pc + (r - rb) / tile * kc * tile + (c - pc) * tile +
         (r - rb) % tile;
}

/// An A or B source reading PackedPanels (rows × depth, packed for `tile` in
/// blocks of `block_rows`, depth blocks of kKCPacked) element by element: the
/// fallback of an operand packed once for a microkernel whose tile is not the
/// running one's.
template <typename T>
struct PackedPanelsSource {
  const T* data;
  int64_t rows, depth;
  int tile;
  int64_t block_rows;

  T at(int64_t r, int64_t c) const {
    return data[packed_panels_offset(rows, depth, tile, block_rows, GemmBlocking<T>::kKCPacked,
                                     r, c)];
  }
  template <int kMR>
  void pack_a(int64_t i0, int64_t mc, int64_t p0, int64_t kc, T* dst) const {
    for (int64_t s = 0; s < mc; s += kMR) {
      for (int64_t p = 0; p < kc; ++p) {
        for (int64_t ii = 0; ii < kMR; ++ii) {
          dst[p * kMR + ii] = s + ii < mc ? at(i0 + s + ii, p0 + p) : T(0);
        }
      }
      dst += kc * kMR;
    }
  }
  template <int kNR>
  void pack_b(int64_t p0, int64_t kc, int64_t j0, int64_t nc, T* dst) const {
    for (int64_t s = 0; s < nc; s += kNR) {
      for (int64_t p = 0; p < kc; ++p) {
        for (int64_t jj = 0; jj < kNR; ++jj) {
          dst[p * kNR + jj] = s + jj < nc ? at(j0 + s + jj, p0 + p) : T(0);
        }
      }
      dst += kc * kNR;
    }
  }
};

/// Packs A (m×k) from `source` (any A source) for tile kMR into `dst`
/// (packed_panels_size(m, k, kMR, kMC) elements), in depth blocks of
/// `depth` (gemm_blocked's kKC; kKCPacked for a product whose B was packed at
/// prepare, which gemm_blocked_packed_b runs). Only the depth blocks that
/// start in [k_first, k_last) when given (a thread's share of the packing).
template <int kMR, typename T, typename ASource>
void pack_a_panels(const ASource& source, int64_t m, int64_t k, T* dst,
                   int64_t depth = GemmBlocking<T>::kKC, int64_t k_first = 0,
                   int64_t k_last = -1) {
  using B = GemmBlocking<T>;
  static_assert(B::kMC % kMR == 0);
  if (k_last < 0) k_last = k;
  for (int64_t ic = 0; ic < m; ic += B::kMC) {
    const int64_t mc = m - ic < B::kMC ? m - ic : B::kMC;
    const int64_t padded = (mc + kMR - 1) / kMR * kMR;
    for (int64_t pc = k_first; pc < k_last; pc += depth) {
      const int64_t kc = k - pc < depth ? k - pc : depth;
      source.template pack_a<kMR>(ic, mc, pc, kc, dst + ic * k + padded * pc);
    }
  }
}

/// Packs B (k×n) from `source` for tile kNR into `dst`
/// (packed_panels_size(n, k, kNR, kNC) elements), in depth blocks of
/// `depth` (kKCPacked: what gemm_blocked_packed_b reads; kKC for
/// PackedBPerCall). Only the column blocks in [j_first, j_last) when given,
/// j_first a multiple of kNC (a thread's share).
template <int kNR, typename T, typename BSource>
void pack_b_panels(const BSource& source, int64_t k, int64_t n, T* dst,
                   int64_t depth = GemmBlocking<T>::kKCPacked, int64_t j_first = 0,
                   int64_t j_last = -1) {
  using B = GemmBlocking<T>;
  static_assert(B::kNC % kNR == 0);
  if (j_last < 0 || j_last > n) j_last = n;
  for (int64_t jc = j_first; jc < j_last; jc += B::kNC) {
    const int64_t nc = n - jc < B::kNC ? n - jc : B::kNC;
    const int64_t padded = (nc + kNR - 1) / kNR * kNR;
    for (int64_t pc = 0; pc < k; pc += depth) {
      const int64_t kc = k - pc < depth ? k - pc : depth;
      source.template pack_b<kNR>(pc, kc, jc, nc, dst + jc * k + padded * pc);
    }
  }
}

/// An A operand read from PackedPanels, or packed from `fallback` when the
/// microkernel's tile is not the one it was packed for.
template <typename T, typename Fallback>
struct PackedA {
  PackedPanels<T> panels;
  Fallback fallback;

  template <int kMR>
  void pack_a(int64_t i0, int64_t mc, int64_t p0, int64_t kc, T* dst) const {
    fallback.template pack_a<kMR>(i0, mc, p0, kc, dst);
  }
  template <int kMR>
  const T* packed_a(int64_t i0, int64_t p0) const {
    return kMR == panels.tile ? panels.block(i0, GemmBlocking<T>::kMC, p0) : nullptr;
  }
};

/// The B counterpart of PackedA: panels packed at prepare in kKCPacked-deep
/// blocks (gemm_blocked_packed_b reads them), or, kPerCall, packed for this
/// call before the GEMM (a convolution's im2col columns, once for every
/// thread instead of once per thread) in gemm_blocked's own kKC-deep blocks,
/// which gemm_blocked then reads in place with the same sums as packing them
/// itself (PackedBPerCall).
template <typename T, typename Fallback, bool kPerCall = false>
struct PackedB {
  PackedPanels<T> panels;
  Fallback fallback;

  template <int kNR>
  void pack_b(int64_t p0, int64_t kc, int64_t j0, int64_t nc, T* dst) const {
    fallback.template pack_b<kNR>(p0, kc, j0, nc, dst);
  }
  template <int kNR>
  const T* packed_b(int64_t p0, int64_t j0) const
    requires(!kPerCall)
  {
    return block<kNR>(p0, j0);
  }
  template <int kNR>
  const T* packed_b_per_call(int64_t p0, int64_t j0) const
    requires(kPerCall)
  {
    return block<kNR>(p0, j0);
  }

 private:
  template <int kNR>
  const T* block(int64_t p0, int64_t j0) const {
    return kNR == panels.tile ? panels.block(j0, GemmBlocking<T>::kNC, p0) : nullptr;
  }
};

template <typename T, typename Fallback>
using PackedBPerCall = PackedB<T, Fallback, true>;

/// The AVX2+FMA float microkernel (gemm_f32_avx2.cpp): for a 6×kc packed A
/// strip and a kc×16 packed B strip, c[i*c_rs + j] = alpha·(A·B)[i][j] +
/// beta·c[...] for the full 6×16 tile (beta == 0 ignores c). Call it only
/// when `cpu_has_avx2_fma()` is true.
void f32_gemm_6x16_avx2_fma(int64_t kc, const float* a, const float* b, float* c, int64_t c_rs,
                            float alpha, float beta);

/// f32_gemm_6x16_avx2_fma, then `ep` (at the tile's first element; row and
/// column bias and residual contiguous along the row: f32_epilogue_vectorisable)
/// on the registers before the store: the bits of the microkernel followed by
/// GemmEpilogue::apply, with one pass over the tile instead of two.
void f32_gemm_6x16_avx2_fma_ep(int64_t kc, const float* a, const float* b, float* c,
                               int64_t c_rs, float alpha, float beta,
                               const GemmEpilogue<float>& ep);

/// f32_gemm_6x16_avx2_fma (with `ep`: _ep) that also requests
/// `prefetch_lines` 64-byte lines from `prefetch` spread over its k loop, as
/// f32_gemm_8x32_avx512f_pf. Same bits.
void f32_gemm_6x16_avx2_fma_pf(int64_t kc, const float* a, const float* b, float* c,
                               int64_t c_rs, float alpha, float beta,
                               const GemmEpilogue<float>* ep, const void* prefetch,
                               int64_t prefetch_lines);

/// True when kernels dispatch to AVX2+FMA builds: cpu_isa() >= Isa::kAvx2
/// (the host has them and EMBER_ISA does not cap them; false off x86).
bool cpu_has_avx2_fma();

/// The AVX-512F float microkernel (gemm_f32_avx512.cpp): the contract of
/// f32_gemm_6x16_avx2_fma for an 8×kc A strip and a kc×32 B strip. Call it
/// only when `cpu_has_avx512f()` is true.
void f32_gemm_8x32_avx512f(int64_t kc, const float* a, const float* b, float* c, int64_t c_rs,
                           float alpha, float beta);

/// f32_gemm_8x32_avx512f with the epilogue, as f32_gemm_6x16_avx2_fma_ep.
void f32_gemm_8x32_avx512f_ep(int64_t kc, const float* a, const float* b, float* c,
                              int64_t c_rs, float alpha, float beta,
                              const GemmEpilogue<float>& ep);

/// f32_gemm_8x32_avx512f, or with `ep` f32_gemm_8x32_avx512f_ep, that also
/// requests `prefetch_lines` 64-byte lines from `prefetch` spread over its k
/// loop (the next B strip of a weight read once per call). Same bits.
void f32_gemm_8x32_avx512f_pf(int64_t kc, const float* a, const float* b, float* c, int64_t c_rs,
                              float alpha, float beta, const GemmEpilogue<float>* ep,
                              const void* prefetch, int64_t prefetch_lines);

/// True when kernels dispatch to AVX-512 builds: cpu_isa() >= Isa::kAvx512.
bool cpu_has_avx512f();

namespace gemm_detail {

// The portable microkernel, same contract as f32_gemm_6x16_avx2_fma.
template <typename T, int kMR, int kNR>
inline void micro_tile(int64_t kc, const T* __restrict a, const T* __restrict b, T* c,
                       int64_t c_rs, T alpha, T beta) {
  T acc[kMR][kNR] = {};
  for (int64_t p = 0; p < kc; ++p) {
    const T* ap = a + p * kMR;
    const T* bp = b + p * kNR;
#pragma GCC unroll 8
    for (int i = 0; i < kMR; ++i) {
      const T ai = ap[i];
#pragma GCC unroll 32
      for (int j = 0; j < kNR; ++j) acc[i][j] += ai * bp[j];
    }
  }
  for (int i = 0; i < kMR; ++i) {
    T* row = c + i * c_rs;
    if (beta == T(0)) {
      for (int j = 0; j < kNR; ++j) row[j] = alpha * acc[i][j];
    } else {
      for (int j = 0; j < kNR; ++j) row[j] = alpha * acc[i][j] + beta * row[j];
    }
  }
}

template <typename CT, bool kInt = std::is_integral_v<CT> && !std::is_same_v<CT, bool>>
struct WrapAcc {
  using type = CT;
};
template <typename CT>
struct WrapAcc<CT, true> {
  using type = uint64_t;
};

template <typename T>
inline void scale_c(int64_t m, int64_t n, T beta, T* c, int64_t c_rs, int64_t c_cs) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      T& v = c[i * c_rs + j * c_cs];
      v = beta == T(0) ? T(0) : beta * v;
    }
  }
}

// One kMR×kNR tile: in place for a full tile of a row-contiguous C, else
// through `tile` on the stack (edges, strided C).
template <typename T, int kMR, int kNR, auto kMicro>
inline void gemm_tile(int64_t kc, const T* ap, const T* bp, T* ct, int64_t mr, int64_t nr,
                      int64_t c_rs, int64_t c_cs, T alpha, T beta_k, T* tile) {
  if (mr == kMR && nr == kNR && c_cs == 1) {
    kMicro(kc, ap, bp, ct, c_rs, alpha, beta_k);
    return;
  }
  kMicro(kc, ap, bp, tile, kNR, T(1), T(0));
  for (int64_t i = 0; i < mr; ++i) {
    T* row = ct + i * c_rs;
    const T* tr = tile + i * kNR;
    if (beta_k == T(0)) {
      for (int64_t j = 0; j < nr; ++j) row[j * c_cs] = alpha * tr[j];
    } else {
      for (int64_t j = 0; j < nr; ++j) row[j * c_cs] = alpha * tr[j] + beta_k * row[j * c_cs];
    }
  }
}

static_assert(GemmTile<float>::kMR != 8 || GemmTile<float>::kNR != 32,
              "run_epilogue tells the AVX-512 tile from the portable one by its shape");

// A tile's epilogue: vectorised for the ISA of the microkernel that wrote it
// (float, row-contiguous C), else GemmEpilogue::apply. The tile names the
// microkernel (8×32: AVX-512, 6×16: AVX2; the portable float tile is 8×8):
// comparing function pointers is not a constant expression under ASan.
template <typename T, int kMR, int kNR>
inline void run_epilogue(const GemmEpilogue<T>& ep, int64_t m, int64_t n, T* c, int64_t c_rs,
                         int64_t c_cs) {
  if constexpr (std::is_same_v<T, float>) {
    if (f32_epilogue_vectorisable(ep, c_cs)) {
      if constexpr (kMR == 8 && kNR == 32) {
        f32_epilogue_avx512f(ep, m, n, c, c_rs);
        return;
      } else if constexpr (kMR == 6 && kNR == 16) {
        f32_epilogue_avx2(ep, m, n, c, c_rs);
        return;
      }
    }
  }
  ep.apply(m, n, c, c_rs, c_cs);
}

// One tile of the last k-block with its epilogue (ep: the tile's own, from
// GemmEpilogue::at): applied on the registers by the AVX-512 or AVX2
// microkernel for a full float tile of a row-contiguous C, else after the
// tile by run_epilogue. Same bits either way.
template <typename T, int kMR, int kNR, auto kMicro>
inline void gemm_tile_last(int64_t kc, const T* ap, const T* bp, T* ct, int64_t mr, int64_t nr,
                           int64_t c_rs, int64_t c_cs, T alpha, T beta_k, T* tile,
                           const GemmEpilogue<T>& ep) {
  if constexpr (std::is_same_v<T, float> && ((kMR == 8 && kNR == 32) || (kMR == 6 && kNR == 16))) {
    if (mr == kMR && nr == kNR && f32_epilogue_vectorisable(ep, c_cs)) {
      if constexpr (kMR == 8) {
        f32_gemm_8x32_avx512f_ep(kc, ap, bp, ct, c_rs, alpha, beta_k, ep);
      } else {
        f32_gemm_6x16_avx2_fma_ep(kc, ap, bp, ct, c_rs, alpha, beta_k, ep);
      }
      return;
    }
  }
  gemm_tile<T, kMR, kNR, kMicro>(kc, ap, bp, ct, mr, nr, c_rs, c_cs, alpha, beta_k, tile);
  run_epilogue<T, kMR, kNR>(ep, mr, nr, ct, c_rs, c_cs);
}

// One tile of a k-block: with `ep` (the last k-block of a GEMM with an
// epilogue) gemm_tile_last with the tile's part of it at (i0, j0), else gemm_tile.
template <typename T, int kMR, int kNR, auto kMicro>
inline void gemm_tile_step(int64_t kc, const T* ap, const T* bp, T* ct, int64_t mr, int64_t nr,
                           int64_t c_rs, int64_t c_cs, T alpha, T beta_k, T* tile,
                           const GemmEpilogue<T>* ep, int64_t i0, int64_t j0) {
  if (ep != nullptr) {
    gemm_tile_last<T, kMR, kNR, kMicro>(kc, ap, bp, ct, mr, nr, c_rs, c_cs, alpha, beta_k, tile,
                                        ep->at(i0, j0));
  } else {
    gemm_tile<T, kMR, kNR, kMicro>(kc, ap, bp, ct, mr, nr, c_rs, c_cs, alpha, beta_k, tile);
  }
}

// The kMR-row strips of A's block (ic, pc): read in place when A was packed
// at prepare for this tile, else packed into `buf`.
template <int kMR, typename T, typename ASource>
inline const T* a_block(const ASource& a, int64_t ic, int64_t mc, int64_t pc, int64_t kc,
                        T* buf) {
  if constexpr (requires { a.template packed_a<kMR>(ic, pc); }) {
    if (const T* packed = a.template packed_a<kMR>(ic, pc); packed != nullptr) return packed;
  }
  a.template pack_a<kMR>(ic, mc, pc, kc, buf);
  return buf;
}

// A's first block when A was packed at prepare for this tile, else null.
template <int kMR, typename ASource>
inline const auto* a_packed_at_prepare(const ASource& a) {
  if constexpr (requires { a.template packed_a<kMR>(0, 0); }) {
    return a.template packed_a<kMR>(0, 0);
  } else {
    return static_cast<const void*>(nullptr);
  }
}

// The kNR-column strips of B's block (pc, jc), the same way.
template <int kNR, typename T, typename BSource>
inline const T* b_block(const BSource& b, int64_t pc, int64_t kc, int64_t jc, int64_t nc,
                        T* buf) {
  if constexpr (requires { b.template packed_b<kNR>(pc, jc); }) {
    if (const T* packed = b.template packed_b<kNR>(pc, jc); packed != nullptr) return packed;
  }
  if constexpr (requires { b.template packed_b_per_call<kNR>(pc, jc); }) {
    if (const T* packed = b.template packed_b_per_call<kNR>(pc, jc); packed != nullptr) {
      return packed;
    }
  }
  b.template pack_b<kNR>(pc, kc, jc, nc, buf);
  return buf;
}

// An epilogue's activation, taken out of the per-tile epilogue and applied
// to each finished mc×nc block of C (in L2): unary_f32's span loops run on
// rows of kNC rather than of a tile's 16 or 32 columns.
template <typename T>
struct BlockActivation {
  GemmEpilogue<T> rest;                     // ep without the activation
  const GemmEpilogue<T>* tile_ep = nullptr;  // what the tiles apply
  const GemmEpilogue<T>* full = nullptr;     // non-null: activate blocks

  explicit BlockActivation(const GemmEpilogue<T>* ep) : tile_ep(ep) {
    if (ep == nullptr || !ep->activate) return;
    rest = *ep;
    rest.activate = false;
    tile_ep = rest.empty() ? nullptr : &rest;
    full = ep;
  }
  BlockActivation(const BlockActivation&) = delete;
  BlockActivation& operator=(const BlockActivation&) = delete;

  void apply(int64_t m, int64_t n, T* c, int64_t c_rs, int64_t c_cs) const {
    if (full != nullptr) full->activate_block(m, n, c, c_rs, c_cs);
  }
};

// B packed at prepare (a linear layer's weight): every B block is already in
// panels, so the loop runs A-block-major: each kMC×kKCPacked block of A is packed
// once and meets all of B's column strips (each strip stays in L1 across the
// A block's row strips). Its depth blocks are kKCPacked deep (gemm_blocked's
// are kKC), so a product with B packed at prepare agrees with one packing B
// per call to rounding; each is the same bits on every run and any thread split.
template <typename T, int kMR, int kNR, auto kMicro, typename ASource, typename BSource>
void gemm_blocked_packed_b(int64_t m, int64_t n, int64_t k, const ASource& a, const BSource& b,
                           T alpha, T beta, T* c, int64_t c_rs, int64_t c_cs,
                           const GemmEpilogue<T>* ep) {
  using B = GemmBlocking<T>;
  alignas(64) T apack[B::template apack_packed_size<kMR>()];
  alignas(64) T tile[kMR * kNR];
  const BlockActivation<T> act(ep);
  ep = act.tile_ep;
  // A packed at prepare is in kMC-row blocks; one packed here is cut into
  // balanced blocks of at most kMCPerCall rows (whole strips).
  int64_t mc_block = B::kMC;
  if (a_packed_at_prepare<kMR>(a) == nullptr) {
    const int64_t nearest = (m + B::kMC / 2) / B::kMC;
    const int64_t blocks = nearest > 1 ? nearest : 1;
    const int64_t rows = ((m + blocks - 1) / blocks + kMR - 1) / kMR * kMR;
    mc_block = rows < B::kMCPerCall ? rows : B::kMCPerCall;
  }
  for (int64_t pc = 0; pc < k; pc += B::kKCPacked) {
    const int64_t kc = k - pc < B::kKCPacked ? k - pc : B::kKCPacked;
    const T beta_k = pc == 0 ? beta : T(1);
    const bool last_k = pc + kc == k;
    for (int64_t ic = 0; ic < m; ic += mc_block) {
      const int64_t mc = m - ic < mc_block ? m - ic : mc_block;
      const T* ap = a_block<kMR>(a, ic, mc, pc, kc, apack);
      // The B strip after this one, brought into cache a slice per A strip
      // while this one is in use: the first A strip to meet a strip would
      // otherwise wait on memory (a weight read once per call: BERT's
      // 768 → 3072 layer at 3.9 ms in a model against 3.1 ms hot in cache).
      const int64_t strip_lines = kc * kNR * static_cast<int64_t>(sizeof(T)) / 64;
      const int64_t a_strips = (mc + kMR - 1) / kMR;
      const int64_t lines_per_call = (strip_lines + a_strips - 1) / a_strips;
      for (int64_t jc = 0; jc < n; jc += B::kNC) {
        const int64_t nc = n - jc < B::kNC ? n - jc : B::kNC;
        const T* bp = b.template packed_b<kNR>(pc, jc);
        for (int64_t jr = 0; jr < nc; jr += kNR) {
          const int64_t nr = nc - jr < kNR ? nc - jr : kNR;
          const T* next = jr + kNR < nc ? bp + (jr + kNR) * kc
                          : jc + B::kNC < n ? b.template packed_b<kNR>(pc, jc + B::kNC)
                                            : nullptr;
          for (int64_t ir = 0; ir < mc; ir += kMR) {
            const int64_t mr = mc - ir < kMR ? mc - ir : kMR;
            T* ct = c + (ic + ir) * c_rs + (jc + jr) * c_cs;
            // This A strip's share of the next B strip's lines.
            const int64_t first = (ir / kMR) * lines_per_call;
            const int64_t lines = next == nullptr || first >= strip_lines ? 0
                                  : strip_lines - first < lines_per_call ? strip_lines - first
                                                                          : lines_per_call;
            const char* line = lines == 0 ? nullptr
                                          : reinterpret_cast<const char*>(next) + first * 64;
            if constexpr (std::is_same_v<T, float> &&
                          ((kMR == 8 && kNR == 32) || (kMR == 6 && kNR == 16))) {
              // A full tile of the AVX-512 or AVX2 microkernel: its k loop
              // spreads the requests for this A strip's share of the next
              // B strip (issued at once they filled the line fill buffers:
              // BERT-base 138 → 121 ms).
              const GemmEpilogue<T> tile_ep = last_k && ep != nullptr ? ep->at(ic + ir, jc + jr)
                                                                      : GemmEpilogue<T>{};
              if (mr == kMR && nr == kNR && c_cs == 1 &&
                  (!last_k || ep == nullptr || f32_epilogue_vectorisable(tile_ep, c_cs))) {
                const GemmEpilogue<T>* tep = last_k && ep != nullptr ? &tile_ep : nullptr;
                if constexpr (kMR == 8) {
                  f32_gemm_8x32_avx512f_pf(kc, ap + ir * kc, bp + jr * kc, ct, c_rs, alpha,
                                           beta_k, tep, line, lines);
                } else {
                  f32_gemm_6x16_avx2_fma_pf(kc, ap + ir * kc, bp + jr * kc, ct, c_rs, alpha,
                                            beta_k, tep, line, lines);
                }
                continue;
              }
            }
            // Edge tiles and other microkernels: the share before the tile.
            for (int64_t l = 0; l < lines; ++l) __builtin_prefetch(line + l * 64, 0, 3);
            gemm_tile_step<T, kMR, kNR, kMicro>(kc, ap + ir * kc, bp + jr * kc, ct, mr, nr, c_rs,
                                                c_cs, alpha, beta_k, tile, last_k ? ep : nullptr,
                                                ic + ir, jc + jr);
          }
        }
        if (last_k) act.apply(mc, nc, c + ic * c_rs + jc * c_cs, c_rs, c_cs);
      }
    }
  }
}

// The blocked loop nest around one microkernel `kMicro` with an kMR×kNR tile.
// Full tiles of a row-contiguous C are updated in place by the microkernel;
// edge tiles and strided C go through a small tile on the stack.
template <typename T, int kMR, int kNR, auto kMicro, typename ASource, typename BSource>
void gemm_blocked(int64_t m, int64_t n, int64_t k, const ASource& a, const BSource& b, T alpha,
                  T beta, T* c, int64_t c_rs, int64_t c_cs, const GemmEpilogue<T>* ep) {
  using B = GemmBlocking<T>;
  if (m <= 0 || n <= 0) return;
  if (ep != nullptr && ep->empty()) ep = nullptr;
  if (k <= 0) {
    scale_c(m, n, beta, c, c_rs, c_cs);
    if (ep != nullptr) ep->apply(m, n, c, c_rs, c_cs);
    return;
  }
  if constexpr (requires { b.template packed_b<kNR>(0, 0); }) {
    if (b.template packed_b<kNR>(0, 0) != nullptr) {
      gemm_blocked_packed_b<T, kMR, kNR, kMicro>(m, n, k, a, b, alpha, beta, c, c_rs, c_cs, ep);
      return;
    }
  }
  alignas(64) T apack[B::template apack_size<kMR>()];
  alignas(64) T bpack[B::template bpack_size<kNR>()];
  alignas(64) T tile[kMR * kNR];
  const BlockActivation<T> act(ep);
  ep = act.tile_ep;
  for (int64_t jc = 0; jc < n; jc += B::kNC) {
    const int64_t nc = n - jc < B::kNC ? n - jc : B::kNC;
    for (int64_t pc = 0; pc < k; pc += B::kKC) {
      const int64_t kc = k - pc < B::kKC ? k - pc : B::kKC;
      const T beta_k = pc == 0 ? beta : T(1);
      const bool last_k = pc + kc == k;
      // An operand packed at prepare (PackedPanels) is read in place.
      const T* bp = b_block<kNR>(b, pc, kc, jc, nc, bpack);
      for (int64_t ic = 0; ic < m; ic += B::kMC) {
        const int64_t mc = m - ic < B::kMC ? m - ic : B::kMC;
        const T* ap = a_block<kMR>(a, ic, mc, pc, kc, apack);
        for (int64_t jr = 0; jr < nc; jr += kNR) {
          const int64_t nr = nc - jr < kNR ? nc - jr : kNR;
          for (int64_t ir = 0; ir < mc; ir += kMR) {
            const int64_t mr = mc - ir < kMR ? mc - ir : kMR;
            T* ct = c + (ic + ir) * c_rs + (jc + jr) * c_cs;
            gemm_tile_step<T, kMR, kNR, kMicro>(kc, ap + ir * kc, bp + jr * kc, ct, mr, nr, c_rs,
                                                c_cs, alpha, beta_k, tile, last_k ? ep : nullptr,
                                                ic + ir, jc + jr);
          }
        }
        if (last_k) act.apply(mc, nc, c + ic * c_rs + jc * c_cs, c_rs, c_cs);
      }
    }
  }
}

}  // namespace gemm_detail

/// The MR and NR `gemm` uses for T on this CPU (what prepare packs for).
template <typename T>
inline int gemm_mr() {
  if constexpr (std::is_same_v<T, float>) {
    if (cpu_has_avx512f()) return 8;
    if (cpu_has_avx2_fma()) return 6;
  }
  return GemmTile<T>::kMR;
}
template <typename T>
inline int gemm_nr() {
  if constexpr (std::is_same_v<T, float>) {
    if (cpu_has_avx512f()) return 32;
    if (cpu_has_avx2_fma()) return 16;
  }
  return GemmTile<T>::kNR;
}

/// Packs A for the tile gemm() uses here; `dst` has
/// packed_panels_size(m, k, gemm_mr<T>(), kMC) elements. `depth`, k_first
/// and k_last as pack_a_panels.
template <typename T, typename ASource>
PackedPanels<T> pack_a_for_gemm(const ASource& source, int64_t m, int64_t k, T* dst,
                                int64_t depth = GemmBlocking<T>::kKC, int64_t k_first = 0,
                                int64_t k_last = -1) {
  const int mr = gemm_mr<T>();
  static_assert(GemmTile<T>::kMR == 8 || !std::is_same_v<T, float>,
                "the AVX-512 tile's 8 rows are packed as the portable float tile's");
  if (mr == 6) {
    pack_a_panels<6, T>(source, m, k, dst, depth, k_first, k_last);
  } else {
    pack_a_panels<GemmTile<T>::kMR, T>(source, m, k, dst, depth, k_first, k_last);
  }
  return PackedPanels<T>{dst, m, k, mr};
}

/// Packs B for the tile gemm() uses here; `dst` has
/// packed_panels_size(n, k, gemm_nr<T>(), kNC) elements. `depth`, j_first
/// and j_last as pack_b_panels.
template <typename T, typename BSource>
PackedPanels<T> pack_b_for_gemm(const BSource& source, int64_t k, int64_t n, T* dst,
                                int64_t depth = GemmBlocking<T>::kKCPacked,
                                int64_t j_first = 0, int64_t j_last = -1) {
  const int nr = gemm_nr<T>();
  if (nr == 32) {
    pack_b_panels<32, T>(source, k, n, dst, depth, j_first, j_last);
  } else if (nr == 16) {
    pack_b_panels<16, T>(source, k, n, dst, depth, j_first, j_last);
  } else {
    pack_b_panels<GemmTile<T>::kNR, T>(source, k, n, dst, depth, j_first, j_last);
  }
  return PackedPanels<T>{dst, n, k, nr};
}

/// `gemm` with the portable microkernel, whatever the CPU.
template <typename T, typename ASource, typename BSource>
void gemm_portable(int64_t m, int64_t n, int64_t k, const ASource& a, const BSource& b, T alpha,
                   T beta, T* c, int64_t c_rs, int64_t c_cs,
                   const GemmEpilogue<T>* ep = nullptr) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>);
  constexpr int kMR = GemmTile<T>::kMR;
  constexpr int kNR = GemmTile<T>::kNR;
  gemm_detail::gemm_blocked<T, kMR, kNR, gemm_detail::micro_tile<T, kMR, kNR>>(
      m, n, k, a, b, alpha, beta, c, c_rs, c_cs, ep);
}

/// `gemm` for float with f32_gemm_6x16_avx2_fma. Only when cpu_has_avx2_fma().
template <typename ASource, typename BSource>
void gemm_f32_avx2_fma(int64_t m, int64_t n, int64_t k, const ASource& a, const BSource& b,
                       float alpha, float beta, float* c, int64_t c_rs, int64_t c_cs,
                       const GemmEpilogue<float>* ep = nullptr) {
  gemm_detail::gemm_blocked<float, 6, 16, f32_gemm_6x16_avx2_fma>(m, n, k, a, b, alpha, beta, c,
                                                                  c_rs, c_cs, ep);
}

/// `gemm` for float with f32_gemm_8x32_avx512f. Only when cpu_has_avx512f().
template <typename ASource, typename BSource>
void gemm_f32_avx512f(int64_t m, int64_t n, int64_t k, const ASource& a, const BSource& b,
                      float alpha, float beta, float* c, int64_t c_rs, int64_t c_cs,
                      const GemmEpilogue<float>* ep = nullptr) {
  gemm_detail::gemm_blocked<float, 8, 32, f32_gemm_8x32_avx512f>(m, n, k, a, b, alpha, beta, c,
                                                                 c_rs, c_cs, ep);
}

/// C[m×n] = alpha · A[m×k] · B[k×n] + beta · C, with C at `c` and strides
/// (c_rs, c_cs) in elements, then `ep` (if any) on every element. T is float
/// or double.
template <typename T, typename ASource, typename BSource>
void gemm(int64_t m, int64_t n, int64_t k, const ASource& a, const BSource& b, T alpha, T beta,
          T* c, int64_t c_rs, int64_t c_cs, const GemmEpilogue<T>* ep = nullptr) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>);
  if constexpr (std::is_same_v<T, float>) {
    if (cpu_has_avx512f()) {
      gemm_f32_avx512f(m, n, k, a, b, alpha, beta, c, c_rs, c_cs, ep);
      return;
    }
    if (cpu_has_avx2_fma()) {
      gemm_f32_avx2_fma(m, n, k, a, b, alpha, beta, c, c_rs, c_cs, ep);
      return;
    }
  }
  gemm_portable<T>(m, n, k, a, b, alpha, beta, c, c_rs, c_cs, ep);
}

/// A gemm source seen from row `row0` (as A) or column `col0` (as B): one
/// thread's share of a split product packs through it.
template <typename Source>
struct OffsetSource {
  const Source* source;
  int64_t row0 = 0;
  int64_t col0 = 0;

  template <int kMR, typename T>
  void pack_a(int64_t i0, int64_t mc, int64_t p0, int64_t kc, T* dst) const {
    source->template pack_a<kMR>(row0 + i0, mc, p0, kc, dst);
  }
  template <int kNR, typename T>
  void pack_b(int64_t p0, int64_t kc, int64_t j0, int64_t nc, T* dst) const {
    source->template pack_b<kNR>(p0, kc, col0 + j0, nc, dst);
  }
  // A packed operand is offset by whole blocks (gemm_parallel splits it in
  // kMC / kNC), so its blocks stay addressable.
  template <int kMR>
  auto packed_a(int64_t i0, int64_t p0) const
    requires requires(const Source& s) { s.template packed_a<kMR>(i0, p0); }
  {
    return source->template packed_a<kMR>(row0 + i0, p0);
  }
  template <int kNR>
  auto packed_b(int64_t p0, int64_t j0) const
    requires requires(const Source& s) { s.template packed_b<kNR>(p0, j0); }
  {
    return source->template packed_b<kNR>(p0, col0 + j0);
  }
  template <int kNR>
  auto packed_b_per_call(int64_t p0, int64_t j0) const
    requires requires(const Source& s) { s.template packed_b_per_call<kNR>(p0, j0); }
  {
    return source->template packed_b_per_call<kNR>(p0, col0 + j0);
  }
};

/// The transpose of a source: a pack_b strip of the source (kc deep, column
/// index fastest) is the pack_a strip of its transpose (kc deep, row index
/// fastest), and the other way round. Convolution runs outᵀ = columnsᵀ · Wᵀ
/// through it when positions make better rows than columns.
template <typename Source>
struct TransposedSource {
  Source source;

  template <int kMR, typename T>
  void pack_a(int64_t i0, int64_t mc, int64_t p0, int64_t kc, T* dst) const {
    source.template pack_b<kMR>(p0, kc, i0, mc, dst);
  }
  template <int kNR, typename T>
  void pack_b(int64_t p0, int64_t kc, int64_t j0, int64_t nc, T* dst) const {
    source.template pack_a<kNR>(j0, nc, p0, kc, dst);
  }
};

/// Below this many multiply-adds a product runs on one thread: waking the
/// pool costs about as much as ~1 M multiply-adds on one core.
inline constexpr int64_t kGemmParallelMinMacs = int64_t{1} << 21;

/// `gemm` spread over ctx's thread pool. The output is split along n or m
/// (gemm_splits_columns): an operand packed before in whole kNC / kMC blocks
/// (so its blocks stay addressable), one packed per call in whole 32-column /
/// 24-row strips (a multiple of every tile). Each C element is the same k-sum
/// the single-thread loop computes, so results are bit-identical for any
/// thread count.
/// Whether gemm_parallel splits an m×n product over `threads` by columns
/// (else by rows), given which operands were packed before it (their blocks
/// are kMC / kNC; one packed per call splits in 24-row / 32-column strips,
/// multiples of every tile). The split is the one whose busiest thread has
/// the fewest elements of C; on a tie, n when it has at least as many units
/// as m or enough for every thread.
template <typename T>
bool gemm_splits_columns(int64_t threads, int64_t m, int64_t n, bool packed_a, bool packed_b) {
  using B = GemmBlocking<T>;
  const int64_t n_unit = packed_b ? B::kNC : 32;
  const int64_t m_unit = packed_a ? B::kMC : 24;
  const int64_t n_units = (n + n_unit - 1) / n_unit;
  const int64_t m_units = (m + m_unit - 1) / m_unit;
  // (A 7×7 plane is 49 columns, 32 + 17 over two threads; its 2048 channels
  // split evenly.)
  auto busiest = [threads](int64_t total, int64_t unit, int64_t units) {
    const int64_t tasks = units < threads ? units : threads;
    const int64_t most = (units + tasks - 1) / tasks * unit;
    return most < total ? most : total;
  };
  const int64_t by_n = busiest(n, n_unit, n_units) * m;
  const int64_t by_m = busiest(m, m_unit, m_units) * n;
  return by_n < by_m || (by_n == by_m && (n_units >= m_units || n_units >= threads));
}

template <typename T, typename ASource, typename BSource>
void gemm_parallel(KernelContext& ctx, int64_t m, int64_t n, int64_t k, const ASource& a,
                   const BSource& b, T alpha, T beta, T* c, int64_t c_rs, int64_t c_cs,
                   const GemmEpilogue<T>* ep = nullptr) {
  using B = GemmBlocking<T>;
  if (m * n * k < kGemmParallelMinMacs) {
    gemm<T>(m, n, k, a, b, alpha, beta, c, c_rs, c_cs, ep);
    return;
  }
  constexpr bool kPackedA = requires { a.template packed_a<8>(0, 0); };
  constexpr bool kPackedB = requires { b.template packed_b<16>(0, 0); } ||
                            requires { b.template packed_b_per_call<16>(0, 0); };
  const int64_t n_unit = kPackedB ? B::kNC : 32;
  const int64_t m_unit = kPackedA ? B::kMC : 24;
  if (gemm_splits_columns<T>(static_cast<int64_t>(ctx.threads()), m, n, kPackedA, kPackedB)) {
    parallel_range(ctx, n, n_unit, n_unit, [&](int64_t first, int64_t last) {
      const GemmEpilogue<T> part = ep != nullptr ? ep->at(0, first) : GemmEpilogue<T>{};
      gemm<T>(m, last - first, k, a, OffsetSource<BSource>{&b, 0, first}, alpha, beta,
              c + first * c_cs, c_rs, c_cs, ep != nullptr ? &part : nullptr);
    });
  } else {
    parallel_range(ctx, m, m_unit, m_unit, [&](int64_t first, int64_t last) {
      const GemmEpilogue<T> part = ep != nullptr ? ep->at(first, 0) : GemmEpilogue<T>{};
      gemm<T>(last - first, n, k, OffsetSource<ASource>{&a, first, 0}, b, alpha, beta,
              c + first * c_rs, c_rs, c_cs, ep != nullptr ? &part : nullptr);
    });
  }
}

/// Unblocked GEMM for the other dtypes (16-bit floats accumulate in float;
/// integers wrap like PyTorch's). Same contract as `gemm`.
template <typename S>
void gemm_reference(int64_t m, int64_t n, int64_t k, const S* a, int64_t a_rs, int64_t a_cs,
                    const S* b, int64_t b_rs, int64_t b_cs, compute_t<S> alpha,
                    compute_t<S> beta, S* c, int64_t c_rs, int64_t c_cs) {
  using CT = compute_t<S>;
  // Integers accumulate in the unsigned type of the same width: wraps without UB.
  using Acc = typename gemm_detail::WrapAcc<CT>::type;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      Acc sum = Acc(0);
      for (int64_t p = 0; p < k; ++p) {
        sum += static_cast<Acc>(convert<CT>(a[i * a_rs + p * a_cs])) *
               static_cast<Acc>(convert<CT>(b[p * b_rs + j * b_cs]));
      }
      S& dst = c[i * c_rs + j * c_cs];
      const Acc scaled = static_cast<Acc>(alpha) * sum;
      if (beta == CT(0)) {
        dst = convert<S>(static_cast<CT>(scaled));
      } else {
        dst = convert<S>(
            static_cast<CT>(scaled + static_cast<Acc>(beta) * static_cast<Acc>(convert<CT>(dst))));
      }
    }
  }
}

}  // namespace ember::kernels::portable
