// ember_fused::fused_linear.out: input · mat2 + bias + residual, clamped, then
// GELU. Checked two ways on every shape: against the unfused kernels it
// replaces (addmm, add, clamp, gelu: the same bits, which is what makes the
// fusion pass exact), and against a float64 reference relative to the
// output's magnitude. Shapes cover the small-m path (decode), whole and
// partial GEMM tiles, k over two packed depth blocks, the weight packed at
// prepare or not, 1 and 2 threads. Then its refusals.
#include <algorithm>
#include <cmath>
#include <bit>
#include <cstring>
#include <deque>

#include "kernels/test/tensor_factory.h"
#include "runtime/kernel/thread_pool.h"

namespace ember::testing {
namespace {

constexpr const char* kOp = "ember_fused::fused_linear.out";

struct Case {
  int m, k, n;
  bool bias, residual;
  const char* act;  // "none", "gelu", "gelu_tanh"
  bool clamp;       // to [-0.5, 0.75]
};

EValue* str(std::deque<EValue>& keep, const char* s) {
  EValue& e = keep.emplace_back();
  e.tag = Tag::String;
  e.as_string = s;
  return &e;
}

double gelu_ref(double x, const char* act) {
  if (std::strcmp(act, "gelu") == 0) return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
  if (std::strcmp(act, "gelu_tanh") == 0) {
    const double z = std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x);
    return 0.5 * x * (1 + std::tanh(z));
  }
  return x;
}

void check(const Case& p, bool constant_weight, ThreadPool* pool) {
  TensorFactory tf;
  std::deque<EValue> strings;
  const auto xv = random_floats(size_t(p.m) * p.k, 1);
  const auto wv = random_floats(size_t(p.k) * p.n, 2);
  const auto bv = random_floats(p.n, 3);
  const auto rv = random_floats(size_t(p.m) * p.n, 4);
  auto& x = tf.make<float>({p.m, p.k}, xv);
  auto& w = tf.make<float>({p.k, p.n}, wv);
  auto& b = tf.make<float>({p.n}, bv);
  auto& r = tf.make<float>({p.m, p.n}, rv);
  auto& out = tf.make<float>({p.m, p.n});
  EValue* lo = p.clamp ? tf.d(-0.5) : tf.none();
  EValue* hi = p.clamp ? tf.d(0.75) : tf.none();
  KernelContext ctx(kOp);
  ctx.set_thread_pool(pool);
  const CallResult result = call_kernel(
      ctx, kOp,
      {&x.ev, &w.ev, p.bias ? &b.ev : tf.none(), p.residual ? &r.ev : tf.none(),
       str(strings, p.act), lo, hi, &out.ev},
      true, constant_weight ? std::vector<size_t>{1} : std::vector<size_t>{}, /*runs=*/2);
  ASSERT_TRUE(result.ok()) << result.message;
  const auto got = out.values<float>();

  // The unfused ops, each on its own kernel (a zero bias for addmm without one).
  auto& zero = tf.make<float>({p.n}, std::vector<float>(p.n, 0.0f));
  auto& u = tf.make<float>({p.m, p.n});
  KernelContext uctx("aten::addmm.out");
  uctx.set_thread_pool(pool);
  ASSERT_TRUE(call_kernel(uctx, "aten::addmm.out",
                          {p.bias ? &b.ev : &zero.ev, &x.ev, &w.ev, tf.i(1), tf.i(1), &u.ev},
                          true, constant_weight ? std::vector<size_t>{2} : std::vector<size_t>{})
                  .ok());
  if (p.residual) {
    auto& sum = tf.make<float>({p.m, p.n});
    ASSERT_TRUE(call_kernel("aten::add.out", {&u.ev, &r.ev, tf.i(1), &sum.ev}).ok());
    std::memcpy(u.t.data, sum.t.data, sum.bytes.size());
  }
  if (p.clamp) {
    auto& c = tf.make<float>({p.m, p.n});
    ASSERT_TRUE(call_kernel("aten::clamp.out", {&u.ev, tf.d(-0.5), tf.d(0.75), &c.ev}).ok());
    std::memcpy(u.t.data, c.t.data, c.bytes.size());
  }
  if (std::strcmp(p.act, "none") != 0) {
    auto& g = tf.make<float>({p.m, p.n});
    const char* mode = std::strcmp(p.act, "gelu") == 0 ? "none" : "tanh";
    ASSERT_TRUE(call_kernel("aten::gelu.out", {&u.ev, str(strings, mode), &g.ev}).ok());
    std::memcpy(u.t.data, g.t.data, g.bytes.size());
  }
  const auto unfused = u.values<float>();
  ASSERT_EQ(got.size(), unfused.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(unfused[i]))
        << "element " << i << ": fused " << got[i] << ", unfused " << unfused[i];
  }

  // float64, relative to the output's largest magnitude.
  std::vector<double> want(got.size());
  double scale = 0;
  for (int i = 0; i < p.m; ++i) {
    for (int j = 0; j < p.n; ++j) {
      double s = p.bias ? bv[j] : 0.0;
      for (int q = 0; q < p.k; ++q) s += double(xv[size_t(i) * p.k + q]) * wv[size_t(q) * p.n + j];
      if (p.residual) s += rv[size_t(i) * p.n + j];
      if (p.clamp) s = std::clamp(s, -0.5, 0.75);
      want[size_t(i) * p.n + j] = gelu_ref(s, p.act);
      scale = std::max(scale, std::fabs(want[size_t(i) * p.n + j]));
    }
  }
  ASSERT_GT(scale, 0.1) << "an output that collapsed checks nothing";
  for (size_t i = 0; i < got.size(); ++i) {
    // Sums of up to 600 products of magnitude ~1 (float32 GEMM), then GELU's
    // few ulp: 2e-6 of the output's range.
    ASSERT_NEAR(got[i], want[i], 2e-6 * std::max(1.0, scale) * std::sqrt(double(p.k)))
        << "element " << i;
  }
}

TEST(OpFusedLinearTest, MatchesTheUnfusedOpsAndFloat64) {
  const Case cases[] = {
      {1, 64, 40, true, false, "gelu", false},        // a decoding step (small-m path)
      {4, 33, 70, true, true, "gelu_tanh", false},    // small m, odd k
      {37, 48, 64, true, false, "gelu", false},       // whole 32-wide tiles, partial rows
      {40, 96, 50, true, true, "none", false},        // residual alone, partial columns
      {130, 300, 97, true, true, "gelu", false},      // k over two packed depth blocks
      {130, 300, 97, false, false, "gelu_tanh", true},  // mm + clamp + GELU
      {29, 20, 200, false, true, "none", true},       // mm + residual + relu6-style clamp
      {150, 64, 192, true, false, "gelu", false},     // several kMC/kNC blocks
  };
  ThreadPool* pool = thread_pool_create(2);
  ASSERT_NE(pool, nullptr);
  for (const Case& p : cases) {
    SCOPED_TRACE(::testing::Message() << "m=" << p.m << " k=" << p.k << " n=" << p.n
                                      << " act=" << p.act << " residual=" << p.residual
                                      << " clamp=" << p.clamp);
    for (ThreadPool* threads : {static_cast<ThreadPool*>(nullptr), pool}) {
      check(p, /*constant_weight=*/true, threads);
      check(p, /*constant_weight=*/false, threads);
    }
  }
  thread_pool_destroy(pool);
}

TEST(OpFusedLinearTest, Refusals) {
  TensorFactory tf;
  std::deque<EValue> strings;
  auto& x = tf.make<float>({6, 4});
  auto& w = tf.make<float>({4, 3});
  auto& out = tf.make<float>({6, 3});
  auto& bias = tf.make<float>({3});
  auto call = [&](TestTensor& in, TestTensor* b, TestTensor* res, const char* act, EValue* lo,
                  EValue* hi, TestTensor& o) {
    return call_kernel(kOp, {&in.ev, &w.ev, b != nullptr ? &b->ev : tf.none(),
                             res != nullptr ? &res->ev : tf.none(), str(strings, act), lo, hi,
                             &o.ev});
  };
  EXPECT_KERNEL_FAILS(call(x, &bias, nullptr, "relu", tf.none(), tf.none(), out), kOp,
                      "activation: must be 'none', 'gelu' or 'gelu_tanh', got 'relu'");
  auto& xi = tf.make<int32_t>({6, 4});
  EXPECT_KERNEL_FAILS(call(xi, &bias, nullptr, "none", tf.none(), tf.none(), out), kOp,
                      "input: dtype int32 is not supported (float32 only)");
  auto& x3 = tf.make<float>({1, 6, 4});
  EXPECT_KERNEL_FAILS(call(x3, &bias, nullptr, "none", tf.none(), tf.none(), out), kOp,
                      "input: expected a 2-D tensor, got 3 dimensions");
  EXPECT_KERNEL_FAILS(call(x, &bias, nullptr, "none", tf.d(1.0), tf.d(0.0), out), kOp,
                      "min: 1 is greater than max 0");
  auto& bias4 = tf.make<float>({4});
  EXPECT_KERNEL_FAILS(call(x, &bias4, nullptr, "none", tf.none(), tf.none(), out), kOp,
                      "bias: 4 values for 3 output features");
  auto& small = tf.make<float>({2, 3});
  EXPECT_KERNEL_FAILS(call(x, &bias, &small, "none", tf.none(), tf.none(), out), kOp,
                      "residual: shape [2, 3] is not the output's [6, 3]");
  EXPECT_KERNEL_FAILS(call(x, &bias, &out, "none", tf.none(), tf.none(), out), kOp,
                      "residual: its memory overlaps the output's");
  auto& x5 = tf.make<float>({6, 5});
  EXPECT_KERNEL_FAILS(call(x5, &bias, nullptr, "none", tf.none(), tf.none(), out), kOp,
                      "input of shape [6, 5] and mat2 of shape [4, 3] cannot be multiplied");
  // Within its bounds it runs.
  auto& res = tf.make<float>({6, 3});
  EXPECT_TRUE(call(x, &bias, &res, "gelu", tf.d(0.0), tf.none(), out).ok());
}

}  // namespace
}  // namespace ember::testing
