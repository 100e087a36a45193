// max_pool2d_with_indices_backward: gradients routed to the indices, overlaps add.
#include "kernels/test/tensor_factory.h"

namespace ember::testing {
namespace {

TEST(OpMaxPool2dBackwardTest, RoutesAndAccumulates) {
  TensorFactory tf;
  auto& self = tf.make<float>({1, 1, 2, 2});
  auto& grad = tf.make<float>({1, 1, 1, 2}, {1, 2});
  auto& idx = tf.make<int64_t>({1, 1, 1, 2}, {3, 3});
  auto& out = tf.make<float>({1, 1, 2, 2});
  ASSERT_TRUE(call_kernel("aten::max_pool2d_with_indices_backward.grad_input",
                          {&grad.ev, &self.ev, tf.list({2, 2}), tf.list({1, 1}), tf.list({0, 0}),
                           tf.list({1, 1}), tf.b(false), &idx.ev, &out.ev})
                  .ok());
  EXPECT_EQ(out.values<float>(), (std::vector<float>{0, 0, 0, 3}));
}

TEST(OpMaxPool2dBackwardTest, Errors) {
  TensorFactory tf;
  auto& self = tf.make<float>({1, 1, 2, 2});
  auto& grad = tf.make<float>({1, 1, 1, 2}, {1, 2});
  auto& bad = tf.make<int64_t>({1, 1, 1, 2}, {4, 0});
  auto& out = tf.make<float>({1, 1, 2, 2});
  EXPECT_KERNEL_FAILS(call_kernel("aten::max_pool2d_with_indices_backward.grad_input",
                                  {&grad.ev, &self.ev, tf.list({2, 2}), tf.list({1, 1}),
                                   tf.list({0, 0}), tf.list({1, 1}), tf.b(false), &bad.ev, &out.ev}),
                      "aten::max_pool2d_with_indices_backward.grad_input",
                      "indices: 4 is outside the input plane of 2 x 2");
  auto& idx32 = tf.make<int32_t>({1, 1, 1, 2}, {0, 0});
  EXPECT_KERNEL_FAILS(call_kernel("aten::max_pool2d_with_indices_backward.grad_input",
                                  {&grad.ev, &self.ev, tf.list({2, 2}), tf.list({1, 1}),
                                   tf.list({0, 0}), tf.list({1, 1}), tf.b(false), &idx32.ev,
                                   &out.ev}),
                      "aten::max_pool2d_with_indices_backward.grad_input", "indices");
}

}  // namespace
}  // namespace ember::testing
