// sdpa_f32 (llama::custom_sdpa's tiles) against a plain double-precision
// attention, in every build the host runs (sdpa_f32_at), and split over
// threads at any unit boundary. The comparison with eager PyTorch is
// python/tests/test_llm_sdpa.py.
#include "kernels/portable/util/sdpa_f32.h"

#include <cmath>
#include <limits>
#include <vector>

#include "kernels/test/tensor_factory.h"

namespace ember::testing {
namespace {

using kernels::portable::host_isa;
using kernels::portable::Isa;
using kernels::portable::SdpaF32Problem;

struct Case {
  int64_t batch, heads, kv_heads, seq, cache_len, head_dim, start;
  bool causal;
  int mask;  // 0 none, 1 bool [S, L], 2 float [B, 1, S, L]
};

struct Data {
  std::vector<float> q, k, v, fmask;
  std::vector<char> bmask;
  SdpaF32Problem p;
};

Data make(const Case& c, std::vector<float>& out) {
  Data d;
  d.q = random_floats(c.batch * c.heads * c.seq * c.head_dim, 1);
  d.k = random_floats(c.batch * c.kv_heads * c.cache_len * c.head_dim, 2);
  d.v = random_floats(d.k.size(), 3);
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
  p.cache_len = c.cache_len;
  p.start = c.start;
  p.causal = c.causal;
  p.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  if (c.mask == 1) {
    d.bmask.resize(c.seq * c.cache_len);
    // About two thirds attended; position 0 always, so no row is fully masked.
    for (size_t i = 0; i < d.bmask.size(); ++i) {
      d.bmask[i] = (i * 7 + i / 5) % 3 != 0 || i % c.cache_len == 0;
    }
    p.mask = d.bmask.data();
    p.mask_is_bool = true;
    p.mask_strides[2] = c.cache_len;
  } else if (c.mask == 2) {
    d.fmask = random_floats(c.batch * c.seq * c.cache_len, 4);
    p.mask = d.fmask.data();
    p.mask_strides[0] = c.seq * c.cache_len;
    p.mask_strides[2] = c.cache_len;
  }
  return d;
}

// Softmax over the visible positions of each row in double, then the sum of values.
std::vector<double> reference(const Case& c, const Data& d) {
  std::vector<double> out(d.q.size());
  const int64_t group = c.heads / c.kv_heads, end = c.start + c.seq, hd = c.head_dim;
  for (int64_t b = 0; b < c.batch; ++b) {
    for (int64_t h = 0; h < c.heads; ++h) {
      const int64_t g = h / group;
      for (int64_t i = 0; i < c.seq; ++i) {
        const float* q = &d.q[((b * c.heads + h) * c.seq + i) * hd];
        std::vector<double> w(end, -INFINITY);
        for (int64_t j = 0; j < end; ++j) {
          if (c.causal && j > c.start + i) continue;
          if (c.mask == 1 && !d.bmask[i * c.cache_len + j]) continue;
          const float* k = &d.k[((b * c.kv_heads + g) * c.cache_len + j) * hd];
          double s = 0;
          for (int64_t x = 0; x < hd; ++x) s += double(q[x]) * k[x];
          w[j] = s / std::sqrt(double(hd)) +
                 (c.mask == 2 ? d.fmask[(b * c.seq + i) * c.cache_len + j] : 0.0);
        }
        double mx = -INFINITY, sum = 0;
        for (double s : w) mx = std::max(mx, s);
        for (double& s : w) sum += (s = std::exp(s - mx));
        double* o = &out[((b * c.heads + h) * c.seq + i) * hd];
        for (int64_t j = 0; j < end; ++j) {
          const float* v = &d.v[((b * c.kv_heads + g) * c.cache_len + j) * hd];
          for (int64_t x = 0; x < hd; ++x) o[x] += w[j] / sum * v[x];
        }
      }
    }
  }
  return out;
}

const Case kCases[] = {
    {1, 8, 2, 1, 70, 64, 69, true, 0},    // decode at the cache's end, two key blocks
    {1, 8, 2, 13, 40, 17, 9, true, 0},    // prefill, head dim with a tail in every width
    {2, 6, 3, 5, 30, 3, 20, true, 2},     // float mask per batch, head dim below a vector
    {1, 4, 4, 7, 130, 40, 100, false, 1}, // bool mask, no grouping, three key blocks
    {1, 3, 1, 9, 12, 33, 0, true, 0},     // one cache head for three query heads
};

TEST(SdpaF32Test, EveryBuildMatchesADoubleReference) {
  for (int level = 0; level <= static_cast<int>(host_isa()); ++level) {
    for (const Case& c : kCases) {
      std::vector<float> out;
      Data d = make(c, out);
      kernels::portable::sdpa_f32_at(static_cast<Isa>(level), d.p, 0, d.p.units());
      const std::vector<double> want = reference(c, d);
      double scale = 0, err = 0;
      for (size_t i = 0; i < want.size(); ++i) {
        scale = std::max(scale, std::abs(want[i]));
        err = std::max(err, std::abs(want[i] - out[i]));
      }
      EXPECT_LE(err, 1e-5 * scale) << "isa " << level << " head dim " << c.head_dim;
    }
  }
}

TEST(SdpaF32Test, AnySplitOfTheUnitsGivesTheSameBits) {
  const Case c = {1, 8, 2, 21, 64, 24, 30, true, 0};
  std::vector<float> whole, parts;
  Data a = make(c, whole);
  kernels::portable::sdpa_f32(a.p, 0, a.p.units());
  Data b = make(c, parts);
  const int64_t n = b.p.units();
  for (int64_t begin = 0; begin < n; begin += 3) {
    kernels::portable::sdpa_f32(b.p, begin, std::min(n, begin + 3));
  }
  EXPECT_EQ(0, std::memcmp(whole.data(), parts.data(), whole.size() * sizeof(float)));
}

}  // namespace
}  // namespace ember::testing
