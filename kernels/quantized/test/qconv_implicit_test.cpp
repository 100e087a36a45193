// The implicit-GEMM int8 convolution (qconv_implicit.h): every microkernel
// kind the host can run (baseline always; AVX2 and AVX-512 VNNI when present,
// whatever EMBER_ISA says), 1 and 2 threads, against a direct int32 loop and
// the same requantisation. Cases cover strides 1–3 (phase planes), dilation,
// channel counts that leave a channel group partly empty, padding on some
// sides only, outputs narrower than a tile, rows wide enough for the
// vectorised copies, and more columns than one block.
// The sums are exact, so every kind must give the reference's bits.
#include <gtest/gtest.h>

#include <algorithm>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/quantized/util/qconv_implicit.h"
#include "kernels/quantized/test/qgemm_kinds.h"
#include "runtime/kernel/thread_pool.h"

namespace ember::kernels::quantized {
namespace {

struct Case {
  int64_t cin, ih, iw, m, kh, kw, sh, sw, pt, pl, pb, pr, dh, dw;
};

TEST(QConvImplicitTest, AllKindsMatchADirectLoop) {
  const Case cases[] = {
      {3, 9, 11, 10, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},      // partial channel group
      {5, 12, 10, 9, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},      // stride 2
      {4, 10, 13, 7, 3, 2, 1, 2, 2, 0, 2, 0, 2, 1},      // dilation, stride 2 in w only
      {8, 17, 19, 16, 3, 3, 3, 3, 1, 1, 0, 0, 1, 1},     // stride 3
      {3, 23, 23, 12, 7, 7, 2, 2, 3, 3, 3, 3, 1, 1},     // a ResNet stem
      {3, 9, 150, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},      // stride 2 over runs of 64, odd pad
      {5, 6, 131, 6, 7, 7, 2, 2, 3, 2, 3, 3, 1, 1},      // stride 2 over runs of 64, even pad
      {16, 14, 14, 40, 1, 1, 2, 2, 0, 0, 0, 0, 1, 1},    // 1x1 stride 2 (downsample)
      {8, 5, 100, 9, 1, 1, 2, 2, 0, 0, 0, 0, 1, 1},      // 1x1 stride 2, runs of 64 and 32
      {4, 6, 56, 7, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},       // stride 2, a run of 32 and a tail
      {64, 7, 7, 70, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},      // narrow plane, many strips
      {6, 5, 9, 5, 3, 3, 1, 1, 0, 2, 1, 0, 1, 1},        // padding on some sides only
      {1, 4, 4, 3, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1},        // one channel, 1-pixel output rows
      {256, 22, 40, 17, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},   // more columns than one block
      {5, 4, 33, 6, 3, 3, 2, 2, 0, 0, 0, 0, 1, 1},       // stride 2, a 1-column tail
      {5, 4, 66, 6, 3, 3, 2, 2, 0, 1, 0, 1, 1, 1},       // stride 2, runs of 64, 2-column tail
      {6, 5, 31, 9, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},       // stride 1, all tail (31 pixels)
      {6, 5, 65, 9, 3, 3, 1, 1, 0, 1, 1, 0, 1, 1},       // stride 1, runs of 32, 1-pixel tail
      // AMX (channels in whole 64s): partial strips of rows and columns,
      // stride 2, a 1×1 downsample, dilation.
      {64, 13, 11, 33, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
      {128, 15, 15, 40, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},
      {128, 14, 14, 64, 1, 1, 2, 2, 0, 0, 0, 0, 1, 1},
      {64, 12, 12, 20, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2},
  };
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> w8(-128, 127), x8(-128, 127), z(-20, 20);
  std::uniform_real_distribution<float> sd(1e-4f, 4e-4f), od(-20.f, 20.f);
  ThreadPool* pool2 = thread_pool_create(2);
  for (const Case& c : cases) {
    QConvGeometry g{c.cin, c.ih, c.iw, c.kh, c.kw, 0, 0, c.sh, c.sw, c.pt, c.pl, c.dh, c.dw};
    g.oh = (c.ih + c.pt + c.pb - c.dh * (c.kh - 1) - 1) / c.sh + 1;
    g.ow = (c.iw + c.pl + c.pr - c.dw * (c.kw - 1) - 1) / c.sw + 1;
    SCOPED_TRACE("cin " + std::to_string(c.cin) + " " + std::to_string(c.ih) + "x" +
                 std::to_string(c.iw) + " kernel " + std::to_string(c.kh) + "x" +
                 std::to_string(c.kw) + " stride " + std::to_string(c.sh) + "," +
                 std::to_string(c.sw) + " m " + std::to_string(c.m));
    const int64_t taps = c.kh * c.kw;
    std::vector<int8_t> w(static_cast<size_t>(c.m * c.cin * taps));
    std::vector<int8_t> x(static_cast<size_t>(c.cin * c.ih * c.iw));
    for (auto& v : w) v = static_cast<int8_t>(w8(rng));
    for (auto& v : x) v = static_cast<int8_t>(x8(rng));
    const int32_t zx = z(rng), zy = z(rng);
    std::vector<float> scale, offset;
    for (int64_t i = 0; i < c.m; ++i) {
      scale.push_back(sd(rng));
      offset.push_back(od(rng));
    }
    const int64_t plane = g.oh * g.ow;
    std::vector<int8_t> want(static_cast<size_t>(c.m * plane));
    for (int64_t m = 0; m < c.m; ++m) {
      for (int64_t oy = 0; oy < g.oh; ++oy) {
        for (int64_t ox = 0; ox < g.ow; ++ox) {
          int32_t acc = 0;
          for (int64_t ci = 0; ci < c.cin; ++ci) {
            for (int64_t ky = 0; ky < c.kh; ++ky) {
              for (int64_t kx = 0; kx < c.kw; ++kx) {
                const int64_t iy = oy * c.sh - c.pt + ky * c.dh;
                const int64_t ix = ox * c.sw - c.pl + kx * c.dw;
                const int32_t xv = (iy < 0 || iy >= c.ih || ix < 0 || ix >= c.iw)
                                       ? zx
                                       : x[static_cast<size_t>((ci * c.ih + iy) * c.iw + ix)];
                acc += w[static_cast<size_t>(((m * c.cin + ci) * c.kh + ky) * c.kw + kx)] *
                       (xv - zx);
              }
            }
          }
          const float v = static_cast<float>(acc) * scale[static_cast<size_t>(m)] +
                          offset[static_cast<size_t>(m)];
          const float r = std::nearbyint(std::fmin(std::fmax(v, -128.f - zy), 127.f - zy));
          want[static_cast<size_t>(m * plane + oy * g.ow + ox)] =
              static_cast<int8_t>(static_cast<int32_t>(r) + zy);
        }
      }
    }
    std::vector<QGemmKind> kinds = host_kinds();
    const std::vector<QGemmKind> gemm_kinds = host_gemm_kinds();
    const bool amx_here =
        std::find(gemm_kinds.begin(), gemm_kinds.end(), QGemmKind::kAmx) != gemm_kinds.end();
    if (c.cin % 64 == 0 && amx_here) {
      kinds.push_back(QGemmKind::kAmx);
    }
    for (QGemmKind kind : kinds) {
      std::vector<uint8_t> packed(qconv_packed_bytes(kind, c.m, c.cin, c.kh, c.kw));
      std::vector<int32_t> sums(static_cast<size_t>(c.m));
      const QPackedWeights pw = qconv_pack_weights(kind, w.data(), c.m, c.cin, c.kh, c.kw,
                                                   packed.data(), sums.data());
      for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), pool2}) {
        SCOPED_TRACE(std::string(qgemm_kind_name(kind)) + (pool ? " 2 threads" : " 1 thread"));
        KernelContext ctx("qconv");
        ctx.set_thread_pool(pool);
        // Sized exactly, so ASan sees any read past the phase planes.
        std::vector<uint8_t> scratch(qconv_scratch_bytes(pw, g, ctx.threads()));
        std::vector<int8_t> got(want.size(), 0);
        QEpilogue e;
        e.scale = scale.data();
        e.offset = offset.data();
        e.zp = zy;
        e.c = got.data();
        e.c_rs = plane;
        e.c_cs = 1;
        qconv_run(ctx, pw, g, x.data(), zx, e, scratch.data());
        EXPECT_EQ(ctx.failure(), Error::Ok);
        int bad = 0;
        for (size_t i = 0; i < want.size() && bad < 5; ++i) {
          if (got[i] != want[i]) {
            ++bad;
            ADD_FAILURE() << "out[" << i << "] = " << int(got[i]) << ", want " << int(want[i]);
          }
        }
      }
    }
  }
  if (pool2 != nullptr) thread_pool_destroy(pool2);
}

}  // namespace
}  // namespace ember::kernels::quantized
