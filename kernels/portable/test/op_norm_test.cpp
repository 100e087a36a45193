// native_layer_norm, native_group_norm and the batch norms.
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/portable/test/return_list.h"
#include "kernels/portable/util/layer_norm_f32.h"
#include "kernels/test/tensor_factory.h"

namespace ember::testing {
namespace {

TEST(OpLayerNormTest, ValuesWeightBias) {
  TensorFactory tf;
  auto& x = tf.make<float>({2, 2}, {1, 3, 4, 6});
  auto& w = tf.make<float>({2}, {2, 1});
  auto& b = tf.make<float>({2}, {0, 10});
  auto& y = tf.make<float>({2, 2});
  auto& m = tf.make<float>({2, 1});
  auto& r = tf.make<float>({2, 1});
  ReturnList ret({&y, &m, &r});
  ASSERT_TRUE(call_kernel("aten::native_layer_norm.out",
                          {&x.ev, tf.list({2}), &w.ev, &b.ev, tf.d(0.0), &y.ev, &m.ev, &r.ev, &ret.ev},
                          false).ok());
  EXPECT_EQ(m.values<float>(), (std::vector<float>{2, 5}));
  EXPECT_NEAR(r.values<float>()[0], 1.0, 1e-6);
  auto v = y.values<float>();
  EXPECT_NEAR(v[0], -2, 1e-6);
  EXPECT_NEAR(v[1], 11, 1e-6);
  EXPECT_NEAR(v[2], -2, 1e-6);
  EXPECT_NEAR(v[3], 11, 1e-6);
}

TEST(OpLayerNormTest, Errors) {
  TensorFactory tf;
  auto& x = tf.make<float>({2, 3});
  auto& y = tf.make<float>({2, 3});
  auto& m = tf.make<float>({2, 1});
  auto& r = tf.make<float>({2, 1});
  ReturnList ret({&y, &m, &r});
  EXPECT_KERNEL_FAILS(call_kernel("aten::native_layer_norm.out",
                                  {&x.ev, tf.list({2}), tf.none(), tf.none(), tf.d(1e-5), &y.ev, &m.ev, &r.ev, &ret.ev}, false),
                      "aten::native_layer_norm.out", "suffix");
  auto& w = tf.make<float>({2});
  EXPECT_KERNEL_FAILS(call_kernel("aten::native_layer_norm.out",
                                  {&x.ev, tf.list({3}), &w.ev, tf.none(), tf.d(1e-5), &y.ev, &m.ev, &r.ev, &ret.ev}, false),
                      "aten::native_layer_norm.out", "weight");
  auto& wd = tf.make<double>({3});
  EXPECT_KERNEL_FAILS(call_kernel("aten::native_layer_norm.out",
                                  {&x.ev, tf.list({3}), &wd.ev, tf.none(), tf.d(1e-5), &y.ev, &m.ev, &r.ev, &ret.ev}, false),
                      "aten::native_layer_norm.out", "float64");
  auto& xi = tf.make<int32_t>({2, 3});
  EXPECT_KERNEL_FAILS(call_kernel("aten::native_layer_norm.out",
                                  {&xi.ev, tf.list({3}), tf.none(), tf.none(), tf.d(1e-5), &y.ev, &m.ev, &r.ev, &ret.ev}, false),
                      "aten::native_layer_norm.out", "int32");
}

TEST(OpGroupNormTest, ValuesAndErrors) {
  TensorFactory tf;
  // N=1, C=2, HxW=2, one group: mean 2.5, var 1.25.
  auto& x = tf.make<float>({1, 2, 2}, {1, 2, 3, 4});
  auto& w = tf.make<float>({2}, {1, 2});
  auto& y = tf.make<float>({1, 2, 2});
  auto& m = tf.make<float>({1, 1});
  auto& r = tf.make<float>({1, 1});
  ReturnList ret({&y, &m, &r});
  ASSERT_TRUE(call_kernel("aten::native_group_norm.out",
                          {&x.ev, &w.ev, tf.none(), tf.i(1), tf.i(2), tf.i(2), tf.i(1), tf.d(0.0),
                           &y.ev, &m.ev, &r.ev, &ret.ev}, false).ok());
  EXPECT_EQ(m.values<float>()[0], 2.5f);
  const double rs = 1 / std::sqrt(1.25);
  EXPECT_NEAR(r.values<float>()[0], rs, 1e-6);
  EXPECT_NEAR(y.values<float>()[3], 2 * 1.5 * rs, 1e-5);
  EXPECT_KERNEL_FAILS(call_kernel("aten::native_group_norm.out",
                                  {&x.ev, &w.ev, tf.none(), tf.i(1), tf.i(2), tf.i(2), tf.i(3), tf.d(0.0),
                                   &y.ev, &m.ev, &r.ev, &ret.ev}, false),
                      "aten::native_group_norm.out", "does not divide");
  EXPECT_KERNEL_FAILS(call_kernel("aten::native_group_norm.out",
                                  {&x.ev, &w.ev, tf.none(), tf.i(1), tf.i(2), tf.i(3), tf.i(1), tf.d(0.0),
                                   &y.ev, &m.ev, &r.ev, &ret.ev}, false),
                      "aten::native_group_norm.out", "HxW");
  auto& w3 = tf.make<float>({3});
  EXPECT_KERNEL_FAILS(call_kernel("aten::native_group_norm.out",
                                  {&x.ev, &w3.ev, tf.none(), tf.i(1), tf.i(2), tf.i(2), tf.i(1), tf.d(0.0),
                                   &y.ev, &m.ev, &r.ev, &ret.ev}, false),
                      "aten::native_group_norm.out", "weight");
}

TEST(OpBatchNormTest, NoTrainingChannelsLast) {
  TensorFactory tf;
  auto& x = tf.make<float>({1, 2, 1, 2}, {1, 2, 3, 4}, kChannelsLast);
  auto& rm = tf.make<float>({2}, {1, 3});
  auto& rv = tf.make<double>({2}, {4, 1});
  auto& b = tf.make<float>({2}, {0, 1});
  auto& y = tf.make<float>({1, 2, 1, 2}, {}, kChannelsLast);
  auto& s1 = tf.make<float>({0});
  auto& s2 = tf.make<float>({0});
  ReturnList ret({&y, &s1, &s2});
  ASSERT_TRUE(call_kernel("aten::_native_batch_norm_legit_no_training.out",
                          {&x.ev, tf.none(), &b.ev, &rm.ev, &rv.ev, tf.d(0.1), tf.d(0.0), &y.ev, &s1.ev, &s2.ev, &ret.ev},
                          false).ok());
  EXPECT_EQ(y.values<float>(), (std::vector<float>{0, 0.5, 1, 2}));
  auto& rv3 = tf.make<float>({3});
  EXPECT_KERNEL_FAILS(call_kernel("aten::_native_batch_norm_legit_no_training.out",
                                  {&x.ev, tf.none(), &b.ev, &rm.ev, &rv3.ev, tf.d(0.1), tf.d(0.0), &y.ev, &s1.ev, &s2.ev, &ret.ev},
                                  false),
                      "aten::_native_batch_norm_legit_no_training.out", "running_var");
  auto& x1 = tf.make<float>({2});
  EXPECT_KERNEL_FAILS(call_kernel("aten::_native_batch_norm_legit_no_training.out",
                                  {&x1.ev, tf.none(), &b.ev, &rm.ev, &rv.ev, tf.d(0.1), tf.d(0.0), &y.ev, &s1.ev, &s2.ev, &ret.ev},
                                  false),
                      "aten::_native_batch_norm_legit_no_training.out", "[N, C");
}

TEST(OpBatchNormTest, NoStatsBatchStatistics) {
  TensorFactory tf;
  auto& x = tf.make<double>({2, 1, 2}, {1, 3, 5, 7});
  auto& y = tf.make<double>({2, 1, 2});
  auto& m = tf.make<double>({1});
  auto& is = tf.make<double>({1});
  ReturnList ret({&y, &m, &is});
  ASSERT_TRUE(call_kernel("aten::_native_batch_norm_legit.no_stats_out",
                          {&x.ev, tf.none(), tf.none(), tf.b(true), tf.d(0.1), tf.d(0.0), &y.ev, &m.ev, &is.ev, &ret.ev},
                          false).ok());
  EXPECT_EQ(m.values<double>()[0], 4);
  EXPECT_NEAR(is.values<double>()[0], 1 / std::sqrt(5.0), 1e-12);
  EXPECT_NEAR(y.values<double>()[0], -3 / std::sqrt(5.0), 1e-12);
  EXPECT_KERNEL_FAILS(call_kernel("aten::_native_batch_norm_legit.no_stats_out",
                                  {&x.ev, tf.none(), tf.none(), tf.b(false), tf.d(0.1), tf.d(0.0), &y.ev, &m.ev, &is.ev, &ret.ev},
                                  false),
                      "aten::_native_batch_norm_legit.no_stats_out", "training");
}

TEST(OpLayerNormTest, BFloat16) {
  TensorFactory tf;
  auto& x = tf.make_from_floats<BFloat16>({1, 2}, {1, 3});
  auto& y = tf.make<BFloat16>({1, 2});
  auto& m = tf.make<BFloat16>({1, 1});
  auto& r = tf.make<BFloat16>({1, 1});
  ReturnList ret({&y, &m, &r});
  ASSERT_TRUE(call_kernel("aten::native_layer_norm.out",
                          {&x.ev, tf.list({2}), tf.none(), tf.none(), tf.d(0.0), &y.ev, &m.ev, &r.ev, &ret.ev},
                          false).ok());
  EXPECT_EQ(y.as_doubles<BFloat16>(), (std::vector<double>{-1, 1}));
  EXPECT_EQ(m.as_doubles<BFloat16>()[0], 2);
}

}  // namespace
}  // namespace ember::testing

// The float32 row path's two builds (baseline and, on AVX2 CPUs, the
// dispatched one) give the same bits; statistics match a float64 reference.
namespace ember::kernels::portable {
namespace {

TEST(LayerNormRowF32, BuildsAgreeAndMatchFloat64Reference) {
  std::mt19937 gen(5);
  std::normal_distribution<float> normal;
  for (int64_t n : {1, 7, 16, 17, 100, 768, 1000, 4099}) {
    std::vector<float> x(static_cast<size_t>(n)), w(x.size()), b(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      x[i] = 300.0f + normal(gen);  // |mean| >> std: the two-pass case.
      w[i] = normal(gen);
      b[i] = normal(gen);
    }
    std::vector<float> y1(x.size()), y2(x.size());
    float m1 = 0, r1 = 0, m2 = 0, r2 = 0;
    layer_norm_row_f32(x.data(), n, 1e-5, w.data(), b.data(), y1.data(), &m1, &r1);
    layer_norm_row_f32_baseline(x.data(), n, 1e-5, w.data(), b.data(), y2.data(), &m2, &r2);
    EXPECT_EQ(std::memcmp(y1.data(), y2.data(), y1.size() * sizeof(float)), 0) << n;
    EXPECT_EQ(m1, m2);
    EXPECT_EQ(r1, r2);
    double mean = 0, var = 0;
    for (float v : x) mean += v;
    mean /= static_cast<double>(n);
    for (float v : x) var += (v - mean) * (v - mean);
    var /= static_cast<double>(n);
    const double rstd = 1.0 / std::sqrt(var + 1e-5);
    EXPECT_NEAR(m1, mean, 1e-4) << n;
    EXPECT_NEAR(r1 / rstd, 1.0, 1e-4) << n;
    for (size_t i = 0; i < x.size(); i += 13) {
      const double want = (x[i] - mean) * rstd * w[i] + b[i];
      EXPECT_NEAR(y1[i], want, 2e-3 * (1.0 + std::fabs(want))) << n << " " << i;
    }
  }
}

}  // namespace
}  // namespace ember::kernels::portable
