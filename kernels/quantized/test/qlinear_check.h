// The check both token-major linear GEMMs' tests run (qlinear_vnni_test.cpp,
// qlinear_avx2_test.cpp): random int8 weights and rows, per-channel scales
// and offsets, an int8 epilogue with a clamp narrower than int8's and a
// float one, on 1 and 2 threads, against a plain int32 reference. The sums
// are exact, so the outputs must be the reference's bits.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "kernels/quantized/util/qgemm.h"
#include "runtime/kernel/thread_pool.h"

namespace ember::kernels::quantized {

/// run(ctx, e): one call of the GEMM under test over the packed problem.
using QLinearRun = std::function<void(KernelContext&, const QEpilogue&)>;

/// make(w, x, zx) packs weights w (n×k) and rows x (tokens×k, zero point zx)
/// and returns the call.
using QLinearMake =
    std::function<QLinearRun(const std::vector<int8_t>&, const std::vector<int8_t>&, int32_t)>;

inline void check_token_major_linear(int64_t tokens, int64_t k, int64_t n, bool with_offset,
                                     uint32_t seed, const QLinearMake& make) {
  SCOPED_TRACE("tokens " + std::to_string(tokens) + " k " + std::to_string(k) + " n " +
               std::to_string(n));
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> w8(-127, 127), x8(-128, 127), z(-20, 20);
  std::vector<int8_t> w(static_cast<size_t>(n * k)), x(static_cast<size_t>(tokens * k));
  for (auto& v : w) v = static_cast<int8_t>(w8(rng));
  for (auto& v : x) v = static_cast<int8_t>(x8(rng));
  const int32_t zx = z(rng), zy = z(rng);
  std::uniform_real_distribution<float> sd(1e-4f, 4e-4f), od(-20.f, 20.f);
  std::vector<float> scale, offset;
  for (int64_t i = 0; i < n; ++i) {
    scale.push_back(sd(rng));
    offset.push_back(od(rng));
  }
  const QLinearRun run = make(w, x, zx);
  ThreadPool* pool2 = thread_pool_create(2);
  for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), pool2}) {
    SCOPED_TRACE(pool ? "2 threads" : "1 thread");
    KernelContext ctx("qlinear");
    ctx.set_thread_pool(pool);
    std::vector<int8_t> q(static_cast<size_t>(tokens * n), int8_t{99});
    std::vector<float> f(static_cast<size_t>(tokens * n), -1.0f);
    QEpilogue e;
    e.scale = scale.data();
    e.offset = with_offset ? offset.data() : nullptr;
    e.zp = zy;
    e.lo = -100;  // A clamp narrower than int8's, as a fused activation makes.
    e.hi = 120;
    e.c = q.data();
    run(ctx, e);
    e.float_out = true;
    e.scale_mul = 0.5f;
    e.c = f.data();
    run(ctx, e);
    EXPECT_EQ(ctx.failure(), Error::Ok);
    int bad = 0;
    for (int64_t t = 0; t < tokens && bad < 5; ++t) {
      for (int64_t c = 0; c < n && bad < 5; ++c) {
        int32_t acc = 0;
        for (int64_t kk = 0; kk < k; ++kk) acc += w[c * k + kk] * (x[t * k + kk] - zx);
        const float o = with_offset ? offset[c] : 0.0f;
        const float v = static_cast<float>(acc) * scale[c] + o;
        const float r = std::nearbyint(std::fmin(std::fmax(v, float(-100 - zy)), float(120 - zy)));
        const auto want_q = static_cast<int8_t>(static_cast<int32_t>(r) + zy);
        const float want_f = static_cast<float>(acc) * (scale[c] * 0.5f) + o;
        const size_t at = static_cast<size_t>(t * n + c);
        if (q[at] != want_q || f[at] != want_f) {
          ++bad;
          ADD_FAILURE() << "C[" << t << "][" << c << "]: int8 " << int(q[at]) << " want "
                        << int(want_q) << ", float " << f[at] << " want " << want_f;
        }
      }
    }
  }
  thread_pool_destroy(pool2);
}

}  // namespace ember::kernels::quantized
