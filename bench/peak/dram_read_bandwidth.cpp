// DRAM read bandwidth: the ceiling an LLM's decode step (which reads every
// weight once per token) is a fraction of. Each thread sums its own buffer
// (first touched by that thread, 4x the last-level cache or more) as 64-bit
// integers, which compilers vectorise without reassociating floats; the
// threads start together and the time of a pass is the slowest thread's.
// The best of --reps passes is reported, as STREAM does.
//
//   dram_read_bandwidth [--threads N] [--mib-per-thread M] [--reps R]
// Prints one JSON line: {"threads": N, "bytes": ..., "gb_per_s": ...}.
// Built by bench/CMakeLists.txt (make bench) or by llm_bench.py with the host compiler.
#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

__attribute__((noinline)) uint64_t sum_words(const uint64_t* p, size_t n) {
  uint64_t s = 0;
  for (size_t i = 0; i < n; ++i) s += p[i];
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 1, reps = 10;
  size_t mib = 512;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--mib-per-thread"))
      mib = std::strtoull(argv[i + 1], nullptr, 10);
    else if (!std::strcmp(argv[i], "--reps")) reps = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "unknown option %s\n", argv[i]);
      return 2;
    }
  }
  if (threads < 1 || reps < 1 || mib < 1) {
    std::fprintf(stderr, "--threads, --reps and --mib-per-thread must be positive\n");
    return 2;
  }
  const size_t words = mib * (size_t{1} << 20) / sizeof(uint64_t);
  std::vector<std::vector<uint64_t>> bufs(threads);
  std::vector<uint64_t> sums(threads);
  std::barrier sync(threads);
  double best = 1e30;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    // Thread 0 keeps the clock, so no extra thread competes for the cores.
    pool.emplace_back([&, t] {
      bufs[t].assign(words, static_cast<uint64_t>(t) + 1);  // first touch by this thread
      for (int r = 0; r < reps; ++r) {
        sync.arrive_and_wait();
        const auto t0 = std::chrono::steady_clock::now();
        sums[t] += sum_words(bufs[t].data(), words);
        sync.arrive_and_wait();
        if (t == 0) {
          const auto t1 = std::chrono::steady_clock::now();
          best = std::min(best, std::chrono::duration<double>(t1 - t0).count());
        }
      }
    });
  }
  for (auto& th : pool) th.join();
  uint64_t check = 0;
  for (uint64_t s : sums) check += s;
  const double bytes = static_cast<double>(words * sizeof(uint64_t)) * threads;
  std::printf("{\"threads\": %d, \"bytes\": %.0f, \"gb_per_s\": %.2f, \"checksum\": %llu}\n",
              threads, bytes, bytes / best / 1e9, static_cast<unsigned long long>(check));
  return 0;
}
