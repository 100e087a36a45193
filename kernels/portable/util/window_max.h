// The maximum of one pooling window, for max_pool2d/3d and the adaptive max
// pools: the first maximum wins and a NaN wins over numbers (the last NaN),
// as eager; its index is the flat position in the input plane
// ((d·H + h)·W + w).
#pragma once

#include <cstdint>
#include <limits>

#include "kernels/portable/util/pool.h"
#include "kernels/portable/util/reduce.h"

namespace ember::kernels::portable {

/// Input positions [lo, hi) stepping by `step` along depth, height and width.
struct PoolWindow {
  int64_t lo[3], hi[3], step[3];
};

template <typename S>
void window_max(const S* plane, const PoolGeometry& g, const PoolWindow& w,
                compute_t<S>* best_out, int64_t* index_out) {
  using CT = compute_t<S>;
  CT best = std::numeric_limits<CT>::has_infinity ? -std::numeric_limits<CT>::infinity()
                                                  : std::numeric_limits<CT>::lowest();
  int64_t best_i = (w.lo[0] * g.in[1] + w.lo[1]) * g.in[2] + w.lo[2];
  for (int64_t id = w.lo[0]; id < w.hi[0]; id += w.step[0]) {
    for (int64_t ih = w.lo[1]; ih < w.hi[1]; ih += w.step[1]) {
      const S* row = plane + id * g.in_sp[0] + ih * g.in_sp[1];
      for (int64_t iw = w.lo[2]; iw < w.hi[2]; iw += w.step[2]) {
        const CT v = convert<CT>(row[iw * g.in_sp[2]]);
        if (v > best || is_nan_value(v)) {
          best = v;
          best_i = (id * g.in[1] + ih) * g.in[2] + iw;
        }
      }
    }
  }
  *best_out = best;
  *index_out = best_i;
}

}  // namespace ember::kernels::portable
