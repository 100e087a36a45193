#include <cmath>

#include "kernels/test/tensor_factory.h"

namespace ember::testing {
namespace {

constexpr const char* kOp = "aten::randn.out";

TEST(OpRandnTest, DeterministicPerStateAndNormal) {
  TensorFactory tf;
  auto& a = tf.make<double>({100, 100});
  auto& b = tf.make<double>({100, 100});
  KernelContext c1, c2;
  ASSERT_TRUE(call_kernel(c1, kOp, {tf.list({100, 100}), &a.ev}).ok());
  ASSERT_TRUE(call_kernel(c2, kOp, {tf.list({100, 100}), &b.ev}).ok());
  EXPECT_EQ(a.values<double>(), b.values<double>());
  double sum = 0, sq = 0;
  for (double v : a.values<double>()) {
    sum += v;
    sq += v * v;
  }
  const double mean = sum / 1e4, var = sq / 1e4 - mean * mean;
  EXPECT_NEAR(mean, 0, 0.05);
  EXPECT_NEAR(var, 1, 0.05);
  // The state advances: a second call differs.
  ASSERT_TRUE(call_kernel(c1, kOp, {tf.list({100, 100}), &b.ev}).ok());
  EXPECT_NE(a.values<double>(), b.values<double>());
}

TEST(OpRandnTest, SameLogicalValuesInAnyDimOrder) {
  TensorFactory tf;
  auto& a = tf.make<float>({1, 3, 2, 2});
  auto& b = tf.make<float>({1, 3, 2, 2}, {}, kChannelsLast);
  KernelContext c1, c2;
  ASSERT_TRUE(call_kernel(c1, kOp, {tf.list({1, 3, 2, 2}), &a.ev}).ok());
  ASSERT_TRUE(call_kernel(c2, kOp, {tf.list({1, 3, 2, 2}), &b.ev}).ok());
  EXPECT_EQ(a.values<float>(), b.values<float>());
  auto& h = tf.make<Half>({5});
  EXPECT_TRUE(call_kernel(kOp, {tf.list({5}), &h.ev}).ok());
  auto& bf = tf.make<BFloat16>({5});
  EXPECT_TRUE(call_kernel(kOp, {tf.list({5}), &bf.ev}).ok());
}

TEST(OpRandnTest, Errors) {
  TensorFactory tf;
  auto& i = tf.make<int32_t>({2});
  EXPECT_KERNEL_FAILS(call_kernel(kOp, {tf.list({2}), &i.ev}), kOp, "int32");
  auto& f = tf.make<float>({2});
  EXPECT_KERNEL_FAILS(call_kernel(kOp, {tf.list({3}), &f.ev}), kOp, "[3]");
}

}  // namespace
}  // namespace ember::testing
