#include "kernels/test/tensor_factory.h"

namespace ember::testing {
namespace {

TEST(OpFullTest, FillsEveryDtype) {
  TensorFactory tf;
  auto& f = tf.make<float>({2, 2});
  ASSERT_TRUE(call_kernel("aten::full.out", {tf.list({2, 2}), tf.d(1.5), &f.ev}).ok());
  EXPECT_EQ(f.values<float>(), std::vector<float>(4, 1.5f));
  auto& l = tf.make<int64_t>({2});
  ASSERT_TRUE(call_kernel("aten::full.out", {tf.list({2}), tf.i(INT64_MAX), &l.ev}).ok());
  EXPECT_EQ(l.values<int64_t>(), std::vector<int64_t>(2, INT64_MAX));
  auto& b = tf.make<bool>({1, 2, 1, 1}, {}, kChannelsLast);
  ASSERT_TRUE(call_kernel("aten::full.out", {tf.list({1, 2, 1, 1}), tf.b(true), &b.ev}).ok());
  EXPECT_EQ(b.values<bool>(), std::vector<bool>(2, true));
  auto& z = tf.make<double>({3}, {1, 2, 3});
  ASSERT_TRUE(call_kernel("aten::zeros.out", {tf.list({3}), &z.ev}).ok());
  EXPECT_EQ(z.values<double>(), std::vector<double>(3, 0.0));
  auto& e = tf.make<float>({0});
  EXPECT_TRUE(call_kernel("aten::zeros.out", {tf.list({0}), &e.ev}).ok());
}

TEST(OpFullTest, Errors) {
  TensorFactory tf;
  auto& f = tf.make<float>({2, 2});
  EXPECT_KERNEL_FAILS(call_kernel("aten::full.out", {tf.list({2, 3}), tf.d(1), &f.ev}),
                      "aten::full.out", "[2, 3]");
  EXPECT_KERNEL_FAILS(call_kernel("aten::full.out", {tf.list({2, -1}), tf.d(1), &f.ev}),
                      "aten::full.out", "invalid size");
  auto& q = tf.zeros(ScalarType::QInt8, {2});
  EXPECT_KERNEL_FAILS(call_kernel("aten::zeros.out", {tf.list({2}), &q.ev}), "aten::zeros.out",
                      "qint8");
}

}  // namespace
}  // namespace ember::testing
