// Matrix products on strided tensors, dispatched by dtype: float and double
// use `gemm_small_m` for products with at most four rows or columns (a GEMV
// streams B instead of packing it) and the blocked `gemm` otherwise; the
// 16-bit floats and integers use `gemm_reference`.
#pragma once

#include <cstdint>

#include "kernels/portable/util/dtype.h"
#include "kernels/portable/util/gemm.h"
#include "kernels/portable/util/gemv.h"
#include "kernels/portable/util/gemv_packed.h"
#include "kernels/portable/util/parallel.h"

namespace ember::kernels::portable {

/// Chunks per thread of a few-row product on packed panels (f32_gemv_packed).
inline constexpr int64_t kGemvChunksPerThread = 4;

/// A strided 2-D view into a tensor's data (element offsets and strides).
struct MatView {
  void* data;
  int64_t offset;
  int64_t rs;
  int64_t cs;
};

/// C = alpha · A·B + beta · C for storage type S (m×k times k×n). The
/// blocked float/double GEMM runs on ctx's thread pool; for float it reads
/// B from `packed_b` (B packed at prepare, PackedPanels) when given, and
/// applies `epilogue` (float only) to C after the product.
template <typename S>
void matmul_strided(KernelContext& ctx, int64_t m, int64_t n, int64_t k, MatView a, MatView b, MatView c,
                    double alpha, double beta, const PackedPanels<float>* packed_b = nullptr,
                    const GemmEpilogue<float>* epilogue = nullptr) {
  using CT = compute_t<S>;
  const S* pa = static_cast<const S*>(a.data) + a.offset;
  const S* pb = static_cast<const S*>(b.data) + b.offset;
  S* pc = static_cast<S*>(c.data) + c.offset;
  if constexpr (std::is_same_v<S, float> || std::is_same_v<S, double>) {
    const S al = static_cast<S>(alpha);
    const S be = static_cast<S>(beta);
    // The small-m paths stream C once; the epilogue then makes one more pass.
    auto finish = [&] {
      if constexpr (std::is_same_v<S, float>) {
        if (epilogue != nullptr) epilogue->apply(m, n, pc, c.rs, c.cs);
      }
    };
    if constexpr (std::is_same_v<S, float>) {
      if (packed_b != nullptr && m >= 1 && m <= kGemvMaxM && f32_gemv_packed_takes(*packed_b)) {
        // A decoding step with a weight packed at prepare: the panels in
        // memory order, each thread's share whole panels (gemv_packed.h).
        const int64_t tile = packed_b->tile;
        const int64_t tiles = (n + tile - 1) / tile;
        // At least 512 KiB of panels per task: less is not worth waking a
        // thread (the product's multiply-adds do not decide it: it is bound by
        // reading the weight; ResNet-50's 2048 → 1000 classifier, 8 MB, 2 M
        // multiply-adds, 0.51 → 0.27 ms on 2 threads).
        int64_t min_tiles = (int64_t{1} << 17) / (tile * k);
        if (min_tiles < 1) min_tiles = 1;
        // Several chunks per thread, claimed one at a time (WorkPool): a
        // thread the host runs late takes fewer of them instead of holding
        // the step up (memory-bound work splits evenly in bytes, not in time).
        int64_t chunks = tiles / min_tiles;
        const int64_t most = kGemvChunksPerThread * static_cast<int64_t>(ctx.threads());
        if (chunks > most) chunks = most;
        if (chunks < 1) chunks = 1;
        ctx.parallel_for(static_cast<size_t>(chunks), [&](size_t t) {
          const int64_t first = tiles * static_cast<int64_t>(t) / chunks;
          const int64_t last = tiles * (static_cast<int64_t>(t) + 1) / chunks;
          f32_gemv_packed(m, first * tile, last * tile, k, pa, a.rs, a.cs, *packed_b, al, be, pc,
                          c.rs, c.cs);
        });
        finish();
        return;
      }
    }
    if (m <= kGemvMaxM && gemm_small_m_takes(m, n, k, a.cs, b.rs, b.cs)) {
      // A decoding step's linear layers: one pass over B, which one core
      // reads at about 3/4 of the DRAM bandwidth two read. Every column is
      // summed as on one thread (the same bits for any thread count).
      // Each task at least 512 KiB of B (its bytes, not the multiply-adds,
      // bound it, as above).
      int64_t min_cols = (int64_t{1} << 17) / k;
      if (min_cols < kGemvSplit) min_cols = kGemvSplit;
      parallel_range(ctx, n, min_cols, kGemvSplit,
                     [&](int64_t first, int64_t last) {
                       gemm_small_m<S>(m, last - first, k, pa, a.rs, a.cs, pb + first * b.cs, b.rs,
                                       b.cs, al, be, pc + first * c.cs, c.rs, c.cs);
                     });
      finish();
      return;
    }
    // Few columns: C^T = B^T·A^T has few rows.
    if (n <= kGemvMaxM && n < m &&
        gemm_small_m<S>(n, m, k, pb, b.cs, b.rs, pa, a.cs, a.rs, al, be, pc, c.cs, c.rs)) {
      finish();
      return;
    }
    if constexpr (std::is_same_v<S, float>) {
      if (packed_b != nullptr) {
        gemm_parallel<S>(ctx, m, n, k, StridedMatrix<S>{pa, a.rs, a.cs},
                         PackedB<float, StridedMatrix<float>>{*packed_b, {pb, b.rs, b.cs}}, al,
                         be, pc, c.rs, c.cs, epilogue);
        return;
      }
      gemm_parallel<S>(ctx, m, n, k, StridedMatrix<S>{pa, a.rs, a.cs},
                       StridedMatrix<S>{pb, b.rs, b.cs}, al, be, pc, c.rs, c.cs, epilogue);
      return;
    }
    gemm_parallel<S>(ctx, m, n, k, StridedMatrix<S>{pa, a.rs, a.cs},
                     StridedMatrix<S>{pb, b.rs, b.cs}, al, be, pc, c.rs, c.cs);
  } else {
    (void)packed_b;
    const CT al = std::is_integral_v<CT> ? static_cast<CT>(static_cast<int64_t>(alpha))
                                         : static_cast<CT>(alpha);
    const CT be = std::is_integral_v<CT> ? static_cast<CT>(static_cast<int64_t>(beta))
                                         : static_cast<CT>(beta);
    gemm_reference<S>(m, n, k, pa, a.rs, a.cs, pb, b.rs, b.cs, al, be, pc, c.rs, c.cs);
  }
}

}  // namespace ember::kernels::portable
