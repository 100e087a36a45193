// ember_fused::rms_norm (op_rms_norm.cpp, util/rms_norm_f32.h): every ISA
// build the host has gives the baseline's bits, and so does a row at a
// stride; the row against a float64 reference, relative to the output's
// magnitude, over lengths around the 16 lanes; the op over a transposed
// (non-unit-stride) input, no weight, empty input and rows split over
// threads; and its errors (a weight of the wrong length, an int input).
// python/tests/test_fuse_rms_norm.py compares whole programs with eager.
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/portable/util/rms_norm_f32.h"
#include "kernels/test/isa_levels.h"
#include "kernels/test/tensor_factory.h"
#include "runtime/kernel/thread_pool.h"

namespace ember::kernels::portable {
namespace {

TEST(RmsNormRowF32, BuildsAndStridesGiveTheBaselinesBitsAndMatchFloat64) {
  std::mt19937 gen(11);
  std::normal_distribution<float> normal;
  for (int64_t n : {1, 7, 15, 16, 17, 33, 64, 100, 2048, 4099}) {
    std::vector<float> x(static_cast<size_t>(n)), w(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      x[i] = 4.0f * normal(gen);
      w[i] = normal(gen);
    }
    for (const float* wp : {static_cast<const float*>(w.data()),
                            static_cast<const float*>(nullptr)}) {
      std::vector<float> base(x.size());
      rms_norm_row_f32(x.data(), 1, n, 1e-6f, wp, base.data(), 1, Isa::kBaseline);
      for (Isa isa : testing::host_isa_levels()) {
        std::vector<float> y(x.size(), -1.0f);
        rms_norm_row_f32(x.data(), 1, n, 1e-6f, wp, y.data(), 1, isa);
        EXPECT_EQ(std::memcmp(y.data(), base.data(), y.size() * sizeof(float)), 0)
            << isa_name(isa) << " n " << n;
      }
      // The row at strides 3 (input) and 2 (output).
      std::vector<float> xs(x.size() * 3, NAN), ys(x.size() * 2, -1.0f);
      for (size_t i = 0; i < x.size(); ++i) xs[3 * i] = x[i];
      rms_norm_row_f32(xs.data(), 3, n, 1e-6f, wp, ys.data(), 2);
      for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(ys[2 * i], base[i]) << n << " " << i;
      double ss = 0, mag = 0;
      for (float v : x) ss += static_cast<double>(v) * v;
      const double r = 1.0 / std::sqrt(ss / static_cast<double>(n) + 1e-6);
      for (size_t i = 0; i < x.size(); ++i) mag = std::fmax(mag, std::fabs(x[i] * r));
      for (size_t i = 0; i < x.size(); ++i) {
        const double want = x[i] * r * (wp != nullptr ? w[i] : 1.0f);
        ASSERT_NEAR(base[i], want, 2e-6 * mag * 4.0) << n << " " << i;
      }
    }
  }
}

TEST(OpRmsNormTest, TransposedInputNoWeightAndThreads) {
  testing::TensorFactory tf;
  // [3, 5] stored transposed (dim order {1, 0}): the rows have stride 3.
  std::vector<float> xv;
  for (int i = 0; i < 15; ++i) xv.push_back(static_cast<float>(i % 7) - 2.5f);
  auto& x = tf.make<float>({3, 5}, xv, {1, 0});
  auto& w = tf.make<float>({5}, {1.0f, -2.0f, 0.5f, 3.0f, 1.5f});
  auto& y = tf.make<float>({3, 5});
  ASSERT_TRUE(testing::call_kernel("ember_fused::rms_norm.out",
                                   {&x.ev, &w.ev, tf.d(1e-5), &y.ev}).ok());
  auto& y0 = tf.make<float>({3, 5});
  ASSERT_TRUE(testing::call_kernel("ember_fused::rms_norm.out",
                                   {&x.ev, tf.none(), tf.d(1e-5), &y0.ev}).ok());
  const std::vector<float> got = y.values<float>(), got0 = y0.values<float>();
  const std::vector<float> wv = w.values<float>();
  for (int r = 0; r < 3; ++r) {
    double ss = 0;
    for (int c = 0; c < 5; ++c) ss += xv[r * 5 + c] * xv[r * 5 + c];
    const double rs = 1.0 / std::sqrt(ss / 5 + 1e-5);
    for (int c = 0; c < 5; ++c) {
      EXPECT_NEAR(got[r * 5 + c], xv[r * 5 + c] * rs * wv[c], 1e-5) << r << "," << c;
      EXPECT_NEAR(got0[r * 5 + c], xv[r * 5 + c] * rs, 1e-5) << r << "," << c;
    }
  }
  // 600 rows of 256: split over two threads, each row as on one.
  std::vector<float> big(600 * 256);
  std::mt19937 gen(3);
  std::normal_distribution<float> normal;
  for (auto& v : big) v = normal(gen);
  auto& xb = tf.make<float>({600, 256}, big);
  auto& yb = tf.make<float>({600, 256});
  ThreadPool* pool = thread_pool_create(2);
  ASSERT_NE(pool, nullptr);
  KernelContext ctx("ember_fused::rms_norm.out");
  ctx.set_thread_pool(pool);
  const bool ran = testing::call_kernel(ctx, "ember_fused::rms_norm.out",
                                        {&xb.ev, tf.none(), tf.d(1e-6), &yb.ev}).ok();
  thread_pool_destroy(pool);
  ASSERT_TRUE(ran);
  const std::vector<float> gb = yb.values<float>();
  for (int r = 0; r < 600; r += 37) {
    std::vector<float> want(256);
    rms_norm_row_f32(big.data() + r * 256, 1, 256, 1e-6f, nullptr, want.data(), 1);
    ASSERT_EQ(std::memcmp(gb.data() + r * 256, want.data(), 256 * sizeof(float)), 0) << r;
  }
  // Empty input: nothing to do, the shape taken.
  auto& xe = tf.make<float>({0, 4});
  auto& ye = tf.make<float>({0, 4});
  EXPECT_TRUE(testing::call_kernel("ember_fused::rms_norm.out",
                                   {&xe.ev, tf.none(), tf.d(1e-6), &ye.ev}).ok());
}

TEST(OpRmsNormTest, Errors) {
  testing::TensorFactory tf;
  auto& x = tf.make<float>({2, 4});
  auto& w3 = tf.make<float>({3});
  auto& y = tf.make<float>({2, 4});
  auto r = testing::call_kernel("ember_fused::rms_norm.out", {&x.ev, &w3.ev, tf.d(1e-6), &y.ev});
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.message.find("weight must be float32 [4]"), std::string::npos) << r.message;
  auto& xi = tf.make<int32_t>({2, 4});
  auto& yi = tf.make<int32_t>({2, 4});
  r = testing::call_kernel("ember_fused::rms_norm.out", {&xi.ev, tf.none(), tf.d(1e-6), &yi.ev});
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.message.find("float32"), std::string::npos) << r.message;
}

}  // namespace
}  // namespace ember::kernels::portable
