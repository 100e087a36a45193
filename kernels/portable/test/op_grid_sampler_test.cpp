// grid_sampler_2d, grid_sampler_3d and col2im.
#include "kernels/test/tensor_factory.h"

namespace ember::testing {
namespace {

TEST(OpGridSamplerTest, BilinearNearestAndPadding) {
  TensorFactory tf;
  auto& x = tf.make<float>({1, 1, 2, 2}, {1, 2, 3, 4});
  auto& g = tf.make<float>({1, 1, 3, 2}, {-1, -1, 1, 1, 0, 0});
  auto& o = tf.make<float>({1, 1, 1, 3});
  ASSERT_TRUE(call_kernel("aten::grid_sampler_2d.out", {&x.ev, &g.ev, tf.i(0), tf.i(0), tf.b(true), &o.ev}).ok());
  EXPECT_EQ(o.values<float>(), (std::vector<float>{1, 4, 2.5}));
  ASSERT_TRUE(call_kernel("aten::grid_sampler_2d.out", {&x.ev, &g.ev, tf.i(1), tf.i(0), tf.b(true), &o.ev}).ok());
  EXPECT_EQ(o.values<float>(), (std::vector<float>{1, 4, 1}));  // 0.5 rounds to even.
  ASSERT_TRUE(call_kernel("aten::grid_sampler_2d.out", {&x.ev, &g.ev, tf.i(0), tf.i(0), tf.b(false), &o.ev}).ok());
  EXPECT_EQ(o.values<float>()[0], 0.25);  // Three of four taps fall in the zero padding.
  ASSERT_TRUE(call_kernel("aten::grid_sampler_2d.out", {&x.ev, &g.ev, tf.i(0), tf.i(1), tf.b(false), &o.ev}).ok());
  EXPECT_EQ(o.values<float>()[0], 1);
  ASSERT_TRUE(call_kernel("aten::grid_sampler_2d.out", {&x.ev, &g.ev, tf.i(0), tf.i(2), tf.b(false), &o.ev}).ok());
  EXPECT_EQ(o.values<float>()[0], 1);
}

TEST(OpGridSamplerTest, Errors) {
  TensorFactory tf;
  auto& x = tf.make<float>({1, 1, 2, 2});
  auto& g = tf.make<float>({1, 1, 3, 2});
  auto& o = tf.make<float>({1, 1, 1, 3});
  EXPECT_KERNEL_FAILS(call_kernel("aten::grid_sampler_2d.out", {&x.ev, &g.ev, tf.i(3), tf.i(0), tf.b(true), &o.ev}),
                      "aten::grid_sampler_2d.out", "interpolation_mode");
  EXPECT_KERNEL_FAILS(call_kernel("aten::grid_sampler_2d.out", {&x.ev, &g.ev, tf.i(0), tf.i(3), tf.b(true), &o.ev}),
                      "aten::grid_sampler_2d.out", "padding_mode");
  auto& g3 = tf.make<float>({1, 1, 3, 3});
  EXPECT_KERNEL_FAILS(call_kernel("aten::grid_sampler_2d.out", {&x.ev, &g3.ev, tf.i(0), tf.i(0), tf.b(true), &o.ev}),
                      "aten::grid_sampler_2d.out", "grid");
  auto& gd = tf.make<double>({1, 1, 3, 2});
  EXPECT_KERNEL_FAILS(call_kernel("aten::grid_sampler_2d.out", {&x.ev, &gd.ev, tf.i(0), tf.i(0), tf.b(true), &o.ev}),
                      "aten::grid_sampler_2d.out", "float64");
}

TEST(OpGridSampler3dTest, CornersCentreAndErrors) {
  TensorFactory tf;
  auto& x = tf.make<float>({1, 1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  auto& g = tf.make<float>({1, 1, 1, 3, 3}, {-1, -1, -1, 1, 1, 1, 0, 0, 0});
  auto& o = tf.make<float>({1, 1, 1, 1, 3});
  ASSERT_TRUE(call_kernel("aten::grid_sampler_3d.out", {&x.ev, &g.ev, tf.i(0), tf.i(0), tf.b(true), &o.ev}).ok());
  EXPECT_EQ(o.values<float>(), (std::vector<float>{1, 8, 4.5}));  // the centre: the mean of 8
  ASSERT_TRUE(call_kernel("aten::grid_sampler_3d.out", {&x.ev, &g.ev, tf.i(1), tf.i(0), tf.b(true), &o.ev}).ok());
  EXPECT_EQ(o.values<float>(), (std::vector<float>{1, 8, 1}));  // 0.5 rounds to even
  EXPECT_KERNEL_FAILS(call_kernel("aten::grid_sampler_3d.out", {&x.ev, &g.ev, tf.i(2), tf.i(0), tf.b(true), &o.ev}),
                      "aten::grid_sampler_3d.out", "interpolation_mode");
  auto& g2 = tf.make<float>({1, 1, 1, 3, 2});
  EXPECT_KERNEL_FAILS(call_kernel("aten::grid_sampler_3d.out", {&x.ev, &g2.ev, tf.i(0), tf.i(0), tf.b(true), &o.ev}),
                      "aten::grid_sampler_3d.out", "grid");
}

TEST(OpCol2imTest, OverlapsSumAndErrors) {
  TensorFactory tf;
  auto& cols = tf.make<float>({2, 2}, {1, 2, 10, 20});
  auto& o = tf.make<float>({1, 1, 3});
  ASSERT_TRUE(call_kernel("aten::col2im.out", {&cols.ev, tf.list({1, 3}), tf.list({1, 2}), tf.list({1, 1}),
                                              tf.list({0, 0}), tf.list({1, 1}), &o.ev}).ok());
  EXPECT_EQ(o.values<float>(), (std::vector<float>{1, 12, 20}));
  auto& ob = tf.make<float>({1, 1, 1, 3});
  auto& colsb = tf.make<float>({1, 2, 2}, {1, 2, 10, 20});
  ASSERT_TRUE(call_kernel("aten::col2im.out", {&colsb.ev, tf.list({1, 3}), tf.list({1, 2}), tf.list({1, 1}),
                                              tf.list({0, 0}), tf.list({1, 1}), &ob.ev}).ok());
  EXPECT_EQ(ob.values<float>(), (std::vector<float>{1, 12, 20}));
  EXPECT_KERNEL_FAILS(call_kernel("aten::col2im.out", {&cols.ev, tf.list({1, 4}), tf.list({1, 2}), tf.list({1, 1}),
                                                      tf.list({0, 0}), tf.list({1, 1}), &o.ev}),
                      "aten::col2im.out", "blocks");
  EXPECT_KERNEL_FAILS(call_kernel("aten::col2im.out", {&cols.ev, tf.list({1, 3}), tf.list({3, 1}), tf.list({1, 1}),
                                                      tf.list({0, 0}), tf.list({1, 1}), &o.ev}),
                      "aten::col2im.out", "divisible");
  EXPECT_KERNEL_FAILS(call_kernel("aten::col2im.out", {&cols.ev, tf.list({1, 3}), tf.list({1, 2}), tf.list({1, 1}),
                                                      tf.list({0, 0}), tf.list({0, 1}), &o.ev}),
                      "aten::col2im.out", "stride");
}

}  // namespace
}  // namespace ember::testing
