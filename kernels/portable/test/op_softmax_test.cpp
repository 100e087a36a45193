// _softmax / _log_softmax: values, stability, layouts and errors.
#include <cmath>

#include "kernels/test/tensor_factory.h"

namespace ember::testing {
namespace {

TEST(OpSoftmaxTest, ValuesAndStability) {
  TensorFactory tf;
  auto& x = tf.make<float>({2, 2}, {0, std::log(3.0f), 1000, 1000});
  auto& o = tf.make<float>({2, 2});
  ASSERT_TRUE(call_kernel("aten::_softmax.out", {&x.ev, tf.i(-1), tf.b(false), &o.ev}).ok());
  auto v = o.values<float>();
  EXPECT_NEAR(v[0], 0.25, 1e-6);
  EXPECT_NEAR(v[1], 0.75, 1e-6);
  EXPECT_NEAR(v[2], 0.5, 1e-6);
  ASSERT_TRUE(call_kernel("aten::_log_softmax.out", {&x.ev, tf.i(1), tf.b(false), &o.ev}).ok());
  v = o.values<float>();
  EXPECT_NEAR(v[0], std::log(0.25), 1e-6);
  EXPECT_NEAR(v[3], std::log(0.5), 1e-6);
}

TEST(OpSoftmaxTest, ChannelDimOfChannelsLastAndHalfToFloat) {
  TensorFactory tf;
  auto& x = tf.make<float>({1, 2, 1, 2}, {0, 0, std::log(3.0f), 0}, kChannelsLast);
  auto& o = tf.make<float>({1, 2, 1, 2});
  ASSERT_TRUE(call_kernel("aten::_softmax.out", {&x.ev, tf.i(1), tf.b(false), &o.ev}).ok());
  auto v = o.values<float>();
  EXPECT_NEAR(v[0], 0.25, 1e-6);
  EXPECT_NEAR(v[1], 0.5, 1e-6);
  EXPECT_NEAR(v[2], 0.75, 1e-6);
  auto& h = tf.make_from_floats<Half>({2}, {0, 0});
  auto& hf = tf.make<float>({2});
  ASSERT_TRUE(call_kernel("aten::_softmax.out", {&h.ev, tf.i(0), tf.b(true), &hf.ev}).ok());
  EXPECT_EQ(hf.values<float>()[0], 0.5f);
  auto& s = tf.make<double>({}, {4});
  auto& so = tf.make<double>({});
  ASSERT_TRUE(call_kernel("aten::_softmax.out", {&s.ev, tf.i(0), tf.b(false), &so.ev}).ok());
  EXPECT_EQ(so.values<double>()[0], 1.0);
}

TEST(OpSoftmaxTest, Errors) {
  TensorFactory tf;
  auto& x = tf.make<float>({2});
  auto& o = tf.make<float>({2});
  EXPECT_KERNEL_FAILS(call_kernel("aten::_softmax.out", {&x.ev, tf.i(1), tf.b(false), &o.ev}),
                      "aten::_softmax.out", "out of range");
  EXPECT_KERNEL_FAILS(call_kernel("aten::_softmax.out", {&x.ev, tf.i(0), tf.b(true), &o.ev}),
                      "aten::_softmax.out", "half_to_float");
  auto& xi = tf.make<int32_t>({2});
  EXPECT_KERNEL_FAILS(call_kernel("aten::_log_softmax.out", {&xi.ev, tf.i(0), tf.b(false), &xi.ev}),
                      "aten::_log_softmax.out", "int32");
  auto& od = tf.make<double>({2});
  EXPECT_KERNEL_FAILS(call_kernel("aten::_softmax.out", {&x.ev, tf.i(0), tf.b(false), &od.ev}),
                      "aten::_softmax.out", "expected dtype float32");
}

TEST(OpSoftmaxTest, BFloat16) {
  TensorFactory tf;
  auto& x = tf.make_from_floats<BFloat16>({2}, {0, std::log(3.0f)});
  auto& o = tf.make<BFloat16>({2});
  ASSERT_TRUE(call_kernel("aten::_softmax.out", {&x.ev, tf.i(0), tf.b(false), &o.ev}).ok());
  EXPECT_NEAR(o.as_doubles<BFloat16>()[0], 0.25, 2e-3);
  EXPECT_NEAR(o.as_doubles<BFloat16>()[1], 0.75, 4e-3);
}

}  // namespace
}  // namespace ember::testing
