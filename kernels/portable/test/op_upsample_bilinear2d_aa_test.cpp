// _upsample_bilinear2d_aa: normalised weights keep constants, same sizes copy.
#include "kernels/test/tensor_factory.h"

namespace ember::testing {
namespace {

TEST(OpUpsampleBilinear2dAaTest, ConstantsAndIdentity) {
  TensorFactory tf;
  auto& c = tf.make<float>({1, 1, 2, 4}, {3, 3, 3, 3, 3, 3, 3, 3});
  auto& y = tf.make<float>({1, 1, 1, 2});
  ASSERT_TRUE(call_kernel("aten::_upsample_bilinear2d_aa.out",
                          {&c.ev, tf.list({1, 2}), tf.b(false), tf.none(), tf.none(), &y.ev})
                  .ok());
  EXPECT_EQ(y.values<float>(), (std::vector<float>{3, 3}));
  auto& x = tf.make<float>({1, 1, 2, 2}, {1, 2, 3, 4});
  auto& same = tf.make<float>({1, 1, 2, 2});
  ASSERT_TRUE(call_kernel("aten::_upsample_bilinear2d_aa.out",
                          {&x.ev, tf.list({2, 2}), tf.b(false), tf.none(), tf.none(), &same.ev})
                  .ok());
  EXPECT_EQ(same.values<float>(), (std::vector<float>{1, 2, 3, 4}));
}

TEST(OpUpsampleBilinear2dAaTest, Errors) {
  TensorFactory tf;
  auto& x = tf.make<float>({1, 2, 2});
  auto& y = tf.make<float>({1, 1, 1, 1});
  EXPECT_KERNEL_FAILS(call_kernel("aten::_upsample_bilinear2d_aa.out",
                                  {&x.ev, tf.list({1, 1}), tf.b(false), tf.none(), tf.none(), &y.ev}),
                      "aten::_upsample_bilinear2d_aa.out", "self: expected [N, C, H, W]");
}

}  // namespace
}  // namespace ember::testing
