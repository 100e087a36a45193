// Bool tensors whose bytes are not 0/1 (issue 7): planned memory reused across
// dtypes, or a caller's buffer, can leave any byte in a bool tensor. Kernels
// read bool storage as bytes (BoolByte: non-zero is true) and write 0/1, so
// these inputs behave as true and, under UBSan (-fsanitize=bool, no recover),
// no kernel loads a C++ `bool` from them.
#include <cstring>

#include "kernels/portable/util/dtype.h"
#include "kernels/portable/test/return_list.h"
#include "kernels/test/tensor_factory.h"

namespace ember::testing {
namespace {

/// A bool tensor over the given raw bytes (row-major).
TestTensor& bool_bytes(TensorFactory& tf, std::vector<int32_t> sizes, std::vector<uint8_t> bytes,
                       std::vector<uint8_t> dim_order = {}) {
  TestTensor& t = tf.make<uint8_t>(std::move(sizes), std::move(bytes), std::move(dim_order));
  t.t.dtype = ScalarType::Bool;
  return t;
}

/// A bool out tensor pre-filled with 0xAA so a kernel that skips an element
/// (or writes something other than 0/1) shows up in raw().
TestTensor& bool_out(TensorFactory& tf, std::vector<int32_t> sizes) {
  TestTensor& t = tf.zeros(ScalarType::Bool, std::move(sizes));
  std::memset(t.bytes.data(), 0xAA, t.bytes.size());
  return t;
}

/// The raw bytes of a bool tensor in logical order.
std::vector<uint8_t> raw(const TestTensor& t) { return t.values<uint8_t>(); }

using Bytes = std::vector<uint8_t>;

TEST(BoolStorageTest, BoolByteReadsNonZeroAsTrueAndWritesZeroOne) {
  using kernels::portable::BoolByte;
  using kernels::portable::convert;
  using kernels::portable::load_as;
  using kernels::portable::store_as;
  const uint8_t bytes[4] = {0, 1, 2, 255};
  const auto* b = reinterpret_cast<const BoolByte*>(bytes);
  EXPECT_FALSE(convert<bool>(b[0]));
  EXPECT_TRUE(convert<bool>(b[2]));
  EXPECT_EQ(convert<float>(b[3]), 1.0f);
  EXPECT_EQ(convert<int64_t>(b[3]), 1);
  EXPECT_EQ(load_as<int32_t>(bytes, ScalarType::Bool, 3), 1);
  EXPECT_EQ(convert<BoolByte>(7).byte, 1);
  EXPECT_EQ(convert<BoolByte>(0.5f).byte, 1);
  uint8_t out[1] = {0xAA};
  store_as<int64_t>(out, ScalarType::Bool, 0, 42);
  EXPECT_EQ(out[0], 1);
}

TEST(BoolStorageTest, LogicalOps) {
  TensorFactory tf;
  auto& a = bool_bytes(tf, {4}, {0, 1, 2, 255});
  auto& b = bool_bytes(tf, {4}, {2, 255, 0, 7});
  auto& out = bool_out(tf, {4});
  ASSERT_TRUE(call_kernel("aten::logical_and.out", {&a.ev, &b.ev, &out.ev}).ok());
  EXPECT_EQ(raw(out), (Bytes{0, 1, 0, 1}));
  ASSERT_TRUE(call_kernel("aten::logical_or.out", {&a.ev, &b.ev, &out.ev}).ok());
  EXPECT_EQ(raw(out), (Bytes{1, 1, 1, 1}));
  ASSERT_TRUE(call_kernel("aten::logical_xor.out", {&a.ev, &b.ev, &out.ev}).ok());
  EXPECT_EQ(raw(out), (Bytes{1, 0, 1, 0}));
  ASSERT_TRUE(call_kernel("aten::logical_not.out", {&a.ev, &out.ev}).ok());
  EXPECT_EQ(raw(out), (Bytes{1, 0, 0, 0}));
  // Mixed dtypes take the per-element path.
  auto& f = tf.make<float>({4}, {1, 0, 1, 0});
  ASSERT_TRUE(call_kernel("aten::logical_and.out", {&a.ev, &f.ev, &out.ev}).ok());
  EXPECT_EQ(raw(out), (Bytes{0, 0, 1, 0}));
}

TEST(BoolStorageTest, BitwiseOps) {
  TensorFactory tf;
  auto& a = bool_bytes(tf, {4}, {0, 1, 2, 255});
  auto& b = bool_bytes(tf, {4}, {2, 2, 254, 0});
  auto& out = bool_out(tf, {4});
  // 2 & 1 is 0 as bytes but true & true as bools.
  ASSERT_TRUE(call_kernel("aten::bitwise_and.Tensor_out", {&a.ev, &b.ev, &out.ev}).ok());
  EXPECT_EQ(raw(out), (Bytes{0, 1, 1, 0}));
  ASSERT_TRUE(call_kernel("aten::bitwise_xor.Tensor_out", {&a.ev, &b.ev, &out.ev}).ok());
  EXPECT_EQ(raw(out), (Bytes{1, 0, 0, 1}));
  ASSERT_TRUE(call_kernel("aten::bitwise_or.Scalar_out", {&a.ev, tf.b(false), &out.ev}).ok());
  EXPECT_EQ(raw(out), (Bytes{0, 1, 1, 1}));
  ASSERT_TRUE(call_kernel("aten::bitwise_not.out", {&a.ev, &out.ev}).ok());
  EXPECT_EQ(raw(out), (Bytes{1, 0, 0, 0}));
}

TEST(BoolStorageTest, Comparisons) {
  TensorFactory tf;
  auto& a = bool_bytes(tf, {4}, {1, 2, 255, 0});
  auto& b = bool_bytes(tf, {4}, {255, 1, 2, 0});
  auto& out = bool_out(tf, {4});
  ASSERT_TRUE(call_kernel("aten::eq.Tensor_out", {&a.ev, &b.ev, &out.ev}).ok());
  EXPECT_EQ(raw(out), (Bytes{1, 1, 1, 1}));
  ASSERT_TRUE(call_kernel("aten::le.Tensor_out", {&a.ev, &b.ev, &out.ev}).ok());
  EXPECT_EQ(raw(out), (Bytes{1, 1, 1, 1}));
  ASSERT_TRUE(call_kernel("aten::ne.Scalar_out", {&a.ev, tf.b(true), &out.ev}).ok());
  EXPECT_EQ(raw(out), (Bytes{0, 0, 0, 1}));
  auto& i = tf.make<int32_t>({4}, {1, 1, 2, 0});
  ASSERT_TRUE(call_kernel("aten::eq.Tensor_out", {&a.ev, &i.ev, &out.ev}).ok());
  EXPECT_EQ(raw(out), (Bytes{1, 1, 0, 1}));  // true promotes to 1, not 255.
  ASSERT_TRUE(call_kernel("aten::maximum.out", {&a.ev, &b.ev, &out.ev}).ok());
  EXPECT_EQ(raw(out), (Bytes{1, 1, 1, 0}));
}

TEST(BoolStorageTest, WhereConditionAndArithmetic) {
  TensorFactory tf;
  auto& cond = bool_bytes(tf, {2, 2}, {2, 0, 255, 1}, Bytes{1, 0});
  auto& x = tf.make<float>({2, 2}, {1, 2, 3, 4});
  auto& y = tf.make<float>({2, 2}, {-1, -2, -3, -4});
  auto& out = tf.make<float>({2, 2});
  ASSERT_TRUE(call_kernel("aten::where.self_out", {&cond.ev, &x.ev, &y.ev, &out.ev}).ok());
  EXPECT_EQ(out.values<float>(), (std::vector<float>{1, -2, 3, 4}));

  auto& a = bool_bytes(tf, {3}, {2, 0, 255});
  auto& b = bool_bytes(tf, {3}, {254, 0, 0});
  auto& bout = bool_out(tf, {3});
  ASSERT_TRUE(call_kernel("aten::add.out", {&a.ev, &b.ev, tf.i(1), &bout.ev}).ok());
  EXPECT_EQ(raw(bout), (Bytes{1, 0, 1}));
  ASSERT_TRUE(call_kernel("aten::mul.out", {&a.ev, &b.ev, &bout.ev}).ok());
  EXPECT_EQ(raw(bout), (Bytes{1, 0, 0}));
  auto& f = tf.make<float>({3}, {0.5f, 0.5f, 0.5f});
  auto& fout = tf.make<float>({3});
  ASSERT_TRUE(call_kernel("aten::add.out", {&a.ev, &f.ev, tf.i(1), &fout.ev}).ok());
  EXPECT_EQ(fout.values<float>(), (std::vector<float>{1.5f, 0.5f, 1.5f}));
  auto& iout = tf.make<int64_t>({3});
  ASSERT_TRUE(call_kernel("aten::sign.out", {&a.ev, &bout.ev}).ok());
  EXPECT_EQ(raw(bout), (Bytes{1, 0, 1}));
  ASSERT_TRUE(call_kernel("aten::_to_copy.out", {&a.ev, tf.b(false), tf.none(), &iout.ev}).ok());
  EXPECT_EQ(iout.values<int64_t>(), (std::vector<int64_t>{1, 0, 1}));
  ASSERT_TRUE(call_kernel("aten::_to_copy.out", {&a.ev, tf.b(false), tf.none(), &fout.ev}).ok());
  EXPECT_EQ(fout.values<float>(), (std::vector<float>{1, 0, 1}));
}

TEST(BoolStorageTest, Reductions) {
  TensorFactory tf;
  auto& a = bool_bytes(tf, {2, 3}, {2, 0, 255, 0, 0, 3});
  auto& sum = tf.make<int64_t>({});
  ASSERT_TRUE(call_kernel("aten::sum.IntList_out",
                          {&a.ev, tf.none(), tf.b(false), tf.none(), &sum.ev}).ok());
  EXPECT_EQ(sum.values<int64_t>(), (std::vector<int64_t>{3}));
  auto& prod = tf.make<int64_t>({});
  ASSERT_TRUE(call_kernel("aten::prod.out", {&a.ev, tf.none(), &prod.ev}).ok());
  EXPECT_EQ(prod.values<int64_t>(), (std::vector<int64_t>{0}));
  auto& cum = tf.make<int64_t>({2, 3});
  ASSERT_TRUE(call_kernel("aten::cumsum.out", {&a.ev, tf.i(1), tf.none(), &cum.ev}).ok());
  EXPECT_EQ(cum.values<int64_t>(), (std::vector<int64_t>{1, 1, 2, 0, 0, 1}));
  auto& any = bool_out(tf, {2});
  ASSERT_TRUE(call_kernel("aten::any.out", {&a.ev, tf.i(1), tf.b(false), &any.ev}).ok());
  EXPECT_EQ(raw(any), (Bytes{1, 1}));
  auto& amax = bool_out(tf, {3});
  ASSERT_TRUE(call_kernel("aten::amax.out", {&a.ev, tf.list({0}), tf.b(false), &amax.ev}).ok());
  EXPECT_EQ(raw(amax), (Bytes{1, 0, 1}));
}

TEST(BoolStorageTest, SortNonzeroAndMasks) {
  TensorFactory tf;
  auto& a = bool_bytes(tf, {5}, {2, 0, 1, 255, 0});
  auto& v = bool_out(tf, {5});
  auto& i = tf.make<int64_t>({5});
  ReturnList ret({&v, &i});
  ASSERT_TRUE(call_kernel("aten::sort.values", {&a.ev, tf.i(0), tf.b(false), &v.ev, &i.ev, &ret.ev},
                          false).ok());
  EXPECT_EQ(raw(v), (Bytes{0, 0, 1, 1, 1}));  // 2 and 255 tie with 1.
  EXPECT_EQ(i.values<int64_t>(), (std::vector<int64_t>{1, 4, 0, 2, 3}));

  auto& nz = tf.zeros(ScalarType::Long, {5, 1}, {}, TensorShapeDynamism::DynamicBound);
  ASSERT_TRUE(call_kernel("aten::nonzero.out", {&a.ev, &nz.ev}).ok());
  EXPECT_EQ(nz.values<int64_t>(), (std::vector<int64_t>{0, 2, 3}));

  auto& self = tf.make<float>({5}, {0, 0, 0, 0, 0});
  auto& src = tf.make<float>({5}, {7, 8, 9, 10, 11});
  auto& out = tf.make<float>({5});
  ASSERT_TRUE(call_kernel("aten::masked_scatter.out", {&self.ev, &a.ev, &src.ev, &out.ev}).ok());
  EXPECT_EQ(out.values<float>(), (std::vector<float>{7, 0, 8, 9, 0}));

  std::vector<Tensor*> idx = {&a.t};
  EValue idx_ev;
  idx_ev.tag = Tag::OptionalTensorList;
  idx_ev.as_tensor_list = TensorListRef{idx.data(), idx.size()};
  auto& picked = tf.zeros(ScalarType::Float, {5}, {}, TensorShapeDynamism::DynamicBound);
  ASSERT_TRUE(call_kernel("aten::index.Tensor_out", {&src.ev, &idx_ev, &picked.ev}).ok());
  EXPECT_EQ(picked.values<float>(), (std::vector<float>{7, 9, 10}));
}

TEST(BoolStorageTest, LocalScalarDense) {
  TensorFactory tf;
  auto& a = bool_bytes(tf, {}, {2});
  EValue out;
  ASSERT_TRUE(call_kernel("aten::_local_scalar_dense", {&a.ev, &out}, false).ok());
  ASSERT_TRUE(out.is_bool());
  EXPECT_TRUE(out.as_bool);
}

}  // namespace
}  // namespace ember::testing
