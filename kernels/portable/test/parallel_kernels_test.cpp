// Kernels that split work over the method's thread pool give the same bits
// with 1, 2 and 3 threads: the splits follow the GEMM's own blocks and the
// channels of a depthwise convolution, so no sum is reassociated. Shapes are
// large enough to pass the parallel threshold and cross block edges.

#include <array>
#include <cstring>
#include <deque>
#include <random>
#include <string>

#include "kernels/portable/test/return_list.h"
#include "kernels/portable/util/broadcast.h"
#include "kernels/portable/util/gemm.h"
#include "kernels/test/tensor_factory.h"
#include "runtime/kernel/thread_pool.h"

namespace ember::testing {
namespace {

// A pool per thread count, destroyed with the fixture.
class ParallelKernels : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!threads_supported()) GTEST_SKIP() << "single-threaded build (EMBER_THREADS=OFF)";
  }
  void TearDown() override {
    for (ThreadPool* p : pools_) thread_pool_destroy(p);
  }
  KernelContext context(size_t threads) {
    KernelContext ctx;
    if (threads > 1) {
      ThreadPool* p = thread_pool_create(threads);
      pools_.push_back(p);
      ctx.set_thread_pool(p);
    }
    return ctx;
  }

  // The TensorList return slot of a multi-out op, kept alive for the call.
  EValue* return_list(std::initializer_list<TestTensor*> outs) {
    return &returns_.emplace_back(outs).ev;
  }

  // Runs `op` with args built by `make` on 1, 2 and 3 threads; the out tensor
  // must hold the same bytes each time. The out is the last arg (and the
  // return slot is added), or args[out_index] of a multi-out op whose args
  // already end with its return_list().
  template <typename Make>
  void expect_same_bits(const char* op, Make make, int out_index = -1) {
    std::vector<uint8_t> first;
    for (size_t threads : {1, 2, 3}) {
      TensorFactory tf;
      std::vector<EValue*> args = make(tf);
      KernelContext ctx = context(threads);
      EXPECT_EQ(ctx.threads(), threads);
      const CallResult r = call_kernel(ctx, op, args, out_index < 0);
      ASSERT_TRUE(r.ok()) << r.message;
      const Tensor& out =
          (out_index < 0 ? args.back() : args[static_cast<size_t>(out_index)])->to_tensor();
      std::vector<uint8_t> bytes(static_cast<const uint8_t*>(out.data),
                                 static_cast<const uint8_t*>(out.data) + out.nbytes());
      if (first.empty()) {
        first = bytes;
      } else {
        EXPECT_EQ(bytes, first) << op << " differs with " << threads << " threads";
      }
    }
  }

  std::vector<ThreadPool*> pools_;
  std::deque<ReturnList> returns_;
};

TEST_F(ParallelKernels, MmSplitsColumnsOrRowsIdentically) {
  struct Shape {
    int m, k, n;
  };
  // n >= m splits columns (kNC blocks), n < m splits rows (kMC blocks).
  for (Shape s : {Shape{77, 150, 1001}, Shape{1001, 150, 77}, Shape{300, 256, 300}}) {
    ASSERT_GE(int64_t{s.m} * s.n * s.k, kernels::portable::kGemmParallelMinMacs);
    auto av = random_floats(size_t(s.m) * s.k, 1);
    auto bv = random_floats(size_t(s.k) * s.n, 2);
    expect_same_bits("aten::mm.out", [&](TensorFactory& tf) {
      return std::vector<EValue*>{&tf.make<float>({s.m, s.k}, av).ev,
                                  &tf.make<float>({s.k, s.n}, bv, {1, 0}).ev,
                                  &tf.make<float>({s.m, s.n}).ev};
    });
  }
}

// One to four rows (a decoding step): the row stream and the dot products
// split their columns over the threads.
TEST_F(ParallelKernels, SmallMmSplitsColumnsIdentically) {
  struct Shape {
    int m, k, n;
    bool b_columns;  // B column-contiguous (the dot products) instead of row-contiguous
  };
  for (Shape s : {Shape{1, 2051, 3013, false}, Shape{3, 700, 4111, false},
                  Shape{4, 1024, 9000, false}, Shape{2, 999, 2500, true}}) {
    ASSERT_GE(int64_t{s.m} * s.n * s.k, kernels::portable::kGemmParallelMinMacs);
    auto av = random_floats(size_t(s.m) * s.k, 21);
    auto bv = random_floats(size_t(s.k) * s.n, 22);
    expect_same_bits("aten::mm.out", [&](TensorFactory& tf) {
      return std::vector<EValue*>{
          &tf.make<float>({s.m, s.k}, av).ev,
          &tf.make<float>({s.k, s.n}, bv, s.b_columns ? std::vector<uint8_t>{1, 0}
                                                       : std::vector<uint8_t>{}).ev,
          &tf.make<float>({s.m, s.n}).ev};
    });
  }
}

// A decoding step on a weight packed at prepare (f32_gemv_packed): each
// thread's share is whole panels; every column is summed as on one thread.
TEST_F(ParallelKernels, PreparedMmFewRowsSplitPanelsIdentically) {
  const int k = 2048, n = 1100;
  auto av = random_floats(size_t(4) * k, 41);
  auto bv = random_floats(size_t(k) * n, 42);
  for (int m : {1, 4}) {
    ASSERT_GE(int64_t{m} * n * k, kernels::portable::kGemmParallelMinMacs);
    std::vector<uint8_t> first;
    for (size_t threads : {1, 2, 3}) {
      TensorFactory tf;
      // Prepared with 64 rows (a prompt), run with m.
      std::vector<float> prompt(size_t(64) * k, 0.5f);
      auto& big = tf.make<float>({64, k}, prompt);
      auto& b = tf.make<float>({k, n}, bv);
      auto& big_out = tf.make<float>({64, n});
      EValue* prep_args[] = {&big.ev, &b.ev, &big_out.ev, &big_out.ev};
      const Kernel* kernel = find_kernel("aten::mm.out");
      ASSERT_NE(kernel, nullptr);
      const bool constant[4] = {false, true, false, false};
      std::vector<uint8_t> memory(16 << 20);
      MemoryAllocator allocator(memory.data(), memory.size());
      KernelPrepareContext pctx(kernel->name, &allocator, prep_args, constant, 4,
                                nullptr);
      ASSERT_EQ(kernel->prepare(pctx, prep_args), Error::Ok) << last_error_message();
      ASSERT_NE(pctx.state(), nullptr);
      std::vector<float> rows(av.begin(), av.begin() + size_t(m) * k);
      auto& a = tf.make<float>({m, k}, rows);
      auto& out = tf.make<float>({m, n});
      EValue* args[] = {&a.ev, &b.ev, &out.ev, &out.ev};
      KernelContext ctx = context(threads);
      ctx.set_state(pctx.state());
      kernel->fn(ctx, args);
      ASSERT_EQ(ctx.failure(), Error::Ok) << last_error_message();
      std::vector<uint8_t> bytes(static_cast<const uint8_t*>(out.t.data),
                                 static_cast<const uint8_t*>(out.t.data) + out.t.nbytes());
      if (first.empty()) {
        first = bytes;
      } else {
        EXPECT_EQ(bytes, first) << "m " << m << " differs with " << threads << " threads";
      }
    }
  }
}

// TF-style "same" padding before a stride-2 convolution: planes split over
// the threads, each output row written once.
TEST_F(ParallelKernels, ConstantPadOfPlanes) {
  auto xv = random_floats(size_t(96) * 56 * 56, 51);
  expect_same_bits("aten::constant_pad_nd.out", [&](TensorFactory& tf) {
    return std::vector<EValue*>{&tf.make<float>({1, 96, 56, 56}, xv).ev, tf.list({0, 1, 0, 1}),
                                tf.d(0.0), &tf.make<float>({1, 96, 57, 57}).ev};
  });
}

TEST_F(ParallelKernels, DoubleMmAndStridedOut) {
  auto av = random_floats(200 * 130, 3);
  auto bv = random_floats(130 * 190, 4);
  std::vector<double> ad(av.begin(), av.end()), bd(bv.begin(), bv.end());
  expect_same_bits("aten::mm.out", [&](TensorFactory& tf) {
    return std::vector<EValue*>{&tf.make<double>({200, 130}, ad).ev,
                                &tf.make<double>({130, 190}, bd).ev,
                                &tf.make<double>({200, 190}, {}, {1, 0}).ev};
  });
}

TEST_F(ParallelKernels, BmmOverHeadsAndWithinLargeProducts) {
  // 12 small products (one per task) and 2 large ones (split inside).
  for (auto [b, m, k, n] : {std::array<int, 4>{12, 128, 64, 128}, {2, 200, 300, 260}}) {
    auto av = random_floats(size_t(b) * m * k, 5);
    auto bv = random_floats(size_t(b) * k * n, 6);
    expect_same_bits("aten::bmm.out", [&](TensorFactory& tf) {
      return std::vector<EValue*>{&tf.make<float>({b, m, k}, av).ev,
                                  &tf.make<float>({b, k, n}, bv).ev,
                                  &tf.make<float>({b, m, n}).ev};
    });
  }
}

TEST_F(ParallelKernels, AddmmWithBias) {
  auto bias = random_floats(333, 7);
  auto av = random_floats(130 * 257, 8);
  auto wv = random_floats(257 * 333, 9);
  expect_same_bits("aten::addmm.out", [&](TensorFactory& tf) {
    return std::vector<EValue*>{&tf.make<float>({333}, bias).ev,
                                &tf.make<float>({130, 257}, av).ev,
                                &tf.make<float>({257, 333}, wv, {1, 0}).ev,
                                tf.d(1.0), tf.d(1.0),
                                &tf.make<float>({130, 333}).ev};
  });
}

TEST_F(ParallelKernels, ConvolutionGemmDepthwiseAndChannelsLast) {
  struct Case {
    int c, oc, groups, k;
    std::vector<uint8_t> order;
  };
  const std::vector<uint8_t> nchw = {}, nhwc = {0, 2, 3, 1};
  for (const Case& cs : {Case{16, 48, 1, 3, nchw}, Case{32, 32, 32, 3, nchw},
                         Case{32, 64, 32, 3, nchw}, Case{32, 32, 32, 3, nhwc},
                         Case{24, 24, 24, 5, nhwc}, Case{16, 32, 1, 1, nchw}}) {
    const int n = 2, h = 64, w = 61;
    // Above the threshold, so the pool is used.
    ASSERT_GE(int64_t{n} * cs.oc * h * w * cs.k * cs.k * (cs.c / cs.groups),
              kernels::portable::kGemmParallelMinMacs);
    auto xv = random_floats(size_t(n) * cs.c * h * w, 10);
    auto wv = random_floats(size_t(cs.oc) * (cs.c / cs.groups) * cs.k * cs.k, 11);
    auto bv = random_floats(size_t(cs.oc), 12);
    const int pad = cs.k / 2;
    expect_same_bits("aten::convolution.out", [&](TensorFactory& tf) {
      return std::vector<EValue*>{
          &tf.make<float>({n, cs.c, h, w}, xv, cs.order).ev,
          &tf.make<float>({cs.oc, cs.c / cs.groups, cs.k, cs.k}, wv).ev,
          &tf.make<float>({cs.oc}, bv).ev,
          tf.list({1, 1}),
          tf.list({pad, pad}),
          tf.list({1, 1}),
          tf.b(false),
          tf.list({0, 0}),
          tf.i(cs.groups),
          &tf.make<float>({n, cs.oc, h, w}, {}, cs.order).ev};
    });
  }
}

// Depthwise layers on small planes (MobileNetV2's 7×7 and 14×14, which take
// the zero-bordered plane path) split their channels too: below the GEMM's
// threshold in multiply-adds, well above it in time.
TEST_F(ParallelKernels, SmallPlaneDepthwiseSplitsChannels) {
  for (auto [c, h, stride] : {std::array<int, 3>{960, 7, 1}, {576, 14, 1}, {192, 15, 2}}) {
    const int pad = stride == 1 ? 1 : 0, oh = (h + 2 * pad - 3) / stride + 1;
    ASSERT_LT(int64_t{c} * oh * oh * 9, kernels::portable::kGemmParallelMinMacs);
    auto xv = random_floats(size_t(c) * h * h, 13);
    auto wv = random_floats(size_t(c) * 9, 14);
    auto bv = random_floats(size_t(c), 15);
    expect_same_bits("aten::convolution.out", [&](TensorFactory& tf) {
      return std::vector<EValue*>{&tf.make<float>({1, c, h, h}, xv).ev,
                                  &tf.make<float>({c, 1, 3, 3}, wv).ev,
                                  &tf.make<float>({c}, bv).ev,
                                  tf.list({stride, stride}),
                                  tf.list({pad, pad}),
                                  tf.list({1, 1}),
                                  tf.b(false),
                                  tf.list({0, 0}),
                                  tf.i(c),
                                  &tf.make<float>({1, c, oh, oh}).ev};
    });
  }
}

// A convolution whose weight prepare packed, with the method's scratch: on
// more than one thread the im2col operand is packed once into scratch for
// all of them (both GEMM orientations); the bits are those of one thread,
// which packs as it goes.
TEST_F(ParallelKernels, PreparedConvolutionSharesItsIm2colPacking) {
  struct Case {
    int c, h, oc, stride, groups;
    bool shares;  // on 2 threads each would pack all of im2col's operand
  };
  // 12×12: channels as GEMM rows on every tile, split by channels; 14×14
  // and 7×7 (ResNet's 3×3 layers there, too large for Winograd): positions
  // as rows on AVX2/AVX-512 (the 7×7 one split by channels), channels on the
  // portable tile; a grouped stride-2 one whose split is by positions.
  for (const Case& cs : {Case{32, 12, 256, 1, 1, true}, Case{128, 14, 256, 1, 1, false},
                         Case{96, 7, 512, 1, 1, true}, Case{64, 14, 64, 2, 2, false}}) {
    SCOPED_TRACE(::testing::Message() << "c " << cs.c << " h " << cs.h << " oc " << cs.oc);
    const int n = 2, oh = (cs.h - 1) / cs.stride + 1;
    auto xv = random_floats(size_t(n) * cs.c * cs.h * cs.h, 31);
    auto wv = random_floats(size_t(cs.oc) * (cs.c / cs.groups) * 9, 32);
    auto bv = random_floats(size_t(cs.oc), 33);
    std::vector<float> first;
    for (size_t threads : {1, 2, 3}) {
      TensorFactory tf;
      auto& out = tf.make<float>({n, cs.oc, oh, oh});
      std::vector<EValue*> args{&tf.make<float>({n, cs.c, cs.h, cs.h}, xv).ev,
                                &tf.make<float>({cs.oc, cs.c / cs.groups, 3, 3}, wv).ev,
                                &tf.make<float>({cs.oc}, bv).ev,
                                tf.list({cs.stride, cs.stride}),
                                tf.list({1, 1}),
                                tf.list({1, 1}),
                                tf.b(false),
                                tf.list({0, 0}),
                                tf.i(cs.groups),
                                &out.ev,
                                &out.ev};
      KernelContext ctx = context(threads);
      const Kernel* kernel = find_kernel("aten::convolution.out");
      ASSERT_NE(kernel, nullptr);
      bool constant[11] = {};
      constant[1] = true;
      std::vector<uint8_t> memory(16 << 20);
      MemoryAllocator allocator(memory.data(), memory.size());
      KernelPrepareContext pctx(kernel->name, &allocator, args.data(), constant, args.size(),
                                threads > 1 ? pools_.back() : nullptr);
      ASSERT_EQ(kernel->prepare(pctx, args.data()), Error::Ok) << last_error_message();
      if (threads == 2 && cs.shares) {
        EXPECT_GT(pctx.scratch_bytes(), 0u) << "no scratch for the shared packing";
      }
      void* scratch = pctx.scratch_bytes() > 0 ? allocator.allocate(pctx.scratch_bytes(), 64)
                                               : nullptr;
      ASSERT_TRUE(pctx.scratch_bytes() == 0 || scratch != nullptr);
      ctx.set_state(pctx.state());
      ctx.set_scratch(scratch, pctx.scratch_bytes());
      kernel->fn(ctx, args.data());
      ASSERT_EQ(ctx.failure(), Error::Ok) << last_error_message();
      if (first.empty()) {
        first = out.values<float>();
      } else {
        EXPECT_EQ(out.values<float>(), first) << threads << " threads";
      }
    }
  }
}

TEST_F(ParallelKernels, RowAndElementwiseKernels) {
  auto x = random_floats(64 * 1000, 13);
  for (const char* op : {"aten::_softmax.out", "aten::_log_softmax.out"}) {
    expect_same_bits(op, [&](TensorFactory& tf) {
      return std::vector<EValue*>{&tf.make<float>({64, 1000}, x).ev, tf.i(-1), tf.b(false),
                                  &tf.make<float>({64, 1000}).ev};
    });
  }
  auto h = random_floats(197 * 768, 14);
  auto w = random_floats(768, 15);
  auto b = random_floats(768, 16);
  expect_same_bits(
      "aten::native_layer_norm.out",
      [&](TensorFactory& tf) {
        auto& y = tf.make<float>({197, 768});
        auto& mean = tf.make<float>({197, 1});
        auto& rstd = tf.make<float>({197, 1});
        return std::vector<EValue*>{&tf.make<float>({197, 768}, h).ev, tf.list({768}),
                                    &tf.make<float>({768}, w).ev, &tf.make<float>({768}, b).ev,
                                    tf.d(1e-5), &y.ev, &mean.ev, &rstd.ev,
                                    return_list({&y, &mean, &rstd})};
      },
      5);
  auto e = random_floats(100003, 17);
  EValue approximate;
  approximate.tag = Tag::String;
  approximate.as_string = "none";
  for (const char* op : {"aten::exp.out", "aten::gelu.out"}) {
    const bool gelu = std::string(op) == "aten::gelu.out";
    expect_same_bits(op, [&](TensorFactory& tf) {
      std::vector<EValue*> args = {&tf.make<float>({100003}, e).ev};
      if (gelu) args.push_back(&approximate);
      args.push_back(&tf.make<float>({100003}).ev);
      return args;
    });
  }
}

TEST_F(ParallelKernels, ElementwiseWithBroadcastAndLayouts) {
  // 2 x 64 x 40 x 41 = 209,920 elements: above the elementwise threshold.
  const std::vector<int32_t> shape = {2, 64, 40, 41};
  const size_t numel = 2 * 64 * 40 * 41;
  auto a = random_floats(numel, 18);
  auto bias = random_floats(64, 19);
  const std::vector<uint8_t> nchw = {}, nhwc = {0, 2, 3, 1};
  for (const auto& order : {nchw, nhwc}) {
    expect_same_bits("aten::add.out", [&](TensorFactory& tf) {
      return std::vector<EValue*>{&tf.make<float>(shape, a, order).ev,
                                  &tf.make<float>({64, 1, 1}, bias).ev, tf.d(0.5),
                                  &tf.make<float>(shape).ev};
    });
    expect_same_bits("aten::mul.out", [&](TensorFactory& tf) {
      return std::vector<EValue*>{&tf.make<float>(shape, a, order).ev,
                                  &tf.make<float>(shape, a).ev, &tf.make<float>(shape, {}, order).ev};
    });
    expect_same_bits("aten::clamp.out", [&](TensorFactory& tf) {
      return std::vector<EValue*>{&tf.make<float>(shape, a, order).ev, tf.d(-0.25), tf.d(0.5),
                                  &tf.make<float>(shape).ev};
    });
  }
}

TEST_F(ParallelKernels, BatchNormInference) {
  const std::vector<int32_t> shape = {1, 96, 56, 56};
  auto x = random_floats(96 * 56 * 56, 20);
  auto w = random_floats(96, 21), b = random_floats(96, 22), m = random_floats(96, 23);
  auto v = random_floats(96, 24);
  for (float& e : v) e = e * e + 0.5f;
  expect_same_bits(
      "aten::_native_batch_norm_legit_no_training.out",
      [&](TensorFactory& tf) {
        auto& y = tf.make<float>(shape);
        auto& e1 = tf.make<float>({0});
        auto& e2 = tf.make<float>({0});
        return std::vector<EValue*>{
            &tf.make<float>(shape, x).ev, &tf.make<float>({96}, w).ev, &tf.make<float>({96}, b).ev,
            &tf.make<float>({96}, m).ev, &tf.make<float>({96}, v).ev, tf.d(0.1), tf.d(1e-5), &y.ev,
            &e1.ev, &e2.ev, return_list({&y, &e1, &e2})};
      },
      7);
}

// run_slice visits every element of a loop exactly once however [0, numel)
// is cut, with partial first and last rows.
TEST(StridedLoopSlices, CoverEveryElementOnce) {
  const int32_t sizes[] = {3, 5, 7};
  const int64_t out_strides[] = {35, 7, 1};
  const int64_t in_strides[] = {1, 21, 3};  // A permuted layout: nothing coalesces.
  const int64_t* strides[2] = {out_strides, in_strides};
  kernels::portable::StridedLoop<2> loop;
  loop.init(sizes, strides);
  std::vector<int64_t> whole;
  loop.run([&](const int64_t* off, int64_t n, const int64_t* st) {
    for (int64_t i = 0; i < n; ++i) whole.push_back(off[0] + i * st[0] + 1000 * (off[1] + i * st[1]));
  });
  ASSERT_EQ(whole.size(), 105u);
  for (std::vector<int64_t> cuts : {std::vector<int64_t>{0, 105}, {0, 1, 105}, {0, 6, 7, 8, 50, 105},
                                    {0, 13, 29, 64, 104, 105}}) {
    std::vector<int64_t> got;
    for (size_t c = 0; c + 1 < cuts.size(); ++c) {
      loop.run_slice(cuts[c], cuts[c + 1], [&](const int64_t* off, int64_t n, const int64_t* st) {
        for (int64_t i = 0; i < n; ++i) got.push_back(off[0] + i * st[0] + 1000 * (off[1] + i * st[1]));
      });
    }
    EXPECT_EQ(got, whole);
  }
}

}  // namespace
}  // namespace ember::testing
