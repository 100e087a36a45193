// arange.start_out, empty.out, empty_strided.out, rand.out, randperm.out,
// native_dropout.out.
#include <algorithm>
#include <cmath>

#include "kernels/portable/test/tensor_list_helper.h"

namespace ember::testing {
namespace {

TEST(OpArangeTest, IntegerAndFloatingSteps) {
  TensorFactory tf;
  auto& out = tf.zeros(ScalarType::Long, {10}, {}, TensorShapeDynamism::DynamicBound);
  ASSERT_TRUE(call_kernel("aten::arange.start_out", {tf.i(2), tf.i(11), tf.i(3), &out.ev}).ok());
  EXPECT_EQ(out.values<int64_t>(), (std::vector<int64_t>{2, 5, 8}));
  ASSERT_TRUE(call_kernel("aten::arange.start_out", {tf.i(3), tf.i(-2), tf.i(-2), &out.ev}).ok());
  EXPECT_EQ(out.values<int64_t>(), (std::vector<int64_t>{3, 1, -1}));
  auto& f = tf.zeros(ScalarType::Float, {10}, {}, TensorShapeDynamism::DynamicBound);
  ASSERT_TRUE(call_kernel("aten::arange.start_out", {tf.d(0.5), tf.d(2.0), tf.d(0.5), &f.ev}).ok());
  EXPECT_EQ(f.values<float>(), (std::vector<float>{0.5f, 1.0f, 1.5f}));
  auto& h = tf.make<Half>({2});
  ASSERT_TRUE(call_kernel("aten::arange.start_out", {tf.i(0), tf.d(1.0), tf.d(0.5), &h.ev}).ok());
  EXPECT_EQ(h.as_doubles<Half>(), (std::vector<double>{0, 0.5}));
  auto& e = tf.make<int32_t>({0});
  ASSERT_TRUE(call_kernel("aten::arange.start_out", {tf.i(4), tf.i(4), tf.i(1), &e.ev}).ok());
}

TEST(OpArangeTest, Errors) {
  TensorFactory tf;
  const char* op = "aten::arange.start_out";
  auto& out = tf.make<int64_t>({3});
  EXPECT_KERNEL_FAILS(call_kernel(op, {tf.i(0), tf.i(3), tf.i(0), &out.ev}), op, "step: must be nonzero");
  EXPECT_KERNEL_FAILS(call_kernel(op, {tf.i(0), tf.i(3), tf.i(-1), &out.ev}), op, "wrong side");
  EXPECT_KERNEL_FAILS(call_kernel(op, {tf.i(0), tf.i(4), tf.i(1), &out.ev}), op, "static shape");
  auto& b = tf.make<bool>({3});
  EXPECT_KERNEL_FAILS(call_kernel(op, {tf.i(0), tf.i(3), tf.i(1), &b.ev}), op, "bool");
  auto& two = tf.make<int64_t>({3, 1});
  EXPECT_KERNEL_FAILS(call_kernel(op, {tf.i(0), tf.i(3), tf.i(1), &two.ev}), op, "expected 1 dim");
  EXPECT_KERNEL_FAILS(call_kernel(op, {tf.d(0), tf.d(INFINITY), tf.i(1), &out.ev}), op, "finite");
}

TEST(OpEmptyTest, OnlySizesOut) {
  TensorFactory tf;
  auto& out = tf.zeros(ScalarType::Float, {4, 4}, {}, TensorShapeDynamism::DynamicBound);
  ASSERT_TRUE(call_kernel("aten::empty.out", {tf.list({2, 3}), tf.none(), &out.ev}).ok());
  EXPECT_EQ(out.t.numel, 6);
  ASSERT_TRUE(call_kernel("aten::empty_strided.out", {tf.list({3, 1}), tf.list({1, 1}), &out.ev}).ok());
  EXPECT_EQ(out.t.numel, 3);
  EXPECT_KERNEL_FAILS(call_kernel("aten::empty.out", {tf.list({5, 5}), tf.none(), &out.ev}),
                      "aten::empty.out", "planned capacity");
  EXPECT_KERNEL_FAILS(call_kernel("aten::empty.out", {tf.list({-1, 2}), tf.none(), &out.ev}),
                      "aten::empty.out", "invalid size");
  EXPECT_KERNEL_FAILS(call_kernel("aten::empty.out", {tf.list({2, 2}), tf.d(1.0), &out.ev}),
                      "aten::empty.out", "memory_format");
  EXPECT_KERNEL_FAILS(call_kernel("aten::empty_strided.out", {tf.list({2, 2}), tf.list({1}), &out.ev}),
                      "aten::empty_strided.out", "stride: [1] has 1 entries");
}

TEST(OpRandTest, UniformDeterministicAndBelowOne) {
  TensorFactory tf;
  auto& a = tf.make<float>({100, 100});
  KernelContext ctx1("aten::rand.out");
  ASSERT_TRUE(call_kernel(ctx1, "aten::rand.out", {tf.list({100, 100}), &a.ev}).ok());
  auto va = a.values<float>();
  EXPECT_GE(*std::min_element(va.begin(), va.end()), 0.0f);
  EXPECT_LT(*std::max_element(va.begin(), va.end()), 1.0f);
  double mean = 0;
  for (float x : va) mean += x;
  EXPECT_NEAR(mean / va.size(), 0.5, 0.01);
  // Same seed, same values, whatever the dim order.
  auto& b = tf.make<float>({100, 100}, {}, {1, 0});
  KernelContext ctx2("aten::rand.out");
  ASSERT_TRUE(call_kernel(ctx2, "aten::rand.out", {tf.list({100, 100}), &b.ev}).ok());
  EXPECT_EQ(b.values<float>(), va);
  auto& bf = tf.make<BFloat16>({1000});
  ASSERT_TRUE(call_kernel("aten::rand.out", {tf.list({1000}), &bf.ev}).ok());
  for (double x : bf.as_doubles<BFloat16>()) ASSERT_LT(x, 1.0);
  auto& i = tf.make<int32_t>({2});
  EXPECT_KERNEL_FAILS(call_kernel("aten::rand.out", {tf.list({2}), &i.ev}), "aten::rand.out",
                      "unsupported dtype int32");
}

TEST(OpRandpermTest, IsAPermutation) {
  TensorFactory tf;
  auto& out = tf.make<int64_t>({50});
  ASSERT_TRUE(call_kernel("aten::randperm.out", {tf.i(50), &out.ev}).ok());
  auto v = out.values<int64_t>();
  std::vector<int64_t> sorted = v;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t k = 0; k < 50; ++k) EXPECT_EQ(sorted[k], k);
  EXPECT_NE(v, sorted);  // 1 / 50! chance of a false failure.
  const char* op = "aten::randperm.out";
  EXPECT_KERNEL_FAILS(call_kernel(op, {tf.i(-1), &out.ev}), op, "n: must be in");
  auto& h = tf.make<Half>({3000});
  EXPECT_KERNEL_FAILS(call_kernel(op, {tf.i(3000), &h.ev}), op, "too large for out's dtype float16");
  auto& b = tf.make<bool>({2});
  EXPECT_KERNEL_FAILS(call_kernel(op, {tf.i(2), &b.ev}), op, "unsupported dtype bool");
}

TEST(OpNativeDropoutTest, EvalCopiesTrainMasks) {
  TensorFactory tf;
  TensorLists tl;
  auto& x = tf.make<float>({2, 2}, {1, 2, 3, 4});
  auto& out = tf.make<float>({2, 2});
  auto& mask = tf.make<bool>({2, 2});
  EValue* ret = tl.list({&out, &mask});
  ASSERT_TRUE(call_kernel("aten::native_dropout.out",
                          {&x.ev, tf.d(0.5), tf.b(false), &out.ev, &mask.ev, ret}, false).ok());
  EXPECT_EQ(out.values<float>(), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(mask.values<bool>(), (std::vector<bool>{true, true, true, true}));
  ASSERT_TRUE(call_kernel("aten::native_dropout.out",
                          {&x.ev, tf.d(0.5), tf.b(true), &out.ev, &mask.ev, ret}, false).ok());
  auto o = out.values<float>();
  auto m = mask.values<bool>();
  for (int k = 0; k < 4; ++k) EXPECT_EQ(o[k], m[k] ? 2.0f * (k + 1) : 0.0f);
  ASSERT_TRUE(call_kernel("aten::native_dropout.out",
                          {&x.ev, tf.d(1.0), tf.none(), &out.ev, &mask.ev, ret}, false).ok());
  EXPECT_EQ(out.values<float>(), (std::vector<float>{0, 0, 0, 0}));
  const char* op = "aten::native_dropout.out";
  EXPECT_KERNEL_FAILS(call_kernel(op, {&x.ev, tf.d(1.5), tf.b(true), &out.ev, &mask.ev, ret}, false),
                      op, "p: must be in [0, 1]");
  auto& fmask = tf.make<float>({2, 2});
  EXPECT_KERNEL_FAILS(call_kernel(op, {&x.ev, tf.d(0.5), tf.b(true), &out.ev, &fmask.ev, ret}, false),
                      op, "out1: expected dtype bool");
  auto& ix = tf.make<int32_t>({2, 2});
  EXPECT_KERNEL_FAILS(call_kernel(op, {&ix.ev, tf.d(0.5), tf.b(true), &ix.ev, &mask.ev, ret}, false),
                      op, "input: unsupported dtype int32");
}

}  // namespace
}  // namespace ember::testing
