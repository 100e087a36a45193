// Weight-only linear decode GEMV (one token): the packed int4 kernel
// (qweight_int4.h), the row-by-row int8 one (qweight_gemv.h) on the same
// int4 values one per byte (what int4 ran before packing) and on int8 per
// channel, and the packed int8 one (qweight_int8.h: what the op runs) per
// channel and in groups of 32, and (AVX2 and up) the int4 one in 16-row
// blocks for integer dot products (qweight_int4_fixed.h: "int4_fixed", its
// input's fixed-point conversion timed with it), over
// the projections of `--layers` TinyLlama-1.1B layers (q, k, v, o 2048
// wide; gate, up, down 5632; groups of 32 with zero points), far larger than
// the last-level cache, so every weight comes from DRAM as in decoding.
// --zero-points 1: random nonzero zero points (the int4 layout then stores
// a zero term per group too); default all 0, as ember.llm's int4 has.
// GB/s = bytes of weight (with scales / zero terms) read per pass ÷ time;
// compare with bench/peak/dram_read_bandwidth.cpp at the same thread count.
//
//   qweight_gemv_bench [--layers 4] [--threads 1] [--reps 20] [--rows 1] [--zero-points 0|1]
// Prints one JSON line per kernel. Built by bench/CMakeLists.txt (make bench)
// or by hand:
//   g++ -O3 -std=c++20 -I. bench/kernels/qweight_gemv_bench.cpp
//     kernels/quantized/util/qweight_int4.cpp kernels/quantized/util/qweight_int4_fixed.cpp
//     kernels/quantized/util/qweight_gemv.cpp
//     kernels/quantized/util/qweight_int8.cpp kernels/portable/util/cpu_isa.cpp -lpthread
#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "kernels/portable/util/cpu_isa.h"
#include "kernels/quantized/util/qweight_gemv.h"
#include "kernels/quantized/util/qweight_int4.h"
#include "kernels/quantized/util/qweight_int4_fixed.h"
#include "kernels/quantized/util/qweight_int8.h"

using namespace ember::kernels;
using namespace ember::kernels::quantized;

namespace {

struct Matrix {
  int64_t n, k;
  std::vector<int8_t> w;  // the file's bytes (int8 path)
  std::vector<float> scales, zeros;
  std::vector<float> channel_scales;  // int8 per channel (Int8WeightOnlyConfig)
  std::vector<uint8_t> packed, packed8, packed8g, packed4v;
  Int4Weights w4;
  Int4FixedWeights w4v;  // 16-row blocks for integer dot products
  Int8Weights w8, w8g;  // per channel; groups of 32
};

void* align64(std::vector<uint8_t>& v) {
  return reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(v.data()) + 63) & ~uintptr_t{63});
}

}  // namespace

int main(int argc, char** argv) {
  int layers = 4, threads = 1, reps = 20, rows = 1;
  bool zero_points = false;  // torchao's symmetric int4 (ember.llm) has all-zero zero points
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--layers")) layers = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--reps")) reps = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--rows")) rows = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--zero-points")) zero_points = std::atoi(argv[i + 1]) != 0;
    else {
      std::fprintf(stderr, "unknown option %s\n", argv[i]);
      return 2;
    }
  }
  if (layers < 1 || threads < 1 || reps < 1 || rows < 1 || rows > 4) {
    std::fprintf(stderr, "--layers, --threads, --reps must be positive; --rows 1 to 4\n");
    return 2;
  }
  const int64_t group = 32;
  const int64_t shapes[][2] = {{2048, 2048}, {256, 2048}, {256, 2048}, {2048, 2048},
                               {5632, 2048}, {5632, 2048}, {2048, 5632}};
  std::mt19937 rng(1);
  std::uniform_int_distribution<int> wd(-8, 7), zd(-2, 2);
  std::uniform_real_distribution<float> sd(0.005f, 0.05f);
  std::vector<Matrix> ms;
  for (int l = 0; l < layers; ++l) {
    for (const auto& s : shapes) {
      Matrix& m = ms.emplace_back();
      m.n = s[0];
      m.k = s[1];
      m.w.resize(static_cast<size_t>(m.n * m.k));
      for (auto& v : m.w) v = static_cast<int8_t>(wd(rng));
      m.scales.resize(static_cast<size_t>(m.n * m.k / group));
      m.zeros.resize(m.scales.size());
      for (auto& v : m.scales) v = sd(rng);
      for (auto& v : m.zeros) v = zero_points ? static_cast<float>(zd(rng)) : 0.0f;
      m.channel_scales.assign(static_cast<size_t>(m.n), 0.01f);
      m.packed.resize(qweight_int4_packed_bytes(m.n, m.k, group, zero_points) + 64);
      m.w4 = qweight_int4_pack(m.w.data(), m.scales.data(), m.zeros.data(), m.n, m.k, group,
                               align64(m.packed));
      if (portable::cpu_isa() >= portable::Isa::kAvx2) {
        m.packed4v.resize(qweight_int4_fixed_packed_bytes(m.n, m.k, group, zero_points) + 64);
        m.w4v = qweight_int4_fixed_pack(m.w.data(), m.scales.data(), m.zeros.data(), m.n, m.k,
                                       group, align64(m.packed4v));
      }
      m.packed8.resize(qweight_int8_packed_bytes(m.n, m.k, m.k, false) + 64);
      m.w8 = qweight_int8_pack(m.w.data(), m.channel_scales.data(), nullptr, m.n, m.k, m.k,
                               align64(m.packed8));
      m.packed8g.resize(qweight_int8_packed_bytes(m.n, m.k, group, zero_points) + 64);
      m.w8g = qweight_int8_pack(m.w.data(), m.scales.data(), m.zeros.data(), m.n, m.k, group,
                                align64(m.packed8g));
    }
  }
  std::vector<float> x(static_cast<size_t>(rows) * 5632), y(static_cast<size_t>(rows) * 5632);
  for (auto& v : x) v = sd(rng);

  double int4_bytes = 0, int8_bytes = 0, channel_bytes = 0, int8g_bytes = 0, weights = 0;
  for (const Matrix& m : ms) {
    int4_bytes += static_cast<double>(qweight_int4_packed_bytes(m.n, m.k, group, zero_points));
    int8_bytes += static_cast<double>(m.n * m.k) + 8.0 * static_cast<double>(m.scales.size());
    channel_bytes += static_cast<double>(m.n * m.k) + 4.0 * static_cast<double>(m.n);
    int8g_bytes += static_cast<double>(qweight_int8_packed_bytes(m.n, m.k, group, zero_points));
    weights += static_cast<double>(m.n * m.k);
  }
  const char* names[] = {"int4_packed", "int4_as_int8_bytes", "int8_per_channel",
                         "int8_packed_per_channel", "int8_packed_groups_32", "int4_fixed"};
  const int kernels = portable::cpu_isa() >= portable::Isa::kAvx2 ? 6 : 5;

  const auto isa = portable::cpu_isa();
  for (int kernel = 0; kernel < kernels; ++kernel) {
    std::barrier sync(threads);
    double best = 1e30;
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        std::vector<float> yt(y.size());
        // The activations in fixed point, once per matrix and call (timed).
        std::vector<uint8_t> xin(qweight_int4_fixed_input_bytes(rows, 5632) + 64);
        for (int r = 0; r < reps; ++r) {
          sync.arrive_and_wait();
          const auto t0 = std::chrono::steady_clock::now();
          for (const Matrix& m : ms) {
            // Rows split as parallel_range does: multiples of 16.
            const int64_t units = (m.n + 15) / 16;
            const int64_t first = units * t / threads * 16;
            const int64_t last = std::min(m.n, units * (t + 1) / threads * 16);
            if (kernel == 5) {
              Int4FixedInput in;
              qweight_int4_fixed_input(x.data(), rows, m.k, align64(xin), &in);
              qweight_int4_fixed_gemv(m.w4v, in, first, last, nullptr, yt.data());
            } else if (kernel == 0) {
              qweight_int4_gemv(m.w4, x.data(), rows, first, last, nullptr, yt.data(), isa);
            } else if (kernel >= 3) {
              qweight_int8_gemv(kernel == 3 ? m.w8 : m.w8g, x.data(), rows, first, last,
                                nullptr, yt.data(), isa);
            } else if (kernel == 2) {
              for (int64_t row = 0; row < rows; ++row) {
                qweight_gemv(x.data() + row * m.k, m.w.data(), m.channel_scales.data(), nullptr,
                             m.k, m.k, first, last, nullptr, yt.data() + row * m.n);
              }
            } else {
              for (int64_t row = 0; row < rows; ++row) {
                qweight_gemv(x.data() + row * m.k, m.w.data(), m.scales.data(), m.zeros.data(),
                             m.k, group, first, last, nullptr, yt.data() + row * m.n);
              }
            }
          }
          sync.arrive_and_wait();
          if (t == 0) {
            const double s =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            best = std::min(best, s);
          }
        }
      });
    }
    for (auto& th : pool) th.join();
    const double bytes = kernel == 0 || kernel == 5 ? int4_bytes
                         : kernel == 1 ? int8_bytes
                         : kernel == 4 ? int8g_bytes
                                       : channel_bytes;
    std::printf("{\"kernel\": \"%s\", \"isa\": \"%s\", \"threads\": %d, \"rows\": %d, "
                "\"mib\": %.0f, \"ms\": %.3f, \"gb_per_s\": %.2f, \"gweights_per_s\": %.2f}\n",
                names[kernel], portable::isa_name(isa), threads, rows, bytes / (1 << 20),
                best * 1e3, bytes / best * 1e-9, weights / best * 1e-9);
  }
  return 0;
}
