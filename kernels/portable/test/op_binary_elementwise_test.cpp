// Comparisons, bitwise/logical, scalar arithmetic, rounded division, fmod,
// remainder, pow, maximum/minimum, atan2, where, clamp.Tensor and fills:
// hand-checked values and every error path.
#include <cmath>
#include <limits>

#include "kernels/test/tensor_factory.h"

namespace ember::testing {
namespace {

EValue str_value(const char* s) {
  EValue v;
  v.tag = Tag::String;
  v.as_string = s;
  return v;
}

TEST(OpComparisonTest, TensorScalarPromotionAndNan) {
  TensorFactory tf;
  auto& a = tf.make<float>({2, 2}, {1, 2, NAN, 4});
  auto& b = tf.make<int64_t>({2}, {1, 3});
  auto& out = tf.make<bool>({2, 2});
  ASSERT_TRUE(call_kernel("aten::lt.Tensor_out", {&a.ev, &b.ev, &out.ev}).ok());
  EXPECT_EQ(out.values<bool>(), (std::vector<bool>{false, true, false, false}));
  ASSERT_TRUE(call_kernel("aten::ne.Tensor_out", {&a.ev, &b.ev, &out.ev}).ok());
  EXPECT_EQ(out.values<bool>(), (std::vector<bool>{false, true, true, true}));
  auto& u = tf.make<uint8_t>({2}, {3, 200});
  auto& uout = tf.make<bool>({2});
  // -1 takes uint8 (255) first, as in eager.
  ASSERT_TRUE(call_kernel("aten::lt.Scalar_out", {&u.ev, tf.i(-1), &uout.ev}).ok());
  EXPECT_EQ(uout.values<bool>(), (std::vector<bool>{true, true}));
  ASSERT_TRUE(call_kernel("aten::ge.Scalar_out", {&u.ev, tf.d(100.5), &uout.ev}).ok());
  EXPECT_EQ(uout.values<bool>(), (std::vector<bool>{false, true}));
  auto& fout = tf.make<float>({2});  // A float out holds 0/1.
  ASSERT_TRUE(call_kernel("aten::eq.Scalar_out", {&u.ev, tf.i(3), &fout.ev}).ok());
  EXPECT_EQ(fout.values<float>(), (std::vector<float>{1, 0}));
}

TEST(OpComparisonTest, Errors) {
  TensorFactory tf;
  auto& a = tf.make<float>({2, 3});
  auto& b = tf.make<float>({4});
  auto& out = tf.make<bool>({2, 3});
  EXPECT_KERNEL_FAILS(call_kernel("aten::eq.Tensor_out", {&a.ev, &b.ev, &out.ev}),
                      "aten::eq.Tensor_out", "[4]");
  auto& small = tf.make<bool>({3});
  EXPECT_KERNEL_FAILS(call_kernel("aten::gt.Scalar_out", {&a.ev, tf.i(0), &small.ev}),
                      "aten::gt.Scalar_out", "[2, 3]");
  EXPECT_KERNEL_FAILS(call_kernel("aten::gt.Scalar_out", {&a.ev, &a.ev, &out.ev}),
                      "aten::gt.Scalar_out", "other");
}

TEST(OpBitwiseTest, ValuesAndErrors) {
  TensorFactory tf;
  auto& a = tf.make<int32_t>({3}, {12, -1, 5});
  auto& b = tf.make<int32_t>({3}, {10, 7, 0});
  auto& out = tf.make<int32_t>({3});
  ASSERT_TRUE(call_kernel("aten::bitwise_and.Tensor_out", {&a.ev, &b.ev, &out.ev}).ok());
  EXPECT_EQ(out.values<int32_t>(), (std::vector<int32_t>{8, 7, 0}));
  ASSERT_TRUE(call_kernel("aten::bitwise_xor.Scalar_out", {&a.ev, tf.i(1), &out.ev}).ok());
  EXPECT_EQ(out.values<int32_t>(), (std::vector<int32_t>{13, -2, 4}));
  auto& f = tf.make<float>({3});
  EXPECT_KERNEL_FAILS(call_kernel("aten::bitwise_or.Tensor_out", {&a.ev, &f.ev, &f.ev}),
                      "aten::bitwise_or.Tensor_out", "float32");
  EXPECT_KERNEL_FAILS(call_kernel("aten::bitwise_or.Scalar_out", {&a.ev, tf.d(1.5), &f.ev}),
                      "aten::bitwise_or.Scalar_out", "float32");
  auto& x = tf.make<float>({3}, {0.0f, NAN, 2.0f});
  auto& y = tf.make<int64_t>({1}, {3});
  auto& bout = tf.make<bool>({3});
  ASSERT_TRUE(call_kernel("aten::logical_and.out", {&x.ev, &y.ev, &bout.ev}).ok());
  EXPECT_EQ(bout.values<bool>(), (std::vector<bool>{false, true, true}));
  ASSERT_TRUE(call_kernel("aten::logical_xor.out", {&x.ev, &y.ev, &bout.ev}).ok());
  EXPECT_EQ(bout.values<bool>(), (std::vector<bool>{true, false, false}));
}

TEST(OpScalarArithTest, AddSubMulDiv) {
  TensorFactory tf;
  auto& u = tf.make<uint8_t>({2}, {250, 3});
  auto& uout = tf.make<uint8_t>({2});
  ASSERT_TRUE(call_kernel("aten::add.Scalar_out", {&u.ev, tf.i(10), tf.i(1), &uout.ev}).ok());
  EXPECT_EQ(uout.values<uint8_t>(), (std::vector<uint8_t>{4, 13}));  // Wraps.
  auto& i = tf.make<int32_t>({2}, {-3, 4});
  auto& fout = tf.make<float>({2});
  ASSERT_TRUE(call_kernel("aten::sub.Scalar_out", {&i.ev, tf.d(0.5), tf.i(2), &fout.ev}).ok());
  EXPECT_EQ(fout.values<float>(), (std::vector<float>{-4, 3}));
  ASSERT_TRUE(call_kernel("aten::mul.Scalar_out", {&i.ev, tf.d(1.5), &fout.ev}).ok());
  EXPECT_EQ(fout.values<float>(), (std::vector<float>{-4.5f, 6}));
  ASSERT_TRUE(call_kernel("aten::div.Scalar_out", {&i.ev, tf.i(2), &fout.ev}).ok());
  EXPECT_EQ(fout.values<float>(), (std::vector<float>{-1.5f, 2}));
  auto& b = tf.make<bool>({2}, {true, false});
  auto& bout = tf.make<bool>({2});
  ASSERT_TRUE(call_kernel("aten::add.Scalar_out", {&b.ev, tf.b(true), tf.i(1), &bout.ev}).ok());
  EXPECT_EQ(bout.values<bool>(), (std::vector<bool>{true, true}));
}

TEST(OpScalarArithTest, Errors) {
  TensorFactory tf;
  auto& b = tf.make<bool>({2});
  EXPECT_KERNEL_FAILS(call_kernel("aten::sub.Scalar_out", {&b.ev, tf.b(true), tf.i(1), &b.ev}),
                      "aten::sub.Scalar_out", "bool");
  auto& i = tf.make<int32_t>({2});
  EXPECT_KERNEL_FAILS(call_kernel("aten::add.Scalar_out", {&i.ev, tf.i(1), tf.d(0.5), &i.ev}),
                      "aten::add.Scalar_out", "alpha");
  EXPECT_KERNEL_FAILS(call_kernel("aten::mul.Scalar_out", {&i.ev, tf.d(0.5), &i.ev}),
                      "aten::mul.Scalar_out", "int32");
  EXPECT_KERNEL_FAILS(call_kernel("aten::div.Scalar_out", {&i.ev, tf.i(2), &i.ev}),
                      "aten::div.Scalar_out", "int32");
}

TEST(OpDivModeTest, TruncFloorAndZero) {
  TensorFactory tf;
  auto& a = tf.make<int32_t>({4}, {-7, 7, std::numeric_limits<int32_t>::min(), 6});
  auto& b = tf.make<int32_t>({4}, {2, -2, -1, 3});
  auto& out = tf.make<int32_t>({4});
  EValue trunc = str_value("trunc");
  EValue floor = str_value("floor");
  ASSERT_TRUE(call_kernel("aten::div.out_mode", {&a.ev, &b.ev, &trunc, &out.ev}).ok());
  EXPECT_EQ(out.values<int32_t>(),
            (std::vector<int32_t>{-3, -3, std::numeric_limits<int32_t>::min(), 2}));
  ASSERT_TRUE(call_kernel("aten::div.out_mode", {&a.ev, &b.ev, &floor, &out.ev}).ok());
  EXPECT_EQ(out.values<int32_t>(),
            (std::vector<int32_t>{-4, -4, std::numeric_limits<int32_t>::min(), 2}));
  auto& f = tf.make<float>({3}, {-7, 1, 0});
  auto& fz = tf.make<float>({3}, {2, 0, 0});
  auto& fout = tf.make<float>({3});
  ASSERT_TRUE(call_kernel("aten::div.out_mode", {&f.ev, &fz.ev, &floor, &fout.ev}).ok());
  EXPECT_EQ(fout.values<float>()[0], -4);
  EXPECT_EQ(fout.values<float>()[1], INFINITY);
  EXPECT_TRUE(std::isnan(fout.values<float>()[2]));
  auto& f4 = tf.make<float>({4});
  ASSERT_TRUE(call_kernel("aten::div.out_mode", {&a.ev, &b.ev, tf.none(), &f4.ev}).ok());
  EXPECT_EQ(f4.values<float>()[0], -3.5f);
  ASSERT_TRUE(call_kernel("aten::div.Scalar_mode_out", {&a.ev, tf.i(4), &floor, &out.ev}).ok());
  EXPECT_EQ(out.values<int32_t>()[0], -2);
  auto& zero = tf.make<int32_t>({1}, {0});
  EXPECT_KERNEL_FAILS(call_kernel("aten::div.out_mode", {&a.ev, &zero.ev, &trunc, &out.ev}),
                      "aten::div.out_mode", "division by zero");
  EXPECT_KERNEL_FAILS(call_kernel("aten::div.Scalar_mode_out", {&a.ev, tf.i(0), &floor, &out.ev}),
                      "aten::div.Scalar_mode_out", "division by zero");
  EValue bad = str_value("round");
  EXPECT_KERNEL_FAILS(call_kernel("aten::div.out_mode", {&a.ev, &b.ev, &bad, &out.ev}),
                      "aten::div.out_mode", "rounding_mode");
  // A rounding_mode that is not a string is refused at load, before the kernel runs.
  EXPECT_KERNEL_FAILS(call_kernel("aten::div.out_mode", {&a.ev, &b.ev, tf.i(1), &out.ev}),
                      "aten::div.out_mode",
                      "argument 2 (rounding_mode) must be a string or None");
  auto& bl = tf.make<bool>({4});
  EXPECT_KERNEL_FAILS(call_kernel("aten::div.out_mode", {&bl.ev, &bl.ev, &trunc, &bl.ev}),
                      "aten::div.out_mode", "bool");
}

TEST(OpModTest, FmodRemainder) {
  TensorFactory tf;
  auto& a = tf.make<int8_t>({2}, {-7, 7});
  auto& b = tf.make<int8_t>({2}, {3, -3});
  auto& out = tf.make<int8_t>({2});
  ASSERT_TRUE(call_kernel("aten::remainder.Tensor_out", {&a.ev, &b.ev, &out.ev}).ok());
  EXPECT_EQ(out.values<int8_t>(), (std::vector<int8_t>{2, -2}));
  ASSERT_TRUE(call_kernel("aten::fmod.Tensor_out", {&a.ev, &b.ev, &out.ev}).ok());
  EXPECT_EQ(out.values<int8_t>(), (std::vector<int8_t>{-1, 1}));
  auto& f = tf.make<double>({3}, {-7, 7, 5});
  auto& dout = tf.make<double>({3});
  ASSERT_TRUE(call_kernel("aten::remainder.Scalar_out", {&f.ev, tf.d(-2.0), &dout.ev}).ok());
  EXPECT_EQ(dout.values<double>(), (std::vector<double>{-1, -1, -1}));
  ASSERT_TRUE(call_kernel("aten::fmod.Scalar_out", {&f.ev, tf.i(0), &dout.ev}).ok());
  EXPECT_TRUE(std::isnan(dout.values<double>()[0]));
  EXPECT_KERNEL_FAILS(call_kernel("aten::remainder.Scalar_out", {&a.ev, tf.i(0), &out.ev}),
                      "aten::remainder.Scalar_out", "division by zero");
  auto& z = tf.make<int8_t>({2}, {1, 0});
  EXPECT_KERNEL_FAILS(call_kernel("aten::fmod.Tensor_out", {&a.ev, &z.ev, &out.ev}),
                      "aten::fmod.Tensor_out", "division by zero");
  auto& bl = tf.make<bool>({2});
  EXPECT_KERNEL_FAILS(call_kernel("aten::fmod.Tensor_out", {&bl.ev, &bl.ev, &bl.ev}),
                      "aten::fmod.Tensor_out", "bool");
}

TEST(OpPowTest, ValuesAndErrors) {
  TensorFactory tf;
  auto& a = tf.make<int64_t>({4}, {2, -1, 1, 3});
  auto& e = tf.make<int64_t>({4}, {10, -3, -5, -1});
  auto& out = tf.make<int64_t>({4});
  ASSERT_TRUE(call_kernel("aten::pow.Tensor_Tensor_out", {&a.ev, &e.ev, &out.ev}).ok());
  EXPECT_EQ(out.values<int64_t>(), (std::vector<int64_t>{1024, -1, 1, 0}));
  ASSERT_TRUE(call_kernel("aten::pow.Tensor_Scalar_out", {&a.ev, tf.i(3), &out.ev}).ok());
  EXPECT_EQ(out.values<int64_t>(), (std::vector<int64_t>{8, -1, 1, 27}));
  EXPECT_KERNEL_FAILS(call_kernel("aten::pow.Tensor_Scalar_out", {&a.ev, tf.i(-1), &out.ev}),
                      "aten::pow.Tensor_Scalar_out", "negative");
  auto& f = tf.make<float>({2}, {4, -2});
  auto& fout = tf.make<float>({2});
  ASSERT_TRUE(call_kernel("aten::pow.Tensor_Scalar_out", {&f.ev, tf.d(0.5), &fout.ev}).ok());
  EXPECT_EQ(fout.values<float>()[0], 2);
  EXPECT_TRUE(std::isnan(fout.values<float>()[1]));
  ASSERT_TRUE(call_kernel("aten::pow.Scalar_out", {tf.i(2), &f.ev, &fout.ev}).ok());
  EXPECT_EQ(fout.values<float>(), (std::vector<float>{16, 0.25f}));
  auto& b = tf.make<bool>({2});
  EXPECT_KERNEL_FAILS(call_kernel("aten::pow.Tensor_Tensor_out", {&b.ev, &b.ev, &b.ev}),
                      "aten::pow.Tensor_Tensor_out", "bool");
  EXPECT_KERNEL_FAILS(call_kernel("aten::pow.Scalar_out", {tf.b(true), &b.ev, &b.ev}),
                      "aten::pow.Scalar_out", "bool");
}

TEST(OpMaxMinTest, NanPropagatesAndAtan2) {
  TensorFactory tf;
  auto& a = tf.make<float>({3}, {NAN, 1, 5});
  auto& b = tf.make<float>({3}, {1, NAN, 2});
  auto& out = tf.make<float>({3});
  ASSERT_TRUE(call_kernel("aten::maximum.out", {&a.ev, &b.ev, &out.ev}).ok());
  EXPECT_TRUE(std::isnan(out.values<float>()[0]));
  EXPECT_TRUE(std::isnan(out.values<float>()[1]));
  EXPECT_EQ(out.values<float>()[2], 5);
  ASSERT_TRUE(call_kernel("aten::minimum.out", {&a.ev, &b.ev, &out.ev}).ok());
  EXPECT_EQ(out.values<float>()[2], 2);
  auto& i = tf.make<int32_t>({2}, {1, -1});
  auto& f2 = tf.make<float>({2});
  ASSERT_TRUE(call_kernel("aten::atan2.out", {&i.ev, &i.ev, &f2.ev}).ok());
  EXPECT_FLOAT_EQ(f2.values<float>()[1], std::atan2(-1.0f, -1.0f));
  auto& i2 = tf.make<int32_t>({2});
  EXPECT_KERNEL_FAILS(call_kernel("aten::atan2.out", {&i.ev, &i.ev, &i2.ev}), "aten::atan2.out",
                      "int32");
}

TEST(OpWhereClampTest, WhereBroadcastAndPromotion) {
  TensorFactory tf;
  auto& c = tf.make<bool>({2, 1}, {true, false});
  auto& x = tf.make<int32_t>({2}, {1, 2});
  auto& y = tf.make<float>({}, {0.5f});
  auto& out = tf.make<float>({2, 2});
  ASSERT_TRUE(call_kernel("aten::where.self_out", {&c.ev, &x.ev, &y.ev, &out.ev}).ok());
  EXPECT_EQ(out.values<float>(), (std::vector<float>{1, 2, 0.5f, 0.5f}));
  auto& fc = tf.make<float>({2, 1});
  EXPECT_KERNEL_FAILS(call_kernel("aten::where.self_out", {&fc.ev, &x.ev, &y.ev, &out.ev}),
                      "aten::where.self_out", "float32");
  auto& bad = tf.make<float>({3, 1});
  EXPECT_KERNEL_FAILS(call_kernel("aten::where.self_out", {&c.ev, &bad.ev, &y.ev, &out.ev}),
                      "aten::where.self_out", "self of shape [3, 1]");
  auto& iout = tf.make<int32_t>({2, 2});
  EXPECT_KERNEL_FAILS(call_kernel("aten::where.self_out", {&c.ev, &x.ev, &y.ev, &iout.ev}),
                      "aten::where.self_out", "int32");
}

TEST(OpWhereClampTest, ClampTensor) {
  TensorFactory tf;
  auto& x = tf.make<float>({4}, {-2, 0.5f, 3, NAN});
  auto& lo = tf.make<float>({}, {0});
  auto& hi = tf.make<float>({4}, {1, 1, NAN, 1});
  auto& out = tf.make<float>({4});
  ASSERT_TRUE(call_kernel("aten::clamp.Tensor_out", {&x.ev, &lo.ev, &hi.ev, &out.ev}).ok());
  auto v = out.values<float>();
  EXPECT_EQ(v[0], 0);
  EXPECT_EQ(v[1], 0.5f);
  EXPECT_TRUE(std::isnan(v[2]));
  EXPECT_TRUE(std::isnan(v[3]));
  ASSERT_TRUE(call_kernel("aten::clamp.Tensor_out", {&x.ev, tf.none(), &lo.ev, &out.ev}).ok());
  EXPECT_EQ(out.values<float>()[2], 0);
  EXPECT_KERNEL_FAILS(call_kernel("aten::clamp.Tensor_out", {&x.ev, tf.none(), tf.none(), &out.ev}),
                      "aten::clamp.Tensor_out", "min and max");
  auto& bad = tf.make<float>({3});
  EXPECT_KERNEL_FAILS(call_kernel("aten::clamp.Tensor_out", {&x.ev, &bad.ev, tf.none(), &out.ev}),
                      "aten::clamp.Tensor_out", "[3]");
}

TEST(OpFillTest, FullLikeFillScalarTensor) {
  TensorFactory tf;
  auto& self = tf.make<float>({2, 3});
  auto& out = tf.make<int32_t>({2, 3});
  ASSERT_TRUE(call_kernel("aten::full_like.out", {&self.ev, tf.d(2.7), tf.none(), &out.ev}).ok());
  EXPECT_EQ(out.values<int32_t>(), std::vector<int32_t>(6, 2));
  auto& u = tf.make<uint8_t>({2});
  ASSERT_TRUE(call_kernel("aten::fill.Scalar_out", {&u.ev, tf.i(-1), &u.ev}).ok());
  EXPECT_EQ(u.values<uint8_t>(), (std::vector<uint8_t>{255, 255}));
  auto& s = tf.make<double>({});
  ASSERT_TRUE(call_kernel("aten::scalar_tensor.out", {tf.d(1.5), &s.ev}).ok());
  EXPECT_EQ(s.values<double>()[0], 1.5);
  auto& i8 = tf.make<int8_t>({2});
  EXPECT_KERNEL_FAILS(call_kernel("aten::fill.Scalar_out", {&i8.ev, tf.i(300), &i8.ev}),
                      "aten::fill.Scalar_out", "int8");
  EXPECT_KERNEL_FAILS(call_kernel("aten::fill.Scalar_out", {&i8.ev, tf.d(NAN), &i8.ev}),
                      "aten::fill.Scalar_out", "int8");
  auto& h = tf.make<Half>({});
  EXPECT_KERNEL_FAILS(call_kernel("aten::scalar_tensor.out", {tf.d(1e6), &h.ev}),
                      "aten::scalar_tensor.out", "float16");
  auto& wrong = tf.make<float>({3});
  EXPECT_KERNEL_FAILS(call_kernel("aten::full_like.out", {&self.ev, tf.i(1), tf.none(), &wrong.ev}),
                      "aten::full_like.out", "[2, 3]");
}

}  // namespace
}  // namespace ember::testing
