#include <cmath>

#include "kernels/test/tensor_factory.h"

namespace ember::testing {
namespace {

constexpr const char* kOp = "aten::clamp.out";

TEST(OpClampTest, MinMaxOptionalAndNan) {
  TensorFactory tf;
  auto& a = tf.make<float>({5}, {-2, -0.5, 0.5, 2, NAN});
  auto& out = tf.make<float>({5});
  ASSERT_TRUE(call_kernel(kOp, {&a.ev, tf.d(-1), tf.d(1), &out.ev}).ok());
  auto v = out.values<float>();
  EXPECT_EQ(std::vector<float>(v.begin(), v.begin() + 4), (std::vector<float>{-1, -0.5, 0.5, 1}));
  EXPECT_TRUE(std::isnan(v[4]));
  ASSERT_TRUE(call_kernel(kOp, {&a.ev, tf.none(), tf.i(0), &out.ev}).ok());
  EXPECT_EQ(out.values<float>()[3], 0);
  EXPECT_EQ(out.values<float>()[0], -2);
  // min > max: everything becomes max.
  ASSERT_TRUE(call_kernel(kOp, {&a.ev, tf.i(3), tf.i(1), &out.ev}).ok());
  EXPECT_EQ(out.values<float>()[0], 1);
}

TEST(OpClampTest, IntTensorWithFloatBoundsGivesFloat) {
  TensorFactory tf;
  auto& a = tf.make<int32_t>({3}, {-5, 0, 5});
  auto& out = tf.make<float>({3});
  ASSERT_TRUE(call_kernel(kOp, {&a.ev, tf.d(-1.5), tf.none(), &out.ev}).ok());
  EXPECT_EQ(out.values<float>(), (std::vector<float>{-1.5, 0, 5}));
  auto& iout = tf.make<int32_t>({3});
  EXPECT_KERNEL_FAILS(call_kernel(kOp, {&a.ev, tf.d(-1.5), tf.none(), &iout.ev}), kOp, "float32");
  ASSERT_TRUE(call_kernel(kOp, {&a.ev, tf.i(-1), tf.i(1), &iout.ev}).ok());
  EXPECT_EQ(iout.values<int32_t>(), (std::vector<int32_t>{-1, 0, 1}));
}

TEST(OpClampTest, Errors) {
  TensorFactory tf;
  auto& a = tf.make<float>({3});
  EXPECT_KERNEL_FAILS(call_kernel(kOp, {&a.ev, tf.none(), tf.none(), &a.ev}), kOp, "at least one");
  auto& out = tf.make<float>({4});
  EXPECT_KERNEL_FAILS(call_kernel(kOp, {&a.ev, tf.i(0), tf.none(), &out.ev}), kOp, "[4]");
  auto& b = tf.make<bool>({3});
  EXPECT_KERNEL_FAILS(call_kernel(kOp, {&b.ev, tf.b(false), tf.none(), &b.ev}), kOp, "bool");
}

}  // namespace
}  // namespace ember::testing
