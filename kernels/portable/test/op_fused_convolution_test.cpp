// ember_fused::fused_convolution.out: the convolution, + residual, then the
// clamp, against a float64 reference, on the prepared GEMM path (constant
// weight), the per-call path and the depthwise path (Winograd: the pytest); and its refusals: a
// residual of another shape, a residual that shares the output's memory,
// min > max, a dtype other than float32.
#include <algorithm>
#include <cmath>

#include "kernels/test/tensor_factory.h"

namespace ember::testing {
namespace {

constexpr const char* kOp = "ember_fused::fused_convolution.out";

struct Case {
  int n, c, h, w, oc, k, pad, groups;
};

// conv2d (stride 1) + bias + residual, clamped to [lo, hi], in float64.
std::vector<double> reference(const Case& p, const std::vector<float>& x,
                              const std::vector<float>& wt, const std::vector<float>& bias,
                              const std::vector<float>& res, double lo, double hi) {
  const int oh = p.h + 2 * p.pad - p.k + 1, ow = p.w + 2 * p.pad - p.k + 1;
  const int cg = p.c / p.groups, ocg = p.oc / p.groups;
  std::vector<double> out(size_t(p.n) * p.oc * oh * ow);
  for (int b = 0; b < p.n; ++b)
    for (int o = 0; o < p.oc; ++o)
      for (int y = 0; y < oh; ++y)
        for (int xx = 0; xx < ow; ++xx) {
          double s = bias[o];
          for (int ci = 0; ci < cg; ++ci)
            for (int ky = 0; ky < p.k; ++ky)
              for (int kx = 0; kx < p.k; ++kx) {
                const int iy = y - p.pad + ky, ix = xx - p.pad + kx;
                if (iy < 0 || iy >= p.h || ix < 0 || ix >= p.w) continue;
                const int cin = (o / ocg) * cg + ci;
                s += double(x[((size_t(b) * p.c + cin) * p.h + iy) * p.w + ix]) *
                     wt[((size_t(o) * cg + ci) * p.k + ky) * p.k + kx];
              }
          const size_t i = ((size_t(b) * p.oc + o) * oh + y) * ow + xx;
          out[i] = std::clamp(s + res[i], lo, hi);
        }
  return out;
}

// scratch: the method's scratch memory, which the small-plane GEMM
// (positions as rows) computes outᵀ into; without it, it writes out strided.
void check(const Case& p, bool constant_weight, bool scratch = false) {
  TensorFactory tf;
  const int oh = p.h + 2 * p.pad - p.k + 1, ow = p.w + 2 * p.pad - p.k + 1;
  const auto xv = random_floats(size_t(p.n) * p.c * p.h * p.w, 1);
  const auto wv = random_floats(size_t(p.oc) * (p.c / p.groups) * p.k * p.k, 2);
  const auto bv = random_floats(p.oc, 3);
  const auto rv = random_floats(size_t(p.n) * p.oc * oh * ow, 4);
  auto& x = tf.make<float>({p.n, p.c, p.h, p.w}, xv);
  auto& w = tf.make<float>({p.oc, p.c / p.groups, p.k, p.k}, wv);
  auto& b = tf.make<float>({p.oc}, bv);
  auto& r = tf.make<float>({p.n, p.oc, oh, ow}, rv);
  auto& out = tf.make<float>({p.n, p.oc, oh, ow});
  KernelContext ctx(kOp);
  alignas(64) static float scratch_memory[1 << 16];
  if (scratch) ctx.set_scratch(scratch_memory, sizeof(scratch_memory));
  const CallResult result =
      call_kernel(ctx, kOp,
                  {&x.ev, &w.ev, &b.ev, tf.list({1, 1}), tf.list({p.pad, p.pad}),
                   tf.list({1, 1}), tf.i(p.groups), &r.ev, tf.d(-0.5), tf.d(0.75), &out.ev},
                  true, constant_weight ? std::vector<size_t>{1, 2} : std::vector<size_t>{});
  ASSERT_TRUE(result.ok()) << result.message;
  const auto want = reference(p, xv, wv, bv, rv, -0.5, 0.75);
  const auto got = out.values<float>();
  ASSERT_EQ(got.size(), want.size());
  int at_bounds = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    // Sums of up to 4.6k terms of magnitude ~1: 1e-5 of the range is ~80 ulp.
    ASSERT_NEAR(got[i], want[i], 1e-5) << "element " << i;
    at_bounds += want[i] == -0.5 || want[i] == 0.75;
  }
  EXPECT_GT(at_bounds, 0) << "the clamp was never exercised";
  EXPECT_LT(at_bounds, static_cast<int>(want.size())) << "everything was clamped";
}

TEST(OpFusedConvolutionTest, MatchesReferenceOnEveryPath) {
  const Case cases[] = {
      {1, 16, 7, 9, 24, 1, 0, 1},    // pointwise GEMM
      {2, 8, 11, 10, 20, 3, 1, 1},   // im2col GEMM
      {1, 300, 5, 5, 40, 1, 0, 1},   // k over two GEMM k-blocks
      {1, 12, 8, 8, 18, 3, 1, 3},    // grouped
      {1, 16, 9, 9, 16, 3, 1, 16},   // depthwise
      {1, 32, 7, 7, 64, 3, 1, 1},    // 7×7 plane: positions as GEMM rows (AVX2, AVX-512)
      {2, 320, 7, 7, 64, 1, 0, 1},   // the same, pointwise
  };
  // The Winograd path needs the method's scratch memory, which call_kernel does
  // not give: test_fuse_conv_activation.py runs it through a loaded method.
  for (const Case& p : cases) {
    SCOPED_TRACE(::testing::Message() << "c=" << p.c << " oc=" << p.oc << " k=" << p.k
                                    << " groups=" << p.groups);
    check(p, /*constant_weight=*/true);
    check(p, /*constant_weight=*/true, /*scratch=*/true);
    check(p, /*constant_weight=*/false);
  }
}

TEST(OpFusedConvolutionTest, Refusals) {
  TensorFactory tf;
  auto& x = tf.make<float>({1, 2, 4, 4});
  auto& w = tf.make<float>({3, 2, 1, 1});
  auto& out = tf.make<float>({1, 3, 4, 4});
  auto& small = tf.make<float>({1, 3, 2, 2});
  auto call = [&](TestTensor& in, TestTensor* res, EValue* lo, EValue* hi, TestTensor& o) {
    return call_kernel(kOp, {&in.ev, &w.ev, tf.none(), tf.list({1, 1}), tf.list({0, 0}),
                             tf.list({1, 1}), tf.i(1), res != nullptr ? &res->ev : tf.none(), lo,
                             hi, &o.ev});
  };
  EXPECT_KERNEL_FAILS(call(x, &small, tf.none(), tf.none(), out), kOp,
                      "residual: shape [1, 3, 2, 2] is not the output's [1, 3, 4, 4]");
  EXPECT_KERNEL_FAILS(call(x, &out, tf.none(), tf.none(), out), kOp,
                      "residual: its memory overlaps the output's");
  EXPECT_KERNEL_FAILS(call(x, nullptr, tf.d(1.0), tf.d(0.0), out), kOp,
                      "min: 1 is greater than max 0");
  auto& xi = tf.make<int32_t>({1, 2, 4, 4});
  EXPECT_KERNEL_FAILS(call(xi, nullptr, tf.none(), tf.none(), out), kOp,
                      "input: dtype int32 is not supported (float32 only)");
  // Within its bounds it runs.
  auto& res = tf.make<float>({1, 3, 4, 4});
  EXPECT_TRUE(call(x, &res, tf.d(0.0), tf.none(), out).ok());
}

}  // namespace
}  // namespace ember::testing
