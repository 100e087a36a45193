// Unary math, rounding, predicates and activations: hand-checked values and
// every error path (messages name the op, the argument and the dtype/shape).
#include <cmath>
#include <limits>

#include "kernels/test/tensor_factory.h"

namespace ember::testing {
namespace {

TEST(OpUnaryFloatTest, ValuesIntPromotionAndDomain) {
  TensorFactory tf;
  auto& a = tf.make<double>({4}, {0.0, 1.0, 4.0, -1.0});
  auto& out = tf.make<double>({4});
  ASSERT_TRUE(call_kernel("aten::sqrt.out", {&a.ev, &out.ev}).ok());
  auto v = out.values<double>();
  EXPECT_EQ(v[2], 2.0);
  EXPECT_TRUE(std::isnan(v[3]));
  ASSERT_TRUE(call_kernel("aten::log.out", {&a.ev, &out.ev}).ok());
  EXPECT_EQ(out.values<double>()[0], -INFINITY);
  ASSERT_TRUE(call_kernel("aten::reciprocal.out", {&a.ev, &out.ev}).ok());
  EXPECT_EQ(out.values<double>()[0], INFINITY);
  EXPECT_EQ(out.values<double>()[2], 0.25);
  auto& i = tf.make<int32_t>({2}, {0, 2});
  auto& f = tf.make<float>({2});
  ASSERT_TRUE(call_kernel("aten::exp.out", {&i.ev, &f.ev}).ok());
  EXPECT_FLOAT_EQ(f.values<float>()[1], std::exp(2.0f));
  ASSERT_TRUE(call_kernel("aten::rsqrt.out", {&i.ev, &f.ev}).ok());
  EXPECT_FLOAT_EQ(f.values<float>()[1], 1 / std::sqrt(2.0f));
}

TEST(OpUnaryFloatTest, FastExpFamilyAccuracy) {
  TensorFactory tf;
  std::vector<float> xs = {-120.f, -100.f, -20.f, -1e-6f, 0.f, 1e-7f, 0.3f, 1.f, 10.f, 88.f, 89.f,
                           NAN, INFINITY, -INFINITY};
  auto& a = tf.make<float>({static_cast<int32_t>(xs.size())}, xs);
  auto& out = tf.make<float>({static_cast<int32_t>(xs.size())});
  struct Case { const char* op; double (*ref)(double); double ulps; };
  const Case cases[] = {
      {"aten::exp.out", [](double x) { return std::exp(x); }, 1},
      {"aten::expm1.out", [](double x) { return std::expm1(x); }, 1.5},
      {"aten::sigmoid.out", [](double x) { return 1 / (1 + std::exp(-x)); }, 3},
      {"aten::tanh.out", [](double x) { return std::tanh(x); }, 2.5},
  };
  for (const Case& c : cases) {
    ASSERT_TRUE(call_kernel(c.op, {&a.ev, &out.ev}).ok()) << c.op;
    auto v = out.values<float>();
    for (size_t k = 0; k < xs.size(); ++k) {
      const double want = c.ref(xs[k]);
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(v[k])) << c.op << " " << xs[k];
        continue;
      }
      const float wf = static_cast<float>(want);
      if (std::isinf(wf)) {
        EXPECT_EQ(v[k], wf) << c.op << " " << xs[k];
        continue;
      }
      if (wf == 0.0f) {
        EXPECT_NEAR(v[k], wf, 1e-44) << c.op << " " << xs[k];
        continue;
      }
      const double ulp = std::nextafter(std::fabs(wf), INFINITY) - std::fabs(wf);
      EXPECT_LE(std::fabs(v[k] - want) / ulp, c.ulps + 0.5) << c.op << " at " << xs[k];
    }
  }
}

TEST(OpUnaryFloatTest, Errors) {
  TensorFactory tf;
  auto& i = tf.make<int32_t>({2}, {1, 2});
  auto& iout = tf.make<int32_t>({2});
  EXPECT_KERNEL_FAILS(call_kernel("aten::cos.out", {&i.ev, &iout.ev}), "aten::cos.out", "int32");
  auto& f = tf.make<float>({2});
  auto& f3 = tf.make<float>({3});
  EXPECT_KERNEL_FAILS(call_kernel("aten::log2.out", {&f.ev, &f3.ev}), "aten::log2.out", "[3]");
  auto& q = tf.zeros(ScalarType::QUInt8, {2});
  EXPECT_KERNEL_FAILS(call_kernel("aten::exp.out", {&q.ev, &f.ev}), "aten::exp.out", "quint8");
}

TEST(OpUnaryRealTest, AbsNegSignRounding) {
  TensorFactory tf;
  auto& i = tf.make<int8_t>({4}, {-128, -3, 0, 5});
  auto& iout = tf.make<int8_t>({4});
  ASSERT_TRUE(call_kernel("aten::abs.out", {&i.ev, &iout.ev}).ok());
  EXPECT_EQ(iout.values<int8_t>(), (std::vector<int8_t>{-128, 3, 0, 5}));  // Wraps as eager.
  ASSERT_TRUE(call_kernel("aten::neg.out", {&i.ev, &iout.ev}).ok());
  EXPECT_EQ(iout.values<int8_t>(), (std::vector<int8_t>{-128, 3, 0, -5}));
  ASSERT_TRUE(call_kernel("aten::sign.out", {&i.ev, &iout.ev}).ok());
  EXPECT_EQ(iout.values<int8_t>(), (std::vector<int8_t>{-1, -1, 0, 1}));
  auto& f = tf.make<float>({5}, {0.5f, 1.5f, 2.5f, -0.5f, -1.7f});
  auto& fout = tf.make<float>({5});
  ASSERT_TRUE(call_kernel("aten::round.out", {&f.ev, &fout.ev}).ok());
  EXPECT_EQ(fout.values<float>(), (std::vector<float>{0, 2, 2, -0.0f, -2}));
  ASSERT_TRUE(call_kernel("aten::floor.out", {&f.ev, &fout.ev}).ok());
  EXPECT_EQ(fout.values<float>(), (std::vector<float>{0, 1, 2, -1, -2}));
  ASSERT_TRUE(call_kernel("aten::ceil.out", {&f.ev, &fout.ev}).ok());
  EXPECT_EQ(fout.values<float>(), (std::vector<float>{1, 2, 3, -0.0f, -1}));
  ASSERT_TRUE(call_kernel("aten::trunc.out", {&f.ev, &fout.ev}).ok());
  EXPECT_EQ(fout.values<float>(), (std::vector<float>{0, 1, 2, 0, -1}));
  auto& d = tf.make<double>({3}, {1.2345, 1250.0, -1550.0});
  auto& dout = tf.make<double>({3});
  ASSERT_TRUE(call_kernel("aten::round.decimals_out", {&d.ev, tf.i(2), &dout.ev}).ok());
  EXPECT_DOUBLE_EQ(dout.values<double>()[0], 1.23);
  ASSERT_TRUE(call_kernel("aten::round.decimals_out", {&d.ev, tf.i(-2), &dout.ev}).ok());
  EXPECT_EQ(dout.values<double>()[1], 1200.0);
  EXPECT_EQ(dout.values<double>()[2], -1600.0);
  auto& n = tf.make<float>({2}, {NAN, -0.0f});
  auto& nout = tf.make<float>({2});
  ASSERT_TRUE(call_kernel("aten::sign.out", {&n.ev, &nout.ev}).ok());
  EXPECT_EQ(nout.values<float>()[0], 0.0f);
}

TEST(OpUnaryRealTest, Errors) {
  TensorFactory tf;
  auto& b = tf.make<bool>({2}, {true, false});
  auto& bout = tf.make<bool>({2});
  EXPECT_KERNEL_FAILS(call_kernel("aten::abs.out", {&b.ev, &bout.ev}), "aten::abs.out", "bool");
  EXPECT_KERNEL_FAILS(call_kernel("aten::neg.out", {&b.ev, &bout.ev}), "aten::neg.out", "bool");
  EXPECT_KERNEL_FAILS(call_kernel("aten::floor.out", {&b.ev, &bout.ev}), "aten::floor.out", "bool");
  EXPECT_TRUE(call_kernel("aten::sign.out", {&b.ev, &bout.ev}).ok());
  auto& i = tf.make<int32_t>({2});
  EXPECT_KERNEL_FAILS(call_kernel("aten::round.decimals_out", {&i.ev, tf.i(1), &i.ev}),
                      "aten::round.decimals_out", "int32");
  auto& f = tf.make<float>({2});
  EXPECT_KERNEL_FAILS(call_kernel("aten::round.decimals_out", {&f.ev, tf.d(1.0), &f.ev}),
                      "aten::round.decimals_out", "decimals");
  auto& f16 = tf.make<float>({3});
  EXPECT_KERNEL_FAILS(call_kernel("aten::abs.out", {&f.ev, &f16.ev}), "aten::abs.out", "[3]");
  auto& fi = tf.make<int32_t>({2});
  EXPECT_KERNEL_FAILS(call_kernel("aten::ceil.out", {&f.ev, &fi.ev}), "aten::ceil.out", "int32");
}

TEST(OpPredicateTest, IsinfIsnanNotChannelsLast) {
  TensorFactory tf;
  auto& f = tf.make<float>({1, 2, 1, 2}, {NAN, INFINITY, -INFINITY, 0.0f}, kChannelsLast);
  auto& out = tf.make<bool>({1, 2, 1, 2});
  ASSERT_TRUE(call_kernel("aten::isinf.out", {&f.ev, &out.ev}).ok());
  EXPECT_EQ(out.values<bool>(), (std::vector<bool>{false, true, true, false}));
  ASSERT_TRUE(call_kernel("aten::isnan.out", {&f.ev, &out.ev}).ok());
  EXPECT_EQ(out.values<bool>(), (std::vector<bool>{true, false, false, false}));
  ASSERT_TRUE(call_kernel("aten::logical_not.out", {&f.ev, &out.ev}).ok());
  EXPECT_EQ(out.values<bool>(), (std::vector<bool>{false, false, false, true}));
  auto& u = tf.make<uint8_t>({2}, {3, 200});
  auto& uout = tf.make<uint8_t>({2});
  ASSERT_TRUE(call_kernel("aten::bitwise_not.out", {&u.ev, &uout.ev}).ok());
  EXPECT_EQ(uout.values<uint8_t>(), (std::vector<uint8_t>{252, 55}));
  auto& b = tf.make<bool>({2}, {true, false});
  auto& bout = tf.make<bool>({2});
  ASSERT_TRUE(call_kernel("aten::bitwise_not.out", {&b.ev, &bout.ev}).ok());
  EXPECT_EQ(bout.values<bool>(), (std::vector<bool>{false, true}));
  auto& e = tf.make<float>({0, 3});
  auto& eout = tf.make<bool>({0, 3});
  EXPECT_TRUE(call_kernel("aten::isnan.out", {&e.ev, &eout.ev}).ok());
}

TEST(OpPredicateTest, Errors) {
  TensorFactory tf;
  auto& f = tf.make<float>({2});
  auto& fout = tf.make<float>({2});
  EXPECT_KERNEL_FAILS(call_kernel("aten::bitwise_not.out", {&f.ev, &fout.ev}),
                      "aten::bitwise_not.out", "float32");
  auto& b3 = tf.make<bool>({3});
  EXPECT_KERNEL_FAILS(call_kernel("aten::isnan.out", {&f.ev, &b3.ev}), "aten::isnan.out", "[3]");
}

TEST(OpActivationTest, Values) {
  TensorFactory tf;
  auto& a = tf.make<double>({3}, {-1.0, 0.0, 2.0});
  auto& out = tf.make<double>({3});
  ASSERT_TRUE(call_kernel("aten::elu.out", {&a.ev, tf.d(2.0), tf.i(1), tf.i(1), &out.ev}).ok());
  EXPECT_DOUBLE_EQ(out.values<double>()[0], 2.0 * std::expm1(-1.0));
  EXPECT_DOUBLE_EQ(out.values<double>()[2], 2.0);
  ASSERT_TRUE(call_kernel("aten::leaky_relu.out", {&a.ev, tf.d(0.1), &out.ev}).ok());
  EXPECT_DOUBLE_EQ(out.values<double>()[0], -0.1);
  ASSERT_TRUE(call_kernel("aten::hardtanh.out", {&a.ev, tf.d(-0.5), tf.d(1.5), &out.ev}).ok());
  EXPECT_EQ(out.values<double>(), (std::vector<double>{-0.5, 0.0, 1.5}));
  EValue none_str;
  none_str.tag = Tag::String;
  none_str.as_string = "none";
  ASSERT_TRUE(call_kernel("aten::gelu.out", {&a.ev, &none_str, &out.ev}).ok());
  EXPECT_NEAR(out.values<double>()[0], -0.15865525393145707, 1e-15);
  EValue tanh_str;
  tanh_str.tag = Tag::String;
  tanh_str.as_string = "tanh";
  auto& f = tf.make<float>({2}, {-1.0f, 2.0f});
  auto& fout = tf.make<float>({2});
  ASSERT_TRUE(call_kernel("aten::gelu.out", {&f.ev, &tanh_str, &fout.ev}).ok());
  EXPECT_NEAR(fout.values<float>()[1], 1.9545976, 1e-6);
}

TEST(OpActivationTest, Errors) {
  TensorFactory tf;
  auto& i = tf.make<int32_t>({2});
  EXPECT_KERNEL_FAILS(call_kernel("aten::elu.out", {&i.ev, tf.i(1), tf.i(1), tf.i(1), &i.ev}),
                      "aten::elu.out", "int32");
  EXPECT_KERNEL_FAILS(call_kernel("aten::leaky_relu.out", {&i.ev, tf.d(0.1), &i.ev}),
                      "aten::leaky_relu.out", "int32");
  EValue bad;
  bad.tag = Tag::String;
  bad.as_string = "erf";
  auto& f = tf.make<float>({2});
  EXPECT_KERNEL_FAILS(call_kernel("aten::gelu.out", {&f.ev, &bad, &f.ev}), "aten::gelu.out",
                      "approximate");
  EXPECT_KERNEL_FAILS(call_kernel("aten::gelu.out", {&f.ev, tf.i(0), &f.ev}), "aten::gelu.out",
                      "approximate");
  auto& u = tf.make<uint8_t>({2});
  EXPECT_KERNEL_FAILS(call_kernel("aten::hardtanh.out", {&u.ev, tf.i(-1), tf.i(1), &u.ev}),
                      "aten::hardtanh.out", "uint8");
  auto& b = tf.make<bool>({2});
  EXPECT_KERNEL_FAILS(call_kernel("aten::hardtanh.out", {&b.ev, tf.i(0), tf.i(1), &b.ev}),
                      "aten::hardtanh.out", "bool");
}

}  // namespace
}  // namespace ember::testing
