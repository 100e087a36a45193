// fractional_max_pool2d/3d: windows from the samples, as eager's generate_intervals.
#include "kernels/portable/test/return_list.h"
#include "kernels/test/tensor_factory.h"

namespace ember::testing {
namespace {

TEST(OpFractionalMaxPoolTest, WindowsFromTheSamples) {
  TensorFactory tf;
  std::vector<float> v(16);
  for (int i = 0; i < 16; ++i) v[i] = static_cast<float>(i);
  auto& x = tf.make<float>({1, 1, 4, 4}, v);
  // alpha = (4 - 2) / (2 - 1) = 2: starts trunc((0 + 0.5)·2) - trunc(0.5·2) = 0, then 4 - 2.
  auto& u = tf.make<float>({1, 1, 2}, {0.5, 0.5});
  auto& y = tf.make<float>({1, 1, 2, 2});
  auto& i = tf.make<int64_t>({1, 1, 2, 2});
  ReturnList ret({&y, &i});
  ASSERT_TRUE(call_kernel("aten::fractional_max_pool2d.output",
                          {&x.ev, tf.list({2, 2}), tf.list({2, 2}), &u.ev, &y.ev, &i.ev, &ret.ev},
                          false)
                  .ok());
  EXPECT_EQ(y.values<float>(), (std::vector<float>{5, 7, 13, 15}));
  EXPECT_EQ(i.values<int64_t>(), (std::vector<int64_t>{5, 7, 13, 15}));
}

TEST(OpFractionalMaxPoolTest, Errors) {
  TensorFactory tf;
  auto& x = tf.make<float>({1, 1, 4, 4});
  auto& u = tf.make<float>({1, 1, 3});
  auto& y = tf.make<float>({1, 1, 2, 2});
  auto& i = tf.make<int64_t>({1, 1, 2, 2});
  ReturnList ret({&y, &i});
  EXPECT_KERNEL_FAILS(call_kernel("aten::fractional_max_pool2d.output",
                                  {&x.ev, tf.list({2, 2}), tf.list({2, 2}), &u.ev, &y.ev, &i.ev, &ret.ev}, false),
                      "aten::fractional_max_pool2d.output", "random_samples: expected [1, 1, 2]");
  auto& u2 = tf.make<float>({1, 1, 2});
  EXPECT_KERNEL_FAILS(call_kernel("aten::fractional_max_pool2d.output",
                                  {&x.ev, tf.list({4, 2}), tf.list({2, 2}), &u2.ev, &y.ev, &i.ev, &ret.ev}, false),
                      "aten::fractional_max_pool2d.output", "does not fit in input size 4");
}

}  // namespace
}  // namespace ember::testing
