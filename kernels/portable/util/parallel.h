// Splitting a kernel's independent work over ctx's thread pool
// (docs/threading.md).
#pragma once

#include <cstdint>

#include "runtime/kernel/kernel_context.h"

namespace ember::kernels::portable {

/// Calls f(begin, end) over consecutive slices of [0, n) that together cover
/// it, one per task: at most ctx.threads() tasks, each at least
/// `min_per_task` units, slice bounds multiples of `align` (except n itself).
/// With one task f(0, n) runs on the calling thread. f must not fail.
template <typename F>
void parallel_range(KernelContext& ctx, int64_t n, int64_t min_per_task, int64_t align,
                    const F& f) {
  if (n <= 0) return;
  const int64_t units = (n + align - 1) / align;
  int64_t tasks = static_cast<int64_t>(ctx.threads());
  const int64_t min_units = (min_per_task + align - 1) / align;
  if (min_units > 1 && tasks > units / min_units) tasks = units / min_units;
  if (tasks > units) tasks = units;
  if (tasks <= 1) {
    f(int64_t{0}, n);
    return;
  }
  ctx.parallel_for(static_cast<size_t>(tasks), [&](size_t t) {
    const int64_t begin = units * static_cast<int64_t>(t) / tasks * align;
    const int64_t end_unit = units * (static_cast<int64_t>(t) + 1) / tasks * align;
    f(begin, end_unit < n ? end_unit : n);
  });
}

/// Calls f(begin, end, task) over at most ctx.threads() consecutive slices
/// of [0, n) that together cover it; `task` < ctx.threads() names the
/// slice's scratch. With one task f(0, n, 0) runs on the calling thread.
template <typename F>
void parallel_slices(KernelContext& ctx, int64_t n, const F& f) {
  const int64_t threads = static_cast<int64_t>(ctx.threads());
  const int64_t tasks = n < threads ? n : threads;
  if (tasks <= 1) {
    f(int64_t{0}, n, size_t{0});
    return;
  }
  ctx.parallel_for(static_cast<size_t>(tasks), [&](size_t t) {
    const int64_t ti = static_cast<int64_t>(t);
    f(n * ti / tasks, n * (ti + 1) / tasks, t);
  });
}

/// Elements of exp/erf-class work below which one thread is faster than
/// waking the pool (~10 µs on one core).
inline constexpr int64_t kParallelMinElements = int64_t{1} << 14;

/// The same for memory-bound work (adds, clamps, affine maps): per task.
inline constexpr int64_t kParallelMinCopyElements = int64_t{1} << 16;

}  // namespace ember::kernels::portable
