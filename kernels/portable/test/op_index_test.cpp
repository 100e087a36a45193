// index.Tensor_out and index_put.out (advanced indexing), index_select,
// embedding, masked_scatter, nonzero.
#include <cmath>

#include "kernels/portable/test/tensor_list_helper.h"

namespace ember::testing {
namespace {

// self = arange(12) as [3, 4].
std::vector<int32_t> iota12() {
  std::vector<int32_t> v(12);
  for (int i = 0; i < 12; ++i) v[i] = i;
  return v;
}

TEST(OpIndexTest, IntegerIndicesBroadcastAndPlacement) {
  TensorFactory tf;
  TensorLists tl;
  auto& a = tf.make<int32_t>({3, 4}, iota12());
  auto& rows = tf.make<int64_t>({2}, {2, -3});
  auto& out = tf.make<int32_t>({2, 4});
  ASSERT_TRUE(call_kernel("aten::index.Tensor_out", {&a.ev, tl.list({&rows}), &out.ev}).ok());
  EXPECT_EQ(out.values<int32_t>(), (std::vector<int32_t>{8, 9, 10, 11, 0, 1, 2, 3}));
  // a[:, cols] keeps dim 0 first.
  auto& cols = tf.make<int32_t>({2, 1}, {3, 0});
  auto& out2 = tf.make<int32_t>({3, 2, 1});
  ASSERT_TRUE(call_kernel("aten::index.Tensor_out", {&a.ev, tl.list({nullptr, &cols}), &out2.ev}).ok());
  EXPECT_EQ(out2.values<int32_t>(), (std::vector<int32_t>{3, 0, 7, 4, 11, 8}));
  // a[rows2, cols2] with broadcasting [2,1] x [2] -> [2, 2].
  auto& r2 = tf.make<int64_t>({2, 1}, {0, 2});
  auto& c2 = tf.make<int64_t>({2}, {1, 3});
  auto& out3 = tf.make<int32_t>({2, 2});
  ASSERT_TRUE(call_kernel("aten::index.Tensor_out", {&a.ev, tl.list({&r2, &c2}), &out3.ev}).ok());
  EXPECT_EQ(out3.values<int32_t>(), (std::vector<int32_t>{1, 3, 9, 11}));
}

TEST(OpIndexTest, NonAdjacentIndicesGoFirst) {
  TensorFactory tf;
  TensorLists tl;
  std::vector<int32_t> v(24);
  for (int i = 0; i < 24; ++i) v[i] = i;
  auto& a = tf.make<int32_t>({2, 3, 4}, v);
  auto& i0 = tf.make<int64_t>({2}, {1, 0});
  auto& i2 = tf.make<int64_t>({2}, {3, 0});
  auto& out = tf.make<int32_t>({2, 3});
  ASSERT_TRUE(
      call_kernel("aten::index.Tensor_out", {&a.ev, tl.list({&i0, nullptr, &i2}), &out.ev}).ok());
  // out[k, j] = a[i0[k], j, i2[k]].
  EXPECT_EQ(out.values<int32_t>(), (std::vector<int32_t>{15, 19, 23, 0, 4, 8}));
}

TEST(OpIndexTest, BoolMaskDynamicOut) {
  TensorFactory tf;
  TensorLists tl;
  auto& a = tf.make<int32_t>({3, 4}, iota12());
  auto& mask = tf.make<bool>({3}, {true, false, true});
  auto& out = tf.zeros(ScalarType::Int, {3, 4}, {}, TensorShapeDynamism::DynamicBound);
  ASSERT_TRUE(call_kernel("aten::index.Tensor_out", {&a.ev, tl.list({&mask}), &out.ev}).ok());
  EXPECT_EQ(out.t.sizes[0], 2);
  EXPECT_EQ(out.values<int32_t>(), (std::vector<int32_t>{0, 1, 2, 3, 8, 9, 10, 11}));
  // A 2-D mask over both dims, channels-last-like column-major self.
  auto& b = tf.make<int32_t>({2, 2}, {1, 2, 3, 4}, {1, 0});
  auto& m2 = tf.make<bool>({2, 2}, {false, true, true, true});
  auto& out2 = tf.make<int32_t>({3});
  ASSERT_TRUE(call_kernel("aten::index.Tensor_out", {&b.ev, tl.list({&m2}), &out2.ev}).ok());
  EXPECT_EQ(out2.values<int32_t>(), (std::vector<int32_t>{2, 3, 4}));
}

TEST(OpIndexTest, Errors) {
  TensorFactory tf;
  TensorLists tl;
  const char* op = "aten::index.Tensor_out";
  auto& a = tf.make<float>({3, 4});
  auto& out = tf.make<float>({1, 4});
  auto& big = tf.make<int64_t>({1}, {3});
  EXPECT_KERNEL_FAILS(call_kernel(op, {&a.ev, tl.list({&big}), &out.ev}), op,
                      "indices: index 3 is out of bounds for dim 0 with size 3");
  auto& neg = tf.make<int64_t>({1}, {-5});
  auto& out31 = tf.make<float>({3, 1});
  EXPECT_KERNEL_FAILS(call_kernel(op, {&a.ev, tl.list({nullptr, &neg}), &out31.ev}), op,
                      "index -5 is out of bounds for dim 1 with size 4");
  auto& ok = tf.make<int64_t>({1}, {0});
  EXPECT_KERNEL_FAILS(call_kernel(op, {&a.ev, tl.list({&ok, &ok, &ok}), &out.ev}), op,
                      "too many indices");
  auto& fl = tf.make<float>({1});
  EXPECT_KERNEL_FAILS(call_kernel(op, {&a.ev, tl.list({&fl}), &out.ev}), op, "has dtype float32");
  auto& m = tf.make<bool>({2});
  EXPECT_KERNEL_FAILS(call_kernel(op, {&a.ev, tl.list({&m}), &out.ev}), op,
                      "mask 0 of shape [2] does not match self of shape [3, 4] at dim 0");
  auto& x = tf.make<int64_t>({2}, {0, 1});
  auto& y = tf.make<int64_t>({3}, {0, 1, 2});
  EXPECT_KERNEL_FAILS(call_kernel(op, {&a.ev, tl.list({&x, &y}), &out.ev}), op, "do not broadcast");
  EXPECT_KERNEL_FAILS(call_kernel(op, {&a.ev, tl.list({nullptr}), &out.ev}), op,
                      "at least one index tensor");
  // Static out whose shape the mask does not give.
  auto& m3 = tf.make<bool>({3}, {true, true, false});
  EXPECT_KERNEL_FAILS(call_kernel(op, {&a.ev, tl.list({&m3}), &out.ev}), op,
                      "out: has shape [1, 4] but the result has shape [2, 4]");
}

TEST(OpIndexPutTest, AssignAndAccumulate) {
  TensorFactory tf;
  TensorLists tl;
  auto& a = tf.make<float>({2, 3}, {0, 0, 0, 0, 0, 0});
  auto& idx = tf.make<int64_t>({3}, {2, 2, 0});
  auto& vals = tf.make<float>({3}, {1, 2, 3});
  auto& out = tf.make<float>({2, 3});
  ASSERT_TRUE(call_kernel("aten::index_put.out",
                          {&a.ev, tl.list({nullptr, &idx}), &vals.ev, tf.b(true), &out.ev}).ok());
  EXPECT_EQ(out.values<float>(), (std::vector<float>{3, 0, 3, 3, 0, 3}));
  auto& mask = tf.make<bool>({2}, {false, true});
  auto& v1 = tf.make<float>({}, {9});
  ASSERT_TRUE(call_kernel("aten::index_put.out",
                          {&a.ev, tl.list({&mask}), &v1.ev, tf.b(false), &out.ev}).ok());
  EXPECT_EQ(out.values<float>(), (std::vector<float>{0, 0, 0, 9, 9, 9}));
  const char* op = "aten::index_put.out";
  auto& badv = tf.make<float>({2});
  EXPECT_KERNEL_FAILS(call_kernel(op, {&a.ev, tl.list({nullptr, &idx}), &badv.ev, tf.b(false), &out.ev}),
                      op, "values: shape [2] does not broadcast to the indexed shape [2, 3]");
  auto& iv = tf.make<int32_t>({3});
  EXPECT_KERNEL_FAILS(call_kernel(op, {&a.ev, tl.list({nullptr, &idx}), &iv.ev, tf.b(false), &out.ev}),
                      op, "values: expected dtype float32");
  auto& oob = tf.make<int64_t>({1}, {5});
  EXPECT_KERNEL_FAILS(call_kernel(op, {&a.ev, tl.list({&oob}), &v1.ev, tf.b(false), &out.ev}), op,
                      "index 5 is out of bounds for dim 0 with size 2");
}

TEST(OpIndexSelectTest, SelectsSlices) {
  TensorFactory tf;
  auto& a = tf.make<int32_t>({3, 4}, iota12(), {1, 0});
  auto& idx = tf.make<int32_t>({3}, {3, 0, 3});
  auto& out = tf.make<int32_t>({3, 3});
  ASSERT_TRUE(call_kernel("aten::index_select.out", {&a.ev, tf.i(-1), &idx.ev, &out.ev}).ok());
  EXPECT_EQ(out.values<int32_t>(), (std::vector<int32_t>{3, 0, 3, 7, 4, 7, 11, 8, 11}));
  auto& s = tf.make<int64_t>({}, {1});
  auto& out0 = tf.make<int32_t>({1, 4});
  ASSERT_TRUE(call_kernel("aten::index_select.out", {&a.ev, tf.i(0), &s.ev, &out0.ev}).ok());
  EXPECT_EQ(out0.values<int32_t>(), (std::vector<int32_t>{4, 5, 6, 7}));
  const char* op = "aten::index_select.out";
  auto& bad = tf.make<int64_t>({1}, {3});
  EXPECT_KERNEL_FAILS(call_kernel(op, {&a.ev, tf.i(0), &bad.ev, &out0.ev}), op,
                      "index: index 3 is out of bounds for dim 0 with size 3");
  auto& two_d = tf.make<int64_t>({1, 1});
  EXPECT_KERNEL_FAILS(call_kernel(op, {&a.ev, tf.i(0), &two_d.ev, &out0.ev}), op, "0-D or 1-D");
}

TEST(OpEmbeddingTest, LooksUpRows) {
  TensorFactory tf;
  auto& w = tf.make_from_floats<BFloat16>({3, 2}, {0, 1, 2, 3, 4, 5});
  auto& idx = tf.make<int64_t>({2, 2}, {2, 0, 1, 2});
  auto& out = tf.make<BFloat16>({2, 2, 2});
  ASSERT_TRUE(call_kernel("aten::embedding.out",
                          {&w.ev, &idx.ev, tf.i(-1), tf.b(false), tf.b(false), &out.ev}).ok());
  EXPECT_EQ(out.as_doubles<BFloat16>(), (std::vector<double>{4, 5, 0, 1, 2, 3, 4, 5}));
  const char* op = "aten::embedding.out";
  auto& bad = tf.make<int64_t>({1}, {3});
  auto& out1 = tf.make<BFloat16>({1, 2});
  EXPECT_KERNEL_FAILS(call_kernel(op, {&w.ev, &bad.ev, tf.i(-1), tf.b(false), tf.b(false), &out1.ev}),
                      op, "indices: index 3 is out of bounds for dim 0 with size 3");
  auto& w1 = tf.make<float>({3});
  auto& fout = tf.make<float>({1, 2});
  EXPECT_KERNEL_FAILS(call_kernel(op, {&w1.ev, &bad.ev, tf.i(-1), tf.b(false), tf.b(false), &fout.ev}),
                      op, "weight: expected 2-D");
}

TEST(OpMaskedScatterTest, FillsInOrder) {
  TensorFactory tf;
  auto& a = tf.make<int16_t>({2, 2}, {1, 2, 3, 4});
  auto& mask = tf.make<bool>({2}, {true, false});
  auto& src = tf.make<int16_t>({3}, {7, 8, 9});
  auto& out = tf.make<int16_t>({2, 2});
  ASSERT_TRUE(call_kernel("aten::masked_scatter.out", {&a.ev, &mask.ev, &src.ev, &out.ev}).ok());
  EXPECT_EQ(out.values<int16_t>(), (std::vector<int16_t>{7, 2, 8, 4}));
  const char* op = "aten::masked_scatter.out";
  auto& small = tf.make<int16_t>({1}, {7});
  EXPECT_KERNEL_FAILS(call_kernel(op, {&a.ev, &mask.ev, &small.ev, &out.ev}), op,
                      "source: has 1 elements but mask selects 2");
  auto& imask = tf.make<uint8_t>({2});
  EXPECT_KERNEL_FAILS(call_kernel(op, {&a.ev, &imask.ev, &src.ev, &out.ev}), op,
                      "mask: expected dtype bool");
  auto& m3 = tf.make<bool>({3});
  EXPECT_KERNEL_FAILS(call_kernel(op, {&a.ev, &m3.ev, &src.ev, &out.ev}), op, "does not broadcast");
}

TEST(OpNonzeroTest, CoordinatesIntoBoundedOut) {
  TensorFactory tf;
  auto& a = tf.make<float>({2, 3}, {0, 1.5f, 0, -2, 0, NAN});
  auto& out = tf.zeros(ScalarType::Long, {6, 2}, {}, TensorShapeDynamism::DynamicBound);
  ASSERT_TRUE(call_kernel("aten::nonzero.out", {&a.ev, &out.ev}).ok());
  EXPECT_EQ(out.t.sizes[0], 3);
  EXPECT_EQ(out.values<int64_t>(), (std::vector<int64_t>{0, 1, 1, 0, 1, 2}));
  auto& z = tf.make<bool>({2}, {false, false});
  auto& zo = tf.zeros(ScalarType::Long, {2, 1}, {}, TensorShapeDynamism::DynamicBound);
  ASSERT_TRUE(call_kernel("aten::nonzero.out", {&z.ev, &zo.ev}).ok());
  EXPECT_EQ(zo.t.sizes[0], 0);
  const char* op = "aten::nonzero.out";
  auto& small = tf.zeros(ScalarType::Long, {2, 2}, {}, TensorShapeDynamism::DynamicBound);
  EXPECT_KERNEL_FAILS(call_kernel(op, {&a.ev, &small.ev}), op, "exceeds its planned capacity");
  auto& i32 = tf.make<int32_t>({3, 2});
  EXPECT_KERNEL_FAILS(call_kernel(op, {&a.ev, &i32.ev}), op, "expected dtype int64");
  auto& r1 = tf.make<int64_t>({3});
  EXPECT_KERNEL_FAILS(call_kernel(op, {&a.ev, &r1.ev}), op, "expected 2 dims");
}

}  // namespace
}  // namespace ember::testing
