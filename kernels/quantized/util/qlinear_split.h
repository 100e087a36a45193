// How a token-major linear GEMM (qlinear_vnni.h, qlinear_avx2.h) shares one
// call: panels of output channels against blocks of tokens whose activation
// rows stay in L2 while every panel of the task passes over them. Panels go
// to the tasks when there are enough of them (every task then reads only its
// own weights); otherwise tiles of tokens, every task all panels.
#pragma once

#include <cstdint>

#include "runtime/kernel/kernel_context.h"

namespace ember::kernels::quantized {

/// Calls body(panel, t0, t1) for every panel and block [t0, t1) of at most
/// `block` tokens (a multiple of `tile`, the microkernel's tokens), split
/// over ctx's thread pool; a task's blocks go in order, each over its panels.
template <typename F>
void qlinear_for_each_block(KernelContext& ctx, int64_t panels, int64_t tokens, int64_t tile,
                            int64_t block, const F& body) {
  const int64_t tiles = (tokens + tile - 1) / tile;
  const auto threads = static_cast<int64_t>(ctx.threads());
  const bool by_panels = panels >= threads || panels >= tiles;
  int64_t tasks = by_panels ? (panels < threads ? panels : threads)
                            : (tiles < threads ? tiles : threads);
  if (tasks < 1) tasks = 1;
  auto task = [&](size_t ti) {
    const auto t = static_cast<int64_t>(ti);
    const int64_t p0 = by_panels ? panels * t / tasks : 0;
    const int64_t p1 = by_panels ? panels * (t + 1) / tasks : panels;
    const int64_t r0 = by_panels ? 0 : tiles * t / tasks * tile;
    int64_t r1 = by_panels ? tokens : tiles * (t + 1) / tasks * tile;
    if (r1 > tokens) r1 = tokens;
    for (int64_t b0 = r0; b0 < r1; b0 += block) {
      const int64_t b1 = b0 + block < r1 ? b0 + block : r1;
      for (int64_t pn = p0; pn < p1; ++pn) body(pn, b0, b1);
    }
  };
  if (tasks <= 1) {
    task(0);
  } else {
    ctx.parallel_for(static_cast<size_t>(tasks), task);
  }
}

}  // namespace ember::kernels::quantized
