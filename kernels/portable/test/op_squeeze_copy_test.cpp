// squeeze_copy.dim / .dims, unsqueeze_copy, alias_copy.
#include "kernels/test/tensor_factory.h"

namespace ember::testing {
namespace {

TEST(OpSqueezeCopyTest, DropsOnlySizeOneDims) {
  TensorFactory tf;
  auto& a = tf.make<int16_t>({1, 2, 1}, {3, 4});
  auto& out = tf.make<int16_t>({2, 1});
  ASSERT_TRUE(call_kernel("aten::squeeze_copy.dim_out", {&a.ev, tf.i(-3), &out.ev}).ok());
  EXPECT_EQ(out.values<int16_t>(), (std::vector<int16_t>{3, 4}));
  auto& keep = tf.make<int16_t>({1, 2, 1});
  ASSERT_TRUE(call_kernel("aten::squeeze_copy.dim_out", {&a.ev, tf.i(1), &keep.ev}).ok());
  auto& both = tf.make<int16_t>({2});
  ASSERT_TRUE(call_kernel("aten::squeeze_copy.dims_out", {&a.ev, tf.list({0, -1}), &both.ev}).ok());
  EXPECT_EQ(both.values<int16_t>(), (std::vector<int16_t>{3, 4}));
  auto& s = tf.make<int16_t>({}, {9});
  auto& so = tf.make<int16_t>({});
  ASSERT_TRUE(call_kernel("aten::squeeze_copy.dim_out", {&s.ev, tf.i(-1), &so.ev}).ok());
  EXPECT_EQ(so.values<int16_t>(), (std::vector<int16_t>{9}));
}

TEST(OpSqueezeCopyTest, Errors) {
  TensorFactory tf;
  auto& a = tf.make<float>({1, 2});
  auto& out = tf.make<float>({2});
  const char* op = "aten::squeeze_copy.dims_out";
  EXPECT_KERNEL_FAILS(call_kernel(op, {&a.ev, tf.list({0, 0}), &out.ev}), op, "repeats dim 0");
  EXPECT_KERNEL_FAILS(call_kernel(op, {&a.ev, tf.list({2}), &out.ev}), op, "out of range");
  auto& wrong = tf.make<float>({1, 2});
  EXPECT_KERNEL_FAILS(call_kernel("aten::squeeze_copy.dim_out", {&a.ev, tf.i(0), &wrong.ev}),
                      "aten::squeeze_copy.dim_out", "rank 2");
}

TEST(OpUnsqueezeCopyTest, InsertsAnywhere) {
  TensorFactory tf;
  std::vector<float> v = {1, 2, 3, 4, 5, 6, 7, 8};
  auto& a = tf.make<float>({1, 2, 2, 2}, v, kChannelsLast);
  auto& out = tf.make<float>({1, 2, 2, 2, 1});
  ASSERT_TRUE(call_kernel("aten::unsqueeze_copy.out", {&a.ev, tf.i(-1), &out.ev}).ok());
  EXPECT_EQ(out.values<float>(), v);
  auto& out0 = tf.make<float>({1, 1, 2, 2, 2});
  ASSERT_TRUE(call_kernel("aten::unsqueeze_copy.out", {&a.ev, tf.i(0), &out0.ev}).ok());
  EXPECT_EQ(out0.values<float>(), v);
  EXPECT_KERNEL_FAILS(call_kernel("aten::unsqueeze_copy.out", {&a.ev, tf.i(5), &out0.ev}),
                      "aten::unsqueeze_copy.out", "dim 5 out of range for rank 5");
}

TEST(OpAliasCopyTest, CopiesAcrossDimOrders) {
  TensorFactory tf;
  auto& a = tf.make<uint8_t>({2, 2}, {1, 2, 3, 4});
  auto& out = tf.make<uint8_t>({2, 2}, {}, {1, 0});
  ASSERT_TRUE(call_kernel("aten::alias_copy.out", {&a.ev, &out.ev}).ok());
  EXPECT_EQ(out.values<uint8_t>(), (std::vector<uint8_t>{1, 2, 3, 4}));
  auto& wrong = tf.make<int8_t>({2, 2});
  EXPECT_KERNEL_FAILS(call_kernel("aten::alias_copy.out", {&a.ev, &wrong.ev}),
                      "aten::alias_copy.out", "expected dtype uint8");
}

}  // namespace
}  // namespace ember::testing
