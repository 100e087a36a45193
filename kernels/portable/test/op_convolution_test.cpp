#include <algorithm>
#include <cmath>
#include <random>

#include "kernels/portable/util/cpu_isa.h"
#include "kernels/test/tensor_factory.h"

namespace ember::testing {
namespace {

constexpr const char* kOp = "aten::convolution.out";

// Direct convolution for reference (NCHW, logical order).
std::vector<double> conv_ref(const std::vector<float>& x, const std::vector<float>& w,
                             const std::vector<float>& bias, int n, int c, int h, int wd, int oc,
                             int kh, int kw, int sh, int sw, int ph, int pw, int dh, int dw,
                             int groups, int* oh_out, int* ow_out) {
  const int oh = (h + 2 * ph - dh * (kh - 1) - 1) / sh + 1;
  const int ow = (wd + 2 * pw - dw * (kw - 1) - 1) / sw + 1;
  const int cg = c / groups, ocg = oc / groups;
  std::vector<double> out(size_t(n) * oc * oh * ow);
  for (int b = 0; b < n; ++b)
    for (int o = 0; o < oc; ++o)
      for (int y = 0; y < oh; ++y)
        for (int xx = 0; xx < ow; ++xx) {
          double s = bias.empty() ? 0 : bias[o];
          const int g = o / ocg;
          for (int ci = 0; ci < cg; ++ci)
            for (int ky = 0; ky < kh; ++ky)
              for (int kx = 0; kx < kw; ++kx) {
                const int iy = y * sh - ph + ky * dh, ix = xx * sw - pw + kx * dw;
                if (iy < 0 || iy >= h || ix < 0 || ix >= wd) continue;
                s += double(x[((b * c + g * cg + ci) * h + iy) * wd + ix]) *
                     w[((o * cg + ci) * kh + ky) * kw + kx];
              }
          out[((b * oc + o) * oh + y) * ow + xx] = s;
        }
  *oh_out = oh;
  *ow_out = ow;
  return out;
}

std::vector<float> randv(size_t n, unsigned seed) { return random_floats(n, seed); }

TEST(OpConvolutionTest, Small2dHandComputed) {
  TensorFactory tf;
  auto& x = tf.make<float>({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  auto& w = tf.make<float>({1, 1, 2, 2}, {1, 0, 0, 1});
  auto& b = tf.make<float>({1}, {10});
  auto& out = tf.make<float>({1, 1, 2, 2});
  auto r = call_kernel(kOp, {&x.ev, &w.ev, &b.ev, tf.list({1, 1}), tf.list({0, 0}),
                             tf.list({1, 1}), tf.b(false), tf.list({0, 0}), tf.i(1), &out.ev});
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(out.values<float>(), (std::vector<float>{16, 18, 22, 24}));
}

struct ConvCase {
  int n, c, h, w, oc, kh, kw, sh, sw, ph, pw, dh, dw, groups;
  bool bias;
};

class OpConvolutionParamTest : public ::testing::TestWithParam<ConvCase> {};

TEST_P(OpConvolutionParamTest, MatchesDirectConvolutionInBothLayouts) {
  const ConvCase p = GetParam();
  TensorFactory tf;
  auto xv = randv(size_t(p.n) * p.c * p.h * p.w, 3);
  auto wv = randv(size_t(p.oc) * (p.c / p.groups) * p.kh * p.kw, 4);
  auto bv = p.bias ? randv(p.oc, 5) : std::vector<float>{};
  int oh = 0, ow = 0;
  auto want = conv_ref(xv, wv, bv, p.n, p.c, p.h, p.w, p.oc, p.kh, p.kw, p.sh, p.sw, p.ph, p.pw,
                       p.dh, p.dw, p.groups, &oh, &ow);
  for (bool channels_last : {false, true}) {
    std::vector<uint8_t> order = channels_last ? kChannelsLast : std::vector<uint8_t>{};
    auto& x = tf.make<float>({p.n, p.c, p.h, p.w}, xv, order);
    auto& w = tf.make<float>({p.oc, p.c / p.groups, p.kh, p.kw}, wv, order);
    auto& out = tf.make<float>({p.n, p.oc, oh, ow}, {}, order);
    EValue* bias = p.bias ? &tf.make<float>({p.oc}, bv).ev : tf.none();
    auto r = call_kernel(kOp, {&x.ev, &w.ev, bias, tf.list({p.sh, p.sw}), tf.list({p.ph, p.pw}),
                               tf.list({p.dh, p.dw}), tf.b(false), tf.list({0, 0}),
                               tf.i(p.groups), &out.ev});
    ASSERT_TRUE(r.ok()) << r.message;
    auto got = out.values<float>();
    for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-4) << i;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, OpConvolutionParamTest,
    ::testing::Values(ConvCase{1, 3, 8, 8, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, true},
                      ConvCase{2, 4, 7, 9, 6, 3, 2, 2, 1, 0, 1, 1, 2, 2, false},
                      ConvCase{1, 6, 5, 5, 6, 3, 3, 1, 1, 1, 1, 1, 1, 6, true},    // depthwise
                      ConvCase{2, 16, 4, 4, 24, 1, 1, 1, 1, 0, 0, 1, 1, 1, true},  // pointwise
                      ConvCase{1, 40, 12, 12, 80, 3, 3, 1, 1, 1, 1, 1, 1, 1, true},  // > blocks
                      ConvCase{1, 2, 5, 1, 3, 2, 1, 1, 1, 0, 0, 1, 1, 1, false},   // W == 1
                      // Depthwise (direct path): stride, padding, dilation, multiplier, k×k.
                      ConvCase{2, 8, 13, 17, 8, 3, 3, 2, 2, 1, 1, 1, 1, 8, true},
                      ConvCase{1, 5, 11, 12, 5, 3, 3, 1, 1, 2, 2, 2, 2, 5, false},
                      ConvCase{1, 4, 9, 10, 8, 3, 3, 1, 1, 1, 1, 1, 1, 4, true},   // multiplier 2
                      ConvCase{1, 3, 7, 8, 12, 5, 3, 2, 1, 2, 0, 1, 2, 3, true},   // multiplier 4
                      ConvCase{1, 70, 6, 7, 70, 5, 5, 1, 1, 2, 2, 1, 1, 70, true}, // > one block
                      ConvCase{1, 16, 4, 40, 16, 1, 7, 1, 3, 0, 3, 1, 1, 16, false},
                      ConvCase{1, 6, 3, 3, 6, 3, 3, 1, 1, 1, 1, 2, 2, 6, true},    // no interior
                      // 3×3 column stride 2 (the one-pass row kernel), odd width, dilation 2.
                      ConvCase{1, 24, 28, 29, 24, 3, 3, 2, 2, 1, 1, 1, 1, 24, true},
                      ConvCase{1, 8, 15, 21, 16, 3, 3, 2, 2, 2, 2, 2, 2, 8, false},
                      ConvCase{1, 1, 9, 9, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, true},    // C_in == 1
                      // Small-K im2col: runs that cross output rows, strides and edges.
                      ConvCase{1, 3, 20, 23, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, true},
                      ConvCase{2, 3, 19, 11, 5, 3, 3, 2, 3, 1, 2, 1, 1, 1, true},
                      ConvCase{1, 2, 9, 5, 7, 2, 3, 1, 1, 3, 4, 2, 1, 1, false},
                      ConvCase{1, 3, 6, 3, 17, 3, 3, 1, 1, 1, 1, 1, 1, 1, true}));

TEST(OpConvolutionTest, OneDimensional) {
  TensorFactory tf;
  auto& x = tf.make<double>({1, 2, 5}, {1, 2, 3, 4, 5, 10, 20, 30, 40, 50});
  auto& w = tf.make<double>({1, 2, 2}, {1, 1, 0.5, -1});
  auto& out = tf.make<double>({1, 1, 2});
  auto r = call_kernel(kOp, {&x.ev, &w.ev, tf.none(), tf.list({2}), tf.list({0}), tf.list({1}),
                             tf.b(false), tf.list({0}), tf.i(1), &out.ev});
  ASSERT_TRUE(r.ok()) << r.message;
  // t=0: 1+2 + 0.5*10-20 = -12; t=1: 3+4 + 15-40 = -18.
  EXPECT_EQ(out.values<double>(), (std::vector<double>{-12, -18}));
}

TEST(OpConvolutionTest, DepthwiseMixedLayoutsAndOneDimensional) {
  // Channels-last input with contiguous output and the other way round.
  const int c = 6, h = 9, w = 11;
  auto xv = randv(size_t(c) * h * w, 41);
  auto wv = randv(size_t(c) * 9, 42);
  auto bv = randv(c, 43);
  int oh = 0, ow = 0;
  auto want = conv_ref(xv, wv, bv, 1, c, h, w, c, 3, 3, 2, 1, 1, 1, 1, 1, c, &oh, &ow);
  for (int mix = 0; mix < 2; ++mix) {
    TensorFactory tf;
    auto& x = tf.make<float>({1, c, h, w}, xv, mix == 0 ? kChannelsLast : std::vector<uint8_t>{});
    auto& wt = tf.make<float>({c, 1, 3, 3}, wv);
    auto& out = tf.make<float>({1, c, oh, ow}, {}, mix == 1 ? kChannelsLast : std::vector<uint8_t>{});
    auto r = call_kernel(kOp, {&x.ev, &wt.ev, &tf.make<float>({c}, bv).ev, tf.list({2, 1}),
                               tf.list({1, 1}), tf.list({1, 1}), tf.b(false), tf.list({0, 0}),
                               tf.i(c), &out.ev});
    ASSERT_TRUE(r.ok()) << r.message;
    auto got = out.values<float>();
    for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-5) << mix << ":" << i;
  }
  // 1-D depthwise with multiplier 2, [N, C, L] and [N, L, C] storage.
  const int l = 10;
  auto x1 = randv(size_t(2) * 3 * l, 44);
  auto w1 = randv(size_t(6) * 3, 45);
  auto want1 = conv_ref(x1, w1, {}, 2, 3, 1, l, 6, 1, 3, 1, 2, 0, 1, 1, 1, 3, &oh, &ow);
  for (bool c_last : {false, true}) {
    TensorFactory tf;
    const std::vector<uint8_t> order = c_last ? std::vector<uint8_t>{0, 2, 1} : std::vector<uint8_t>{};
    auto& x = tf.make<float>({2, 3, l}, x1, order);
    auto& wt = tf.make<float>({6, 1, 3}, w1);
    auto& out = tf.make<float>({2, 6, ow}, {}, order);
    auto r = call_kernel(kOp, {&x.ev, &wt.ev, tf.none(), tf.list({2}), tf.list({1}), tf.list({1}),
                               tf.b(false), tf.list({0}), tf.i(3), &out.ev});
    ASSERT_TRUE(r.ok()) << r.message;
    auto got = out.values<float>();
    for (size_t i = 0; i < want1.size(); ++i) ASSERT_NEAR(got[i], want1[i], 1e-5) << i;
  }
  // Channels-last, multiplier 1: one channel block after another (1-D, 100 channels).
  auto x2 = randv(size_t(100) * l, 46);
  auto w2 = randv(size_t(100) * 3, 47);
  auto want2 = conv_ref(x2, w2, {}, 1, 100, 1, l, 100, 1, 3, 1, 1, 0, 1, 1, 1, 100, &oh, &ow);
  TensorFactory tf;
  auto& x = tf.make<float>({1, 100, l}, x2, {0, 2, 1});
  auto& wt = tf.make<float>({100, 1, 3}, w2);
  auto& out = tf.make<float>({1, 100, ow}, {}, {0, 2, 1});
  auto r = call_kernel(kOp, {&x.ev, &wt.ev, tf.none(), tf.list({1}), tf.list({1}), tf.list({1}),
                             tf.b(false), tf.list({0}), tf.i(100), &out.ev});
  ASSERT_TRUE(r.ok()) << r.message;
  auto got = out.values<float>();
  for (size_t i = 0; i < want2.size(); ++i) ASSERT_NEAR(got[i], want2[i], 1e-5) << i;
}

TEST(OpConvolutionTest, EmptyBatch) {
  TensorFactory tf;
  auto& x = tf.make<float>({0, 1, 3, 3});
  auto& w = tf.make<float>({1, 1, 2, 2});
  auto& out = tf.make<float>({0, 1, 2, 2});
  EXPECT_TRUE(call_kernel(kOp, {&x.ev, &w.ev, tf.none(), tf.list({1, 1}), tf.list({0, 0}),
                                tf.list({1, 1}), tf.b(false), tf.list({0, 0}), tf.i(1), &out.ev})
                  .ok());
}

TEST(OpConvolutionTest, Errors) {
  TensorFactory tf;
  auto& x = tf.make<float>({1, 4, 3, 3});
  auto& w = tf.make<float>({2, 4, 2, 2});
  auto& out = tf.make<float>({1, 2, 2, 2});
  auto call = [&](EValue* xx, EValue* ww, EValue* transposed, EValue* groups, EValue* o,
                  EValue* stride) {
    return call_kernel(kOp, {xx, ww, tf.none(), stride, tf.list({0, 0}), tf.list({1, 1}),
                             transposed, tf.list({0, 0}), groups, o});
  };
  // Transposed convolution has its own tests (op_convolution_transposed_test.cpp).
  EXPECT_KERNEL_FAILS(call(&x.ev, &w.ev, tf.b(false), tf.i(3), &out.ev, tf.list({1, 1})), kOp,
                      "groups");
  EXPECT_KERNEL_FAILS(call(&x.ev, &w.ev, tf.b(false), tf.i(2), &out.ev, tf.list({1, 1})), kOp,
                      "weight");
  auto& wrong = tf.make<float>({1, 2, 3, 3});
  EXPECT_KERNEL_FAILS(call(&x.ev, &w.ev, tf.b(false), tf.i(1), &wrong.ev, tf.list({1, 1})), kOp,
                      "[1, 2, 2, 2]");
  EXPECT_KERNEL_FAILS(call(&x.ev, &w.ev, tf.b(false), tf.i(1), &out.ev, tf.list({0, 1})), kOp,
                      "stride");
  // Integers and 16-bit floats take the direct path; bool has no convolution.
  auto& xb = tf.make<bool>({1, 4, 3, 3}, std::vector<bool>(36, true));
  auto& wb = tf.make<bool>({2, 4, 2, 2}, std::vector<bool>(32, true));
  auto& ob = tf.make<bool>({1, 2, 2, 2});
  EXPECT_KERNEL_FAILS(call(&xb.ev, &wb.ev, tf.b(false), tf.i(1), &ob.ev, tf.list({1, 1})), kOp,
                      "bool");
  auto& big = tf.make<float>({2, 4, 5, 5});
  EXPECT_KERNEL_FAILS(call(&x.ev, &big.ev, tf.b(false), tf.i(1), &out.ev, tf.list({1, 1})), kOp,
                      "smaller");
}

}  // namespace
}  // namespace ember::testing

namespace ember::testing {
namespace {

// Prepare packs a constant float32 weight per group; execute reads the
// packed panels (overwriting the weight after prepare changes nothing) and
// repeated runs on one prepared state give the bits of an unprepared call.
TEST(OpConvolutionTest, PreparedConstantWeightIsReadFromThePackedPanels) {
  const int n = 2, c = 24, h = 9, w = 10, oc = 30, groups = 3;
  TensorFactory tf;
  auto& x = tf.make<float>({n, c, h, w}, random_floats(size_t(n) * c * h * w, 5));
  auto& wt = tf.make<float>({oc, c / groups, 3, 3}, random_floats(size_t(oc) * (c / groups) * 9, 6));
  auto& bias = tf.make<float>({oc}, random_floats(oc, 7));
  auto& want = tf.make<float>({n, oc, h, w});
  auto args_for = [&](EValue* out_ev) {
    return std::vector<EValue*>{&x.ev, &wt.ev, &bias.ev, tf.list({1, 1}), tf.list({1, 1}),
                                tf.list({1, 1}), tf.b(false), tf.list({0, 0}), tf.i(groups),
                                out_ev, out_ev};
  };
  auto plain_args = args_for(&want.ev);
  plain_args.pop_back();
  ASSERT_TRUE(call_kernel(kOp, plain_args).ok());

  const Kernel* kernel = find_kernel(kOp);
  ASSERT_NE(kernel, nullptr);
  ASSERT_NE(kernel->prepare, nullptr);
  auto& out = tf.make<float>({n, oc, h, w});
  std::vector<EValue*> args = args_for(&out.ev);
  bool constant[11] = {};
  constant[1] = true;
  std::vector<uint8_t> memory(1 << 20);
  MemoryAllocator allocator(memory.data(), memory.size());
  KernelPrepareContext pctx(kernel->name, &allocator, args.data(), constant, args.size(), nullptr);
  ASSERT_EQ(kernel->prepare(pctx, args.data()), Error::Ok) << last_error_message();
  ASSERT_NE(pctx.state(), nullptr);
  EXPECT_GE(pctx.prepared_bytes(), sizeof(float) * oc * (c / groups) * 9);
  std::memset(wt.t.data, 0, wt.bytes.size());
  for (int run = 0; run < 3; ++run) {
    KernelContext ctx(kernel->name);
    ctx.set_state(pctx.state());
    kernel->fn(ctx, args.data());
    ASSERT_EQ(ctx.failure(), Error::Ok) << last_error_message();
    EXPECT_EQ(out.values<float>(), want.values<float>()) << "run " << run;
  }
}

// A 7×7 plane (49 positions) makes better GEMM rows than columns on the
// AVX2 (6×16) and AVX-512 (8×32) tiles: prepare packs Wᵀ as B panels and asks
// for scratch for outᵀ (and im2col's gather table). With the scratch and
// without it (im2col's own packing, the tiles written into out strided) the
// bits are the same; both match float64 within 1e-5 of
// the output's magnitude, over batches, groups, stride 2, 1×1 and both
// layouts (channels-last: the planes are written strided).
TEST(OpConvolutionTest, SmallPlanesRunPositionsAsGemmRows) {
  struct Shape {
    int n, c, h, w, oc, k, stride, pad, groups;
  };
  const Shape shapes[] = {{2, 96, 7, 7, 64, 3, 1, 1, 2},
                          {1, 40, 14, 14, 96, 3, 2, 1, 1},
                          {1, 300, 7, 7, 64, 1, 1, 0, 1}};
  for (const Shape& p : shapes) {
    for (bool channels_last : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "c=" << p.c << " oc=" << p.oc << " k=" << p.k
                                        << " channels_last=" << channels_last);
      const std::vector<uint8_t> order = channels_last ? kChannelsLast : std::vector<uint8_t>{};
      TensorFactory tf;
      const int cg = p.c / p.groups, ocg = p.oc / p.groups;
      const auto xv = random_floats(size_t(p.n) * p.c * p.h * p.w, 11);
      const auto wv = random_floats(size_t(p.oc) * cg * p.k * p.k, 12);
      const auto bv = random_floats(p.oc, 13);
      int oh = 0, ow = 0;
      const auto want = conv_ref(xv, wv, bv, p.n, p.c, p.h, p.w, p.oc, p.k, p.k, p.stride,
                                 p.stride, p.pad, p.pad, 1, 1, p.groups, &oh, &ow);
      auto& x = tf.make<float>({p.n, p.c, p.h, p.w}, xv, order);
      auto& wt = tf.make<float>({p.oc, cg, p.k, p.k}, wv);
      auto& bias = tf.make<float>({p.oc}, bv);
      auto& out = tf.make<float>({p.n, p.oc, oh, ow}, {}, order);
      std::vector<EValue*> args{&x.ev, &wt.ev, &bias.ev, tf.list({p.stride, p.stride}),
                                tf.list({p.pad, p.pad}), tf.list({1, 1}), tf.b(false),
                                tf.list({0, 0}), tf.i(p.groups), &out.ev, &out.ev};
      const Kernel* kernel = find_kernel(kOp);
      ASSERT_NE(kernel, nullptr);
      bool constant[11] = {};
      constant[1] = true;
      std::vector<uint8_t> memory(8 << 20);
      MemoryAllocator allocator(memory.data(), memory.size());
      KernelPrepareContext pctx(kernel->name, &allocator, args.data(), constant, args.size(),
                                nullptr);
      ASSERT_EQ(kernel->prepare(pctx, args.data()), Error::Ok) << last_error_message();
      const bool rows = kernels::portable::cpu_isa() >= kernels::portable::Isa::kAvx2;
      // outᵀ, and for a kernel of more than one tap the gather table of im2col's rows.
      if (rows) {
        EXPECT_GE(pctx.scratch_bytes(), sizeof(float) * oh * ow * ocg);
      } else {
        EXPECT_EQ(pctx.scratch_bytes(), 0u);
      }
      std::vector<float> results[2];
      for (int with_scratch = 0; with_scratch < 2; ++with_scratch) {
        void* scratch = with_scratch ? allocator.allocate(pctx.scratch_bytes() + 1, 64) : nullptr;
        KernelContext ctx(kernel->name);
        ctx.set_state(pctx.state());
        ctx.set_scratch(scratch, pctx.scratch_bytes());
        std::fill_n(static_cast<float*>(out.t.data), out.bytes.size() / sizeof(float),
                    std::nanf(""));
        kernel->fn(ctx, args.data());
        ASSERT_EQ(ctx.failure(), Error::Ok) << last_error_message();
        results[with_scratch] = out.values<float>();
      }
      EXPECT_EQ(results[0], results[1]);
      double scale = 0;
      for (double v : want) scale = std::max(scale, std::abs(v));
      for (size_t i = 0; i < want.size(); ++i) {
        ASSERT_NEAR(results[1][i], want[i], 1e-5 * scale) << "element " << i;
      }
    }
  }
}

}  // namespace
}  // namespace ember::testing
