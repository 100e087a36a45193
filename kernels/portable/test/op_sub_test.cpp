#include "kernels/test/tensor_factory.h"

namespace ember::testing {
namespace {

constexpr const char* kOp = "aten::sub.out";

TEST(OpSubTest, BroadcastWithAlpha) {
  TensorFactory tf;
  auto& a = tf.make<float>({2, 2}, {10, 20, 30, 40});
  auto& b = tf.make<float>({2}, {1, 2});
  auto& out = tf.make<float>({2, 2});
  auto r = call_kernel(kOp, {&a.ev, &b.ev, tf.i(2), &out.ev});
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(out.values<float>(), (std::vector<float>{8, 16, 28, 36}));
}

TEST(OpSubTest, IntegersAndChannelsLast) {
  TensorFactory tf;
  std::vector<int64_t> v(8);
  for (int i = 0; i < 8; ++i) v[i] = i * 3;
  auto& a = tf.make<int64_t>({1, 2, 2, 2}, v, kChannelsLast);
  auto& b = tf.make<int64_t>({1, 2, 2, 2}, {1, 1, 1, 1, 1, 1, 1, 1});
  auto& out = tf.make<int64_t>({1, 2, 2, 2});
  ASSERT_TRUE(call_kernel(kOp, {&a.ev, &b.ev, tf.i(1), &out.ev}).ok());
  for (int i = 0; i < 8; ++i) EXPECT_EQ(out.values<int64_t>()[i], i * 3 - 1);
}

TEST(OpSubTest, Errors) {
  TensorFactory tf;
  auto& bl = tf.make<bool>({2}, {true, false});
  EXPECT_KERNEL_FAILS(call_kernel(kOp, {&bl.ev, &bl.ev, tf.i(1), &bl.ev}), kOp, "bool");
  auto& a = tf.make<float>({2});
  auto& out = tf.make<float>({3});
  EXPECT_KERNEL_FAILS(call_kernel(kOp, {&a.ev, &a.ev, tf.i(1), &out.ev}), kOp, "out");
  auto& ia = tf.make<int32_t>({2});
  EXPECT_KERNEL_FAILS(call_kernel(kOp, {&ia.ev, &ia.ev, tf.d(0.5), &ia.ev}), kOp, "alpha");
}

}  // namespace
}  // namespace ember::testing
