// constant_pad_nd, reflection_pad{1,2,3}d, replication_pad{1,2,3}d.
#include "kernels/test/tensor_factory.h"

namespace ember::testing {
namespace {

TEST(OpConstantPadNdTest, PadsAndCrops) {
  TensorFactory tf;
  auto& a = tf.make<int32_t>({2, 2}, {1, 2, 3, 4});
  auto& out = tf.make<int32_t>({3, 3});
  // Last dim: 1 before; dim 0: crop 1 before, 2 after.
  ASSERT_TRUE(call_kernel("aten::constant_pad_nd.out",
                          {&a.ev, tf.list({1, 0, -1, 2}), tf.i(9), &out.ev}).ok());
  EXPECT_EQ(out.values<int32_t>(), (std::vector<int32_t>{9, 3, 4, 9, 9, 9, 9, 9, 9}));
  auto& b = tf.make<bool>({1, 1, 1, 2}, {true, false}, kChannelsLast);
  auto& bout = tf.make<bool>({1, 1, 1, 4}, {}, kChannelsLast);
  ASSERT_TRUE(call_kernel("aten::constant_pad_nd.out",
                          {&b.ev, tf.list({1, 1}), tf.d(0.0), &bout.ev}).ok());
  EXPECT_EQ(bout.values<bool>(), (std::vector<bool>{false, true, false, false}));
}

TEST(OpConstantPadNdTest, Errors) {
  TensorFactory tf;
  const char* op = "aten::constant_pad_nd.out";
  auto& a = tf.make<float>({2, 2});
  auto& out = tf.make<float>({2, 2});
  EXPECT_KERNEL_FAILS(call_kernel(op, {&a.ev, tf.list({1}), tf.i(0), &out.ev}), op, "even length");
  EXPECT_KERNEL_FAILS(call_kernel(op, {&a.ev, tf.list({1, 1, 1, 1, 1, 1}), tf.i(0), &out.ev}), op,
                      "at most 2 * 2");
  EXPECT_KERNEL_FAILS(call_kernel(op, {&a.ev, tf.list({-2, -1}), tf.i(0), &out.ev}), op,
                      "invalid size -1");
}

TEST(OpReflectionPadTest, MirrorsWithoutTheEdge) {
  TensorFactory tf;
  auto& a = tf.make<float>({1, 3}, {1, 2, 3});
  auto& out = tf.make<float>({1, 7});
  ASSERT_TRUE(call_kernel("aten::reflection_pad1d.out", {&a.ev, tf.list({2, 2}), &out.ev}).ok());
  EXPECT_EQ(out.values<float>(), (std::vector<float>{3, 2, 1, 2, 3, 2, 1}));
  auto& b = tf.make<int64_t>({1, 2, 2}, {1, 2, 3, 4});
  auto& bout = tf.make<int64_t>({1, 3, 3});
  ASSERT_TRUE(
      call_kernel("aten::reflection_pad2d.out", {&b.ev, tf.list({1, 0, 0, 1}), &bout.ev}).ok());
  EXPECT_EQ(bout.values<int64_t>(), (std::vector<int64_t>{2, 1, 2, 4, 3, 4, 2, 1, 2}));
  auto& c = tf.make<double>({1, 1, 2, 1, 1}, {5, 6});
  auto& cout_ = tf.make<double>({1, 1, 3, 1, 1});
  ASSERT_TRUE(call_kernel("aten::reflection_pad3d.out",
                          {&c.ev, tf.list({0, 0, 0, 0, 1, 0}), &cout_.ev}).ok());
  EXPECT_EQ(cout_.values<double>(), (std::vector<double>{6, 5, 6}));
}

TEST(OpReplicationPadTest, RepeatsTheEdge) {
  TensorFactory tf;
  auto& a = tf.make<uint8_t>({1, 2}, {1, 2});
  auto& out = tf.make<uint8_t>({1, 5});
  ASSERT_TRUE(call_kernel("aten::replication_pad1d.out", {&a.ev, tf.list({1, 2}), &out.ev}).ok());
  EXPECT_EQ(out.values<uint8_t>(), (std::vector<uint8_t>{1, 1, 2, 2, 2}));
  std::vector<float> v = {1, 2, 3, 4};
  auto& b = tf.make<float>({1, 1, 2, 2}, v, kChannelsLast);
  auto& bout = tf.make<float>({1, 1, 3, 2}, {}, kChannelsLast);
  ASSERT_TRUE(
      call_kernel("aten::replication_pad2d.out", {&b.ev, tf.list({0, 0, 1, 0}), &bout.ev}).ok());
  EXPECT_EQ(bout.values<float>(), (std::vector<float>{1, 2, 1, 2, 3, 4}));
  auto& c = tf.make<float>({1, 1, 1, 1}, {7});
  auto& cout_ = tf.make<float>({1, 2, 2, 2});
  ASSERT_TRUE(call_kernel("aten::replication_pad3d.out",
                          {&c.ev, tf.list({1, 0, 0, 1, 1, 0}), &cout_.ev}).ok());
  EXPECT_EQ(cout_.values<float>(), std::vector<float>(8, 7));
}

TEST(OpPadTest, Errors) {
  TensorFactory tf;
  auto& a = tf.make<float>({1, 3});
  auto& out = tf.make<float>({1, 9});
  const char* r1 = "aten::reflection_pad1d.out";
  EXPECT_KERNEL_FAILS(call_kernel(r1, {&a.ev, tf.list({3, 3}), &out.ev}), r1,
                      "must be smaller than that dim");
  EXPECT_KERNEL_FAILS(call_kernel(r1, {&a.ev, tf.list({1}), &out.ev}), r1, "must have 2 entries");
  auto& v = tf.make<float>({3});
  EXPECT_KERNEL_FAILS(call_kernel(r1, {&v.ev, tf.list({1, 1}), &out.ev}), r1, "expected 2 or 3 dims");
  const char* p2 = "aten::replication_pad2d.out";
  auto& e = tf.make<float>({1, 0, 2});
  auto& eout = tf.make<float>({1, 2, 2});
  EXPECT_KERNEL_FAILS(call_kernel(p2, {&e.ev, tf.list({0, 0, 1, 1}), &eout.ev}), p2,
                      "is empty and cannot be replicated");
  auto& wrong = tf.make<double>({1, 5});
  EXPECT_KERNEL_FAILS(call_kernel(r1, {&a.ev, tf.list({1, 1}), &wrong.ev}), r1, "float64");
}

}  // namespace
}  // namespace ember::testing
