// sdpa_tiled_f32 (ember_fused::sdpa's and prefill's attention on the GEMM
// microkernels) against a plain double-precision attention, in every build
// the host runs, on 1 and 2 threads (the same bits on both), and against the
// row kernel sdpa_f32. The comparison with eager PyTorch is
// python/tests/test_fuse_attention.py.
#include "kernels/portable/util/sdpa_tiled_f32.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "kernels/test/tensor_factory.h"
#include "runtime/kernel/thread_pool.h"

namespace ember::testing {
namespace {

using kernels::portable::host_isa;
using kernels::portable::Isa;
using kernels::portable::SdpaF32Problem;

struct Case {
  int64_t batch, heads, kv_heads, seq, keys, head_dim, start;
  bool causal;
  int mask;  // 0 none, 1 bool [Lq, Lk], 2 float [B, 1, Lq, Lk], 3 float [B, 1, 1, Lk] with -inf
  const char* what;
};

struct Data {
  std::vector<float> q, k, v, fmask;
  std::vector<char> bmask;
  SdpaF32Problem p;
};

// k and v hold `cache` positions per head (>= keys); rows read the first `keys`.
Data make(const Case& c, std::vector<float>& out, int64_t cache) {
  Data d;
  d.q = random_floats(c.batch * c.heads * c.seq * c.head_dim, 11);
  d.k = random_floats(c.batch * c.kv_heads * cache * c.head_dim, 12);
  d.v = random_floats(d.k.size(), 13);
  for (float& x : d.q) x *= 2.0f;  // sharper softmax rows
  out.assign(d.q.size(), std::numeric_limits<float>::quiet_NaN());
  SdpaF32Problem& p = d.p;
  p.q = d.q.data();
  p.k = d.k.data();
  p.v = d.v.data();
  p.out = out.data();
  p.batch = c.batch;
  p.heads = c.heads;
  p.kv_heads = c.kv_heads;
  p.seq = c.seq;
  p.head_dim = c.head_dim;
  p.cache_len = cache;
  p.kv_len = c.keys;
  p.start = c.start;
  p.causal = c.causal;
  p.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  if (c.mask == 1) {
    d.bmask.resize(c.seq * cache);
    // About two thirds attended; row 3 attends to nothing (zeros out).
    for (size_t i = 0; i < d.bmask.size(); ++i) {
      d.bmask[i] = (i * 7 + i / 5) % 3 != 0 && static_cast<int64_t>(i) / cache != 3;
    }
    p.mask = d.bmask.data();
    p.mask_is_bool = true;
    p.mask_strides[2] = cache;
  } else if (c.mask == 2) {
    d.fmask = random_floats(c.batch * c.seq * cache, 14);
    p.mask = d.fmask.data();
    p.mask_strides[0] = c.seq * cache;
    p.mask_strides[2] = cache;
  } else if (c.mask == 3) {
    // A padding mask: the last few keys of each batch hidden.
    d.fmask.assign(c.batch * cache, 0.0f);
    for (int64_t b = 0; b < c.batch; ++b) {
      for (int64_t j = c.keys - 1 - 3 * b; j < cache; ++j) {
        d.fmask[b * cache + j] = -std::numeric_limits<float>::infinity();
      }
    }
    p.mask = d.fmask.data();
    p.mask_strides[0] = cache;
  }
  return d;
}

std::vector<double> reference(const Case& c, const Data& d) {
  const SdpaF32Problem& p = d.p;
  std::vector<double> out(d.q.size(), 0.0);
  const int64_t group = c.heads / c.kv_heads, hd = c.head_dim;
  for (int64_t b = 0; b < c.batch; ++b) {
    for (int64_t h = 0; h < c.heads; ++h) {
      const int64_t g = h / group;
      for (int64_t i = 0; i < c.seq; ++i) {
        const float* q = &d.q[((b * c.heads + h) * c.seq + i) * hd];
        std::vector<double> w(c.keys, -INFINITY);
        for (int64_t j = 0; j < c.keys; ++j) {
          if (c.causal && j > c.start + i) continue;
          const int64_t mat = b * p.mask_strides[0] + h * p.mask_strides[1] +
                              i * p.mask_strides[2] + j;
          if (c.mask == 1 && !d.bmask[mat]) continue;
          const float* k = &d.k[((b * c.kv_heads + g) * p.cache_len + j) * hd];
          double s = 0;
          for (int64_t x = 0; x < hd; ++x) s += double(q[x]) * k[x];
          w[j] = s * p.scale + (c.mask >= 2 ? d.fmask[mat] : 0.0);
        }
        double mx = -INFINITY, sum = 0;
        for (double s : w) mx = std::max(mx, s);
        if (mx == -INFINITY) continue;  // nothing visible: zeros
        for (double& s : w) sum += (s = std::exp(s - mx));
        double* o = &out[((b * c.heads + h) * c.seq + i) * hd];
        for (int64_t j = 0; j < c.keys; ++j) {
          const float* v = &d.v[((b * c.kv_heads + g) * p.cache_len + j) * hd];
          for (int64_t x = 0; x < hd; ++x) o[x] += w[j] / sum * v[x];
        }
      }
    }
  }
  return out;
}

const Case kCases[] = {
    {1, 2, 2, 64, 64, 64, 0, false, 0, "one block each way"},
    {2, 3, 3, 100, 300, 32, 0, false, 0, "cross-attention, partial query and key blocks"},
    {1, 4, 2, 77, 77, 17, 0, true, 0, "causal, grouped, head dim with tails"},
    {1, 8, 2, 40, 90, 64, 50, true, 0, "prefill after 50 cached positions"},
    {1, 2, 1, 16, 16, 1, 0, false, 0, "head dim 1, the fewest rows"},
    {1, 2, 2, 70, 140, 80, 0, false, 1, "bool mask with a row attending to nothing"},
    {2, 2, 2, 33, 129, 40, 0, false, 2, "float mask per batch"},
    {2, 4, 4, 96, 200, 64, 0, false, 3, "padding mask (-inf keys)"},
    {1, 1, 1, 20, 513, 256, 0, false, 0, "largest head dim, many key blocks"},
    {1, 2, 2, 130, 40, 24, 0, true, 0, "causal with more queries than keys"},
};

void expect_close(const Case& c, const Data& d, const std::vector<float>& out,
                  const std::string& what) {
  const std::vector<double> want = reference(c, d);
  double scale = 0, err = 0;
  size_t worst = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    scale = std::max(scale, std::abs(want[i]));
    const double e = std::abs(want[i] - out[i]);
    if (!(e <= err)) {
      err = e;
      worst = i;
    }
  }
  ASSERT_GT(scale, 0.1) << what;  // the outputs did not collapse
  EXPECT_LE(err, 2e-6 * scale * std::sqrt(static_cast<double>(c.head_dim)) + 1e-6 * scale)
      << what << ": element " << worst << " " << out[worst] << " want " << want[worst];
}

TEST(SdpaTiledF32Test, EveryBuildAndThreadCountMatchesADoubleReference) {
  ThreadPool* pool2 = thread_pool_create(2);
  for (const Case& c : kCases) {
    const int64_t cache = c.keys + 5;  // rows of the cache past kv_len are never read
    for (int level = 0; level <= static_cast<int>(host_isa()); ++level) {
      const Isa isa = static_cast<Isa>(level);
      std::vector<float> first;
      for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), pool2}) {
        const std::string what = std::string(c.what) + ", isa " + std::to_string(level) +
                                 (pool ? ", 2 threads" : ", 1 thread");
        std::vector<float> out;
        Data d = make(c, out, cache);
        for (size_t j = c.keys * c.head_dim; j < d.k.size(); j += cache * c.head_dim) {
          // NaN in the unread cache rows of each head: reading one shows.
          for (int64_t x = 0; x < 5 * c.head_dim; ++x) {
            d.k[j + x] = d.v[j + x] = std::numeric_limits<float>::quiet_NaN();
          }
        }
        KernelContext ctx("sdpa");
        ctx.set_thread_pool(pool);
        ASSERT_TRUE(kernels::portable::sdpa_tiled_f32_applies(d.p)) << what;
        std::vector<unsigned char> scratch(
            kernels::portable::sdpa_tiled_f32_scratch_bytes(isa, d.p, ctx.threads()) + 64,
            0xff);  // NaN bytes: anything read before written shows
        void* aligned = scratch.data() + (64 - reinterpret_cast<uintptr_t>(scratch.data()) % 64);
        kernels::portable::sdpa_tiled_f32_at(isa, ctx, d.p, aligned);
        expect_close(c, d, out, what);
        if (first.empty()) {
          first = out;
        } else {
          EXPECT_EQ(0, std::memcmp(first.data(), out.data(), out.size() * sizeof(float)))
              << what << ": not the 1-thread bits";
        }
        // The row kernel (decode's) agrees to rounding.
        std::vector<float> rows;
        Data r = make(c, rows, cache);
        kernels::portable::sdpa_f32_at(isa, r.p, 0, r.p.units());
        double scale = 0, err = 0;
        for (size_t i = 0; i < rows.size(); ++i) {
          scale = std::max(scale, double(std::abs(rows[i])));
          err = std::max(err, double(std::abs(rows[i] - out[i])));
        }
        EXPECT_LE(err, 1e-5 * scale) << what << ": against sdpa_f32";
      }
    }
  }
  thread_pool_destroy(pool2);
}

TEST(SdpaTiledF32Test, AppliesToManyRowsAndModestHeadDims) {
  SdpaF32Problem p;
  p.batch = 1;
  p.heads = 4;
  p.kv_heads = 4;
  p.head_dim = 64;
  p.seq = 1;
  EXPECT_FALSE(kernels::portable::sdpa_tiled_f32_applies(p));  // decode: the row kernel
  p.seq = kernels::portable::kSdpaTiledMinRows;
  EXPECT_TRUE(kernels::portable::sdpa_tiled_f32_applies(p));
  p.head_dim = kernels::portable::kSdpaTiledMaxHeadDim + 1;
  EXPECT_FALSE(kernels::portable::sdpa_tiled_f32_applies(p));
}

}  // namespace
}  // namespace ember::testing
