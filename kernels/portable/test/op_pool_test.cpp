// avg/max/adaptive pooling and upsampling.
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "kernels/portable/test/return_list.h"
#include "kernels/test/tensor_factory.h"

namespace ember::testing {
namespace {

std::vector<float> iota_floats(int n) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = float(i);
  return v;
}

TEST(OpAvgPoolTest, PaddingDivisorsAndCeil) {
  TensorFactory tf;
  // 3x3 plane 0..8, kernel 2, stride 2, padding 1 → 2x2 output.
  auto& x = tf.make<float>({1, 1, 3, 3}, iota_floats(9));
  auto& o = tf.make<float>({1, 1, 2, 2});
  ASSERT_TRUE(call_kernel("aten::avg_pool2d.out", {&x.ev, tf.list({2}), tf.list({2}), tf.list({1}),
                                                   tf.b(false), tf.b(true), tf.none(), &o.ev}).ok());
  EXPECT_EQ(o.values<float>(), (std::vector<float>{0, 3.0f / 4, 9.0f / 4, 24.0f / 4}));
  ASSERT_TRUE(call_kernel("aten::avg_pool2d.out", {&x.ev, tf.list({2}), tf.list({2}), tf.list({1}),
                                                   tf.b(false), tf.b(false), tf.none(), &o.ev}).ok());
  EXPECT_EQ(o.values<float>(), (std::vector<float>{0, 1.5, 4.5, 6}));
  ASSERT_TRUE(call_kernel("aten::avg_pool2d.out", {&x.ev, tf.list({2}), tf.list({2}), tf.list({1}),
                                                   tf.b(false), tf.b(true), tf.i(1), &o.ev}).ok());
  EXPECT_EQ(o.values<float>(), (std::vector<float>{0, 3, 9, 24}));
  // ceil_mode: 3x3, kernel 2, stride 2, no padding → 2x2 with a partial window.
  ASSERT_TRUE(call_kernel("aten::avg_pool2d.out", {&x.ev, tf.list({2, 2}), tf.list({}), tf.list({0}),
                                                   tf.b(true), tf.b(true), tf.none(), &o.ev}).ok());
  EXPECT_EQ(o.values<float>(), (std::vector<float>{2, 3.5, 6.5, 8}));
}

TEST(OpAvgPoolTest, ThreeDAndErrors) {
  TensorFactory tf;
  auto& x = tf.make<double>({1, 2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  auto& o = tf.make<double>({1, 1, 1, 1});
  ASSERT_TRUE(call_kernel("aten::avg_pool3d.out", {&x.ev, tf.list({2}), tf.list({}), tf.list({0}),
                                                   tf.b(false), tf.b(true), tf.none(), &o.ev}).ok());
  EXPECT_EQ(o.values<double>()[0], 3.5);
  EXPECT_KERNEL_FAILS(call_kernel("aten::avg_pool3d.out", {&x.ev, tf.list({2}), tf.list({}), tf.list({2}),
                                                           tf.b(false), tf.b(true), tf.none(), &o.ev}),
                      "aten::avg_pool3d.out", "at most half");
  EXPECT_KERNEL_FAILS(call_kernel("aten::avg_pool3d.out", {&x.ev, tf.list({3}), tf.list({}), tf.list({0}),
                                                           tf.b(false), tf.b(true), tf.none(), &o.ev}),
                      "aten::avg_pool3d.out", "below 1");
  EXPECT_KERNEL_FAILS(call_kernel("aten::avg_pool3d.out", {&x.ev, tf.list({2, 2}), tf.list({}), tf.list({0}),
                                                           tf.b(false), tf.b(true), tf.none(), &o.ev}),
                      "aten::avg_pool3d.out", "1 or 3 values");
  EXPECT_KERNEL_FAILS(call_kernel("aten::avg_pool3d.out", {&x.ev, tf.list({2}), tf.list({}), tf.list({0}),
                                                           tf.b(false), tf.b(true), tf.i(0), &o.ev}),
                      "aten::avg_pool3d.out", "divisor_override");
  auto& x2 = tf.make<float>({2, 2});
  EXPECT_KERNEL_FAILS(call_kernel("aten::avg_pool2d.out", {&x2.ev, tf.list({1}), tf.list({}), tf.list({0}),
                                                           tf.b(false), tf.b(true), tf.none(), &x2.ev}),
                      "aten::avg_pool2d.out", "3D or 4D");
  auto& xb = tf.make<bool>({1, 2, 2});
  auto& ob = tf.make<bool>({1, 1, 1});
  EXPECT_KERNEL_FAILS(call_kernel("aten::avg_pool2d.out", {&xb.ev, tf.list({2}), tf.list({}), tf.list({0}),
                                                           tf.b(false), tf.b(true), tf.none(), &ob.ev}),
                      "aten::avg_pool2d.out", "bool");
}

TEST(OpMaxPoolTest, IndicesDilationChannelsLast) {
  TensorFactory tf;
  auto& x = tf.make<float>({1, 1, 3, 3}, {1, 9, 2, 3, 4, 5, 8, 6, 7}, kChannelsLast);
  auto& o = tf.make<float>({1, 1, 2, 2});
  auto& i = tf.make<int64_t>({1, 1, 2, 2});
  ReturnList ret({&o, &i});
  ASSERT_TRUE(call_kernel("aten::max_pool2d_with_indices.out",
                          {&x.ev, tf.list({2}), tf.list({1}), tf.list({0}), tf.list({1}), tf.b(false),
                           &o.ev, &i.ev, &ret.ev}, false).ok());
  EXPECT_EQ(o.values<float>(), (std::vector<float>{9, 9, 8, 7}));
  EXPECT_EQ(i.values<int64_t>(), (std::vector<int64_t>{1, 1, 6, 8}));
  auto& od = tf.make<float>({1, 1, 1, 1});
  auto& id = tf.make<int64_t>({1, 1, 1, 1});
  ReturnList ret2({&od, &id});
  ASSERT_TRUE(call_kernel("aten::max_pool2d_with_indices.out",
                          {&x.ev, tf.list({2}), tf.list({}), tf.list({0}), tf.list({2}), tf.b(false),
                           &od.ev, &id.ev, &ret2.ev}, false).ok());
  EXPECT_EQ(od.values<float>()[0], 8);
  EXPECT_EQ(id.values<int64_t>()[0], 6);
  auto& bad = tf.make<int32_t>({1, 1, 2, 2});
  EXPECT_KERNEL_FAILS(call_kernel("aten::max_pool2d_with_indices.out",
                                  {&x.ev, tf.list({2}), tf.list({1}), tf.list({0}), tf.list({1}), tf.b(false),
                                   &o.ev, &bad.ev, &ret.ev}, false),
                      "aten::max_pool2d_with_indices.out", "int64");
  EXPECT_KERNEL_FAILS(call_kernel("aten::max_pool2d_with_indices.out",
                                  {&x.ev, tf.list({2}), tf.list({0}), tf.list({0}), tf.list({1}), tf.b(false),
                                   &o.ev, &i.ev, &ret.ev}, false),
                      "aten::max_pool2d_with_indices.out", "stride");
}

TEST(OpMaxPoolTest, ThreeD) {
  TensorFactory tf;
  auto& x = tf.make<int32_t>({1, 2, 2, 2}, {0, 1, 2, 3, 9, 5, 6, 7});
  auto& o = tf.make<int32_t>({1, 1, 1, 1});
  auto& i = tf.make<int64_t>({1, 1, 1, 1});
  ReturnList ret({&o, &i});
  ASSERT_TRUE(call_kernel("aten::max_pool3d_with_indices.out",
                          {&x.ev, tf.list({2}), tf.list({}), tf.list({0}), tf.list({1}), tf.b(false),
                           &o.ev, &i.ev, &ret.ev}, false).ok());
  EXPECT_EQ(o.values<int32_t>()[0], 9);
  EXPECT_EQ(i.values<int64_t>()[0], 4);
}

TEST(OpAdaptiveAvgPoolTest, UnevenWindowsAndErrors) {
  TensorFactory tf;
  auto& x = tf.make<float>({1, 1, 5}, {1, 2, 3, 4, 5});
  auto& o = tf.make<float>({1, 1, 3});
  ASSERT_TRUE(call_kernel("aten::_adaptive_avg_pool2d.out", {&x.ev, tf.list({1, 3}), &o.ev}).ok());
  // Windows [0,2), [1,4), [3,5).
  EXPECT_EQ(o.values<float>(), (std::vector<float>{1.5, 3, 4.5}));
  auto& x3 = tf.make<float>({1, 2, 1, 2}, {1, 2, 3, 4});
  auto& o3 = tf.make<float>({1, 1, 1, 1});
  ASSERT_TRUE(call_kernel("aten::_adaptive_avg_pool3d.out", {&x3.ev, tf.list({1, 1, 1}), &o3.ev}).ok());
  EXPECT_EQ(o3.values<float>()[0], 2.5);
  EXPECT_KERNEL_FAILS(call_kernel("aten::_adaptive_avg_pool2d.out", {&x.ev, tf.list({3}), &o.ev}),
                      "aten::_adaptive_avg_pool2d.out", "2 values");
  auto& e = tf.make<float>({1, 0, 5});
  EXPECT_KERNEL_FAILS(call_kernel("aten::_adaptive_avg_pool2d.out", {&e.ev, tf.list({1, 3}), &o.ev}),
                      "aten::_adaptive_avg_pool2d.out", "non-empty");
}

TEST(OpUpsampleTest, NearestSizesAndScales) {
  TensorFactory tf;
  auto& x = tf.make<float>({1, 1, 2, 2}, {1, 2, 3, 4});
  auto& o = tf.make<float>({1, 1, 4, 3});
  ASSERT_TRUE(call_kernel("aten::upsample_nearest2d.vec_out", {&x.ev, tf.list({4, 3}), tf.none(), &o.ev}).ok());
  EXPECT_EQ(o.values<float>(), (std::vector<float>{1, 1, 2, 1, 1, 2, 3, 3, 4, 3, 3, 4}));
  EXPECT_KERNEL_FAILS(call_kernel("aten::upsample_nearest2d.vec_out", {&x.ev, tf.none(), tf.none(), &o.ev}),
                      "aten::upsample_nearest2d.vec_out", "exactly one");
  EXPECT_KERNEL_FAILS(call_kernel("aten::upsample_nearest2d.vec_out", {&x.ev, tf.list({4}), tf.none(), &o.ev}),
                      "aten::upsample_nearest2d.vec_out", "2 positive");
}

TEST(OpUpsampleTest, BilinearAlignCorners) {
  TensorFactory tf;
  auto& x = tf.make<float>({1, 1, 1, 2}, {0, 3});
  auto& o = tf.make<float>({1, 1, 1, 4});
  ASSERT_TRUE(call_kernel("aten::upsample_bilinear2d.vec_out", {&x.ev, tf.list({1, 4}), tf.b(true), tf.none(), &o.ev}).ok());
  for (int k = 0; k < 4; ++k) EXPECT_NEAR(o.values<float>()[k], k, 1e-6);
  ASSERT_TRUE(call_kernel("aten::upsample_bilinear2d.vec_out", {&x.ev, tf.list({1, 4}), tf.b(false), tf.none(), &o.ev}).ok());
  EXPECT_EQ(o.values<float>(), (std::vector<float>{0, 0.75, 2.25, 3}));
  auto& xi = tf.make<int32_t>({1, 1, 1, 2});
  auto& oi = tf.make<int32_t>({1, 1, 1, 4});
  EXPECT_KERNEL_FAILS(call_kernel("aten::upsample_bilinear2d.vec_out", {&xi.ev, tf.list({1, 4}), tf.b(true), tf.none(), &oi.ev}),
                      "aten::upsample_bilinear2d.vec_out", "int32");
  auto& x3 = tf.make<float>({1, 2, 2});
  EXPECT_KERNEL_FAILS(call_kernel("aten::upsample_bilinear2d.vec_out", {&x3.ev, tf.list({1, 4}), tf.b(true), tf.none(), &o.ev}),
                      "aten::upsample_bilinear2d.vec_out", "[N, C, H, W]");
}

// ember_fused::max_pool2d at stride 2 over NCHW rows: the vector rows
// (max_pool_row_s2.h, AVX-512 and AVX2; ctest runs this per EMBER_ISA level)
// against the window loop written out here, bit for bit, on widths that
// leave every count of outputs past the vector blocks. The input is its own
// allocation, so under ASan a read past the last row fails.
template <typename T>
void check_stride2_rows(int width, int kh, int kw, int ph, int pw) {
  TensorFactory tf;
  const int c = 2, h = 7;
  std::mt19937 gen(width * 31 + kh * 7 + kw);
  std::vector<T> xv(size_t(c) * h * width);
  for (auto& v : xv) {
    if constexpr (std::is_floating_point_v<T>) {
      const int r = int(gen() % 23);
      // Signed zeros (the first in window order decides the sign) and a NaN now and then.
      v = r == 0 ? std::numeric_limits<T>::quiet_NaN() : r < 8 ? (r % 2 ? T(-0.0) : T(0.0))
                                                        : T(int(gen() % 200) - 100) / T(8);
    } else {
      v = T(int(gen() % 256) - 128);
    }
  }
  const int oh = (h + 2 * ph - kh) / 2 + 1, ow = (width + 2 * pw - kw) / 2 + 1;
  auto& x = tf.make<T>({1, c, h, width}, xv);
  auto& o = tf.make<T>({1, c, oh, ow});
  ASSERT_TRUE(call_kernel("ember_fused::max_pool2d.out",
                          {&x.ev, tf.list({kh, kw}), tf.list({2, 2}), tf.list({ph, pw}),
                           tf.list({1, 1}), tf.b(false), &o.ev}).ok())
      << last_error_message();
  const std::vector<T> got = o.template values<T>();
  for (int ch = 0; ch < c; ++ch) {
    for (int y = 0; y < oh; ++y) {
      for (int xx = 0; xx < ow; ++xx) {
        T best = std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                      : std::numeric_limits<T>::lowest();
        for (int i = 0; i < kh; ++i) {
          for (int j = 0; j < kw; ++j) {
            const int iy = 2 * y - ph + i, ix = 2 * xx - pw + j;
            if (iy < 0 || iy >= h || ix < 0 || ix >= width) continue;
            const T v = xv[(size_t(ch) * h + iy) * width + ix];
            if (v > best || v != v) best = v;
          }
        }
        const T g = got[(size_t(ch) * oh + y) * ow + xx];
        ASSERT_EQ(std::memcmp(&g, &best, sizeof(T)), 0)
            << "width " << width << " kernel " << kh << "x" << kw << " at " << ch << "," << y
            << "," << xx << ": " << double(g) << " vs " << double(best);
      }
    }
  }
}

TEST(OpMaxPoolTest, Stride2RowsMatchTheWindowLoop) {
  for (int width : {3, 4, 5, 17, 18, 33, 34, 35, 36, 37, 38, 49, 64, 65, 66, 67, 68, 69, 70, 71,
                    112, 113}) {
    for (const auto& [kh, kw, ph, pw] : {std::array{3, 3, 1, 1}, std::array{3, 3, 0, 0},
                                         std::array{2, 3, 1, 1}, std::array{3, 2, 1, 0}}) {
      if (width + 2 * pw < kw) continue;
      check_stride2_rows<float>(width, kh, kw, ph, pw);
      check_stride2_rows<int8_t>(width, kh, kw, ph, pw);
    }
  }
}

}  // namespace
}  // namespace ember::testing
