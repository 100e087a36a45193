// mm, addmm and bmm share the blocked GEMM; their tests live together.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "kernels/test/tensor_factory.h"

namespace ember::testing {
namespace {

TEST(OpMmTest, Small) {
  TensorFactory tf;
  auto& a = tf.make<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  auto& b = tf.make<float>({3, 2}, {7, 8, 9, 10, 11, 12});
  auto& out = tf.make<float>({2, 2});
  ASSERT_TRUE(call_kernel("aten::mm.out", {&a.ev, &b.ev, &out.ev}).ok());
  EXPECT_EQ(out.values<float>(), (std::vector<float>{58, 64, 139, 154}));
}

TEST(OpMmTest, LargeAcrossBlockEdgesWithTransposedOperands) {
  // Sizes that cross every block and tile edge; mat2 stored transposed.
  const int m = 77, k = 150, n = 101;
  TensorFactory tf;
  auto av = random_floats(m * k, 1);
  auto bv = random_floats(k * n, 2);
  auto& a = tf.make<float>({m, k}, av);
  auto& b = tf.make<float>({k, n}, bv, {1, 0});
  auto& out = tf.make<float>({m, n});
  auto& out_t = tf.make<float>({m, n}, {}, {1, 0});
  ASSERT_TRUE(call_kernel("aten::mm.out", {&a.ev, &b.ev, &out.ev}).ok());
  ASSERT_TRUE(call_kernel("aten::mm.out", {&a.ev, &b.ev, &out_t.ev}).ok());
  auto got = out.values<float>();
  auto got_t = out_t.values<float>();
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      double want = 0;
      for (int p = 0; p < k; ++p) want += double(av[i * k + p]) * bv[p * n + j];
      ASSERT_NEAR(got[i * n + j], want, 1e-4) << i << "," << j;
      ASSERT_EQ(got[i * n + j], got_t[i * n + j]);
    }
  }
}

// Products with at most four rows or columns take the streaming GEMV path.
TEST(OpMmTest, GemvShapesInEveryLayout) {
  struct Shape {
    int m, k, n;
  };
  for (Shape sh : {Shape{1, 1024, 1000}, Shape{1, 8192, 10}, Shape{3, 70, 33}, Shape{4, 5, 1},
                   Shape{50, 37, 1}, Shape{61, 20, 3}, Shape{1, 1, 1}}) {
    const int m = sh.m, k = sh.k, n = sh.n;
    auto av = random_floats(size_t(m) * k, 11);
    auto bv = random_floats(size_t(k) * n, 12);
    for (int layout = 0; layout < 4; ++layout) {
      TensorFactory tf;
      const bool a_t = layout & 1, b_t = layout & 2;
      auto& a = tf.make<float>({m, k}, av, a_t ? std::vector<uint8_t>{1, 0} : std::vector<uint8_t>{});
      auto& b = tf.make<float>({k, n}, bv, b_t ? std::vector<uint8_t>{1, 0} : std::vector<uint8_t>{});
      auto& out = tf.make<float>({m, n});
      ASSERT_TRUE(call_kernel("aten::mm.out", {&a.ev, &b.ev, &out.ev}).ok());
      auto got = out.values<float>();
      for (int i = 0; i < m; ++i) {
        for (int j = 0; j < n; ++j) {
          double want = 0;
          for (int p = 0; p < k; ++p) want += double(av[i * k + p]) * bv[p * n + j];
          ASSERT_NEAR(got[i * n + j], want, 2e-6 * k) << m << "x" << k << "x" << n << " layout "
                                                      << layout << " at " << i << "," << j;
        }
      }
    }
  }
}

TEST(OpMmTest, IntHalfAndEmpty) {
  TensorFactory tf;
  auto& a = tf.make<int32_t>({1, 2}, {3, -4});
  auto& b = tf.make<int32_t>({2, 1}, {5, 6});
  auto& out = tf.make<int32_t>({1, 1});
  ASSERT_TRUE(call_kernel("aten::mm.out", {&a.ev, &b.ev, &out.ev}).ok());
  EXPECT_EQ(out.values<int32_t>()[0], -9);
  auto& h = tf.make_from_floats<Half>({1, 2}, {0.5f, 2.0f});
  auto& hb = tf.make_from_floats<Half>({2, 1}, {4.0f, 1.0f});
  auto& hout = tf.make<Half>({1, 1});
  ASSERT_TRUE(call_kernel("aten::mm.out", {&h.ev, &hb.ev, &hout.ev}).ok());
  EXPECT_EQ(hout.as_doubles<Half>()[0], 4.0);
  // k == 0 gives zeros.
  auto& e1 = tf.make<float>({2, 0});
  auto& e2 = tf.make<float>({0, 3});
  auto& eout = tf.make<float>({2, 3}, {1, 1, 1, 1, 1, 1});
  ASSERT_TRUE(call_kernel("aten::mm.out", {&e1.ev, &e2.ev, &eout.ev}).ok());
  EXPECT_EQ(eout.values<float>(), std::vector<float>(6, 0.0f));
}

TEST(OpMmTest, Errors) {
  TensorFactory tf;
  auto& a = tf.make<float>({2, 3});
  auto& b = tf.make<float>({2, 3});
  auto& out = tf.make<float>({2, 3});
  EXPECT_KERNEL_FAILS(call_kernel("aten::mm.out", {&a.ev, &b.ev, &out.ev}), "aten::mm.out",
                      "cannot be multiplied");
  auto& d = tf.make<double>({3, 3});
  EXPECT_KERNEL_FAILS(call_kernel("aten::mm.out", {&a.ev, &d.ev, &out.ev}), "aten::mm.out",
                      "float64");
  auto& c = tf.make<float>({3, 3});
  EXPECT_KERNEL_FAILS(call_kernel("aten::mm.out", {&a.ev, &c.ev, &c.ev}), "aten::mm.out", "[2, 3]");
  auto& v = tf.make<float>({3});
  EXPECT_KERNEL_FAILS(call_kernel("aten::mm.out", {&v.ev, &c.ev, &out.ev}), "aten::mm.out", "2-D");
  auto& bl = tf.make<bool>({2, 2});
  EXPECT_KERNEL_FAILS(call_kernel("aten::mm.out", {&bl.ev, &bl.ev, &bl.ev}), "aten::mm.out", "bool");
}

TEST(OpAddmmTest, BiasBroadcastBetaAlpha) {
  TensorFactory tf;
  auto& bias = tf.make<float>({2}, {1, 2});
  auto& a = tf.make<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  auto& b = tf.make<float>({3, 2}, {7, 8, 9, 10, 11, 12});
  auto& out = tf.make<float>({2, 2});
  auto r = call_kernel("aten::addmm.out", {&bias.ev, &a.ev, &b.ev, tf.d(2.0), tf.d(0.5), &out.ev});
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(out.values<float>(), (std::vector<float>{31, 36, 71.5, 81}));
}

TEST(OpAddmmTest, BetaZeroIgnoresNan) {
  TensorFactory tf;
  auto& bias = tf.make<double>({1, 1}, {NAN});
  auto& a = tf.make<double>({1, 1}, {2});
  auto& out = tf.make<double>({1, 1});
  ASSERT_TRUE(call_kernel("aten::addmm.out", {&bias.ev, &a.ev, &a.ev, tf.i(0), tf.i(1), &out.ev}).ok());
  EXPECT_EQ(out.values<double>()[0], 4);
}

TEST(OpAddmmTest, LinearHeadOneRow) {
  // nn.Linear on one sample: bias [n] + x [1, k] @ W^T, W^T both contiguous
  // and as a transposed view of W; beta and alpha not 1.
  const int k = 300, n = 10;
  auto xv = random_floats(k, 21);
  auto wv = random_floats(size_t(k) * n, 22);
  auto bv = random_floats(n, 23);
  for (bool transposed : {false, true}) {
    TensorFactory tf;
    auto& bias = tf.make<double>({n}, std::vector<double>(bv.begin(), bv.end()));
    auto& x = tf.make<double>({1, k}, std::vector<double>(xv.begin(), xv.end()));
    auto& w = tf.make<double>({k, n}, std::vector<double>(wv.begin(), wv.end()),
                              transposed ? std::vector<uint8_t>{1, 0} : std::vector<uint8_t>{});
    auto& out = tf.make<double>({1, n});
    auto r = call_kernel("aten::addmm.out", {&bias.ev, &x.ev, &w.ev, tf.d(0.5), tf.d(2.0), &out.ev});
    ASSERT_TRUE(r.ok()) << r.message;
    auto got = out.values<double>();
    for (int j = 0; j < n; ++j) {
      double want = 0;
      for (int p = 0; p < k; ++p) want += double(xv[p]) * wv[p * n + j];
      EXPECT_NEAR(got[j], 0.5 * bv[j] + 2.0 * want, 1e-12) << j;
    }
  }
}

TEST(OpAddmmTest, Errors) {
  TensorFactory tf;
  auto& bias = tf.make<float>({3});
  auto& a = tf.make<float>({2, 2});
  auto& out = tf.make<float>({2, 2});
  EXPECT_KERNEL_FAILS(call_kernel("aten::addmm.out", {&bias.ev, &a.ev, &a.ev, tf.i(1), tf.i(1), &out.ev}),
                      "aten::addmm.out", "broadcast");
}

TEST(OpBmmTest, BatchesAndErrors) {
  TensorFactory tf;
  auto& a = tf.make<float>({2, 1, 2}, {1, 2, 3, 4});
  auto& b = tf.make<float>({2, 2, 1}, {5, 6, 7, 8});
  auto& out = tf.make<float>({2, 1, 1});
  ASSERT_TRUE(call_kernel("aten::bmm.out", {&a.ev, &b.ev, &out.ev}).ok());
  EXPECT_EQ(out.values<float>(), (std::vector<float>{17, 53}));
  auto& bad = tf.make<float>({3, 2, 1});
  EXPECT_KERNEL_FAILS(call_kernel("aten::bmm.out", {&a.ev, &bad.ev, &out.ev}), "aten::bmm.out",
                      "[3, 2, 1]");
}

TEST(OpBmmTest, OneRowPerBatchAndBlockedBatches) {
  for (int m : {1, 9}) {
    const int batch = 3, k = 21, n = 19;
    auto av = random_floats(size_t(batch) * m * k, 31);
    auto bv = random_floats(size_t(batch) * k * n, 32);
    TensorFactory tf;
    auto& a = tf.make<float>({batch, m, k}, av);
    auto& b = tf.make<float>({batch, k, n}, bv, {0, 2, 1});
    auto& out = tf.make<float>({batch, m, n});
    ASSERT_TRUE(call_kernel("aten::bmm.out", {&a.ev, &b.ev, &out.ev}).ok());
    auto got = out.values<float>();
    for (int q = 0; q < batch; ++q)
      for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) {
          double want = 0;
          for (int p = 0; p < k; ++p)
            want += double(av[(q * m + i) * k + p]) * bv[(q * k + p) * n + j];
          ASSERT_NEAR(got[(q * m + i) * n + j], want, 1e-5) << q << "," << i << "," << j;
        }
  }
}

}  // namespace
}  // namespace ember::testing

namespace ember::testing {
namespace {

// Prepare packs a constant mat2 once; execute reads the packed panels, not
// mat2 (overwriting mat2 after prepare does not change the product), and
// several runs on one prepared state give the same bits. Packed panels are
// summed in deeper blocks (kKCPacked) than B packed per call, so they agree
// with the unprepared call to rounding.
TEST(OpMmTest, PreparedConstantMat2IsReadFromThePackedPanels) {
  const int32_t m = 40, k = 300, n = 120;
  std::mt19937 rng(3);
  std::normal_distribution<float> dist;
  std::vector<float> av(m * k), bv(k * n);
  for (float& v : av) v = dist(rng);
  for (float& v : bv) v = dist(rng);
  TensorFactory tf;
  auto& a = tf.make<float>({m, k}, av);
  auto& b = tf.make<float>({k, n}, bv);
  auto& want = tf.make<float>({m, n});
  ASSERT_TRUE(call_kernel("aten::mm.out", {&a.ev, &b.ev, &want.ev}).ok());

  const Kernel* kernel = find_kernel("aten::mm.out");
  ASSERT_NE(kernel, nullptr);
  ASSERT_NE(kernel->prepare, nullptr);
  auto& out = tf.make<float>({m, n});
  EValue* args[] = {&a.ev, &b.ev, &out.ev, &out.ev};
  const bool constant[4] = {false, true, false, false};
  std::vector<uint8_t> memory(4 << 20);
  MemoryAllocator allocator(memory.data(), memory.size());
  KernelPrepareContext pctx(kernel->name, &allocator, args, constant, 4, nullptr);
  ASSERT_EQ(kernel->prepare(pctx, args), Error::Ok) << last_error_message();
  ASSERT_NE(pctx.state(), nullptr);
  EXPECT_GE(pctx.prepared_bytes(), sizeof(float) * k * n);
  std::memset(b.t.data, 0, sizeof(float) * k * n);  // Execute must not read it.
  std::vector<float> first;
  for (int run = 0; run < 3; ++run) {
    KernelContext ctx(kernel->name);
    ctx.set_state(pctx.state());
    kernel->fn(ctx, args);
    ASSERT_EQ(ctx.failure(), Error::Ok) << last_error_message();
    const std::vector<float> got = out.values<float>(), ref = want.values<float>();
    float scale = 0;
    for (float v : ref) scale = std::max(scale, std::abs(v));
    ASSERT_GT(scale, 1.0f);
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_NEAR(got[i], ref[i], 1e-5f * scale) << "run " << run << " element " << i;
    }
    if (run == 0) first = got;
    EXPECT_EQ(got, first) << "run " << run;
  }
}


// A prompt's few-row successor (a decoding step: A shrinks to 1–4 rows after
// a prepare that saw 40) reads the same panels, never mat2, and each row has
// the bits of that row in the 40-row product; addmm's bias too.
TEST(OpMmTest, PreparedConstantMat2FewRowsReadThePanels) {
  const int32_t m = 40, k = 700, n = 150;
  std::mt19937 rng(4);
  std::normal_distribution<float> dist;
  std::vector<float> av(m * k), bv(k * n), biasv(n);
  for (float& v : av) v = dist(rng);
  for (float& v : bv) v = dist(rng);
  for (float& v : biasv) v = dist(rng);
  for (const char* op : {"aten::mm.out", "aten::addmm.out"}) {
    SCOPED_TRACE(op);
    const bool addmm = std::strcmp(op, "aten::addmm.out") == 0;
    TensorFactory tf;
    auto& a = tf.make<float>({m, k}, av);
    auto& b = tf.make<float>({k, n}, bv);
    auto& bias = tf.make<float>({n}, biasv);
    auto& full = tf.make<float>({m, n});
    const Kernel* kernel = find_kernel(op);
    ASSERT_NE(kernel, nullptr);
    auto args_for = [&](TestTensor& lhs, TestTensor& out) {
      return addmm ? std::vector<EValue*>{&bias.ev, &lhs.ev, &b.ev, tf.d(1.0), tf.d(1.0), &out.ev,
                                          &out.ev}
                   : std::vector<EValue*>{&lhs.ev, &b.ev, &out.ev, &out.ev};
    };
    std::vector<EValue*> args = args_for(a, full);
    bool constant[8] = {};
    constant[addmm ? 2 : 1] = true;  // mat2
    std::vector<uint8_t> memory(4 << 20);
    MemoryAllocator allocator(memory.data(), memory.size());
    KernelPrepareContext pctx(kernel->name, &allocator, args.data(), constant, args.size(),
                              nullptr);
    ASSERT_EQ(kernel->prepare(pctx, args.data()), Error::Ok) << last_error_message();
    ASSERT_NE(pctx.state(), nullptr);
    std::memset(b.t.data, 0, sizeof(float) * k * n);  // Execute must not read it.
    {
      KernelContext ctx(kernel->name);
      ctx.set_state(pctx.state());
      kernel->fn(ctx, args.data());
      ASSERT_EQ(ctx.failure(), Error::Ok) << last_error_message();
    }
    const std::vector<float> want = full.values<float>();
    for (int32_t rows = 1; rows <= 4; ++rows) {
      std::vector<float> head(av.begin(), av.begin() + size_t(rows) * k);
      auto& small = tf.make<float>({rows, k}, head);
      auto& out = tf.make<float>({rows, n});
      std::vector<EValue*> small_args = args_for(small, out);
      KernelContext ctx(kernel->name);
      ctx.set_state(pctx.state());
      kernel->fn(ctx, small_args.data());
      ASSERT_EQ(ctx.failure(), Error::Ok) << last_error_message();
      const std::vector<float> got = out.values<float>();
      for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_EQ(std::memcmp(&got[i], &want[i], sizeof(float)), 0)
            << rows << " rows, element " << i << ": " << got[i] << " against " << want[i];
      }
      // Not a collapsed output: the first row against float64.
      for (int32_t j = 0; j < n; ++j) {
        double ref = addmm ? biasv[j] : 0.0;
        for (int32_t q = 0; q < k; ++q) ref += double(av[q]) * bv[size_t(q) * n + j];
        ASSERT_NEAR(got[j], ref, 1e-5 * std::sqrt(double(k))) << "column " << j;
      }
    }
  }
}

}  // namespace
}  // namespace ember::testing
