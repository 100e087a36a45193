// The builds of rope_row_f32 (rope_f32.h): one always-inline body, compiled
// baseline, under target("avx2") and under target("avx512f"), with
// contraction off (products and sums each round once, as eager's ops do).
#include "kernels/portable/util/rope_f32.h"

// target("avx512f") implies FMA: keep GCC from contracting x·c + r·s.
#pragma GCC optimize("fp-contract=off")

namespace ember::kernels::portable {
namespace {

// kUnit: every stride 1 (xs, cs and ys are not read).
template <bool kUnit>
[[gnu::always_inline]] inline void row(const float* x, int64_t xs, const float* c,
                                       const float* s, int64_t cs, int64_t n, float* y,
                                       int64_t ys) {
  const int64_t h = n / 2;
  auto at = [](int64_t i, int64_t stride) { return kUnit ? i : i * stride; };
  for (int64_t i = 0; i < h; ++i) {
    y[at(i, ys)] = x[at(i, xs)] * c[at(i, cs)] + (-x[at(i + h, xs)]) * s[at(i, cs)];
  }
  for (int64_t i = h; i < n; ++i) {
    y[at(i, ys)] = x[at(i, xs)] * c[at(i, cs)] + x[at(i - h, xs)] * s[at(i, cs)];
  }
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define EMBER_ROPE_X86 1
__attribute__((target("avx2"))) void row_avx2(const float* x, const float* c, const float* s,
                                              int64_t n, float* y) {
  row<true>(x, 1, c, s, 1, n, y, 1);
}

__attribute__((target("avx512f,prefer-vector-width=512"))) void row_avx512(
    const float* x, const float* c, const float* s, int64_t n, float* y) {
  row<true>(x, 1, c, s, 1, n, y, 1);
}
#else
#define EMBER_ROPE_X86 0
#endif

}  // namespace

void rope_row_f32(const float* x, int64_t xs, const float* cos, const float* sin, int64_t cs,
                  int64_t n, float* y, int64_t ys, Isa isa) {
  if (xs != 1 || cs != 1 || ys != 1) {
    row<false>(x, xs, cos, sin, cs, n, y, ys);
    return;
  }
#if EMBER_ROPE_X86
  if (isa >= Isa::kAvx512) {
    row_avx512(x, cos, sin, n, y);
    return;
  }
  if (isa >= Isa::kAvx2) {
    row_avx2(x, cos, sin, n, y);
    return;
  }
#else
  (void)isa;
#endif
  row<true>(x, 1, cos, sin, 1, n, y, 1);
}

}  // namespace ember::kernels::portable
