// as_strided_copy, diagonal_copy, flip, repeat, copy.
#include "kernels/test/tensor_factory.h"

namespace ember::testing {
namespace {

TEST(OpAsStridedCopyTest, ReadsStorage) {
  TensorFactory tf;
  auto& a = tf.make<int32_t>({2, 3}, {0, 1, 2, 3, 4, 5});
  auto& out = tf.make<int32_t>({2, 2});
  ASSERT_TRUE(call_kernel("aten::as_strided_copy.out",
                          {&a.ev, tf.list({2, 2}), tf.list({1, 2}), tf.i(1), &out.ev}).ok());
  EXPECT_EQ(out.values<int32_t>(), (std::vector<int32_t>{1, 3, 2, 4}));
  auto& out2 = tf.make<int32_t>({3});
  ASSERT_TRUE(call_kernel("aten::as_strided_copy.out",
                          {&a.ev, tf.list({3}), tf.list({0}), tf.none(), &out2.ev}).ok());
  EXPECT_EQ(out2.values<int32_t>(), (std::vector<int32_t>{0, 0, 0}));
}

TEST(OpAsStridedCopyTest, Errors) {
  TensorFactory tf;
  const char* op = "aten::as_strided_copy.out";
  auto& a = tf.make<float>({2, 3});
  auto& out = tf.make<float>({2, 3});
  EXPECT_KERNEL_FAILS(call_kernel(op, {&a.ev, tf.list({2, 3}), tf.list({3, 1}), tf.i(1), &out.ev}),
                      op, "reach element 6, outside self's 6 elements");
  EXPECT_KERNEL_FAILS(call_kernel(op, {&a.ev, tf.list({2, 3}), tf.list({3}), tf.i(0), &out.ev}),
                      op, "stride: [3] has 1 entries");
  EXPECT_KERNEL_FAILS(call_kernel(op, {&a.ev, tf.list({2, 3}), tf.list({-3, 1}), tf.i(0), &out.ev}),
                      op, "must be >= 0");
  EXPECT_KERNEL_FAILS(call_kernel(op, {&a.ev, tf.list({2, 3}), tf.list({3, 1}), tf.i(-1), &out.ev}),
                      op, "storage_offset");
}

TEST(OpDiagonalCopyTest, OffsetsAndDims) {
  TensorFactory tf;
  auto& a = tf.make<double>({3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  auto& d0 = tf.make<double>({3});
  ASSERT_TRUE(call_kernel("aten::diagonal_copy.out", {&a.ev, tf.i(0), tf.i(0), tf.i(1), &d0.ev}).ok());
  EXPECT_EQ(d0.values<double>(), (std::vector<double>{0, 5, 10}));
  auto& d1 = tf.make<double>({3});
  ASSERT_TRUE(call_kernel("aten::diagonal_copy.out", {&a.ev, tf.i(1), tf.i(0), tf.i(1), &d1.ev}).ok());
  EXPECT_EQ(d1.values<double>(), (std::vector<double>{1, 6, 11}));
  auto& dm = tf.make<double>({3});
  ASSERT_TRUE(call_kernel("aten::diagonal_copy.out", {&a.ev, tf.i(-1), tf.i(-1), tf.i(-2), &dm.ev}).ok());
  EXPECT_EQ(dm.values<double>(), (std::vector<double>{1, 6, 11}));  // dim1=1, dim2=0, offset -1.
  auto& de = tf.make<double>({0});
  ASSERT_TRUE(call_kernel("aten::diagonal_copy.out", {&a.ev, tf.i(7), tf.i(0), tf.i(1), &de.ev}).ok());
  const char* op = "aten::diagonal_copy.out";
  EXPECT_KERNEL_FAILS(call_kernel(op, {&a.ev, tf.i(0), tf.i(1), tf.i(-1), &d0.ev}), op,
                      "dim1 and dim2 are both dim 1");
  auto& v = tf.make<double>({3});
  EXPECT_KERNEL_FAILS(call_kernel(op, {&v.ev, tf.i(0), tf.i(0), tf.i(1), &d0.ev}), op,
                      "at least 2 dims");
}

TEST(OpFlipTest, FlipsListedDims) {
  TensorFactory tf;
  auto& a = tf.make_from_floats<Half>({2, 3}, {0, 1, 2, 3, 4, 5});
  auto& out = tf.make<Half>({2, 3});
  ASSERT_TRUE(call_kernel("aten::flip.out", {&a.ev, tf.list({-1}), &out.ev}).ok());
  EXPECT_EQ(out.as_doubles<Half>(), (std::vector<double>{2, 1, 0, 5, 4, 3}));
  auto& out2 = tf.make<Half>({2, 3}, {}, {1, 0});
  ASSERT_TRUE(call_kernel("aten::flip.out", {&a.ev, tf.list({0, 1}), &out2.ev}).ok());
  EXPECT_EQ(out2.as_doubles<Half>(), (std::vector<double>{5, 4, 3, 2, 1, 0}));
  EXPECT_KERNEL_FAILS(call_kernel("aten::flip.out", {&a.ev, tf.list({1, -1}), &out.ev}),
                      "aten::flip.out", "repeats dim 1");
}

TEST(OpRepeatTest, TilesWithNewLeadingDims) {
  TensorFactory tf;
  auto& a = tf.make<int8_t>({2}, {1, 2});
  auto& out = tf.make<int8_t>({2, 4});
  ASSERT_TRUE(call_kernel("aten::repeat.out", {&a.ev, tf.list({2, 2}), &out.ev}).ok());
  EXPECT_EQ(out.values<int8_t>(), (std::vector<int8_t>{1, 2, 1, 2, 1, 2, 1, 2}));
  auto& b = tf.make<int8_t>({2, 1}, {1, 2});
  auto& out2 = tf.make<int8_t>({4, 3}, {}, {1, 0});
  ASSERT_TRUE(call_kernel("aten::repeat.out", {&b.ev, tf.list({2, 3}), &out2.ev}).ok());
  EXPECT_EQ(out2.values<int8_t>(), (std::vector<int8_t>{1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2}));
  auto& empty = tf.make<int8_t>({0, 1});
  ASSERT_TRUE(call_kernel("aten::repeat.out", {&b.ev, tf.list({0, 1}), &empty.ev}).ok());
  EXPECT_KERNEL_FAILS(call_kernel("aten::repeat.out", {&b.ev, tf.list({2}), &out.ev}),
                      "aten::repeat.out", "fewer entries");
  EXPECT_KERNEL_FAILS(call_kernel("aten::repeat.out", {&b.ev, tf.list({-1, 1}), &out.ev}),
                      "aten::repeat.out", "invalid repeats");
}

TEST(OpCopyTest, BroadcastsAndConverts) {
  TensorFactory tf;
  auto& self = tf.make<int32_t>({2, 3});
  auto& src = tf.make<float>({3}, {1.5f, -2.5f, 3.0f});
  auto& out = tf.make<int32_t>({2, 3});
  ASSERT_TRUE(call_kernel("aten::copy.out", {&self.ev, &src.ev, tf.b(false), &out.ev}).ok());
  EXPECT_EQ(out.values<int32_t>(), (std::vector<int32_t>{1, -2, 3, 1, -2, 3}));
  auto& bad = tf.make<float>({2});
  EXPECT_KERNEL_FAILS(call_kernel("aten::copy.out", {&self.ev, &bad.ev, tf.b(false), &out.ev}),
                      "aten::copy.out", "does not broadcast");
}

}  // namespace
}  // namespace ember::testing
