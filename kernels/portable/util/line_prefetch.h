// Software prefetch spread over a kernel's steps.
//
// A kernel that streams a weight from memory requests the next block while
// it multiplies the current one. Requests issued all at once fill the core's
// line fill buffers and stall it (the GEMM's 768 → 3072 layer spent 5% of
// its time on a burst of prefetches before each tile); a few lines per step
// of the kernel's inner loop overlap the multiply-adds instead. Used by the
// float GEMM microkernels, the NCHW16c row kernels and the AMX tile blocks.
#pragma once

#include <cstdint>

namespace ember::kernels::portable {

/// `lines` 64-byte lines from `next`, requested `per_step` at each step().
/// kLocality is __builtin_prefetch's (3: into L1, 2: into L2).
template <int kLocality = 3>
struct LinePrefetch {
  const char* next = nullptr;
  const char* end = nullptr;
  int64_t per_step = 0;

  LinePrefetch() = default;
  /// `lines` lines from `from` spread over `steps` steps (none when either
  /// is zero or `from` is null).
  LinePrefetch(const void* from, int64_t lines, int64_t steps) {
    if (from == nullptr || lines <= 0 || steps <= 0) return;
    next = static_cast<const char*>(from);
    end = next + lines * 64;
    per_step = (lines + steps - 1) / steps;
  }

  [[gnu::always_inline]] void step() {
    for (int64_t l = 0; l < per_step && next < end; ++l, next += 64) {
      __builtin_prefetch(next, 0, kLocality);
    }
  }
};

}  // namespace ember::kernels::portable
