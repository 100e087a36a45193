// permute_copy, view_copy, expand_copy, clone, _to_copy and the dim_order_ops
// copies share the strided copy helpers; their tests live together.
#include <cmath>

#include "kernels/test/tensor_factory.h"

namespace ember::testing {
namespace {

TEST(OpPermuteCopyTest, PermutesAndHandlesNegativeDims) {
  TensorFactory tf;
  auto& a = tf.make<int32_t>({2, 3}, {1, 2, 3, 4, 5, 6});
  auto& out = tf.make<int32_t>({3, 2});
  ASSERT_TRUE(call_kernel("aten::permute_copy.out", {&a.ev, tf.list({-1, 0}), &out.ev}).ok());
  EXPECT_EQ(out.values<int32_t>(), (std::vector<int32_t>{1, 4, 2, 5, 3, 6}));
  // NCHW → NHWC of a channels-last tensor.
  auto& x = tf.make<float>({1, 2, 1, 2}, {1, 2, 3, 4}, kChannelsLast);
  auto& y = tf.make<float>({1, 1, 2, 2});
  ASSERT_TRUE(call_kernel("aten::permute_copy.out", {&x.ev, tf.list({0, 2, 3, 1}), &y.ev}).ok());
  EXPECT_EQ(y.values<float>(), (std::vector<float>{1, 3, 2, 4}));
}

TEST(OpPermuteCopyTest, Errors) {
  TensorFactory tf;
  auto& a = tf.make<float>({2, 3});
  auto& out = tf.make<float>({3, 2});
  const char* op = "aten::permute_copy.out";
  EXPECT_KERNEL_FAILS(call_kernel(op, {&a.ev, tf.list({0, 0}), &out.ev}), op, "repeats");
  EXPECT_KERNEL_FAILS(call_kernel(op, {&a.ev, tf.list({0}), &out.ev}), op, "dims");
  EXPECT_KERNEL_FAILS(call_kernel(op, {&a.ev, tf.list({0, 2}), &out.ev}), op, "out of range");
  EXPECT_KERNEL_FAILS(call_kernel(op, {&a.ev, tf.list({0, 1}), &out.ev}), op, "[2, 3]");
}

TEST(OpViewCopyTest, InfersAndCopiesLogicalOrder) {
  TensorFactory tf;
  auto& a = tf.make<float>({1, 2, 1, 2}, {1, 2, 3, 4}, kChannelsLast);
  auto& out = tf.make<float>({4});
  ASSERT_TRUE(call_kernel("aten::view_copy.out", {&a.ev, tf.list({-1}), &out.ev}).ok());
  EXPECT_EQ(out.values<float>(), (std::vector<float>{1, 2, 3, 4}));
  auto& b = tf.make<float>({2, 2}, {1, 2, 3, 4});
  auto& out2 = tf.make<float>({4, 1});
  ASSERT_TRUE(call_kernel("aten::view_copy.out", {&b.ev, tf.list({4, 1}), &out2.ev}).ok());
  EXPECT_EQ(out2.values<float>(), (std::vector<float>{1, 2, 3, 4}));
  auto& e = tf.make<float>({0, 3});
  auto& eo = tf.make<float>({3, 0});
  EXPECT_TRUE(call_kernel("aten::view_copy.out", {&e.ev, tf.list({3, 0}), &eo.ev}).ok());
}

TEST(OpViewCopyTest, Errors) {
  TensorFactory tf;
  const char* op = "aten::view_copy.out";
  auto& a = tf.make<float>({2, 3});
  auto& out = tf.make<float>({5});
  EXPECT_KERNEL_FAILS(call_kernel(op, {&a.ev, tf.list({5}), &out.ev}), op, "invalid for input of size 6");
  auto& out6 = tf.make<float>({6});
  EXPECT_KERNEL_FAILS(call_kernel(op, {&a.ev, tf.list({-1, -1}), &out6.ev}), op, "size");
  auto& d = tf.make<double>({6});
  EXPECT_KERNEL_FAILS(call_kernel(op, {&a.ev, tf.list({6}), &d.ev}), op, "float64");
}

TEST(OpExpandCopyTest, ExpandsWithNewDimsAndMinusOne) {
  TensorFactory tf;
  auto& a = tf.make<int64_t>({2, 1}, {7, 8});
  auto& out = tf.make<int64_t>({2, 2, 3});
  ASSERT_TRUE(
      call_kernel("aten::expand_copy.out", {&a.ev, tf.list({2, -1, 3}), tf.b(false), &out.ev}).ok());
  EXPECT_EQ(out.values<int64_t>(), (std::vector<int64_t>{7, 7, 7, 8, 8, 8, 7, 7, 7, 8, 8, 8}));
}

TEST(OpExpandCopyTest, Errors) {
  TensorFactory tf;
  const char* op = "aten::expand_copy.out";
  auto& a = tf.make<float>({2, 3});
  auto& out = tf.make<float>({4, 3});
  EXPECT_KERNEL_FAILS(call_kernel(op, {&a.ev, tf.list({4, 3}), tf.b(false), &out.ev}), op, "cannot expand");
  EXPECT_KERNEL_FAILS(call_kernel(op, {&a.ev, tf.list({3}), tf.b(false), &out.ev}), op, "fewer");
}

TEST(OpCloneTest, ToChannelsLastAndBack) {
  TensorFactory tf;
  std::vector<float> v(12);
  for (int i = 0; i < 12; ++i) v[i] = float(i);
  auto& a = tf.make<float>({1, 3, 2, 2}, v);
  auto& cl = tf.make<float>({1, 3, 2, 2}, {}, kChannelsLast);
  ASSERT_TRUE(call_kernel("aten::clone.out", {&a.ev, tf.i(2), &cl.ev}).ok());
  EXPECT_EQ(cl.values<float>(), v);
  // Memory really is channels-last.
  EXPECT_EQ(static_cast<float*>(cl.t.data)[1], 4.0f);
  auto& back = tf.make<float>({1, 3, 2, 2});
  ASSERT_TRUE(call_kernel("aten::clone.out", {&cl.ev, tf.none(), &back.ev}).ok());
  EXPECT_EQ(back.values<float>(), v);
  auto& wrong = tf.make<int32_t>({1, 3, 2, 2});
  EXPECT_KERNEL_FAILS(call_kernel("aten::clone.out", {&a.ev, tf.none(), &wrong.ev}),
                      "aten::clone.out", "int32");
}

TEST(OpToCopyTest, ConvertsDtypes) {
  TensorFactory tf;
  auto& f = tf.make<float>({4}, {1.7f, -1.7f, 0.0f, 300.5f});
  auto& i = tf.make<int32_t>({4});
  ASSERT_TRUE(call_kernel("aten::_to_copy.out", {&f.ev, tf.b(false), tf.none(), &i.ev}).ok());
  EXPECT_EQ(i.values<int32_t>(), (std::vector<int32_t>{1, -1, 0, 300}));
  auto& b = tf.make<bool>({4});
  ASSERT_TRUE(call_kernel("aten::_to_copy.out", {&f.ev, tf.b(false), tf.none(), &b.ev}).ok());
  EXPECT_EQ(b.values<bool>(), (std::vector<bool>{true, true, false, true}));
  auto& h = tf.make<Half>({4});
  ASSERT_TRUE(call_kernel("aten::_to_copy.out", {&f.ev, tf.b(false), tf.none(), &h.ev}).ok());
  EXPECT_EQ(h.as_doubles<Half>(), (std::vector<double>{1.7001953125, -1.7001953125, 0, 300.5}));
  auto& bf = tf.make<BFloat16>({4});
  ASSERT_TRUE(call_kernel("aten::_to_copy.out", {&h.ev, tf.b(false), tf.none(), &bf.ev}).ok());
  EXPECT_EQ(bf.as_doubles<BFloat16>(), (std::vector<double>{1.703125, -1.703125, 0, 300}));
  auto& u = tf.make<uint8_t>({2}, {200, 255});
  auto& d = tf.make<double>({2}, {}, {0});
  ASSERT_TRUE(call_kernel("aten::_to_copy.out", {&u.ev, tf.b(false), tf.none(), &d.ev}).ok());
  EXPECT_EQ(d.values<double>(), (std::vector<double>{200, 255}));
  auto& q = tf.zeros(ScalarType::QInt32, {4});
  EXPECT_KERNEL_FAILS(call_kernel("aten::_to_copy.out", {&f.ev, tf.b(false), tf.none(), &q.ev}),
                      "aten::_to_copy.out", "qint32");
}

// dim_order_ops: self, non_blocking, dim_order, out (the return slot is added by call_kernel).
TEST(OpDimOrderCopyTest, ChannelsLastInAndOutWithDtypes) {
  TensorFactory tf;
  std::vector<float> v(12);
  for (int i = 0; i < 12; ++i) v[i] = float(i) - 5.5f;
  auto& a = tf.make<float>({1, 3, 2, 2}, v);
  for (const char* op : {"dim_order_ops::_to_dim_order_copy.out",
                         "dim_order_ops::_clone_dim_order.out"}) {
    auto& cl = tf.make<float>({1, 3, 2, 2}, {}, kChannelsLast);
    ASSERT_TRUE(call_kernel(op, {&a.ev, tf.b(false), tf.list({0, 2, 3, 1}), &cl.ev}).ok()) << op;
    EXPECT_EQ(cl.values<float>(), v) << op;
    EXPECT_EQ(static_cast<float*>(cl.t.data)[1], v[4]) << op;  // Memory is channels-last.
    auto& back = tf.make<float>({1, 3, 2, 2});
    ASSERT_TRUE(call_kernel(op, {&cl.ev, tf.b(false), tf.none(), &back.ev}).ok()) << op;
    EXPECT_EQ(back.values<float>(), v) << op;
  }
  // _to_dim_order_copy converts the dtype (toward zero, as _to_copy) while it relayouts.
  auto& i = tf.make<int32_t>({1, 3, 2, 2}, {}, kChannelsLast);
  ASSERT_TRUE(call_kernel("dim_order_ops::_to_dim_order_copy.out",
                          {&a.ev, tf.b(false), tf.list({0, 2, 3, 1}), &i.ev}).ok());
  std::vector<int32_t> want(12);
  for (int k = 0; k < 12; ++k) want[k] = static_cast<int32_t>(v[k]);
  EXPECT_EQ(i.values<int32_t>(), want);
  auto& h = tf.make<Half>({1, 3, 2, 2});
  ASSERT_TRUE(call_kernel("dim_order_ops::_to_dim_order_copy.out",
                          {&i.ev, tf.b(false), tf.list({0, 1, 2, 3}), &h.ev}).ok());
  EXPECT_EQ(h.as_doubles<Half>()[0], -5.0);
  // 0-dim: an empty dim order.
  auto& s = tf.make<int64_t>({}, {7});
  auto& so = tf.make<int64_t>({});
  ASSERT_TRUE(call_kernel("dim_order_ops::_clone_dim_order.out",
                          {&s.ev, tf.b(false), tf.list({}), &so.ev}).ok());
  EXPECT_EQ(so.values<int64_t>(), (std::vector<int64_t>{7}));
}

TEST(OpDimOrderCopyTest, Errors) {
  TensorFactory tf;
  auto& a = tf.make<float>({1, 3, 2, 2});
  auto& contiguous = tf.make<float>({1, 3, 2, 2});
  const char* to = "dim_order_ops::_to_dim_order_copy.out";
  const char* clone = "dim_order_ops::_clone_dim_order.out";
  // The argument asks for channels-last; out was planned contiguous.
  EXPECT_KERNEL_FAILS(call_kernel(to, {&a.ev, tf.b(false), tf.list({0, 2, 3, 1}), &contiguous.ev}),
                      to, "dim_order [0, 2, 3, 1] disagrees with out's dim order [0, 1, 2, 3]");
  auto& cl = tf.make<float>({1, 3, 2, 2}, {}, kChannelsLast);
  EXPECT_KERNEL_FAILS(call_kernel(clone, {&a.ev, tf.b(false), tf.none(), &cl.ev}), clone,
                      "None (contiguous) but out has dim order [0, 2, 3, 1]");
  EXPECT_KERNEL_FAILS(call_kernel(clone, {&a.ev, tf.b(false), tf.list({0, 1}), &contiguous.ev}),
                      clone, "disagrees");
  EXPECT_KERNEL_FAILS(call_kernel(clone, {&a.ev, tf.b(false), tf.i(2), &contiguous.ev}), clone,
                      "must be an int list or None");
  auto& d = tf.make<double>({1, 3, 2, 2});
  EXPECT_KERNEL_FAILS(call_kernel(clone, {&a.ev, tf.b(false), tf.none(), &d.ev}), clone,
                      "float64");
  auto& small = tf.make<float>({1, 3, 2});
  EXPECT_KERNEL_FAILS(call_kernel(to, {&a.ev, tf.b(false), tf.list({0, 1, 2}), &small.ev}), to,
                      "[1, 3, 2, 2]");
}

TEST(HalfConversionTest, RoundsToNearestEvenAndKeepsSpecials) {
  EXPECT_EQ(Half(65520.0f).bits, 0x7c00);          // Rounds to inf.
  EXPECT_EQ(Half(65519.0f).bits, 0x7bff);          // Largest finite.
  EXPECT_EQ(Half(5.9604645e-8f).bits, 0x0001);     // Smallest subnormal.
  EXPECT_EQ(Half(2.9802322e-8f).bits, 0x0000);     // Half of it: ties to even (0).
  EXPECT_EQ(Half(-0.0f).bits, 0x8000);
  EXPECT_TRUE(std::isnan(static_cast<float>(Half(NAN))));
  EXPECT_EQ(static_cast<float>(Half(1.0f + 1.0f / 2048)), 1.0f);  // Tie → even.
  EXPECT_EQ(BFloat16(1.0f + 1.0f / 256).bits, 0x3f80);            // Tie → even.
  EXPECT_TRUE(std::isnan(static_cast<float>(BFloat16(NAN))));
}

}  // namespace
}  // namespace ember::testing
