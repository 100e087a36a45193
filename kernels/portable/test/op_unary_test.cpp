// relu, sigmoid, sin and tanh share one driver; their tests live together.
#include <cmath>

#include "kernels/test/tensor_factory.h"

namespace ember::testing {
namespace {

TEST(OpReluTest, FloatIntNanAndChannelsLast) {
  TensorFactory tf;
  auto& a = tf.make<float>({4}, {-1, 0, 2, NAN});
  auto& out = tf.make<float>({4});
  ASSERT_TRUE(call_kernel("aten::relu.out", {&a.ev, &out.ev}).ok());
  auto v = out.values<float>();
  EXPECT_EQ(v[0], 0);
  EXPECT_EQ(v[2], 2);
  EXPECT_TRUE(std::isnan(v[3]));
  auto& i = tf.make<int64_t>({1, 2, 1, 2}, {-3, 4, 5, -6}, kChannelsLast);
  auto& iout = tf.make<int64_t>({1, 2, 1, 2});
  ASSERT_TRUE(call_kernel("aten::relu.out", {&i.ev, &iout.ev}).ok());
  EXPECT_EQ(iout.values<int64_t>(), (std::vector<int64_t>{0, 4, 5, 0}));
}

TEST(OpReluTest, Errors) {
  TensorFactory tf;
  auto& b = tf.make<bool>({2}, {true, false});
  EXPECT_KERNEL_FAILS(call_kernel("aten::relu.out", {&b.ev, &b.ev}), "aten::relu.out", "bool");
  auto& a = tf.make<float>({2});
  auto& out = tf.make<float>({3});
  EXPECT_KERNEL_FAILS(call_kernel("aten::relu.out", {&a.ev, &out.ev}), "aten::relu.out", "[3]");
}

TEST(OpSigmoidTest, Values) {
  TensorFactory tf;
  auto& a = tf.make<double>({3}, {0, 2, -100});
  auto& out = tf.make<double>({3});
  ASSERT_TRUE(call_kernel("aten::sigmoid.out", {&a.ev, &out.ev}).ok());
  auto v = out.values<double>();
  EXPECT_DOUBLE_EQ(v[0], 0.5);
  EXPECT_DOUBLE_EQ(v[1], 1 / (1 + std::exp(-2.0)));
  EXPECT_NEAR(v[2], 0, 1e-40);
}

TEST(OpSinTest, IntInputGivesFloat) {
  TensorFactory tf;
  auto& a = tf.make<int32_t>({2}, {0, 1});
  auto& out = tf.make<float>({2});
  ASSERT_TRUE(call_kernel("aten::sin.out", {&a.ev, &out.ev}).ok());
  EXPECT_FLOAT_EQ(out.values<float>()[1], std::sin(1.0f));
  auto& iout = tf.make<int32_t>({2});
  EXPECT_KERNEL_FAILS(call_kernel("aten::sin.out", {&a.ev, &iout.ev}), "aten::sin.out",
                      "int32");
}

TEST(OpTanhTest, HalfAndEmpty) {
  TensorFactory tf;
  auto& a = tf.make_from_floats<Half>({2}, {0.5f, -1.0f});
  auto& out = tf.make<Half>({2});
  ASSERT_TRUE(call_kernel("aten::tanh.out", {&a.ev, &out.ev}).ok());
  EXPECT_NEAR(out.as_doubles<Half>()[0], std::tanh(0.5), 1e-3);
  EXPECT_NEAR(out.as_doubles<Half>()[1], std::tanh(-1.0), 1e-3);
  auto& e = tf.make<float>({2, 0});
  EXPECT_TRUE(call_kernel("aten::tanh.out", {&e.ev, &e.ev}).ok());
  auto& q = tf.zeros(ScalarType::QUInt8, {2});
  EXPECT_KERNEL_FAILS(call_kernel("aten::tanh.out", {&q.ev, &out.ev}), "aten::tanh.out",
                      "quint8");
}

}  // namespace
}  // namespace ember::testing
