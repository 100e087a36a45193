#include "kernels/test/tensor_factory.h"

namespace ember::testing {
namespace {

constexpr const char* kOp = "aten::mul.out";

TEST(OpMulTest, BroadcastScalarTensor) {
  TensorFactory tf;
  auto& a = tf.make<float>({2, 2}, {1, 2, 3, 4});
  auto& s = tf.make<float>({}, {3});
  auto& out = tf.make<float>({2, 2});
  ASSERT_TRUE(call_kernel(kOp, {&a.ev, &s.ev, &out.ev}).ok());
  EXPECT_EQ(out.values<float>(), (std::vector<float>{3, 6, 9, 12}));
  ASSERT_TRUE(call_kernel(kOp, {&s.ev, &a.ev, &out.ev}).ok());
  EXPECT_EQ(out.values<float>(), (std::vector<float>{3, 6, 9, 12}));
}

TEST(OpMulTest, MixedDtypesAndBool) {
  TensorFactory tf;
  auto& a = tf.make<uint8_t>({3}, {1, 2, 200});
  auto& b = tf.make<int8_t>({3}, {-1, 3, 2});
  auto& out = tf.make<int16_t>({3});  // uint8 * int8 promotes to int16.
  ASSERT_TRUE(call_kernel(kOp, {&a.ev, &b.ev, &out.ev}).ok());
  EXPECT_EQ(out.values<int16_t>(), (std::vector<int16_t>{-1, 6, 400}));
  auto& p = tf.make<bool>({2}, {true, true});
  auto& q = tf.make<bool>({2}, {true, false});
  auto& bout = tf.make<bool>({2});
  ASSERT_TRUE(call_kernel(kOp, {&p.ev, &q.ev, &bout.ev}).ok());
  EXPECT_EQ(bout.values<bool>(), (std::vector<bool>{true, false}));
}

TEST(OpMulTest, DoubleAndEmpty) {
  TensorFactory tf;
  auto& a = tf.make<double>({2}, {1.5, -2});
  auto& out = tf.make<double>({2});
  ASSERT_TRUE(call_kernel(kOp, {&a.ev, &a.ev, &out.ev}).ok());
  EXPECT_EQ(out.values<double>(), (std::vector<double>{2.25, 4}));
  auto& e = tf.make<double>({0});
  EXPECT_TRUE(call_kernel(kOp, {&e.ev, &e.ev, &e.ev}).ok());
}

TEST(OpMulTest, Errors) {
  TensorFactory tf;
  auto& a = tf.make<float>({2, 3});
  auto& b = tf.make<float>({2});
  auto& out = tf.make<float>({2, 3});
  EXPECT_KERNEL_FAILS(call_kernel(kOp, {&a.ev, &b.ev, &out.ev}), kOp, "[2]");
  auto& bout = tf.make<bool>({2, 3});
  EXPECT_KERNEL_FAILS(call_kernel(kOp, {&a.ev, &a.ev, &bout.ev}), kOp, "bool");
  auto& u = tf.zeros(ScalarType::UInt16, {2, 3});
  EXPECT_KERNEL_FAILS(call_kernel(kOp, {&u.ev, &a.ev, &out.ev}), kOp, "uint16");
}

}  // namespace
}  // namespace ember::testing
