// ember_fused::rope (op_rope.cpp, util/rope_f32.h): every ISA build the host
// has and the strided loop give the bits of the op-by-op formula (each
// product and the sum rounded once); the op with cos/sin broadcast over
// heads ([B, 1, T, D]) and as [T, D], a transposed x, rows split over
// threads; and its errors (an odd last dim, tables that do not broadcast).
// python/tests/test_fuse_rope.py compares whole programs with eager.
#include <cstring>
#include <random>
#include <vector>

#include "kernels/portable/util/rope_f32.h"
#include "kernels/test/isa_levels.h"
#include "kernels/test/tensor_factory.h"
#include "runtime/kernel/thread_pool.h"

namespace ember::kernels::portable {
namespace {

// The op-by-op formula; volatile keeps each product and sum its own rounding.
float reference(const float* x, const float* c, const float* s, int64_t n, int64_t i) {
  const int64_t h = n / 2;
  volatile float a = x[i] * c[i];
  volatile float b = (i < h ? -x[i + h] : x[i - h]) * s[i];
  return a + b;
}

TEST(RopeRowF32, BuildsAndStridesGiveTheFormulasBits) {
  std::mt19937 gen(9);
  std::normal_distribution<float> normal;
  for (int64_t n : {2, 8, 30, 32, 34, 64, 128, 200}) {
    std::vector<float> x(static_cast<size_t>(n)), c(x.size()), s(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      x[i] = normal(gen);
      c[i] = normal(gen);
      s[i] = normal(gen);
    }
    std::vector<float> want(x.size());
    for (int64_t i = 0; i < n; ++i) want[i] = reference(x.data(), c.data(), s.data(), n, i);
    for (Isa isa : testing::host_isa_levels()) {
      std::vector<float> y(x.size(), -1.0f);
      rope_row_f32(x.data(), 1, c.data(), s.data(), 1, n, y.data(), 1, isa);
      EXPECT_EQ(std::memcmp(y.data(), want.data(), y.size() * sizeof(float)), 0)
          << isa_name(isa) << " n " << n;
    }
    // x at stride 2, the tables at stride 3, y at stride 4.
    std::vector<float> xs(x.size() * 2), cs(x.size() * 3), ss(x.size() * 3), ys(x.size() * 4);
    for (size_t i = 0; i < x.size(); ++i) {
      xs[2 * i] = x[i];
      cs[3 * i] = c[i];
      ss[3 * i] = s[i];
    }
    rope_row_f32(xs.data(), 2, cs.data(), ss.data(), 3, n, ys.data(), 4);
    for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(ys[4 * i], want[i]) << n << " " << i;
  }
}

TEST(OpRopeTest, BroadcastTablesTransposedXAndThreads) {
  testing::TensorFactory tf;
  std::mt19937 gen(4);
  std::normal_distribution<float> normal;
  auto randn = [&](size_t count) {
    std::vector<float> v(count);
    for (auto& e : v) e = normal(gen);
    return v;
  };
  // x [1, 3, 4, 6] (heads 3, tokens 4, dim 6); tables [1, 1, 4, 6] and [4, 6].
  const std::vector<float> xv = randn(72), cv = randn(24), sv = randn(24);
  auto& x = tf.make<float>({1, 3, 4, 6}, xv);
  auto check = [&](const std::vector<float>& got) {
    for (int hd = 0; hd < 3; ++hd) {
      for (int t = 0; t < 4; ++t) {
        for (int i = 0; i < 6; ++i) {
          const float want = reference(xv.data() + (hd * 4 + t) * 6, cv.data() + t * 6,
                                       sv.data() + t * 6, 6, i);
          ASSERT_EQ(got[(hd * 4 + t) * 6 + i], want) << hd << " " << t << " " << i;
        }
      }
    }
  };
  for (std::vector<int32_t> table_shape : {std::vector<int32_t>{1, 1, 4, 6},
                                           std::vector<int32_t>{4, 6}}) {
    auto& c = tf.make<float>(table_shape, cv);
    auto& s = tf.make<float>(table_shape, sv);
    auto& y = tf.make<float>({1, 3, 4, 6});
    ASSERT_TRUE(testing::call_kernel("ember_fused::rope.out", {&x.ev, &c.ev, &s.ev, &y.ev}).ok());
    check(y.values<float>());
  }
  // x stored with its last two dims swapped (dim order {0, 1, 3, 2}): stride 4 along D.
  auto& xt = tf.make<float>({1, 3, 4, 6}, xv, {0, 1, 3, 2});
  auto& c = tf.make<float>({4, 6}, cv);
  auto& s = tf.make<float>({4, 6}, sv);
  auto& yt = tf.make<float>({1, 3, 4, 6});
  ASSERT_TRUE(testing::call_kernel("ember_fused::rope.out", {&xt.ev, &c.ev, &s.ev, &yt.ev}).ok());
  check(yt.values<float>());

  // 1024 rows of 128 split over two threads: each row as the row function gives it.
  const std::vector<float> big = randn(8 * 128 * 128), bc = randn(128 * 128),
                           bs = randn(128 * 128);
  auto& xb = tf.make<float>({8, 128, 128}, big);
  auto& cb = tf.make<float>({128, 128}, bc);
  auto& sb = tf.make<float>({128, 128}, bs);
  auto& yb = tf.make<float>({8, 128, 128});
  ThreadPool* pool = thread_pool_create(2);
  ASSERT_NE(pool, nullptr);
  KernelContext ctx("ember_fused::rope.out");
  ctx.set_thread_pool(pool);
  const bool ran =
      testing::call_kernel(ctx, "ember_fused::rope.out", {&xb.ev, &cb.ev, &sb.ev, &yb.ev}).ok();
  thread_pool_destroy(pool);
  ASSERT_TRUE(ran);
  const std::vector<float> gb = yb.values<float>();
  for (int r = 0; r < 1024; r += 41) {
    for (int i = 0; i < 128; ++i) {
      ASSERT_EQ(gb[r * 128 + i], reference(big.data() + r * 128, bc.data() + (r % 128) * 128,
                                           bs.data() + (r % 128) * 128, 128, i))
          << r << " " << i;
    }
  }
}

TEST(OpRopeTest, Errors) {
  testing::TensorFactory tf;
  auto& x5 = tf.make<float>({2, 5});
  auto& t5 = tf.make<float>({2, 5});
  auto& y5 = tf.make<float>({2, 5});
  auto r = testing::call_kernel("ember_fused::rope.out", {&x5.ev, &t5.ev, &t5.ev, &y5.ev});
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.message.find("even"), std::string::npos) << r.message;
  auto& x = tf.make<float>({2, 4});
  auto& t3 = tf.make<float>({3, 4});
  auto& y = tf.make<float>({2, 4});
  r = testing::call_kernel("ember_fused::rope.out", {&x.ev, &t3.ev, &t3.ev, &y.ev});
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.message.find("broadcast"), std::string::npos) << r.message;
  auto& t4 = tf.make<float>({2, 4});
  auto& t1 = tf.make<float>({1, 4});
  r = testing::call_kernel("ember_fused::rope.out", {&x.ev, &t4.ev, &t1.ev, &y.ev});
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.message.find("same shape"), std::string::npos) << r.message;
}

}  // namespace
}  // namespace ember::kernels::portable
