// The Winograd F(4×4, 3×3) path of aten::convolution.out (util/conv_winograd.h):
// prepare picks it for a constant float32 3×3 stride-1 weight with enough
// tiles and channels; execute must match a float64 direct convolution within
// the stated bound relative to the output's magnitude, agree with the im2col
// path (the unprepared call), give the same bits on any thread count, and
// fail clearly without its scratch memory.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/test/tensor_factory.h"
#include "runtime/core/memory_allocator.h"
#include "runtime/kernel/thread_pool.h"

namespace ember::testing {
namespace {

constexpr const char* kOp = "aten::convolution.out";

// |error| ≤ kBound · max|output| (measured at most ~1e-5 for 4,608-term sums).
constexpr double kBound = 3e-5;

struct WinoCase {
  int n, c, h, w, oc, ph, pw;
  bool bias, channels_last_in, channels_last_out;
};

// Direct 3×3 stride-1 convolution in float64 (NCHW, logical order).
std::vector<double> conv3x3_ref(const std::vector<float>& x, const std::vector<float>& w,
                                const std::vector<float>& bias, const WinoCase& p, int oh,
                                int ow) {
  std::vector<double> out(size_t(p.n) * p.oc * oh * ow);
  for (int b = 0; b < p.n; ++b)
    for (int o = 0; o < p.oc; ++o)
      for (int y = 0; y < oh; ++y)
        for (int xx = 0; xx < ow; ++xx) {
          double s = bias.empty() ? 0 : bias[o];
          for (int ci = 0; ci < p.c; ++ci)
            for (int ky = 0; ky < 3; ++ky) {
              const int iy = y - p.ph + ky;
              if (iy < 0 || iy >= p.h) continue;
              for (int kx = 0; kx < 3; ++kx) {
                const int ix = xx - p.pw + kx;
                if (ix < 0 || ix >= p.w) continue;
                s += double(x[((size_t(b) * p.c + ci) * p.h + iy) * p.w + ix]) *
                     w[((size_t(o) * p.c + ci) * 3 + ky) * 3 + kx];
              }
            }
          out[((size_t(b) * p.oc + o) * oh + y) * ow + xx] = s;
        }
  return out;
}

// One convolution call with its prepare step run on a constant weight.
struct Prepared {
  TensorFactory tf;
  std::vector<EValue*> args;
  TestTensor* out = nullptr;
  TestTensor* plain_out = nullptr;
  std::vector<uint8_t> memory = std::vector<uint8_t>(size_t{64} << 20);
  MemoryAllocator allocator{memory.data(), memory.size()};
  void* state = nullptr;
  size_t prepared_bytes = 0, scratch_bytes = 0;
  void* scratch = nullptr;
  // Bytes right after the scratch: a kernel that writes past what its
  // prepare reserved changes them (the arena would not notice).
  static constexpr size_t kGuardBytes = 4096;
  uint8_t* guard = nullptr;
  std::vector<double> want;
  const Kernel* kernel = nullptr;

  ThreadPool* pool = nullptr;

  explicit Prepared(const WinoCase& p, int stride = 1, ThreadPool* threads = nullptr)
      : pool(threads) {
    const int oh = (p.h + 2 * p.ph - 3) / stride + 1, ow = (p.w + 2 * p.pw - 3) / stride + 1;
    auto xv = random_floats(size_t(p.n) * p.c * p.h * p.w, 11);
    auto wv = random_floats(size_t(p.oc) * p.c * 9, 12);
    auto bv = p.bias ? random_floats(p.oc, 13) : std::vector<float>{};
    if (stride == 1) want = conv3x3_ref(xv, wv, bv, p, oh, ow);
    const std::vector<uint8_t> in_order = p.channels_last_in ? kChannelsLast : std::vector<uint8_t>{};
    const std::vector<uint8_t> out_order =
        p.channels_last_out ? kChannelsLast : std::vector<uint8_t>{};
    auto& x = tf.make<float>({p.n, p.c, p.h, p.w}, xv, in_order);
    auto& wt = tf.make<float>({p.oc, p.c, 3, 3}, wv);
    EValue* bias = p.bias ? &tf.make<float>({p.oc}, bv).ev : tf.none();
    out = &tf.make<float>({p.n, p.oc, oh, ow}, {}, out_order);
    plain_out = &tf.make<float>({p.n, p.oc, oh, ow}, {}, out_order);
    args = {&x.ev, &wt.ev, bias, tf.list({stride, stride}), tf.list({p.ph, p.pw}),
            tf.list({1, 1}), tf.b(false), tf.list({0, 0}), tf.i(1), &out->ev, &out->ev};
    // The unprepared call: the im2col GEMM.
    std::vector<EValue*> plain = args;
    plain[9] = &plain_out->ev;
    plain.pop_back();
    auto r = call_kernel(kOp, plain);
    EXPECT_TRUE(r.ok()) << r.message;

    kernel = find_kernel(kOp);
    bool constant[11] = {};
    constant[1] = true;
    KernelPrepareContext pctx(kernel->name, &allocator, args.data(), constant, args.size(),
                              pool);
    EXPECT_EQ(kernel->prepare(pctx, args.data()), Error::Ok) << last_error_message();
    state = pctx.state();
    prepared_bytes = pctx.prepared_bytes();
    scratch_bytes = pctx.scratch_bytes();
    if (scratch_bytes > 0) scratch = allocator.allocate(scratch_bytes, 64);
    guard = static_cast<uint8_t*>(allocator.allocate(kGuardBytes, 1));
    std::memset(guard, 0xa5, kGuardBytes);
    // Execute reads only what prepare packed.
    std::memset(wt.t.data, 0, wt.bytes.size());
  }

  Error run(bool with_scratch = true) {
    KernelContext ctx(kernel->name);
    ctx.set_state(state);
    ctx.set_thread_pool(pool);
    if (with_scratch) ctx.set_scratch(scratch, scratch_bytes);
    kernel->fn(ctx, args.data());
    for (size_t i = 0; i < kGuardBytes; ++i) {
      if (guard[i] != 0xa5) {
        ADD_FAILURE() << "the kernel changed byte " << i << " after its " << scratch_bytes
                      << " bytes of scratch";
        break;
      }
    }
    return ctx.failure();
  }
};

double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::fmax(m, std::fabs(x));
  return m;
}

class WinogradTest : public ::testing::TestWithParam<WinoCase> {};

TEST_P(WinogradTest, MatchesFloat64AndTheIm2colPath) {
  const WinoCase p = GetParam();
  Prepared prep(p);
  // Prepare chose Winograd: 36 transformed matrices and scratch for V and M.
  ASSERT_GT(prep.scratch_bytes, 0u);
  // (16 for F(2×2, 3×3) on small planes.)
  EXPECT_GE(prep.prepared_bytes, sizeof(float) * 16 * p.oc * p.c);
  ASSERT_EQ(prep.run(), Error::Ok) << last_error_message();
  const auto got = prep.out->values<float>();
  const auto im2col = prep.plain_out->values<float>();
  const double scale = max_abs(prep.want);
  ASSERT_GT(scale, 0.5);  // Sums of ≥ 144 products of U(-1, 1): far from zero.
  double worst = 0, worst_vs_im2col = 0;
  for (size_t i = 0; i < prep.want.size(); ++i) {
    worst = std::fmax(worst, std::fabs(got[i] - prep.want[i]));
    worst_vs_im2col = std::fmax(worst_vs_im2col, std::fabs(double(got[i]) - im2col[i]));
  }
  EXPECT_LE(worst, kBound * scale) << "relative error " << worst / scale;
  EXPECT_LE(worst_vs_im2col, kBound * scale) << "relative difference " << worst_vs_im2col / scale;
  // Runs on one prepared state repeat the same bits.
  ASSERT_EQ(prep.run(), Error::Ok);
  EXPECT_EQ(prep.out->values<float>(), got);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, WinogradTest,
    // Below 32 tiles (below 100 with AVX-512's 32-wide panels) the tiles are
    // the GEMM's rows (WinogradForm::kTileRows), else its columns.
    ::testing::Values(WinoCase{1, 16, 16, 16, 16, 1, 1, true, false, false},
                      // Partial tiles on both edges, batch 2, no bias.
                      WinoCase{2, 24, 17, 13, 40, 1, 1, false, false, false},
                      // Unpadded and asymmetrically padded geometry.
                      WinoCase{1, 32, 18, 21, 16, 0, 0, true, false, false},
                      WinoCase{1, 20, 14, 30, 24, 2, 0, true, false, false},
                      // More channels than one GEMM block (kKC = 128, kMC = 144).
                      WinoCase{1, 160, 24, 24, 150, 1, 1, true, false, false},
                      // ResNet's 14×14 layers as rows: three NR panels of output
                      // channels; more input channels than one depth block (256).
                      WinoCase{1, 64, 14, 14, 96, 1, 1, true, false, false},
                      WinoCase{1, 272, 14, 14, 40, 1, 1, false, false, false},
                      // A tall plane of 73 tiles, 146 rows (2 columns of tiles, a
                      // spare each): more rows than one kMC block (144) with AVX-512.
                      WinoCase{1, 16, 292, 4, 24, 1, 1, true, false, false},
                      // F(2×2, 3×3) on small planes (ResNet's 7×7 layers): odd
                      // sizes (partial tiles), a depth over 256, unpadded, batch 2,
                      // channels-last.
                      WinoCase{1, 64, 7, 7, 80, 1, 1, true, false, false},
                      WinoCase{2, 272, 8, 8, 72, 1, 1, false, false, false},
                      WinoCase{1, 96, 9, 11, 64, 0, 0, true, false, false},
                      WinoCase{1, 64, 7, 7, 72, 1, 1, true, true, true},
                      // Several bands of tile rows (scratch holds ~2 MiB of V and M),
                      // tiles as columns.
                      WinoCase{1, 48, 96, 90, 40, 1, 1, true, false, false},
                      // Channels-last input and output.
                      WinoCase{1, 24, 20, 19, 32, 1, 1, true, true, true},
                      WinoCase{2, 16, 16, 23, 16, 1, 1, false, true, false}),
    [](const ::testing::TestParamInfo<WinoCase>& info) {
      const WinoCase& p = info.param;
      return "n" + std::to_string(p.n) + "_c" + std::to_string(p.c) + "_" + std::to_string(p.h) +
             "x" + std::to_string(p.w) + "_oc" + std::to_string(p.oc) + "_pad" +
             std::to_string(p.ph) + std::to_string(p.pw) + (p.bias ? "_bias" : "") +
             (p.channels_last_in ? "_in_cl" : "") + (p.channels_last_out ? "_out_cl" : "");
    });

TEST(WinogradTest, SameBitsOnAnyThreadCount) {
  // 110 tiles (tiles as columns), 49 (as rows with AVX-512, else columns),
  // and F(2×2, 3×3) on 7×7.
  for (const WinoCase& p : {WinoCase{1, 48, 40, 44, 56, 1, 1, true, false, false},
                            WinoCase{1, 64, 28, 28, 72, 1, 1, true, false, false},
                            WinoCase{1, 64, 7, 7, 72, 1, 1, true, false, false}}) {
    Prepared prep(p);
    ASSERT_GT(prep.scratch_bytes, 0u);
    ASSERT_EQ(prep.run(), Error::Ok) << last_error_message();
    const auto one = prep.out->values<float>();
    ThreadPool* pool = thread_pool_create(2);
    ASSERT_NE(pool, nullptr);
    // Prepared for two threads: scratch for two transform buffers (F(2×2, 3×3)
    // transforms in place: the same scratch).
    Prepared prep2(p, 1, pool);
    if (p.h > 7) {
      EXPECT_GT(prep2.scratch_bytes, prep.scratch_bytes);
    } else {
      EXPECT_EQ(prep2.scratch_bytes, prep.scratch_bytes);
    }
    ASSERT_EQ(prep2.run(), Error::Ok) << last_error_message();
    EXPECT_EQ(prep2.out->values<float>(), one) << p.h << "x" << p.w;
    thread_pool_destroy(pool);
  }
}

// A non-finite input reaches every output of the 4×4 tiles whose 6×6 input
// block holds it (the transforms mix the block: inf − inf is NaN), not only
// its 3×3 neighbourhood; every other output is as without it.
TEST(WinogradTest, NonFiniteInputStaysInItsTiles) {
  const WinoCase p{1, 16, 16, 16, 16, 1, 1, true, false, false};
  Prepared clean(p);
  ASSERT_EQ(clean.run(), Error::Ok) << last_error_message();
  const auto want = clean.out->values<float>();
  Prepared prep(p);
  // Input pixel (channel 3, row 6, column 9) becomes +inf.
  float* x = prep.args[0]->as_tensor->data_ptr<float>();
  x[(3 * 16 + 6) * 16 + 9] = INFINITY;
  ASSERT_EQ(prep.run(), Error::Ok) << last_error_message();
  const auto got = prep.out->values<float>();
  int touched = 0;
  for (int o = 0; o < p.oc; ++o) {
    for (int y = 0; y < 16; ++y) {
      for (int xx = 0; xx < 16; ++xx) {
        const float g = got[(o * 16 + y) * 16 + xx];
        // Input rows/columns of the output's tile: 4·(y/4) − 1 .. + 4.
        const int ty = y / 4 * 4 - 1, tx = xx / 4 * 4 - 1;
        const bool in_block = 6 >= ty && 6 <= ty + 5 && 9 >= tx && 9 <= tx + 5;
        const bool in_window = std::abs(y - 6) <= 1 && std::abs(xx - 9) <= 1;
        if (in_window) {
          EXPECT_FALSE(std::isfinite(g)) << o << "," << y << "," << xx;
        } else if (!in_block) {
          EXPECT_EQ(g, want[(o * 16 + y) * 16 + xx]) << o << "," << y << "," << xx;
        }
        touched += in_block && !std::isfinite(g);
      }
    }
  }
  EXPECT_GT(touched, 0);
}

// The same for F(2×2, 3×3) on a 7×7 plane: 2×2 tiles of 4×4 input blocks.
TEST(WinogradTest, NonFiniteInputStaysInItsSmallTiles) {
  const WinoCase p{1, 64, 7, 7, 64, 1, 1, true, false, false};
  Prepared clean(p);
  ASSERT_EQ(clean.run(), Error::Ok) << last_error_message();
  const auto want = clean.out->values<float>();
  Prepared prep(p);
  float* x = prep.args[0]->as_tensor->data_ptr<float>();
  x[(5 * 7 + 3) * 7 + 4] = INFINITY;  // Channel 5, row 3, column 4.
  ASSERT_EQ(prep.run(), Error::Ok) << last_error_message();
  const auto got = prep.out->values<float>();
  int touched = 0;
  for (int o = 0; o < p.oc; ++o) {
    for (int y = 0; y < 7; ++y) {
      for (int xx = 0; xx < 7; ++xx) {
        const float g = got[(o * 7 + y) * 7 + xx];
        const int ty = y / 2 * 2 - 1, tx = xx / 2 * 2 - 1;  // The tile's input block.
        const bool in_block = 3 >= ty && 3 <= ty + 3 && 4 >= tx && 4 <= tx + 3;
        const bool in_window = std::abs(y - 3) <= 1 && std::abs(xx - 4) <= 1;
        if (in_window) {
          EXPECT_FALSE(std::isfinite(g)) << o << "," << y << "," << xx;
        } else if (!in_block) {
          EXPECT_EQ(g, want[(o * 7 + y) * 7 + xx]) << o << "," << y << "," << xx;
        }
        touched += in_block && !std::isfinite(g);
      }
    }
  }
  EXPECT_GT(touched, 0);
}

TEST(WinogradTest, FailsClearlyWithoutItsScratch) {
  Prepared prep({1, 16, 16, 16, 16, 1, 1, true, false, false});
  ASSERT_GT(prep.scratch_bytes, 0u);
  EXPECT_EQ(prep.run(false), Error::MemoryAllocationFailed);
  EXPECT_NE(std::string(last_error_message()).find("scratch"), std::string::npos)
      << last_error_message();
}

TEST(WinogradTest, NotChosenWhereItDoesNotPay) {
  // Too few tiles for either form (6×6: 9 of F(2×2, 3×3)'s), too few
  // channels for F(2×2, 3×3) on 8×8, stride 2: the im2col GEMM (prepare packs
  // the weight once, no transform).
  for (const auto& [p, stride] : {std::pair{WinoCase{1, 96, 6, 6, 80, 1, 1, true, false, false}, 1},
                                  std::pair{WinoCase{1, 32, 8, 8, 64, 1, 1, true, false, false}, 1},
                                  std::pair{WinoCase{1, 8, 32, 32, 64, 1, 1, true, false, false}, 1},
                                  std::pair{WinoCase{1, 64, 32, 32, 64, 1, 1, true, false, false}, 2}}) {
    Prepared prep(p, stride);
    // Winograd's transformed weight takes 4× the weight (36 values per 3×3);
    // the GEMM's panels hold it once, padded to the tile.
    EXPECT_LT(prep.prepared_bytes, 2 * sizeof(float) * size_t(p.oc) * p.c * 9)
        << p.c << " channels, " << p.h << "², stride " << stride;
    ASSERT_EQ(prep.run(), Error::Ok) << last_error_message();
    // The im2col GEMM: the unprepared call's bits, or, where the output's
    // positions are the GEMM's rows (small planes on AVX2/AVX-512), sums
    // in other depth blocks, within rounding.
    const std::vector<float> got = prep.out->values<float>();
    const std::vector<float> plain = prep.plain_out->values<float>();
    float scale = 0.0f;
    for (float v : plain) scale = std::max(scale, std::fabs(v));
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_NEAR(got[i], plain[i], 1e-6f * scale) << i;
    }
  }
}

}  // namespace
}  // namespace ember::testing
