// cat and split_with_sizes_copy.
#include "kernels/portable/test/tensor_list_helper.h"

namespace ember::testing {
namespace {

TEST(OpCatTest, ConcatenatesAlongDimWithPromotion) {
  TensorFactory tf;
  TensorLists tl;
  auto& a = tf.make<int32_t>({2, 1}, {1, 2});
  auto& b = tf.make<float>({2, 2}, {3.5f, 4.5f, 5.5f, 6.5f}, {1, 0});
  auto& skipped = tf.make<double>({0});
  auto& out = tf.make<float>({2, 3});
  ASSERT_TRUE(call_kernel("aten::cat.out", {tl.list({&a, &skipped, &b}), tf.i(-1), &out.ev}).ok());
  EXPECT_EQ(out.values<float>(), (std::vector<float>{1, 3.5f, 4.5f, 2, 5.5f, 6.5f}));
  auto& out0 = tf.make<int32_t>({4, 1});
  ASSERT_TRUE(call_kernel("aten::cat.out", {tl.list({&a, &a}), tf.i(0), &out0.ev}).ok());
  EXPECT_EQ(out0.values<int32_t>(), (std::vector<int32_t>{1, 2, 1, 2}));
  auto& only_empty = tf.make<float>({0});
  ASSERT_TRUE(call_kernel("aten::cat.out", {tl.list({&skipped}), tf.i(0), &only_empty.ev}).ok());
}

TEST(OpCatTest, Errors) {
  TensorFactory tf;
  TensorLists tl;
  const char* op = "aten::cat.out";
  auto& a = tf.make<float>({2, 2});
  auto& b = tf.make<float>({2, 3});
  auto& out = tf.make<float>({4, 2});
  EXPECT_KERNEL_FAILS(call_kernel(op, {tl.list({&a, &b}), tf.i(0), &out.ev}), op,
                      "entry 1 has shape [2, 3], which does not match [2, 2] except in dim 0");
  EXPECT_KERNEL_FAILS(call_kernel(op, {tl.list({}), tf.i(0), &out.ev}), op, "non-empty");
  EXPECT_KERNEL_FAILS(call_kernel(op, {tl.list({&a}), tf.i(2), &out.ev}), op, "out of range");
  auto& iout = tf.make<int32_t>({4, 2});
  EXPECT_KERNEL_FAILS(call_kernel(op, {tl.list({&a, &a}), tf.i(0), &iout.ev}), op, "int32");
  auto& s = tf.make<float>({}, {1});
  EXPECT_KERNEL_FAILS(call_kernel(op, {tl.list({&s}), tf.i(0), &out.ev}), op, "zero-dimensional");
  EXPECT_KERNEL_FAILS(call_kernel(op, {&a.ev, tf.i(0), &out.ev}), op, "must be a tensor list");
  EXPECT_KERNEL_FAILS(call_kernel(op, {tl.list({&a, nullptr}), tf.i(0), &out.ev}), op,
                      "must be a tensor list");
}

TEST(OpSplitWithSizesCopyTest, SplitsIntoTheOutList) {
  TensorFactory tf;
  TensorLists tl;
  auto& a = tf.make<int64_t>({2, 3}, {0, 1, 2, 3, 4, 5});
  auto& o1 = tf.make<int64_t>({2, 1});
  auto& o2 = tf.make<int64_t>({2, 0});
  auto& o3 = tf.make<int64_t>({2, 2}, {}, {1, 0});
  EValue* outs = tl.list({&o1, &o2, &o3});
  ASSERT_TRUE(call_kernel("aten::split_with_sizes_copy.out",
                          {&a.ev, tf.list({1, 0, 2}), tf.i(-1), outs}).ok());
  EXPECT_EQ(o1.values<int64_t>(), (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(o3.values<int64_t>(), (std::vector<int64_t>{1, 2, 4, 5}));
  const char* op = "aten::split_with_sizes_copy.out";
  EXPECT_KERNEL_FAILS(call_kernel(op, {&a.ev, tf.list({1, 1, 2}), tf.i(1), outs}), op,
                      "sums to 4 but self of shape [2, 3] has size 3 at dim 1");
  EXPECT_KERNEL_FAILS(call_kernel(op, {&a.ev, tf.list({1, 2}), tf.i(1), outs}), op,
                      "out: has 3 tensors");
  EXPECT_KERNEL_FAILS(call_kernel(op, {&a.ev, tf.list({4, -1, 0}), tf.i(1), outs}), op,
                      "negative size");
  auto& f = tf.make<float>({2, 3});
  EXPECT_KERNEL_FAILS(call_kernel(op, {&a.ev, tf.list({3}), tf.i(1), tl.list({&f})}), op,
                      "expected dtype int64");
}

}  // namespace
}  // namespace ember::testing
