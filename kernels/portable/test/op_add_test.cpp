#include "kernels/test/tensor_factory.h"

namespace ember::testing {
namespace {

constexpr const char* kOp = "aten::add.out";

TEST(OpAddTest, SameShapeWithAlpha) {
  TensorFactory tf;
  auto& a = tf.make<float>({2, 2}, {1, 2, 3, 4});
  auto& b = tf.make<float>({2, 2}, {10, 20, 30, 40});
  auto& out = tf.make<float>({2, 2});
  auto r = call_kernel(kOp, {&a.ev, &b.ev, tf.d(0.5), &out.ev});
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(out.values<float>(), (std::vector<float>{6, 12, 18, 24}));
}

TEST(OpAddTest, BroadcastsBothSides) {
  TensorFactory tf;
  auto& a = tf.make<float>({2, 1}, {1, 2});
  auto& b = tf.make<float>({3}, {10, 20, 30});
  auto& out = tf.make<float>({2, 3});
  auto r = call_kernel(kOp, {&a.ev, &b.ev, tf.i(1), &out.ev});
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(out.values<float>(), (std::vector<float>{11, 21, 31, 12, 22, 32}));
}

TEST(OpAddTest, ChannelsLastInputsAndOutput) {
  TensorFactory tf;
  std::vector<float> av(2 * 3 * 2 * 2), bv(3);
  for (size_t i = 0; i < av.size(); ++i) av[i] = static_cast<float>(i);
  bv = {100, 200, 300};
  auto& a = tf.make<float>({2, 3, 2, 2}, av, kChannelsLast);
  auto& b = tf.make<float>({1, 3, 1, 1}, bv);
  auto& out_cl = tf.make<float>({2, 3, 2, 2}, {}, kChannelsLast);
  auto& out = tf.make<float>({2, 3, 2, 2});
  ASSERT_TRUE(call_kernel(kOp, {&a.ev, &b.ev, tf.i(1), &out_cl.ev}).ok());
  ASSERT_TRUE(call_kernel(kOp, {&a.ev, &b.ev, tf.i(1), &out.ev}).ok());
  std::vector<float> want(av.size());
  for (size_t i = 0; i < av.size(); ++i) want[i] = av[i] + bv[(i / 4) % 3];
  EXPECT_EQ(out_cl.values<float>(), want);
  EXPECT_EQ(out.values<float>(), want);
}

TEST(OpAddTest, IntegersAndPromotion) {
  TensorFactory tf;
  auto& a = tf.make<int32_t>({3}, {1, 2, 3});
  auto& b = tf.make<int64_t>({3}, {10, 20, 30});
  auto& out = tf.make<int64_t>({3});
  ASSERT_TRUE(call_kernel(kOp, {&a.ev, &b.ev, tf.i(2), &out.ev}).ok());
  EXPECT_EQ(out.values<int64_t>(), (std::vector<int64_t>{21, 42, 63}));
  // int tensor + 0-dim float tensor → float.
  auto& half = tf.make<float>({}, {0.5f});
  auto& fout = tf.make<float>({3});
  ASSERT_TRUE(call_kernel(kOp, {&a.ev, &half.ev, tf.i(1), &fout.ev}).ok());
  EXPECT_EQ(fout.values<float>(), (std::vector<float>{1.5f, 2.5f, 3.5f}));
}

TEST(OpAddTest, Int32WrapsOnOverflow) {
  TensorFactory tf;
  auto& a = tf.make<int32_t>({1}, {INT32_MAX});
  auto& b = tf.make<int32_t>({1}, {1});
  auto& out = tf.make<int32_t>({1});
  ASSERT_TRUE(call_kernel(kOp, {&a.ev, &b.ev, tf.i(1), &out.ev}).ok());
  EXPECT_EQ(out.values<int32_t>()[0], INT32_MIN);
}

TEST(OpAddTest, BoolIsLogicalOr) {
  TensorFactory tf;
  auto& a = tf.make<bool>({4}, {false, true, false, true});
  auto& b = tf.make<bool>({4}, {false, false, true, true});
  auto& out = tf.make<bool>({4});
  ASSERT_TRUE(call_kernel(kOp, {&a.ev, &b.ev, tf.b(true), &out.ev}).ok());
  EXPECT_EQ(out.values<bool>(), (std::vector<bool>{false, true, true, true}));
}

TEST(OpAddTest, HalfAndBFloat16) {
  TensorFactory tf;
  auto& a = tf.make_from_floats<Half>({3}, {1.0f, 0.5f, -2.0f});
  auto& b = tf.make_from_floats<Half>({3}, {0.25f, 0.25f, 100.0f});
  auto& out = tf.make<Half>({3});
  ASSERT_TRUE(call_kernel(kOp, {&a.ev, &b.ev, tf.i(1), &out.ev}).ok());
  EXPECT_EQ(out.as_doubles<Half>(), (std::vector<double>{1.25, 0.75, 98.0}));
  auto& c = tf.make_from_floats<BFloat16>({2}, {1.0f, 3.0f});
  auto& bout = tf.make<BFloat16>({2});
  ASSERT_TRUE(call_kernel(kOp, {&c.ev, &c.ev, tf.i(1), &bout.ev}).ok());
  EXPECT_EQ(bout.as_doubles<BFloat16>(), (std::vector<double>{2.0, 6.0}));
}

TEST(OpAddTest, EmptyTensors) {
  TensorFactory tf;
  auto& a = tf.make<float>({0, 3});
  auto& b = tf.make<float>({3}, {1, 2, 3});
  auto& out = tf.make<float>({0, 3});
  EXPECT_TRUE(call_kernel(kOp, {&a.ev, &b.ev, tf.i(1), &out.ev}).ok());
}

TEST(OpAddTest, DynamicOutResizes) {
  TensorFactory tf;
  auto& a = tf.make<float>({2}, {1, 2});
  auto& out = tf.zeros(ScalarType::Float, {4}, {}, TensorShapeDynamism::DynamicBound);
  ASSERT_TRUE(call_kernel(kOp, {&a.ev, &a.ev, tf.i(1), &out.ev}).ok());
  EXPECT_EQ(out.values<float>(), (std::vector<float>{2, 4}));
}

TEST(OpAddTest, Errors) {
  TensorFactory tf;
  auto& a = tf.make<float>({2, 3});
  auto& b = tf.make<float>({4});
  auto& out = tf.make<float>({2, 3});
  EXPECT_KERNEL_FAILS(call_kernel(kOp, {&a.ev, &b.ev, tf.i(1), &out.ev}), kOp, "broadcast");
  auto& wrong = tf.make<float>({3, 2});
  EXPECT_KERNEL_FAILS(call_kernel(kOp, {&a.ev, &a.ev, tf.i(1), &wrong.ev}), kOp, "[3, 2]");
  auto& q = tf.zeros(ScalarType::QInt8, {2, 3});
  EXPECT_KERNEL_FAILS(call_kernel(kOp, {&q.ev, &a.ev, tf.i(1), &out.ev}), kOp, "qint8");
  auto& ia = tf.make<int32_t>({2, 3});
  auto& iout = tf.make<int32_t>({2, 3});
  EXPECT_KERNEL_FAILS(call_kernel(kOp, {&ia.ev, &ia.ev, tf.d(1.5), &iout.ev}), kOp, "alpha");
  EXPECT_KERNEL_FAILS(call_kernel(kOp, {&a.ev, &a.ev, tf.i(1), &iout.ev}), kOp, "int32");
  EXPECT_KERNEL_FAILS(call_kernel(kOp, {tf.none(), &a.ev, tf.i(1), &out.ev}), kOp, "self");
}

}  // namespace
}  // namespace ember::testing
