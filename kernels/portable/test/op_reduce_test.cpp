// Reductions: sum, mean, prod, amax/amin, max/min, any, argmax/argmin,
// max.dim/min.dim, var, cumsum. Hand-checked values and every error path.
#include <cmath>
#include <limits>

#include "kernels/portable/test/return_list.h"
#include "kernels/test/tensor_factory.h"

namespace ember::testing {
namespace {

TEST(OpSumTest, DimsKeepdimAndNegative) {
  TensorFactory tf;
  auto& x = tf.make<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  auto& o = tf.make<float>({2});
  ASSERT_TRUE(call_kernel("aten::sum.IntList_out", {&x.ev, tf.list({-1}), tf.b(false), tf.none(), &o.ev}).ok());
  EXPECT_EQ(o.values<float>(), (std::vector<float>{6, 15}));
  auto& ok = tf.make<float>({1, 3});
  ASSERT_TRUE(call_kernel("aten::sum.IntList_out", {&x.ev, tf.list({0}), tf.b(true), tf.none(), &ok.ev}).ok());
  EXPECT_EQ(ok.values<float>(), (std::vector<float>{5, 7, 9}));
  auto& all = tf.make<float>({});
  ASSERT_TRUE(call_kernel("aten::sum.IntList_out", {&x.ev, tf.none(), tf.b(false), tf.none(), &all.ev}).ok());
  EXPECT_EQ(all.values<float>()[0], 21);
  ASSERT_TRUE(call_kernel("aten::sum.out", {&x.ev, tf.none(), &all.ev}).ok());
  EXPECT_EQ(all.values<float>()[0], 21);
}

TEST(OpSumTest, IntPromotesToLongAndDtypeArg) {
  TensorFactory tf;
  auto& x = tf.make<int8_t>({3}, {100, 100, 100});
  auto& o = tf.make<int64_t>({});
  ASSERT_TRUE(call_kernel("aten::sum.out", {&x.ev, tf.none(), &o.ev}).ok());
  EXPECT_EQ(o.values<int64_t>()[0], 300);
  auto& b = tf.make<bool>({4}, {true, false, true, true});
  ASSERT_TRUE(call_kernel("aten::sum.out", {&b.ev, tf.none(), &o.ev}).ok());
  EXPECT_EQ(o.values<int64_t>()[0], 3);
  auto& d = tf.make<double>({});
  ASSERT_TRUE(call_kernel("aten::sum.out", {&x.ev, tf.i(7), &d.ev}).ok());
  EXPECT_EQ(d.values<double>()[0], 300);
}

TEST(OpSumTest, ChannelsLastAndEmpty) {
  TensorFactory tf;
  std::vector<float> v(24);
  for (int i = 0; i < 24; ++i) v[i] = float(i);
  auto& x = tf.make<float>({2, 3, 2, 2}, v, kChannelsLast);
  auto& o = tf.make<float>({2, 3});
  ASSERT_TRUE(call_kernel("aten::sum.IntList_out", {&x.ev, tf.list({2, 3}), tf.b(false), tf.none(), &o.ev}).ok());
  EXPECT_EQ(o.values<float>(), (std::vector<float>{6, 22, 38, 54, 70, 86}));
  auto& o1 = tf.make<float>({2, 2, 2});
  ASSERT_TRUE(call_kernel("aten::sum.IntList_out", {&x.ev, tf.list({1}), tf.b(false), tf.none(), &o1.ev}).ok());
  EXPECT_EQ(o1.values<float>()[0], 0 + 4 + 8);
  auto& e = tf.make<float>({0, 3});
  auto& eo = tf.make<float>({3}, {9, 9, 9});
  ASSERT_TRUE(call_kernel("aten::sum.IntList_out", {&e.ev, tf.list({0}), tf.b(false), tf.none(), &eo.ev}).ok());
  EXPECT_EQ(eo.values<float>(), (std::vector<float>{0, 0, 0}));
  ASSERT_TRUE(call_kernel("aten::mean.out", {&e.ev, tf.list({0}), tf.b(false), tf.none(), &eo.ev}).ok());
  EXPECT_TRUE(std::isnan(eo.values<float>()[0]));
  auto& po = tf.make<float>({3});
  ASSERT_TRUE(call_kernel("aten::prod.int_out", {&e.ev, tf.i(0), tf.b(false), tf.none(), &po.ev}).ok());
  EXPECT_EQ(po.values<float>(), (std::vector<float>{1, 1, 1}));
}

TEST(OpSumTest, LongRowIsAccurate) {
  TensorFactory tf;
  std::vector<float> v(100003, 0.1f);
  auto& x = tf.make<float>({100003}, v);
  auto& o = tf.make<float>({});
  ASSERT_TRUE(call_kernel("aten::sum.out", {&x.ev, tf.none(), &o.ev}).ok());
  EXPECT_NEAR(o.values<float>()[0], 100003 * double(0.1f), 1e-2);
}

TEST(OpSumTest, Errors) {
  TensorFactory tf;
  auto& x = tf.make<float>({2, 3});
  auto& o = tf.make<float>({2});
  EXPECT_KERNEL_FAILS(call_kernel("aten::sum.IntList_out", {&x.ev, tf.list({2}), tf.b(false), tf.none(), &o.ev}),
                      "aten::sum.IntList_out", "out of range");
  EXPECT_KERNEL_FAILS(call_kernel("aten::sum.IntList_out", {&x.ev, tf.list({1, -1}), tf.b(false), tf.none(), &o.ev}),
                      "aten::sum.IntList_out", "multiple times");
  EXPECT_KERNEL_FAILS(call_kernel("aten::sum.IntList_out", {&x.ev, tf.list({1}), tf.b(false), tf.i(7), &o.ev}),
                      "aten::sum.IntList_out", "expected dtype float64");
  auto& oi = tf.make<int64_t>({2});
  EXPECT_KERNEL_FAILS(call_kernel("aten::sum.IntList_out", {&x.ev, tf.list({1}), tf.b(false), tf.none(), &oi.ev}),
                      "aten::sum.IntList_out", "cannot hold");
  auto& bad = tf.make<float>({3});
  EXPECT_KERNEL_FAILS(call_kernel("aten::sum.IntList_out", {&x.ev, tf.list({1}), tf.b(false), tf.none(), &bad.ev}),
                      "aten::sum.IntList_out", "out: has shape");
  EXPECT_KERNEL_FAILS(call_kernel("aten::sum.IntList_out", {&x.ev, tf.list({1}), tf.b(false), tf.i(99), &o.ev}),
                      "aten::sum.IntList_out", "unsupported dtype");
  EXPECT_KERNEL_FAILS(call_kernel("aten::mean.out", {&x.ev, tf.list({1}), tf.b(false), tf.none(), &oi.ev}),
                      "aten::mean.out", "floating");
  EXPECT_KERNEL_FAILS(call_kernel("aten::sum.IntList_out", {tf.i(1), tf.list({1}), tf.b(false), tf.none(), &o.ev}),
                      "aten::sum.IntList_out", "must be a tensor");
}

TEST(OpMeanProdTest, Values) {
  TensorFactory tf;
  auto& x = tf.make_from_floats<Half>({2, 2}, {1, 2, 3, 4});
  auto& o = tf.make<Half>({2});
  ASSERT_TRUE(call_kernel("aten::mean.out", {&x.ev, tf.list({0}), tf.b(false), tf.none(), &o.ev}).ok());
  EXPECT_EQ(o.as_doubles<Half>(), (std::vector<double>{2, 3}));
  auto& all = tf.make<Half>({});
  ASSERT_TRUE(call_kernel("aten::mean.dtype_out", {&x.ev, tf.none(), &all.ev}).ok());
  EXPECT_EQ(all.as_doubles<Half>()[0], 2.5);
  auto& xi = tf.make<int32_t>({2, 2}, {1, 2, 3, 4});
  auto& pi = tf.make<int64_t>({2});
  ASSERT_TRUE(call_kernel("aten::prod.int_out", {&xi.ev, tf.i(-1), tf.b(false), tf.none(), &pi.ev}).ok());
  EXPECT_EQ(pi.values<int64_t>(), (std::vector<int64_t>{2, 12}));
  auto& pa = tf.make<int64_t>({});
  ASSERT_TRUE(call_kernel("aten::prod.out", {&xi.ev, tf.none(), &pa.ev}).ok());
  EXPECT_EQ(pa.values<int64_t>()[0], 24);
}

TEST(OpAmaxTest, ValuesNanAndErrors) {
  TensorFactory tf;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto& x = tf.make<float>({2, 3}, {1, 5, 3, 4, nan, 6});
  auto& o = tf.make<float>({2});
  ASSERT_TRUE(call_kernel("aten::amax.out", {&x.ev, tf.list({1}), tf.b(false), &o.ev}).ok());
  EXPECT_EQ(o.values<float>()[0], 5);
  EXPECT_TRUE(std::isnan(o.values<float>()[1]));
  ASSERT_TRUE(call_kernel("aten::amin.out", {&x.ev, tf.list({1}), tf.b(false), &o.ev}).ok());
  EXPECT_EQ(o.values<float>()[0], 1);
  auto& xi = tf.make<int16_t>({3}, {-4, 9, 2});
  auto& oi = tf.make<int16_t>({});
  ASSERT_TRUE(call_kernel("aten::amax.out", {&xi.ev, tf.list({}), tf.b(false), &oi.ev}).ok());
  EXPECT_EQ(oi.values<int16_t>()[0], 9);
  ASSERT_TRUE(call_kernel("aten::min.unary_out", {&xi.ev, &oi.ev}).ok());
  EXPECT_EQ(oi.values<int16_t>()[0], -4);
  ASSERT_TRUE(call_kernel("aten::max.unary_out", {&xi.ev, &oi.ev}).ok());
  EXPECT_EQ(oi.values<int16_t>()[0], 9);
  auto& e = tf.make<float>({0, 3});
  auto& eo = tf.make<float>({3});
  EXPECT_KERNEL_FAILS(call_kernel("aten::amax.out", {&e.ev, tf.list({0}), tf.b(false), &eo.ev}),
                      "aten::amax.out", "non-zero size");
  auto& eo2 = tf.make<float>({0});
  ASSERT_TRUE(call_kernel("aten::amax.out", {&e.ev, tf.list({1}), tf.b(false), &eo2.ev}).ok());
  auto& s = tf.make<float>({});
  EXPECT_KERNEL_FAILS(call_kernel("aten::amax.out", {&e.ev, tf.list({}), tf.b(false), &s.ev}),
                      "aten::amax.out", "empty");
  EXPECT_KERNEL_FAILS(call_kernel("aten::max.unary_out", {&e.ev, &s.ev}), "aten::max.unary_out",
                      "non-empty");
  auto& od = tf.make<double>({2});
  EXPECT_KERNEL_FAILS(call_kernel("aten::amax.out", {&x.ev, tf.list({1}), tf.b(false), &od.ev}),
                      "aten::amax.out", "expected dtype float32");
}

TEST(OpAnyTest, Forms) {
  TensorFactory tf;
  auto& x = tf.make<float>({2, 2}, {0, 0, 0, -1});
  auto& o = tf.make<bool>({2});
  ASSERT_TRUE(call_kernel("aten::any.out", {&x.ev, tf.i(1), tf.b(false), &o.ev}).ok());
  EXPECT_EQ(o.values<bool>(), (std::vector<bool>{false, true}));
  auto& ok = tf.make<bool>({1, 1});
  ASSERT_TRUE(call_kernel("aten::any.dims_out", {&x.ev, tf.none(), tf.b(true), &ok.ev}).ok());
  EXPECT_TRUE(ok.values<bool>()[0]);
  auto& e = tf.make<int32_t>({0});
  auto& s = tf.make<bool>({}, {true});
  ASSERT_TRUE(call_kernel("aten::any.all_out", {&e.ev, &s.ev}).ok());
  EXPECT_FALSE(s.values<bool>()[0]);
  auto& u = tf.make<uint8_t>({2}, {0, 3});
  auto& uo = tf.make<uint8_t>({});
  ASSERT_TRUE(call_kernel("aten::any.all_out", {&u.ev, &uo.ev}).ok());
  EXPECT_EQ(uo.values<uint8_t>()[0], 1);
  auto& f = tf.make<float>({});
  EXPECT_KERNEL_FAILS(call_kernel("aten::any.all_out", {&x.ev, &f.ev}), "aten::any.all_out", "bool");
}

TEST(OpArgmaxTest, DimFlatTiesAndNan) {
  TensorFactory tf;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto& x = tf.make<float>({2, 3}, {1, 7, 7, nan, 2, nan});
  auto& o = tf.make<int64_t>({2});
  ASSERT_TRUE(call_kernel("aten::argmax.out", {&x.ev, tf.i(1), tf.b(false), &o.ev}).ok());
  EXPECT_EQ(o.values<int64_t>(), (std::vector<int64_t>{1, 0}));
  ASSERT_TRUE(call_kernel("aten::argmin.out", {&x.ev, tf.i(1), tf.b(false), &o.ev}).ok());
  EXPECT_EQ(o.values<int64_t>(), (std::vector<int64_t>{0, 0}));
  auto& f = tf.make<int64_t>({});
  ASSERT_TRUE(call_kernel("aten::argmax.out", {&x.ev, tf.none(), tf.b(false), &f.ev}).ok());
  EXPECT_EQ(f.values<int64_t>()[0], 3);
  auto& t = tf.make<int32_t>({2, 2}, {1, 9, 3, 2}, {1, 0});
  auto& fk = tf.make<int64_t>({1, 1});
  ASSERT_TRUE(call_kernel("aten::argmax.out", {&t.ev, tf.none(), tf.b(true), &fk.ev}).ok());
  EXPECT_EQ(fk.values<int64_t>()[0], 1);
  auto& e = tf.make<float>({0});
  EXPECT_KERNEL_FAILS(call_kernel("aten::argmax.out", {&e.ev, tf.none(), tf.b(false), &f.ev}),
                      "aten::argmax.out", "non-empty");
  auto& e2 = tf.make<float>({2, 0});
  EXPECT_KERNEL_FAILS(call_kernel("aten::argmax.out", {&e2.ev, tf.i(1), tf.b(false), &o.ev}),
                      "aten::argmax.out", "non-zero size");
  auto& b = tf.make<bool>({2});
  EXPECT_KERNEL_FAILS(call_kernel("aten::argmax.out", {&b.ev, tf.none(), tf.b(false), &f.ev}),
                      "aten::argmax.out", "bool");
  auto& fo = tf.make<float>({2});
  EXPECT_KERNEL_FAILS(call_kernel("aten::argmax.out", {&x.ev, tf.i(1), tf.b(false), &fo.ev}),
                      "aten::argmax.out", "int64");
}

TEST(OpMaxDimTest, ValuesAndIndicesWithReturnList) {
  TensorFactory tf;
  auto& x = tf.make<double>({2, 3}, {3, 1, 3, -2, -1, -5});
  auto& v = tf.make<double>({2, 1});
  auto& i = tf.make<int64_t>({2, 1});
  ReturnList ret({&v, &i});
  ASSERT_TRUE(call_kernel("aten::max.dim_max", {&x.ev, tf.i(1), tf.b(true), &v.ev, &i.ev, &ret.ev}, false).ok());
  EXPECT_EQ(v.values<double>(), (std::vector<double>{3, -1}));
  EXPECT_EQ(i.values<int64_t>(), (std::vector<int64_t>{0, 1}));
  auto& v2 = tf.make<double>({3});
  auto& i2 = tf.make<int64_t>({3});
  ReturnList ret2({&v2, &i2});
  ASSERT_TRUE(call_kernel("aten::min.dim_min", {&x.ev, tf.i(0), tf.b(false), &v2.ev, &i2.ev, &ret2.ev}, false).ok());
  EXPECT_EQ(v2.values<double>(), (std::vector<double>{-2, -1, -5}));
  EXPECT_EQ(i2.values<int64_t>(), (std::vector<int64_t>{1, 1, 1}));
  auto& vf = tf.make<float>({3});
  EXPECT_KERNEL_FAILS(call_kernel("aten::min.dim_min", {&x.ev, tf.i(0), tf.b(false), &vf.ev, &i2.ev, &ret2.ev}, false),
                      "aten::min.dim_min", "expected dtype float64");
  auto& e = tf.make<double>({0, 3});
  EXPECT_KERNEL_FAILS(call_kernel("aten::min.dim_min", {&e.ev, tf.i(0), tf.b(false), &v2.ev, &i2.ev, &ret2.ev}, false),
                      "aten::min.dim_min", "non-zero size");
}

TEST(OpVarTest, CorrectionAndUnbiased) {
  TensorFactory tf;
  auto& x = tf.make<float>({2, 4}, {1, 2, 3, 4, 2, 2, 2, 2});
  auto& o = tf.make<float>({2});
  ASSERT_TRUE(call_kernel("aten::var.correction_out", {&x.ev, tf.list({1}), tf.none(), tf.b(false), &o.ev}).ok());
  EXPECT_NEAR(o.values<float>()[0], 5.0 / 3.0, 1e-6);
  EXPECT_EQ(o.values<float>()[1], 0);
  ASSERT_TRUE(call_kernel("aten::var.correction_out", {&x.ev, tf.list({1}), tf.i(0), tf.b(false), &o.ev}).ok());
  EXPECT_NEAR(o.values<float>()[0], 1.25, 1e-6);
  ASSERT_TRUE(call_kernel("aten::var.out", {&x.ev, tf.list({1}), tf.b(false), tf.b(false), &o.ev}).ok());
  EXPECT_NEAR(o.values<float>()[0], 1.25, 1e-6);
  auto& one = tf.make<float>({1}, {3});
  auto& s = tf.make<float>({});
  ASSERT_TRUE(call_kernel("aten::var.correction_out", {&one.ev, tf.none(), tf.none(), tf.b(false), &s.ev}).ok());
  EXPECT_TRUE(std::isnan(s.values<float>()[0]));
  auto& xi = tf.make<int32_t>({2});
  auto& si = tf.make<int32_t>({});
  EXPECT_KERNEL_FAILS(call_kernel("aten::var.correction_out", {&xi.ev, tf.none(), tf.none(), tf.b(false), &si.ev}),
                      "aten::var.correction_out", "floating");
}

TEST(OpCumsumTest, DimsDtypesErrors) {
  TensorFactory tf;
  auto& x = tf.make<int32_t>({2, 3}, {1, 2, 3, 4, 5, 6});
  auto& o = tf.make<int64_t>({2, 3});
  ASSERT_TRUE(call_kernel("aten::cumsum.out", {&x.ev, tf.i(1), tf.none(), &o.ev}).ok());
  EXPECT_EQ(o.values<int64_t>(), (std::vector<int64_t>{1, 3, 6, 4, 9, 15}));
  ASSERT_TRUE(call_kernel("aten::cumsum.out", {&x.ev, tf.i(-2), tf.none(), &o.ev}).ok());
  EXPECT_EQ(o.values<int64_t>(), (std::vector<int64_t>{1, 2, 3, 5, 7, 9}));
  auto& f = tf.make<float>({2, 3});
  ASSERT_TRUE(call_kernel("aten::cumsum.out", {&x.ev, tf.i(1), tf.i(6), &f.ev}).ok());
  EXPECT_EQ(f.values<float>(), (std::vector<float>{1, 3, 6, 4, 9, 15}));
  EXPECT_KERNEL_FAILS(call_kernel("aten::cumsum.out", {&x.ev, tf.i(2), tf.none(), &o.ev}),
                      "aten::cumsum.out", "out of range");
  auto& fi = tf.make<int64_t>({2, 3});
  EXPECT_KERNEL_FAILS(call_kernel("aten::cumsum.out", {&f.ev, tf.i(0), tf.none(), &fi.ev}),
                      "aten::cumsum.out", "cannot hold");
}

TEST(OpSumTest, BFloat16ComputesInFloat) {
  TensorFactory tf;
  auto& x = tf.make_from_floats<BFloat16>({2, 2}, {1, 2, 3, 4}, {1, 0});
  auto& o = tf.make<BFloat16>({2});
  ASSERT_TRUE(call_kernel("aten::sum.IntList_out", {&x.ev, tf.list({0}), tf.b(false), tf.none(), &o.ev}).ok());
  EXPECT_EQ(o.as_doubles<BFloat16>(), (std::vector<double>{4, 6}));
  ASSERT_TRUE(call_kernel("aten::mean.out", {&x.ev, tf.list({1}), tf.b(false), tf.none(), &o.ev}).ok());
  EXPECT_EQ(o.as_doubles<BFloat16>(), (std::vector<double>{1.5, 3.5}));
  ASSERT_TRUE(call_kernel("aten::amax.out", {&x.ev, tf.list({1}), tf.b(false), &o.ev}).ok());
  EXPECT_EQ(o.as_doubles<BFloat16>(), (std::vector<double>{2, 4}));
}

}  // namespace
}  // namespace ember::testing
