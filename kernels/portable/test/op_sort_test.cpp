// sort, topk, _cdist_forward and _pdist_forward.
#include <cmath>
#include <limits>

#include "kernels/portable/test/return_list.h"
#include "kernels/test/tensor_factory.h"

namespace ember::testing {
namespace {

TEST(OpSortTest, StableWithNanBothDirections) {
  TensorFactory tf;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto& x = tf.make<float>({6}, {3, nan, 1, 3, -2, 1});
  auto& v = tf.make<float>({6});
  auto& i = tf.make<int64_t>({6});
  ReturnList ret({&v, &i});
  ASSERT_TRUE(call_kernel("aten::sort.values", {&x.ev, tf.i(-1), tf.b(false), &v.ev, &i.ev, &ret.ev}, false).ok());
  EXPECT_EQ(i.values<int64_t>(), (std::vector<int64_t>{4, 2, 5, 0, 3, 1}));
  EXPECT_EQ(v.values<float>()[0], -2);
  EXPECT_TRUE(std::isnan(v.values<float>()[5]));
  ASSERT_TRUE(call_kernel("aten::sort.values_stable",
                          {&x.ev, tf.b(true), tf.i(0), tf.b(true), &v.ev, &i.ev, &ret.ev}, false).ok());
  EXPECT_EQ(i.values<int64_t>(), (std::vector<int64_t>{1, 0, 3, 2, 5, 4}));
}

TEST(OpSortTest, AlongOuterDimOfTransposed) {
  TensorFactory tf;
  auto& x = tf.make<int32_t>({3, 2}, {5, 0, 1, 2, 3, 1}, {1, 0});
  auto& v = tf.make<int32_t>({3, 2});
  auto& i = tf.make<int64_t>({3, 2});
  ReturnList ret({&v, &i});
  ASSERT_TRUE(call_kernel("aten::sort.values", {&x.ev, tf.i(0), tf.b(false), &v.ev, &i.ev, &ret.ev}, false).ok());
  EXPECT_EQ(v.values<int32_t>(), (std::vector<int32_t>{1, 0, 3, 1, 5, 2}));
  EXPECT_EQ(i.values<int64_t>(), (std::vector<int64_t>{1, 0, 2, 2, 0, 1}));
  auto& vb = tf.make<int16_t>({3, 2});
  EXPECT_KERNEL_FAILS(call_kernel("aten::sort.values", {&x.ev, tf.i(0), tf.b(false), &vb.ev, &i.ev, &ret.ev}, false),
                      "aten::sort.values", "int32");
  EXPECT_KERNEL_FAILS(call_kernel("aten::sort.values", {&x.ev, tf.i(2), tf.b(false), &v.ev, &i.ev, &ret.ev}, false),
                      "aten::sort.values", "out of range");
}

TEST(OpTopkTest, LargestSmallestAndErrors) {
  TensorFactory tf;
  auto& x = tf.make<double>({2, 4}, {4, 1, 3, 2, 0, 8, 8, 5});
  auto& v = tf.make<double>({2, 2});
  auto& i = tf.make<int64_t>({2, 2});
  ReturnList ret({&v, &i});
  ASSERT_TRUE(call_kernel("aten::topk.values",
                          {&x.ev, tf.i(2), tf.i(-1), tf.b(true), tf.b(true), &v.ev, &i.ev, &ret.ev}, false).ok());
  EXPECT_EQ(v.values<double>(), (std::vector<double>{4, 3, 8, 8}));
  EXPECT_EQ(i.values<int64_t>(), (std::vector<int64_t>{0, 2, 1, 2}));
  ASSERT_TRUE(call_kernel("aten::topk.values",
                          {&x.ev, tf.i(2), tf.i(1), tf.b(false), tf.b(true), &v.ev, &i.ev, &ret.ev}, false).ok());
  EXPECT_EQ(v.values<double>(), (std::vector<double>{1, 2, 0, 5}));
  EXPECT_KERNEL_FAILS(call_kernel("aten::topk.values",
                                  {&x.ev, tf.i(5), tf.i(1), tf.b(true), tf.b(true), &v.ev, &i.ev, &ret.ev}, false),
                      "aten::topk.values", "out of range");
  auto& b = tf.make<bool>({2});
  auto& bv = tf.make<bool>({1});
  auto& bi = tf.make<int64_t>({1});
  ReturnList bret({&bv, &bi});
  EXPECT_KERNEL_FAILS(call_kernel("aten::topk.values",
                                  {&b.ev, tf.i(1), tf.i(0), tf.b(true), tf.b(true), &bv.ev, &bi.ev, &bret.ev}, false),
                      "aten::topk.values", "bool");
}

TEST(OpCdistTest, NormsAndBroadcastBatch) {
  TensorFactory tf;
  auto& a = tf.make<float>({1, 2, 2}, {0, 0, 1, 1});
  auto& b = tf.make<float>({2, 1, 2}, {3, 4, 1, 0});
  auto& o = tf.make<float>({2, 2, 1});
  ASSERT_TRUE(call_kernel("aten::_cdist_forward.out", {&a.ev, &b.ev, tf.d(2.0), tf.none(), &o.ev}).ok());
  auto v = o.values<float>();
  EXPECT_NEAR(v[0], 5, 1e-6);
  EXPECT_NEAR(v[1], std::sqrt(13.0), 1e-6);
  EXPECT_NEAR(v[2], 1, 1e-6);
  EXPECT_NEAR(v[3], 1, 1e-6);
  ASSERT_TRUE(call_kernel("aten::_cdist_forward.out", {&a.ev, &b.ev, tf.d(1.0), tf.none(), &o.ev}).ok());
  EXPECT_EQ(o.values<float>()[0], 7);
  ASSERT_TRUE(call_kernel("aten::_cdist_forward.out",
                          {&a.ev, &b.ev, tf.d(std::numeric_limits<double>::infinity()), tf.none(), &o.ev}).ok());
  EXPECT_EQ(o.values<float>()[0], 4);
  ASSERT_TRUE(call_kernel("aten::_cdist_forward.out", {&a.ev, &b.ev, tf.d(0.0), tf.none(), &o.ev}).ok());
  EXPECT_EQ(o.values<float>()[3], 1);
  EXPECT_KERNEL_FAILS(call_kernel("aten::_cdist_forward.out", {&a.ev, &b.ev, tf.d(-1.0), tf.none(), &o.ev}),
                      "aten::_cdist_forward.out", "non-negative");
  auto& c = tf.make<float>({2, 3});
  EXPECT_KERNEL_FAILS(call_kernel("aten::_cdist_forward.out", {&a.ev, &c.ev, tf.d(2.0), tf.none(), &o.ev}),
                      "aten::_cdist_forward.out", "last dim");
}

TEST(OpPdistTest, PairsAndErrors) {
  TensorFactory tf;
  auto& x = tf.make<double>({3, 1}, {0, 3, 7});
  auto& o = tf.make<double>({3});
  ASSERT_TRUE(call_kernel("aten::_pdist_forward.out", {&x.ev, tf.d(2.0), &o.ev}).ok());
  EXPECT_EQ(o.values<double>(), (std::vector<double>{3, 7, 4}));
  auto& one = tf.make<double>({1, 4});
  auto& e = tf.make<double>({0});
  ASSERT_TRUE(call_kernel("aten::_pdist_forward.out", {&one.ev, tf.d(2.0), &e.ev}).ok());
  auto& v = tf.make<double>({3});
  EXPECT_KERNEL_FAILS(call_kernel("aten::_pdist_forward.out", {&v.ev, tf.d(2.0), &o.ev}),
                      "aten::_pdist_forward.out", "2-D");
}

}  // namespace
}  // namespace ember::testing
