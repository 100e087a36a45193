// aten::convolution.out with transposed = true (util/conv_transposed.h)
// against a scatter-form reference in double, and its configuration checks
// at execute and at load (the prepare step, conv_load_check).

#include <cmath>
#include <cstring>
#include <string>

#include "kernels/portable/util/half.h"
#include "kernels/test/tensor_factory.h"
#include "runtime/kernel/thread_pool.h"

namespace ember::testing {
namespace {

constexpr const char* kOp = "aten::convolution.out";

// Spatial dims right-aligned in 3 slots, as the kernel's geometry.
struct TCase {
  int n, c_in, oc;          // oc: output channels in total
  std::vector<int> in, k;   // One entry per spatial dim.
  std::vector<int> stride, pad, dil, out_pad;
  int groups;
  bool bias;
};

void PrintTo(const TCase& p, std::ostream* os) {
  auto list = [os](const char* name, const std::vector<int>& v) {
    *os << " " << name << "=[";
    for (size_t i = 0; i < v.size(); ++i) *os << (i ? "," : "") << v[i];
    *os << "]";
  };
  *os << "n=" << p.n << " c_in=" << p.c_in << " oc=" << p.oc;
  list("in", p.in);
  list("k", p.k);
  list("stride", p.stride);
  list("pad", p.pad);
  list("dil", p.dil);
  list("out_pad", p.out_pad);
  *os << " groups=" << p.groups << " bias=" << p.bias;
}

std::vector<int> out_sizes(const TCase& p) {
  std::vector<int> o;
  for (size_t d = 0; d < p.in.size(); ++d) {
    o.push_back((p.in[d] - 1) * p.stride[d] - 2 * p.pad[d] + p.dil[d] * (p.k[d] - 1) +
                p.out_pad[d] + 1);
  }
  return o;
}

// out[b, g·OCg + oc, i·s − p + k·d] += x[b, g·Cg + c, i] · w[g·Cg + c, oc, k], logical order.
std::vector<double> transposed_ref(const TCase& p, const std::vector<double>& x,
                                   const std::vector<double>& w, const std::vector<double>& bias) {
  const int nd = static_cast<int>(p.in.size());
  int in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, pd[3] = {0, 0, 0},
      dl[3] = {1, 1, 1}, o[3] = {1, 1, 1};
  const std::vector<int> os = out_sizes(p);
  for (int d = 0; d < nd; ++d) {
    const int t = 3 - nd + d;
    in[t] = p.in[d], k[t] = p.k[d], s[t] = p.stride[d], pd[t] = p.pad[d], dl[t] = p.dil[d];
    o[t] = os[d];
  }
  const int cg = p.c_in / p.groups, ocg = p.oc / p.groups;
  const int in_sp = in[0] * in[1] * in[2], out_sp = o[0] * o[1] * o[2], kk = k[0] * k[1] * k[2];
  std::vector<double> out(size_t(p.n) * p.oc * out_sp, 0.0);
  for (int b = 0; b < p.n; ++b)
    for (int oc = 0; oc < p.oc; ++oc)
      for (int q = 0; q < out_sp; ++q)
        out[(size_t(b) * p.oc + oc) * out_sp + q] = bias.empty() ? 0.0 : bias[oc];
  for (int b = 0; b < p.n; ++b)
    for (int ci = 0; ci < p.c_in; ++ci) {
      const int g = ci / cg;
      for (int ocl = 0; ocl < ocg; ++ocl)
        for (int i0 = 0; i0 < in[0]; ++i0)
          for (int i1 = 0; i1 < in[1]; ++i1)
            for (int i2 = 0; i2 < in[2]; ++i2)
              for (int k0 = 0; k0 < k[0]; ++k0)
                for (int k1 = 0; k1 < k[1]; ++k1)
                  for (int k2 = 0; k2 < k[2]; ++k2) {
                    const int y0 = i0 * s[0] - pd[0] + k0 * dl[0];
                    const int y1 = i1 * s[1] - pd[1] + k1 * dl[1];
                    const int y2 = i2 * s[2] - pd[2] + k2 * dl[2];
                    if (y0 < 0 || y0 >= o[0] || y1 < 0 || y1 >= o[1] || y2 < 0 || y2 >= o[2])
                      continue;
                    const double xv =
                        x[(size_t(b) * p.c_in + ci) * in_sp + (i0 * in[1] + i1) * in[2] + i2];
                    const double wv =
                        w[(size_t(ci) * ocg + ocl) * kk + (k0 * k[1] + k1) * k[2] + k2];
                    out[(size_t(b) * p.oc + g * ocg + ocl) * out_sp + (y0 * o[1] + y1) * o[2] +
                        y2] += xv * wv;
                  }
    }
  return out;
}

std::vector<int64_t> as64(const std::vector<int>& v) { return {v.begin(), v.end()}; }

// The channels-last dim order of a rank-r tensor: N, spatial..., C.
std::vector<uint8_t> channels_last(size_t rank) {
  std::vector<uint8_t> order{0};
  for (size_t d = 2; d < rank; ++d) order.push_back(static_cast<uint8_t>(d));
  order.push_back(1);
  return order;
}

// Runs the case in dtype T with the given layout and returns the output as
// doubles (logical order); x, w, bias are rounded to T first.
template <typename T>
CallResult run_case(const TCase& p, const std::vector<float>& xv, const std::vector<float>& wv,
                    const std::vector<float>& bv, bool c_last, std::vector<double>* got,
                    KernelContext* ctx = nullptr) {
  TensorFactory tf;
  std::vector<int32_t> xs{p.n, p.c_in}, ws{p.c_in, p.oc / p.groups}, os{p.n, p.oc};
  for (int v : p.in) xs.push_back(v);
  for (int v : p.k) ws.push_back(v);
  for (int v : out_sizes(p)) os.push_back(v);
  const std::vector<uint8_t> order = c_last ? channels_last(xs.size()) : std::vector<uint8_t>{};
  auto& x = tf.make_from_floats<T>(xs, xv, order);
  auto& w = tf.make_from_floats<T>(ws, wv, order);
  auto& out = tf.make<T>(os, {}, order);
  EValue* bias = p.bias ? &tf.make_from_floats<T>({p.oc}, bv).ev : tf.none();
  std::vector<EValue*> args{&x.ev, &w.ev, bias, tf.list(as64(p.stride)), tf.list(as64(p.pad)),
                            tf.list(as64(p.dil)), tf.b(true), tf.list(as64(p.out_pad)),
                            tf.i(p.groups), &out.ev};
  CallResult r;
  if (ctx != nullptr) {
    r = call_kernel(*ctx, kOp, args);
  } else {
    r = call_kernel(kOp, args);
  }
  if (r.ok()) {
    if constexpr (std::is_same_v<T, double>) {
      *got = out.template values<double>();
    } else {
      *got = out.template as_doubles<T>();  // Exact through float for the narrower types.
    }
  }
  return r;
}

template <typename T>
std::vector<double> rounded(const std::vector<float>& v) {
  std::vector<double> r;
  for (float f : v) r.push_back(static_cast<double>(static_cast<float>(T(f))));
  return r;
}

// |got − want| <= tol · max(1, max |want|): relative to the output's magnitude.
void expect_close(const std::vector<double>& got, const std::vector<double>& want, double tol,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double scale = 1.0;
  for (double v : want) scale = std::max(scale, std::abs(v));
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_LE(std::abs(got[i] - want[i]), tol * scale)
        << what << " element " << i << ": got " << got[i] << ", want " << want[i];
  }
}

template <typename T>
void check_case(const TCase& p, double tol, const char* name) {
  size_t x_n = size_t(p.n) * p.c_in, w_n = size_t(p.c_in) * (p.oc / p.groups);
  for (int v : p.in) x_n *= v;
  for (int v : p.k) w_n *= v;
  const auto xv = random_floats(x_n, 11), wv = random_floats(w_n, 12);
  const auto bv = p.bias ? random_floats(p.oc, 13) : std::vector<float>{};
  const auto want = transposed_ref(p, rounded<T>(xv), rounded<T>(wv), rounded<T>(bv));
  for (bool c_last : {false, true}) {
    std::vector<double> got;
    const CallResult r = run_case<T>(p, xv, wv, bv, c_last, &got);
    ASSERT_TRUE(r.ok()) << name << ": " << r.message;
    expect_close(got, want, tol, std::string(name) + (c_last ? " channels-last" : " contiguous"));
  }
}

class OpConvolutionTransposedTest : public ::testing::TestWithParam<TCase> {};

// float32 and float64 run 1-D/2-D through the GEMM path, 3-D and the 16-bit
// floats through the direct loop. Tolerances relative to max |out|: float32
// 1e-5, float64 1e-12, float16 2e-3 and bfloat16 1e-2 (one rounding of a
// float sum: 2^-11 and 2^-8 of the magnitude, with headroom).
TEST_P(OpConvolutionTransposedTest, MatchesReferenceInEveryDtypeAndLayout) {
  const TCase& p = GetParam();
  check_case<float>(p, 1e-5, "float32");
  check_case<double>(p, 1e-12, "float64");
  check_case<Half>(p, 2e-3, "float16");
  check_case<BFloat16>(p, 1e-2, "bfloat16");
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, OpConvolutionTransposedTest,
    ::testing::Values(
        // 2-D: plain, stride, padding, dilation, output_padding, groups.
        TCase{1, 3, 4, {5, 6}, {3, 3}, {1, 1}, {0, 0}, {1, 1}, {0, 0}, 1, true},
        TCase{2, 4, 6, {4, 5}, {3, 2}, {2, 3}, {1, 0}, {1, 2}, {1, 2}, 2, false},
        TCase{1, 6, 6, {5, 5}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, 6, true},  // depthwise
        TCase{1, 4, 8, {3, 4}, {4, 4}, {2, 2}, {1, 1}, {1, 1}, {0, 0}, 4, true},  // multiplier 2
        TCase{1, 5, 3, {7, 3}, {2, 3}, {1, 2}, {0, 2}, {3, 1}, {2, 1}, 1, true},  // op < dilation
        TCase{2, 40, 24, {9, 10}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 0}, 1, true},  // > blocks
        TCase{1, 2, 3, {3, 3}, {11, 9}, {1, 1}, {2, 3}, {1, 1}, {0, 0}, 1, false},   // kk > 64
        TCase{1, 3, 2, {1, 1}, {2, 2}, {1, 1}, {0, 0}, {1, 1}, {0, 0}, 1, true},     // 1×1 input
        TCase{0, 3, 2, {4, 4}, {3, 3}, {2, 2}, {0, 0}, {1, 1}, {0, 0}, 1, true},     // empty batch
        // 1-D and 3-D.
        TCase{2, 4, 6, {9}, {3}, {2}, {1}, {1}, {1}, 2, true},
        TCase{1, 3, 5, {20}, {5}, {3}, {2}, {2}, {2}, 1, false},
        TCase{1, 2, 4, {3, 4, 3}, {2, 3, 2}, {2, 1, 2}, {0, 1, 1}, {1, 1, 2}, {1, 0, 1}, 2,
              true},
        TCase{2, 3, 3, {2, 3, 2}, {3, 1, 2}, {1, 2, 1}, {1, 0, 0}, {1, 1, 1}, {0, 1, 0}, 3,
              false}));

TEST(OpConvolutionTransposedTest, HandComputed1d) {
  // Each input scatters [w0, w1] at 2·i: [1, 10, 2, 20, 3, 30] + bias, plus
  // output_padding 1 (a last column no input reaches: bias only).
  TensorFactory tf;
  auto& x = tf.make<float>({1, 1, 3}, {1, 2, 3});
  auto& w = tf.make<float>({1, 1, 2}, {1, 10});
  auto& b = tf.make<float>({1}, {0.5f});
  auto& out = tf.make<float>({1, 1, 7});
  auto r = call_kernel(kOp, {&x.ev, &w.ev, &b.ev, tf.list({2}), tf.list({0}), tf.list({1}),
                             tf.b(true), tf.list({1}), tf.i(1), &out.ev});
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(out.values<float>(), (std::vector<float>{1.5f, 10.5f, 2.5f, 20.5f, 3.5f, 30.5f, 0.5f}));
}

TEST(OpConvolutionTransposedTest, Int64WrapsLikeEager) {
  TensorFactory tf;
  auto& x = tf.make<int64_t>({1, 2, 2}, {1, 2, 3, 4});
  auto& w = tf.make<int64_t>({2, 1, 2}, {1, -1, 10, 100});
  auto& out = tf.make<int64_t>({1, 1, 3});
  auto r = call_kernel(kOp, {&x.ev, &w.ev, tf.none(), tf.list({1}), tf.list({0}), tf.list({1}),
                             tf.b(true), tf.list({0}), tf.i(1), &out.ev});
  ASSERT_TRUE(r.ok()) << r.message;
  // Channel 0 (1, 2) · (1, -1) → [1, 1, -2]; channel 1 (3, 4) · (10, 100) → [30, 340, 400].
  EXPECT_EQ(out.values<int64_t>(), (std::vector<int64_t>{31, 341, 398}));
}

TEST(OpConvolutionTransposedTest, SameBitsOnAnyThreadCount) {
  // Above the parallel threshold, several channel blocks per (batch, group).
  const TCase p{2, 32, 48, {16, 16}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, 2, true};
  size_t x_n = size_t(p.n) * p.c_in * 256, w_n = size_t(p.c_in) * 24 * 9;
  const auto xv = random_floats(x_n, 21), wv = random_floats(w_n, 22), bv = random_floats(48, 23);
  std::vector<double> first;
  for (size_t threads : {1, 2, 3}) {
    KernelContext ctx;
    ThreadPool* pool = threads > 1 ? thread_pool_create(threads) : nullptr;
    ctx.set_thread_pool(pool);
    std::vector<double> got;
    const CallResult r = run_case<float>(p, xv, wv, bv, false, &got, &ctx);
    if (pool != nullptr) thread_pool_destroy(pool);
    ASSERT_TRUE(r.ok()) << r.message;
    if (first.empty()) {
      first = got;
    } else {
      ASSERT_EQ(std::memcmp(first.data(), got.data(), got.size() * sizeof(double)), 0) << threads;
    }
  }
}

// Calls transposed convolution with the given configuration on an input of
// [1, 4, 5, 5] and a weight of `wshape`.
CallResult call_config(TensorFactory& tf, std::vector<int64_t> stride,
                       std::vector<int64_t> padding, std::vector<int64_t> dilation,
                       std::vector<int64_t> output_padding, int64_t groups,
                       std::vector<int32_t> wshape = {4, 3, 3, 3}, EValue* bias = nullptr,
                       std::vector<int32_t> out_shape = {1, 3, 7, 7}) {
  auto& x = tf.make<float>({1, 4, 5, 5});
  auto& w = tf.make<float>(wshape);
  auto& out = tf.make<float>(out_shape);
  return call_kernel(kOp, {&x.ev, &w.ev, bias != nullptr ? bias : tf.none(), tf.list(stride),
                           tf.list(padding), tf.list(dilation), tf.b(true),
                           tf.list(output_padding), tf.i(groups), &out.ev});
}

TEST(OpConvolutionTransposedTest, ErrorsNameTheArgumentAndValues) {
  TensorFactory tf;
  // output_padding must be smaller than the stride or the dilation of its dim.
  EXPECT_KERNEL_FAILS(call_config(tf, {2, 2}, {0, 0}, {1, 1}, {2, 1}, 1), kOp,
                      "output_padding: must be smaller than either stride or dilation, but "
                      "spatial dim 0 has output_padding 2, stride 2 and dilation 1");
  EXPECT_KERNEL_FAILS(call_config(tf, {1, 1}, {0, 0}, {1, 1}, {1, 1}, 1), kOp,
                      "output_padding 1, stride 1 and dilation 1");
  EXPECT_KERNEL_FAILS(call_config(tf, {1, 1}, {0, 0}, {1, 1}, {-1, 0}, 1), kOp,
                      "output_padding: [-1, 0] has a value below 0");
  EXPECT_KERNEL_FAILS(call_config(tf, {1, 1, 1}, {0, 0}, {1, 1}, {0, 0}, 1), kOp,
                      "stride: expected 2 values (one per spatial dim) or 1, got [1, 1, 1]");
  EXPECT_KERNEL_FAILS(call_config(tf, {0, 1}, {0, 0}, {1, 1}, {0, 0}, 1), kOp,
                      "stride: [0, 1] has a value below 1");
  EXPECT_KERNEL_FAILS(call_config(tf, {1, 1}, {0, 0}, {0, 1}, {0, 0}, 1), kOp,
                      "dilation: [0, 1] has a value below 1");
  EXPECT_KERNEL_FAILS(call_config(tf, {1, 1}, {-1, 0}, {1, 1}, {0, 0}, 1), kOp,
                      "padding: [-1, 0] has a value below 0");
  EXPECT_KERNEL_FAILS(call_config(tf, {1, 1}, {0, 0}, {1, 1}, {0, 0}, 0), kOp,
                      "groups: must be at least 1, got 0");
  EXPECT_KERNEL_FAILS(call_config(tf, {1, 1}, {0, 0}, {1, 1}, {0, 0}, 3), kOp,
                      "groups: 3 does not divide the input channels of weight shape [4, 3, 3, 3]");
  EXPECT_KERNEL_FAILS(call_config(tf, {1, 1}, {0, 0}, {1, 1}, {0, 0}, 1, {2, 3, 3, 3}), kOp,
                      "weight: shape [2, 3, 3, 3] ([C_in, C_out/groups, k...]) expects 2 input "
                      "channels, the input has 4");
  auto& bias = tf.make<float>({4});
  EXPECT_KERNEL_FAILS(call_config(tf, {1, 1}, {0, 0}, {1, 1}, {0, 0}, 1, {4, 3, 3, 3}, &bias.ev),
                      kOp, "bias: expected shape [3]");
  // Output size (5 − 1)·1 − 2·4 + 2 + 0 + 1 = −1.
  EXPECT_KERNEL_FAILS(call_config(tf, {1, 1}, {4, 0}, {1, 1}, {0, 0}, 1), kOp,
                      "input: spatial dim 0 of size 5 gives output size -1");
  // The out tensor must have the computed shape.
  EXPECT_KERNEL_FAILS(
      call_config(tf, {1, 1}, {0, 0}, {1, 1}, {0, 0}, 1, {4, 3, 3, 3}, nullptr, {1, 3, 6, 6}),
      kOp, "[1, 3, 7, 7]");
}

// The prepare step (load_method) refuses what the program fixes.
TEST(OpConvolutionTransposedTest, LoadCheckRefusesBadConfigurations) {
  const Kernel* k = find_kernel(kOp);
  ASSERT_NE(k, nullptr);
  ASSERT_NE(k->prepare, nullptr);
  static std::vector<uint8_t> memory(1 << 20);
  auto prepare = [&](EValue** args, const bool* constant) {
    MemoryAllocator allocator(memory.data(), memory.size());
    KernelPrepareContext ctx(k->name, &allocator, args, constant, 11, nullptr);
    return k->prepare(ctx, args);
  };
  auto check = [&](std::vector<int64_t> stride, std::vector<int64_t> output_padding,
                   int64_t groups, bool transposed, std::vector<int64_t> padding = {0, 0}) {
    TensorFactory tf;
    auto& x = tf.make<float>({1, 4, 5, 5});
    auto& w = tf.make<float>({4, 3, 3, 3});
    auto& out = tf.make<float>({1, 3, 7, 7});
    EValue* args[] = {&x.ev, &w.ev, tf.none(), tf.list(stride), tf.list(padding),
                      tf.list({1, 1}), tf.b(transposed), tf.list(output_padding), tf.i(groups),
                      &out.ev, &out.ev};
    bool constant[11] = {};
    constant[1] = true;
    clear_error_message();
    MemoryAllocator allocator(memory.data(), memory.size());
    KernelPrepareContext ctx(k->name, &allocator, args, constant, 11, nullptr);
    const Error e = k->prepare(ctx, args);
    return std::make_pair(e, std::string(last_error_message()));
  };
  EXPECT_EQ(check({2, 2}, {1, 1}, 1, true).first, Error::Ok);
  auto [e, msg] = check({2, 2}, {2, 0}, 1, true);
  EXPECT_EQ(e, Error::InvalidProgram);
  EXPECT_NE(msg.find("output_padding: must be smaller than either stride or dilation"),
            std::string::npos)
      << msg;
  std::tie(e, msg) = check({0, 1}, {0, 0}, 1, true);
  EXPECT_EQ(e, Error::InvalidProgram);
  EXPECT_NE(msg.find("stride: [0, 1] has a value below 1"), std::string::npos) << msg;
  std::tie(e, msg) = check({1, 1}, {0, 0}, 3, true);
  EXPECT_EQ(e, Error::InvalidProgram);
  EXPECT_NE(msg.find("groups: 3 does not divide"), std::string::npos) << msg;
  std::tie(e, msg) = check({1, 1}, {0, 0}, 1, true, {4, 0});
  EXPECT_EQ(e, Error::InvalidProgram);
  EXPECT_NE(msg.find("gives output size -1"), std::string::npos) << msg;
  // A dynamic input's sizes are bounds at load: only execute checks them.
  {
    TensorFactory tf;
    auto& x = tf.make<float>({1, 2, 5, 5}, {}, {}, TensorShapeDynamism::DynamicBound);
    auto& w = tf.make<float>({4, 3, 3, 3});
    auto& out = tf.make<float>({1, 3, 7, 7});
    EValue* args[] = {&x.ev, &w.ev, tf.none(), tf.list({1, 1}), tf.list({0, 0}),
                      tf.list({1, 1}), tf.b(true), tf.list({0, 0}), tf.i(1), &out.ev, &out.ev};
    bool constant[11] = {};
    EXPECT_EQ(prepare(args, constant), Error::Ok);
    auto& xs = tf.make<float>({1, 2, 5, 5});
    args[0] = &xs.ev;
    EXPECT_EQ(prepare(args, constant), Error::InvalidProgram);
    EXPECT_NE(std::string(last_error_message()).find("expects 4 input channels, the input has 2"),
              std::string::npos)
        << last_error_message();
    auto& empty = tf.make<float>({1, 4, 0, 5});
    args[0] = &empty.ev;
    EXPECT_EQ(prepare(args, constant), Error::InvalidProgram);
    EXPECT_NE(std::string(last_error_message())
                  .find("spatial dim 0 has size 0; only the batch and channel dims may be empty"),
              std::string::npos)
        << last_error_message();
  }
  // Without transposed, output_padding is ignored (as eager does); the weight
  // [4, 3, 3, 3] then wants 3 input channels per group.
  std::tie(e, msg) = check({1, 1}, {5, 5}, 1, false);
  EXPECT_EQ(e, Error::InvalidProgram);
  EXPECT_NE(msg.find("weight: shape [4, 3, 3, 3] expects 3 input channels per group"),
            std::string::npos)
      << msg;
}

}  // namespace
}  // namespace ember::testing
