// The bf16 GEMM (gemm_bf16.h): every microkernel the host can run (baseline
// always; AVX2, AVX512-BF16 and AMX when present, whatever EMBER_ISA says)
// against a float64 product of the bf16-rounded operands, on shapes that
// leave partial tiles in every direction and cross the k-block and row-block
// edges, with strided A, the epilogue, and 1 or 2 threads (the same bits).
// The rounding of A to bf16 pairs is checked bit for bit against the scalar
// BFloat16 on the values where rounding is subtle.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/portable/util/gemm.h"
#include "kernels/portable/util/gemm_bf16.h"
#include "kernels/portable/util/half.h"
#include "runtime/kernel/thread_pool.h"

namespace ember::kernels::portable {
namespace {

std::vector<Bf16GemmKind> host_kinds() {
  std::vector<Bf16GemmKind> kinds;
  for (Bf16GemmKind k : {Bf16GemmKind::kBaseline, Bf16GemmKind::kAvx2, Bf16GemmKind::kAvx512Bf16,
                          Bf16GemmKind::kAmx}) {
    if (bf16_gemm_kind_available(k)) kinds.push_back(k);
  }
  return kinds;
}

float bf16_round(float x) { return static_cast<float>(BFloat16(x)); }
float bf16_value(uint16_t bits) { return bits_float(static_cast<uint32_t>(bits) << 16); }

struct Problem {
  int64_t m, n, k;
  int64_t a_cs = 1;  // A's column stride (2: every other float of a wider buffer).
  bool epilogue = false;
};

struct Data {
  std::vector<float> a;        // m rows of k * a_cs floats.
  std::vector<uint16_t> w;     // n × k bf16 bits.
  std::vector<float> bias;     // n.
  std::vector<float> residual; // m × n.
};

Data make_data(const Problem& p) {
  std::mt19937 gen(static_cast<unsigned>(p.m * 131 + p.n * 7 + p.k));
  std::uniform_real_distribution<float> dist(-1, 1);
  Data d;
  d.a.resize(static_cast<size_t>(p.m * p.k * p.a_cs));
  for (auto& x : d.a) x = dist(gen);
  d.w.resize(static_cast<size_t>(p.n * p.k));
  for (auto& x : d.w) x = BFloat16(dist(gen)).bits;
  d.bias.resize(static_cast<size_t>(p.n));
  for (auto& x : d.bias) x = dist(gen);
  d.residual.resize(static_cast<size_t>(p.m * p.n));
  for (auto& x : d.residual) x = dist(gen);
  return d;
}

GemmEpilogue<float> make_epilogue(const Problem& p, const Data& d) {
  GemmEpilogue<float> ep;
  ep.col_bias = d.bias.data();
  ep.residual = d.residual.data();
  ep.res_rs = p.n;
  ep.res_cs = 1;
  ep.clamp = true;
  ep.lo = -0.5f;
  ep.hi = 1.5f;
  return ep;
}

std::vector<float> run(Bf16GemmKind kind, const Problem& p, const Data& d, ThreadPool* pool) {
  std::vector<uint32_t> packed(static_cast<size_t>(bf16_packed_weight_words(p.n, p.k, kind)));
  const Bf16PackedWeight w = bf16_pack_weight(d.w.data(), p.n, p.k, p.k, 1, kind, packed.data());
  KernelContext ctx("bf16_gemm");
  ctx.set_thread_pool(pool);
  std::vector<float> c(static_cast<size_t>(p.m * p.n), std::nanf(""));
  const GemmEpilogue<float> ep = make_epilogue(p, d);
  bf16_gemm(ctx, p.m, d.a.data(), p.k * p.a_cs, p.a_cs, w, c.data(), p.n,
            p.epilogue ? &ep : nullptr);
  return c;
}

void check(const Problem& p) {
  const Data d = make_data(p);
  // float64 over the bf16-rounded operands; the bound is float32 summation
  // error relative to the sum of the products' magnitudes.
  std::vector<double> want(static_cast<size_t>(p.m * p.n));
  std::vector<double> tol(want.size());
  for (int64_t i = 0; i < p.m; ++i) {
    for (int64_t j = 0; j < p.n; ++j) {
      double s = 0, mag = 0;
      for (int64_t q = 0; q < p.k; ++q) {
        const double prod = double(bf16_round(d.a[static_cast<size_t>((i * p.k + q) * p.a_cs)])) *
                            double(bf16_value(d.w[static_cast<size_t>(j * p.k + q)]));
        s += prod;
        mag += std::fabs(prod);
      }
      const size_t at = static_cast<size_t>(i * p.n + j);
      if (p.epilogue) {
        s = s + d.bias[static_cast<size_t>(j)] + d.residual[at];
        s = std::fmin(std::fmax(s, -0.5), 1.5);
      }
      want[at] = s;
      tol[at] = 1e-5 * (mag + 1.0) + 1e-30;
    }
  }
  ThreadPool* pool2 = thread_pool_create(2);
  for (Bf16GemmKind kind : host_kinds()) {
    const auto one = run(kind, p, d, nullptr);
    const auto two = run(kind, p, d, pool2);
    SCOPED_TRACE(std::string(bf16_gemm_kind_name(kind)) + " m=" + std::to_string(p.m) +
                 " n=" + std::to_string(p.n) + " k=" + std::to_string(p.k));
    EXPECT_EQ(0, std::memcmp(one.data(), two.data(), one.size() * sizeof(float)))
        << "2 threads changed the bits";
    int bad = 0;
    for (size_t at = 0; at < want.size() && bad < 5; ++at) {
      if (!(std::fabs(one[at] - want[at]) <= tol[at])) {
        ++bad;
        ADD_FAILURE() << "C[" << at / p.n << "][" << at % p.n << "] = " << one[at] << ", want "
                      << want[at] << " ± " << tol[at];
      }
    }
  }
  if (pool2 != nullptr) thread_pool_destroy(pool2);
}

TEST(GemmBf16, MatchesFloat64OnRoundedOperands) {
  for (const Problem& p : std::vector<Problem>{{1, 1, 1},
                                               {5, 17, 3},
                                               {8, 32, 256},
                                               {13, 45, 257},
                                               {150, 70, 300},
                                               {49, 100, 1030},
                                               {200, 300, 64},
                                               // AMX: one whole tile block, a depth padded
                                               // from 17 pairs to 32, rows across its blocks.
                                               {16, 32, 32},
                                               {33, 64, 34},
                                               {290, 33, 1000}}) {
    check(p);
  }
}

TEST(GemmBf16, StridedAAndEpilogue) {
  check({37, 50, 99, 2, false});
  check({37, 50, 99, 1, true});
  check({160, 96, 520, 2, true});
}

TEST(GemmBf16, EmptyDepthGivesTheEpilogueOfZero) {
  const Problem p{3, 5, 0, 1, true};
  const Data d = make_data(p);
  for (Bf16GemmKind kind : host_kinds()) {
    const auto c = run(kind, p, d, nullptr);
    for (int64_t i = 0; i < p.m; ++i) {
      for (int64_t j = 0; j < p.n; ++j) {
        const double v = d.bias[static_cast<size_t>(j)] + d.residual[static_cast<size_t>(i * p.n + j)];
        EXPECT_FLOAT_EQ(c[static_cast<size_t>(i * p.n + j)], std::fmin(std::fmax(v, -0.5), 1.5));
      }
    }
  }
}

TEST(GemmBf16, RoundPairsGivesTheScalarBits) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> values = {0.0f, -0.0f, 1.0f, -1.0f, inf, -inf, std::nanf(""), -std::nanf(""),
                               std::numeric_limits<float>::max(),
                               std::numeric_limits<float>::denorm_min(),
                               std::numeric_limits<float>::min(), 1.00390625f /* tie, even */,
                               1.01171875f /* tie, odd */, 1.0039063f, 3.14159f, -2.71828f};
  std::mt19937 gen(7);
  std::uniform_int_distribution<uint32_t> bits;
  for (int i = 0; i < 77; ++i) values.push_back(bits_float(bits(gen)));
  for (Bf16GemmKind kind : host_kinds()) {
    for (int64_t count : {int64_t{0}, int64_t{1}, int64_t{15}, int64_t{16}, int64_t{33},
                          static_cast<int64_t>(values.size())}) {
      std::vector<uint32_t> words(static_cast<size_t>((count + 1) / 2), 0xdeadbeef);
      bf16_round_pairs(values.data(), count, 1, words.data(), kind);
      for (int64_t e = 0; e < count; ++e) {
        const uint16_t got = static_cast<uint16_t>(words[static_cast<size_t>(e / 2)] >> (e % 2 * 16));
        EXPECT_EQ(got, BFloat16::from_float(values[static_cast<size_t>(e)]))
            << bf16_gemm_kind_name(kind) << " element " << e << " of " << count;
      }
      if (count % 2 == 1) {
        EXPECT_EQ(words.back() >> 16, 0u) << "the missing odd element must be zero";
      }
    }
  }
}

// The weight as A (convolution's orientation): C[m×n] = W[m×k] · bf16(B),
// B read through a gemm.h source (here a strided k × n matrix, columns
// `b_cs` apart), with a per-row bias, a residual and a clamp.
void check_weight_a(int64_t m, int64_t n, int64_t k, int64_t b_cs, bool epilogue) {
  std::mt19937 gen(static_cast<unsigned>(m * 31 + n * 17 + k));
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<uint16_t> w(static_cast<size_t>(m * k));
  for (auto& x : w) x = BFloat16(dist(gen)).bits;
  std::vector<float> b(static_cast<size_t>(k * n * b_cs));
  for (auto& x : b) x = dist(gen);
  std::vector<float> bias(static_cast<size_t>(m)), residual(static_cast<size_t>(m * n));
  for (auto& x : bias) x = dist(gen);
  for (auto& x : residual) x = dist(gen);
  GemmEpilogue<float> ep;
  ep.row_bias = bias.data();
  ep.residual = residual.data();
  ep.res_rs = n;
  ep.res_cs = 1;
  ep.clamp = true;
  ep.lo = -0.25f;
  ep.hi = 2.0f;
  std::vector<double> want(static_cast<size_t>(m * n)), tol(want.size());
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double s = 0, mag = 0;
      for (int64_t q = 0; q < k; ++q) {
        const double prod = double(bf16_value(w[static_cast<size_t>(i * k + q)])) *
                            double(bf16_round(b[static_cast<size_t>((q * n + j) * b_cs)]));
        s += prod;
        mag += std::fabs(prod);
      }
      const size_t at = static_cast<size_t>(i * n + j);
      if (epilogue) s = std::fmin(std::fmax(s + bias[static_cast<size_t>(i)] + residual[at], -0.25), 2.0);
      want[at] = s;
      tol[at] = 1e-5 * (mag + 1.0);
    }
  }
  ThreadPool* pool2 = thread_pool_create(2);
  for (Bf16GemmKind kind : host_kinds()) {
    std::vector<uint32_t> packed(static_cast<size_t>(bf16_packed_rows_words(m, k, kind)));
    const Bf16PackedWeight a = bf16_pack_weight_rows(w.data(), m, k, k, 1, kind, packed.data());
    std::vector<float> got[2];
    for (int t = 0; t < 2; ++t) {
      KernelContext ctx("bf16_gemm_weight_a");
      ctx.set_thread_pool(t == 0 ? nullptr : pool2);
      got[t].assign(want.size(), std::nanf(""));
      bf16_gemm_weight_a(ctx, a, n, StridedMatrix<float>{b.data(), n * b_cs, b_cs}, got[t].data(),
                         n, epilogue ? &ep : nullptr);
    }
    SCOPED_TRACE(std::string(bf16_gemm_kind_name(kind)) + " m=" + std::to_string(m) + " n=" +
                 std::to_string(n) + " k=" + std::to_string(k));
    EXPECT_EQ(0, std::memcmp(got[0].data(), got[1].data(), got[0].size() * sizeof(float)))
        << "2 threads changed the bits";
    int bad = 0;
    for (size_t at = 0; at < want.size() && bad < 5; ++at) {
      if (!(std::fabs(got[0][at] - want[at]) <= tol[at])) {
        ++bad;
        ADD_FAILURE() << "C[" << at / n << "][" << at % n << "] = " << got[0][at] << ", want "
                      << want[at] << " ± " << tol[at];
      }
    }
  }
  if (pool2 != nullptr) thread_pool_destroy(pool2);
}

TEST(GemmBf16, WeightAsAMatchesFloat64) {
  check_weight_a(1, 1, 1, 1, false);
  check_weight_a(7, 45, 5, 1, true);
  check_weight_a(64, 196, 256, 1, false);
  check_weight_a(150, 100, 301, 2, true);
  check_weight_a(300, 49, 520, 1, true);  // Few columns: split by rows on 2 threads.
  check_weight_a(33, 70, 34, 1, true);    // AMX: a partial strip, a padded depth.
  check_weight_a(256, 40, 96, 1, false);  // AMX: whole strips, rows split in 64s.
}

TEST(GemmBf16, RoundRowPairsGivesTheScalarBits) {
  std::mt19937 gen(9);
  std::uniform_int_distribution<uint32_t> bits;
  std::vector<float> r0(45), r1(45);
  for (auto& x : r0) x = bits_float(bits(gen));
  for (auto& x : r1) x = bits_float(bits(gen));
  r0[3] = std::nanf("");
  r1[4] = std::numeric_limits<float>::infinity();
  for (Bf16GemmKind kind : host_kinds()) {
    for (bool second : {true, false}) {
      std::vector<uint32_t> words(r0.size());
      bf16_round_row_pairs(r0.data(), second ? r1.data() : nullptr, static_cast<int64_t>(r0.size()),
                           words.data(), kind);
      for (size_t j = 0; j < r0.size(); ++j) {
        const uint32_t want = BFloat16::from_float(r0[j]) |
                              (second ? static_cast<uint32_t>(BFloat16::from_float(r1[j])) << 16 : 0u);
        EXPECT_EQ(words[j], want) << bf16_gemm_kind_name(kind) << " column " << j;
      }
    }
  }
}

}  // namespace
}  // namespace ember::kernels::portable
