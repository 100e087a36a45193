// The bf16 precision's ops through the kernel registry: ember_fused::linear_bf16
// and ember_fused::fused_convolution with a bfloat16 weight, against float64
// on the bf16-rounded operands (what the ops mean), and their refusals at
// load (prepare): dtypes, shapes, a weight that is not a constant, a
// depthwise bf16 convolution, and aten::convolution given a bf16 weight.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/portable/util/half.h"
#include "kernels/test/tensor_factory.h"
#include "runtime/kernel/thread_pool.h"

namespace ember::testing {
namespace {

using kernels::portable::BFloat16;

constexpr const char* kLinear = "ember_fused::linear_bf16.out";
constexpr const char* kConv = "ember_fused::fused_convolution.out";

double rounded(float x) { return static_cast<float>(BFloat16(x)); }

TEST(OpLinearBf16Test, MatchesTheRoundedProduct) {
  TensorFactory tf;
  const int m = 5, k = 37, n = 19;
  const auto xv = random_floats(size_t(m) * k, 1);
  const auto wv = random_floats(size_t(n) * k, 2);
  const auto bv = random_floats(n, 3);
  auto& x = tf.make<float>({m, k}, xv);
  auto& w = tf.make_from_floats<BFloat16>({n, k}, wv);
  auto& b = tf.make<float>({n}, bv);
  auto& out = tf.make<float>({m, n});
  KernelContext ctx(kLinear);
  const CallResult r = call_kernel(ctx, kLinear, {&x.ev, &w.ev, &b.ev, &out.ev}, true, {1, 2});
  ASSERT_TRUE(r.ok()) << r.message;
  const auto got = out.values<float>();
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      double s = 0, mag = 0;
      for (int q = 0; q < k; ++q) {
        const double p = rounded(xv[size_t(i) * k + q]) * rounded(wv[size_t(j) * k + q]);
        s += p;
        mag += std::fabs(p);
      }
      EXPECT_NEAR(got[size_t(i) * n + j], s + bv[j], 1e-5 * (mag + 1)) << i << ", " << j;
    }
  }
}

TEST(OpLinearBf16Test, RefusalsAtLoad) {
  TensorFactory tf;
  auto& x = tf.make<float>({2, 4});
  auto& w = tf.make_from_floats<BFloat16>({3, 4}, random_floats(12, 4));
  auto& w32 = tf.make<float>({3, 4});
  auto& w3d = tf.make_from_floats<BFloat16>({1, 3, 4}, random_floats(12, 5));
  auto& bias_bad = tf.make<float>({4});
  auto& x_bad = tf.make<float>({2, 5});
  auto& xi = tf.make<int32_t>({2, 4});
  auto& out = tf.make<float>({2, 3});
  auto call = [&](TestTensor& in, TestTensor& weight, EValue* bias, bool constant) {
    KernelContext ctx(kLinear);
    return call_kernel(ctx, kLinear, {&in.ev, &weight.ev, bias, &out.ev}, true,
                       constant ? std::vector<size_t>{1} : std::vector<size_t>{});
  };
  EXPECT_KERNEL_FAILS(call(xi, w, tf.none(), true), kLinear, "input: dtype int32");
  EXPECT_KERNEL_FAILS(call(x, w32, tf.none(), true), kLinear,
                      "weight: dtype float32, expected bfloat16");
  EXPECT_KERNEL_FAILS(call(x, w3d, tf.none(), true), kLinear, "weight: expected a 2-D");
  EXPECT_KERNEL_FAILS(call(x_bad, w, tf.none(), true), kLinear,
                      "input: its last dimension must be the weight's 4 inputs");
  EXPECT_KERNEL_FAILS(call(x, w, &bias_bad.ev, true), kLinear, "bias: expected shape [3]");
  EXPECT_KERNEL_FAILS(call(x, w, tf.none(), false), kLinear, "weight: must be a constant");
  EXPECT_TRUE(call(x, w, tf.none(), true).ok());
}

TEST(OpLinearBf16Test, ConvolutionWithABf16Weight) {
  TensorFactory tf;
  const int c = 6, oc = 10, h = 7, wd = 8;
  const auto xv = random_floats(size_t(c) * h * wd, 6);
  const auto wv = random_floats(size_t(oc) * c * 9, 7);
  auto& x = tf.make<float>({1, c, h, wd}, xv);
  auto& w = tf.make_from_floats<BFloat16>({oc, c, 3, 3}, wv);
  auto& out = tf.make<float>({1, oc, 4, 4});
  KernelContext ctx(kConv);
  alignas(64) static float scratch[1 << 12];  // positions as rows (16 positions)
  ctx.set_scratch(scratch, sizeof(scratch));
  // Stride 2, padding 1: the im2col GEMM path.
  const CallResult r =
      call_kernel(ctx, kConv,
                  {&x.ev, &w.ev, tf.none(), tf.list({2, 2}), tf.list({1, 1}), tf.list({1, 1}),
                   tf.i(1), tf.none(), tf.d(0.0), tf.none(), &out.ev},
                  true, {1});
  ASSERT_TRUE(r.ok()) << r.message;
  const auto got = out.values<float>();
  for (int o = 0; o < oc; ++o) {
    for (int y = 0; y < 4; ++y) {
      for (int xx = 0; xx < 4; ++xx) {
        double s = 0, mag = 0;
        for (int ci = 0; ci < c; ++ci) {
          for (int ky = 0; ky < 3; ++ky) {
            for (int kx = 0; kx < 3; ++kx) {
              const int iy = 2 * y - 1 + ky, ix = 2 * xx - 1 + kx;
              if (iy < 0 || iy >= h || ix < 0 || ix >= wd) continue;
              const double p = rounded(xv[(size_t(ci) * h + iy) * wd + ix]) *
                               rounded(wv[((size_t(o) * c + ci) * 3 + ky) * 3 + kx]);
              s += p;
              mag += std::fabs(p);
            }
          }
        }
        EXPECT_NEAR(got[(size_t(o) * 4 + y) * 4 + xx], std::fmax(s, 0.0), 1e-5 * (mag + 1));
      }
    }
  }
}

// Planes of at most 196 positions take the positions-as-rows form (outᵀ by
// bf16_gemm in the method's scratch, transposed into the planes); larger ones
// and short 1×1 layers on 14×14 the weight-as-A form. Every geometry against
// the rounded product, with a residual and a clamp, on 1 and 2 threads (the
// same bits); without the scratch prepare reserved, a clear error.
TEST(OpLinearBf16Test, ConvolutionOnSmallAndLargePlanes) {
  struct Geo {
    int c, oc, h, w, k, stride, pad;
  };
  const Geo geos[] = {
      {40, 24, 7, 7, 3, 1, 1},     // 49 positions, im2col through the offsets table
      {16, 36, 14, 13, 3, 2, 1},   // stride 2 onto 7×7
      {64, 40, 7, 7, 1, 1, 0},     // 1×1: the input transposed
      {24, 16, 14, 14, 1, 1, 0},   // 1×1 on 196 positions, short depth: weight as A
      {2048, 8, 14, 14, 1, 1, 0},  // 1×1 on 196 positions, deep: positions as rows
      {12, 20, 15, 15, 3, 1, 1},   // 225 positions: weight as A, im2col runs
      {8, 8, 5, 9, 3, 1, 0},       // 3×7
  };
  ThreadPool* pool = thread_pool_create(2);
  ASSERT_NE(pool, nullptr);
  for (const Geo& p : geos) {
    SCOPED_TRACE(::testing::Message() << p.c << "→" << p.oc << " " << p.h << "x" << p.w << " k"
                                      << p.k << " stride " << p.stride);
    TensorFactory tf;
    const int oh = (p.h + 2 * p.pad - p.k) / p.stride + 1;
    const int ow = (p.w + 2 * p.pad - p.k) / p.stride + 1;
    const auto xv = random_floats(size_t(p.c) * p.h * p.w, 16);
    const auto wv = random_floats(size_t(p.oc) * p.c * p.k * p.k, 17);
    const auto rv = random_floats(size_t(p.oc) * oh * ow, 18);
    auto& x = tf.make<float>({1, p.c, p.h, p.w}, xv);
    auto& w = tf.make_from_floats<BFloat16>({p.oc, p.c, p.k, p.k}, wv);
    auto& res = tf.make<float>({1, p.oc, oh, ow}, rv);
    std::vector<float> outs[2];
    for (int t = 0; t < 2; ++t) {
      auto& out = tf.make<float>({1, p.oc, oh, ow});
      KernelContext ctx(kConv);
      static std::vector<float> scratch(size_t{1} << 20);
      ctx.set_scratch(scratch.data(), scratch.size() * sizeof(float));
      ctx.set_thread_pool(t == 1 ? pool : nullptr);
      const CallResult r = call_kernel(
          ctx, kConv,
          {&x.ev, &w.ev, tf.none(), tf.list({p.stride, p.stride}), tf.list({p.pad, p.pad}),
           tf.list({1, 1}), tf.i(1), &res.ev, tf.d(-2.0), tf.d(2.0), &out.ev},
          true, {1});
      ASSERT_TRUE(r.ok()) << r.message;
      outs[t] = out.values<float>();
    }
    ASSERT_EQ(outs[0], outs[1]) << "1 and 2 threads differ";
    int clamped = 0;
    for (int o = 0; o < p.oc; ++o) {
      for (int y = 0; y < oh; ++y) {
        for (int xx = 0; xx < ow; ++xx) {
          double s = 0, mag = 0;
          for (int ci = 0; ci < p.c; ++ci) {
            for (int ky = 0; ky < p.k; ++ky) {
              for (int kx = 0; kx < p.k; ++kx) {
                const int iy = p.stride * y - p.pad + ky, ix = p.stride * xx - p.pad + kx;
                if (iy < 0 || iy >= p.h || ix < 0 || ix >= p.w) continue;
                const double v = rounded(xv[(size_t(ci) * p.h + iy) * p.w + ix]) *
                                 rounded(wv[((size_t(o) * p.c + ci) * p.k + ky) * p.k + kx]);
                s += v;
                mag += std::fabs(v);
              }
            }
          }
          const size_t i = (size_t(o) * oh + y) * ow + xx;
          const double want = std::clamp(s + rv[i], -2.0, 2.0);
          clamped += want == -2.0 || want == 2.0;
          ASSERT_NEAR(outs[0][i], want, 1e-5 * (mag + 1));
        }
      }
    }
    EXPECT_LT(clamped, p.oc * oh * ow) << "everything was clamped";
  }
  thread_pool_destroy(pool);
  // The positions-as-rows form without the scratch its prepare reserved.
  TensorFactory tf;
  auto& x = tf.make<float>({1, 8, 7, 7}, random_floats(8 * 49, 19));
  auto& w = tf.make_from_floats<BFloat16>({8, 8, 3, 3}, random_floats(8 * 72, 20));
  auto& out = tf.make<float>({1, 8, 7, 7});
  KernelContext ctx(kConv);
  EXPECT_KERNEL_FAILS(
      call_kernel(ctx, kConv,
                  {&x.ev, &w.ev, tf.none(), tf.list({1, 1}), tf.list({1, 1}), tf.list({1, 1}),
                   tf.i(1), tf.none(), tf.none(), tf.none(), &out.ev},
                  true, {1}),
      kConv, "the bf16 positions-as-rows path could not run");
}

TEST(OpLinearBf16Test, ConvolutionRefusalsAtLoad) {
  TensorFactory tf;
  auto& x = tf.make<float>({1, 4, 5, 5});
  auto& w = tf.make_from_floats<BFloat16>({6, 4, 1, 1}, random_floats(24, 8));
  auto& dw = tf.make_from_floats<BFloat16>({4, 1, 3, 3}, random_floats(36, 9));
  auto& out = tf.make<float>({1, 6, 5, 5});
  auto& dw_out = tf.make<float>({1, 4, 3, 3});
  auto fused = [&](TestTensor& weight, int groups, TestTensor& o, bool constant) {
    KernelContext ctx(kConv);
    alignas(64) static float scratch[1 << 12];
    ctx.set_scratch(scratch, sizeof(scratch));
    return call_kernel(ctx, kConv,
                       {&x.ev, &weight.ev, tf.none(), tf.list({1, 1}), tf.list({0, 0}),
                        tf.list({1, 1}), tf.i(groups), tf.none(), tf.none(), tf.none(), &o.ev},
                       true, constant ? std::vector<size_t>{1} : std::vector<size_t>{});
  };
  EXPECT_KERNEL_FAILS(fused(w, 1, out, false), kConv,
                      "weight: a bfloat16 weight must be a contiguous constant");
  EXPECT_KERNEL_FAILS(fused(dw, 4, dw_out, true), kConv,
                      "weight: a bfloat16 weight with a float32 input takes the GEMM path only");
  EXPECT_TRUE(fused(w, 1, out, true).ok());
  const char* aten = "aten::convolution.out";
  KernelContext ctx(aten);
  EXPECT_KERNEL_FAILS(
      call_kernel(ctx, aten,
                  {&x.ev, &w.ev, tf.none(), tf.list({1, 1}), tf.list({0, 0}), tf.list({1, 1}),
                   tf.b(false), tf.list({0, 0}), tf.i(1), &out.ev},
                  true, {1}),
      aten, "weight: dtype bfloat16, the input's is float32");
}

}  // namespace
}  // namespace ember::testing
