// gather, scatter.src / .value, scatter_add, scatter_reduce.two.
#include <cmath>

#include "kernels/portable/test/tensor_list_helper.h"

namespace ember::testing {
namespace {

TEST(OpGatherTest, GathersAlongDim) {
  TensorFactory tf;
  auto& a = tf.make<float>({2, 3}, {0, 1, 2, 3, 4, 5});
  auto& idx = tf.make<int64_t>({2, 2}, {2, 0, 1, 1});
  auto& out = tf.make<float>({2, 2});
  ASSERT_TRUE(call_kernel("aten::gather.out", {&a.ev, tf.i(1), &idx.ev, tf.b(false), &out.ev}).ok());
  EXPECT_EQ(out.values<float>(), (std::vector<float>{2, 0, 4, 4}));
  auto& idx32 = tf.make<int32_t>({1, 3}, {1, 0, 1});
  auto& out0 = tf.make<float>({1, 3});
  ASSERT_TRUE(
      call_kernel("aten::gather.out", {&a.ev, tf.i(-2), &idx32.ev, tf.b(false), &out0.ev}).ok());
  EXPECT_EQ(out0.values<float>(), (std::vector<float>{3, 1, 5}));
}

TEST(OpGatherTest, Errors) {
  TensorFactory tf;
  const char* op = "aten::gather.out";
  auto& a = tf.make<float>({2, 3});
  auto& out = tf.make<float>({1, 2});
  auto& bad = tf.make<int64_t>({1, 2}, {0, 3});
  EXPECT_KERNEL_FAILS(call_kernel(op, {&a.ev, tf.i(1), &bad.ev, tf.b(false), &out.ev}), op,
                      "index: index 3 is out of bounds for dim 1 with size 3");
  auto& neg = tf.make<int64_t>({1, 2}, {0, -1});
  EXPECT_KERNEL_FAILS(call_kernel(op, {&a.ev, tf.i(1), &neg.ev, tf.b(false), &out.ev}), op,
                      "index -1 is out of bounds");
  auto& fidx = tf.make<float>({1, 2});
  EXPECT_KERNEL_FAILS(call_kernel(op, {&a.ev, tf.i(1), &fidx.ev, tf.b(false), &out.ev}), op,
                      "expected dtype int64 or int32");
  auto& rank1 = tf.make<int64_t>({2}, {0, 0});
  EXPECT_KERNEL_FAILS(call_kernel(op, {&a.ev, tf.i(1), &rank1.ev, tf.b(false), &out.ev}), op,
                      "ranks differ");
  auto& big = tf.make<int64_t>({3, 1});
  EXPECT_KERNEL_FAILS(call_kernel(op, {&a.ev, tf.i(1), &big.ev, tf.b(false), &out.ev}), op,
                      "exceeds self's shape");
}

TEST(OpScatterTest, SrcValueAndAdd) {
  TensorFactory tf;
  auto& a = tf.make<int32_t>({2, 3}, {0, 0, 0, 0, 0, 0});
  auto& idx = tf.make<int64_t>({1, 3}, {1, 0, 1});
  auto& src = tf.make<int32_t>({2, 3}, {1, 2, 3, 4, 5, 6});
  auto& out = tf.make<int32_t>({2, 3});
  ASSERT_TRUE(call_kernel("aten::scatter.src_out", {&a.ev, tf.i(0), &idx.ev, &src.ev, &out.ev}).ok());
  EXPECT_EQ(out.values<int32_t>(), (std::vector<int32_t>{0, 2, 0, 1, 0, 3}));
  ASSERT_TRUE(call_kernel("aten::scatter.value_out", {&a.ev, tf.i(0), &idx.ev, tf.i(7), &out.ev}).ok());
  EXPECT_EQ(out.values<int32_t>(), (std::vector<int32_t>{0, 7, 0, 7, 0, 7}));
  auto& idx2 = tf.make<int64_t>({1, 3}, {2, 2, 0});
  ASSERT_TRUE(call_kernel("aten::scatter_add.out", {&src.ev, tf.i(1), &idx2.ev, &src.ev, &out.ev}).ok());
  EXPECT_EQ(out.values<int32_t>(), (std::vector<int32_t>{4, 2, 6, 4, 5, 6}));
  auto& b = tf.make<bool>({3}, {false, false, true});
  auto& bi = tf.make<int64_t>({2}, {0, 0});
  auto& bs = tf.make<bool>({2}, {true, true});
  auto& bo = tf.make<bool>({3});
  ASSERT_TRUE(call_kernel("aten::scatter_add.out", {&b.ev, tf.i(0), &bi.ev, &bs.ev, &bo.ev}).ok());
  EXPECT_EQ(bo.values<bool>(), (std::vector<bool>{true, false, true}));
}

TEST(OpScatterTest, Errors) {
  TensorFactory tf;
  const char* op = "aten::scatter.src_out";
  auto& a = tf.make<float>({2, 3});
  auto& idx = tf.make<int64_t>({1, 3}, {0, 2, 0});
  auto& src = tf.make<float>({1, 2});
  auto& out = tf.make<float>({2, 3});
  EXPECT_KERNEL_FAILS(call_kernel(op, {&a.ev, tf.i(0), &idx.ev, &src.ev, &out.ev}), op,
                      "or src's shape [1, 2]");
  auto& isrc = tf.make<int32_t>({1, 3});
  EXPECT_KERNEL_FAILS(call_kernel(op, {&a.ev, tf.i(0), &idx.ev, &isrc.ev, &out.ev}), op,
                      "src: expected dtype float32");
  EXPECT_KERNEL_FAILS(call_kernel(op, {&a.ev, tf.i(0), &idx.ev, &a.ev, &out.ev}), op,
                      "index 2 is out of bounds for dim 0 with size 2");
}

TEST(OpScatterReduceTest, AllReductions) {
  TensorFactory tf;
  TensorLists tl;
  auto& self = tf.make<float>({3}, {1, 2, 3});
  auto& idx = tf.make<int64_t>({4}, {0, 0, 2, 0});
  auto& src = tf.make<float>({4}, {4, -1, 5, 2});
  auto& out = tf.make<float>({3});
  auto run = [&](const char* reduce, bool include_self) {
    EXPECT_TRUE(call_kernel("aten::scatter_reduce.two_out",
                            {&self.ev, tf.i(0), &idx.ev, &src.ev, tl.str(reduce),
                             tf.b(include_self), &out.ev}).ok());
    return out.values<float>();
  };
  EXPECT_EQ(run("sum", true), (std::vector<float>{6, 2, 8}));
  EXPECT_EQ(run("sum", false), (std::vector<float>{5, 2, 5}));
  EXPECT_EQ(run("prod", true), (std::vector<float>{-8, 2, 15}));
  EXPECT_EQ(run("prod", false), (std::vector<float>{-8, 2, 5}));
  EXPECT_EQ(run("mean", true), (std::vector<float>{1.5f, 2, 4}));
  EXPECT_EQ(run("mean", false), (std::vector<float>{5.0f / 3, 2, 5}));
  EXPECT_EQ(run("amax", true), (std::vector<float>{4, 2, 5}));
  EXPECT_EQ(run("amin", true), (std::vector<float>{-1, 2, 3}));
  EXPECT_EQ(run("amin", false), (std::vector<float>{-1, 2, 5}));
  // NaN propagates through amax.
  auto& nsrc = tf.make<float>({4}, {NAN, -1, 5, 2});
  ASSERT_TRUE(call_kernel("aten::scatter_reduce.two_out",
                          {&self.ev, tf.i(0), &idx.ev, &nsrc.ev, tl.str("amax"), tf.b(true),
                           &out.ev}).ok());
  EXPECT_TRUE(std::isnan(out.values<float>()[0]));
  // Integer mean floors.
  auto& is = tf.make<int64_t>({2}, {5, -7});
  auto& ii = tf.make<int64_t>({3}, {0, 0, 1});
  auto& isrc = tf.make<int64_t>({3}, {2, -4, 4});
  auto& io = tf.make<int64_t>({2});
  ASSERT_TRUE(call_kernel("aten::scatter_reduce.two_out",
                          {&is.ev, tf.i(0), &ii.ev, &isrc.ev, tl.str("mean"), tf.b(true),
                           &io.ev}).ok());
  EXPECT_EQ(io.values<int64_t>(), (std::vector<int64_t>{1, -2}));
}

TEST(OpScatterReduceTest, Errors) {
  TensorFactory tf;
  TensorLists tl;
  const char* op = "aten::scatter_reduce.two_out";
  auto& self = tf.make<bool>({3});
  auto& idx = tf.make<int64_t>({1}, {0});
  auto& out = tf.make<bool>({3});
  EXPECT_KERNEL_FAILS(call_kernel(op, {&self.ev, tf.i(0), &idx.ev, &self.ev, tl.str("mean"),
                                       tf.b(true), &out.ev}),
                      op, "does not support dtype bool");
  EXPECT_KERNEL_FAILS(call_kernel(op, {&self.ev, tf.i(0), &idx.ev, &self.ev, tl.str("max"),
                                       tf.b(true), &out.ev}),
                      op, "'max' is not one of");
  EXPECT_KERNEL_FAILS(call_kernel(op, {&self.ev, tf.i(0), &idx.ev, &self.ev, tf.i(0), tf.b(true),
                                       &out.ev}),
                      op, "must be a string");
}

}  // namespace
}  // namespace ember::testing
