#include <cmath>

#include "kernels/test/tensor_factory.h"

namespace ember::testing {
namespace {

constexpr const char* kOp = "aten::div.out";

TEST(OpDivTest, FloatsAndDivisionByZero) {
  TensorFactory tf;
  auto& a = tf.make<float>({4}, {1, -1, 0, 6});
  auto& b = tf.make<float>({4}, {0, 0, 0, 4});
  auto& out = tf.make<float>({4});
  ASSERT_TRUE(call_kernel(kOp, {&a.ev, &b.ev, &out.ev}).ok());
  auto v = out.values<float>();
  EXPECT_TRUE(std::isinf(v[0]) && v[0] > 0);
  EXPECT_TRUE(std::isinf(v[1]) && v[1] < 0);
  EXPECT_TRUE(std::isnan(v[2]));
  EXPECT_EQ(v[3], 1.5f);
}

TEST(OpDivTest, IntegersDivideTrulyIntoFloat) {
  TensorFactory tf;
  auto& a = tf.make<int32_t>({2, 1}, {7, -7});
  auto& b = tf.make<int64_t>({2}, {2, 4});
  auto& out = tf.make<float>({2, 2});
  ASSERT_TRUE(call_kernel(kOp, {&a.ev, &b.ev, &out.ev}).ok());
  EXPECT_EQ(out.values<float>(), (std::vector<float>{3.5f, 1.75f, -3.5f, -1.75f}));
}

TEST(OpDivTest, Errors) {
  TensorFactory tf;
  auto& a = tf.make<int32_t>({2}, {1, 2});
  auto& iout = tf.make<int32_t>({2});
  EXPECT_KERNEL_FAILS(call_kernel(kOp, {&a.ev, &a.ev, &iout.ev}), kOp, "int32");
  auto& f = tf.make<float>({2});
  auto& wrong = tf.make<float>({1, 2, 1});
  EXPECT_KERNEL_FAILS(call_kernel(kOp, {&f.ev, &f.ev, &wrong.ev}), kOp, "rank");
}

}  // namespace
}  // namespace ember::testing
