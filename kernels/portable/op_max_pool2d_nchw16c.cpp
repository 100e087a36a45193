// ember_fused::max_pool2d_nchw16c.out(Tensor self, int[2] kernel_size, int[2] stride,
//     int[2] padding, bool ceil_mode, *, Tensor(a!) out) -> Tensor(a!)
//
// 2-D max pooling (dilation 1, no indices) of a float32 NCHW16c tensor
// [N, C/16, H, W, 16] into [N, C/16, OH, OW, 16]: ResNet's first pool between
// a blocked stem and the blocked convolutions (passes/nchw16c_layout.py).
// Each output position takes the 16 channels of a block at once: the window's
// positions are 16 contiguous floats each, so the max is one vector per tap
// (the NCHW kernel walks one channel plane at a time). Eager's sizes and
// padding (pool_windows); NaN wins, as in eager.
#include <cstring>
#include <limits>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#endif

#include "kernels/portable/util/args.h"
#include "kernels/portable/util/conv_nchw16c.h"
#include "kernels/portable/util/isa_target.h"
#include "kernels/portable/util/parallel.h"
#include "kernels/portable/util/pool.h"
#include "kernels/generated/functions/portable/op_max_pool2d_nchw16c.h"

namespace ember::kernels::portable {
namespace {

constexpr int64_t kB = kNchw16cBlock;

// One window's max over a block's 16 channels: SSE2 (every x86-64 has it;
// GCC's generic vectors scalarised the NaN select), else plain loops.
struct BlockMax {
#if EMBER_ISA_X86
  __m128 m[4], nan[4];
  BlockMax() {
    for (int i = 0; i < 4; ++i) {
      m[i] = _mm_set1_ps(-std::numeric_limits<float>::infinity());
      nan[i] = _mm_setzero_ps();
    }
  }
  void add(const float* v) {
    for (int i = 0; i < 4; ++i) {
      const __m128 x = _mm_loadu_ps(v + 4 * i);
      nan[i] = _mm_or_ps(nan[i], _mm_cmpunord_ps(x, x));
      m[i] = _mm_max_ps(m[i], x);
    }
  }
  void store(float* out) const {  // NaN wins, as in eager
    const __m128 q = _mm_set1_ps(std::numeric_limits<float>::quiet_NaN());
    for (int i = 0; i < 4; ++i) {
      _mm_storeu_ps(out + 4 * i, _mm_or_ps(_mm_and_ps(nan[i], q), _mm_andnot_ps(nan[i], m[i])));
    }
  }
#else
  float m[kB];
  BlockMax() {
    for (float& v : m) v = -std::numeric_limits<float>::infinity();
  }
  void add(const float* v) {
    for (int64_t l = 0; l < kB; ++l) m[l] = (v[l] > m[l] || v[l] != v[l]) ? v[l] : m[l];
  }
  void store(float* out) const { std::memcpy(out, m, sizeof(m)); }
#endif
};

// One output row of one block: out[ox] = max over the window, the window
// clipped to the input (padding never wins: eager pads with -inf).
void pool_row(const float* x, int64_t h, int64_t w, const PoolGeometry& g, int64_t oy,
              float* out) {
  const int64_t y0 = oy * g.s[1] - g.p[1];
  const int64_t ky0 = y0 < 0 ? -y0 : 0;
  const int64_t ky1 = y0 + g.k[1] > h ? h - y0 : g.k[1];
  for (int64_t ox = 0; ox < g.out[2]; ++ox) {
    const int64_t x0 = ox * g.s[2] - g.p[2];
    const int64_t kx0 = x0 < 0 ? -x0 : 0;
    const int64_t kx1 = x0 + g.k[2] > w ? w - x0 : g.k[2];
    BlockMax m;
    for (int64_t ky = ky0; ky < ky1; ++ky) {
      for (int64_t kx = kx0; kx < kx1; ++kx) m.add(x + ((y0 + ky) * w + x0 + kx) * kB);
    }
    m.store(out + ox * kB);
  }
}

}  // namespace

void max_pool2d_nchw16c_out(KernelContext& ctx, const Tensor& self, IntSpan kernel_size,
                            IntSpan stride, IntSpan padding, bool ceil_mode, Tensor& out) {
  if (!check_nchw16c_tensor(ctx, self, "self")) return;
  EMBER_KERNEL_CHECK(ctx, self.size(2) > 0 && self.size(3) > 0,
                     "self: spatial size %d×%d is empty", self.size(2), self.size(3));
  if (!check_dtype(ctx, out, "out", ScalarType::Float)) return;
  PoolGeometry g;
  g.nd = 2;
  g.in[1] = self.size(2);
  g.in[2] = self.size(3);
  if (!pool_windows(ctx, kernel_size, stride, padding, std::nullopt, ceil_mode, &g)) return;
  const int32_t sizes[5] = {self.size(0), self.size(1), static_cast<int32_t>(g.out[1]),
                            static_cast<int32_t>(g.out[2]), static_cast<int32_t>(kB)};
  if (!resize_out(ctx, out, sizes)) return;
  EMBER_KERNEL_CHECK(ctx, out.is_contiguous_dim_order(), "out: must be contiguous");
  EMBER_KERNEL_CHECK(ctx, !tensors_overlap(self, out), "self: its memory overlaps the output's");
  const int64_t h = self.size(2), w = self.size(3);
  const int64_t planes = static_cast<int64_t>(self.size(0)) * self.size(1);
  const int64_t rows = planes * g.out[1];
  const float* x = self.data_ptr<const float>();
  float* o = out.data_ptr<float>();
  const int64_t row_floats = g.out[2] * kB;
  const int64_t min_rows = (kParallelMinCopyElements + row_floats - 1) / row_floats;
  parallel_range(ctx, rows, min_rows, 1, [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) {
      const int64_t plane = r / g.out[1], oy = r % g.out[1];
      pool_row(x + plane * h * w * kB, h, w, g, oy, o + r * row_floats);
    }
  });
}

}  // namespace ember::kernels::portable
