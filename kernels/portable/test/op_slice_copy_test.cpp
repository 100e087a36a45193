// slice_copy, slice_scatter, select_copy, select_scatter.
#include "kernels/test/tensor_factory.h"

namespace ember::testing {
namespace {

TEST(OpSliceCopyTest, StepsNegativeAndNoneBounds) {
  TensorFactory tf;
  auto& a = tf.make<int32_t>({2, 5}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  auto& out = tf.make<int32_t>({2, 2});
  ASSERT_TRUE(call_kernel("aten::slice_copy.Tensor_out",
                          {&a.ev, tf.i(-1), tf.i(1), tf.none(), tf.i(2), &out.ev}).ok());
  EXPECT_EQ(out.values<int32_t>(), (std::vector<int32_t>{1, 3, 6, 8}));
  auto& out2 = tf.make<int32_t>({2, 2});
  ASSERT_TRUE(call_kernel("aten::slice_copy.Tensor_out",
                          {&a.ev, tf.i(1), tf.i(-3), tf.i(-1), tf.i(1), &out2.ev}).ok());
  EXPECT_EQ(out2.values<int32_t>(), (std::vector<int32_t>{2, 3, 7, 8}));
  // Clamped bounds and an empty result.
  auto& out3 = tf.make<int32_t>({2, 0});
  ASSERT_TRUE(call_kernel("aten::slice_copy.Tensor_out",
                          {&a.ev, tf.i(1), tf.i(4), tf.i(2), tf.i(1), &out3.ev}).ok());
  auto& out4 = tf.make<int32_t>({1, 5});
  ASSERT_TRUE(call_kernel("aten::slice_copy.Tensor_out",
                          {&a.ev, tf.i(0), tf.i(-100), tf.i(1), tf.i(1), &out4.ev}).ok());
  EXPECT_EQ(out4.values<int32_t>(), (std::vector<int32_t>{0, 1, 2, 3, 4}));
}

TEST(OpSliceCopyTest, ChannelsLastAndBFloat16) {
  TensorFactory tf;
  auto& a = tf.make_from_floats<BFloat16>({1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8}, kChannelsLast);
  auto& out = tf.make<BFloat16>({1, 1, 2, 2});
  ASSERT_TRUE(call_kernel("aten::slice_copy.Tensor_out",
                          {&a.ev, tf.i(1), tf.i(1), tf.none(), tf.i(1), &out.ev}).ok());
  EXPECT_EQ(out.as_doubles<BFloat16>(), (std::vector<double>{5, 6, 7, 8}));
}

TEST(OpSliceCopyTest, Errors) {
  TensorFactory tf;
  const char* op = "aten::slice_copy.Tensor_out";
  auto& a = tf.make<float>({4});
  auto& out = tf.make<float>({4});
  EXPECT_KERNEL_FAILS(call_kernel(op, {&a.ev, tf.i(0), tf.none(), tf.none(), tf.i(0), &out.ev}),
                      op, "step: must be positive");
  EXPECT_KERNEL_FAILS(call_kernel(op, {&a.ev, tf.i(1), tf.none(), tf.none(), tf.i(1), &out.ev}),
                      op, "dim 1 out of range");
  auto& small = tf.make<float>({3});
  EXPECT_KERNEL_FAILS(call_kernel(op, {&a.ev, tf.i(0), tf.none(), tf.none(), tf.i(1), &small.ev}),
                      op, "static shape");
  auto& wrong = tf.make<int32_t>({4});
  EXPECT_KERNEL_FAILS(call_kernel(op, {&a.ev, tf.i(0), tf.none(), tf.none(), tf.i(1), &wrong.ev}),
                      op, "int32");
  auto& s = tf.make<float>({}, {1});
  EXPECT_KERNEL_FAILS(call_kernel(op, {&s.ev, tf.i(0), tf.none(), tf.none(), tf.i(1), &s.ev}),
                      op, "0-dim");
}

TEST(OpSliceScatterTest, WritesTheSlice) {
  TensorFactory tf;
  auto& a = tf.make<int64_t>({2, 4}, {0, 1, 2, 3, 4, 5, 6, 7});
  auto& src = tf.make<int64_t>({2, 2}, {-1, -2, -3, -4});
  auto& out = tf.make<int64_t>({2, 4});
  ASSERT_TRUE(call_kernel("aten::slice_scatter.out",
                          {&a.ev, &src.ev, tf.i(1), tf.i(1), tf.none(), tf.i(2), &out.ev}).ok());
  EXPECT_EQ(out.values<int64_t>(), (std::vector<int64_t>{0, -1, 2, -2, 4, -3, 6, -4}));
  const char* op = "aten::slice_scatter.out";
  auto& bad = tf.make<int64_t>({2, 3});
  EXPECT_KERNEL_FAILS(
      call_kernel(op, {&a.ev, &bad.ev, tf.i(1), tf.i(1), tf.none(), tf.i(2), &out.ev}), op,
      "src has shape [2, 3] but the slice has shape [2, 2]");
  auto& fsrc = tf.make<float>({2, 2});
  EXPECT_KERNEL_FAILS(
      call_kernel(op, {&a.ev, &fsrc.ev, tf.i(1), tf.i(1), tf.none(), tf.i(2), &out.ev}), op,
      "src: expected dtype int64");
}

TEST(OpSelectCopyTest, SelectsAndScatters) {
  TensorFactory tf;
  auto& a = tf.make<bool>({2, 3}, {true, false, true, false, false, true});
  auto& out = tf.make<bool>({2});
  ASSERT_TRUE(call_kernel("aten::select_copy.int_out", {&a.ev, tf.i(1), tf.i(-1), &out.ev}).ok());
  EXPECT_EQ(out.values<bool>(), (std::vector<bool>{true, true}));
  auto& src = tf.make<bool>({3}, {true, true, true});
  auto& out2 = tf.make<bool>({2, 3}, {}, {1, 0});  // Column-major out.
  ASSERT_TRUE(
      call_kernel("aten::select_scatter.out", {&a.ev, &src.ev, tf.i(0), tf.i(1), &out2.ev}).ok());
  EXPECT_EQ(out2.values<bool>(), (std::vector<bool>{true, false, true, true, true, true}));
  const char* op = "aten::select_copy.int_out";
  EXPECT_KERNEL_FAILS(call_kernel(op, {&a.ev, tf.i(1), tf.i(3), &out.ev}), op,
                      "index: 3 out of range for self of shape [2, 3] at dim 1");
  EXPECT_KERNEL_FAILS(call_kernel(op, {&a.ev, tf.i(0), tf.i(-3), &out.ev}), op, "out of range");
  const char* sop = "aten::select_scatter.out";
  auto& bad = tf.make<bool>({2});
  EXPECT_KERNEL_FAILS(call_kernel(sop, {&a.ev, &bad.ev, tf.i(0), tf.i(1), &out2.ev}), sop,
                      "the selected slice");
}

}  // namespace
}  // namespace ember::testing
