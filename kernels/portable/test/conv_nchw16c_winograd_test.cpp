// Winograd F(4×4, 3×3) on NCHW16c (conv_nchw16c_winograd.h) against the
// direct blocked convolution (itself tested against float64 in
// conv_nchw16c_test.cpp), on every row kernel the host runs: planes that are
// not whole tiles, padding 1 and 0, channel counts off 16 (padded lanes must
// come out zero), bias, residual and clamp, a plane large enough for several
// bands of tile rows, and 1 and 2 threads (the same bits). Within 3e-5 of the
// output's largest magnitude (the transforms scale values by up to 8).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/portable/util/conv_nchw16c.h"
#include "kernels/portable/util/conv_nchw16c_winograd.h"
#include "kernels/portable/util/cpu_isa.h"
#include "runtime/kernel/kernel_context.h"
#include "runtime/kernel/thread_pool.h"

namespace ember::kernels::portable {
namespace {

constexpr int64_t kB = kNchw16cBlock;

struct Case {
  int64_t cin, cout, h, w, pad;
  bool residual, clamp;
};

TEST(ConvNchw16cWinogradTest, MatchesTheDirectKernel) {
  const Case cases[] = {
      {16, 32, 28, 28, 1, true, true},     // whole tiles, one block in
      {40, 70, 30, 29, 1, true, true},     // tile tails, padded channels in and out
      {32, 48, 31, 33, 0, false, false},   // no padding
      {256, 256, 34, 34, 1, true, false},  // several bands of tile rows
  };
  std::vector<Nchw16cKernel> kernels{Nchw16cKernel::kPortable};
  if (cpu_isa() >= Isa::kAvx2) kernels.push_back(Nchw16cKernel::kAvx2);
  if (cpu_isa() >= Isa::kAvx512) kernels.push_back(Nchw16cKernel::kAvx512);
  ThreadPool* pool2 = thread_pool_create(2);
  std::mt19937 rng(9);
  std::normal_distribution<float> nd;
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << c.cin << "→" << c.cout << " " << c.h << "x" << c.w
                                      << " p" << c.pad);
    Nchw16cConv g;
    g.cin = c.cin;
    g.cout = c.cout;
    g.kh = g.kw = 3;
    g.pad_h = g.pad_w = c.pad;
    g.in_h = c.h;
    g.in_w = c.w;
    g.out_h = c.h + 2 * c.pad - 2;
    g.out_w = c.w + 2 * c.pad - 2;
    ASSERT_TRUE(nchw16c_winograd_applies(g));
    const int64_t cib = g.cin_blocks(), cob = g.cout_blocks();
    const int64_t out_floats = cob * g.out_h * g.out_w * kB;
    std::vector<float> x(static_cast<size_t>(cib * c.h * c.w * kB), 0.0f);
    std::vector<float> w(static_cast<size_t>(c.cout * c.cin * 9));
    std::vector<float> bias(static_cast<size_t>(cob * kB), 0.0f), zeros(bias.size(), 0.0f);
    std::vector<float> res(static_cast<size_t>(out_floats), 0.0f);
    for (int64_t i = 0; i < c.h * c.w; ++i) {  // lanes past cin stay zero
      for (int64_t ch = 0; ch < c.cin; ++ch) {
        x[static_cast<size_t>(((ch / kB) * c.h * c.w + i) * kB + ch % kB)] = nd(rng);
      }
    }
    for (auto& v : w) v = nd(rng) / std::sqrt(static_cast<float>(c.cin * 9));
    for (int64_t i = 0; i < c.cout; ++i) bias[static_cast<size_t>(i)] = nd(rng);
    for (int64_t i = 0; i < g.out_h * g.out_w; ++i) {
      for (int64_t ch = 0; ch < c.cout; ++ch) {
        res[static_cast<size_t>(((ch / kB) * g.out_h * g.out_w + i) * kB + ch % kB)] = nd(rng);
      }
    }
    Nchw16cEpilogue ep;
    ep.bias = bias.data();
    ep.residual = c.residual ? res.data() : nullptr;
    ep.clamp = c.clamp;
    if (c.clamp) {
      ep.lo = -0.5f;
      ep.hi = 1.5f;
    }
    // The direct kernel's result (portable loops: the reference build).
    std::vector<float> packed(static_cast<size_t>(nchw16c_packed_weight_floats(g)));
    nchw16c_pack_weight(g, w.data(), packed.data());
    std::vector<float> padded(static_cast<size_t>(nchw16c_scratch_floats(g)));
    const float* in = x.data();
    if (g.padded()) {
      nchw16c_pad_input(g, x.data(), padded.data());
      in = padded.data();
    }
    std::vector<float> want(static_cast<size_t>(out_floats), NAN);
    nchw16c_conv_units(g, Nchw16cKernel::kPortable, in, packed.data(), ep, want.data(), 0,
                       nchw16c_units(g));
    float scale = 0;
    for (float v : want) scale = std::fmax(scale, std::fabs(v));
    ASSERT_GT(scale, 0.1f) << "a collapsed output checks nothing";

    std::vector<float> u(static_cast<size_t>(nchw16c_winograd_weight_floats(g)));
    nchw16c_winograd_pack_weight(g, w.data(), u.data());
    std::vector<float> scratch(static_cast<size_t>(nchw16c_winograd_scratch_floats(g)));
    for (Nchw16cKernel kernel : kernels) {
      SCOPED_TRACE(static_cast<int>(kernel));
      std::vector<float> first;
      for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), pool2}) {
        KernelContext ctx("conv2d_nchw16c");
        ctx.set_thread_pool(pool);
        std::vector<float> got(static_cast<size_t>(out_floats), NAN);
        nchw16c_winograd(ctx, g, kernel, x.data(), u.data(), ep, zeros.data(), got.data(),
                         scratch.data());
        for (size_t i = 0; i < got.size(); ++i) {
          const int64_t lane = static_cast<int64_t>(i) % kB;
          const int64_t block = static_cast<int64_t>(i) / (g.out_h * g.out_w * kB);
          if (block * kB + lane >= c.cout) {
            ASSERT_EQ(got[i], 0.0f) << "padded channel at " << i;
            continue;
          }
          ASSERT_NEAR(got[i], want[i], 3e-5f * scale) << "at " << i;
        }
        if (first.empty()) {
          first = got;
        } else {
          EXPECT_EQ(std::memcmp(first.data(), got.data(), got.size() * sizeof(float)), 0)
              << "1 and 2 threads differ";
        }
      }
    }
  }
  thread_pool_destroy(pool2);
}

TEST(ConvNchw16cWinogradTest, AppliesToLargeThreeByThreeStrideOnePlanes) {
  Nchw16cConv g;
  g.cin = g.cout = 64;
  g.kh = g.kw = 3;
  g.pad_h = g.pad_w = 1;
  g.in_h = g.in_w = g.out_h = g.out_w = 28;
  EXPECT_TRUE(nchw16c_winograd_applies(g));
  g.in_h = g.in_w = g.out_h = g.out_w = 14;  // too few tiles per transformed weight
  EXPECT_FALSE(nchw16c_winograd_applies(g));
  g.in_h = g.in_w = g.out_h = g.out_w = 56;
  g.stride_h = g.stride_w = 2;
  EXPECT_FALSE(nchw16c_winograd_applies(g));
  g.stride_h = g.stride_w = 1;
  g.plain_input = true;
  EXPECT_FALSE(nchw16c_winograd_applies(g));
}

}  // namespace
}  // namespace ember::kernels::portable
